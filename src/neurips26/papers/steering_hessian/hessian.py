"""The steering Hessian ``H = d^2 L / dv^2`` by Hessian-vector products, densely or by Lanczos.

For a scalar loss ``L(v)`` of a steering vector (e.g. :class:`.SteeringObjective`), the
gradient ``g(v)`` is built once with ``create_graph=True``; each Hessian-vector product

    H u = d/dv (g(v) . u)                                                  # Eq. (2)

is then one backward pass through that retained graph (Pearlmutter's trick). The dense
Hessian stacks ``d`` of them (small models only); Lanczos with full re-orthogonalisation
runs ``m`` of them and returns the Ritz pairs of the tridiagonal ``T_m = Q^T H Q``, whose
extreme values converge first: the sharp (top) eigenpairs the paper removes.

Also here: the closed form of a linear-softmax "model" (an oracle) and a central
finite-difference Hessian of the autograd gradient (another oracle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from neurips26.common.validation import check_array, check_callable, check_float, check_int

__all__ = [
    "MAX_DENSE_DIM",
    "SteeringHessian",
    "finite_difference_hessian",
    "lanczos",
    "linear_softmax_hessian",
    "linear_softmax_loss",
    "steering_hessian",
]

#: Largest dimension for which a dense Hessian (``d`` HVPs and ``d^2`` floats) is built.
MAX_DENSE_DIM = 2048
MAX_DIM = 1 << 20


def _as_point(v, name: str = "v", dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        if v.dtype.is_complex or v.dtype == torch.bool:
            raise TypeError(f"{name} must be a real vector, got dtype {v.dtype}")
        arr = v.detach().cpu().double().numpy()
    else:
        arr = v
    arr = check_array(arr, name, ndim=1, max_size=MAX_DIM)
    if np.abs(arr).max() > 1e6:
        raise ValueError(f"{name} has entries above 1e6 in magnitude")
    dtype = v.dtype if isinstance(v, torch.Tensor) else dtype
    device = v.device if isinstance(v, torch.Tensor) else "cpu"
    return torch.as_tensor(arr, dtype=dtype, device=device)


class _HVP:
    """Gradient at a point, built once with ``create_graph=True``, and HVPs through it."""

    def __init__(self, loss_fn: Callable, v: torch.Tensor, label: str):
        self.label = label
        self.point = v.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            loss = loss_fn(self.point)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise TypeError("loss_fn must return a scalar tensor")
            if not torch.isfinite(loss):
                raise ValueError(f"loss_fn: non-finite loss {float(loss.detach())} at the "
                                 f"evaluation point{label}")  # fmt: skip
            (grad,) = torch.autograd.grad(loss.reshape(()), self.point, create_graph=True)
        if not torch.isfinite(grad).all():
            raise ValueError(f"loss_fn: non-finite gradient at the evaluation point{label}")
        self.loss = float(loss.detach())
        self.grad = grad
        self.count = 0

    def __call__(self, u: np.ndarray) -> np.ndarray:
        ut = torch.as_tensor(u, dtype=self.grad.dtype, device=self.grad.device)
        with torch.enable_grad():
            if not self.grad.requires_grad:  # L linear in v: H = 0
                out = torch.zeros_like(ut)
            else:
                (out,) = torch.autograd.grad(self.grad @ ut, self.point, retain_graph=True,
                                             allow_unused=True)  # Eq. (2)  # fmt: skip
                out = torch.zeros_like(ut) if out is None else out
        self.count += 1
        hu = out.detach().double().cpu().numpy()
        if not np.all(np.isfinite(hu)):
            raise ValueError(f"loss_fn: non-finite Hessian-vector product{self.label}")
        return hu


@dataclass(frozen=True)
class SteeringHessian:
    """Eigenpairs of the steering Hessian at a point ``v``.

    Attributes
    ----------
    eigvals : ndarray, shape (n,)
        Eigenvalues (dense: all ``d``; Lanczos: the ``m`` Ritz values), descending.
    eigvecs : ndarray, shape (d, n)
        Orthonormal eigenvectors / Ritz vectors, columns matching ``eigvals``.
    point : ndarray, shape (d,)
        Where ``H`` was evaluated.
    loss : float
        ``L(point)``.
    grad : ndarray, shape (d,)
        ``dL/dv`` at ``point``.
    method : str
        ``"dense"`` or ``"lanczos"``.
    num_hvp : int
        Hessian-vector products used to build it.
    dense : ndarray, shape (d, d), or None
        The Hessian itself (dense method only; symmetrised).
    asymmetry : float
        ``max |H - H^T|`` before symmetrising (dense only; 0 for Lanczos).
    """

    eigvals: np.ndarray
    eigvecs: np.ndarray
    point: np.ndarray
    loss: float
    grad: np.ndarray
    method: str
    num_hvp: int
    dense: np.ndarray | None = None
    asymmetry: float = 0.0
    _hvp: Callable | None = field(default=None, repr=False, compare=False)

    @property
    def dim(self) -> int:
        return int(self.point.shape[0])

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` largest eigenvalues ``(k,)`` and their eigenvectors ``(d, k)``."""
        k = check_int(k, "k", min=0, max=len(self.eigvals))
        return self.eigvals[:k], self.eigvecs[:, :k]

    def matvec(self, u) -> np.ndarray:
        """``H u`` (dense: a product; Lanczos: one more exact HVP)."""
        u = check_array(u, "u", shape=(self.dim,))
        if self.dense is not None:
            return self.dense @ u
        if self._hvp is None:
            raise ValueError("u: this Hessian keeps no HVP (built elsewhere); cannot multiply")
        return self._hvp(u)

    def curvature(self, u) -> float:
        """Directional curvature ``kappa(u) = u^T H u / ||u||^2`` (0 for ``u = 0``)."""
        u = check_array(u, "u", shape=(self.dim,))
        nrm = float(u @ u)
        if nrm == 0.0:
            return 0.0
        return float(u @ self.matvec(u)) / nrm


def lanczos(matvec: Callable[[np.ndarray], np.ndarray], dim: int, *, num_steps: int,
            seed: int = 0, start=None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Lanczos with full re-orthogonalisation: Ritz values (descending) and vectors.

    Parameters
    ----------
    matvec : callable
        ``u (d,) -> H u (d,)`` for a symmetric ``H``.
    dim : int
        ``d``.
    num_steps : int
        ``m`` in ``[1, d]``: matrix-vector products (fewer if the Krylov space closes).
    seed : int
        Seeds the random start vector.
    start : array_like, shape (d,), optional
        Start vector instead of a random one.

    Returns
    -------
    eigvals : ndarray, shape (m',)
    eigvecs : ndarray, shape (d, m')

    Examples
    --------
    >>> A = np.diag([5.0, 2.0, 1.0, -1.0])
    >>> w, V = lanczos(lambda u: A @ u, 4, num_steps=4)
    >>> np.round(w, 6).tolist()
    [5.0, 2.0, 1.0, -1.0]
    """
    check_callable(matvec, "matvec")
    dim = check_int(dim, "dim", min=1, max=MAX_DIM)
    m = check_int(num_steps, "num_steps", min=1, max=dim)
    seed = check_int(seed, "seed", min=0, max=2**63 - 1)
    if start is None:
        q = np.random.default_rng(seed).standard_normal(dim)
    else:
        q = check_array(start, "start", shape=(dim,)).copy()
        if not np.any(q):
            raise ValueError("start must be a non-zero vector")
    q /= np.linalg.norm(q)
    Q = np.zeros((dim, m))
    alpha, beta = np.zeros(m), np.zeros(m)
    n = m
    for j in range(m):
        Q[:, j] = q
        w = np.asarray(matvec(q), dtype=float)
        alpha[j] = q @ w
        w = w - Q[:, : j + 1] @ (Q[:, : j + 1].T @ w)  # full re-orthogonalisation
        w = w - Q[:, : j + 1] @ (Q[:, : j + 1].T @ w)  # twice is enough
        b = float(np.linalg.norm(w))
        scale = max(1.0, float(np.max(np.abs(alpha[: j + 1]))))
        if j == m - 1 or b <= 1e-10 * scale:  # Krylov space closed: exact on it
            n = j + 1
            break
        beta[j] = b
        q = w / b
    T = np.diag(alpha[:n]) + np.diag(beta[: n - 1], 1) + np.diag(beta[: n - 1], -1)
    theta, S = np.linalg.eigh(T)  # Ritz values of T_m = Q^T H Q
    order = np.argsort(theta)[::-1]
    return theta[order], Q[:, :n] @ S[:, order]


def steering_hessian(loss_fn: Callable, v, *, method: str = "lanczos", num_steps: int = 32,
                     seed: int = 0, label: str = "") -> SteeringHessian:  # fmt: skip
    """The steering Hessian of ``loss_fn`` at ``v`` (paper: at ``alpha v_CAA``).

    Parameters
    ----------
    loss_fn : callable
        ``v (Tensor (d,)) -> scalar Tensor``, twice differentiable (e.g.
        :class:`.SteeringObjective`; load HF models with ``attn_implementation="eager"``).
    v : Tensor or array_like, shape (d,)
        Evaluation point (a tensor keeps its dtype; an array takes ``loss_fn.dtype``
        when the objective has one, as :class:`.SteeringObjective` does, else float32).
    method : {"dense", "lanczos"}
        ``"dense"``: ``d`` HVPs, all eigenpairs (``d <= 2048``). ``"lanczos"``:
        ``num_steps`` HVPs, Ritz pairs (the top ones converge first).
    num_steps : int
        Lanczos steps ``m`` (capped at ``d``).
    seed : int
        Lanczos start vector.
    label : str
        Names the condition in error messages (e.g. ``"sentiment, layer 12"``).

    Returns
    -------
    SteeringHessian

    Raises
    ------
    ValueError
        Non-finite loss, gradient or HVP (naming ``label``); ``method="dense"`` above
        ``d = 2048`` (use Lanczos).

    Examples
    --------
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> H = steering_hessian(lambda v: 0.5 * v @ A @ v, torch.zeros(2), method="dense")
    >>> np.allclose(H.dense, A.numpy())
    True
    """
    check_callable(loss_fn, "loss_fn")
    # an array point takes the objective's dtype (the model's: bf16, float64), else float32
    dtype = getattr(loss_fn, "dtype", torch.float32)
    point = _as_point(v, dtype=dtype if isinstance(dtype, torch.dtype) else torch.float32)
    dim = int(point.shape[0])
    if method not in ("dense", "lanczos"):
        raise ValueError(f"method must be 'dense' or 'lanczos', got {method!r}")
    num_steps = check_int(num_steps, "num_steps", min=1, max=MAX_DIM)
    seed = check_int(seed, "seed", min=0, max=2**63 - 1)
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    if method == "dense" and dim > MAX_DENSE_DIM:
        raise ValueError(f"v has dimension {dim}: method='dense' is limited to "
                         f"{MAX_DENSE_DIM}; use method='lanczos'")  # fmt: skip
    hvp = _HVP(loss_fn, point, f" ({label})" if label else "")
    common = dict(point=point.detach().double().cpu().numpy(), loss=hvp.loss,
                  grad=hvp.grad.detach().double().cpu().numpy())  # fmt: skip
    if method == "dense":
        eye = np.eye(dim)
        H = np.stack([hvp(eye[i]) for i in range(dim)], axis=1)  # column i = H e_i
        asym = float(np.max(np.abs(H - H.T)))
        H = 0.5 * (H + H.T)
        w, V = np.linalg.eigh(H)
        order = np.argsort(w)[::-1]
        return SteeringHessian(w[order], V[:, order], method="dense", num_hvp=hvp.count,
                               dense=H, asymmetry=asym, _hvp=hvp, **common)  # fmt: skip
    w, V = lanczos(hvp, dim, num_steps=min(num_steps, dim), seed=seed)
    return SteeringHessian(w, V, method="lanczos", num_hvp=hvp.count, _hvp=hvp, **common)


def finite_difference_hessian(loss_fn: Callable, v, *, step: float = 1e-3) -> np.ndarray:
    """Central differences of the autograd gradient: ``H[:, i] = (g(v+h e_i) - g(v-h e_i))/2h``.

    An independent check of :func:`steering_hessian` (no second derivative is taken).
    Runs in float64 if ``v`` is float64. Returns the raw (unsymmetrised) ``(d, d)`` matrix.

    Examples
    --------
    >>> f = lambda v: (v ** 3).sum()
    >>> np.round(finite_difference_hessian(f, torch.ones(2, dtype=torch.float64)), 6).tolist()
    [[6.0, 0.0], [0.0, 6.0]]
    """
    check_callable(loss_fn, "loss_fn")
    # an array point takes the objective's dtype (the model's: bf16, float64), else float32
    dtype = getattr(loss_fn, "dtype", torch.float32)
    point = _as_point(v, dtype=dtype if isinstance(dtype, torch.dtype) else torch.float32)
    dim = int(point.shape[0])
    if dim > MAX_DENSE_DIM:
        raise ValueError(f"v has dimension {dim}, more than the limit of {MAX_DENSE_DIM}")
    step = check_float(step, "step", min=1e-12, max=1.0, min_inclusive=True)

    def grad(x):
        x = x.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            (g,) = torch.autograd.grad(loss_fn(x).reshape(()), x)
        g = g.detach().double().cpu().numpy()
        if not np.all(np.isfinite(g)):
            raise ValueError("loss_fn: non-finite gradient")
        return g

    cols = []
    for i in range(dim):
        e = torch.zeros_like(point)
        e[i] = step
        cols.append((grad(point + e) - grad(point - e)) / (2 * step))
    return np.stack(cols, axis=1)


def linear_softmax_loss(W, h, targets) -> Callable:
    """The loss ``L(v) = -mean_b log softmax(W (h_b + v))[y_b]`` of a linear-softmax model.

    Parameters
    ----------
    W : array_like, shape (V, d)
    h : array_like, shape (B, d)
    targets : int array, shape (B,)

    Returns
    -------
    callable ``v (d,) -> scalar Tensor`` (float64)
    """
    W, h, y = _linear_softmax_args(W, h, targets)
    Wt, ht, yt = (torch.as_tensor(W), torch.as_tensor(h), torch.as_tensor(y))

    def loss(v):
        logits = (ht + v.to(torch.float64)) @ Wt.T  # (B, V)
        return -torch.log_softmax(logits, 1).gather(1, yt[:, None]).mean()

    return loss


def linear_softmax_hessian(W, h, v) -> np.ndarray:
    """Closed form ``H = mean_b W^T (diag(p_b) - p_b p_b^T) W``, ``p_b = softmax(W (h_b + v))``.

    The Hessian of :func:`linear_softmax_loss` (independent of the targets). Shape (d, d).

    Examples
    --------
    >>> W = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> np.round(linear_softmax_hessian(W, np.zeros((1, 2)), np.zeros(2)), 3).tolist()
    [[0.25, -0.25], [-0.25, 0.25]]
    """
    W, h, _ = _linear_softmax_args(W, h, np.zeros(1, dtype=int), check_targets=False)
    v = check_array(v, "v", shape=(W.shape[1],))
    z = (h + v) @ W.T  # (B, V)
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    H = np.zeros((W.shape[1], W.shape[1]))
    for pb in p:
        H += W.T @ (np.diag(pb) - np.outer(pb, pb)) @ W
    return H / len(p)


def _linear_softmax_args(W, h, targets, check_targets: bool = True):
    W = check_array(W, "W", ndim=2, max_size=10**7)
    h = check_array(h, "h", shape=(None, W.shape[1]), max_size=10**7)
    if check_targets:
        y = check_array(targets, "targets", shape=(h.shape[0],), dtype=None)
        if y.dtype.kind not in "iu":
            raise TypeError(f"targets must be integers, got dtype {y.dtype}")
        if y.min() < 0 or y.max() >= W.shape[0]:
            raise ValueError(f"targets must lie in [0, {W.shape[0]})")
        y = y.astype(np.int64)
    else:
        y = np.asarray(targets)
    return W, h, y
