"""Condorcet-winner identification with the full gap matrix (arXiv 2603.15189).

See :mod:`.identify` for the method and its deviations from the paper.
"""

from .bounds import (
    ConfidenceBounds,
    bernoulli_kl,
    certifies,
    confidence_bounds,
    min_certifying_samples,
    threshold,
)
from .complexity import Complexity, instance_complexity
from .environment import (
    INSTANCE_KINDS,
    BudgetExhaustedError,
    CallableEnvironment,
    DuelEnvironment,
    DuelingEnvironment,
    as_environment,
    check_preference_matrix,
    condorcet_winner,
    make_instance,
)
from .identify import (
    METHODS,
    CondorcetIdentifier,
    Elimination,
    IdentificationResult,
    dkwt,
    identify_condorcet,
    round_robin_elimination,
    rucb,
    winner_gap_elimination,
)

__all__ = [
    "INSTANCE_KINDS",
    "METHODS",
    "BudgetExhaustedError",
    "CallableEnvironment",
    "Complexity",
    "CondorcetIdentifier",
    "ConfidenceBounds",
    "DuelEnvironment",
    "DuelingEnvironment",
    "Elimination",
    "IdentificationResult",
    "as_environment",
    "bernoulli_kl",
    "certifies",
    "check_preference_matrix",
    "condorcet_winner",
    "confidence_bounds",
    "dkwt",
    "identify_condorcet",
    "instance_complexity",
    "make_instance",
    "min_certifying_samples",
    "round_robin_elimination",
    "rucb",
    "threshold",
    "winner_gap_elimination",
]
