"""Small models shared by the deep-learning papers (torch is imported here)."""

from neurips26.common.models.gpt import GPT, GPTConfig, RMSNorm
from neurips26.common.models.small import MLPClassifier, SmallCNN

__all__ = ["GPT", "GPTConfig", "MLPClassifier", "RMSNorm", "SmallCNN"]
