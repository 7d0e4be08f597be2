"""Networks of performative learners: the reflexivity matrix Γ and the threshold ρ(Γ) = 1.

When deployed models shift the data they are retrained on, and several learners shift each
other's data, repeated retraining is stable when the spectral radius of the reflexivity
matrix ``Γ_ij = ε_ij β_i / γ_i`` is below one (geometric convergence to the unique
performatively stable point, bounded cumulative excess loss); above one there are
instances on which every local learner pays excess loss linear in the horizon. This
package builds Γ and its Perron certificate, exactly solvable quadratic games on networkx
influence graphs, repeated retraining with three local learners (exact or finite-sample),
and the closed-form noise floor of finite-sample retraining.
"""

from .game import GRAPHS, QuadraticPerformativeGame, make_game, project_to_ball
from .reflexivity import (
    Threshold,
    reflexivity_matrix,
    scalar_constant,
    spectral_radius,
    spectral_threshold,
    weighted_max_norm,
)
from .retraining import (
    LEARNERS,
    LinearFit,
    MultiAgentRetraining,
    RetrainingTrace,
    fitted_rate,
    linear_growth,
    perron_start,
    repeated_retraining,
    stationary_excess,
)

__all__ = [
    "GRAPHS",
    "LEARNERS",
    "LinearFit",
    "MultiAgentRetraining",
    "QuadraticPerformativeGame",
    "RetrainingTrace",
    "Threshold",
    "fitted_rate",
    "linear_growth",
    "make_game",
    "perron_start",
    "project_to_ball",
    "reflexivity_matrix",
    "repeated_retraining",
    "scalar_constant",
    "spectral_radius",
    "spectral_threshold",
    "stationary_excess",
    "weighted_max_norm",
]
