"""The shared experiment driver: :class:`Experiment`, :class:`Context` and :class:`Unit`.

A paper's reproduction subclasses :class:`Experiment` and fills in four steps:

``setup(config, ctx) -> state``
    Build what every unit shares (data, a trained model, a simulator); ``None`` by
    default.
``grid(config) -> iterable of dict``
    The units to measure, each a dict of the columns that name it
    (``{"seed": 2, "method": "ours", "n": 8}``).
``measure(unit, state, ctx) -> dict or list of dict``
    Measure one unit; the columns returned join the unit's own in the row (a list gives
    several rows, e.g. one per method run on the same draw).
``summarize(table, config, ctx) -> dict[str, Estimate | float | int | bool]``
    Turn the :class:`~neurips26.experiment.Table` of every row into the metrics claims
    are judged on; a noisy metric is an :class:`~neurips26.experiment.Estimate`.

and optionally ``figures(table, summary, config) -> dict[str, bytes]`` and
``tables(table, summary, config) -> dict[str, list[dict]]``. The driver owns what every
paper used to write again: the per-unit seed (:attr:`Unit.seed`, drawn from the run's
seed and the unit's index, independent of the order units run in), progress (one phase
per step with its count), timing (each unit's seconds, a volatile column), NaN reasons
(an ``Estimate.missing`` becomes the metric's reason), the volatile marks (the class's
``VOLATILE`` names, patterns allowed) and the conversion into the
:class:`~neurips26.common.experiment.RunResult` that the runner, store and report read,
with each estimate's interval (method, level and n) in ``RunResult.intervals``.

The module exposes the subclass's instance as ``EXPERIMENT`` and, for callers that
know only ``run(config)``, ``run = EXPERIMENT.run``.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from neurips26.common.experiment import RunResult
from neurips26.common.progress import phase

from .estimate import Estimate
from .table import Table

__all__ = ["DEVICES", "Context", "Experiment", "Unit", "unit_seed"]

#: The devices the runner accepts.
DEVICES = ("cpu", "cuda")


def unit_seed(run_seed: int, index: int) -> int:
    """The seed of unit ``index`` of a run seeded ``run_seed`` (numpy's SeedSequence spawn).

    Independent of how many units there are and of the order they run in.

    >>> unit_seed(0, 3) == unit_seed(0, 3) != unit_seed(1, 3)
    True
    """
    ss = np.random.SeedSequence(run_seed, spawn_key=(index,))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@dataclass(frozen=True)
class Context:
    """What the runner tells an experiment: where to compute and at which tier.

    Attributes
    ----------
    device : {"cpu", "cuda"}
        The torch device every model and tensor of the run lives on (the runner checks
        that it exists before the run starts).
    tier : str
        ``"smoke"``, ``"small"``, ``"paper"`` or ``"custom"`` (a config not from a tier).
    """

    device: str = "cpu"
    tier: str = "custom"

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device: {self.device!r} is not one of {DEVICES}")


@dataclass(frozen=True)
class Unit:
    """One measured unit: its columns, its index in the grid, and its own seed."""

    columns: Mapping[str, Any]
    index: int
    seed: int

    def __getitem__(self, key: str) -> Any:
        return self.columns[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.columns.get(key, default)

    def rng(self) -> np.random.Generator:
        """A generator seeded by :attr:`seed`."""
        return np.random.default_rng(self.seed)


class Experiment:
    """Base class of a paper's reproduction (see the module docstring).

    Class attributes
    ----------------
    Config : type
        The frozen config dataclass (with ``seed: int``).
    TIERS : dict
        ``"smoke"``, ``"small"`` and ``"paper"`` to a ``Config``.
    METRICS : tuple of str
        Every metric name :meth:`summarize` can return (``*`` for a family).
    VOLATILE : tuple of str
        Metric names (patterns allowed) that depend on the machine's clock or memory.
    CAPTIONS : dict
        Figure name to caption.
    UNIT_TABLE : str or None
        The name under which the table of every unit's row is given to the report
        (``None`` leaves it out; it is always available to :meth:`summarize`).
    """

    Config: ClassVar[type]
    TIERS: ClassVar[dict[str, Any]]
    METRICS: ClassVar[tuple[str, ...]]
    VOLATILE: ClassVar[tuple[str, ...]] = ()
    CAPTIONS: ClassVar[dict[str, str]] = {}
    UNIT_TABLE: ClassVar[str | None] = "units"

    # ------------------------------------------------------------------ to override
    def setup(self, config, ctx: Context) -> Any:
        """What every unit shares (default: nothing)."""
        return None

    def grid(self, config) -> Iterable[Mapping[str, Any]]:
        """The units to measure (default: one per ``config.seeds`` or the run's seed)."""
        seeds = getattr(config, "seeds", None) or (config.seed,)
        return [{"seed": s} for s in seeds]

    def measure(self, unit: Unit, state: Any, ctx: Context):
        """Measure one unit: a dict of columns, or a list of dicts (several rows)."""
        raise NotImplementedError

    def summarize(self, table: Table, config, ctx: Context) -> dict[str, Any]:
        """The run's metrics from every row (Estimates for noisy ones)."""
        raise NotImplementedError

    def figures(self, table: Table, summary: dict[str, Any], config) -> dict[str, bytes]:
        """Figures for the report (default: none)."""
        return {}

    def tables(self, table: Table, summary: dict[str, Any], config) -> dict[str, list[dict]]:
        """Extra tables for the report (default: none)."""
        return {}

    def notes(self, table: Table, summary: dict[str, Any], config) -> tuple[str, ...]:
        """Plain-language remarks for the report (default: none)."""
        return ()

    # ------------------------------------------------------------------ the driver
    def run(self, config, ctx: Context | None = None) -> RunResult:
        """Run every unit of ``config`` and summarise: the :class:`RunResult` of the run."""
        ctx = ctx or Context(tier=self._tier_of(config))
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a Context, got {type(ctx).__name__}")
        with phase("setup"):
            state = self.setup(config, ctx)
        units = [dict(u) for u in self.grid(config)]
        rows: list[dict[str, Any]] = []
        with phase("units", total=len(units)) as p:
            for i, cols in enumerate(units):
                unit = Unit(cols, i, unit_seed(config.seed, i))
                t0 = time.perf_counter()
                out = self.measure(unit, state, ctx)
                seconds = time.perf_counter() - t0
                got = [out] if isinstance(out, Mapping) else list(out or ())
                for row in got:
                    rows.append({**cols, **row, "unit_seconds": seconds})
                p.advance()
        table = Table(rows)
        with phase("summary"):
            summary = self.summarize(table, config, ctx)
        return self.result(table, summary, config)

    def result(self, table: Table, summary: Mapping[str, Any], config) -> RunResult:
        """The :class:`RunResult` of a summary: values, intervals, reasons, volatile marks."""
        metrics, intervals, reasons = flatten_summary(summary)
        volatile = tuple(k for k in metrics if _matches(k, self.VOLATILE))
        tables = {}
        if self.UNIT_TABLE:
            tables[self.UNIT_TABLE] = table.to_records()
        tables.update(self.tables(table, summary, config))
        figures = self.figures(table, summary, config)
        return RunResult(
            metrics=metrics,
            volatile=volatile,
            tables=tables,
            figures=figures,
            notes=tuple(self.notes(table, summary, config)),
            captions={k: v for k, v in self.CAPTIONS.items() if k in figures},
            reasons=reasons,
            intervals=intervals,
        )

    def _tier_of(self, config) -> str:
        for name, cfg in getattr(self, "TIERS", {}).items():
            if cfg == config:
                return name
        return "custom"


def flatten_summary(summary: Mapping[str, Any]):
    """Split a summary into metric values, intervals (name -> Estimate dict) and reasons.

    >>> m, i, r = flatten_summary({"a": Estimate.exact(2.0), "b": 3,
    ...                            "c": Estimate.missing("no data")})
    >>> m["a"], m["b"], math.isnan(m["c"]), r
    (2.0, 3, True, {'c': 'no data'})
    >>> i["a"]["method"]
    'exact'
    """
    metrics: dict[str, Any] = {}
    intervals: dict[str, dict] = {}
    reasons: dict[str, str] = {}
    for name, v in summary.items():
        if isinstance(v, Estimate):
            metrics[name] = v.value
            intervals[name] = v.to_dict()
            if math.isnan(v.value):
                reasons[name] = v.reason
        else:
            metrics[name] = v
    return metrics, intervals, reasons


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or ("*" in p and fnmatch.fnmatchcase(name, p)) for p in patterns)
