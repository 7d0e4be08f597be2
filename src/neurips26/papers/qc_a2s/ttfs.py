"""Discrete time-to-first-spike (TTFS) neurons and their static quantizer twin.

A TTFS neuron codes a value by *when* it fires, once, inside a window of ``T`` steps. In
discrete time, with threshold (clip) ``theta`` and input current ``x`` (computed exactly by
the preceding linear layer), its membrane rises linearly during the window::

    V(k) = x + k theta / T + b0,        k = 0, ..., T - 1            # Eq. (1)

It fires at the first ``k*`` with ``V(k*) >= theta`` (never if there is none), and the
receiving layer decodes the spike time as::

    x_hat = theta (1 - k* / T)          (0 without a spike)         # Eq. (2)

With ``u = T x / theta`` this is a uniform static quantizer with ``T + 1`` levels
(the paper's equivalence of discrete TTFS coding and static quantization):

- ``b0 = 0`` (the naive discretization of a continuous-time neuron):
  ``x_hat = (theta / T) clip(floor(u), 0, T)``, biased down by half a step;   # Eq. (3)
- ``b0 = theta / (2 T)`` (the discretization-compatible neuron):
  ``x_hat = (theta / T) clip(floor(u + 1/2), 0, T)``, round half up.          # Eq. (4)

Signed values ``x = x+ - x-`` are carried by a positive and a negative neuron fed ``x`` and
``-x``; at most one of them fires, giving the symmetric levels ``{-T, ..., T} theta / T``.

:func:`ttfs_encode` simulates the neurons step by step (spike events out) and
:func:`ttfs_decode` turns the events back into values; :func:`ttfs_quantize` is the
vectorized fake quantizer of the converted ANN. It evaluates Eq. (4) (or (3)) in closed
form and then settles the few values within a rounding error of a decision threshold with
the neuron's own firing test ``x + ramp(k) >= theta``, so that the ANN and the simulated
SNN agree bit for bit, not only up to rounding. :func:`calibrate_theta` picks the clip of
a static quantizer (max or minimum-MSE over a percentile grid).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.validation import check_bool, check_choice, check_float, check_int

#: The longest window accepted (the step-by-step simulation loops over it).
MAX_STEPS = 65536


def as_float_tensor(x, name: str, *, allow_empty: bool = False) -> torch.Tensor:
    """``x`` as a floating torch tensor; non-finite, empty and non-numeric input refused.

    Integer and bool tensors become the default float dtype; numpy arrays and lists keep
    float64.
    """
    if isinstance(x, torch.Tensor):
        t = x
    else:
        if x is None or isinstance(x, (str, bytes)):
            raise TypeError(f"{name} must be a tensor or array of numbers, got "
                            f"{type(x).__name__}")  # fmt: skip
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} must be a rectangular array of numbers ({exc})") from exc
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
        t = torch.as_tensor(arr.astype(np.float64) if arr.dtype.kind != "f" else arr)
    if t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got {t.dtype}")
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    if t.numel() == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if t.numel() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite (NaN or inf found)")
    return t


def _grid(x: torch.Tensor, theta, num_steps, compatible):
    """``(theta, step, b0)`` as tensors of ``x``'s dtype, broadcastable to ``x``."""
    num_steps = check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    compatible = check_bool(compatible, "compatible")
    if isinstance(theta, numbers.Real) and not isinstance(theta, (bool, np.bool_)):
        th = torch.tensor(float(theta), dtype=x.dtype, device=x.device)
    elif isinstance(theta, (torch.Tensor, np.ndarray)):
        th = as_float_tensor(theta, "theta").to(dtype=x.dtype, device=x.device)
    else:
        raise TypeError(f"theta must be a positive number or tensor, got {type(theta).__name__}")
    if not bool(torch.isfinite(th).all()) or not bool((th > 0).all()):
        raise ValueError("theta must be finite and > 0")
    try:
        torch.broadcast_shapes(th.shape, x.shape)
    except RuntimeError as exc:
        raise ValueError(f"theta: shape {tuple(th.shape)} does not broadcast to x's "
                         f"{tuple(x.shape)}") from exc  # fmt: skip
    if torch.broadcast_shapes(th.shape, x.shape) != x.shape:
        raise ValueError(f"theta: shape {tuple(th.shape)} would enlarge x's {tuple(x.shape)}")
    step = th / num_steps  # theta / T
    b0 = step * 0.5 if compatible else torch.zeros_like(step)  # Eq. (4) / Eq. (3)
    return th, step, b0, num_steps, compatible


def _ramp(k, step: torch.Tensor, b0: torch.Tensor) -> torch.Tensor:
    """The membrane's ramp ``k theta / T + b0`` at step ``k`` (int or int tensor).

    One expression for the simulation and the quantizer, so both round alike.
    """
    if isinstance(k, torch.Tensor):
        k = k.to(step.dtype)
    else:
        k = float(k)
    return k * step + b0


def _levels(a: torch.Tensor, th, step, b0, num_steps: int, compatible: bool) -> torch.Tensor:
    """Level ``T - k*`` in ``[0, T]`` of a non-negative-polarity neuron fed current ``a``."""
    T = num_steps
    u = a / step  # u = T x / theta
    guess = torch.floor(u + 0.5) if compatible else torch.floor(u)  # Eq. (4) / Eq. (3)
    k = (T - guess.clamp(0, T)).to(torch.int64)  # first firing step; T = no spike
    # Settle the values the closed form put on the wrong side of a threshold by rounding:
    # k* is the smallest k in [0, T - 1] with a + ramp(k) >= theta (T if none).
    for _ in range(T + 1):
        earlier = (k > 0) & ((a + _ramp((k - 1).clamp(min=0), step, b0)) >= th)
        later = (k < T) & ~((a + _ramp(k.clamp(max=T - 1), step, b0)) >= th)
        if not bool(earlier.any() or later.any()):
            break
        k = k - earlier.to(torch.int64) + later.to(torch.int64)
    return T - k


def _value(level: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """Eq. (2): ``theta (1 - k*/T) = (T - k*) theta / T``, signed by polarity."""
    return level.to(step.dtype) * step


def ttfs_levels(x, *, theta, num_steps: int, signed: bool = True,
                compatible: bool = True) -> torch.Tensor:  # fmt: skip
    """The integer level ``q`` (``x_hat = q theta / T``) of each value; ``|q| <= T``.

    ``q != 0`` exactly where a neuron spikes. Same arguments as :func:`ttfs_quantize`.

    Examples
    --------
    >>> ttfs_levels(torch.tensor([0.0, 0.1, 0.26, -0.74, 5.0]), theta=1.0, num_steps=4)
    tensor([ 0,  0,  1, -3,  4])
    """
    x = as_float_tensor(x, "x")
    signed = check_bool(signed, "signed")
    th, step, b0, T, compatible = _grid(x, theta, num_steps, compatible)
    if not signed:
        return _levels(x, th, step, b0, T, compatible)
    sign = torch.sign(x).to(torch.int64)
    return sign * _levels(x.abs(), th, step, b0, T, compatible)  # only one polarity can fire


def ttfs_quantize(x, *, theta, num_steps: int, signed: bool = True,
                  compatible: bool = True) -> torch.Tensor:  # fmt: skip
    """Fake-quantize ``x`` exactly as a layer of discrete TTFS neurons transmits it.

    Parameters
    ----------
    x : Tensor, any shape
        Input currents (the pre-activations the neurons receive).
    theta : float or Tensor
        Threshold and clip ``theta > 0``; a tensor broadcasts to ``x`` (per channel).
    num_steps : int
        Window length ``T`` in time steps (``T + 1`` levels per polarity).
    signed : bool
        A positive and a negative neuron per value (levels ``-T..T``); else values
        below 0 are not transmitted (levels ``0..T``).
    compatible : bool
        The discretization-compatible neuron (``b0 = theta/(2T)``, round half up,
        Eq. (4)) or the naive one (``b0 = 0``, floor, Eq. (3)).

    Returns
    -------
    Tensor, shape and dtype of ``x``
        ``x_hat``, equal bit for bit to ``ttfs_decode(ttfs_encode(x, ...))``.

    Raises
    ------
    ValueError
        ``x`` empty or not finite, ``theta <= 0``, NaN or not broadcastable,
        ``num_steps`` outside ``[1, 65536]``.

    Examples
    --------
    >>> ttfs_quantize(torch.tensor([0.1, 0.3, -0.6, 2.0]), theta=1.0, num_steps=4)
    tensor([ 0.0000,  0.2500, -0.5000,  1.0000])
    >>> ttfs_quantize(torch.tensor([0.3]), theta=1.0, num_steps=4, compatible=False)
    tensor([0.2500])
    """
    x = as_float_tensor(x, "x")
    q = ttfs_levels(x, theta=theta, num_steps=num_steps, signed=signed, compatible=compatible)
    step = _grid(x, theta, num_steps, compatible)[1]
    return _value(q, step)


@dataclass(frozen=True)
class SpikeTrain:
    """The spike events of a layer of (signed) TTFS neurons over one window.

    Attributes
    ----------
    times : LongTensor, shape of the input
        Step ``k*`` in ``[0, T - 1]`` of each neuron's spike; ``-1`` where none fired.
    polarity : LongTensor, shape of the input
        ``+1`` (positive neuron), ``-1`` (negative neuron) or ``0`` (no spike).
    counts : LongTensor, shape of the input
        Spikes emitted per signed neuron pair during the window (at most 1).
    num_steps : int
        ``T``.
    theta : Tensor
        Thresholds, broadcastable to ``times``.
    """

    times: torch.Tensor
    polarity: torch.Tensor
    counts: torch.Tensor
    num_steps: int
    theta: torch.Tensor

    @property
    def num_spikes(self) -> int:
        """Total spikes emitted."""
        return int(self.counts.sum())


def ttfs_encode(x, *, theta, num_steps: int, signed: bool = True,
                compatible: bool = True) -> SpikeTrain:  # fmt: skip
    """Simulate discrete TTFS neurons step by step and return their spike events.

    At each step ``k`` every neuron that has not fired yet updates its membrane
    ``V(k) = x + k theta / T + b0`` (Eq. (1); ``-x`` for the negative neuron) and emits
    a spike when ``V(k) >= theta``; a neuron that fired is silent for the rest of the
    window. Arguments as in :func:`ttfs_quantize`.

    Returns
    -------
    SpikeTrain

    Raises
    ------
    ValueError
        Non-finite input (the simulation refuses inf: it would spike at step 0 without
        a value to decode), ``theta <= 0``, ``num_steps`` out of range.

    Examples
    --------
    >>> s = ttfs_encode(torch.tensor([0.3, -0.6, 0.05]), theta=1.0, num_steps=4)
    >>> s.times.tolist(), s.polarity.tolist()
    ([3, 2, -1], [1, -1, 0])
    """
    x = as_float_tensor(x, "x")
    signed = check_bool(signed, "signed")
    th, step, b0, T, _ = _grid(x, theta, num_steps, compatible)
    currents = (x, -x) if signed else (x,)
    times = torch.full(x.shape, -1, dtype=torch.int64, device=x.device)
    polarity = torch.zeros(x.shape, dtype=torch.int64, device=x.device)
    counts = torch.zeros(x.shape, dtype=torch.int64, device=x.device)
    for pol, current in zip((1, -1), currents, strict=False):
        silent = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
        for k in range(T):
            v = current + _ramp(k, step, b0)  # Eq. (1): membrane at step k
            spike = (v >= th) & ~silent
            times = torch.where(spike, k, times)
            polarity = torch.where(spike, pol, polarity)
            counts = counts + spike.to(torch.int64)
            silent = silent | spike
            if bool(silent.all()):
                break
    return SpikeTrain(times=times, polarity=polarity, counts=counts, num_steps=T, theta=th)


def ttfs_decode(spikes: SpikeTrain) -> torch.Tensor:
    """Eq. (2): values from spike times, ``polarity * theta (1 - k*/T)`` (0 if silent).

    Examples
    --------
    >>> s = ttfs_encode(torch.tensor([0.3, -0.6, 0.05]), theta=1.0, num_steps=4)
    >>> ttfs_decode(s)
    tensor([ 0.2500, -0.5000,  0.0000])
    """
    if not isinstance(spikes, SpikeTrain):
        raise TypeError(f"spikes must be a SpikeTrain, got {type(spikes).__name__}")
    T = spikes.num_steps
    t = spikes.times
    if t.numel() and (int(t.min()) < -1 or int(t.max()) >= T):
        raise ValueError(f"spikes: times must lie in [-1, {T - 1}]")
    if spikes.polarity.shape != t.shape:
        raise ValueError("spikes: times and polarity differ in shape")
    step = spikes.theta / T
    level = torch.where(t >= 0, T - t, torch.zeros_like(t)) * spikes.polarity
    return _value(level, step)


def closed_form_levels(x, *, theta, num_steps: int, signed: bool = True,
                       compatible: bool = True) -> np.ndarray:  # fmt: skip
    """Eq. (3)/(4) in float64 numpy: ``clip(floor(u [+ 1/2]), 0, T)``, signed by polarity.

    The independent reference the tests and the experiment hold the neurons against.

    Examples
    --------
    >>> closed_form_levels(np.array([0.3, -0.6]), theta=1.0, num_steps=4).tolist()
    [1, -2]
    """
    t = as_float_tensor(x, "x").double()
    signed = check_bool(signed, "signed")
    th, _, _, T, compatible = _grid(t, theta, num_steps, compatible)
    arr, th = t.detach().cpu().numpy(), th.detach().cpu().numpy()
    a = np.abs(arr) if signed else arr
    with np.errstate(over="ignore"):  # a huge u is clipped to T
        u = T * a / th
    q = np.clip(np.floor(u + 0.5) if compatible else np.floor(u), 0, T)
    return (np.sign(arr) * q).astype(np.int64) if signed else q.astype(np.int64)


def near_tie(x, *, theta, num_steps: int, compatible: bool = True,
             tol: float | None = None) -> np.ndarray:  # fmt: skip
    """Where ``u = T|x|/theta`` (``+ 1/2`` if compatible) lies within ``tol`` of an integer.

    There the closed form and a finite-precision neuron may round either way; the oracle
    comparisons leave these values out and count them. The default ``tol`` is a few units
    of rounding of ``x``'s dtype at the scale of ``u``: ``8 eps (T + |u|)``.

    Examples
    --------
    >>> near_tie(np.array([0.125, 0.3]), theta=1.0, num_steps=4).tolist()
    [True, False]
    """
    t = as_float_tensor(x, "x")
    eps = float(torch.finfo(t.dtype).eps)
    th, _, _, T, compatible = _grid(t.double(), theta, num_steps, compatible)
    arr, th = t.detach().cpu().double().numpy(), th.detach().cpu().numpy()
    if tol is not None:
        tol = check_float(tol, "tol", min=0.0)
    with np.errstate(over="ignore", invalid="ignore"):  # an infinite u is no tie
        u = T * np.abs(arr) / th + (0.5 if compatible else 0.0)
        width = 8 * eps * (T + np.abs(u)) if tol is None else float(tol)
        return np.isfinite(u) & (np.abs(u - np.round(u)) <= width)


def calibrate_theta(samples, *, num_steps: int, signed: bool = True, compatible: bool = True,
                    method: str = "mse", percentiles=None) -> float:  # fmt: skip
    """The clip ``theta`` of a static (TTFS) quantizer from calibration samples.

    Parameters
    ----------
    samples : Tensor or array, any shape
        Activations seen by one quantizer (flattened), e.g. a subsample of a layer's
        calibration inputs.
    num_steps : int
        ``T`` the clip is chosen for.
    signed, compatible : bool
        The quantizer the clip is chosen for (:func:`ttfs_quantize`).
    method : {"mse", "max"}
        ``"max"``: the largest magnitude (lossless in continuous time); ``"mse"``: the
        candidate with the smallest ``mean (x - x_hat)^2``.
    percentiles : sequence of float in (0, 100], optional
        The candidates of ``"mse"``, as percentiles of ``|x|`` (default 90 to 100 in
        steps of 0.25).

    Returns
    -------
    float

    Examples
    --------
    >>> x = torch.randn(20000, generator=torch.Generator().manual_seed(0))
    >>> calibrate_theta(x, num_steps=4) < calibrate_theta(x, num_steps=4, method="max")
    True
    """
    x = as_float_tensor(samples, "samples").flatten()
    check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    method = check_choice(method, "method", ("mse", "max"))
    signed = check_bool(signed, "signed")
    mag = x.abs() if signed else x.clamp(min=0)
    top = float(mag.max())
    if top <= 0:
        raise ValueError("samples: no positive magnitude to calibrate a clip on")
    if method == "max":
        return top
    if percentiles is None:
        percentiles = np.linspace(90.0, 100.0, 41)
    p = np.asarray(as_float_tensor(percentiles, "percentiles").double().cpu())
    if p.ndim != 1 or np.any(p <= 0) or np.any(p > 100):
        raise ValueError("percentiles must be a 1-D sequence in (0, 100]")
    mag64 = mag.double().cpu().numpy()
    cands = np.unique(np.percentile(mag64, p))
    cands = cands[cands > 0]
    if not cands.size:
        raise ValueError("samples: every candidate clip is 0 (too many zeros)")
    T = num_steps
    errs = []
    for chunk in np.array_split(cands, max(1, (len(cands) * x.numel()) // 4_000_000 + 1)):
        c = torch.as_tensor(chunk, dtype=x.dtype, device=x.device)[:, None]  # (C, 1)
        u = T * mag[None, :] / c  # (C, S): Eq. (4) / (3) in closed form; ties do not
        q = torch.floor(u + 0.5) if compatible else torch.floor(u)  # matter for the MSE
        xh = q.clamp(0, T) * (c / T)
        xh = xh * torch.sign(x)[None, :] if signed else xh
        errs.append(((xh - x[None, :]) ** 2).mean(1).double().cpu().numpy())
    err = np.concatenate(errs)
    return float(cands[int(np.argmin(err))])  # the smallest clip on exact ties
