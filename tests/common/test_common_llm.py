"""LLM helpers on a tiny random LLaMA (no download): layers, hooks, perplexity oracle."""

from __future__ import annotations

import math

import pytest
import torch

from neurips26.common.models.llm import (
    capture_residual,
    decoder_layers,
    edit_residual,
    load_causal_lm,
    load_smollm2,
    mlp_projections,
    perplexity,
    tiny_causal_lm,
)
from neurips26.common.torch import make_generator

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_llama():
    return tiny_causal_lm("llama", seed=0, vocab_size=50, hidden_size=16, intermediate_size=32,
                          num_layers=3, num_heads=2, num_kv_heads=1, max_positions=64)  # fmt: skip


def test_layers_and_mlp(tiny_llama):
    assert len(decoder_layers(tiny_llama)) == 3
    proj = mlp_projections(decoder_layers(tiny_llama)[0])
    assert proj["down"].in_features == 32
    with pytest.raises(ValueError, match="decoder layers"):
        decoder_layers(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="gate_proj"):
        mlp_projections(torch.nn.Linear(2, 2))


def test_capture_and_edit(tiny_llama):
    ids = torch.randint(50, (1, 12), generator=make_generator(0))
    with capture_residual(tiny_llama, [0, -1]) as acts:
        base = tiny_llama(input_ids=ids).logits
    assert set(acts) == {0, 2} and acts[2].shape == (1, 12, 16)
    with edit_residual(tiny_llama, 2, lambda h: h * 0):
        zeroed = tiny_llama(input_ids=ids).logits
    # After zeroing the last block's output, the final norm sees zeros: constant logits.
    assert torch.allclose(zeroed[0, 0], zeroed[0, 5]) and not torch.allclose(zeroed, base)
    assert torch.allclose(tiny_llama(input_ids=ids).logits, base)  # hook removed
    with pytest.raises(ValueError, match="layers"):
        with capture_residual(tiny_llama, [7]):
            pass


def test_perplexity_equals_direct_nll_when_one_window(tiny_llama):
    ids = torch.randint(50, (30,), generator=make_generator(1))
    logits = tiny_llama(input_ids=ids[None]).logits[0, :-1]
    nll = torch.nn.functional.cross_entropy(logits, ids[1:])
    assert math.isclose(perplexity(tiny_llama, ids, window=64), math.exp(float(nll)),
                        rel_tol=1e-5)  # fmt: skip
    # Sliding windows score every token once; with full overlap context grows.
    p_small = perplexity(tiny_llama, ids, window=8)
    p_stride = perplexity(tiny_llama, ids, window=8, stride=2)
    assert math.isfinite(p_small) and math.isfinite(p_stride)
    with pytest.raises(ValueError, match="window"):
        perplexity(tiny_llama, ids, window=1)
    with pytest.raises(ValueError, match="token_ids"):
        perplexity(tiny_llama, ids[:1])


def test_perplexity_counts_each_token_once():
    # A bigram model: its prediction depends on the current token only, so any windowing
    # must give the direct bigram perplexity; scoring a token twice or not at all would not.
    table = torch.randn(7, 7, generator=make_generator(3))

    class Bigram(torch.nn.Module):
        def forward(self, ids):
            return table[ids]

    ids = torch.randint(7, (41,), generator=make_generator(2))
    direct = math.exp(float(torch.nn.functional.cross_entropy(table[ids[:-1]], ids[1:])))
    for window, stride in ((5, None), (5, 2), (5, 1), (64, None)):
        got = perplexity(Bigram(), ids, window=window, stride=stride)
        assert math.isclose(got, direct, rel_tol=1e-5), (window, stride)


def test_load_causal_lm_refuses_non_checkpoint(tmp_path):
    with pytest.raises(ValueError, match=r"config\.json"):
        load_causal_lm(tmp_path)


@pytest.mark.slow
def test_smollm2_loads_and_cache_is_bit_identical():
    model, tok = load_smollm2()
    ids = torch.tensor([tok.encode("The quick brown fox")])
    a = model(input_ids=ids).logits
    model2, _ = load_smollm2()
    assert torch.equal(a, model2(input_ids=ids).logits)
    assert len(decoder_layers(model)) == 30


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gemma"])
def test_tiny_causal_lm_layouts_and_seed(arch):
    a, b, c = (tiny_causal_lm(arch, seed=s) for s in (3, 3, 4))
    x = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(0))
    assert torch.equal(a(input_ids=x).logits, b(input_ids=x).logits)
    assert not torch.equal(a(input_ids=x).logits, c(input_ids=x).logits)
    assert len(decoder_layers(a)) == 2
    assert mlp_projections(decoder_layers(a)[1])["down"].in_features == 128
    with capture_residual(a, [0]) as acts:
        a(input_ids=x)
    assert acts[0].shape == (1, 6, 64)


def test_tiny_causal_lm_bad_input():
    with pytest.raises(ValueError, match="arch"):
        tiny_causal_lm("gpt5")
    with pytest.raises(ValueError, match="hidden_size"):
        tiny_causal_lm(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="num_kv_heads"):
        tiny_causal_lm(num_heads=4, num_kv_heads=3)
    with pytest.raises((ValueError, TypeError), match="seed"):
        tiny_causal_lm(seed=-1)


def test_load_lm_is_the_one_loader_of_the_model_settings(tmp_path):
    from neurips26.common.models.llm import load_lm, tiny_causal_lm

    model, tok = load_lm("tiny", tiny=dict(seed=3, num_layers=2))
    ref = tiny_causal_lm("llama", seed=3, num_layers=2)
    assert tok is None
    for a, b in zip(model.state_dict().values(), ref.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="model_path"):
        load_lm("path")
    with pytest.raises(ValueError, match="model"):
        load_lm("gpt5")
    with pytest.raises(ValueError, match="path"):
        load_lm("smollm2", model_path=str(tmp_path))  # a folder that is no checkpoint
