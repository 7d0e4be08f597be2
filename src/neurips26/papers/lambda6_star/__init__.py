"""λ6★: benchmark reliability as a variance-component SNR, with a K >> N proxy for λ6.

See :mod:`neurips26.papers.lambda6_star.reliability` for the method and its deviations
from the paper, and :mod:`neurips26.papers.lambda6_star.data` for the offline benchmarks.
"""

from .data import (
    IRTSimulation,
    ZooBenchmark,
    benchbench_data_dir,
    digits_zoo,
    load_benchbench,
    resample_runs,
    simulate_irt,
)
from .reliability import (
    CohortResult,
    IllPosedWarning,
    Lambda6Result,
    ReliabilityAnalyzer,
    SelectionResult,
    SplitHalfResult,
    VarianceComponents,
    cohort_reliability,
    expected_kendall_tau,
    g_coefficient,
    guttman_lambda6,
    item_rest_correlation,
    lambda6_star,
    lambda6_star_loo,
    ranking_tau,
    select_items,
    shrinkage_intensity,
    signal_to_noise,
    spearman_brown,
    split_half_tau,
    variance_components,
)

__all__ = [
    "CohortResult",
    "IRTSimulation",
    "IllPosedWarning",
    "Lambda6Result",
    "ReliabilityAnalyzer",
    "SelectionResult",
    "SplitHalfResult",
    "VarianceComponents",
    "ZooBenchmark",
    "benchbench_data_dir",
    "cohort_reliability",
    "digits_zoo",
    "expected_kendall_tau",
    "g_coefficient",
    "guttman_lambda6",
    "item_rest_correlation",
    "lambda6_star",
    "lambda6_star_loo",
    "load_benchbench",
    "ranking_tau",
    "resample_runs",
    "select_items",
    "shrinkage_intensity",
    "signal_to_noise",
    "simulate_irt",
    "spearman_brown",
    "split_half_tau",
    "variance_components",
]
