"""delta-Mem: an 8x8 delta-rule memory state feeding low-rank corrections into a frozen LM.

Each wrapped self-attention layer of a frozen causal LM keeps an ``r x r`` state written
token by token with the gated delta rule and read before it is written; the read yields
rank-``r`` corrections of the q, k, v projections and of the attention output. Only the
memory's parameters are trained; with its zero-initialised up-projections the wrapped model
is the backbone exactly. The state persists across windows, so facts from earlier episodes
can be recalled without extending the context.
"""

from .episodes import (
    DeltaMemReader,
    EpisodeRunner,
    FrozenReader,
    InContextReader,
    LoRAReader,
    MemoryEvalResult,
    MemoryTokensReader,
    Reader,
    RetrievalReader,
    candidate_ids,
    encoded_ids,
    evaluate_episodes,
    fit_reader,
    lora_rank_for,
)
from .memory import (
    DeltaMemAttention,
    DeltaMemConfig,
    DeltaMemory,
    attach_delta_mem,
    delta_mem_modules,
    delta_mem_parameters,
    delta_rule_scan,
    detach_delta_mem,
    detach_delta_mem_state,
    num_memory_parameters,
    reset_delta_mem,
    state_floats,
    write_mask,
)
from .tasks import (
    FAMILIES,
    Dialogue,
    WordTokenizer,
    all_texts,
    lexical_retrieve,
    make_dialogues,
)

__all__ = [
    "FAMILIES",
    "DeltaMemAttention",
    "DeltaMemConfig",
    "DeltaMemReader",
    "DeltaMemory",
    "Dialogue",
    "EpisodeRunner",
    "FrozenReader",
    "InContextReader",
    "LoRAReader",
    "MemoryEvalResult",
    "MemoryTokensReader",
    "Reader",
    "RetrievalReader",
    "WordTokenizer",
    "all_texts",
    "attach_delta_mem",
    "candidate_ids",
    "delta_mem_modules",
    "delta_mem_parameters",
    "delta_rule_scan",
    "detach_delta_mem",
    "detach_delta_mem_state",
    "encoded_ids",
    "evaluate_episodes",
    "fit_reader",
    "lexical_retrieve",
    "lora_rank_for",
    "make_dialogues",
    "num_memory_parameters",
    "reset_delta_mem",
    "state_floats",
    "write_mask",
]
