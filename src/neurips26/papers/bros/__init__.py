"""BROS: single-loop stochastic bilevel optimisation in random subspaces.

Exact single-loop methods (SOBA, MA-SOBA) keep full-size lower-level and auxiliary
variables and take full Hessian-vector products every iteration. BROS (Zhang, Kong,
Zhang & Yuan, arXiv 2605.10288) takes the lower-level step and the auxiliary (linear
system) step only inside a low-dimensional random subspace redrawn every iteration, so
its gradient buffers and Hessian actions are ``r x n`` per ``m x n`` weight. A second,
independent Rademacher probe makes the subspace Hessian action unbiased:
``E[S S^T H T T^T] = H`` where the single-probe ``S S^T H S S^T`` is biased. The method
keeps MA-SOBA's ``O(eps^-2)`` sample complexity.

The API takes the user's own losses on torch tensors: ``f(x, y, batch)`` and
``g(x, y, batch)`` with ``y`` a dict of tensors (e.g. a module's parameters used through
:func:`torch.func.functional_call`). The estimators (``BROS``, ``MASOBA``, ``SOBA``)
run the whole loop in ``fit``; the steppers of :mod:`.optim` (``BROSOptimizer`` ...) take
one iteration per ``step(batch)`` inside a user's own loop, with the same update.

Deviations from the paper
-------------------------
- The bi-probe construction is our reading of "Rademacher bi-probe correction": ``S`` and
  ``T`` independent Rademacher sketches, ``S S^T H T T^T z`` by one double backward over
  the small coordinates, and ``J_xy T T^T z`` for the cross term (inferred).
- The sketch acts on the first axis of each weight (``P`` of shape ``(m, r)``,
  ``r = ceil(rank_fraction m)``); 1-D tensors (biases) stay full unless
  ``sketch_vectors=True``. ``z`` is stored full size.
- Step sizes, ``theta`` and ``rank_fraction = 1/8`` are our defaults (the abstract gives
  none).
- Memory is the peak resident memory of a fresh CPU process per method (and, as a
  diagnostic, counted bytes: state + peak saved tensors + gradient buffers), not GPU
  peak memory.
- The subspace coordinates enter the user's losses through the low-rank
  reparametrisation ``W + P U`` (:class:`~.bilevel.SubspaceParam`): linear maps
  (``F.linear``, ``@``) are evaluated factor by factor so the full gradient of a sketched
  weight is never formed; any other operation sees the dense sum (same iterate, no
  saving).
"""

from .bilevel import (
    BilevelProblem,
    SubspaceParam,
    cross_term,
    draw_subspace,
    hessian_action,
    rademacher_sketch,
    single_probe_expectation,
    squared_norm,
)
from .estimators import BROS, MASOBA, SOBA, FirstOrderBilevel
from .memory import MemoryReport, PeakRSS, measure_step_memory, peak_rss
from .optim import BilevelOptimizer, BROSOptimizer, FirstOrderBilevelOptimizer, MASOBAOptimizer
from .steps import (
    BilevelState,
    StepStats,
    bros_step,
    first_order_step,
    init_state,
    ma_soba_step,
)

__all__ = [
    "BROS",
    "MASOBA",
    "SOBA",
    "BROSOptimizer",
    "BilevelOptimizer",
    "BilevelProblem",
    "BilevelState",
    "FirstOrderBilevel",
    "FirstOrderBilevelOptimizer",
    "MASOBAOptimizer",
    "MemoryReport",
    "PeakRSS",
    "StepStats",
    "SubspaceParam",
    "bros_step",
    "cross_term",
    "draw_subspace",
    "first_order_step",
    "hessian_action",
    "init_state",
    "ma_soba_step",
    "measure_step_memory",
    "peak_rss",
    "rademacher_sketch",
    "single_probe_expectation",
    "squared_norm",
]
