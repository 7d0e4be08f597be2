"""State-prediction separation: separate state and prediction streams in a Transformer."""

from .flops import FlopCount, flop_ratio, forward_flops
from .gradients import GradientSources, gradient_sources
from .sps import KVCache, SPSTransformer, separation_mask

__all__ = [
    "FlopCount",
    "GradientSources",
    "KVCache",
    "SPSTransformer",
    "flop_ratio",
    "forward_flops",
    "gradient_sources",
    "separation_mask",
]
