"""The reproduction tasks as bilevel problems on the user's data.

* :class:`QuadraticBilevel`: a quadratic lower level ``g = y^T A_b y / 2 - y^T B x`` (a
  random row sample of ``A``) with a quadratic-plus-softplus upper level, where
  ``y*(x) = A^{-1} B x`` and ``grad Phi`` are exact, so stationarity can be tracked.
* :func:`hyper_cleaning_problem`: hyper-data cleaning. ``x_i`` is a logit weighting
  training sample ``i``; the lower level trains a network on the weighted (noisy) loss,
  the upper level is the clean validation loss.
* :func:`data_mixture_problem`: data-mixture learning. ``x`` holds the logits of the
  mixture weights ``softmax(x)`` over ``K`` domains of the training set; the lower level
  trains on the mixture, the upper level is the validation (target) loss.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.validation import (
    check_array,
    check_float,
    check_int,
    check_rng,
    check_seed,
)

from .bilevel import BilevelProblem, _squared_norm

__all__ = ["QuadraticBilevel", "data_mixture_problem", "flip_labels",
           "hyper_cleaning_batches", "hyper_cleaning_problem"]  # fmt: skip

MAX_DIM = 10**4


@dataclass(frozen=True)
class QuadraticBilevel:
    """A stochastic quadratic bilevel problem with a closed-form hypergradient.

    ``g(x, y; b) = (1/2|b|) sum_{i in b} (a_i^T y)^2 + (mu/2) ||y||^2 - y^T B x`` and
    ``f(x, y; b) = (1/2|b|) sum_{j in b} ||y - c_j||^2 + lam sum_k softplus(x_k)``, so with
    ``A = mean_i a_i a_i^T + mu I`` and ``c = mean_j c_j``::

        y*(x) = A^{-1} B x,  grad Phi(x) = lam sigmoid(x) + B^T A^{-1} (y*(x) - c)   # Eq. (9)

    Parameters
    ----------
    rows : ndarray, shape (n, d_y)
        ``a_i``.
    coupling : ndarray, shape (d_y, d_x)
        ``B``.
    targets : ndarray, shape (n, d_y)
        ``c_j``.
    mu, lam : float
        Ridge ``mu > 0`` (strong convexity) and softplus weight ``lam >= 0``.

    Examples
    --------
    >>> q = QuadraticBilevel.random(dim_x=3, dim_y=5, seed=0)
    >>> q.hypergradient(np.zeros(3)).shape
    (3,)
    """

    rows: np.ndarray
    coupling: np.ndarray
    targets: np.ndarray
    mu: float = 0.5
    lam: float = 0.1

    def __post_init__(self) -> None:
        rows = check_array(self.rows, "rows", ndim=2, max_size=MAX_DIM**2)
        b = check_array(self.coupling, "coupling", ndim=2, max_size=MAX_DIM**2)
        c = check_array(self.targets, "targets", ndim=2, max_size=MAX_DIM**2)
        if b.shape[0] != rows.shape[1]:
            raise ValueError(f"coupling must have {rows.shape[1]} rows (d_y), got {b.shape[0]}")
        if c.shape[1] != rows.shape[1]:
            raise ValueError(f"targets must have {rows.shape[1]} columns (d_y), got {c.shape[1]}")
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "coupling", b)
        object.__setattr__(self, "targets", c)
        object.__setattr__(self, "mu", check_float(self.mu, "mu", min=0, min_inclusive=False,
                                                   max=1e6))  # fmt: skip
        object.__setattr__(self, "lam", check_float(self.lam, "lam", min=0, max=1e6))

    @classmethod
    def random(cls, *, dim_x: int = 10, dim_y: int = 50, num_rows: int | None = None,
               mu: float = 0.5, lam: float = 0.1, noise: float = 1.0,
               seed: int = 0) -> QuadraticBilevel:  # fmt: skip
        """A random instance: Gaussian rows, ``B`` and targets ``c_j = c + noise * e_j``."""
        dim_x = check_int(dim_x, "dim_x", min=1, max=MAX_DIM)
        dim_y = check_int(dim_y, "dim_y", min=1, max=MAX_DIM)
        n = 4 * dim_y if num_rows is None else check_int(num_rows, "num_rows", min=1, max=10**6)
        noise = check_float(noise, "noise", min=0, max=1e6)
        rng = np.random.default_rng(check_seed(seed))
        rows = rng.normal(size=(n, dim_y))
        coupling = rng.normal(size=(dim_y, dim_x)) / np.sqrt(dim_y)
        center = rng.normal(size=dim_y)
        targets = center + noise * rng.normal(size=(n, dim_y))
        return cls(rows, coupling, targets, mu, lam)

    @property
    def dim_x(self) -> int:
        return self.coupling.shape[1]

    @property
    def dim_y(self) -> int:
        return self.coupling.shape[0]

    @functools.cached_property
    def hessian(self) -> np.ndarray:
        """``A = mean_i a_i a_i^T + mu I``, shape (d_y, d_y) (computed once: the exact
        hypergradient reads it twice a call, and the convergence curves call it every step;
        copy it before writing to it)."""
        return self.rows.T @ self.rows / len(self.rows) + self.mu * np.eye(self.dim_y)

    def lower_solution(self, x) -> np.ndarray:
        """``y*(x) = A^{-1} B x``."""
        x = check_array(x, "x", shape=(self.dim_x,))
        return np.linalg.solve(self.hessian, self.coupling @ x)

    def value(self, x) -> float:
        """``Phi(x) = f(x, y*(x))`` on the full data."""
        x = check_array(x, "x", shape=(self.dim_x,))
        r = self.lower_solution(x) - self.targets
        return float(0.5 * (r**2).sum(1).mean() + self.lam * np.logaddexp(0, x).sum())

    def hypergradient(self, x) -> np.ndarray:
        """The exact ``grad Phi(x)`` of Eq. (9)."""
        x = check_array(x, "x", shape=(self.dim_x,))
        ystar = self.lower_solution(x)
        resid = ystar - self.targets.mean(0)
        return self.penalty_gradient(x) + self.coupling.T @ np.linalg.solve(self.hessian, resid)

    def penalty_gradient(self, x) -> np.ndarray:
        """``lam sigmoid(x)``, the gradient of the upper penalty ``lam sum_k softplus(x_k)``."""
        x = check_array(x, "x", shape=(self.dim_x,))
        with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0: lam sigmoid(x) = 0
            return self.lam / (1 + np.exp(-x))

    def problem(self, x0=None) -> BilevelProblem:
        """The :class:`BilevelProblem` (float64; batches are index tensors or ``None``)."""
        a = torch.as_tensor(self.rows)
        b = torch.as_tensor(self.coupling)
        c = torch.as_tensor(self.targets)
        mu, lam = self.mu, self.lam

        def lower(x, y, idx):
            rows = a if idx is None else a[idx]
            return (0.5 * (rows @ y["y"]).pow(2).mean() + 0.5 * mu * y["y"].pow(2).sum()
                    - y["y"] @ (b @ x))  # fmt: skip

        def upper(x, y, idx):
            tg = c if idx is None else c[idx]
            return 0.5 * (y["y"] - tg).pow(2).sum(1).mean() + lam * nn.functional.softplus(x).sum()

        x0 = torch.zeros(self.dim_x, dtype=torch.float64) if x0 is None else torch.as_tensor(
            check_array(x0, "x0", shape=(self.dim_x,)))  # fmt: skip
        return BilevelProblem(upper, lower, x0, {"y": torch.zeros(self.dim_y, dtype=torch.float64)})

    def batches(self, batch_size: int, *, seed: int = 0) -> Iterator[tuple]:
        """An endless stream of independent index triples ``(xi, phi, psi)``."""
        batch_size = check_int(batch_size, "batch_size", min=1, max=len(self.rows))
        gen = torch.Generator().manual_seed(check_seed(seed))
        return _index_stream(gen, (len(self.rows),) * 3, (batch_size,) * 3)


def _index_stream(gen: torch.Generator, sizes: tuple, batch: tuple) -> Iterator[tuple]:
    while True:
        yield tuple(torch.randint(0, n, (b,), generator=gen) for n, b in zip(sizes, batch,
                                                                             strict=True))


def flip_labels(labels, fraction: float, num_classes: int, *, rng) -> tuple[np.ndarray, np.ndarray]:
    """Flip a ``fraction`` of labels uniformly to a *different* class.

    Returns
    -------
    noisy : ndarray of int64, shape (n,)
    flipped : ndarray of bool, shape (n,)
        The corrupted samples (exactly ``round(fraction * n)``).

    Examples
    --------
    >>> noisy, flipped = flip_labels(np.zeros(10, int), 0.5, 3, rng=np.random.default_rng(0))
    >>> int(flipped.sum()), bool((noisy[flipped] != 0).all())
    (5, True)
    """
    y = check_array(labels, "labels", ndim=1, dtype=np.int64)
    fraction = check_float(fraction, "fraction", min=0, max=1)
    k = check_int(num_classes, "num_classes", min=2, max=10**6)
    if y.min() < 0 or y.max() >= k:
        raise ValueError(f"labels must lie in [0, {k}), got range [{y.min()}, {y.max()}]")
    rng = check_rng(rng)
    n = len(y)
    flipped = np.zeros(n, bool)
    flipped[rng.permutation(n)[: round(fraction * n)]] = True
    shift = rng.integers(1, k, n)
    noisy = np.where(flipped, (y + shift) % k, y)
    return noisy.astype(np.int64), flipped


def hyper_cleaning_problem(model: nn.Module, x_train, y_train, x_val, y_val, *,
                           mu: float = 1e-4) -> BilevelProblem:  # fmt: skip
    """Hyper-data cleaning of ``model``'s training set as a bilevel problem.

    ``g(x, y; b) = mean_{i in b} sigmoid(x_i) CE(model_y(u_i), t_i) + mu ||y||^2`` on the
    (noisy) training set, ``f(x, y; b) = mean_{j in b} CE(model_y(v_j), s_j)`` on the clean
    validation set; ``x`` (shape ``(n_train,)``) starts at 0 (all weights 1/2). Batches
    are pairs of index tensors, see :func:`hyper_cleaning_batches`.

    Parameters
    ----------
    model : nn.Module
        Its parameters are ``y0`` (detached copies); it is run through
        :func:`torch.func.functional_call`. The data are moved to its device.
    x_train : torch.Tensor, shape (n_train, ...)
    y_train : torch.Tensor of int64, shape (n_train,)
    x_val, y_val : the validation set
    mu : float >= 0

    Returns
    -------
    BilevelProblem
    """
    return _weighted_classification(model, x_train, y_train, x_val, y_val, mu=mu,
                                    weights=lambda x, idx: torch.sigmoid(x[idx]),
                                    x0=lambda n, dev: torch.zeros(n, device=dev))


def data_mixture_problem(model: nn.Module, x_train, y_train, domains, x_val, y_val, *,
                         mu: float = 1e-4) -> BilevelProblem:  # fmt: skip
    """Data-mixture learning of ``model``'s training set as a bilevel problem.

    The training set is split into ``K`` domains (``domains[i] = k``); the upper variable
    ``x`` (shape ``(K,)``) holds the mixture logits, ``pi = softmax(x)``:
    ``g(x, y; b) = mean_{i in b} K pi_{k(i)} CE(model_y(u_i), t_i) + mu ||y||^2`` (the
    factor ``K`` makes ``x = 0`` the plain unweighted loss), and ``f(x, y; b) =
    mean_{j in b} CE(model_y(v_j), s_j)`` on the validation set, which stands for the
    target distribution. ``x`` starts at 0 (the uniform mixture). Batches are pairs of
    index tensors, see :func:`hyper_cleaning_batches`.

    Parameters
    ----------
    model : nn.Module
        As in :func:`hyper_cleaning_problem`.
    x_train : torch.Tensor, shape (n_train, ...)
    y_train : torch.Tensor of int64, shape (n_train,)
    domains : array_like of int, shape (n_train,)
        The domain ``k(i)`` of each training sample, in ``[0, K)``; every domain present.
    x_val, y_val : the validation set
    mu : float >= 0

    Returns
    -------
    BilevelProblem

    Examples
    --------
    >>> from neurips26.common.models import MLPClassifier
    >>> u = torch.randn(8, 3); t = torch.arange(8) % 2
    >>> prob = data_mixture_problem(MLPClassifier(3, (4,), 2), u, t, np.arange(8) % 4, u, t)
    >>> tuple(prob.x0.shape)
    (4,)
    """
    dom = check_array(_host(domains), "domains", ndim=1, dtype=np.int64)
    if dom.min() < 0:
        raise ValueError("domains must be nonnegative domain indices")
    k = int(dom.max()) + 1
    if k > MAX_DIM:
        raise ValueError(f"domains: at most {MAX_DIM} domains, got {k}")
    if len(np.unique(dom)) != k:
        raise ValueError(f"domains must use every index 0..{k - 1} (some domain is empty)")
    dom_t = torch.as_tensor(dom)

    def weights(x, idx):
        pi = torch.softmax(x, 0)
        return k * pi[dom_t.to(x.device)[idx]]

    def x0(n: int, dev) -> torch.Tensor:  # runs once x_train is checked: n is its length
        if len(dom) != n:
            raise ValueError(f"domains must have {n} entries (one per training sample), "
                             f"got {len(dom)}")  # fmt: skip
        return torch.zeros(k, device=dev)

    return _weighted_classification(model, x_train, y_train, x_val, y_val, mu=mu,
                                    weights=weights, x0=x0)


def _weighted_classification(model, x_train, y_train, x_val, y_val, *, mu, weights, x0):
    """The bilevel problem ``g = mean_i w_i(x) CE_i + mu ||y||^2`` (train), ``f = mean CE``
    (validation), with per-sample weights ``weights(x, idx)`` and start ``x0(n, device)``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    if not params:
        raise ValueError("model must have parameters")
    dev = next(iter(params.values())).device  # the data move to the model's device
    xtr = _as_float(x_train, "x_train", dev)
    xva = _as_float(x_val, "x_val", dev)
    ytr = _as_labels(y_train, "y_train", dev)
    yva = _as_labels(y_val, "y_val", dev)
    if len(ytr) != len(xtr):
        raise ValueError(f"y_train must have {len(xtr)} labels (one per x_train), got {len(ytr)}")
    if len(yva) != len(xva):
        raise ValueError(f"y_val must have {len(xva)} labels (one per x_val), got {len(yva)}")
    mu = check_float(mu, "mu", min=0, max=1e6)
    for name, data in (("x_train", xtr), ("x_val", xva)):
        try:
            with torch.no_grad():
                out = model(data[:1])
        except (RuntimeError, ValueError) as exc:
            raise ValueError(f"{name}: model cannot run on inputs of shape "
                             f"{tuple(data.shape[1:])}: {exc}") from None
        if out.ndim != 2:
            raise ValueError(f"{name}: model must return (B, num_classes) logits, got "
                             f"shape {tuple(out.shape)}")
    k = out.shape[1]
    for name, lab in (("y_train", ytr), ("y_val", yva)):
        if lab.min() < 0 or lab.max() >= k:
            raise ValueError(f"{name} must lie in [0, {k}) (the model's classes)")

    def lower(x, y, idx):
        idx = torch.arange(len(xtr), device=dev) if idx is None else idx.to(dev)
        logits = torch.func.functional_call(model, y, (xtr[idx],))
        ce = nn.functional.cross_entropy(logits, ytr[idx], reduction="none")
        # low rank under BROS's subspace; y is checked finite by the step
        reg = sum(_squared_norm(p) for p in y.values())
        return (weights(x, idx) * ce).mean() + mu * reg

    def upper(x, y, idx):
        idx = torch.arange(len(xva), device=dev) if idx is None else idx.to(dev)
        logits = torch.func.functional_call(model, y, (xva[idx],))
        return nn.functional.cross_entropy(logits, yva[idx])

    return BilevelProblem(upper, lower, x0(len(xtr), dev), params)


def _host(a):
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a


def _as_float(a, name: str, dev: torch.device) -> torch.Tensor:
    arr = check_array(_host(a), name, ndim=(2, 3, 4))
    return torch.as_tensor(arr, dtype=torch.float32, device=dev)


def _as_labels(a, name: str, dev: torch.device) -> torch.Tensor:
    return torch.as_tensor(check_array(_host(a), name, ndim=1, dtype=np.int64), device=dev)


def hyper_cleaning_batches(num_train: int, num_val: int, batch_size: int, *,
                           seed: int = 0) -> Iterator[tuple]:  # fmt: skip
    """Endless independent minibatch index triples ``(val idx, train idx, train idx)``."""
    num_train = check_int(num_train, "num_train", min=1, max=10**9)
    num_val = check_int(num_val, "num_val", min=1, max=10**9)
    batch_size = check_int(batch_size, "batch_size", min=1, max=10**6)
    gen = torch.Generator().manual_seed(check_seed(seed))
    sizes = (num_val, num_train, num_train)
    return _index_stream(gen, sizes, tuple(min(batch_size, n) for n in sizes))
