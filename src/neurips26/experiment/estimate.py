"""A measured quantity with its interval: :class:`Estimate` and the ways to make one.

Every number a claim is judged on is an :class:`Estimate`: the value, an interval
``[lo, hi]`` (not necessarily symmetric), the method that made the interval and its
level, and ``n``, the number of independent units the interval rests on. The rules that
every paper shares live here once:

* too few units for the method (one seed, one task) give an **infinite** interval,
  never a zero-width one: a single unit says nothing about the spread;
* ratios and other positive, heavy-tailed quantities are intervalled on the **log
  scale** (:func:`log_t_interval`, :func:`ratio_t_interval`): a symmetric interval on the
  raw scale of a ratio over three seeds reaches below zero and reads "inconclusive" for
  an 88x blow-up;
* scipy's :func:`scipy.stats.bootstrap` makes the percentile and BCa intervals of a
  statistic over independent units; the grouped, paired and stratified resampling it
  lacks is in :meth:`neurips26.experiment.Table.bootstrap`;
* a quantity that is exact (a count, an identity to machine precision, a closed form)
  is :meth:`Estimate.exact`, and one that could not be measured is
  :meth:`Estimate.missing` with its reason.

Examples
--------
>>> e = t_interval([1.0, 2.0, 3.0])
>>> round(e.value, 6), round(e.hi - e.value, 4), e.method, e.n
(2.0, 2.4841, 't over seeds', 3)
>>> t_interval([5.0]).lo
-inf
>>> r = ratio_t_interval([80.0, 95.0, 90.0])  # a blow-up stays above 1 on the log scale
>>> r.lo > 1
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_seed,
    check_size,
)

__all__ = [
    "Estimate",
    "binomial_interval",
    "bootstrap_interval",
    "log_t_interval",
    "ratio_t_interval",
    "t_interval",
]

#: The most resamples a bootstrap may draw.
MAX_RESAMPLES = 10**6

#: Bootstrap methods: scipy's names (``percentile``, ``BCa``, ``basic``).
BOOTSTRAP_METHODS = ("percentile", "BCa", "basic")


def _check_level(level: float | None) -> float | None:
    if level is None:
        return None
    return check_float(level, "level", min=0, max=1, min_inclusive=False, max_inclusive=False)


@dataclass(frozen=True)
class Estimate:
    """A measured quantity: ``value`` with the interval ``[lo, hi]``.

    Attributes
    ----------
    value : float
        The point estimate (NaN when not measured; :attr:`reason` says why).
    lo, hi : float
        The interval's ends; ``lo <= value <= hi`` for a finite value. Infinite ends mean
        too few units to know the spread. ``lo == hi == value`` only for an exact value.
    method : str
        How the interval was made, in words a reader understands: ``"t over seeds"``,
        ``"percentile bootstrap over tasks"``, ``"BCa bootstrap over images"``,
        ``"Wilson binomial over 400 trials"``, ``"exact"``.
    level : float or None
        The interval's confidence level (``None`` for an exact value).
    n : int
        The number of independent units the interval rests on (seeds, tasks, images).
    reason : str
        Why the value is NaN (empty otherwise).

    Examples
    --------
    >>> Estimate.exact(3.0).half_width
    0.0
    >>> Estimate(1.0, 0.5, 2.0, "t over seeds", 0.95, 4).contains(1.9)
    True
    >>> Estimate.missing("too few points for a fit").reason
    'too few points for a fit'
    """

    value: float
    lo: float
    hi: float
    method: str
    level: float | None = 0.95
    n: int = 0
    reason: str = ""

    def __post_init__(self) -> None:
        for name in ("value", "lo", "hi"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise TypeError(f"Estimate.{name} must be a number, got {type(v).__name__}")
            object.__setattr__(self, name, float(v))
        if not isinstance(self.method, str) or not self.method:
            raise ValueError("Estimate.method must name how the interval was made")
        if self.level is not None:
            object.__setattr__(self, "level", _check_level(self.level))
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 0:
            raise ValueError(f"Estimate.n must be a non-negative integer, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))
        if math.isnan(self.value):
            if not self.reason:
                raise ValueError("a NaN Estimate needs a reason (Estimate.missing(reason))")
            object.__setattr__(self, "lo", -math.inf)
            object.__setattr__(self, "hi", math.inf)
            return
        if math.isnan(self.lo) or math.isnan(self.hi):
            # A method that could not make an interval (all resamples failed): unknown spread.
            object.__setattr__(self, "lo", -math.inf)
            object.__setattr__(self, "hi", math.inf)
        if not self.lo <= self.hi:
            raise ValueError(f"Estimate: lo {self.lo!r} is above hi {self.hi!r}")

    @classmethod
    def exact(cls, value: float, *, n: int = 1, method: str = "exact") -> Estimate:
        """A value known without sampling error (a count, a closed form, an identity)."""
        return cls(float(value), float(value), float(value), method, None, n)

    @classmethod
    def missing(cls, reason: str, *, method: str = "not measured") -> Estimate:
        """A quantity the run could not measure, and why."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("reason: say why the quantity is not measured")
        return cls(math.nan, -math.inf, math.inf, method, None, 0, reason)

    @classmethod
    def from_replicates(cls, value: float, replicates, *, n: int, unit: str = "units",
                        level: float = 0.95, design: str = "") -> Estimate:
        """The percentile interval of bootstrap ``replicates`` a method computed itself.

        For estimators whose resampling the layer cannot redraw (a two-level bootstrap
        over questions and runs inside a fit): ``value`` is the estimate on all data, the
        interval the central ``level`` share of the finite replicates. Infinite with fewer
        than two finite replicates; NaN ``value`` gives :meth:`missing`.

        Parameters
        ----------
        value : float
        replicates : array_like
            The statistic on each bootstrap resample.
        n : int
            The independent units resampled (for :attr:`n`).
        unit : str
            What a unit is, for :attr:`method`.
        level : float
        design : str
            The resampling design in words (``"two-level: questions, then runs"``).

        Examples
        --------
        >>> e = Estimate.from_replicates(3.0, [1.0, 2.0, 3.0, 4.0, 5.0], n=5, level=0.5)
        >>> e.lo, e.hi, e.method
        (2.0, 4.0, 'percentile bootstrap over units')
        """
        level = _check_level(level)
        label = f"percentile bootstrap over {unit}" + (f" ({design})" if design else "")
        value = float(value)
        if math.isnan(value):
            return cls.missing(f"the estimate over {unit} is NaN", method=label)
        reps = np.asarray(replicates, dtype=float).ravel()
        reps = reps[np.isfinite(reps)]
        if reps.size < 2 or not math.isfinite(value):
            return cls(value, -math.inf, math.inf, label, level, int(n))
        lo, hi = np.percentile(reps, [50 * (1 - level), 50 * (1 + level)])
        return cls(value, min(float(lo), value), max(float(hi), value), label, level, int(n))

    @property
    def half_width(self) -> float:
        """The larger distance from ``value`` to an end (what a symmetric ``±`` shows)."""
        if math.isnan(self.value):
            return math.nan
        return max(self.value - self.lo, self.hi - self.value)

    @property
    def finite(self) -> bool:
        """Whether the value and both ends are finite."""
        return all(math.isfinite(x) for x in (self.value, self.lo, self.hi))

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in ``[lo, hi]``."""
        return self.lo <= x <= self.hi

    def map(self, fn: Callable[[float], float], *, method: str | None = None) -> Estimate:
        """The estimate under a monotone increasing map (``exp`` of a log-scale interval)."""
        if math.isnan(self.value):
            return self
        return Estimate(fn(self.value), fn(self.lo), fn(self.hi), method or self.method,
                        self.level, self.n)

    def describe(self) -> str:
        """The interval in words: ``"95% t over seeds, n = 3"`` or ``"exact"``."""
        if math.isnan(self.value):
            return f"not measured: {self.reason}"
        if self.level is None:
            return self.method
        return f"{100 * self.level:g}% {self.method}, n = {self.n}"

    def to_dict(self) -> dict:
        """A JSON-ready dict (``lo``/``hi`` may be infinite: JSON writes them as text)."""
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "method": self.method,
                "level": self.level, "n": self.n, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict) -> Estimate:
        """Inverse of :meth:`to_dict` (missing keys take their defaults)."""
        value = float(data.get("value", math.nan))
        return cls(value, float(data.get("lo", -math.inf)), float(data.get("hi", math.inf)),
                   str(data.get("method") or "unknown"), data.get("level"),
                   int(data.get("n") or 0),
                   str(data.get("reason") or ("not measured" if math.isnan(value) else "")))


def _values(values, name: str = "values") -> np.ndarray:
    return check_array(values, name, ndim=1)


def t_interval(values, *, level: float = 0.95, unit: str = "seeds") -> Estimate:
    """Mean of independent units with the Student-t interval ``mean ± t s / sqrt(n)``.

    Parameters
    ----------
    values : array_like, shape (n,)
        One finite measurement per unit.
    level : float
        Confidence level in (0, 1).
    unit : str
        What a unit is, for :attr:`Estimate.method` (``"seeds"``, ``"runs"``).

    Returns
    -------
    Estimate
        Infinite with one unit.
    """
    v = _values(values)
    level = _check_level(level)
    mean = float(v.mean())
    method = f"t over {unit}"
    if v.size < 2:
        return Estimate(mean, -math.inf, math.inf, method, level, int(v.size))
    h = float(stats.t.ppf(0.5 + level / 2, df=v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(
        v.size)
    return Estimate(mean, mean - h, mean + h, method, level, int(v.size))


def log_t_interval(values, *, level: float = 0.95, unit: str = "seeds") -> Estimate:
    """Geometric mean of positive units with a Student-t interval on the log scale.

    The interval of ``mean(log x)`` is mapped back by ``exp``, so it stays positive and
    asymmetric: the right interval for ratios, perplexities and other heavy-tailed
    positive quantities.

    Parameters
    ----------
    values : array_like, shape (n,)
        Positive, finite measurements, one per unit.
    level : float
    unit : str

    Raises
    ------
    ValueError
        For a value ``<= 0``.
    """
    v = _values(values)
    if np.any(v <= 0):
        raise ValueError(f"values must be positive for a log-scale interval, min {v.min()!r}")
    e = t_interval(np.log(v), level=level, unit=unit)
    return e.map(math.exp, method=f"t over {unit} on the log scale")


def ratio_t_interval(numerator, denominator=None, *, level: float = 0.95,
                     unit: str = "seeds") -> Estimate:
    """Geometric-mean ratio of paired units, intervalled on the log scale.

    ``numerator / denominator`` per unit (or ``numerator`` alone, already ratios), then
    :func:`log_t_interval`.

    Examples
    --------
    >>> e = ratio_t_interval([2.0, 4.0], [1.0, 2.0])
    >>> round(e.value, 6), e.method
    (2.0, 't over seeds on the log scale')
    """
    num = _values(numerator, "numerator")
    if denominator is None:
        return log_t_interval(num, level=level, unit=unit)
    den = _values(denominator, "denominator")
    if den.shape != num.shape:
        raise ValueError(f"denominator has {den.size} units, numerator {num.size}")
    if np.any(den <= 0) or np.any(num <= 0):
        raise ValueError("numerator and denominator must be positive for a ratio interval")
    return log_t_interval(num / den, level=level, unit=unit)


def bootstrap_interval(
    data,
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    method: str = "percentile",
    level: float = 0.95,
    num_resamples: int = 2000,
    seed: int = 0,
    unit: str = "units",
) -> Estimate:
    """Bootstrap interval of ``statistic`` over the rows of ``data`` (scipy's bootstrap).

    Parameters
    ----------
    data : array_like, shape (n,) or (n, k)
        Independent units along axis 0, resampled with replacement (a unit's ``k``
        columns stay together).
    statistic : callable
        Maps an array shaped like ``data`` to a float.
    method : {"percentile", "BCa", "basic"}
        scipy's interval method. BCa falls back to the percentile interval where its
        acceleration is undefined (the method then says so).
    level : float
    num_resamples : int
        In ``[1, 10^6]``.
    seed : int
        Seed of the resampling.
    unit : str
        What a row is (``"tasks"``), for :attr:`Estimate.method`.

    Returns
    -------
    Estimate
        ``value = statistic(data)``; infinite with one unit, or when every replicate's
        statistic is non-finite.

    Examples
    --------
    >>> e = bootstrap_interval(np.arange(10.0), num_resamples=500)
    >>> e.lo < 4.5 < e.hi, e.method
    (True, 'percentile bootstrap over units')
    """
    arr = check_array(data, "data", ndim=(1, 2))
    check_choice(method, "method", BOOTSTRAP_METHODS)
    level = _check_level(level)
    num_resamples = check_int(num_resamples, "num_resamples", min=1)
    check_size(num_resamples, "num_resamples", limit=MAX_RESAMPLES, what="resamples")
    rng = np.random.default_rng(check_seed(seed))
    value = float(statistic(arr))
    n = int(arr.shape[0])
    label = f"{method} bootstrap over {unit}"
    if n < 2 or not math.isfinite(value):
        return Estimate(value, -math.inf, math.inf, label, level, n)
    idx = np.arange(n)

    def stat(i):
        return float(statistic(arr[np.asarray(i, dtype=int)]))

    def attempt(m):
        with np.errstate(all="ignore"):
            res = stats.bootstrap((idx,), stat, n_resamples=num_resamples, vectorized=False,
                                  confidence_level=level, method=m, random_state=rng)
        return float(res.confidence_interval.low), float(res.confidence_interval.high)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, hi = attempt(method)
        if method == "BCa" and not (math.isfinite(lo) and math.isfinite(hi)):
            lo, hi = attempt("percentile")
            label = f"percentile bootstrap over {unit} (BCa undefined)"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Estimate(value, -math.inf, math.inf, label, level, n)
    return Estimate(value, min(lo, value), max(hi, value), label, level, n)


def binomial_interval(successes: int, trials: int, *, level: float = 0.95,
                      method: str = "wilson", unit: str = "trials") -> Estimate:
    """A proportion with its binomial interval (scipy's ``binomtest(...).proportion_ci``).

    Parameters
    ----------
    successes, trials : int
        ``0 <= successes <= trials``, ``trials >= 1``.
    level : float
    method : {"wilson", "exact"}
        Wilson score or Clopper-Pearson.
    unit : str

    Examples
    --------
    >>> e = binomial_interval(90, 100)
    >>> round(e.value, 2), e.lo < 0.9 < e.hi, e.method
    (0.9, True, 'wilson binomial over trials')
    """
    trials = check_int(trials, "trials", min=1)
    successes = check_int(successes, "successes", min=0, max=trials)
    level = _check_level(level)
    check_choice(method, "method", ("wilson", "exact"))
    ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=level, method=method)
    label = ("Clopper-Pearson" if method == "exact" else "wilson") + f" binomial over {unit}"
    return Estimate(successes / trials, float(ci.low), float(ci.high), label, level, trials)
