"""qc_a2s in the Hugging Face and torch idioms: tokenizer outputs (padding never calibrated
on), GPT-2's Conv1D maps, and bf16 / float64 models."""

from __future__ import annotations

import pytest
import torch

from _hf import tiny_gpt2, tiny_tokenizer
from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.qc_a2s import (
    QCA2S,
    TTFSLinear,
    calibration_stats,
    convert_continuous_baseline,
    convert_qc_a2s,
    find_sites,
    restore,
    set_mode,
    ttfs_layers,
    ttfs_quantize,
)

TEXTS = ["the cat sat on a mat and the dog ran to the park", "it was a very good day",
         "yes the answer is one two three"]


def _ids(b=2, t=16, seed=0):
    return torch.randint(256, (b, t), generator=torch.Generator().manual_seed(seed))


def test_tokenizer_output_equals_ids_with_mask_and_ignores_padding():
    batch = tiny_tokenizer()(TEXTS, return_tensors="pt", padding=True)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert bool((mask == 0).any())
    m = tiny_causal_lm(seed=1)
    a = calibration_stats(m, batch, max_samples=64)
    b = calibration_stats(m, ids, attention_mask=mask, max_samples=64)
    c = calibration_stats(m, {"input_ids": ids.masked_fill(mask == 0, 99),
                              "attention_mask": mask}, max_samples=64)  # other padding
    assert a.num_tokens == b.num_tokens == int(mask.sum())
    for s in a.sites:
        assert torch.equal(a.stats[s].absmax, b.stats[s].absmax)
        assert torch.equal(a.stats[s].values, b.stats[s].values)
        assert torch.allclose(a.stats[s].absmax, c.stats[s].absmax, atol=1e-6)
    r1 = convert_qc_a2s(tiny_causal_lm(seed=1), batch, num_steps=8)
    r2 = QCA2S(num_steps=8).fit(tiny_causal_lm(seed=1), ids, attention_mask=mask).result_
    r3 = convert_continuous_baseline(tiny_causal_lm(seed=1), batch, num_steps=8)
    assert all(torch.equal(r1.thetas[s], r2.thetas[s]) for s in r1.thetas)
    assert r3.num_stages == r1.num_stages


def test_unsupported_layouts_and_architectures_are_named():
    m = tiny_causal_lm(seed=0)
    with pytest.raises(TypeError, match="supported layouts"):
        convert_qc_a2s(m, "the cat sat", num_steps=4)
    with pytest.raises(TypeError, match="supported layouts"):
        calibration_stats(m, 7)
    with pytest.raises(ValueError, match="input_ids"):
        calibration_stats(m, {"ids": _ids()})
    with pytest.raises(ValueError, match="attention_mask"):
        calibration_stats(m, _ids(), attention_mask=torch.full((2, 16), float("nan")))
    with pytest.raises(ValueError, match="supported"):
        find_sites(torch.nn.Sequential(torch.nn.Linear(2, 2)))


@pytest.mark.parametrize("targets", ["mlp", "all"])
def test_gpt2_conv1d_sites_are_converted(targets):
    m = tiny_gpt2(seed=2)
    sites = find_sites(m, targets)
    want = {"mlp.in", "mlp.down"} | ({"attn.in", "attn.out"} if targets == "all" else set())
    assert {s.split(".", 2)[2] for s in sites} == want
    ids = _ids()
    ref = m(input_ids=ids).logits
    res = convert_qc_a2s(m, ids, num_steps=8, targets=targets)
    layers = ttfs_layers(m)
    assert len(layers) == len(sites) and all(isinstance(t, TTFSLinear) for t in layers)
    ann = m(input_ids=ids).logits
    # each Conv1D sees exactly the quantized input: y = q(x) W + b
    t = layers[0]
    x = torch.randn(3, t.in_features, generator=torch.Generator().manual_seed(0))
    q = ttfs_quantize(x, theta=t.theta, num_steps=8)
    assert torch.allclose(t(x), q @ t.linear.weight + t.linear.bias, atol=1e-6)
    set_mode(m, "snn")
    assert torch.equal(m(input_ids=ids).logits, ann)  # spikes equal fake quantization
    assert res.latency_steps == 8 * len(sites)
    restore(m)
    assert torch.equal(m(input_ids=ids).logits, ref)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_bf16_and_float64_models_keep_their_dtype(dtype, arch):
    m = tiny_causal_lm(seed=3).to(dtype) if arch == "llama" else tiny_gpt2(seed=3, dtype=dtype)
    ids = _ids()
    ref = m(input_ids=ids).logits
    res = convert_qc_a2s(m, ids, num_steps=256, targets="all")
    out = m(input_ids=ids).logits
    assert out.dtype == dtype and bool(torch.isfinite(out).all())
    assert all(t.theta.dtype == dtype for t in ttfs_layers(m))
    stat = torch.float64 if dtype == torch.float64 else torch.float32  # never below float32
    assert all(th.dtype == stat for th in res.thetas.values())
    err = float((out - ref).abs().max().detach() / ref.abs().max().detach())
    assert err < (0.1 if dtype == torch.bfloat16 else 0.02)  # T = 256: close to float
