"""delta_mem in the Hugging Face and torch idioms: tokenizer outputs as write masks and as
encoders, refused write masks (NaN), GPT-2 refused with the supported layouts, and bf16 /
float64 backbones through the full model and the LoRA and in-context readers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _hf import tiny_gpt2, tiny_tokenizer
from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.delta_mem import (
    FAMILIES,
    DeltaMemConfig,
    EpisodeRunner,
    InContextReader,
    LoRAReader,
    attach_delta_mem,
    candidate_ids,
    delta_mem_modules,
    encoded_ids,
    make_dialogues,
    reset_delta_mem,
    write_mask,
)

TEXTS = ["the cat sat on a mat", "the dog ran"]


def _wrapped(seed=0, dtype=torch.float32):
    m = tiny_causal_lm(seed=seed, hidden_size=32, intermediate_size=64).to(dtype)
    attach_delta_mem(m, DeltaMemConfig(rank=4), seed=1)
    return m


def test_a_tokenizer_output_is_a_write_mask():
    batch = tiny_tokenizer()(TEXTS, return_tensors="pt", padding=True)
    assert bool((batch["attention_mask"] == 0).any())  # right padding
    m = _wrapped()
    states = []
    for mask in (batch, batch["attention_mask"], batch["attention_mask"].numpy()):
        reset_delta_mem(m)
        with torch.no_grad(), write_mask(m, mask):
            m(**batch)
        states.append([w.state.clone() for w in delta_mem_modules(m)])
    for other in states[1:]:
        assert all(torch.equal(a, b) for a, b in zip(states[0], other, strict=True))
    # padding never writes: the short row's state equals that of its unpadded run
    reset_delta_mem(m)
    short = tiny_tokenizer()(TEXTS[1:], return_tensors="pt")
    with torch.no_grad():
        m(**short)
    alone = [w.state.clone() for w in delta_mem_modules(m)]
    assert all(torch.allclose(a[1], b[0], atol=1e-6) for a, b in zip(states[0], alone,
                                                                     strict=True))


@pytest.mark.parametrize("bad", [torch.full((2, 6), float("nan")), torch.full((2, 6), 0.5),
                                 torch.tensor([[1.0, float("inf")]]), torch.ones(2, 0)])
def test_nan_and_fractional_write_masks_are_refused_at_once(bad):
    m = _wrapped()
    with pytest.raises(ValueError, match="mask"), write_mask(m, bad):
        pass  # refused on entry, before any forward pass


def test_write_mask_layout_errors():
    m = _wrapped()
    with pytest.raises(ValueError, match="attention_mask"), write_mask(m, {"input_ids": [[1]]}):
        pass
    with pytest.raises(TypeError, match="mask"), write_mask(m, "1 1 0"):
        pass


def test_encode_may_return_a_tokenizer_output():
    tok = tiny_tokenizer()
    plain = tok.encode(TEXTS[0], add_special_tokens=False)
    assert encoded_ids(tok(TEXTS[0])) == plain
    assert encoded_ids(tok(TEXTS[0], return_tensors="pt")) == plain
    assert encoded_ids(np.array(plain)) == plain
    model = tiny_causal_lm(seed=2, hidden_size=32, intermediate_size=64, num_layers=3)
    a = EpisodeRunner(model, tok, start=2)  # the Hugging Face tokenizer itself
    b = EpisodeRunner(model, lambda t: tok.encode(t, add_special_tokens=False), start=2)
    assert a.tokens(TEXTS[0]) == b.tokens(TEXTS[0]) == plain
    assert candidate_ids(tok, ["cat", "dog"]) == [plain[1], tok.convert_tokens_to_ids("dog")]
    with pytest.raises(TypeError, match="supported"):
        EpisodeRunner(model, lambda t: t.upper(), start=2).tokens("the cat")
    with pytest.raises(ValueError, match="input_ids"):
        encoded_ids({"ids": [1]})


def test_gpt2_is_refused_with_the_supported_layouts():
    m = tiny_gpt2()
    with pytest.raises(ValueError, match="GPT-2"):
        attach_delta_mem(m)
    with pytest.raises(ValueError, match="GPT-2"):
        attach_delta_mem(m, target=lambda n, mod: n.endswith(".attn"))
    with pytest.raises(ValueError, match="GPT-2"):
        EpisodeRunner(m, lambda t: [1, 2], start=1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_full_model_and_lora_in_context_readers_follow_the_dtype(dtype):
    m = _wrapped(seed=3, dtype=dtype)
    assert all(p.dtype == dtype for w in delta_mem_modules(m) for p in w.memory.parameters())
    batch = tiny_tokenizer()(TEXTS, return_tensors="pt", padding=True)
    with torch.no_grad(), write_mask(m, batch):
        out = m(**batch).logits
    assert out.dtype == dtype and bool(torch.isfinite(out).all())
    assert all(w.state.dtype == dtype for w in delta_mem_modules(m))
    from neurips26.papers.delta_mem import WordTokenizer

    tok = WordTokenizer()
    model = tiny_causal_lm(seed=5, hidden_size=32, num_layers=3, intermediate_size=64).to(dtype)
    runner = EpisodeRunner(model, tok.encode, start=2, window=64)
    ds = [d for f in FAMILIES for d in make_dialogues(
        1, f, num_episodes=3, num_names=4, num_values=4, rng=np.random.default_rng(0))][:1]
    for reader in (LoRAReader(runner, 2), InContextReader(runner)):
        assert all(p.dtype == dtype for p in reader.parameters())
        logits = reader(ds)
        assert logits.dtype == dtype and bool(torch.isfinite(logits).all())
