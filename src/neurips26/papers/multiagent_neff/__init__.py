"""Effective team size of multi-agent LLM inference (Bertalanic and Fortuna, arXiv 2606.02646).

Counting agents conflates cost with independent evidence; the paper measures a team by its
effective size ``N_eff`` and finds ``R(N) = N_eff / N = 1 / (1 + c (N - 1) N^-beta)``.
This package gives the estimators of ``N_eff`` (answer diversity, correctness redundancy)
on plain answer logs, the law's fit with bootstrap uncertainty and regime classification,
the small-pilot extrapolation, and a stochastic multi-agent simulator that stands in for
LLM teams (per-family answer priors, re-evaluation, debate as a Bayesian log-linear
update on peers' answers, a content-free noise placebo, heterogeneous teams).
"""

from .estimators import (
    answer_neff,
    answer_neff_per_question,
    correctness_neff,
    hill_numbers,
    mean_pairwise_correlation,
)
from .law import (
    REGIMES,
    NeffFit,
    NeffFitWarning,
    Prediction,
    classify_regime,
    fit_neff_law,
    kish_neff,
    neff_ratio,
    percentile_interval,
    predict_from_pilot,
)
from .scaling import (
    LEVELS,
    EffectiveTeamSize,
    ScalingCurve,
    logs_from_table,
    neff_curve,
    scaling_curve,
    simulate_scaling,
)
from .simulator import CONDITIONS, Task, TeamRun, debate_update, make_task, simulate_team

__all__ = [
    "CONDITIONS",
    "LEVELS",
    "REGIMES",
    "EffectiveTeamSize",
    "NeffFit",
    "NeffFitWarning",
    "Prediction",
    "ScalingCurve",
    "Task",
    "TeamRun",
    "answer_neff",
    "answer_neff_per_question",
    "classify_regime",
    "correctness_neff",
    "debate_update",
    "fit_neff_law",
    "hill_numbers",
    "kish_neff",
    "logs_from_table",
    "make_task",
    "mean_pairwise_correlation",
    "neff_curve",
    "neff_ratio",
    "percentile_interval",
    "predict_from_pilot",
    "scaling_curve",
    "simulate_scaling",
    "simulate_team",
]
