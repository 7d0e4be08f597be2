"""Sharp removal, its random-subspace control, anti-steer rates and the polarity test.

With ``U_k`` the top-``k`` eigenvectors of the steering Hessian (the sharp subspace),

    v' = v - U_k U_k^T v                                                   # Eq. (3)

is the sharp-removed vector; the metrics of the paper are ``cos(v, v')``, the norm
reduction ``1 - ||v'|| / ||v||``, the sharp share ``||U_k^T v||^2 / ||v||^2`` and the
directional curvature ``kappa(u) = u^T H u / ||u||^2`` before and after (Eq. 4).

The anti-steer rate (Eq. 5) steers with the sharp component alone, rescaled to ``||v||``,
``u = ||v|| P v / ||P v||`` with ``P = U_k U_k^T``, and counts the inputs whose
behaviour-matching probability falls below the unsteered one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_array, check_float, check_int

from .hessian import SteeringHessian, steering_hessian
from .steering import SteeringObjective, caa_vector

__all__ = [
    "AntiSteer",
    "PolarityTest",
    "SharpRemoval",
    "SharpRemovedSteerer",
    "adaptive_k",
    "anti_steer_rate",
    "polarity_test",
    "random_subspace_removal",
    "sharp_removal",
]


def _vec(v, name: str, dim: int | None = None) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        if v.dtype.is_complex or v.dtype == torch.bool:
            raise TypeError(f"{name} must be a real vector, got dtype {v.dtype}")
        v = v.detach().cpu().double().numpy()
    shape = (dim,) if dim is not None else (None,)
    return check_array(v, name, shape=shape, max_size=1 << 20)


def _check_hessian(hessian) -> SteeringHessian:
    if not isinstance(hessian, SteeringHessian):
        raise TypeError(f"hessian must be a SteeringHessian, got {type(hessian).__name__}")
    return hessian


def adaptive_k(eigvals, *, ratio: float = 10.0) -> int:
    """Number of eigenvalues above ``ratio * median |lambda|`` (the adaptive sharp size).

    Needs the full spectrum (a dense Hessian).

    Examples
    --------
    >>> adaptive_k([50.0, 12.0, 1.0, -1.0, 0.5], ratio=10.0)
    2
    """
    w = check_array(eigvals, "eigvals", ndim=1)
    ratio = check_float(ratio, "ratio", min=0.0, max=1e12, min_inclusive=False)
    scale = float(np.median(np.abs(w)))
    return int(np.sum(w / ratio > scale))  # lambda > ratio * median |lambda|


@dataclass(frozen=True)
class SharpRemoval:
    """A steering vector with its sharp component removed (Eq. 3) and the paper's metrics.

    Attributes
    ----------
    v : ndarray, shape (d,)
        The original vector.
    v_clean : ndarray, shape (d,)
        ``v' = v - U U^T v``.
    basis : ndarray, shape (d, k)
        The removed orthonormal directions ``U`` (sharp, or random for the control).
    k : int
    cosine : float
        ``cos(v, v')``.
    norm_reduction : float
        ``1 - ||v'|| / ||v||``.
    sharp_share : float
        ``||U^T v||^2 / ||v||^2``.
    curvature_before, curvature_after : float
        ``kappa(v)`` and ``kappa(v')`` (Eq. 4).
    """

    v: np.ndarray
    v_clean: np.ndarray
    basis: np.ndarray
    k: int
    cosine: float
    norm_reduction: float
    sharp_share: float
    curvature_before: float
    curvature_after: float

    @property
    def sharp_part(self) -> np.ndarray:
        """``U U^T v``, shape (d,)."""
        return self.v - self.v_clean

    @property
    def curvature_reduction(self) -> float:
        """``|kappa(v)| / |kappa(v')|`` (inf when ``kappa(v') = 0``)."""
        if self.curvature_after == 0.0:
            return float("inf") if self.curvature_before else 1.0
        return abs(self.curvature_before) / abs(self.curvature_after)

    def sharp_direction(self) -> np.ndarray:
        """The sharp part rescaled to ``||v||`` (the anti-steer direction of Eq. 5)."""
        s = self.sharp_part
        n = np.linalg.norm(s)
        if n == 0:
            return np.zeros_like(s)
        return s * (np.linalg.norm(self.v) / n)


def _remove(v: np.ndarray, U: np.ndarray, hessian: SteeringHessian) -> SharpRemoval:
    coef = U.T @ v  # (k,)
    v_clean = v - U @ coef  # Eq. (3)
    nv = float(np.linalg.norm(v))
    if nv == 0.0:
        raise ValueError("v must be a non-zero vector")
    nc = float(np.linalg.norm(v_clean))
    cos = float(np.clip(float(v @ v_clean) / (nv * nc), -1.0, 1.0)) if nc > 0 else 0.0
    return SharpRemoval(
        v=v, v_clean=v_clean, basis=U, k=int(U.shape[1]), cosine=cos,
        norm_reduction=1.0 - nc / nv, sharp_share=float(coef @ coef) / nv**2,
        curvature_before=hessian.curvature(v),  # Eq. (4)
        curvature_after=hessian.curvature(v_clean),
    )  # fmt: skip


def sharp_removal(v, hessian: SteeringHessian, *, k: int | None = None,
                  ratio: float = 10.0) -> SharpRemoval:  # fmt: skip
    """Remove the top-``k`` (sharp) eigen-directions of the steering Hessian from ``v``.

    Parameters
    ----------
    v : array_like or Tensor, shape (d,)
        The steering vector (paper: ``alpha v_CAA``, where ``H`` was evaluated).
    hessian : SteeringHessian
    k : int or None
        Sharp subspace size; ``None``: adaptive (:func:`adaptive_k`, dense Hessians only).
        ``k = 0`` returns ``v`` unchanged.
    ratio : float
        Adaptive threshold on ``lambda / median |lambda|``.

    Returns
    -------
    SharpRemoval

    Examples
    --------
    >>> H = steering_hessian(lambda v: 0.5 * (torch.tensor([100.0, 1.0, 1.0]) * v**2).sum(),
    ...                      torch.zeros(3), method="dense")
    >>> r = sharp_removal(np.array([0.1, 1.0, 1.0]), H, k=1)
    >>> np.round(r.v_clean, 6).tolist(), round(r.curvature_reduction, 2)
    ([0.0, 1.0, 1.0], 1.49)
    """
    hessian = _check_hessian(hessian)
    v = _vec(v, "v", hessian.dim)
    if k is None:
        if hessian.dense is None:
            raise ValueError("k: adaptive k needs the full spectrum (method='dense'); pass k "
                             "with a Lanczos Hessian")  # fmt: skip
        k = adaptive_k(hessian.eigvals, ratio=ratio)
    else:
        k = check_int(k, "k", min=0, max=hessian.dim)
        if k > len(hessian.eigvals):
            raise ValueError(f"k={k} exceeds the {len(hessian.eigvals)} eigenpairs computed "
                             "(raise num_steps)")  # fmt: skip
    _, U = hessian.top(k)
    return _remove(v, U, hessian)


def random_subspace_removal(v, hessian: SteeringHessian, *, k: int,
                            seed: int = 0) -> SharpRemoval:  # fmt: skip
    """The control: remove a uniformly random ``k``-dimensional subspace instead.

    Examples
    --------
    >>> H = steering_hessian(lambda v: (v**2).sum(), torch.zeros(4), method="dense")
    >>> random_subspace_removal(np.ones(4), H, k=2).k
    2
    """
    hessian = _check_hessian(hessian)
    v = _vec(v, "v", hessian.dim)
    k = check_int(k, "k", min=0, max=hessian.dim)
    seed = check_int(seed, "seed", min=0, max=2**63 - 1)
    G = np.random.default_rng(seed).standard_normal((hessian.dim, k))
    U = np.linalg.qr(G)[0] if k else np.zeros((hessian.dim, 0))
    return _remove(v, U, hessian)


def _check_objective(objective) -> SteeringObjective:
    if not isinstance(objective, SteeringObjective):
        raise TypeError(f"objective must be a SteeringObjective, got {type(objective).__name__}")
    return objective


@dataclass(frozen=True)
class AntiSteer:
    """Per-input effect of steering along a direction (Eq. 5).

    Attributes
    ----------
    rate : float
        Fraction of inputs with ``Delta_b < 0``.
    delta : ndarray, shape (B,)
        ``p_match(steered) - p_match(unsteered)``.
    p_base, p_steered : ndarray, shape (B,)
    """

    rate: float
    delta: np.ndarray
    p_base: np.ndarray
    p_steered: np.ndarray

    @property
    def half_width(self) -> float:
        """Normal-approximation 95% half-width of ``rate`` over the inputs."""
        n = len(self.delta)
        return float(1.96 * np.sqrt(max(self.rate * (1 - self.rate), 0.25 / n) / n))


@torch.no_grad()
def anti_steer_rate(objective: SteeringObjective, direction, *, alpha: float = 1.0) -> AntiSteer:
    """Share of inputs that steering along ``direction`` pushes the wrong way (Eq. 5).

    Parameters
    ----------
    objective : SteeringObjective
        Held-out prompts and their behaviour-matching answers (model, layer, positions).
    direction : array_like, shape (d,)
        E.g. :meth:`SharpRemoval.sharp_direction`.
    alpha : float
        Scale of the added vector.

    Returns
    -------
    AntiSteer
    """
    objective = _check_objective(objective)
    u = _vec(direction, "direction", objective.dim)
    alpha = check_float(alpha, "alpha", min=-1e6, max=1e6)
    base = objective.log_probs(None).exp().double().cpu().numpy()
    steered = objective.log_probs(torch.as_tensor(alpha * u, dtype=objective.dtype))
    steered = steered.exp().double().cpu().numpy()
    delta = steered - base
    return AntiSteer(float(np.mean(delta < 0)), delta, base, steered)


@dataclass(frozen=True)
class PolarityTest:
    """Behaviour control under ``sign * (v_flat + s v_sharp)`` for ``s`` in (-1, 0, +1).

    Attributes
    ----------
    control : ndarray, shape (2, 3)
        Rows: polarity ``+1`` (mean ``p_match``) and ``-1`` (mean ``1 - p_match``); columns
        ``s = -1, 0, +1``.
    """

    control: np.ndarray

    @property
    def noise_like(self) -> np.ndarray:
        """Per polarity: both ``s = +-1`` give less control than ``s = 0``; shape (2,)."""
        c = self.control
        return (c[:, 0] < c[:, 1]) & (c[:, 2] < c[:, 1])


@torch.no_grad()
def polarity_test(objective: SteeringObjective, removal: SharpRemoval) -> PolarityTest:
    """The jailbreak analogue: does the sharp part help either steering polarity?

    Examples
    --------
    >>> PolarityTest(np.array([[0.5, 0.7, 0.6], [0.4, 0.5, 0.6]])).noise_like.tolist()
    [True, False]
    """
    objective = _check_objective(objective)
    if not isinstance(removal, SharpRemoval):
        raise TypeError(f"removal must be a SharpRemoval, got {type(removal).__name__}")
    if removal.v.shape != (objective.dim,):
        raise ValueError(f"removal: vector of dimension {removal.v.shape[0]}, the model has "
                         f"{objective.dim}")  # fmt: skip
    control = np.zeros((2, 3))
    for i, sign in enumerate((1.0, -1.0)):
        for j, s in enumerate((-1.0, 0.0, 1.0)):
            u = sign * (removal.v_clean + s * removal.sharp_part)
            p = objective.log_probs(torch.as_tensor(u, dtype=objective.dtype)).exp()
            p = p.double().cpu().numpy()
            control[i, j] = p.mean() if sign > 0 else (1 - p).mean()
    return PolarityTest(control)


class SharpRemovedSteerer(BaseEstimator):
    """CAA, then sharp removal: the paper's "one-line correction" as an estimator.

    Parameters
    ----------
    layer : int
        Block whose residual stream is steered.
    alpha : float
        Steering scale; the Hessian is evaluated at ``alpha v_CAA``.
    k : int or None
        Sharp subspace size (``None``: adaptive, dense Hessians only).
    ratio : float
        Adaptive threshold.
    positions : {"all", "last"}
    method : {"dense", "lanczos"}
    num_steps : int
        Lanczos steps.
    seed : int

    Attributes
    ----------
    caa_ : ndarray, shape (d,)
        ``alpha v_CAA``.
    vector_ : ndarray, shape (d,)
        The sharp-removed steering vector (add it with :func:`.steer`).
    hessian_ : SteeringHessian
    removal_ : SharpRemoval

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> pos, neg = [[5, 6, 40, 65], [7, 8, 40, 65]], [[5, 6, 40, 66], [7, 8, 40, 66]]
    >>> st = SharpRemovedSteerer(layer=0, k=2, num_steps=8).fit(
    ...     m, pos, neg, [[5, 6, 40], [7, 8, 40]], [65, 65])
    >>> st.vector_.shape, st.removal_.k
    ((64,), 2)
    """

    def __init__(self, *, layer: int = 0, alpha: float = 1.0, k: int | None = 4,
                 ratio: float = 10.0, positions: str = "last", method: str = "lanczos",
                 num_steps: int = 32, seed: int = 0):  # fmt: skip
        self.layer = layer
        self.alpha = alpha
        self.k = k
        self.ratio = ratio
        self.positions = positions
        self.method = method
        self.num_steps = num_steps
        self.seed = seed

    def fit(self, model, pos_ids, neg_ids, prompts, target_ids, *, attention_mask=None,
            prompt_mask=None):  # fmt: skip
        """CAA on ``(pos_ids, neg_ids)``, Hessian of Eq. (1) on ``(prompts, target_ids)``."""
        alpha = check_float(self.alpha, "alpha", min=-1e6, max=1e6)
        v = caa_vector(model, pos_ids, neg_ids, layer=self.layer,
                       attention_mask=attention_mask) * alpha  # fmt: skip
        objective = SteeringObjective(model, prompts, target_ids, layer=self.layer,
                                      positions=self.positions,
                                      attention_mask=prompt_mask)  # fmt: skip
        self.hessian_ = steering_hessian(objective, v, method=self.method,
                                         num_steps=self.num_steps, seed=self.seed)  # fmt: skip
        self.removal_ = sharp_removal(v, self.hessian_, k=self.k, ratio=self.ratio)
        self.caa_ = self.removal_.v
        self.vector_ = self.removal_.v_clean
        return self
