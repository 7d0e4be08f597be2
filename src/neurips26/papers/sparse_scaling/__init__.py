"""Asymmetric scaling laws from sparse features (Sous & Winer, arXiv 2605.23591), runnable.

Inputs whose coordinates are rarely active (``p_i = p0 i^-(1+alpha)``) leave many
coordinates unseen in training; their teacher weight is lost whatever the student does.
This package gives the sparse data model and its dense control with the same covariance,
the min-norm random-feature student (linear or ReLU) with its exact population loss, grids
of the loss over parameters and data, exponent fits with bootstrap intervals, the
double-descent peak, the compute-optimal frontier, the divergence probability of
fixed-step gradient descent, and the predicted quantities (unseen mass and its power law,
seen coordinates, the parameter-limited deterministic equivalent, the exponents).
"""

from .analysis import (
    ExponentFit,
    Frontier,
    PeakResult,
    compute_optimal_frontier,
    fit_power_law,
    interpolation_peak,
)
from .model import (
    ACTIVATIONS,
    RandomFeatureMap,
    SparseFeatureModel,
    activation_probs,
    population_loss,
    random_features,
    sample_inputs,
    sample_teacher,
)
from .simulate import (
    FitResult,
    ScalingGrid,
    fit_random_features,
    infinite_data_loss,
    min_norm_readout,
    scaling_grid,
    unseen_mass_curve,
)
from .stability import (
    GDResult,
    InstabilityCurve,
    gd_instability_probability,
    gradient_descent,
    instability_curve,
)
from .theory import (
    ExponentPrediction,
    expected_seen_coords,
    expected_unseen_mass,
    param_limited_loss,
    predicted_exponents,
    unseen_mass_asymptote,
)

__all__ = [
    "ACTIVATIONS",
    "ExponentFit",
    "ExponentPrediction",
    "FitResult",
    "Frontier",
    "GDResult",
    "InstabilityCurve",
    "PeakResult",
    "RandomFeatureMap",
    "ScalingGrid",
    "SparseFeatureModel",
    "activation_probs",
    "compute_optimal_frontier",
    "expected_seen_coords",
    "expected_unseen_mass",
    "fit_power_law",
    "fit_random_features",
    "gd_instability_probability",
    "gradient_descent",
    "infinite_data_loss",
    "instability_curve",
    "interpolation_peak",
    "min_norm_readout",
    "param_limited_loss",
    "population_loss",
    "predicted_exponents",
    "random_features",
    "sample_inputs",
    "sample_teacher",
    "scaling_grid",
    "unseen_mass_asymptote",
    "unseen_mass_curve",
]
