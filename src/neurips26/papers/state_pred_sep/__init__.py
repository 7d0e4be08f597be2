"""State-prediction separation: separate state and prediction streams in a Transformer.

The public API: :class:`SPSTransformer` (the separated model and the pause control, built
from the common GPT's modules) and its :func:`separation_mask`; :func:`forward_flops` (the
analytic FLOP count of the standard, separated and pause models); :func:`gradient_sources`
(where the state stream's gradient comes from); :func:`train_lm` and :func:`val_nll`.
"""

from .flops import FlopCount, flop_ratio, forward_flops
from .gradients import GradientSources, gradient_sources
from .sps import KVCache, SPSTransformer, separation_mask
from .training import LMTrainResult, model_mode, train_lm, val_nll

__all__ = [
    "FlopCount",
    "GradientSources",
    "KVCache",
    "LMTrainResult",
    "SPSTransformer",
    "flop_ratio",
    "forward_flops",
    "gradient_sources",
    "model_mode",
    "separation_mask",
    "train_lm",
    "val_nll",
]
