"""steering_hessian in the Hugging Face and torch idioms: tokenizer outputs, GPT-2's residual
stream, bf16 and float64 models (vectors follow the model's dtype)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _hf import tiny_gpt2, tiny_tokenizer
from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.steering_hessian import (
    SharpRemovedSteerer,
    SteeringObjective,
    anti_steer_rate,
    caa_vector,
    finite_difference_hessian,
    generate_steered,
    sharp_removal,
    steer,
    steering_hessian,
)

POS = ["the cat sat on a mat yes", "it was a good day yes", "the dog ran yes"]
NEG = ["the cat sat on a mat no", "it was a good day no", "the dog ran no"]
PROMPTS = ["the cat sat on a mat", "it was a good day", "the dog ran"]


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer(padding_side="left")


def _yes_no(tok):
    return tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")


def test_tokenizer_outputs_equal_ids_with_masks(tok):
    m = tiny_causal_lm(seed=0)
    pos = tok(POS, return_tensors="pt", padding=True)
    neg = tok(NEG, return_tensors="pt", padding=True)
    assert bool((pos["attention_mask"] == 0).any())  # left padding present
    v1 = caa_vector(m, pos, neg, layer=0)
    v2 = caa_vector(m, pos["input_ids"], neg["input_ids"], layer=0,
                    attention_mask=pos["attention_mask"])  # fmt: skip
    assert torch.equal(v1, v2)
    prompts = tok(PROMPTS, return_tensors="pt", padding=True)
    yes, _ = _yes_no(tok)
    f1 = SteeringObjective(m, prompts, [yes] * 3, layer=1)
    f2 = SteeringObjective(m, prompts["input_ids"], [yes] * 3, layer=1,
                           attention_mask=prompts["attention_mask"])  # fmt: skip
    assert torch.equal(f1.log_probs(v1), f2.log_probs(v1))
    # a dict and an unbatched tokenizer output (one flat sequence) work too
    one = tok(PROMPTS[0])
    assert isinstance(one["input_ids"], list)
    f3 = SteeringObjective(m, dict(one), [yes], layer=1)
    assert torch.allclose(f3.log_probs(v1), f1.log_probs(v1)[:1], atol=1e-5)
    g1 = generate_steered(m, prompts, v1, layer=1, max_new_tokens=3, temperature=0)
    g2 = generate_steered(m, prompts["input_ids"], v1, layer=1, max_new_tokens=3,
                          temperature=0, attention_mask=prompts["attention_mask"])  # fmt: skip
    assert torch.equal(g1, g2)
    est = SharpRemovedSteerer(layer=0, k=2, num_steps=6).fit(m, pos, neg, prompts, [yes] * 3)
    assert est.vector_.shape == (64,)


def test_wrong_layouts_say_what_is_supported(tok):
    m = tiny_causal_lm(seed=0)
    with pytest.raises(TypeError, match="supported layouts"):
        caa_vector(m, "the cat yes", "the cat no", layer=0)
    with pytest.raises(TypeError, match="supported layouts"):
        SteeringObjective(m, 42, [1], layer=0)
    with pytest.raises(ValueError, match="input_ids"):
        SteeringObjective(m, {"ids": [[1, 2]]}, [1], layer=0)
    right = tiny_tokenizer(padding_side="right")(PROMPTS, return_tensors="pt", padding=True)
    with pytest.raises(ValueError, match="padding_side"):
        SteeringObjective(m, right, [1, 1, 1], layer=0)
    pos = tok(POS, return_tensors="pt", padding=True)
    with pytest.raises(ValueError, match="attention_mask"):
        caa_vector(m, pos, pos, layer=0, attention_mask=pos["attention_mask"])
    with pytest.raises(ValueError, match="supported architectures"):
        caa_vector(torch.nn.Linear(2, 2), [[1, 2]], [[1, 3]], layer=0)


def test_gpt2_residual_stream(tok):
    m = tiny_gpt2(seed=1, dtype=torch.float64)
    ids = tok(PROMPTS, return_tensors="pt", padding=True)["input_ids"]  # no mask: float64
    pos = tok(POS, return_tensors="pt", padding=True)["input_ids"]
    neg = tok(NEG, return_tensors="pt", padding=True)["input_ids"]
    v = caa_vector(m, pos, neg, layer=1)
    assert v.shape == (32,) and v.dtype == torch.float64 and float(v.norm()) > 0
    # v = 0 is the identity; the hook edits GPT-2's residual stream
    with steer(m, torch.zeros(32), layer=1):
        same = m(input_ids=ids).logits
    assert torch.equal(same, m(input_ids=ids).logits)
    with steer(m, v, layer=0):
        moved = m(input_ids=ids).logits
    assert not torch.allclose(moved, same)
    yes, _ = _yes_no(tok)
    cached = SteeringObjective(m, ids, [yes] * 3, layer=0)
    plain = SteeringObjective(m, ids, [yes] * 3, layer=0, cache_prefix=False)
    assert cached._prefix is not None
    assert torch.allclose(cached.log_probs(v), plain.log_probs(v), atol=1e-10)
    H = steering_hessian(cached, v, method="dense")
    fd = finite_difference_hessian(cached, v.double().numpy())
    assert np.max(np.abs(H.dense - fd)) <= 1e-4 * np.max(np.abs(H.dense))


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_bf16_and_float64_models(tok, dtype, arch):
    m = tiny_causal_lm(seed=2).to(dtype) if arch == "llama" else tiny_gpt2(seed=2, dtype=dtype)
    same_len = ["the cat sat yes", "the dog ran yes"], ["the cat sat no", "the dog ran no"]
    pos = tok(same_len[0], return_tensors="pt")  # equal lengths: no padding
    neg = tok(same_len[1], return_tensors="pt")
    v = caa_vector(m, pos, neg, layer=0)
    assert v.dtype == dtype  # the model's dtype, never silently float32
    prompts = tok(["the cat sat", "the dog ran"], return_tensors="pt")
    yes, _ = _yes_no(tok)
    f = SteeringObjective(m, prompts, [yes, yes], layer=1)
    assert f.dtype == dtype
    lp = f.log_probs(v)
    assert lp.shape == (2,) and bool(torch.isfinite(lp).all())
    H = steering_hessian(f, v.double().numpy(), method="lanczos", num_steps=4)
    assert np.all(np.isfinite(H.eigvals))
    rem = sharp_removal(v.double().numpy(), H, k=2)
    a = anti_steer_rate(f, rem.sharp_direction())
    assert 0.0 <= a.rate <= 1.0
    out = generate_steered(m, prompts, v, layer=1, max_new_tokens=2, temperature=0)
    assert out.shape == (2, 2)
