"""Attribute-efficient learning of s-sparse halfspaces under malicious noise (arXiv 2505.21430).

See :mod:`.estimator` for the method and its deviations from the paper, :mod:`.outliers` for
the filter and soft outlier removal, :mod:`.hinge` for the constrained hinge program and
:mod:`.data` for the synthetic malicious-noise oracle.
"""

from .baselines import l1_logistic, linear_svc
from .data import ADVERSARIES, HalfspaceData, clean_error, make_margin_halfspace
from .estimator import (
    AUTO_SDP_MAX_DIM,
    MIN_BAND_SAMPLES,
    HalfspaceFit,
    LocalizationRound,
    RobustDenseHalfspace,
    RobustSparseHalfspace,
    fit_robust_halfspace,
    hinge_weight_on,
)
from .hinge import hinge_objective, maximize_linear_l1_l2, project_l1_l2, sparse_hinge
from .outliers import (
    OUTLIER_METHODS,
    SDP_MAX_DIM,
    InfeasibleWeightsError,
    OutlierWeights,
    SparseVariance,
    filter_threshold,
    linf_filter,
    project_capped_simplex,
    soft_outlier_weights,
    sparse_pca_sdp,
    sparse_variance_power,
    variance_cap,
)

__all__ = [
    "ADVERSARIES",
    "AUTO_SDP_MAX_DIM",
    "MIN_BAND_SAMPLES",
    "OUTLIER_METHODS",
    "SDP_MAX_DIM",
    "HalfspaceData",
    "HalfspaceFit",
    "InfeasibleWeightsError",
    "LocalizationRound",
    "OutlierWeights",
    "RobustDenseHalfspace",
    "RobustSparseHalfspace",
    "SparseVariance",
    "clean_error",
    "filter_threshold",
    "fit_robust_halfspace",
    "hinge_objective",
    "hinge_weight_on",
    "l1_logistic",
    "linear_svc",
    "linf_filter",
    "make_margin_halfspace",
    "maximize_linear_l1_l2",
    "project_capped_simplex",
    "project_l1_l2",
    "soft_outlier_weights",
    "sparse_hinge",
    "sparse_pca_sdp",
    "sparse_variance_power",
    "variance_cap",
]
