"""The shared experiment layer: estimates with their intervals, tables of measured units,
and the driver every paper's reproduction runs on.

* :class:`Estimate`: a measured quantity with ``[lo, hi]``, the interval's method, level
  and the number of units ``n``; made by :func:`t_interval`, :func:`log_t_interval`,
  :func:`ratio_t_interval`, :func:`bootstrap_interval`, :func:`binomial_interval`,
  :meth:`Estimate.exact` or :meth:`Estimate.missing`.
* :class:`Table`: frozen rows, one per measured unit, with ``where``, ``mean_over``,
  ``paired_diff``, ``paired_ratio`` and a grouped, stratified ``bootstrap``.
* :class:`Experiment`: ``setup``, ``grid``, ``measure``, ``summarize``; the driver seeds
  each unit, shows progress, times units, carries NaN reasons and intervals to the
  :class:`~neurips26.common.experiment.RunResult`. :class:`Context` carries the device.

See CONTRIBUTING.md, "The experiment layer", for a complete example.
"""

from .driver import DEVICES, Context, Experiment, Unit, flatten_summary, unit_seed
from .estimate import (
    Estimate,
    binomial_interval,
    bootstrap_interval,
    log_t_interval,
    ratio_t_interval,
    t_interval,
)
from .table import Table

__all__ = [
    "DEVICES",
    "Context",
    "Estimate",
    "Experiment",
    "Table",
    "Unit",
    "binomial_interval",
    "bootstrap_interval",
    "flatten_summary",
    "log_t_interval",
    "ratio_t_interval",
    "t_interval",
    "unit_seed",
]
