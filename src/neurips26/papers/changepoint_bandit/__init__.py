"""Adaptive localisation of several change points under noisy queries (NeurIPS 2026).

See :mod:`.localize` for the method and its deviations from the paper.
"""

from functools import partial

from .baselines import mcpi_track_and_stop, offline_change_points, uniform_ruptures
from .bounds import (
    ConfidenceBounds,
    certified_different,
    confidence_bounds,
    confidence_radius,
    min_samples_to_separate,
    paired_certified_different,
)
from .complexity import Complexity, reference_complexity
from .environment import (
    LAYOUTS,
    BudgetExhaustedError,
    CallableOracle,
    QueryEnvironment,
    QueryOracle,
    StepFunction,
    as_environment,
    make_step_function,
)
from .localize import (
    BinarySearchResult,
    ChangePointLocalizer,
    LocalizationResult,
    localize_change_points,
    localize_in_cells,
    noisy_binary_search,
    num_halvings,
)

#: The procedures compared in the reproduction, by name.
METHODS = {
    "ours": localize_change_points,
    "uniform_ruptures": uniform_ruptures,
    "mcpi": mcpi_track_and_stop,
    # MCPI's sampling with the certified stop: the same guarantee as ours (equal confidence)
    "mcpi_certified": partial(mcpi_track_and_stop, stopping="certified"),
}

__all__ = [
    "LAYOUTS",
    "METHODS",
    "BinarySearchResult",
    "BudgetExhaustedError",
    "CallableOracle",
    "ChangePointLocalizer",
    "Complexity",
    "ConfidenceBounds",
    "LocalizationResult",
    "QueryEnvironment",
    "QueryOracle",
    "StepFunction",
    "as_environment",
    "certified_different",
    "confidence_bounds",
    "confidence_radius",
    "localize_change_points",
    "localize_in_cells",
    "make_step_function",
    "mcpi_track_and_stop",
    "min_samples_to_separate",
    "noisy_binary_search",
    "num_halvings",
    "offline_change_points",
    "paired_certified_different",
    "reference_complexity",
    "uniform_ruptures",
]
