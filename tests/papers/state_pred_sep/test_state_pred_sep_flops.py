"""Analytic FLOPs against torch's FlopCounterMode (an independent measured count)."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from neurips26.common.models import GPT, GPTConfig
from neurips26.common.torch import seeded
from neurips26.papers.state_pred_sep import SPSTransformer, flop_ratio, forward_flops


def _measure(model, idx, *, backward):
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        loss = model(idx, idx)[1]
        if backward:
            loss.backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("mlp", ["gelu", "swiglu"])
@pytest.mark.parametrize("arm", ["standard", "separated", "pause", "separate_weights"])
@pytest.mark.parametrize("seq_len", [5, 12])
def test_analytic_count_equals_measured(arm, mlp, seq_len):
    cfg = GPTConfig(block_size=12, num_layers=2, num_heads=2, dim=16, mlp=mlp, vocab_size=50)
    with seeded(0):
        if arm == "standard":
            model = GPT(cfg)
        else:
            model = SPSTransformer(cfg, mode="pause" if arm == "pause" else "separated",
                                   separate_weights=arm == "separate_weights")
    idx = torch.randint(0, 50, (3, seq_len), generator=torch.Generator().manual_seed(0))
    mode = "standard" if arm == "standard" else ("pause" if arm == "pause" else "separated")
    count = forward_flops(cfg, mode=mode, seq_len=seq_len)
    assert _measure(model, idx, backward=False) == 3 * count.forward
    model.zero_grad()
    assert _measure(model, idx, backward=True) == 3 * count.training


def test_terms_and_ratio():
    cfg = GPTConfig(block_size=64, num_layers=2, dim=64)
    std, sep = forward_flops(cfg, mode="standard"), forward_flops(cfg, mode="separated")
    # interleaving doubles the linear terms, quadruples attention, keeps the head
    assert sep.qkv == 2 * std.qkv and sep.mlp == 2 * std.mlp
    assert sep.attn_scores == 4 * std.attn_scores and sep.head == std.head
    assert sep.forward == forward_flops(cfg, mode="pause").forward
    assert 2.0 < flop_ratio(cfg) < 2.5
    assert sep.training_per_token == 3 * sep.forward / 64
