"""judge_rasch: validating LLM judges as calibrated instruments against a Rasch-audited ruler.

Stage 1 fits a many-facet Rasch rating scale model to the human ratings and audits it as a
ruler (:func:`fit_mfrm`, :func:`audit_ruler`); Stage 2 links each judge to it as a rater with
its own thresholds (:func:`calibrate_judge`); Stage 3 checks out-of-sample system-level
fidelity (:func:`judge_fidelity`); :func:`decide` selects, warns or refuses.
:class:`JudgeValidator` runs all of it on long-format tables.
"""

from .mfrm import (
    MFRMFit,
    MFRMGradient,
    RatingData,
    category_probabilities,
    expected_score,
    fit_mfrm,
    mfrm_gradient,
    mfrm_loglik,
    prepare_ratings,
    residual_fit,
)
from .simulate import JUDGE_KINDS, SimulatedBenchmark, simulate_benchmark, simulate_judge
from .validation import (
    CorrelationBaseline,
    Decision,
    FidelityReport,
    HumanBootstrap,
    JudgeCalibration,
    JudgeValidator,
    RulerAudit,
    audit_ruler,
    bootstrap_human_measures,
    calibrate_judge,
    correlation_baseline,
    decide,
    emd_categories,
    holm_reject,
    judge_fidelity,
    nsmf,
    resolvable_pairs,
)

__all__ = [
    "JUDGE_KINDS",
    "CorrelationBaseline",
    "Decision",
    "FidelityReport",
    "HumanBootstrap",
    "JudgeCalibration",
    "JudgeValidator",
    "MFRMFit",
    "MFRMGradient",
    "RatingData",
    "RulerAudit",
    "SimulatedBenchmark",
    "audit_ruler",
    "bootstrap_human_measures",
    "calibrate_judge",
    "category_probabilities",
    "correlation_baseline",
    "decide",
    "emd_categories",
    "expected_score",
    "fit_mfrm",
    "holm_reject",
    "judge_fidelity",
    "mfrm_gradient",
    "mfrm_loglik",
    "nsmf",
    "prepare_ratings",
    "residual_fit",
    "resolvable_pairs",
    "simulate_benchmark",
    "simulate_judge",
]
