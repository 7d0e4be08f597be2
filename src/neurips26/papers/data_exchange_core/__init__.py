"""Core-stable data exchange between competing predictors (NeurIPS 2026, seed 004 para 4).

See :mod:`.core` for the method, the theorem's construction and the deviations from the
paper; :mod:`.market` for the model; :mod:`.curves` for learning curves from real data.
"""

from .core import (
    METHODS,
    CoreCheck,
    CoreConstruction,
    CoreSearch,
    DataExchangeGame,
    Deviation,
    DynamicResult,
    apply_deviation,
    best_deviation,
    constructive_core,
    core_violation,
    exchange_dynamic,
    find_core_exchange,
    pooling_violation,
    set_partitions,
)
from .curves import DATASETS, PowerLawCurve, dataset_curve, fit_learning_curve, fit_power_law
from .market import (
    DEMANDS,
    MAX_FIRMS,
    Market,
    check_alpha,
    coalition_value,
    coalitions,
    effective_data,
    market_shares,
    sharing_partition,
    utilities,
)

__all__ = [
    "DATASETS",
    "DEMANDS",
    "MAX_FIRMS",
    "METHODS",
    "CoreCheck",
    "CoreConstruction",
    "CoreSearch",
    "DataExchangeGame",
    "Deviation",
    "DynamicResult",
    "Market",
    "PowerLawCurve",
    "apply_deviation",
    "best_deviation",
    "check_alpha",
    "coalition_value",
    "coalitions",
    "constructive_core",
    "core_violation",
    "dataset_curve",
    "effective_data",
    "exchange_dynamic",
    "find_core_exchange",
    "fit_learning_curve",
    "fit_power_law",
    "market_shares",
    "pooling_violation",
    "set_partitions",
    "sharing_partition",
    "utilities",
]
