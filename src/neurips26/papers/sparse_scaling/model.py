"""The sparse-activation data model, the teacher and the random-feature student.

Latent inputs ``x`` in ``R^D`` have independent coordinates ``x_i = b_i g_i`` with
``b_i ~ Bernoulli(p_i)``, ``p_i = min(1, p0 i^-(1 + alpha))`` and ``g_i ~ N(0, 1)``, so
``E[x] = 0`` and ``Cov(x) = diag(p)``. The dense control draws ``x_i = sqrt(p_i) g_i``: the
same covariance, no sparsity. A linear teacher ``y = <w, x>`` labels them and a random-feature
student ``phi(x) = F x`` (or ``relu(F x + c)``) fits a readout ``theta``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import (
    MAX_ELEMENTS,
    check_array,
    check_choice,
    check_float,
    check_int,
    check_rng,
    check_size,
)

ACTIVATIONS = ("linear", "relu")


# ---------------------------------------------------------------- validation helpers
def _check_int(name: str, value, *, minimum: int) -> int:
    return check_int(value, name, min=minimum)


def _check_positive(name: str, value) -> float:
    return check_float(value, name, min=0, min_inclusive=False)


def _check_rng(rng) -> np.random.Generator:
    return check_rng(rng)


def _check_activation(activation: str) -> str:
    return check_choice(activation, "activation", ACTIVATIONS)


def _check_array(name: str, value, *, ndim: int) -> np.ndarray:
    return check_array(value, name, ndim=ndim)


# ---------------------------------------------------------------------------- model
@dataclass(frozen=True)
class SparseFeatureModel:
    """The data model: Zipf-like activation probabilities, sparse or dense coordinates.

    Parameters
    ----------
    dim : int
        Latent dimension ``D`` (>= 2).
    alpha : float
        Spectral exponent ``alpha > 0``: ``p_i = min(1, p0 i^-(1 + alpha))``.
    p0 : float
        Activation probability of the first coordinate, in ``(0, 1]``.
    dense : bool
        ``False``: sparse inputs ``x_i = b_i g_i``. ``True``: the dense control
        ``x_i = sqrt(p_i) g_i`` with the same covariance ``diag(p)``.
    noise : float
        Standard deviation of Gaussian label noise on training targets (default 0).

    Examples
    --------
    >>> m = SparseFeatureModel(dim=4, alpha=1.0, p0=0.5)
    >>> activation_probs(m).round(4).tolist()
    [0.5, 0.125, 0.0556, 0.0312]
    """

    dim: int = 2048
    alpha: float = 1.0
    p0: float = 0.5
    dense: bool = False
    noise: float = 0.0

    def __post_init__(self) -> None:
        _check_int("dim", self.dim, minimum=2)
        _check_positive("alpha", self.alpha)
        if isinstance(self.p0, bool) or not isinstance(self.p0, numbers.Real):
            raise TypeError(f"p0 must be a real number, got {type(self.p0).__name__}")
        if not (0.0 < self.p0 <= 1.0):
            raise ValueError(f"p0 must lie in (0, 1], got {self.p0}")
        if not isinstance(self.dense, bool):
            raise TypeError(f"dense must be a bool, got {type(self.dense).__name__}")
        check_float(self.noise, "noise", min=0)

    def control(self) -> SparseFeatureModel:
        """The dense control with the same covariance (or ``self`` if already dense)."""
        return SparseFeatureModel(
            dim=self.dim, alpha=self.alpha, p0=self.p0, dense=True, noise=self.noise
        )


def _check_model(model) -> SparseFeatureModel:
    if not isinstance(model, SparseFeatureModel):
        raise TypeError(f"model must be a SparseFeatureModel, got {type(model).__name__}")
    return model


def activation_probs(model: SparseFeatureModel) -> np.ndarray:
    """Activation probabilities ``p_i = min(1, p0 i^-(1 + alpha))``, ``i = 1..D``.

    Parameters
    ----------
    model : SparseFeatureModel

    Returns
    -------
    probs : ndarray, shape (D,)
        ``p``; also the diagonal of the input covariance (sparse and dense alike).
    """
    model = _check_model(model)
    i = np.arange(1, model.dim + 1, dtype=float)  # (D,)
    return np.minimum(1.0, model.p0 * i ** (-(1.0 + model.alpha)))


def sample_inputs(model: SparseFeatureModel, num_samples: int, *, rng) -> np.ndarray:
    """Draw ``T`` inputs from the model.

    Parameters
    ----------
    model : SparseFeatureModel
    num_samples : int
        ``T >= 1``; ``T * D`` above :data:`~neurips26.common.validation.MAX_ELEMENTS` is
        refused (``ValueError``).
    rng : numpy.random.Generator

    Returns
    -------
    x : ndarray, shape (T, D)
        Sparse: ``x_i = b_i g_i``; dense control: ``x_i = sqrt(p_i) g_i``.

    Examples
    --------
    >>> x = sample_inputs(SparseFeatureModel(dim=8), 3, rng=np.random.default_rng(0))
    >>> x.shape
    (3, 8)
    """
    model = _check_model(model)
    num_samples = _check_int("num_samples", num_samples, minimum=1)
    check_size(num_samples * model.dim, "num_samples", limit=MAX_ELEMENTS,
               what="input coordinates (num_samples * dim)")
    rng = _check_rng(rng)
    p = activation_probs(model)  # (D,)
    if model.dense:
        return rng.standard_normal((num_samples, model.dim)) * np.sqrt(p)  # (T, D)
    b = rng.random((num_samples, model.dim)) < p  # (T, D) Bernoulli(p_i)
    x = np.zeros((num_samples, model.dim))
    x[b] = rng.standard_normal(int(b.sum()))  # g_i only where active
    return x


def sample_teacher(model: SparseFeatureModel, *, rng) -> np.ndarray:
    """Teacher weights ``w_i ~ N(0, 1)``, shape ``(D,)``."""
    model = _check_model(model)
    return _check_rng(rng).standard_normal(model.dim)


def population_loss(probs, weights, estimate) -> float:
    """Exact population loss of a linear predictor ``x -> <w_hat, x>``.

    ``L = (w - w_hat)' diag(p) (w - w_hat)`` (no test sampling needed).

    Parameters
    ----------
    probs : array_like, shape (D,)
        ``p`` (the input covariance is ``diag(p)``).
    weights : array_like, shape (D,)
        Teacher ``w``.
    estimate : array_like, shape (D,) or (K, D)
        Effective student weights ``w_hat = F' theta`` (one or several).

    Returns
    -------
    float or ndarray of shape (K,)
    """
    p = _check_array("probs", probs, ndim=1)
    w = _check_array("weights", weights, ndim=1)
    est = np.asarray(estimate, dtype=float)
    if est.shape[-1:] != p.shape or w.shape != p.shape:
        raise ValueError(
            f"probs {p.shape}, weights {w.shape} and estimate {est.shape} must share "
            "their last dimension D"
        )
    r = w - est  # (..., D)
    out = (r**2) @ p  # Eq. (population loss)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class RandomFeatureMap:
    """Random features ``phi(x) = F x`` (linear) or ``relu(F x + c)`` (ReLU).

    Attributes
    ----------
    weights : ndarray, shape (P, D)
        ``F`` with entries ``N(0, 1/D)``.
    bias : ndarray, shape (P,)
        ``c`` (zeros for linear features).
    activation : str
        ``"linear"`` or ``"relu"``.
    """

    weights: np.ndarray
    bias: np.ndarray
    activation: str = "linear"

    @property
    def num_params(self) -> int:
        return int(self.weights.shape[0])

    def head(self, num_params: int) -> RandomFeatureMap:
        """The first ``num_params`` features (nested feature maps share their rows)."""
        return RandomFeatureMap(self.weights[:num_params], self.bias[:num_params], self.activation)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Features of inputs ``x`` of shape (T, D); returns (T, P)."""
        z = x @ self.weights.T + self.bias  # (T, P)
        return z if self.activation == "linear" else np.maximum(z, 0.0)


def random_features(
    model: SparseFeatureModel, num_params: int, *, activation: str = "linear", rng
) -> RandomFeatureMap:
    """Draw a random-feature map for the model.

    Parameters
    ----------
    model : SparseFeatureModel
    num_params : int
        ``P``; at most ``D`` for linear features (beyond that the student is plain
        linear regression on ``x``).
    activation : {"linear", "relu"}
    rng : numpy.random.Generator

    Returns
    -------
    RandomFeatureMap
        ``F`` entries ``N(0, 1/D)``; for ReLU a bias ``c_j ~ N(0, tr(diag p)/D)``, the
        pre-activation scale (inferred).
    """
    model = _check_model(model)
    activation = _check_activation(activation)
    num_params = _check_int("num_params", num_params, minimum=1)
    if activation == "linear" and num_params > model.dim:
        raise ValueError(
            f"num_params={num_params} > dim={model.dim} with linear features: the student "
            "would be plain linear regression on x; use num_params <= dim"
        )
    rng = _check_rng(rng)
    weights = rng.standard_normal((num_params, model.dim)) / np.sqrt(model.dim)  # (P, D)
    if activation == "linear":
        bias = np.zeros(num_params)
    else:
        scale = np.sqrt(activation_probs(model).sum() / model.dim)
        bias = scale * rng.standard_normal(num_params)  # (P,)
    return RandomFeatureMap(weights, bias, activation)
