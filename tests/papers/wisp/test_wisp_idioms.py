"""wisp in the Hugging Face and torch idioms: tokenizer outputs, GPT-2's Conv1D maps, bf16 and
float64 models, non-contiguous weights, and baselines that pay only their own cost."""

from __future__ import annotations

import pytest
import torch

from _hf import tiny_gpt2, tiny_tokenizer
from neurips26.common.models.llm import decoder_layers, perplexity, tiny_causal_lm
from neurips26.papers.wisp import (
    METHODS,
    block_linears,
    block_perplexity,
    capture_block_inputs,
    prune_linear,
    prune_model,
    sparsegpt_prune,
)
from neurips26.papers.wisp import model as wisp_model

TEXTS = ["the cat sat on a mat and the dog ran to the park", "it was a very good day",
         "yes the answer is one two three", "red blue green sun moon night"]


def _ids(b=2, t=16, seed=0):
    return torch.randint(0, 256, (b, t), generator=torch.Generator().manual_seed(seed))


def _weights(m):
    return {k: v.clone() for k, v in m.state_dict().items()}


def test_tokenizer_output_and_keywords_equal_id_tensors():
    batch = tiny_tokenizer()(TEXTS[:2], return_tensors="pt", padding=True)
    assert bool((batch["attention_mask"] == 0).any())  # right padding present
    a, b, c = (tiny_causal_lm(seed=1) for _ in range(3))
    prune_model(a, batch, method="wanda", sparsity=0.5)
    prune_model(b, input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                method="wanda", sparsity=0.5)  # fmt: skip
    prune_model(c, batch["input_ids"], attention_mask=batch["attention_mask"],
                method="wanda", sparsity=0.5)  # fmt: skip
    wa, wb, wc = _weights(a), _weights(b), _weights(c)
    assert all(torch.equal(wa[k], wb[k]) and torch.equal(wa[k], wc[k]) for k in wa)


def test_padding_never_enters_the_scores_or_the_perplexity():
    batch = tiny_tokenizer()(TEXTS[:2], return_tensors="pt", padding=True)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    other = ids.masked_fill(mask == 0, 77)  # different padding tokens, same real tokens
    for method in ("wanda", "wisp", "sparsegpt"):
        m1, m2 = tiny_causal_lm(seed=2), tiny_causal_lm(seed=2)
        prune_model(m1, {"input_ids": ids, "attention_mask": mask}, method=method,
                    sparsity=0.5, block_size=16)  # fmt: skip
        prune_model(m2, {"input_ids": other, "attention_mask": mask}, method=method,
                    sparsity=0.5, block_size=16)  # fmt: skip
        w1, w2 = _weights(m1), _weights(m2)
        assert all(torch.allclose(w1[k], w2[k], atol=1e-6) for k in w1), method
    m = tiny_causal_lm(seed=2)
    p1 = block_perplexity(m, capture_block_inputs(m, batch))
    p2 = block_perplexity(m, capture_block_inputs(m, {"input_ids": other,
                                                      "attention_mask": mask}))
    assert p1 == pytest.approx(p2, rel=1e-5)
    # the unpadded row alone gives its own perplexity
    row = ids[1:2]
    assert block_perplexity(m, capture_block_inputs(m, row)) == pytest.approx(
        perplexity(m, row[0], window=row.shape[1]), rel=1e-5)


def test_unsupported_layouts_name_the_supported_ones():
    m = tiny_causal_lm(seed=0)
    with pytest.raises(TypeError, match="supported layouts"):
        prune_model(m, "the cat sat", method="wanda")
    with pytest.raises(TypeError, match="supported layouts"):
        prune_model(m, 3.5, method="wanda")
    with pytest.raises(ValueError, match="input_ids"):
        prune_model(m, {"ids": _ids()}, method="wanda")
    with pytest.raises(TypeError, match="supported layouts"):
        prune_model(m, [[1, 2, 3], [4, 5]], method="wanda")  # ragged: pad them
    with pytest.raises(ValueError, match="attention_mask"):
        prune_model(m, {"input_ids": _ids(), "attention_mask": torch.ones(2, 16)},
                    attention_mask=torch.ones(2, 16), method="wanda")  # fmt: skip


@pytest.mark.parametrize("method", ["wanda", "sparsegpt", "wisp"])
def test_gpt2_conv1d_maps_are_pruned_as_their_transpose(method):
    m = tiny_gpt2(seed=3)
    ids = _ids(2, 16)
    blk = decoder_layers(m)[0]
    maps = block_linears(blk)
    assert set(maps) == {"qkv", "o", "up", "down"}
    # the oracle: prune_linear on W = weight^T with the inputs the dense block gives
    seen = {}
    hooks = [mod.register_forward_hook(lambda mod, a, o, n=n: seen.__setitem__(n, a[0]))
             for n, mod in maps.items()]  # fmt: skip
    cap = capture_block_inputs(m, ids)
    with torch.no_grad():
        blk(cap.hidden, **cap.kwargs[0])
    for h in hooks:
        h.remove()
    want = {n: prune_linear(mod.weight.T, seen[n].reshape(-1, mod.weight.shape[0]),
                            method=method, sparsity=0.5, block_size=16).weight
            for n, mod in maps.items()}  # fmt: skip
    rep = prune_model(m, ids, method=method, sparsity=0.5, layers=[0], block_size=16)
    assert {r.projection for r in rep.layers} == {"qkv", "o", "up", "down"}
    for n, mod in maps.items():
        assert torch.equal(mod.weight.T, want[n]), n
        if method != "sparsegpt":  # per output neuron (a column of the Conv1D weight)
            assert torch.all((mod.weight == 0).sum(0) == mod.weight.shape[0] // 2)
    assert rep.mean_sparsity == pytest.approx(0.5, abs=0.01)


def test_gpt2_block_perplexity_and_wrong_projection_names():
    m = tiny_gpt2(seed=4)
    ids = _ids(2, 16)
    cap = capture_block_inputs(m, ids, start=1)
    full = [perplexity(m, r, window=16) for r in ids]
    assert block_perplexity(m, cap) == pytest.approx(
        float(torch.tensor(full).log().mean().exp()), rel=1e-5)
    with pytest.raises(ValueError, match=r"GPT-2 layout.*'gate'"):
        prune_model(m, ids, projections=("gate", "up"))
    with pytest.raises(ValueError, match="supported architectures"):
        block_linears(torch.nn.Module(), ("q",))


@pytest.mark.parametrize("method", METHODS)
def test_non_contiguous_weights_give_the_contiguous_result(method):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 12, generator=g, dtype=torch.float64)
    W = torch.randn(8, 12, generator=g, dtype=torch.float64)
    Wt = W.T.contiguous().T  # the same values as a transposed view (a Conv1D's W)
    assert not Wt.is_contiguous()
    a = prune_linear(W, X, method=method, sparsity=0.5, block_size=4)
    b = prune_linear(Wt, X, method=method, sparsity=0.5, block_size=4)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.mask, b.mask)
    s1 = sparsegpt_prune(W, X.T @ X, sparsity="2:4", block_size=4)
    s2 = sparsegpt_prune(Wt, (X.T @ X).T, sparsity="2:4", block_size=4)
    assert torch.equal(s1.weight, s2.weight)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("method", ["wanda", "sparsegpt", "wisp"])
def test_bf16_and_float64_models_keep_their_dtype(dtype, method):
    m = tiny_causal_lm(seed=5).to(dtype)
    ids = _ids(2, 16)
    rep = prune_model(m, ids, method=method, sparsity=0.5, block_size=16, diagnostics=True)
    assert all(p.dtype == dtype for p in m.parameters())
    assert rep.mean_sparsity == pytest.approx(0.5, abs=0.01)
    assert all(abs(r.recon_error) < 10 for r in rep.layers)
    assert block_perplexity(m, capture_block_inputs(m, ids)) > 1
    # float64 pruning of the float64 model agrees with the float32 one on the mask
    if dtype == torch.float64 and method == "wanda":
        m32 = tiny_causal_lm(seed=5)
        prune_model(m32, ids, method=method, sparsity=0.5)
        z64 = [(p == 0) for p in m.parameters()]
        z32 = [(p == 0) for p in m32.parameters()]
        agree = sum(int((a == b).sum()) for a, b in zip(z64, z32, strict=True))
        assert agree / sum(a.numel() for a in z64) > 0.99


@pytest.mark.parametrize("method", METHODS)
def test_diagnostics_never_change_the_weights(method):
    a, b = tiny_causal_lm(seed=6), tiny_causal_lm(seed=6)
    ids = _ids(2, 16, seed=1)
    lean = prune_model(a, ids, method=method, sparsity=0.5, block_size=16)
    full = prune_model(b, ids, method=method, sparsity=0.5, block_size=16, diagnostics=True)
    wa, wb = _weights(a), _weights(b)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert all(r.recon_error != r.recon_error for r in lean.layers)  # NaN: not computed
    assert all(r.recon_error == r.recon_error for r in full.layers)
    assert lean.diagnostic_seconds == 0  # nothing timed: no diagnostics ran


@pytest.mark.parametrize("method", METHODS)
def test_only_difference_methods_pair_tokens(method, monkeypatch):
    calls = []
    real = wisp_model.make_pairs
    monkeypatch.setattr(wisp_model, "make_pairs", lambda *a, **k: calls.append(1) or real(*a, **k))
    prune_model(tiny_causal_lm(seed=7), _ids(2, 16), method=method, sparsity=0.5,
                block_size=16)  # fmt: skip
    needs = method in ("wisp", "wisp_plus", "whisper", "wisp_act")
    # one pairing per distinct input of a block (q/k/v share one, gate/up another)
    assert len(calls) == (4 * 2 if needs else 0)


def _lean_wanda(model, ids, sparsity=0.5):
    """A stand-alone Wanda with the sequential protocol: the reference lean baseline."""
    blocks = decoder_layers(model)
    cap = capture_block_inputs(model, ids)
    h = cap.hidden
    with torch.no_grad():
        for i, blk in enumerate(blocks):
            seen = {}
            maps = block_linears(blk)
            hooks = [mod.register_forward_hook(
                lambda mod, a, o, n=n, seen=seen: seen.__setitem__(n, a[0]))
                for n, mod in maps.items()]  # fmt: skip
            blk(h, **cap.kwargs[i])
            for hk in hooks:
                hk.remove()
            for n, mod in maps.items():
                X = seen[n].reshape(-1, mod.in_features)
                S = mod.weight.abs() * X.norm(dim=0)[None]
                k = int(sparsity * mod.in_features)
                low = torch.topk(S, k, dim=1, largest=False, sorted=False).indices
                mod.weight.scatter_(1, low, 0.0)
            out = blk(h, **cap.kwargs[i])
            h = out[0] if isinstance(out, tuple) else out


def test_prune_model_wanda_equals_a_lean_wanda_bit_for_bit():
    a, b = tiny_causal_lm(seed=8), tiny_causal_lm(seed=8)
    ids = _ids(2, 16, seed=2)
    prune_model(a, ids, method="wanda", sparsity=0.5)
    _lean_wanda(b, ids)
    wa, wb = _weights(a), _weights(b)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
