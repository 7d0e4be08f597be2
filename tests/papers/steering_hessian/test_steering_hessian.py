"""steering_hessian: oracles (finite differences, closed form, dense vs Lanczos), hooks,
CAA, sharp-removal properties, generation replay and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurips26.common.data.text import ByteTokenizer
from neurips26.common.models.llm import capture_residual, tiny_causal_lm
from neurips26.papers.steering_hessian import (
    BowScorer,
    SharpRemovedSteerer,
    SteeringObjective,
    adaptive_k,
    anti_steer_rate,
    behavioural_loss,
    caa_vector,
    finite_difference_hessian,
    generate_steered,
    generation_eval,
    lanczos,
    linear_softmax_hessian,
    linear_softmax_loss,
    make_contrastive_set,
    polarity_test,
    random_subspace_removal,
    sharp_removal,
    steer,
    steering_hessian,
)

ENC = ByteTokenizer()


def _encode(t):
    return [int(i) for i in ENC.encode(t)]


@pytest.fixture(scope="module")
def model64():
    """A float64 tiny LLaMA (hidden 32), for tight finite-difference comparisons."""
    return tiny_causal_lm("llama", seed=3, hidden_size=32, num_heads=4, num_kv_heads=2,
                          intermediate_size=64).double()  # fmt: skip


@pytest.fixture(scope="module")
def data():
    return make_contrastive_set("sentiment", _encode, num_items=6, rng=np.random.default_rng(0))


def _objective(model, data, positions="last", layer=0, cache_prefix=True):
    # No attention mask with the float64 model: Hugging Face's eager attention overflows
    # its float64 mask on fully padded rows (NaN); the pad bytes act as ordinary tokens.
    return SteeringObjective(model, data.prompts, data.targets, layer=layer,
                             positions=positions, cache_prefix=cache_prefix)  # fmt: skip


def _point(dim, seed=0, scale=0.5):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=dim) * scale)


# --- oracles -------------------------------------------------------------------------------


@pytest.mark.parametrize("positions", ["last", "all"])
def test_dense_hessian_equals_finite_differences(model64, data, positions):
    f = _objective(model64, data.subset([0, 1, 2]), positions=positions)
    v = _point(32)
    H = steering_hessian(f, v, method="dense")
    fd = finite_difference_hessian(f, v, step=1e-3)
    # LLaMA's RMSNorm computes in float32 even in a float64 model: float32-level noise
    scale = np.abs(H.dense).max()
    np.testing.assert_allclose(H.dense, 0.5 * (fd + fd.T), rtol=1e-3, atol=1e-4 * scale)
    assert H.asymmetry < 1e-5 * scale
    # and a wrong Hessian (e.g. missing the cross terms) would be far off
    assert np.abs(H.dense - np.diag(np.diag(H.dense))).max() > 1e-2 * scale
    assert H.num_hvp == 32


def test_lanczos_full_equals_dense_eigh(model64, data):
    f = _objective(model64, data)
    v = _point(32, seed=1)
    dense = steering_hessian(f, v, method="dense")
    lz = steering_hessian(f, v, method="lanczos", num_steps=32, seed=4)
    ref = np.linalg.eigvalsh(dense.dense)[::-1]
    np.testing.assert_allclose(lz.eigvals[:4], ref[:4], rtol=1e-5, atol=1e-9)
    # Ritz vectors span the same top eigenvectors (|cos| = 1)
    cos = np.abs(np.sum(lz.eigvecs[:, :2] * dense.eigvecs[:, :2], 0))
    np.testing.assert_allclose(cos, 1.0, atol=1e-5)


def test_short_lanczos_ritz_values_interlace(model64, data):
    f = _objective(model64, data)
    v = _point(32, seed=2)
    w = np.linalg.eigvalsh(steering_hessian(f, v, method="dense").dense)
    lz = steering_hessian(f, v, method="lanczos", num_steps=12)
    assert lz.num_hvp == 12 and len(lz.eigvals) == 12
    # Cauchy interlacing: every Ritz value lies in [lambda_min, lambda_max]
    assert lz.eigvals.max() <= w.max() + 1e-9 and lz.eigvals.min() >= w.min() - 1e-9
    # and the top Ritz value is already close to the top eigenvalue
    assert lz.eigvals[0] >= w.max() - 0.05 * (w.max() - w.min())


def test_linear_softmax_closed_form():
    rng = np.random.default_rng(0)
    W, h, y = rng.normal(size=(7, 5)), rng.normal(size=(4, 5)), np.array([0, 3, 6, 2])
    v = rng.normal(size=5)
    H = steering_hessian(linear_softmax_loss(W, h, y), torch.as_tensor(v), method="dense")
    np.testing.assert_allclose(H.dense, linear_softmax_hessian(W, h, v), atol=1e-12)
    # closed form is PSD with W's null direction (all-ones in softmax space) flat
    assert np.linalg.eigvalsh(linear_softmax_hessian(W, h, v)).min() > -1e-12


def test_lanczos_on_a_known_matrix():
    rng = np.random.default_rng(1)
    Q = np.linalg.qr(rng.normal(size=(20, 20)))[0]
    lam = np.r_[50.0, 20.0, 10.0, np.linspace(-1, 1, 17)]
    A = Q @ np.diag(lam) @ Q.T
    w, V = lanczos(lambda u: A @ u, 20, num_steps=20, seed=3)
    np.testing.assert_allclose(w[:3], [50, 20, 10], rtol=1e-10)
    np.testing.assert_allclose(V.T @ V, np.eye(20), atol=1e-10)


def test_prefix_cache_equals_full_forward(model64, data):
    v = _point(32, seed=5)
    a, b = _objective(model64, data), _objective(model64, data, cache_prefix=False)
    assert a._prefix is not None and b._prefix is None
    torch.testing.assert_close(a.log_probs(v), b.log_probs(v), rtol=1e-10, atol=1e-10)
    ga = steering_hessian(a, v, method="lanczos", num_steps=3).grad
    gb = steering_hessian(b, v, method="lanczos", num_steps=3).grad
    np.testing.assert_allclose(ga, gb, atol=1e-10)
    # repeated calls leave the cache as it was
    torch.testing.assert_close(a.log_probs(v), a.log_probs(v))


def test_log_probs_of_other_tokens_equal_an_objective_with_those_targets(model64, data):
    """``log_probs(v, others=ids)`` scores further tokens from the same forward pass: each
    column equals the objective built with that column as its targets."""
    v = _point(32, seed=6)
    a = _objective(model64, data)
    others = torch.stack([(a.targets + 1) % 256, (a.targets + 7) % 256], 1)  # (B, 2)
    both = a.log_probs(v, others=others)
    assert both.shape == (len(a.targets), 3)
    torch.testing.assert_close(both[:, 0], a.log_probs(v), rtol=0, atol=0)
    for j in range(2):
        b = SteeringObjective(a.model, a.prompts, others[:, j], layer=a.layer,
                              positions=a.positions, attention_mask=a.mask)
        torch.testing.assert_close(both[:, 1 + j], b.log_probs(v), rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="others must be 2-D"):
        a.log_probs(v, others=others[:, 0])
    with pytest.raises(ValueError, match="others must have one row per prompt"):
        a.log_probs(v, others=others[:1])
    with pytest.raises(ValueError, match="others: token ids must lie in"):
        a.log_probs(v, others=others + 10**6)
    with pytest.raises(TypeError, match="others must hold integer token ids"):
        a.log_probs(v, others=others.double())


def test_behavioural_loss_is_mean_nll(model64, data):
    v = _point(32, seed=6)
    loss = behavioural_loss(model64, data.prompts, data.targets, v, layer=1)
    with steer(model64, v, layer=1, positions="last"):
        logits = model64(input_ids=data.prompts).logits[:, -1]
    ref = -torch.log_softmax(logits, -1)[torch.arange(len(data)), data.targets].mean()
    torch.testing.assert_close(loss, ref)


# --- hooks and CAA ------------------------------------------------------------------------


def test_zero_steering_is_identity_and_hook_is_removed():
    m = tiny_causal_lm("qwen2", seed=1)
    ids = torch.tensor([[3, 4, 5, 6]])
    base = m(input_ids=ids).logits
    with steer(m, torch.zeros(64), layer=1, positions="all"):
        assert torch.equal(m(input_ids=ids).logits, base)
    with steer(m, torch.ones(64), layer=0, positions="all"):
        assert not torch.allclose(m(input_ids=ids).logits, base)
    assert torch.equal(m(input_ids=ids).logits, base)
    assert all(not blk._forward_hooks for blk in m.model.layers)


def test_steer_positions():
    m = tiny_causal_lm(seed=2)
    ids = torch.tensor([[3, 4, 5, 6]])
    v = torch.randn(64, generator=torch.Generator().manual_seed(0))
    with capture_residual(m, [0]) as base:
        m(input_ids=ids)
    for positions, rows in (("all", [0, 1, 2, 3]), ("last", [3]), (2, [2, 3])):
        # hooks run in order: the capture registered after steer sees the steered output
        with steer(m, v, layer=0, positions=positions), capture_residual(m, [0]) as seen:
            m(input_ids=ids)
        diff = (seen[0] - base[0])[0]
        changed = [i for i in range(4) if diff[i].abs().max() > 1e-6]
        assert changed == rows, positions
        torch.testing.assert_close(diff[rows], v.expand(len(rows), -1))


def test_caa_equals_explicit_loop(data):
    m = tiny_causal_lm("mistral", seed=4)
    v = caa_vector(m, data.pos_ids, data.neg_ids, layer=1, attention_mask=data.pair_mask)
    diffs = []
    for i in range(len(data)):
        keep = data.pair_mask[i].bool()
        acts = []
        for ids in (data.pos_ids[i, keep], data.neg_ids[i, keep]):
            with capture_residual(m, [1]) as st:
                m(input_ids=ids[None])
            acts.append(st[1][0, -1])
        diffs.append(acts[0] - acts[1])
    # left padding masked out: the batched vector equals the unpadded loop
    torch.testing.assert_close(v, torch.stack(diffs).mean(0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gemma"])
def test_every_layout_runs(arch, data):
    m = tiny_causal_lm(arch, seed=0)
    st = SharpRemovedSteerer(layer=1, k=2, num_steps=6).fit(
        m, data.pos_ids, data.neg_ids, data.prompts, data.targets,
        attention_mask=data.pair_mask, prompt_mask=data.mask)  # fmt: skip
    assert st.vector_.shape == (64,) and st.hessian_.num_hvp == 6
    assert np.all(np.isfinite(st.hessian_.eigvals))


# --- sharp removal --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dense_h(model64, data):
    f = _objective(model64, data)
    v = caa_vector(model64, data.pos_ids, data.neg_ids, layer=0)
    return v.double().numpy(), steering_hessian(f, v, method="dense")


def test_removal_properties(dense_h):
    v, H = dense_h
    r = sharp_removal(v, H, k=3)
    np.testing.assert_allclose(r.basis.T @ r.v_clean, 0, atol=1e-12)
    again = sharp_removal(r.v_clean, H, k=3)  # the projection is idempotent
    np.testing.assert_allclose(again.v_clean, r.v_clean, atol=1e-12)
    np.testing.assert_allclose(r.v_clean + r.sharp_part, v)
    assert r.cosine == pytest.approx(np.sqrt(1 - r.sharp_share), rel=1e-9)
    assert r.norm_reduction == pytest.approx(1 - np.sqrt(1 - r.sharp_share), rel=1e-9)
    assert r.curvature_before == pytest.approx(v @ H.dense @ v / (v @ v))
    assert np.linalg.norm(r.sharp_direction()) == pytest.approx(np.linalg.norm(v))
    zero = sharp_removal(v, H, k=0)
    np.testing.assert_array_equal(zero.v_clean, v)
    assert zero.curvature_reduction == 1.0 and zero.sharp_share == 0.0


def test_adaptive_k_and_random_control(dense_h):
    v, H = dense_h
    k = adaptive_k(H.eigvals, ratio=10.0)
    assert sharp_removal(v, H).k == k
    assert k == int(np.sum(H.eigvals > 10 * np.median(np.abs(H.eigvals))))
    rnd = random_subspace_removal(v, H, k=4, seed=1)
    np.testing.assert_allclose(rnd.basis.T @ rnd.basis, np.eye(4), atol=1e-12)
    # removing the top eigenvectors lowers v's curvature more than a random subspace does
    # when v lies mostly along the top one
    u = H.eigvecs[:, 0] * 3 + H.eigvecs[:, 10]
    assert sharp_removal(u, H, k=1).curvature_reduction > random_subspace_removal(
        u, H, k=1, seed=0).curvature_reduction


def test_lanczos_curvature_uses_exact_hvp(model64, data):
    f = _objective(model64, data)
    v = _point(32, seed=8)
    dense = steering_hessian(f, v, method="dense")
    lz = steering_hessian(f, v, method="lanczos", num_steps=5)
    u = np.random.default_rng(0).normal(size=32)
    assert lz.curvature(u) == pytest.approx(dense.curvature(u), rel=1e-8)
    with pytest.raises(ValueError, match="k"):
        sharp_removal(v, lz)  # adaptive k needs the full spectrum
    with pytest.raises(ValueError, match="k"):
        sharp_removal(v, lz, k=6)


def test_anti_steer_and_polarity(model64, data, dense_h):
    v, H = dense_h
    f = _objective(model64, data)
    zero = anti_steer_rate(f, np.zeros(32))
    assert zero.rate == 0.0 and np.all(zero.delta == 0)
    r = sharp_removal(v, H, k=2)
    a = anti_steer_rate(f, r.sharp_direction())
    p_base = f.log_probs(None).detach().exp().numpy()
    p_st = f.log_probs(torch.as_tensor(r.sharp_direction())).detach().exp().numpy()
    assert a.rate == pytest.approx(np.mean(p_st < p_base))
    pt = polarity_test(f, r)
    p0 = f.log_probs(torch.as_tensor(r.v_clean, dtype=torch.float32)).detach().exp().mean()
    assert pt.control[0, 1] == pytest.approx(p0)
    assert pt.control.shape == (2, 3) and np.all((pt.control >= 0) & (pt.control <= 1))


# --- generation ---------------------------------------------------------------------------


@pytest.mark.parametrize("positions", ["all", "last"])
def test_greedy_generation_matches_its_replay(positions):
    m = tiny_causal_lm(seed=5, vocab_size=256)
    prompts = torch.tensor([[0, 0, 10, 11, 12], [20, 21, 22, 23, 24]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    v = torch.randn(64, generator=torch.Generator().manual_seed(1)) * 2
    new = generate_steered(m, prompts, v, layer=1, positions=positions, attention_mask=mask,
                           max_new_tokens=6, temperature=0.0)  # fmt: skip
    seq = torch.cat([prompts, new], 1)
    where = "all" if positions == "all" else prompts.shape[1] - 1
    with steer(m, v, layer=1, positions=where):
        logits = m(input_ids=seq, attention_mask=torch.cat([mask, torch.ones_like(new)], 1))
    pred = logits.logits[:, prompts.shape[1] - 1: -1].argmax(-1)
    assert torch.equal(pred, new)


def test_generation_eval_kl():
    m = tiny_causal_lm(seed=6)
    prompts = torch.tensor([[5, 6, 7], [8, 9, 10]])
    v = torch.randn(64, generator=torch.Generator().manual_seed(2))
    ev = generation_eval(m, prompts, v, layer=0, max_new_tokens=5, num_samples=2, seed=3,
                         others={"zero": torch.zeros(64), "half": v / 2},
                         decode=lambda ids: ENC.decode(ids), scorer=BowScorer("sentiment").score)
    assert ev.tokens.shape == (4, 5) and len(ev.texts) == 4
    assert np.all(ev.kl_per_step["zero"] == 0)
    assert np.all(ev.kl_per_step["self"] >= 0) and ev.mean_kl() > ev.mean_kl("half") > 0
    assert 0 <= ev.behaviour <= 1 and ev.coherence_nll > 0
    again = generation_eval(m, prompts, v, layer=0, max_new_tokens=5, num_samples=2, seed=3)
    np.testing.assert_array_equal(again.tokens, ev.tokens)


def test_contrastive_set_and_scorer():
    s = make_contrastive_set("refusal", _encode, num_items=5, rng=np.random.default_rng(1))
    assert torch.equal(s.pos_ids[:, :-1], s.prompts) and torch.equal(s.neg_ids[:, :-1], s.prompts)
    assert set(s.targets.tolist()) <= {65, 66}
    assert torch.all(s.pos_ids[:, -1] != s.neg_ids[:, -1])
    sub = s.subset([1, 3])
    assert len(sub) == 2 and sub.texts == (s.texts[1], s.texts[3])
    sc = BowScorer("refusal")
    assert sc.score(["I'm sorry, I cannot help"])[0] > 0.5 > sc.score(["Sure, here you go"])[0]


# --- bad input ------------------------------------------------------------------------------


def test_bad_input(model64, data):
    m = tiny_causal_lm(seed=0)
    with pytest.raises(ValueError, match="layer"):
        caa_vector(m, data.pos_ids, data.neg_ids, layer=2)
    with pytest.raises(ValueError, match="pos_ids and neg_ids"):
        caa_vector(m, data.pos_ids, data.neg_ids[:3], layer=0)
    with pytest.raises(ValueError, match="pos_ids"):
        caa_vector(m, torch.zeros(0, 3, dtype=torch.long), torch.zeros(0, 3, dtype=torch.long),
                   layer=0)  # fmt: skip
    with pytest.raises(ValueError, match="v must have shape"):
        with steer(m, torch.zeros(5), layer=0):
            pass
    with pytest.raises(ValueError, match="target_ids"):
        SteeringObjective(m, data.prompts, torch.full((len(data),), 999), layer=0)
    with pytest.raises(ValueError, match="lanczos"):
        steering_hessian(lambda v: (v**2).sum(), torch.zeros(3000), method="dense")
    with pytest.raises(ValueError, match=r"non-finite loss.*cond 7"):
        steering_hessian(lambda v: v.sum() * float("nan"), torch.zeros(3), label="cond 7")
    with pytest.raises(ValueError, match="k"):
        sharp_removal(np.ones(4), steering_hessian(lambda v: (v**2).sum(), torch.zeros(4),
                                                   method="dense"), k=5)  # fmt: skip
    with pytest.raises(TypeError, match="model"):
        caa_vector(object(), data.pos_ids, data.neg_ids, layer=0)
    with pytest.raises(ValueError, match="model"):
        caa_vector(torch.nn.Linear(2, 2), data.pos_ids, data.neg_ids, layer=0)
    with pytest.raises(ValueError, match="activations"):
        bad = tiny_causal_lm(seed=0)
        with torch.no_grad():
            bad.model.layers[0].mlp.down_proj.weight.fill_(float("nan"))
        caa_vector(bad, data.pos_ids, data.neg_ids, layer=0)


@pytest.mark.slow
def test_smollm2_prefix_cache_and_lanczos():
    """On the real SmolLM2: cached and uncached losses agree, and Lanczos runs."""
    from neurips26.common.models.llm import load_smollm2

    model, tok = load_smollm2(attn_implementation="eager")
    model.requires_grad_(False)
    s = make_contrastive_set("sentiment", lambda t: tok(t, add_special_tokens=False).input_ids,
                             num_items=3, rng=np.random.default_rng(0),
                             pad_id=tok.pad_token_id or 0)  # fmt: skip
    v = caa_vector(model, s.pos_ids, s.neg_ids, layer=20, attention_mask=s.pair_mask) * 4
    a = SteeringObjective(model, s.prompts, s.targets, layer=20, attention_mask=s.mask)
    b = SteeringObjective(model, s.prompts, s.targets, layer=20, attention_mask=s.mask,
                          cache_prefix=False)  # fmt: skip
    torch.testing.assert_close(a.log_probs(v), b.log_probs(v), rtol=1e-4, atol=1e-4)
    H = steering_hessian(a, v, method="lanczos", num_steps=4)
    assert H.num_hvp == 4 and np.all(np.isfinite(H.eigvals))
