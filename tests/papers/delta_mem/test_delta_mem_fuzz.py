"""Bad-input property tests for delta_mem (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-type, negative and huge values,
one argument at a time: it must refuse them with a ValueError/TypeError naming the
argument, or return a result without new NaN/inf, and never hang.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from _fuzz import BAD_ARRAYS, BAD_SCALARS, Call, cases, check_bad_argument, fuzz_tests
from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.delta_mem import (
    DeltaMemAttention,
    DeltaMemConfig,
    DeltaMemory,
    DeltaMemReader,
    EpisodeRunner,
    FrozenReader,
    LoRAReader,
    MemoryTokensReader,
    WordTokenizer,
    attach_delta_mem,
    candidate_ids,
    delta_mem_parameters,
    delta_rule_scan,
    detach_delta_mem,
    evaluate_episodes,
    fit_reader,
    lexical_retrieve,
    lora_rank_for,
    make_dialogues,
    num_memory_parameters,
    reset_delta_mem,
    state_floats,
    write_mask,
)
from neurips26.papers.delta_mem.tasks import VALUES, words

A, S = BAD_ARRAYS, BAD_SCALARS
TOK = WordTokenizer()
MODEL = tiny_causal_lm(seed=0, hidden_size=16, num_layers=2, num_heads=2, num_kv_heads=1,
                       intermediate_size=32)  # fmt: skip
RUNNER = EpisodeRunner(MODEL, TOK.encode, start=1, window=32)
DIALOGUES = make_dialogues(2, "recall", num_episodes=3, num_names=4, num_values=4,
                           rng=np.random.default_rng(0))  # fmt: skip
VALS = list(VALUES[:4])
CAND = dict(zip(VALS, candidate_ids(TOK.encode, VALS), strict=True))
READER = DeltaMemReader(RUNNER, DeltaMemConfig(rank=2))
RNG = np.random.default_rng(1)

T = torch.zeros(1, 3, 2)
BAD_T = (torch.full((1, 3, 2), float("nan")), torch.zeros(3, 2), torch.zeros(1, 3, 5),
         torch.zeros(0, 3, 2), torch.zeros(1, 3, 2, dtype=torch.long))  # fmt: skip
BAD_MODELS = (None, "abc", 3, nn.Linear(2, 2))
BAD_STRS = (None, 3, np.array([1.0]), [1.0])
BAD_DIALOGUES = (None, "abc", [], [1, 2], np.array([1.0]))
FRESH = object()


def scan(**kw):
    return delta_rule_scan(**kw)


def attach(model=FRESH, **kw):
    m = tiny_causal_lm(seed=0, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1,
                       intermediate_size=16) if model is FRESH else model  # fmt: skip
    return attach_delta_mem(m, **kw)


def attention(attn=FRESH, **kw):
    a = MODEL.model.layers[0].self_attn if attn is FRESH else attn
    return DeltaMemAttention(a, **kw)


def attention_forward(hidden_states):
    m = tiny_causal_lm(seed=0, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1,
                       intermediate_size=16)  # fmt: skip
    attach_delta_mem(m)
    return _forward(m, hidden_states)


def _forward(m, hidden_states):
    wrapper = m.model.layers[0].self_attn
    pos = m.model.rotary_emb(torch.zeros(1, 3, 16), torch.arange(3)[None])
    return wrapper(hidden_states=hidden_states, position_embeddings=pos,
                   attention_mask=None)[0].detach().numpy()  # fmt: skip


def runner(**kw):
    return EpisodeRunner(**{"model": MODEL, "encode": TOK.encode, "start": 1, **kw})


def frozen_forward(dialogues):
    return FrozenReader(RUNNER)(dialogues).detach().numpy()


def delta_reader(**kw):
    return DeltaMemReader(RUNNER, **kw)(DIALOGUES).detach().numpy()


def lora_reader(**kw):
    return LoRAReader(RUNNER, **kw)(DIALOGUES).detach().numpy()


def tokens_reader(**kw):
    return MemoryTokensReader(RUNNER, **kw)(DIALOGUES).detach().numpy()


def fit(**kw):
    reader = DeltaMemReader(RUNNER, DeltaMemConfig(rank=2))
    return fit_reader(reader, **{"batches": [DIALOGUES], "max_iter": 1,
                                 "answer_ids": lambda d: CAND[d.answer], **kw})  # fmt: skip


def mask_ctx(model=FRESH, mask=None):
    m = READER.top if model is FRESH else model
    with write_mask(m, mask):
        return 0


def each_model_helper(model):
    for fn in (delta_mem_parameters, reset_delta_mem, state_floats):
        fn(model)
    return 0


def detach(model):
    return detach_delta_mem(model)


CALLS = [
    Call(scan, {"state": torch.zeros(1, 2, 2), "q": T, "k": T, "v": T, "beta": T},
         {"state": A + BAD_T[:2] + (torch.zeros(1, 2, 3),), "q": A + BAD_T, "k": A + BAD_T,
          "v": A + BAD_T, "beta": A + BAD_T, "keep": A[1:] + BAD_T,
          "mask": (*A[1:], torch.zeros(1, 4), torch.full((1, 3), 0.5))}),
    Call(DeltaMemConfig, {},
         {"rank": S, "alpha": S, "beta_bias_init": S, "heads": (None, "abc", (), ("x",),
                                                               ("q", "q"), (1,)),
          "normalize_qk": (None, "abc", 1), "state_update": (None, "abc", 3)}),
    Call(attach, {},
         {"model": BAD_MODELS, "config": ("abc", 3), "target": ("abc", 3),
          "layers": (-1, "abc", [], [1.5], [5], 10**30), "seed": S}),
    Call(DeltaMemory, {"dim": 8, "out_dims": {h: 8 for h in "qkvo"}, "config": DeltaMemConfig()},
         {"dim": S, "out_dims": (None, "abc", {}, {"q": 8}, {h: -1 for h in "qkvo"},
                                 {h: 1.5 for h in "qkvo"}),
          "config": (None, "abc")}),
    Call(attention, {"config": DeltaMemConfig()},
         {"attn": BAD_MODELS, "config": (None, "abc"), "name": (None, 3)}),
    Call(attention_forward, {"hidden_states": torch.zeros(1, 3, 16)},
         {"hidden_states": (None, "abc", torch.zeros(3, 16), torch.full((1, 3, 16), float("nan")),
                            torch.zeros(1, 3, 7))}),
    Call(num_memory_parameters, {"dim": 8, "out_dims": {h: 8 for h in "qkvo"},
                                 "config": DeltaMemConfig()},
         {"dim": S, "out_dims": (None, "abc", {}, {h: -1 for h in "qkvo"}),
          "config": (None, "abc")}),
    Call(mask_ctx, {"mask": torch.ones(2, 3)},
         {"model": BAD_MODELS, "mask": (*A, torch.ones(3), torch.full((2, 3), float("nan")),
                                        torch.full((2, 3), 0.5), {"input_ids": [[1, 2, 3]]})}),
    Call(each_model_helper, {"model": READER.top}, {"model": BAD_MODELS}),
    Call(detach, {"model": READER.top}, {"model": BAD_MODELS}),
    Call(make_dialogues, {"num": 2, "family": "recall", "rng": RNG},
         {"num": S, "family": (None, "abc", 3), "num_episodes": S, "num_names": S,
          "num_values": S, "rng": (None, 0, "abc")}),
    Call(lexical_retrieve, {"history": ["Bob likes tea."], "query": "Bob"},
         {"history": (None, "abc", [], [1, 2], np.array([1.0])), "query": BAD_STRS}),
    Call(words, {"text": "Bob likes tea."}, {"text": BAD_STRS}),
    Call(candidate_ids, {"encode": TOK.encode, "values": VALS},
         {"encode": (None, "abc"), "values": (None, "abc", [], [1, 2], ["tea", "tea"])}),
    Call(runner, {}, {"model": BAD_MODELS, "encode": (None, "abc"), "start": S,
                      "window": S, "batch_size": S}),
    Call(frozen_forward, {"dialogues": DIALOGUES}, {"dialogues": BAD_DIALOGUES}),
    Call(delta_reader, {}, {"config": ("abc", 3), "bptt": S, "seed": S}),
    Call(lora_reader, {}, {"rank": S, "alpha": S, "modules": (None, "abc", (), ("zz",), (1,)),
                           "seed": S}),
    Call(tokens_reader, {}, {"num_tokens": S, "rank": S, "bptt": S, "seed": S}),
    Call(lora_rank_for, {"num_params": 100, "runner": RUNNER},
         {"num_params": S, "runner": (None, "abc"), "modules": (None, "abc", (), ("zz",))}),
    Call(evaluate_episodes, {"reader": READER, "dialogues": DIALOGUES, "values": VALS},
         {"reader": (None, "abc", MODEL), "dialogues": BAD_DIALOGUES,
          "values": (None, "abc", [], ["zzz"], [1, 2]), "batch_size": S}),
    Call(fit, {}, {"batches": (None, "abc", 3, [[1, 2]], ["abc"]), "max_iter": S, "lr": S,
                   "seed": S, "answer_ids": (None, "abc", lambda d: -1, lambda d: 10**9)}),
]  # fmt: skip

# Bad inputs not yet refused with a message naming the argument; each would be an
# xfail(strict), so fixing one makes the test say to remove it from this list. None left:
# the scan and the attention wrapper refuse another dtype or device by name.
KNOWN_GAPS: frozenset = frozenset()


test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)


def test_every_case_at_once():
    # The hypothesis test samples cases; this walks all of them (cheap: tiny models).
    failures = []
    for case in cases(CALLS, KNOWN_GAPS):
        try:
            check_bad_argument(*case)
        except Exception as exc:
            failures.append(f"{case[0]!r} {case[1]} #{case[2]}: {type(exc).__name__} "
                            f"{str(exc)[:200]}")
    assert not failures, "\n".join(failures)
