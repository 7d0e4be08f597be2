"""Discriminator-guided RL (DRL) for flow-matching models.

A discriminator trained on frozen pretrained features to tell data from a flow model's
own samples supplies its logit, an estimate of ``log p_data / p_model``, as the reward of
KL-regularised RL; with ``beta = 1`` the regularised optimum is the data distribution.
Here: a rectified-flow model and sampler (:mod:`.flow`), the discriminator and the
Frechet / precision-recall metrics (:mod:`.discriminator`), DRL's reward-weighted and
policy-gradient rounds (:mod:`.rl`), frozen representations (:mod:`.features`) and 2-D
mixtures with exact densities (:mod:`.mixtures`).
"""

from neurips26.common.stats import frechet_distance

from .discriminator import (
    COLLAPSE_ACCURACY,
    Discriminator,
    PrecisionRecall,
    precision_recall,
    train_discriminator,
)
from .features import ClassifierFeatures, EfficientNetFeatures
from .flow import (
    Samples,
    VelocityAdapter,
    VelocityMLP,
    conditional_path,
    exact_log_likelihood,
    flow_matching_loss,
    integrate,
    sample,
    train_flow_matching,
)
from .mixtures import GaussianMixture, eight_gaussians, two_moons
from .rl import (
    ALGORITHMS,
    DiscriminatorGuidedRL,
    DRLResult,
    RoundResult,
    TiltWeights,
    discriminator_rl,
    drl_round,
    tilt_weights,
)

__all__ = [
    "ALGORITHMS",
    "COLLAPSE_ACCURACY",
    "ClassifierFeatures",
    "DRLResult",
    "Discriminator",
    "DiscriminatorGuidedRL",
    "EfficientNetFeatures",
    "GaussianMixture",
    "PrecisionRecall",
    "RoundResult",
    "Samples",
    "TiltWeights",
    "VelocityAdapter",
    "VelocityMLP",
    "conditional_path",
    "discriminator_rl",
    "drl_round",
    "eight_gaussians",
    "exact_log_likelihood",
    "flow_matching_loss",
    "frechet_distance",
    "integrate",
    "precision_recall",
    "sample",
    "tilt_weights",
    "train_discriminator",
    "train_flow_matching",
    "two_moons",
]
