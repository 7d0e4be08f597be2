"""wisp: oracles for the pruning criteria, SparseGPT/Whisper and the sequential protocol."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from neurips26.common.models.llm import TINY_ARCHS, decoder_layers, perplexity, tiny_causal_lm
from neurips26.papers.wisp import (
    PROJECTIONS,
    block_linears,
    block_perplexity,
    capture_block_inputs,
    input_hessian,
    make_pairs,
    mask_from_scores,
    prune_linear,
    prune_model,
    sparsegpt_prune,
    wanda_scores,
    whisper_hessian,
    wisp_plus_scores,
    wisp_scores,
)

D = torch.float64


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=D)


def _layer(d_out=6, d_in=12, n=40, seed=0):
    # Correlated inputs, so the OBS updates matter.
    A = _rand(d_in, d_in, seed=seed + 1)
    X = _rand(n, d_in, seed=seed) @ A
    return _rand(d_out, d_in, seed=seed + 2), X


# ---------------------------------------------------------------- naive references


def naive_obs(W, H, *, sparsity=None, mask=None, nm=None, damp=0.01):
    """Sequential OBS that re-inverts the Hessian of the still-free columns at every column.

    Column j: F = {j, ..., d-1}; Hinv = inv(H[F, F]); the weights of column j chosen for
    pruning are removed with the OBS update w_F -= w_j / Hinv[0, 0] * Hinv[:, 0]; then j is
    frozen. Mask choice (when no mask is given) follows SparseGPT at block size 1: the
    lowest saliencies w_j^2 / Hinv[0, 0] among the rows (unstructured), or at the start of
    each N:M group the M - N lowest w^2 / [inv(H[j':, j'])]_00 of the group per row.
    """
    W = W.clone()
    d_out, d = W.shape
    H = H.clone()
    H += damp * torch.diag(H).mean() * torch.eye(d, dtype=H.dtype)
    out = torch.zeros(d_out, d, dtype=torch.bool) if mask is None else mask.clone()
    total = None if sparsity is None else sparsity * d_out * d
    for j in range(d):
        Hinv = torch.linalg.inv(H[j:, j:])
        if mask is None and nm is None:
            k = round(total * (j + 1) / d) - round(total * j / d)
            sal = W[:, j] ** 2 / Hinv[0, 0]
            out[torch.argsort(sal, stable=True)[:k], j] = True
        if mask is None and nm is not None and j % nm[1] == 0:
            n, m = nm
            diag = torch.stack([torch.linalg.inv(H[jj:, jj:])[0, 0] for jj in range(j, j + m)])
            sal = W[:, j : j + m] ** 2 / diag[None, :]
            low = torch.argsort(sal, dim=1, stable=True)[:, : m - n]
            out[:, j : j + m].scatter_(1, low, True)
        for r in torch.nonzero(out[:, j]).flatten():
            W[r, j:] -= W[r, j] / Hinv[0, 0] * Hinv[:, 0]
            W[r, j] = 0.0
    return W, out


# ---------------------------------------------------------------- SparseGPT oracles


def test_sparsegpt_block_size_1_equals_naive_obs():
    W, X = _layer()
    H = X.T @ X
    res = sparsegpt_prune(W, H, sparsity=0.5, block_size=1)
    ref_W, ref_mask = naive_obs(W, H, sparsity=0.5)
    assert torch.equal(res.mask, ref_mask)
    torch.testing.assert_close(res.weight, ref_W, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("block_size", [1, 3, 5, 12, 128])
def test_lazy_blocks_equal_naive_obs_for_a_fixed_mask(block_size):
    W, X = _layer(seed=3)
    H = X.T @ X
    mask = mask_from_scores(wanda_scores(W, X), sparsity=0.6)
    res = sparsegpt_prune(W, H, block_size=block_size, mask=mask)
    ref_W, _ = naive_obs(W, H, mask=mask)
    assert torch.equal(res.mask, mask)
    torch.testing.assert_close(res.weight, ref_W, atol=1e-10, rtol=1e-10)


def test_sparsegpt_nm_equals_naive_obs():
    W, X = _layer(d_in=16, seed=5)
    H = X.T @ X
    res = sparsegpt_prune(W, H, sparsity="2:4", block_size=4)
    ref_W, ref_mask = naive_obs(W, H, nm=(2, 4))
    assert torch.equal(res.mask, ref_mask)
    torch.testing.assert_close(res.weight, ref_W, atol=1e-10, rtol=1e-10)
    assert (res.mask.reshape(6, 4, 4).sum(2) == 2).all()


def _optimal_error(W, H, mask):
    """The exact least-squares optimum with the mask's weights at zero, row by row."""
    total = 0.0
    for i in range(W.shape[0]):
        keep = ~mask[i]
        w = W[i]
        # minimise (v - w) H (v - w)^T with v = 0 off keep: v_K = H_KK^-1 H_K: w
        v = torch.zeros_like(w)
        v[keep] = torch.linalg.solve(H[keep][:, keep], H[keep] @ w)
        total += float((v - w) @ H @ (v - w))
    return total


def test_sparsegpt_never_worse_than_magnitude_on_its_own_mask_budget():
    for seed in range(5):
        W = _rand(6, 12, seed=seed)
        X = _rand(200, 12, seed=seed + 1) + 0.5 * _rand(200, 1, seed=seed + 2)
        H = X.T @ X
        mag = prune_linear(W, X, method="magnitude", sparsity=0.5)
        # OBS updates on magnitude's own mask: never worse than zeroing it
        on_mag = sparsegpt_prune(W, H, mask=mag.mask, damp=1e-6)
        assert torch.equal(on_mag.mask, mag.mask)
        assert on_mag.error <= mag.error * len(X) * (1 + 1e-9)  # prune_linear's is per token
        assert _optimal_error(W, H, mag.mask) <= on_mag.error * (1 + 1e-9)
        sg = sparsegpt_prune(W, H, sparsity=0.5, damp=1e-6)
        assert int(sg.mask.sum()) == int(mag.mask.sum())
        assert sg.error <= mag.error * len(X) * (1 + 1e-9)
        # and the OBS update beats zeroing the same mask
        zeroed = W.masked_fill(sg.mask, 0.0) - W
        assert sg.error <= float(torch.einsum("ij,jk,ik->", zeroed, H, zeroed)) + 1e-9


def test_sparsegpt_is_invariant_to_the_scale_of_H_and_keeps_W_at_sparsity_0():
    W, X = _layer()
    H = X.T @ X
    a = sparsegpt_prune(W, H, sparsity=0.6)
    b = sparsegpt_prune(W, 37.0 * H, sparsity=0.6)
    assert torch.equal(a.mask, b.mask)
    torch.testing.assert_close(a.weight, b.weight)
    assert torch.equal(sparsegpt_prune(W, H, sparsity=0.0).weight, W)


def test_sparsegpt_refuses_singular_hessian():
    W = _rand(3, 4)
    with pytest.raises(ValueError, match="H"):
        sparsegpt_prune(W, torch.zeros(4, 4, dtype=D) - torch.eye(4, dtype=D), damp=0.0)


# ---------------------------------------------------------------- Whisper


def test_whisper_reduces_to_sparsegpt():
    W, X = _layer(seed=2)
    dX = torch.zeros(5, X.shape[1], dtype=D)
    Hw = whisper_hessian(X, dX, lam=1.0)
    torch.testing.assert_close(Hw, input_hessian(X))
    a = sparsegpt_prune(W, Hw, sparsity=0.5)
    b = sparsegpt_prune(W, X.T @ X, sparsity=0.5)
    assert torch.equal(a.mask, b.mask)
    torch.testing.assert_close(a.weight, b.weight)
    # lam -> inf: the same masks as SparseGPT with real differences
    dX = make_pairs(X).differences(X)
    c = sparsegpt_prune(W, whisper_hessian(X, dX, lam=1e8), sparsity=0.5)
    assert torch.equal(c.mask, b.mask)


def test_whisper_hessian_formula():
    X, dX = _rand(7, 3), _rand(4, 3, seed=1)
    ref = sum(torch.outer(d, d) for d in dX) / 4 + 0.2 * sum(torch.outer(x, x) for x in X) / 7
    torch.testing.assert_close(whisper_hessian(X, dX, lam=0.2), ref)


def test_whisper_preserves_differences_better_than_sparsegpt():
    # Whisper minimises the difference objective: on it, it must beat SparseGPT.
    for seed in range(3):
        W, X = _layer(d_out=8, d_in=16, n=200, seed=seed)
        X = X + 5.0 * _rand(1, 16, seed=seed + 9)  # a large common mean
        dX = make_pairs(X).differences(X)
        Hd = dX.T @ dX
        wh = sparsegpt_prune(W, whisper_hessian(X, dX, lam=0.0), sparsity=0.5)
        sg = sparsegpt_prune(W, X.T @ X, sparsity=0.5)

        def derr(r, W=W, Hd=Hd):
            dW = r.weight - W
            return float(torch.einsum("ij,jk,ik->", dW, Hd, dW))

        assert derr(wh) < derr(sg)


# ---------------------------------------------------------------- scores and masks


def test_wanda_scores_match_explicit_loops():
    W, X = _layer(d_out=3, d_in=5, n=7)
    S = wanda_scores(W, X)
    for i in range(3):
        for j in range(5):
            ref = abs(float(W[i, j])) * float(np.sqrt(sum(float(X[n, j]) ** 2 for n in range(7))))
            assert abs(float(S[i, j]) - ref) < 1e-12


def test_wisp_plus_matches_explicit_loops():
    W, X = _layer(d_out=3, d_in=5, n=20)
    dX = make_pairs(X, pairing="random").differences(X)
    S = wisp_plus_scores(W, dX, top_frac=0.25)
    P = len(dX)
    k = int(np.ceil(0.25 * P))
    for i in range(3):
        sep = [abs(float(W[i] @ dX[p])) for p in range(P)]
        top = np.argsort(sep)[::-1][:k]
        for j in range(5):
            ref = abs(float(W[i, j])) * np.sqrt(sum(float(dX[p, j]) ** 2 for p in top))
            assert abs(float(S[i, j]) - ref) < 1e-10
    torch.testing.assert_close(wisp_plus_scores(W, dX, top_frac=1.0), wisp_scores(W, dX))


def test_random_pairs_wisp_ranks_like_centred_wanda():
    # E ||x_a - x_b||^2 = 2 Var: Wisp with random pairs ~ Wanda on mean-centred inputs.
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20000, 16, generator=g, dtype=D) * torch.linspace(0.2, 3, 16, dtype=D)
    X = X + torch.linspace(-4, 4, 16, dtype=D)  # a mean Wanda sees and Wisp does not
    W = torch.randn(8, 16, generator=g, dtype=D)
    wisp = wisp_scores(W, make_pairs(X, pairing="random", seed=1).differences(X))
    centred = wanda_scores(W, X - X.mean(0))
    assert spearmanr(wisp.flatten(), centred.flatten()).statistic > 0.99
    assert spearmanr(wisp.flatten(), wanda_scores(W, X).flatten()).statistic < 0.95


def test_masks_exact_per_row_and_nm():
    S = _rand(5, 16).abs()
    for s in (0.5, 0.6, 0.7):
        m = mask_from_scores(S, sparsity=s)
        assert (m.sum(1) == int(np.floor(s * 16))).all()
        # the pruned entries are the lowest of their row
        assert (S[m].reshape(5, -1).max(1).values <= S[~m].reshape(5, -1).min(1).values).all()
    for n, mm in ((2, 4), (4, 8)):
        m = mask_from_scores(S, sparsity=f"{n}:{mm}")
        assert (m.reshape(5, -1, mm).sum(2) == mm - n).all()
    assert not mask_from_scores(S, sparsity=0.0).any()
    r = prune_linear(_rand(5, 16), _rand(9, 16), method="wanda", sparsity=0.0)
    assert torch.equal(r.weight, _rand(5, 16))
    with pytest.raises(ValueError, match="sparsity"):
        mask_from_scores(_rand(5, 6).abs(), sparsity="2:4")
    with pytest.raises(ValueError, match="sparsity"):
        mask_from_scores(S, sparsity=1.0)


def test_pairs_knn_random_adjacent():
    X = _rand(30, 4)
    p = make_pairs(X)
    assert (p.a < p.b).all() and len(set(zip(p.a.tolist(), p.b.tolist(), strict=True))) == len(p)
    Xn = X / X.norm(dim=1, keepdim=True)
    sim = Xn @ Xn.T
    sim.fill_diagonal_(-2)
    ref = {tuple(sorted((i, int(sim[i].argmax())))) for i in range(30)}
    assert set(zip(p.a.tolist(), p.b.tolist(), strict=True)) == ref
    adj = make_pairs(_rand(3, 5, 4), pairing="adjacent")
    assert len(adj) == 3 * 4 and ((adj.b - adj.a) == 1).all() and not ((adj.b % 5) == 0).any()
    r1, r2 = make_pairs(X, pairing="random", seed=4), make_pairs(X, pairing="random", seed=4)
    assert torch.equal(r1.a, r2.a) and torch.equal(r1.b, r2.b) and (r1.a != r1.b).all()
    with pytest.raises(ValueError, match="X"):
        make_pairs(_rand(1, 4))


# ---------------------------------------------------------------- the sequential protocol


def _ids(b=3, t=12, seed=0):
    return torch.randint(0, 256, (b, t), generator=torch.Generator().manual_seed(seed))


def test_hooks_capture_the_inputs_recomputed_by_hand():
    m = tiny_causal_lm(seed=1)
    ids = _ids()
    cap = capture_block_inputs(m, ids, start=0)
    emb = m.model.embed_tokens(ids)
    torch.testing.assert_close(cap.hidden, emb)
    # block 0's MLP input by hand: residual after attention, RMS-normed
    blk = decoder_layers(m)[0]
    seen = {}
    h = blk.mlp.gate_proj.register_forward_hook(lambda mod, a, o: seen.update(x=a[0]))
    m(input_ids=ids)
    h.remove()
    attn = blk.self_attn(blk.input_layernorm(emb), **{k: v for k, v in cap.kwargs[0].items()
                                                      if k != "use_cache"})[0]  # fmt: skip
    torch.testing.assert_close(seen["x"], blk.post_attention_layernorm(emb + attn))


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_block_perplexity_equals_full_model(arch):
    m = tiny_causal_lm(arch, seed=2)
    ids = _ids(2, 20)
    full = np.exp(np.mean([np.log(perplexity(m, row, window=20)) for row in ids]))
    for start in (0, 1):
        ppl = block_perplexity(m, capture_block_inputs(m, ids, start=start))
        assert abs(ppl - full) < 1e-4 * full


def test_prune_model_is_sequential_and_reuses_the_capture():
    m = tiny_causal_lm(seed=3)
    ids = _ids(4, 16)
    dense = {k: v.clone() for k, v in m.state_dict().items()}
    rep = prune_model(m, ids, method="wanda", sparsity=0.5)
    assert len(rep.layers) == 2 * 7 and abs(rep.mean_sparsity - 0.5) < 1e-9
    pruned = {k: v.clone() for k, v in m.state_dict().items()}
    # by hand: layer 1's calibration inputs are the outputs of the PRUNED layer 0
    m.load_state_dict(dense)
    ref = tiny_causal_lm(seed=3)
    ref.load_state_dict(dense)
    blocks = decoder_layers(ref)
    cap = capture_block_inputs(ref, ids)
    seen = {}
    h0 = blocks[0].mlp.up_proj.register_forward_hook(lambda mod, a, o: seen.update(x=a[0]))
    blocks[0](cap.hidden, **cap.kwargs[0])
    h0.remove()
    W = blocks[0].mlp.up_proj.weight.data
    exp = W.masked_fill(mask_from_scores(wanda_scores(W, seen["x"].reshape(-1, 64)),
                                         sparsity=0.5), 0)  # fmt: skip
    torch.testing.assert_close(pruned["model.layers.0.mlp.up_proj.weight"], exp)
    # a reused capture gives the same pruned model as pruning from the ids
    prune_model(m, capture_block_inputs(m, ids), method="wanda", sparsity=0.5)
    for k, v in m.state_dict().items():
        torch.testing.assert_close(v, pruned[k])
    # layer 1 really saw the pruned layer 0: pruning it from dense-model inputs differs
    m.load_state_dict(dense)
    prune_model(m, capture_block_inputs(m, ids, start=1), method="wanda", sparsity=0.5)
    assert not torch.equal(m.state_dict()["model.layers.1.mlp.down_proj.weight"],
                           pruned["model.layers.1.mlp.down_proj.weight"])  # fmt: skip


@pytest.mark.parametrize("method", ["magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus",
                                    "whisper"])  # fmt: skip
@pytest.mark.parametrize("sparsity", [0.6, "2:4"])
def test_prune_model_every_method_and_pattern(method, sparsity):
    m = tiny_causal_lm(seed=4)
    rep = prune_model(m, _ids(2, 16), method=method, sparsity=sparsity, block_size=16,
                      diagnostics=True)  # fmt: skip
    for r in rep.layers:
        assert abs(r.sparsity - (0.5 if sparsity == "2:4" else 0.6)) < 0.01
        assert np.isfinite(r.recon_error) and np.isfinite(r.diff_error)
    for name, lin in block_linears(decoder_layers(m)[0]).items():
        z = lin.weight == 0
        if sparsity == "2:4":
            assert (z.reshape(lin.out_features, -1, 4).sum(2) >= 2).all(), name


def test_difference_layers_and_projections():
    m = tiny_causal_lm(seed=5)
    rep = prune_model(m, _ids(2, 16), method="whisper", sparsity=0.5,
                      difference_layers=("gate", "up"), block_size=16)  # fmt: skip
    used = {(r.projection, r.method) for r in rep.layers}
    assert ("gate", "whisper") in used and ("q", "sparsegpt") in used
    m2 = tiny_causal_lm(seed=5)
    rep2 = prune_model(m2, _ids(2, 16), method="wanda", sparsity=0.5, projections=("gate", "up"))
    assert {r.projection for r in rep2.layers} == {"gate", "up"}
    assert float((decoder_layers(m2)[0].self_attn.q_proj.weight == 0).float().mean()) < 0.01


def test_model_without_linears_and_nan_activations_are_refused():
    m = tiny_causal_lm(seed=6)
    decoder_layers(m)[1].mlp.gate_proj = torch.nn.Identity()
    with pytest.raises(ValueError, match="layer 1"):
        prune_model(m, _ids(2, 8), projections=("gate", "up"))
    m = tiny_causal_lm(seed=6)
    with torch.no_grad():
        decoder_layers(m)[1].mlp.up_proj.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="layer 1"):
        prune_model(m, _ids(2, 8), method="wanda")
    assert set(PROJECTIONS) == {"q", "k", "v", "o", "gate", "up", "down"}


def test_readme_example_runs():
    import re
    from pathlib import Path

    import neurips26.papers.wisp as pkg

    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})


def test_wisp_act_is_the_first_order_score_of_whispers_hessian_diagonal():
    """The second reading of Wisp: |W_ij| sqrt(diag(H_j)) with Whisper's Hessian at lam = 1,
    computed independently in numpy; it prunes through prune_linear like the others."""
    from neurips26.papers.wisp import wisp_act_scores

    W, X = _rand(6, 12, seed=1), _rand(40, 12, seed=2)
    dX = make_pairs(X).differences(X)
    h = np.diag(whisper_hessian(X, dX, lam=1.0).numpy())
    want = np.abs(W.numpy()) * np.sqrt(h)[None, :]
    np.testing.assert_allclose(wisp_act_scores(W, X, dX).numpy(), want, rtol=1e-12)
    res = prune_linear(W, X, method="wisp_act", sparsity=0.5)
    assert torch.equal(res.mask, mask_from_scores(wisp_act_scores(W, X, dX), sparsity=0.5))
