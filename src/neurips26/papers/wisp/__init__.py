"""wisp: difference-informed pruning of LLM weights (Wisp, Wisp+, Whisper).

Public API: the layer-wise criteria (:mod:`.pruning`), SparseGPT's OBS sweep and the
one-layer entry point (:mod:`.obs`), and pruning a whole causal LM with the sequential
protocol (:mod:`.model`). See ``README.md`` for an example.
"""

from .model import (
    ATTENTION,
    MLP,
    PROJECTIONS,
    BlockInputs,
    LayerReport,
    PrunedModelReport,
    block_linears,
    block_perplexity,
    capture_block_inputs,
    prune_model,
)
from .obs import PruneResult, prune_linear, sparsegpt_prune
from .pruning import (
    DIFFERENCE_METHODS,
    METHODS,
    PAIRINGS,
    Pairs,
    as_tensor,
    input_hessian,
    magnitude_scores,
    make_pairs,
    mask_from_scores,
    parse_sparsity,
    sparsity_label,
    wanda_scores,
    whisper_hessian,
    wisp_act_scores,
    wisp_plus_scores,
    wisp_scores,
)

__all__ = [
    "ATTENTION",
    "DIFFERENCE_METHODS",
    "METHODS",
    "MLP",
    "PAIRINGS",
    "PROJECTIONS",
    "BlockInputs",
    "LayerReport",
    "Pairs",
    "PruneResult",
    "PrunedModelReport",
    "as_tensor",
    "block_linears",
    "block_perplexity",
    "capture_block_inputs",
    "input_hessian",
    "magnitude_scores",
    "make_pairs",
    "mask_from_scores",
    "parse_sparsity",
    "prune_linear",
    "prune_model",
    "sparsegpt_prune",
    "sparsity_label",
    "wanda_scores",
    "whisper_hessian",
    "wisp_act_scores",
    "wisp_plus_scores",
    "wisp_scores",
]
