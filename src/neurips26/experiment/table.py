"""The rows an experiment measured, and the estimates made from them: :class:`Table`.

A row is one measured unit (a seed x method x setting, a task, an image): a mapping
of column names to scalars or strings. :class:`Table` is frozen; its methods select
rows (:meth:`Table.where`), read columns, and turn columns into
:class:`~neurips26.experiment.Estimate` s with the resampling each design needs:

* :meth:`Table.mean_over`: the mean over units, Student-t;
* :meth:`Table.paired_diff` / :meth:`Table.paired_ratio`: two arms measured on the same
  units (common random numbers), paired by the unit column; the ratio on the log scale;
* :meth:`Table.bootstrap`: any statistic of the table, resampling whole units (every
  row of a drawn unit comes along, so the rows of one seed stay together), within
  strata when given (each setting keeps its number of units).

Examples
--------
>>> t = Table([{"seed": s, "method": m, "err": e}
...            for s, (a, b) in enumerate([(1.0, 2.0), (1.5, 2.5), (1.2, 2.4)])
...            for m, e in (("ours", a), ("base", b))])
>>> len(t.where(method="ours"))
3
>>> d = t.paired_diff("err", {"method": "base"}, {"method": "ours"})
>>> round(d.value, 4), d.method, d.n
(1.0667, 't over seeds (paired)', 3)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from neurips26.common.validation import check_choice, check_float, check_int, check_seed

from .estimate import (
    BOOTSTRAP_METHODS,
    MAX_RESAMPLES,
    Estimate,
    log_t_interval,
    t_interval,
)

__all__ = ["Table"]


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return value


class Table:
    """Frozen rows of measurements, one per measured unit.

    Parameters
    ----------
    rows : iterable of mapping
        Each row maps column names (str) to scalars or strings. Rows may have different
        columns (a column absent from a row reads as missing there).

    Raises
    ------
    TypeError
        For a row that is not a mapping, or a column name that is not a string.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        out = []
        for i, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise TypeError(f"rows[{i}] must be a mapping, got {type(row).__name__}")
            clean = {}
            for k, v in row.items():
                if not isinstance(k, str):
                    raise TypeError(f"rows[{i}]: column names must be str, got {k!r}")
                clean[k] = _plain(v)
            out.append(MappingProxyType(clean))
        object.__setattr__(self, "_rows", tuple(out))

    def __setattr__(self, name, value):  # frozen
        raise AttributeError("Table is frozen")

    @classmethod
    def _of(cls, rows) -> Table:
        """A table of rows that are already checked read-only mappings (selections and
        bootstrap draws of a table): no second pass over every cell."""
        table = object.__new__(cls)
        object.__setattr__(table, "_rows", tuple(rows))
        return table

    # ------------------------------------------------------------------ access
    @property
    def rows(self) -> tuple[Mapping[str, Any], ...]:
        """The rows, read-only."""
        return self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"Table({len(self)} rows, columns {self.columns})"

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column name, in order of first appearance."""
        seen: dict[str, None] = {}
        for row in self._rows:
            seen.update(dict.fromkeys(row))
        return tuple(seen)

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as plain dicts (for ``RunResult.tables`` and the report)."""
        return [dict(r) for r in self._rows]

    def where(self, predicate: Callable[[Mapping], bool] | None = None, **equal: Any) -> Table:
        """The rows whose columns equal ``equal`` (and pass ``predicate``)."""
        def keep(row):
            if any(row.get(k, _MISSING) != v for k, v in equal.items()):
                return False
            return predicate is None or bool(predicate(row))

        return Table._of(r for r in self._rows if keep(r))

    def column(self, name: str, *, dtype=float) -> np.ndarray:
        """Column ``name`` of every row, as an array (a row without it raises KeyError)."""
        try:
            values = [r[name] for r in self._rows]
        except KeyError:
            raise KeyError(f"column {name!r} is missing from some rows; columns: "
                           f"{self.columns}") from None
        return np.asarray(values, dtype=dtype)

    def unique(self, name: str) -> tuple:
        """The distinct values of column ``name``, in order of appearance."""
        return tuple(dict.fromkeys(r[name] for r in self._rows if name in r))

    def groups(self, *by: str) -> dict[Any, Table]:
        """Rows grouped by the columns ``by`` (a key is a value, or a tuple of values)."""
        out: dict[Any, list] = {}
        for r in self._rows:
            key = tuple(r.get(b) for b in by)
            out.setdefault(key[0] if len(by) == 1 else key, []).append(r)
        return {k: Table._of(v) for k, v in out.items()}

    # ------------------------------------------------------------------ estimates
    def mean_over(self, value: str, *, unit: str = "seed", level: float = 0.95) -> Estimate:
        """Mean of column ``value`` over units, with its Student-t interval.

        Rows sharing a ``unit`` are averaged first (one number per unit). Infinite with
        one unit; NaN (with a reason) when no row has a finite value.
        """
        per = self._per_unit(value, unit)
        if not per:
            return Estimate.missing(f"no finite {value!r} in {len(self)} rows")
        return t_interval(list(per.values()), level=level, unit=_plural(unit))

    def paired_diff(self, value: str, a: Mapping[str, Any], b: Mapping[str, Any], *,
                    on: str = "seed", level: float = 0.95) -> Estimate:
        """Mean over units of ``value[a] - value[b]``, paired on column ``on`` (Student-t).

        ``a`` and ``b`` select the two arms (``{"method": "ours"}``). Only units measured
        in both arms count; NaN with a reason when none is.
        """
        da, db = self.where(**a)._per_unit(value, on), self.where(**b)._per_unit(value, on)
        keys = [k for k in da if k in db]
        if not keys:
            return Estimate.missing(f"no {on} has a finite {value!r} in both arms {a} and {b}")
        diffs = [da[k] - db[k] for k in keys]
        return _relabel(t_interval(diffs, level=level, unit=_plural(on)), "(paired)")

    def paired_ratio(self, value: str, a: Mapping[str, Any], b: Mapping[str, Any], *,
                     on: str = "seed", level: float = 0.95) -> Estimate:
        """Geometric mean over units of ``value[a] / value[b]``, paired on ``on``, with a
        Student-t interval on the log scale (ratios are heavy-tailed)."""
        da, db = self.where(**a)._per_unit(value, on), self.where(**b)._per_unit(value, on)
        keys = [k for k in da if k in db and da[k] > 0 and db[k] > 0]
        if not keys:
            return Estimate.missing(
                f"no {on} has a positive {value!r} in both arms {a} and {b}")
        ratios = [da[k] / db[k] for k in keys]
        return _relabel(log_t_interval(ratios, level=level, unit=_plural(on)), "(paired)")

    def bootstrap(
        self,
        statistic: Callable[[Table], float],
        *,
        unit: str = "seed",
        strata: str | tuple[str, ...] | None = None,
        method: str = "percentile",
        level: float = 0.95,
        num_resamples: int = 2000,
        seed: int = 0,
    ) -> Estimate:
        """Bootstrap interval of ``statistic(table)``, resampling whole units.

        Parameters
        ----------
        statistic : callable
            Maps a :class:`Table` (the rows of the drawn units) to a float.
        unit : str
            The column naming the independent unit (``"seed"``, ``"task"``). A drawn
            unit brings all its rows; a unit drawn twice appears twice, relabelled so
            that pairings on ``unit`` inside ``statistic`` stay within one draw.
        strata : str or tuple of str, optional
            Columns whose groups are resampled apart, each keeping its number of units
            (a stratified bootstrap: every setting's instances redrawn on their own).
        method : {"percentile", "basic", "BCa"}
            Percentile and basic intervals of the replicates; BCa uses the jackknife over
            units for its acceleration.
        level : float
        num_resamples : int
        seed : int

        Returns
        -------
        Estimate
            ``value = statistic(self)``. Infinite with fewer than two units (in every
            stratum), or when no replicate's statistic is finite.
        """
        check_choice(method, "method", BOOTSTRAP_METHODS)
        level = check_float(level, "level", min=0, max=1, min_inclusive=False,
                            max_inclusive=False)
        num_resamples = check_int(num_resamples, "num_resamples", min=1, max=MAX_RESAMPLES)
        rng = np.random.default_rng(check_seed(seed))
        by = (strata,) if isinstance(strata, str) else tuple(strata or ())
        units = self._units(unit, by)
        n = sum(len(u) for u in units.values())
        label = f"{method} bootstrap over {_plural(unit)}" + (
            f", stratified by {', '.join(by)}" if by else "")
        value = float(statistic(self))
        if not math.isfinite(value):
            return Estimate(value, -math.inf, math.inf, label, level, n) if not math.isnan(
                value) else Estimate.missing(f"the statistic is NaN on all {n} {unit}s",
                                             method=label)
        if all(len(u) < 2 for u in units.values()):
            return Estimate(value, -math.inf, math.inf, label, level, n)
        reps = np.empty(num_resamples)
        for b in range(num_resamples):
            reps[b] = float(statistic(self._draw(units, unit, rng)))
        reps = reps[np.isfinite(reps)]
        if reps.size == 0:
            return Estimate(value, -math.inf, math.inf, label, level, n)
        alpha = 1 - level
        if method == "percentile":
            lo, hi = np.percentile(reps, [50 * alpha, 100 - 50 * alpha])
        elif method == "basic":
            qlo, qhi = np.percentile(reps, [50 * alpha, 100 - 50 * alpha])
            lo, hi = 2 * value - qhi, 2 * value - qlo
        else:
            lo, hi = _bca(self, statistic, units, unit, value, reps, alpha)
            if not (math.isfinite(lo) and math.isfinite(hi)):
                lo, hi = np.percentile(reps, [50 * alpha, 100 - 50 * alpha])
                label += " (BCa undefined: percentile)"
        return Estimate(value, min(float(lo), value), max(float(hi), value), label, level, n)

    # ------------------------------------------------------------------ helpers
    def _per_unit(self, value: str, unit: str) -> dict[Any, float]:
        sums: dict[Any, list[float]] = {}
        for r in self._rows:
            if unit not in r:
                raise KeyError(f"column {unit!r} is missing; columns: {self.columns}")
            v = r.get(value)
            if v is None or isinstance(v, str):
                continue
            v = float(v)
            if math.isfinite(v):
                sums.setdefault(r[unit], []).append(v)
        return {k: float(np.mean(v)) for k, v in sums.items()}

    def _units(self, unit: str, by: tuple[str, ...]) -> dict[tuple, dict[Any, list]]:
        out: dict[tuple, dict[Any, list]] = {}
        for r in self._rows:
            if unit not in r:
                raise KeyError(f"column {unit!r} is missing; columns: {self.columns}")
            out.setdefault(tuple(r.get(b) for b in by), {}).setdefault(r[unit], []).append(r)
        return out

    @staticmethod
    def _draw(units: dict[tuple, dict[Any, list]], unit: str, rng) -> Table:
        rows = []
        draw = 0
        for members in units.values():
            keys = list(members)
            for j in rng.integers(0, len(keys), size=len(keys)):
                for r in members[keys[j]]:
                    rows.append(MappingProxyType({**r, unit: ("draw", draw)}))
                draw += 1
        return Table._of(rows)


_MISSING = object()


def _plural(unit: str) -> str:
    """The unit's column name as a plural noun for an interval's label.

    ``"seed"`` -> ``"seeds"``, ``"query"`` -> ``"queries"``, ``"seed_index"`` -> ``"seed
    indexes"``, ``"test inputs"`` unchanged: underscores become spaces and English's regular
    plural rules apply to the last word.
    """
    words = unit.replace("_", " ")
    if words.endswith("s"):
        return words
    if words.endswith(("x", "ch", "sh", "z")):
        return words + "es"
    if len(words) > 1 and words[-1] == "y" and words[-2] not in "aeiou":
        return words[:-1] + "ies"
    return words + "s"


def _relabel(e: Estimate, suffix: str) -> Estimate:
    if math.isnan(e.value):
        return e
    return Estimate(e.value, e.lo, e.hi, f"{e.method} {suffix}", e.level, e.n)


def _bca(table, statistic, units, unit, value, reps, alpha) -> tuple[float, float]:
    """BCa ends from the replicates and a leave-one-unit-out jackknife."""
    from scipy import stats

    prop = np.mean(reps < value) + 0.5 * np.mean(reps == value)
    if not 0 < prop < 1:
        return math.nan, math.nan
    z0 = stats.norm.ppf(prop)
    jack = []
    for key, members in units.items():
        for k in members:
            rest = [r for kk, rr in units.items() for kid, rs in rr.items()
                    if not (kk == key and kid == k) for r in rs]
            jack.append(float(statistic(Table._of(rest))))
    jack = np.asarray(jack)
    jack = jack[np.isfinite(jack)]
    if jack.size < 2:
        return math.nan, math.nan
    d = jack.mean() - jack
    denom = 6.0 * np.sum(d**2) ** 1.5
    a = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    out = []
    for q in (alpha / 2, 1 - alpha / 2):
        zq = stats.norm.ppf(q)
        adj = stats.norm.cdf(z0 + (z0 + zq) / (1 - a * (z0 + zq)))
        out.append(float(np.percentile(reps, 100 * adj)))
    return out[0], out[1]
