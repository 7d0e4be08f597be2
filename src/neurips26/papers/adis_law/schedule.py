"""Warmup-stable-decay schedules with annealing-phase domain injection, and their features.

An injection policy ``pi = (lambda, r, eta)`` acts on the annealing phase of a WSD
schedule: the last ``lambda`` share of the annealing steps carries domain data, a
fraction ``r`` of every batch there is domain data, and at the injection start the
learning rate re-warms linearly to ``eta`` before decaying to the schedule's floor.

The law (``law.py``) sees a schedule only through its cumulative features: the forward
area ``S1``, the annealing area ``S2`` of the LR-annealing law (Tissue et al., 2024),
and the LR-weighted domain and general exposures ``E_d`` and ``E_g``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from ._checks import MAX_LR, MAX_STEPS, check_array, check_int, check_real

__all__ = [
    "InjectionPolicy",
    "Schedule",
    "ScheduleFeatures",
    "min_total_steps",
    "schedule_features",
    "wsd_schedule",
]


@dataclass(frozen=True, order=True)
class InjectionPolicy:
    """An annealing-phase injection policy ``pi = (lambda, r, eta)``.

    Parameters
    ----------
    fraction : float
        ``lambda`` in (0, 1]: the share of the annealing phase that carries domain data
        (the injection starts ``lambda`` of the way from the end of the anneal).
    mix_ratio : float
        ``r`` in [0, 1]: the share of each batch's sequences that is domain data inside
        the injection window.
    peak_lr : float
        ``eta`` > 0: the learning rate re-warmed to at the injection start (absolute, not
        relative to the schedule's peak).

    Examples
    --------
    >>> InjectionPolicy(0.5, 0.3, 6e-4)
    InjectionPolicy(fraction=0.5, mix_ratio=0.3, peak_lr=0.0006)
    """

    fraction: float
    mix_ratio: float
    peak_lr: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", check_real("fraction", self.fraction, low=0.0,
                                                        high=1.0, low_open=True))
        object.__setattr__(
            self, "mix_ratio", check_real("mix_ratio", self.mix_ratio, low=0.0, high=1.0)
        )
        object.__setattr__(
            self, "peak_lr", check_real("peak_lr", self.peak_lr, low=0.0, low_open=True)
        )


@dataclass(frozen=True)
class Schedule:
    """A per-step learning rate and domain share.

    Attributes
    ----------
    lrs : ndarray, shape (S,)
        ``eta_i``, the learning rate of optimiser step ``i``.
    mix : ndarray, shape (S,)
        ``r_i``, the share of step ``i``'s batch that is domain data.
    peak_lr : float
        ``eta_0``, the base schedule's peak.
    warmup_end, anneal_start, injection_start, rewarm_end : int
        First step of the stable phase, of the annealing phase, of the injection window
        (``S`` without a policy) and of the post-re-warmup decay (``S`` without a policy).
    policy : InjectionPolicy or None
        The injection policy, ``None`` for the base schedule.
    """

    lrs: np.ndarray
    mix: np.ndarray
    peak_lr: float
    warmup_end: int
    anneal_start: int
    injection_start: int
    rewarm_end: int
    policy: InjectionPolicy | None = None

    @property
    def total_steps(self) -> int:
        """``S``, the number of optimiser steps."""
        return int(self.lrs.shape[0])


def _layout(total_steps: int, warmup_frac: float, anneal_frac: float, fraction: float | None,
            rewarm_frac: float) -> tuple[int, int, int, int] | None:
    """(warmup, anneal_start, injection_start, rewarm_end), or None if they do not fit."""
    s = total_steps
    w = round(warmup_frac * s)
    a = round(anneal_frac * s)
    s_a = s - a
    if a < 2 or s_a <= w:  # at least two annealing steps and one stable step
        return None
    if fraction is None:
        return w, s_a, s, s
    n_inj = round(fraction * a)
    k = round(rewarm_frac * s)
    if n_inj < 1 or k >= n_inj:  # the window holds the re-warmup and >= 1 decay step
        return None
    return w, s_a, s - n_inj, s - n_inj + k


def min_total_steps(*, warmup_frac: float = 0.02, anneal_frac: float = 0.2,
                    fraction: float | None = None, rewarm_frac: float = 0.02) -> int:
    """The fewest steps for which :func:`wsd_schedule` can lay out the phases.

    Examples
    --------
    >>> min_total_steps()
    8
    >>> min_total_steps(fraction=0.25)
    13
    """
    warmup_frac = check_real("warmup_frac", warmup_frac, low=0.0, high=1.0, high_open=True)
    anneal_frac = check_real("anneal_frac", anneal_frac, low=0.0, high=1.0, low_open=True,
                             high_open=True)
    if fraction is not None:
        fraction = check_real("fraction", fraction, low=0.0, high=1.0, low_open=True)
    rewarm_frac = check_real("rewarm_frac", rewarm_frac, low=0.0, high=1.0, high_open=True)
    for s in range(1, 10_000_000):
        if _layout(s, warmup_frac, anneal_frac, fraction, rewarm_frac) is not None:
            return s
    raise ValueError("no total_steps below 1e7 fits these fractions")  # pragma: no cover


def wsd_schedule(
    total_steps: int,
    *,
    peak_lr: float,
    warmup_frac: float = 0.02,
    anneal_frac: float = 0.2,
    min_lr_ratio: float = 0.1,
    policy: InjectionPolicy | None = None,
    rewarm_frac: float = 0.02,
) -> Schedule:
    """A warmup-stable-decay schedule, optionally with an annealing-phase injection.

    With ``w = round(warmup_frac S)`` and ``a = round(anneal_frac S)``: steps
    ``0..w-1`` warm up linearly to ``eta_0`` (``eta_i = eta_0 (i + 1) / w``), steps
    ``w..S-a-1`` hold ``eta_0``, and steps ``S-a..S-1`` decay linearly so that step
    ``S - 1`` runs at ``eta_min = min_lr_ratio eta_0``.

    With a policy, the injection starts at ``s_inj = S - round(lambda a)``; steps
    ``s_inj..s_inj+k-1`` (``k = round(rewarm_frac S)``) ramp linearly from the LR of
    step ``s_inj - 1`` to ``eta`` (reached at step ``s_inj + k - 1``), then the LR
    decays linearly to ``eta_min`` at step ``S - 1``. ``mix`` is ``r`` on
    ``s_inj..S-1`` and 0 before.

    Parameters
    ----------
    total_steps : int
        ``S``.
    peak_lr : float
        ``eta_0`` > 0.
    warmup_frac, anneal_frac, rewarm_frac : float
        Shares of ``S`` of the warmup, the annealing phase and the re-warmup.
    min_lr_ratio : float
        ``eta_min / eta_0`` in [0, 1].
    policy : InjectionPolicy, optional
        The injection; ``None`` gives the base schedule (``mix`` all zero).

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        If ``total_steps`` is too small to hold the phases (the message gives the
        minimum), or an argument is out of range.

    Examples
    --------
    >>> sch = wsd_schedule(100, peak_lr=1.0, policy=InjectionPolicy(0.5, 0.3, 0.6))
    >>> sch.warmup_end, sch.anneal_start, sch.injection_start, sch.rewarm_end
    (2, 80, 90, 92)
    >>> [round(float(x), 12) for x in (sch.lrs[91], sch.lrs[-1], sch.mix[89], sch.mix[90])]
    [0.6, 0.1, 0.0, 0.3]
    """
    total_steps = check_int("total_steps", total_steps, min_value=1, max_value=MAX_STEPS)
    peak_lr = check_real("peak_lr", peak_lr, low=0.0, high=MAX_LR, low_open=True)
    warmup_frac = check_real("warmup_frac", warmup_frac, low=0.0, high=1.0, high_open=True)
    anneal_frac = check_real("anneal_frac", anneal_frac, low=0.0, high=1.0, low_open=True,
                             high_open=True)
    min_lr_ratio = check_real("min_lr_ratio", min_lr_ratio, low=0.0, high=1.0)
    rewarm_frac = check_real("rewarm_frac", rewarm_frac, low=0.0, high=1.0, high_open=True)
    if policy is not None and not isinstance(policy, InjectionPolicy):
        raise TypeError(f"policy must be an InjectionPolicy or None, got {type(policy).__name__}")
    fraction = None if policy is None else policy.fraction
    layout = _layout(total_steps, warmup_frac, anneal_frac, fraction, rewarm_frac)
    if layout is None:
        need = min_total_steps(warmup_frac=warmup_frac, anneal_frac=anneal_frac,
                               fraction=fraction, rewarm_frac=rewarm_frac)
        raise ValueError(
            f"total_steps={total_steps} is too small for the warmup, stable, annealing"
            f"{' and injection' if policy else ''} phases; the minimum is {need}"
        )
    w, s_a, s_inj, s_rw = layout
    s, eta0 = total_steps, peak_lr
    eta_min = min_lr_ratio * eta0
    i = np.arange(s, dtype=float)
    lrs = np.full(s, eta0)
    if w:
        lrs[:w] = eta0 * (i[:w] + 1) / w
    a = s - s_a
    lrs[s_a:] = eta0 - (eta0 - eta_min) * (i[s_a:] - s_a + 1) / a
    mix = np.zeros(s)
    if policy is not None:
        start_lr = lrs[s_inj - 1]
        k = s_rw - s_inj
        if k:
            ramp = (i[s_inj:s_rw] - s_inj + 1) / k
            lrs[s_inj:s_rw] = start_lr + (policy.peak_lr - start_lr) * ramp
        n_decay = s - s_rw  # decays from eta so that step S - 1 runs at eta_min
        lrs[s_rw:] = policy.peak_lr - (policy.peak_lr - eta_min) * (i[s_rw:] - s_rw + 1) / n_decay
        mix[s_inj:] = policy.mix_ratio
    return Schedule(lrs=lrs, mix=mix, peak_lr=eta0, warmup_end=w, anneal_start=s_a,
                    injection_start=s_inj, rewarm_end=s_rw, policy=policy)


@dataclass(frozen=True)
class ScheduleFeatures:
    """Cumulative schedule features at every step (all shape ``(S,)``, LR units x steps).

    Attributes
    ----------
    s1 : ndarray
        ``S1(s) = sum_{i<=s} eta_i``, the forward area.
    s2 : ndarray
        ``S2(s) = sum_{i<=s} m_i``, the annealing area, with
        ``m_i = zeta m_{i-1} + (eta_{i-1} - eta_i)``; the initial warmup is left out.
    e_domain : ndarray
        ``E_d(s) = sum_{i<=s} r_i eta_i``, the LR-weighted domain exposure.
    e_general : ndarray
        ``E_g(s) = sum_{s_inj<=i<=s} (1 - r_i) eta_i``, the LR-weighted general exposure
        since the injection start (zero before it, and everywhere without domain data).
    injection_start : int
        ``s_inj``, the first step with ``r_i > 0`` (``S`` when there is none).
    """

    s1: np.ndarray
    s2: np.ndarray
    e_domain: np.ndarray
    e_general: np.ndarray
    injection_start: int

    @property
    def general_exposure(self) -> np.ndarray:
        """``G(s) = S1(s) - E_d(s)``, the LR-weighted general exposure since step 0."""
        return self.s1 - self.e_domain


def schedule_features(schedule, *, zeta: float = 0.999, mix=None) -> ScheduleFeatures:
    """The features ``S1, S2, E_d, E_g`` of a schedule.

    Parameters
    ----------
    schedule : Schedule or array_like, shape (S,)
        A :class:`Schedule`, or the per-step learning rates ``eta_i``.
    zeta : float
        Decay of the annealing momentum, in (0, 1).
    mix : array_like, shape (S,), optional
        Per-step domain shares ``r_i`` when ``schedule`` is an array (default 0).

    Returns
    -------
    ScheduleFeatures

    Notes
    -----
    The initial warmup (the steps up to the first one at which the LR stops rising)
    adds nothing to ``S2``: as in the LR-annealing law, only LR decreases after the
    warmup anneal, and a later re-warmup (a negative decrease) shrinks ``S2``.

    Examples
    --------
    >>> f = schedule_features([1.0, 1.0, 0.5, 0.5, 0.5], zeta=0.5)
    >>> f.s1.tolist(), f.s2.tolist()
    ([1.0, 2.0, 2.5, 3.0, 3.5], [0.0, 0.0, 0.5, 0.75, 0.875])
    """
    zeta = check_real("zeta", zeta, low=0.0, high=1.0, low_open=True, high_open=True)
    if isinstance(schedule, Schedule):
        lrs, r = schedule.lrs, schedule.mix
    else:
        lrs = check_array("schedule", schedule)
        r = np.zeros_like(lrs) if mix is None else check_array("mix", mix)
    if r.shape != lrs.shape:
        raise ValueError(f"mix must have the shape of the schedule {lrs.shape}, got {r.shape}")
    if (lrs < 0).any():
        raise ValueError(f"schedule has a negative learning rate at step {int(np.argmax(lrs < 0))}")
    if not (lrs > 0).any():
        raise ValueError("schedule has a zero learning rate everywhere")
    if ((r < 0) | (r > 1)).any():
        raise ValueError("mix must lie in [0, 1]")
    s = lrs.shape[0]
    s1 = np.cumsum(lrs)
    delta = np.zeros(s)
    delta[1:] = lrs[:-1] - lrs[1:]  # eta_{i-1} - eta_i
    rising = np.flatnonzero(np.diff(lrs) <= 0)
    warm = int(rising[0]) if rising.size else s - 1  # last step of the initial warmup
    delta[: warm + 1] = 0.0
    m = lfilter([1.0], [1.0, -zeta], delta)  # m_i = zeta m_{i-1} + (eta_{i-1} - eta_i)
    s2 = np.cumsum(m)
    e_d = np.cumsum(r * lrs)
    injected = np.flatnonzero(r > 0)
    s_inj = int(injected[0]) if injected.size else s
    gen = (1.0 - r) * lrs
    gen[:s_inj] = 0.0
    e_g = np.cumsum(gen)
    return ScheduleFeatures(s1=s1, s2=s2, e_domain=e_d, e_general=e_g, injection_start=s_inj)
