"""The separated and pause models: mask, causality, isolation, KV cache, oracles."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.common.models import GPT, GPTConfig
from neurips26.common.torch import seeded
from neurips26.papers.state_pred_sep import SPSTransformer, separation_mask

CFG = GPTConfig(block_size=12, num_layers=2, num_heads=2, dim=16)


def _model(mode="separated", seed=0, **kw):
    with seeded(seed):
        model = SPSTransformer(CFG, mode=mode, **kw)
    # non-trivial weights (biases and norms are trivial at initialisation)
    with seeded(seed + 100), torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def _idx(b=3, t=12, seed=0):
    return torch.randint(0, 256, (b, t), generator=torch.Generator().manual_seed(seed))


def _run_blocks(model, h):
    t2 = h.shape[1]
    for layer in range(model.cfg.num_layers):
        h, _ = model._block(layer, h, "both", attn_mask=model.mask[:t2, :t2])
    return h


def test_mask_rule_and_shapes():
    for t in (1, 2, 5):
        m = separation_mask(t)
        assert m.shape == (2 * t, 2 * t) and m.dtype == torch.bool
        for q in range(2 * t):
            for k in range(2 * t):
                allowed = (k % 2 == 0 and k // 2 <= q // 2) or (q % 2 == 1 and q == k)
                assert bool(m[q, k]) == allowed, (t, q, k)
    assert torch.equal(separation_mask(4, mode="pause"), torch.ones(8, 8, dtype=torch.bool).tril())
    assert separation_mask(4, mode="standard").shape == (4, 4)
    # a shorter input's mask is the leading sub-matrix (the model slices one buffer)
    assert torch.equal(separation_mask(6)[:6, :6], separation_mask(3))


def test_shapes_and_initial_loss_near_log_v():
    with seeded(0):
        model = SPSTransformer(CFG)
    idx = _idx()
    logits, loss = model(idx, idx)
    assert logits.shape == (3, 12, 256)
    assert math.isfinite(loss.item()) and abs(loss.item() - math.log(256)) < 0.3
    assert model(idx)[1] is None
    assert len(model.hidden_states(idx)) == CFG.num_layers + 1


@pytest.mark.parametrize("mode", ["separated", "pause"])
def test_causality(mode):
    model = _model(mode)
    idx = _idx()
    base = model(idx)[0]
    for i in range(0, 11, 3):
        other = idx.clone()
        other[:, i + 1 :] = (other[:, i + 1 :] + 7) % 256
        out = model(other)[0]
        assert torch.allclose(out[:, : i + 1], base[:, : i + 1], atol=1e-6)
        assert not torch.allclose(out[:, i + 1 :], base[:, i + 1 :], atol=1e-4)


def test_isolation_of_prediction_steps():
    model = _model("separated")
    h = model.embed(_idx())
    base = _run_blocks(model, h)
    j = 4
    h2 = h.clone()
    noise = torch.randn(h.shape[0], h.shape[2], generator=torch.Generator().manual_seed(1))
    h2[:, 2 * j + 1] += noise
    out = _run_blocks(model, h2)
    changed = (out - base).abs().amax(dim=(0, 2)) > 1e-6  # (2T,)
    assert changed.nonzero().flatten().tolist() == [2 * j + 1]


def test_pause_prediction_steps_are_read_by_later_steps():
    # the control: under the causal mask a perturbed rho_j reaches every later step
    model = _model("pause")
    h = model.embed(_idx())
    h2 = h.clone()
    h2[:, 9] += torch.randn(h.shape[0], h.shape[2], generator=torch.Generator().manual_seed(1))
    changed = (_run_blocks(model, h2) - _run_blocks(model, h)).abs().amax(dim=(0, 2)) > 1e-6
    assert changed[9:].all() and not changed[:9].any()


def _explicit_forward(model, idx):
    """softmax(q k^T / sqrt(hd) + bias(mask)) v in plain torch, from the model's weights."""
    h = model.embed(idx)
    b, s, c = h.shape
    nh, hd = model.cfg.num_heads, c // model.cfg.num_heads
    bias = torch.zeros(s, s).masked_fill(~separation_mask(idx.shape[1]), float("-inf"))
    for block in model.gpt.blocks:
        z = F.layer_norm(h, (c,), block.norm1.weight, block.norm1.bias)
        q, k, v = (z @ block.attn.qkv.weight.T).split(c, dim=2)
        q, k, v = (t.view(b, s, nh, hd).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + bias, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, c)
        h = h + y @ block.attn.proj.weight.T
        z = F.layer_norm(h, (c,), block.norm2.weight, block.norm2.bias)
        h = h + F.gelu(z @ block.mlp.up.weight.T) @ block.mlp.down.weight.T
    h = F.layer_norm(h, (c,), model.gpt.norm_f.weight, model.gpt.norm_f.bias)
    return h[:, 1::2] @ model.gpt.tok_emb.weight.T


def test_masked_sdpa_equals_explicit_attention():
    model = _model("separated")
    idx = _idx()
    assert torch.allclose(model(idx)[0], _explicit_forward(model, idx), atol=1e-5)


def test_state_stream_reduces_to_the_standard_gpt():
    with seeded(3):
        gpt = GPT(CFG).eval()
    model = SPSTransformer.from_gpt(gpt).eval()
    idx = _idx()
    captured = []
    hooks = [b.register_forward_pre_hook(lambda _m, a: captured.append(a[0])) for b in gpt.blocks]
    gpt(idx)
    for hk in hooks:
        hk.remove()
    states = model.hidden_states(idx)
    for layer, ref in enumerate(captured):
        assert torch.allclose(states[layer][:, 0::2], ref, atol=1e-6)


def test_separate_weights_reduce_to_shared_when_equal():
    shared, sep = _model("separated"), _model("separated")
    with seeded(0):
        sw = SPSTransformer(CFG, separate_weights=True)
    sw.load_state_dict(shared.state_dict(), strict=False)
    for block, mlp in zip(sw.gpt.blocks, sw.rho_mlps, strict=True):
        mlp.load_state_dict(block.mlp.state_dict())
    sw.eval()
    idx = _idx()
    assert torch.allclose(sw(idx)[0], sep(idx)[0], atol=1e-6)
    with torch.no_grad():
        sw.rho_mlps[0].up.weight.add_(0.5)
    states, ref = sw.hidden_states(idx), sep.hidden_states(idx)
    assert torch.allclose(states[-1][:, 0::2], ref[-1][:, 0::2], atol=1e-6)  # x stream untouched
    assert not torch.allclose(states[-1][:, 1::2], ref[-1][:, 1::2], atol=1e-4)


@pytest.mark.parametrize("mode", ["separated", "pause"])
@pytest.mark.parametrize(("separate_weights", "rho_input"),
                         [(False, "learned"), (True, "learned"), (False, "token")])
def test_kv_cache_equals_full_forward(mode, separate_weights, rho_input):
    model = _model(mode, separate_weights=separate_weights, rho_input=rho_input)
    idx = _idx()
    full = model(idx)[0]
    for prompt in (1, 5):
        logits, cache = model.prefill(idx[:, :prompt])
        steps = [logits] + [model.step(idx[:, i], cache) for i in range(prompt, 12)]
        assert torch.allclose(torch.stack(steps, 1), full[:, prompt - 1 :], atol=1e-5)
    # the separated model caches state steps only; the pause model every step
    per_token = 1 if mode == "separated" else 2
    assert cache.kv[0][0].shape[2] == per_token * 12
    prompt = idx[:, :4]
    greedy = model.generate(prompt, max_new_tokens=8, top_k=1)
    assert torch.equal(greedy, model.generate(prompt, max_new_tokens=8, top_k=1, use_cache=False))
    sampled = model.generate(prompt, max_new_tokens=8, seed=5)
    assert torch.equal(sampled, model.generate(prompt, max_new_tokens=8, seed=5, use_cache=False))
    assert greedy.shape == (3, 12) and torch.equal(greedy[:, :4], idx[:, :4])


def test_token_reading_adds_the_token_embedding_to_the_prediction_step():
    learned, token = _model("separated"), _model("separated", rho_input="token")
    idx = _idx()
    a, b = learned.embed(idx), token.embed(idx)  # same seed: same weights
    assert torch.equal(a[:, 0::2], b[:, 0::2])  # the state steps are the same
    assert torch.allclose(b[:, 1::2] - a[:, 1::2], token.gpt.tok_emb(idx), atol=1e-6)
    with pytest.raises(ValueError, match="rho_input"):
        SPSTransformer(CFG, rho_input="both")


def test_generate_zero_tokens_returns_prompt():
    model = _model()
    idx = _idx(t=4)
    assert torch.equal(model.generate(idx, max_new_tokens=0), idx)


def test_the_mask_is_what_differs_between_separated_and_pause():
    sep, pause = _model("separated"), _model("pause")
    assert sum(p.numel() for p in sep.parameters()) == sum(p.numel() for p in pause.parameters())
    idx = _idx()
    assert not torch.allclose(sep(idx)[0], pause(idx)[0], atol=1e-4)
    pause.mask = sep.mask
    assert torch.allclose(sep(idx)[0], pause(idx)[0], atol=1e-6)
