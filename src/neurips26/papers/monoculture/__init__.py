"""monoculture: excess agreement between models, measured against explicit null models.

Public API: null models (:func:`fit_null`), excess agreement with bootstrap uncertainty
(:func:`excess_agreement`), residual tetrachoric correlation
(:func:`residual_correlation`), population sensitivity (:func:`population_sensitivity`),
an estimator-style wrapper (:class:`MonocultureAudit`), a simulator of IRT populations
with planted correlation (:func:`simulate_population`) and a helper that scores a zoo of
scikit-learn classifiers item by item (:func:`correctness_matrix`).
"""

from .agreement import (
    STATISTICS,
    ExcessAgreement,
    MonocultureAudit,
    PopulationResult,
    bivariate_normal_cdf,
    excess_agreement,
    expected_agreement,
    observed_agreement,
    population_sensitivity,
    residual_correlation,
)
from .nulls import KINDS, NullFit, as_correctness_matrix, fit_null
from .simulate import SimulatedPopulation, simulate_population
from .zoo import correctness_matrix

__all__ = [
    "KINDS",
    "STATISTICS",
    "ExcessAgreement",
    "MonocultureAudit",
    "NullFit",
    "PopulationResult",
    "SimulatedPopulation",
    "as_correctness_matrix",
    "bivariate_normal_cdf",
    "correctness_matrix",
    "excess_agreement",
    "expected_agreement",
    "fit_null",
    "observed_agreement",
    "population_sensitivity",
    "residual_correlation",
    "simulate_population",
]
