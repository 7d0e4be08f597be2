"""Tests of bros's low-rank subspace step (no full gradient of a sketched weight is formed),
the resident-peak measurement and the Task 2 step-size tuning."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from neurips26.common.models import MLPClassifier
from neurips26.common.torch import seeded
from neurips26.papers.bros import bros_step, draw_subspace, init_state
from neurips26.papers.bros import experiment as E
from neurips26.papers.bros.bilevel import SubspaceParam, grad_y, second_order, squared_norm
from neurips26.papers.bros.memory import PeakRSS, _rss_child, peak_rss
from neurips26.papers.bros.tasks import (
    QuadraticBilevel,
    hyper_cleaning_batches,
    hyper_cleaning_problem,
)


def _mlp(hidden=(40, 24), dim=12, n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.normal(size=(n, dim)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 3, n))
    with seeded(seed):
        model = MLPClassifier(dim, hidden, 3)
    return hyper_cleaning_problem(model, x[:50], y[:50], x[50:], y[50:], mu=1e-2)


def _run(prob, batches, steps, **kw):
    state = init_state(prob)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        state = bros_step(state, prob, next(batches), generator=gen, **kw)
    return state


@pytest.mark.parametrize("probes", [1, 2])
def test_factored_step_equals_the_projected_step(probes):
    prob = _mlp()
    kw = {"lr_x": 1.0, "lr_y": 0.1, "lr_z": 0.1, "rank_fraction": 0.25, "probes": probes}
    a = _run(prob, hyper_cleaning_batches(50, 10, 8, seed=0), 5, subspace="factor", **kw)
    b = _run(prob, hyper_cleaning_batches(50, 10, 8, seed=0), 5, subspace="project", **kw)
    assert float(a.x.abs().max()) > 1e-5
    torch.testing.assert_close(a.x, b.x, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(a.h, b.h, rtol=1e-5, atol=1e-7)
    for n in a.y:
        torch.testing.assert_close(a.y[n], b.y[n], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a.z[n], b.z[n], rtol=1e-5, atol=1e-6)


def test_factored_step_equals_the_projected_step_on_the_quadratic_float64():
    q = QuadraticBilevel.random(dim_x=4, dim_y=20, seed=0)
    prob = q.problem()
    kw = {"lr_x": 0.1, "lr_y": 0.1, "lr_z": 0.1, "rank_fraction": 0.25, "sketch_vectors": True}
    a = _run(prob, q.batches(4, seed=0), 5, subspace="factor", **kw)
    b = _run(prob, q.batches(4, seed=0), 5, subspace="project", **kw)
    assert float(a.z["y"].abs().max()) > 1e-6
    torch.testing.assert_close(a.z["y"], b.z["y"], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(a.x, b.x, rtol=1e-10, atol=1e-12)


class _FullShapes(TorchDispatchMode):
    """Records every op whose output has the shape of a sketched weight (views excluded)."""

    def __init__(self, shapes):
        super().__init__()
        self.shapes, self.hits = shapes, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func)
        if not any(v in name for v in ("view", "detach", "aten.t.", "alias", "expand")):
            for o in out if isinstance(out, tuple | list) else [out]:
                if isinstance(o, torch.Tensor) and tuple(o.shape) in self.shapes:
                    self.hits.append(name)
        return out


@pytest.mark.parametrize("factored", [True, False])
def test_no_full_size_gradient_is_formed_under_the_factorisation(factored):
    prob = _mlp()
    state = init_state(prob)
    gen = torch.Generator().manual_seed(0)
    s = draw_subspace(state.y, 0.25, generator=gen)
    t = draw_subspace(state.y, 0.25, generator=gen)
    shapes = {tuple(v.shape) for k, v in state.y.items() if s[k] is not None}
    assert len(shapes) == 3
    xi, phi, psi = next(hyper_cleaning_batches(50, 10, 8, seed=0))
    with _FullShapes(shapes) as rec:
        grad_y(prob.upper_loss, state.x, state.y, xi, s, name="upper_loss", with_x=True,
               factored=factored)  # fmt: skip
        grad_y(prob.lower_loss, state.x, state.y, phi, s, name="lower_loss", factored=factored)
        second_order(prob, state.x, state.y, state.z, psi, s, t, factored=factored)
    if factored:
        assert rec.hits == []
    else:  # the projecting reference forms (m, n) gradients: the recorder can see them
        assert any("mm" in h for h in rec.hits)


def test_subspace_param_evaluates_like_the_dense_tensor():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 4, generator=g, dtype=torch.float64)
    p = torch.randn(6, 2, generator=g, dtype=torch.float64)
    q = torch.randn(6, 3, generator=g, dtype=torch.float64)
    u = torch.randn(2, 4, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    a = torch.randn(5, 4, generator=g, dtype=torch.float64)
    b = torch.randn(4, 2, generator=g, dtype=torch.float64)
    c = torch.randn(3, 6, generator=g, dtype=torch.float64)
    sp = SubspaceParam.wrap(w, ((p, u), (q, v)))
    dense = w + p @ u + q @ v
    assert sp.shape == (6, 4) and sp.dtype == torch.float64
    pairs = [(torch.nn.functional.linear(a, sp), torch.nn.functional.linear(a, dense)),
             (sp @ b, dense @ b), (c @ sp, c @ dense), (torch.tanh(sp), torch.tanh(dense)),
             (sp.T, dense.T), (squared_norm(sp), dense.pow(2).sum())]  # fmt: skip
    for got, want in pairs:
        assert not isinstance(got, SubspaceParam)
        torch.testing.assert_close(got, want)
        gu, gv = torch.autograd.grad(got.sum(), (u, v))
        wu, wv = torch.autograd.grad(want.sum(), (u, v), retain_graph=True)
        torch.testing.assert_close(gu, wu)
        torch.testing.assert_close(gv, wv)
    with pytest.raises(TypeError, match=r"t must be a torch\.Tensor"):
        squared_norm([1.0])


def test_subspace_argument_is_checked():
    prob = _mlp()
    with pytest.raises(ValueError, match="subspace"):
        bros_step(init_state(prob), prob, next(hyper_cleaning_batches(50, 10, 8, seed=0)),
                  generator=torch.Generator(), subspace="dense")  # fmt: skip


@pytest.mark.slow
def test_rss_child_reports_a_peak_above_its_baseline():
    out = _rss_child("bros", 16, 8, 1, 0.25, 0.1, 40, 10, 1e-4, 0)
    assert out["peak_kib"] >= out["baseline_kib"] > 0
    rep = PeakRSS(out["baseline_kib"], out["peak_kib"])
    assert rep.step_peak_kib == out["peak_kib"] - out["baseline_kib"]


def test_peak_rss_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="method"):
        peak_rss("adam", 8)
    with pytest.raises(ValueError, match="width"):
        peak_rss("bros", 0)
    with pytest.raises(ValueError, match="rank_fraction"):
        peak_rss("bros", 8, rank_fraction=1.5)
    with pytest.raises(ValueError, match="timeout"):
        peak_rss("bros", 8, timeout=0)


@pytest.mark.slow
def test_peak_rss_runs_one_fresh_process_per_method():
    reps = {m: peak_rss(m, 256, batch=16, steps=1, num_train=64, num_val=16)
            for m in ("ma_soba", "bros")}  # fmt: skip
    for r in reps.values():
        assert r.peak_kib >= r.baseline_kib > 0


def test_quadratic_tuning_picks_the_best_scale_and_scores_divergence_as_inf():
    cfg = dataclasses.replace(E.TIERS["smoke"], quad_iter=60, quad_scales=(0.5, 1.0, 1e5))
    q = QuadraticBilevel.random(dim_x=cfg.dim_x, dim_y=cfg.dim_y, seed=cfg.seed)
    best, scores = E._quad_tune(q, "ma_soba", cfg)
    assert scores[1e5] == math.inf
    assert best == min(scores, key=scores.get) and best in (0.5, 1.0)
    # the tuning seed is not an evaluation seed
    tuned = E._quad_run(q, "ma_soba", cfg.seed + cfg.num_seeds, cfg, best)["curve"][-1]
    assert math.log(tuned) == pytest.approx(scores[best])


def test_single_probe_z_settles_at_the_biased_fixed_point():
    """The premise of the single-probe floor diagnostic (``_single_probe_floor``): with x
    held still, single-probe BROS's z averages to ``A~^{-1} (y* - c)`` with ``A~`` the
    single-probe expectation, not to the unbiased ``A^{-1} (y* - c)``."""
    from neurips26.common.torch import make_generator
    from neurips26.papers.bros import single_probe_expectation

    q = QuadraticBilevel.random(dim_x=2, dim_y=8, seed=3)
    prob, gen = q.problem(), make_generator(0)
    state, batches = init_state(prob), q.batches(len(q.rows), seed=0)
    zs = []
    for k in range(3000):
        state = bros_step(state, prob, next(batches), lr_x=1e-12, lr_y=0.2, lr_z=0.02,
                          theta=0.1, rank_fraction=0.25, probes=1, generator=gen,
                          sketch_vectors=True)  # fmt: skip
        if k >= 500:
            zs.append(state.z["y"].numpy().copy())
    z = np.mean(zs, axis=0)
    a, c = q.hessian, q.targets.mean(0)  # y* = A^{-1} B x = 0 at x = 0
    biased = np.linalg.solve(single_probe_expectation(torch.as_tensor(a), 2).numpy(), -c)
    unbiased = np.linalg.solve(a, -c)
    assert np.linalg.norm(z - biased) < 0.06 * np.linalg.norm(biased)
    assert np.linalg.norm(z - unbiased) > 0.3 * np.linalg.norm(unbiased)


def test_single_probe_floor_shrinks_with_the_rank():
    q = QuadraticBilevel.random(dim_x=10, dim_y=50, seed=0)
    low, high = E._single_probe_floor(q, 0.125), E._single_probe_floor(q, 1.0)
    assert 0 < high < low and math.isfinite(low)


def test_a_state_changed_in_place_after_a_step_is_checked_again():
    """Steps skip the finiteness pass over a state they returned themselves, but not once
    a tensor of it was modified in place or replaced."""
    from neurips26.common.torch import make_generator

    q = QuadraticBilevel.random(dim_x=2, dim_y=8, seed=0)
    prob, gen, batches = q.problem(), make_generator(0), q.batches(4, seed=0)
    state = bros_step(init_state(prob), prob, next(batches), generator=gen)
    state.y["y"][0] = float("nan")
    with pytest.raises(ValueError, match=r"state\.y"):
        bros_step(state, prob, next(batches), generator=gen)
    state = bros_step(init_state(prob), prob, next(batches), generator=gen)
    state.z["y"] = torch.full_like(state.z["y"], float("inf"))
    with pytest.raises(ValueError, match=r"state\.z"):
        bros_step(state, prob, next(batches), generator=gen)
