"""State-prediction separation: separate state and prediction streams in a Transformer."""

from .flops import FlopCount, flop_ratio, forward_flops
from .sps import KVCache, SPSTransformer, separation_mask

__all__ = [
    "FlopCount",
    "KVCache",
    "SPSTransformer",
    "flop_ratio",
    "forward_flops",
    "separation_mask",
]
