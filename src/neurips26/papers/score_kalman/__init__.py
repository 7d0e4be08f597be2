"""Score Kalman Filter (arXiv 2605.16644): moment filtering by score matching and Stein."""

from .baselines import ekf, enkf, kalman_filter, particle_filter, ukf
from .basis import (
    Exponent,
    Moments,
    MonomialBasis,
    full_basis,
    gaussian_moments,
    monomials_up_to,
    oscillator_basis,
    sample_moments,
)
from .maxent import maxent_fit
from .models import (
    Benchmark,
    PolyMap,
    PolySDE,
    ProductQuarticBelief,
    coupled_duffing,
    linear_gaussian,
)
from .skf import (
    ClosureError,
    FilterResult,
    NonIntegrableBeliefError,
    ScoreFit,
    ScoreKalmanFilter,
    UpdateResult,
    predict,
    score_matching_fit,
    score_matching_moments,
    stein_closure,
    update,
)
from .stein_moments import stein_moments

__all__ = [
    "Benchmark",
    "ClosureError",
    "Exponent",
    "FilterResult",
    "Moments",
    "MonomialBasis",
    "NonIntegrableBeliefError",
    "PolyMap",
    "PolySDE",
    "ProductQuarticBelief",
    "ScoreFit",
    "ScoreKalmanFilter",
    "UpdateResult",
    "coupled_duffing",
    "ekf",
    "enkf",
    "full_basis",
    "gaussian_moments",
    "kalman_filter",
    "linear_gaussian",
    "maxent_fit",
    "monomials_up_to",
    "oscillator_basis",
    "particle_filter",
    "predict",
    "sample_moments",
    "score_matching_fit",
    "score_matching_moments",
    "stein_closure",
    "stein_moments",
    "ukf",
    "update",
]
