"""Small models shared by the deep-learning papers (torch is imported here)."""

from neurips26.common.models.gpt import GPT, GPTConfig, RMSNorm
from neurips26.common.models.small import MLPClassifier, SmallCNN
from neurips26.common.models.vision import (
    EFFICIENTNET_LITE0_DIM,
    efficientnet_features,
    efficientnet_preprocess,
    load_efficientnet_lite0,
)

__all__ = [
    "EFFICIENTNET_LITE0_DIM",
    "GPT",
    "GPTConfig",
    "MLPClassifier",
    "RMSNorm",
    "SmallCNN",
    "efficientnet_features",
    "efficientnet_preprocess",
    "load_efficientnet_lite0",
]
