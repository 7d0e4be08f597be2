"""Zeroth-order gradient estimators: antithetic (central) and forward node perturbation.

For a loss ``L`` of a pre-activation ``a`` and a probe ``u ~ N(0, I)`` of ``a``'s shape,

- the antithetic (central) difference ``(L(a + sigma u) - L(a - sigma u)) / (2 sigma)``
  equals ``<grad L(a), u> + (sigma^2 / 6) D^3 L(a)[u, u, u] + O(sigma^4)``: every even
  order of the Taylor expansion cancels, per probe (Eq. (2));
- the forward difference ``(L(a + sigma u) - L(a)) / sigma`` equals
  ``<grad L(a), u> + (sigma / 2) u' H u + O(sigma^2)``: the Hessian term stays, per probe.
  It averages to ``(sigma / 2) tr H`` over symmetric probes, which is not zero in general,
  and it adds variance.

Either directional estimate times ``u`` is a gradient estimate (node perturbation,
Williams 1992; Fiete & Seung 2006): ``E[(u' g) u] = g`` for ``u ~ N(0, I)``. The estimate
is per example when the loss returns one value per example: the probe of example ``i``
is scored by example ``i``'s loss only, which is what makes the estimator local to a layer
and to an example.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from neurips26.common.validation import check_callable, check_float, check_int

#: Most probe pairs one call may draw (each costs two forward passes).
MAX_PROBES = 10_000
#: Memory format that a 4-D point keeps through the batched probes (CPU pooling on NCHW is
#: several times slower than on channels-last).
CHANNELS_LAST = torch.channels_last


def all_finite(x: Tensor) -> bool:
    """Whether every entry of a non-empty tensor is finite.

    ``max |x|`` is NaN when an entry is NaN (the maximum propagates NaN) and infinite when
    one is infinite, so one reduction decides it, several times cheaper on the CPU than
    ``torch.isfinite(x).all()``.

    Examples
    --------
    >>> all_finite(torch.tensor([1.0, -2.0])), all_finite(torch.tensor([1.0, float("nan")]))
    (True, False)
    """
    if not x.is_floating_point():
        return True
    return math.isfinite(float(x.detach().abs().amax()))


def as_tensor(x, name: str, *, dtype=torch.float32, finite: bool = True,
              cast: torch.dtype | None = None) -> Tensor:  # fmt: skip
    """``x`` as a non-empty floating tensor (arrays are converted); NaN/inf refused.

    Integer input becomes ``dtype``; with ``cast`` every floating input becomes ``cast``.
    """
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a tensor or numeric array, got {type(x).__name__}")
    if not torch.is_tensor(x):
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
        x = torch.as_tensor(arr)
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"{name} must be a real numeric tensor, got dtype {x.dtype}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.to(dtype)
    if cast is not None and x.is_floating_point() and x.dtype != cast:
        x = x.to(cast)
    if finite and not all_finite(x):
        raise ValueError(f"{name} must be finite; it contains NaN or inf")
    return x


#: Largest |a| and sigma the probe estimators accept: beyond them the finite differences
#: overflow (to inf or NaN) in float32 instead of estimating anything.
MAX_ABS_ACTIVATION = 1e12
MAX_SIGMA = 1e3


def _check_probe_args(loss_fn, a, sigma, num_probes, generator):
    check_callable(loss_fn, "loss_fn")
    a = as_tensor(a, "a")
    if a.numel() and float(a.detach().abs().max()) > MAX_ABS_ACTIVATION:
        raise ValueError(f"a: entries must be at most {MAX_ABS_ACTIVATION:g} in absolute "
                         "value (larger ones overflow the finite differences)")
    sigma = check_float(sigma, "sigma", min=0, min_inclusive=False, max=MAX_SIGMA)
    num_probes = check_int(num_probes, "num_probes", min=1, max=MAX_PROBES)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return a, sigma, num_probes


def _loss(loss_fn, a: Tensor, name: str = "loss_fn") -> Tensor:
    out = loss_fn(a)
    if not torch.is_tensor(out):
        raise TypeError(f"{name} must return a tensor, got {type(out).__name__}")
    if out.ndim > 1 or (out.ndim == 1 and out.shape[0] != a.shape[0]):
        raise ValueError(
            f"{name} must return a scalar or one loss per example ({a.shape[0]},), "
            f"got shape {tuple(out.shape)}"
        )
    return out


def _expand(d: Tensor, u: Tensor) -> Tensor:
    """A directional estimate ``d`` (scalar or (B,)) broadcast against a probe ``u``."""
    return d.reshape(d.shape + (1,) * (u.ndim - d.ndim))


def central_difference(loss_fn: Callable[[Tensor], Tensor], a: Tensor, u: Tensor, *,
                       sigma: float) -> Tensor:  # fmt: skip
    """The antithetic directional derivative ``(L(a + sigma u) - L(a - sigma u)) / (2 sigma)``.

    Parameters
    ----------
    loss_fn : callable
        ``a -> L``: a scalar, or one loss per example of shape ``(B,)``.
    a : Tensor, shape (B, ...)
        The point (the pre-activation ``a_l``).
    u : Tensor, same shape as ``a``
        The probe direction.
    sigma : float
        Perturbation size ``sigma > 0``.

    Returns
    -------
    Tensor, the shape of ``loss_fn``'s output
        ``<grad L, u>`` up to ``O(sigma^2)`` (exact for a quadratic ``L``).

    Examples
    --------
    >>> a, u = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([0.5, -1.0])
    >>> round(float(central_difference(lambda z: (z ** 2).sum() / 2, a, u, sigma=0.1)), 12)
    -1.5
    """
    a, sigma, _ = _check_probe_args(loss_fn, a, sigma, 1, None)
    u = as_tensor(u, "u", cast=a.dtype)
    if u.shape != a.shape:
        raise ValueError(f"u must have the shape of a {tuple(a.shape)}, got {tuple(u.shape)}")
    with torch.no_grad():
        # Eq. (2): the even-order Taylor terms of L(a + s u) and L(a - s u) cancel.
        return (_loss(loss_fn, a + sigma * u) - _loss(loss_fn, a - sigma * u)) / (2 * sigma)


def forward_difference(loss_fn: Callable[[Tensor], Tensor], a: Tensor, u: Tensor, *,
                       sigma: float) -> Tensor:  # fmt: skip
    """The one-sided directional derivative ``(L(a + sigma u) - L(a)) / sigma`` (ablation).

    Parameters are those of :func:`central_difference`. The result is ``<grad L, u> +
    (sigma / 2) u' H u + O(sigma^2)``.

    Examples
    --------
    >>> a, u = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([0.5, -1.0])
    >>> round(float(forward_difference(lambda z: (z ** 2).sum() / 2, a, u, sigma=0.1)), 6)
    -1.4375
    """
    a, sigma, _ = _check_probe_args(loss_fn, a, sigma, 1, None)
    u = as_tensor(u, "u", cast=a.dtype)
    if u.shape != a.shape:
        raise ValueError(f"u must have the shape of a {tuple(a.shape)}, got {tuple(u.shape)}")
    with torch.no_grad():
        return (_loss(loss_fn, a + sigma * u) - _loss(loss_fn, a)) / sigma


def _probe_grad(loss_fn, a, sigma, num_probes, generator, central: bool) -> Tensor:
    a, sigma, num_probes = _check_probe_args(loss_fn, a, sigma, num_probes, generator)
    a = a.detach()
    g = torch.zeros_like(a)
    with torch.no_grad():
        base = None if central else _loss(loss_fn, a)
        for _ in range(num_probes):
            u = torch.randn(a.shape, generator=generator, dtype=a.dtype, device=a.device)
            plus = _loss(loss_fn, a + sigma * u)
            if central:
                d = (plus - _loss(loss_fn, a - sigma * u)) / (2 * sigma)  # Eq. (2)
            else:
                d = (plus - base) / sigma
            g += _expand(d, u) * u  # Eq. (3): ghat_a = d * u
    return g / num_probes


def probe_estimate(loss_fn: Callable[[Tensor, Tensor], Tensor], a: Tensor, y: Tensor, *,
                   sigma: float, num_probes: int = 1, generator: torch.Generator | None = None,
                   central: bool = True) -> tuple[Tensor, Tensor, bool]:  # fmt: skip
    """Node-perturbation estimate of ``dL/da`` with every pass batched into one call.

    The training loop's form of :func:`antithetic_grad` (``central=True``) and
    :func:`forward_difference_grad` (``central=False``) for a per-example loss: the
    unperturbed point and the ``K`` probes (two points each when central) are stacked
    along the batch and scored by one call of ``loss_fn``. For ``K = 1`` the probe is the
    one those functions draw from the same generator.

    Parameters
    ----------
    loss_fn : callable
        ``(z, y) -> losses``: inputs ``z`` of shape ``(n B, ...)`` and labels ``y`` of
        shape ``(n B,)`` give the per-example losses, shape ``(n B,)``.
    a : Tensor, shape (B, ...)
        The point (a pre-activation), finite.
    y : Tensor, shape (B,)
        The labels of ``a``'s examples (repeated for every stacked copy).
    sigma : float
        Absolute perturbation size, ``0 < sigma <= 1e3``.
    num_probes : int
        ``K``, from 1 to 10,000.
    generator : torch.Generator, optional
    central : bool
        Antithetic (central) difference, or the forward difference against ``a``.

    Returns
    -------
    grad : Tensor, shape of ``a``
        ``(1/K) sum_k d_k u_k``, ``d_k`` the per-example directional estimates ``(B,)``.
    base : Tensor, scalar
        The mean loss at ``a``.
    finite : bool
        Whether every directional estimate is finite.

    Raises
    ------
    ValueError, TypeError
        For a bad ``sigma``, ``num_probes``, ``generator`` or ``y`` (its length).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> w = torch.tensor([1.0, 2.0, 3.0])
    >>> est, base, ok = probe_estimate(lambda z, y: (z * w).sum(1), torch.zeros(4, 3),
    ...                                torch.zeros(4), sigma=0.1, num_probes=2000,
    ...                                generator=g)
    >>> est.mean(0).round(decimals=1).tolist(), float(base), ok
    ([1.0, 2.0, 3.0], 0.0, True)
    """
    if not torch.is_tensor(a) or not a.is_floating_point() or a.ndim < 1:
        raise TypeError("a must be a floating tensor of shape (B, ...)")
    if not torch.is_tensor(y) or y.shape != a.shape[:1]:
        raise ValueError(f"y must be a tensor of shape ({a.shape[0]},)")
    sigma = check_float(sigma, "sigma", min=0, min_inclusive=False, max=MAX_SIGMA)
    k = check_int(num_probes, "num_probes", min=1, max=MAX_PROBES)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    b = a.shape[0]
    u = torch.randn((k, *a.shape), generator=generator, dtype=a.dtype, device=a.device)
    su = sigma * u
    parts = [a.unsqueeze(0), a + su, a - su] if central else [a.unsqueeze(0), a + su]
    z = torch.cat(parts)  # (1 + 2K or 1 + K, B, ...)
    n = z.shape[0]
    z = z.reshape(n * b, *a.shape[1:])
    if a.ndim == 4 and not a.is_contiguous() and a.is_contiguous(memory_format=CHANNELS_LAST):
        z = z.contiguous(memory_format=CHANNELS_LAST)  # keep a channels-last point's layout
    losses = loss_fn(z, y.repeat(n)).reshape(n, b)
    if central:
        d = (losses[1 : 1 + k] - losses[1 + k :]) / (2 * sigma)  # Eq. (2), (K, B)
    else:
        d = (losses[1:] - losses[0]) / sigma
    grad = (d.reshape(k, b, *(1,) * (a.ndim - 1)) * u).sum(0) / k  # Eq. (3)
    return grad, losses[0].mean(), bool(torch.isfinite(d).all())


def antithetic_grad(loss_fn: Callable[[Tensor], Tensor], a: Tensor, *, sigma: float,
                    num_probes: int = 1, generator: torch.Generator | None = None
                    ) -> Tensor:  # fmt: skip
    """Antithetic node-perturbation estimate of ``dL/da`` from ``2 K`` forward passes.

    ``ghat_a = (1/K) sum_k (L(a + sigma u_k) - L(a - sigma u_k)) / (2 sigma) * u_k`` with
    ``u_k ~ N(0, I)``. When ``loss_fn`` returns one loss per example the probe of each
    example is scored by its own loss, so the estimate is of the gradient of
    ``loss_fn(a).sum()``; no autograd graph is built.

    Parameters
    ----------
    loss_fn : callable
        ``a -> L`` (scalar or ``(B,)``), evaluated under ``torch.no_grad``.
    a : Tensor, shape (B, ...)
        Pre-activation ``a_l``.
    sigma : float
        Perturbation size ``sigma > 0`` (absolute; :class:`LocalLayer` scales it by the
        pre-activation's spread).
    num_probes : int
        ``K``, the number of antithetic pairs averaged (``1 <= K <= 10,000``).
    generator : torch.Generator, optional
        Source of the probes (the global generator when omitted).

    Returns
    -------
    Tensor, shape of ``a``

    Raises
    ------
    ValueError, TypeError
        For ``sigma <= 0``, ``num_probes < 1``, a non-finite or empty ``a``, or a
        ``loss_fn`` whose output is neither a scalar nor one value per example.

    References
    ----------
    Fiete & Seung (2006), "Gradient learning in spiking neural networks by dynamic
    perturbation of conductances"; the BLANP paper (NeurIPS 2026 submission).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> a = torch.zeros(4, 3)
    >>> est = antithetic_grad(lambda z: (z * torch.tensor([1.0, 2.0, 3.0])).sum(1), a,
    ...                       sigma=0.1, num_probes=2000, generator=g)
    >>> est.mean(0).round(decimals=1).tolist()
    [1.0, 2.0, 3.0]
    """
    return _probe_grad(loss_fn, a, sigma, num_probes, generator, central=True)


def forward_difference_grad(loss_fn: Callable[[Tensor], Tensor], a: Tensor, *, sigma: float,
                            num_probes: int = 1, generator: torch.Generator | None = None
                            ) -> Tensor:  # fmt: skip
    """Forward-difference node perturbation ``(L(a + sigma u) - L(a)) / sigma * u`` (ablation).

    Same parameters and return as :func:`antithetic_grad`; ``K + 1`` forward passes.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> est = forward_difference_grad(lambda z: z.sum(1), torch.zeros(2, 3), sigma=0.1,
    ...                               num_probes=3000, generator=g)
    >>> est.mean(0).round(decimals=0).tolist()
    [1.0, 1.0, 1.0]
    """
    return _probe_grad(loss_fn, a, sigma, num_probes, generator, central=False)
