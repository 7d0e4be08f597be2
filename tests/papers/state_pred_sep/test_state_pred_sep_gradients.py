"""The gradient-locality analysis."""

import numpy as np
import torch
import torch.nn.functional as F

from neurips26.common.models import GPT, GPTConfig
from neurips26.common.torch import seeded
from neurips26.papers.state_pred_sep import SPSTransformer, gradient_sources

CFG = GPTConfig(block_size=10, num_layers=2, num_heads=2, dim=16)
IDX = torch.randint(0, 256, (2, 10), generator=torch.Generator().manual_seed(0))
TGT = torch.randint(0, 256, (2, 10), generator=torch.Generator().manual_seed(1))


def _models():
    with seeded(0):
        gpt = GPT(CFG)
    with seeded(0):
        sep = SPSTransformer(CFG)
    with seeded(0):
        pause = SPSTransformer(CFG, mode="pause")
    return gpt, sep, pause


def _brute_force(model):
    """g_same and g_total at the state steps: the blocks run by hand, one backward per loss."""
    states = [model.embed(IDX)]
    h = states[0]
    for layer in range(CFG.num_layers):
        h, _ = model._block(layer, h, "both", attn_mask=model.mask[:20, :20])
        states.append(h)
    logits = model.head(h[:, 1::2])
    losses = F.cross_entropy(logits.reshape(-1, 256), TGT.reshape(-1), reduction="none").view(2, 10)
    total = torch.autograd.grad(losses.sum(), states[:-1], retain_graph=True)
    same = [torch.zeros(2, 10, 16) for _ in total]
    for i in range(10):
        g = torch.autograd.grad(losses[:, i].sum(), states[:-1], retain_graph=True)
        for layer in range(CFG.num_layers):
            same[layer][:, i] = g[layer][:, 2 * i]
    return [t[:, 0::2] for t in total], same


def test_separated_state_stream_has_no_local_gradient():
    gpt, sep, pause = _models()
    g_std, g_sep, g_pause = (gradient_sources(m, IDX, TGT) for m in (gpt, sep, pause))
    assert g_std.mode == "standard" and g_sep.mode == "separated"
    assert np.all(g_sep.local_frac == 0) and g_sep.readout_grad_norm == 0.0
    assert g_pause.readout_grad_norm == 0.0
    assert g_std.readout_grad_norm > 0 and np.all(g_std.local_frac > 0.1)
    # in the standard model the local loss is the same-index loss
    assert np.allclose(g_std.local_frac, g_std.same_frac)
    # the separated model's state still feeds the next-token loss, through rho_i's attention
    assert np.all(g_sep.same_frac > 0) and np.all(g_sep.same_frac < 1)
    assert g_sep.local_frac.shape == g_sep.cross_cos.shape == (CFG.num_layers,)


def test_same_frac_matches_brute_force():
    _, sep, _ = _models()
    total, same = _brute_force(sep)
    expect = []
    for g_tot, g_same in zip(total, same, strict=True):
        n_same, n_fut = float(g_same.norm()), float((g_tot - g_same).norm())
        expect.append(n_same / (n_same + n_fut))
    assert np.allclose(gradient_sources(sep, IDX, TGT).same_frac, expect, rtol=1e-5)


def test_single_token_has_no_future_gradient():
    gpt, sep, _ = _models()
    for model in (gpt, sep):
        g = gradient_sources(model, IDX[:, :1], TGT[:, :1])
        assert np.allclose(g.same_frac, 1.0)
