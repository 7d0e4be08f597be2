"""The shared GPT, MLP and CNN: causality, KV cache = full forward, shapes, bad input."""

from __future__ import annotations

import pytest
import torch

from neurips26.common.models import GPT, GPTConfig, MLPClassifier, SmallCNN
from neurips26.common.models.gpt import apply_rope, rope_tables
from neurips26.common.torch import get_device, make_generator, num_parameters, seeded

CONFIGS = [
    GPTConfig(vocab_size=17, block_size=12, num_layers=2, num_heads=2, dim=16),
    GPTConfig(vocab_size=17, block_size=12, num_layers=2, num_heads=2, dim=16,
              norm="rmsnorm", positions="rope", mlp="swiglu", bias=True, tie_weights=False),
]  # fmt: skip


@pytest.mark.parametrize("cfg", CONFIGS, ids=["gpt2", "llama"])
def test_causal_and_kv_cache_equals_full_forward(cfg):
    with seeded(0):
        model = GPT(cfg).eval()
    idx = torch.randint(cfg.vocab_size, (2, 10), generator=make_generator(1))
    full, _ = model(idx)
    # Changing a later token never changes earlier logits.
    idx2 = idx.clone()
    idx2[:, 7] = (idx2[:, 7] + 1) % cfg.vocab_size
    assert torch.allclose(model(idx2)[0][:, :7], full[:, :7], atol=1e-6)
    # Feeding the sequence one token at a time through the cache gives the same logits.
    past, steps = None, []
    for t in range(idx.shape[1]):
        logits, _, past = model(idx[:, t : t + 1], past=past, return_cache=True)
        steps.append(logits)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    # A prefix then the rest, too.
    _, _, past = model(idx[:, :4], return_cache=True)
    rest, _, _ = model(idx[:, 4:], past=past, return_cache=True)
    assert torch.allclose(rest, full[:, 4:], atol=1e-5)


def test_generate_with_and_without_cache_agree_greedy():
    cfg = CONFIGS[1]
    with seeded(2):
        model = GPT(cfg).eval()
    prompt = torch.tensor([[1, 2, 3]])
    a = model.generate(prompt, 6, temperature=0.0)
    b = model.generate(prompt, 6, temperature=0.0, use_cache=False)
    assert torch.equal(a, b) and a.shape == (1, 9)


def test_rope_is_a_rotation_preserving_norms_and_relative():
    cos, sin = rope_tables(8, 6)
    q = torch.randn(1, 1, 6, 8, generator=make_generator(0))
    rq = apply_rope(q, cos, sin)
    assert torch.allclose(rq.norm(dim=-1), q.norm(dim=-1), atol=1e-5)
    # <R_m q, R_n k> depends on m - n only: same vectors at shifted positions.
    k = torch.randn(1, 1, 1, 8, generator=make_generator(1))
    qq = q[:, :, :1].expand(1, 1, 6, 8)
    kk = k.expand(1, 1, 6, 8)
    rq, rk = apply_rope(qq, cos, sin), apply_rope(kk, cos, sin)
    d1 = (rq[..., 3, :] * rk[..., 1, :]).sum()
    d2 = (rq[..., 4, :] * rk[..., 2, :]).sum()
    assert torch.allclose(d1, d2, atol=1e-5)


def test_loss_is_log_vocab_at_init_and_flops_formula():
    cfg = GPTConfig(vocab_size=64, block_size=16, num_layers=1, dim=32)
    with seeded(0):
        model = GPT(cfg)
    idx = torch.randint(64, (4, 16), generator=make_generator(0))
    targets = torch.randint(64, (4, 16), generator=make_generator(1))
    _, loss = model(idx, targets)
    assert abs(float(loss.detach()) - torch.log(torch.tensor(64.0)).item()) < 0.1
    n = sum(p.numel() for name, p in model.named_parameters() if "emb" not in name)
    assert model.flops_per_token() == 6 * n + 12 * 1 * 32 * 16


def test_gpt_bad_input():
    model = GPT(GPTConfig(vocab_size=8, block_size=4, num_layers=1, dim=8))
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.full((1, 2), 9))
    with pytest.raises(TypeError, match="idx"):
        model(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="dim"):
        GPTConfig(dim=10, num_heads=4)
    with pytest.raises(ValueError, match="norm"):
        GPTConfig(norm="batchnorm")


def test_mlp_and_cnn():
    mlp = MLPClassifier(64, (32,), 10)
    assert mlp(torch.zeros(3, 64)).shape == (3, 10)
    assert mlp.features(torch.zeros(3, 1, 8, 8)).shape == (3, 32)
    assert num_parameters(mlp) == 64 * 32 + 32 + 32 * 10 + 10
    with pytest.raises(ValueError, match="x"):
        mlp(torch.zeros(3, 10))
    cnn = SmallCNN(1, (4, 8), 10, batch_norm=True)
    assert cnn(torch.zeros(2, 1, 16, 16)).shape == (2, 10)
    with pytest.raises(ValueError, match="x"):
        cnn(torch.zeros(2, 3, 16, 16))
    with pytest.raises(ValueError, match="hidden"):
        MLPClassifier(4, (0,), 2)


def test_device_and_generator_checks():
    assert get_device(None).type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            get_device("cuda")
    with pytest.raises(ValueError, match="seed"):
        make_generator(-1)
    with pytest.raises(TypeError, match="seed"):
        make_generator(1.5)
