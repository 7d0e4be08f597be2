"""Tests of bros: oracles for the Hessian actions, the sketches, the steps and the memory."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.common.models import MLPClassifier
from neurips26.common.torch import seeded
from neurips26.papers.bros import (
    BROS,
    MASOBA,
    SOBA,
    BilevelProblem,
    FirstOrderBilevel,
    bros_step,
    cross_term,
    draw_subspace,
    first_order_step,
    hessian_action,
    init_state,
    ma_soba_step,
    measure_step_memory,
    rademacher_sketch,
    single_probe_expectation,
)
from neurips26.papers.bros import experiment as E
from neurips26.papers.bros.tasks import (
    QuadraticBilevel,
    data_mixture_problem,
    flip_labels,
    hyper_cleaning_batches,
    hyper_cleaning_problem,
)


def _quad_problem(h: torch.Tensor, c: torch.Tensor | None = None) -> BilevelProblem:
    """g = y^T H y / 2 - x^T y (with a cubic term so H depends on y), f = ||y - c||^2 / 2."""
    d = h.shape[0]
    c = torch.ones(d, dtype=h.dtype) if c is None else c
    return BilevelProblem(
        lambda x, y, b: 0.5 * ((y["y"] - c) ** 2).sum() + (x**2).sum(),
        lambda x, y, b: 0.5 * y["y"] @ (h @ y["y"]) - x @ y["y"] + 0.1 * (y["y"] ** 3).sum()
        + (x * y["y"] ** 2).sum(),
        torch.zeros(d, dtype=h.dtype), {"y": torch.zeros(d, dtype=h.dtype)})  # fmt: skip


def _spd(d: int, seed: int = 0) -> torch.Tensor:
    m = np.random.default_rng(seed).normal(size=(d, d))
    return torch.as_tensor(m @ m.T / d + np.eye(d))


def _mlp_problem(width: int = 8, n: int = 30, seed: int = 0, dim: int = 5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = rng.integers(0, 3, n)
    with seeded(seed):
        model = MLPClassifier(dim, (width,), 3, activation="tanh")
    return hyper_cleaning_problem(model, x, y, x[:10], y[:10], mu=1e-3), model


# --- exact second-order terms against torch.autograd.functional ------------------------------


def test_exact_hessian_action_matches_autograd_hessian():
    h = _spd(6)
    prob = _quad_problem(h)
    x = torch.as_tensor(np.random.default_rng(1).normal(size=6))
    y = {"y": torch.as_tensor(np.random.default_rng(2).normal(size=6))}
    v = {"y": torch.as_tensor(np.random.default_rng(3).normal(size=6))}
    full = torch.autograd.functional.hessian(lambda t: prob.lower_loss(x, {"y": t}, None), y["y"])
    got = hessian_action(prob, x, y, v, None)["y"]
    assert torch.allclose(got, full @ v["y"], atol=1e-6)


def test_exact_cross_term_matches_autograd_jacobian():
    prob = _quad_problem(_spd(5))
    x = torch.as_tensor(np.random.default_rng(1).normal(size=5))
    y = {"y": torch.as_tensor(np.random.default_rng(2).normal(size=5))}
    v = {"y": torch.as_tensor(np.random.default_rng(3).normal(size=5))}

    def grad_y(xx):
        t = y["y"].clone().requires_grad_(True)
        g = prob.lower_loss(xx, {"y": t}, None)
        return torch.autograd.grad(g, t, create_graph=True)[0]

    jac = torch.autograd.functional.jacobian(grad_y, x)  # (d_y, d_x): d grad_y g / d x
    assert torch.allclose(cross_term(prob, x, y, v, None), jac.T @ v["y"], atol=1e-6)


def test_sketched_actions_equal_the_explicit_products():
    """hessian_action / cross_term with sketches = S S^T H T T^T v and J T T^T v exactly."""
    h = _spd(7)
    prob = _quad_problem(h)
    x = torch.as_tensor(np.random.default_rng(1).normal(size=7))
    y = {"y": torch.as_tensor(np.random.default_rng(2).normal(size=7))}
    v = {"y": torch.as_tensor(np.random.default_rng(3).normal(size=7))}
    gen = torch.Generator().manual_seed(0)
    s = draw_subspace(y, 3 / 7, generator=gen, sketch_vectors=True)
    t = draw_subspace(y, 3 / 7, generator=gen, sketch_vectors=True)
    hess = torch.autograd.functional.hessian(lambda z: prob.lower_loss(x, {"y": z}, None), y["y"])
    ps, pt = s["y"], t["y"]
    want = ps @ ps.T @ hess @ pt @ pt.T @ v["y"]
    got = hessian_action(prob, x, y, v, None, sketch_s=s, sketch_t=t)["y"]
    assert torch.allclose(got, want, atol=1e-6)
    exact_j = cross_term(prob, x, y, {"y": pt @ pt.T @ v["y"]}, None)
    assert torch.allclose(cross_term(prob, x, y, v, None, sketch_t=t), exact_j, atol=1e-6)


def test_matrix_parameters_are_sketched_on_the_first_axis():
    prob, _ = _mlp_problem()
    gen = torch.Generator().manual_seed(0)
    s = draw_subspace(prob.y0, 0.25, generator=gen)
    w = "layers.0.0.weight"
    assert s[w].shape == (8, 2) and s["head.weight"].shape == (3, 1)  # P: (m, ceil(m/4))
    assert s["layers.0.0.bias"] is None


# --- the oracles of the paper's claims ---------------------------------------------------------


def _mc(prob, y, v, frac, n, probes, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        s = draw_subspace(y, frac, generator=gen, sketch_vectors=True)
        t = s if probes == 1 else draw_subspace(y, frac, generator=gen, sketch_vectors=True)
        out.append(hessian_action(prob, prob.x0, y, v, None, sketch_s=s, sketch_t=t)["y"])
    return torch.stack(out).numpy()


def _chi_z(a, target):
    se = a.std(0, ddof=1) / math.sqrt(len(a))
    d = a.shape[1]
    return (float((((a.mean(0) - target) / se) ** 2).sum()) - d) / math.sqrt(2 * d)


def test_bi_probe_monte_carlo_mean_is_the_exact_hvp():
    h = _spd(6, seed=4)
    prob = _quad_problem(h)
    y = {"y": torch.zeros(6, dtype=torch.float64)}
    v = {"y": torch.as_tensor(np.random.default_rng(5).normal(size=6))}
    exact = hessian_action(prob, prob.x0, y, v, None)["y"].numpy()
    draws = _mc(prob, y, v, 2 / 6, 3000, probes=2)
    assert abs(_chi_z(draws, exact)) <= 3.0
    single = _mc(prob, y, v, 2 / 6, 3000, probes=1, seed=1)
    assert _chi_z(single, exact) > 10.0  # the uncorrected estimate is biased
    formula = (single_probe_expectation(h, 2) @ v["y"]).numpy()
    assert abs(_chi_z(single, formula)) <= 3.0


@settings(max_examples=15, deadline=None)
@given(d=st.integers(2, 7), r=st.integers(1, 3), seed=st.integers(0, 1000))
def test_single_probe_bias_formula_over_random_spd(d, r, seed):
    """E[P P^T H P P^T] = H + (tr H I + H - 2 diag H) / r, by exact enumeration-free MC."""
    r = min(r, d)
    h = _spd(d, seed).float()
    gen = torch.Generator().manual_seed(seed)
    n = 4000
    ps = torch.stack([rademacher_sketch(d, r, generator=gen) for _ in range(n)])  # (n, d, r)
    m = ps @ ps.transpose(1, 2)  # (n, d, d)
    est = (m @ h @ m).mean(0)
    se = (m @ h @ m).std(0) / math.sqrt(n)
    want = single_probe_expectation(h, r)
    assert bool(((est - want).abs() <= 5 * se + 1e-5).all())


def test_rademacher_sketch_is_isotropic():
    gen = torch.Generator().manual_seed(0)
    ps = torch.stack([rademacher_sketch(5, 2, generator=gen) for _ in range(4000)])
    m = ps @ ps.transpose(1, 2)
    se = m.std(0) / math.sqrt(len(m))
    assert bool(((m.mean(0) - torch.eye(5)).abs() <= 5 * se + 1e-6).all())
    p = rademacher_sketch(3, 2, generator=gen, dtype=torch.float64)
    assert p.shape == (3, 2) and p.dtype == torch.float64


# --- the steps -----------------------------------------------------------------------------------


def test_soba_is_ma_soba_with_theta_one():
    prob = QuadraticBilevel.random(dim_x=3, dim_y=6, seed=0).problem()
    a = SOBA(lr_x=0.05, max_iter=20).fit(prob)
    b = MASOBA(lr_x=0.05, theta=1.0, max_iter=20).fit(prob)
    assert torch.equal(a.x_, b.x_) and torch.equal(a.z_["y"], b.z_["y"])


def test_bros_with_identity_sketches_is_ma_soba():
    prob, _ = _mlp_problem()
    it = hyper_cleaning_batches(30, 10, 8, seed=0)
    batches = [next(it) for _ in range(5)]
    s1 = s2 = init_state(prob)
    gen = torch.Generator().manual_seed(0)
    for b in batches:
        s1 = ma_soba_step(s1, prob, b, lr_x=1.0, lr_y=0.1, lr_z=0.1, theta=0.3)
        s2 = bros_step(s2, prob, b, lr_x=1.0, lr_y=0.1, lr_z=0.1, theta=0.3, rank_fraction=1.0,
                       sketch="identity", generator=gen)  # fmt: skip
    assert torch.equal(s1.x, s2.x)
    assert all(torch.equal(s1.y[k], s2.y[k]) and torch.equal(s1.z[k], s2.z[k]) for k in s1.y)


def test_z_converges_to_the_linear_system_solution_with_x_frozen():
    q = QuadraticBilevel.random(dim_x=3, dim_y=8, seed=1)
    prob = q.problem()
    state = init_state(prob)
    for _ in range(400):
        state = ma_soba_step(state, prob, (None, None, None), lr_x=1e-12, lr_y=0.3, lr_z=0.3,
                             theta=0.5)  # fmt: skip
    x = state.x.numpy()
    zstar = np.linalg.solve(q.hessian, q.lower_solution(x) - q.targets.mean(0))
    assert np.linalg.norm(state.z["y"].numpy() - zstar) <= 1e-3 * np.linalg.norm(zstar)


def test_quadratic_hypergradient_matches_finite_differences():
    q = QuadraticBilevel.random(dim_x=3, dim_y=5, seed=2)
    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-6
    fd = [(q.value(x + eps * e) - q.value(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    assert np.allclose(q.hypergradient(x), fd, atol=1e-6)


def test_penalty_gradient_is_autograd_of_the_softplus_penalty_and_quiet_at_extremes():
    import warnings

    q = QuadraticBilevel.random(dim_x=4, dim_y=5, lam=0.7, seed=1)
    x = torch.tensor([-800.0, -2.0, 0.3, 900.0], dtype=torch.float64, requires_grad=True)
    (q.lam * torch.nn.functional.softplus(x).sum()).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning from exp(800)
        got = q.penalty_gradient(x.detach().numpy())
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-15, atol=0)
    assert got[0] == 0.0 and got[-1] == q.lam
    with pytest.raises(ValueError, match="x"):
        q.penalty_gradient(np.zeros(3))
    with pytest.raises(ValueError, match="x"):
        q.penalty_gradient(np.array([np.nan, 0, 0, 0]))


def test_estimators_converge_on_the_deterministic_quadratic():
    q = QuadraticBilevel.random(dim_x=3, dim_y=8, seed=0)
    prob = q.problem()
    g0 = np.linalg.norm(q.hypergradient(np.zeros(3)))
    ma = MASOBA(lr_x=0.1, lr_y=0.3, lr_z=0.3, theta=0.5, max_iter=600).fit(prob)
    # Constant steps: BROS's probe noise does not vanish at the solution (z* != 0), so it
    # reaches a neighbourhood whose size scales with the step sizes.
    br = BROS(lr_x=0.02, lr_y=0.1, lr_z=0.02, theta=0.2, rank_fraction=0.5,
              sketch_vectors=True, max_iter=1500).fit(prob)  # fmt: skip
    assert np.linalg.norm(q.hypergradient(ma.x_.numpy())) < 1e-3 * g0
    assert np.linalg.norm(q.hypergradient(br.x_.numpy())) < 0.2 * g0
    fo = FirstOrderBilevel(lr_x=0.1, lr_y=0.3, theta=0.5, max_iter=600).fit(prob)
    assert np.linalg.norm(q.hypergradient(fo.x_.numpy())) > 1e-2 * g0  # biased surrogate
    assert ma.history_["upper_loss"].shape == (600,)


def test_bros_memory_is_smaller_on_a_wide_network():
    prob, _ = _mlp_problem(width=128, n=16, dim=128)
    b = next(hyper_cleaning_batches(16, 10, 8, seed=0))
    st0 = init_state(prob)
    ma = measure_step_memory(ma_soba_step, st0, prob, b)
    br = measure_step_memory(bros_step, st0, prob, b, generator=torch.Generator().manual_seed(0))
    assert br.grad_buffer_bytes < 0.3 * ma.grad_buffer_bytes
    assert br.total_bytes < ma.total_bytes
    assert ma.state_bytes == 4 * sum(t.numel() for t in st0.tensors())
    fo = measure_step_memory(first_order_step, st0, prob, b)
    assert fo.grad_buffer_bytes < ma.grad_buffer_bytes


def test_saved_tensor_count_is_deterministic_and_positive():
    prob, _ = _mlp_problem(width=16)
    b = next(hyper_cleaning_batches(30, 10, 8, seed=0))
    r1 = measure_step_memory(ma_soba_step, init_state(prob), prob, b)
    r2 = measure_step_memory(ma_soba_step, init_state(prob), prob, b)
    assert r1 == r2 and r1.saved_tensor_bytes_peak > 0


def test_flip_labels_flips_to_other_classes():
    y = np.arange(100) % 10
    noisy, flipped = flip_labels(y, 0.5, 10, rng=np.random.default_rng(0))
    assert flipped.sum() == 50 and (noisy[flipped] != y[flipped]).all()
    assert (noisy[~flipped] == y[~flipped]).all()


# --- bad input ---------------------------------------------------------------------------------


def test_bad_input_is_refused_naming_the_argument():
    prob = _quad_problem(_spd(3))
    st0 = init_state(prob)
    b = (None, None, None)
    gen = torch.Generator()
    with pytest.raises(ValueError, match="rank_fraction"):
        bros_step(st0, prob, b, rank_fraction=1.5, generator=gen)
    with pytest.raises(ValueError, match="probes"):
        bros_step(st0, prob, b, probes=3, generator=gen)
    with pytest.raises(ValueError, match="lr_x"):
        ma_soba_step(st0, prob, b, lr_x=0.0)
    with pytest.raises(ValueError, match="theta"):
        ma_soba_step(st0, prob, b, theta=1.5)
    with pytest.raises(ValueError, match="x0"):
        BilevelProblem(prob.upper_loss, prob.lower_loss, torch.tensor([float("nan")]),
                       prob.y0)  # fmt: skip
    with pytest.raises(ValueError, match="y0"):
        BilevelProblem(prob.upper_loss, prob.lower_loss, prob.x0,
                       {"y": torch.tensor([1.0, float("inf"), 0.0])})  # fmt: skip
    with pytest.raises(ValueError, match="data is empty"):
        MASOBA().fit(prob, [])
    with pytest.raises(ValueError, match="rank_fraction"):
        BROS(rank_fraction=0.0).fit(prob)


def test_bad_losses_are_refused_with_the_iteration():
    x0, y0 = torch.zeros(2), {"w": torch.zeros(2)}
    nonscalar = BilevelProblem(lambda x, y, b: y["w"] * 2, lambda x, y, b: (y["w"] ** 2).sum(),
                               x0, y0)  # fmt: skip
    with pytest.raises(ValueError, match="upper_loss must return a scalar at iteration 1"):
        MASOBA(max_iter=3).fit(nonscalar)
    const = BilevelProblem(lambda x, y, b: (y["w"] ** 2).sum(), lambda x, y, b: (x**2).sum(),
                           x0, y0)  # fmt: skip
    x_only = BilevelProblem(lambda x, y, b: (y["w"] ** 2).sum(),
                            lambda x, y, b: (x**2).sum() + 0 * x.sum(), x0, y0)  # fmt: skip
    for est in (BROS(max_iter=3), MASOBA(max_iter=3), SOBA(max_iter=3),
                FirstOrderBilevel(max_iter=3)):
        for prob in (const, x_only):  # a lower loss of x alone: no gradient reaches y
            with pytest.raises(ValueError, match="lower_loss does not depend on y"):
                est.fit(prob)
    nan = BilevelProblem(lambda x, y, b: (y["w"] ** 2).sum() * float("nan"),
                         lambda x, y, b: (y["w"] ** 2).sum(), x0, y0)  # fmt: skip
    with pytest.raises(ValueError, match="non-finite value at iteration 1"):
        SOBA(max_iter=3).fit(nan)


# --- the experiment --------------------------------------------------------------------------


def test_smoke_run():
    res = E.run(E.TIERS["smoke"])
    for name in ("bi_probe_z", "slope_gap", "acc_gap", "memory_ratio_total_first"):
        assert math.isfinite(res.metrics[name])
    assert res.metrics["memory_ratio_grad_w64"] < 0.5
    assert dataclasses.is_dataclass(E.TIERS["small"])
    # the controls: the first-order surrogate, MA-SOBA in single-probe BROS's place, and
    # BROS with a full-rank subspace (whose counted memory is not below MA-SOBA's)
    for name in ("slope_gap_first_order", "acc_gap_first_order", "ma_soba_over_bros_grad",
                 "memory_ratio_total_first_full_rank", "memory_ratio_total_min_full_rank"):
        assert math.isfinite(res.metrics[name]), name
    assert res.metrics["memory_ratio_total_first_full_rank"] > res.metrics[
        "memory_ratio_total_first"]
    # one seed at the smoke tier: the seed intervals are infinite, never zero-width
    assert res.intervals["slope_gap"]["hi"] == math.inf
    # the smoke tier's caps (5 and 6 iterations) stop every run before a plateau: the notes
    # name each capped method with its share of seeds
    assert res.metrics["hc_plateau_bros"] == 0.0
    capped = [n for n in res.notes if "-iteration cap" in n]
    assert len(capped) == 2 and all("bros (100% of seeds)" in n for n in capped)


# --- the data-mixture task ----------------------------------------------------------------


def _mixture(k: int = 4, n: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = rng.integers(0, 3, n)
    dom = np.arange(n) % k
    with seeded(seed):
        model = MLPClassifier(5, (8,), 3)
    return data_mixture_problem(model, x, y, dom, x[:10], y[:10], mu=0.0), model, x, y, dom


def test_data_mixture_uniform_start_is_the_plain_loss():
    """At x = 0 the weights K softmax(0) are all 1: the lower loss is the plain mean CE."""
    prob, model, x, y, _ = _mixture()
    assert prob.x0.shape == (4,) and not prob.x0.any()
    ce = torch.nn.functional.cross_entropy(model(torch.as_tensor(x)), torch.as_tensor(y))
    assert torch.allclose(prob.lower_loss(prob.x0, prob.y0, None), ce, atol=1e-6)


def test_data_mixture_one_domain_is_that_domains_loss():
    """With all the mass on domain 2 (equal-size domains) the lower loss is domain 2's mean
    CE: K pi_2 = K and the mean over all samples keeps 1/K of them."""
    prob, model, x, y, dom = _mixture()
    xk = torch.tensor([0.0, 0.0, 60.0, 0.0])
    sel = dom == 2
    ce = torch.nn.functional.cross_entropy(model(torch.as_tensor(x[sel])),
                                           torch.as_tensor(y[sel]))  # fmt: skip
    assert torch.allclose(prob.lower_loss(xk, prob.y0, None), ce, atol=1e-5)
    # and a minibatch sees the same weights: only its domain-2 samples count
    idx = torch.arange(0, 40, 2)  # domains 0 and 2
    ce_b = torch.nn.functional.cross_entropy(model(torch.as_tensor(x[2::4])),
                                             torch.as_tensor(y[2::4]), reduction="sum")
    assert torch.allclose(prob.lower_loss(xk, prob.y0, idx), 4 * ce_b / len(idx), atol=1e-5)


def test_data_mixture_refuses_bad_domains():
    _, model, x, y, dom = _mixture()
    for bad, word in ((dom[:-1], "entries"), (dom - 1, "nonnegative"),
                      (np.where(dom == 1, 0, dom), "every index")):  # fmt: skip
        with pytest.raises(ValueError, match=f"domains.*{word}"):
            data_mixture_problem(model, x, y, bad, x[:10], y[:10])


def test_mixture_run_learns_the_true_domain_on_a_tiny_problem():
    """MA-SOBA on two domains, one with its labels and one with them shifted: the
    hypergradient must move the weight onto the true-label domain (softmax(x)_0 > 1/2)."""
    cfg = E.TIERS["smoke"]
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(3, 6)) * 3
    t = rng.integers(0, 3, 300)
    x = (centers[t] + rng.normal(size=(300, 6))).astype(np.float32)
    dom = np.arange(300) % 2
    lab = np.where(dom == 0, t, (t + 1) % 3)
    with seeded(0):
        model = MLPClassifier(6, (16,), 3)
    prob = data_mixture_problem(model, x, lab, dom, x[:60], t[:60], mu=1e-4)
    state = init_state(prob)
    batches = hyper_cleaning_batches(300, 60, 32, seed=0)
    for _ in range(150):
        state = ma_soba_step(state, prob, next(batches), lr_x=0.3, lr_y=0.3, lr_z=0.1,
                             theta=cfg.theta)  # fmt: skip
    assert float(torch.softmax(state.x, 0)[0]) > 0.5
