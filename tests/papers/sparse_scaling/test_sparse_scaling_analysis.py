"""Power-law fits, the interpolation peak and the compute-optimal frontier."""

import numpy as np
import pytest

from neurips26.papers.sparse_scaling import (
    ExponentFit,
    ScalingGrid,
    compute_optimal_frontier,
    fit_power_law,
    interpolation_peak,
)


def _grid(loss, p, t, rank=None):
    s = loss.shape[0]
    rank = np.broadcast_to(np.asarray(t, float), (s, len(t))) if rank is None else rank
    z = np.zeros_like(loss)
    return ScalingGrid(
        num_params=np.asarray(p),
        num_samples=np.asarray(t),
        loss=loss,
        train_loss=z,
        rank=z.astype(int),
        data_rank=rank,
        seen_coords=rank,
        unseen_mass=rank * 0.0,
    )


def test_power_law_exact_and_window():
    x = np.geomspace(1, 1000, 12)
    fit = fit_power_law(x, 2.0 * x**-0.7)
    assert isinstance(fit, ExponentFit)
    assert fit.exponent == pytest.approx(0.7) and fit.r2 == pytest.approx(1.0)
    assert fit.intercept == pytest.approx(np.log(2.0))
    y = np.where(x < 10, 5.0, x**-1.3)  # a kink outside the window is ignored
    assert fit_power_law(x, y, x_range=(10, 1000)).exponent == pytest.approx(1.3)


def test_power_law_bootstrap_ci_over_seeds():
    rng = np.random.default_rng(0)
    x = np.geomspace(1, 100, 8)
    y = x**-0.5 * np.exp(0.05 * rng.standard_normal((20, 8)))
    fit = fit_power_law(x, y, num_bootstrap=500)
    assert fit.ci95[0] < 0.5 < fit.ci95[1] and fit.half_width < 0.1
    assert np.isnan(fit_power_law(x, y[0]).ci95[0])  # one seed: no interval


@pytest.mark.parametrize(
    "x,y,kw,msg",
    [
        ([1, 2], [1, 2], {}, "at least 3"),
        ([1, 2, 3], [1, 0, 2], {}, "positive"),
        ([1, 2, 3], [1, np.nan, 2], {}, "finite"),
        ([1, 2, 3], [1, 2], {}, "shape"),
        ([1, 2, 3, 4], [1, 2, 3, 4], {"x_range": (3, 1)}, "lo <= hi"),
        ([1, 2, 3, 4], [1, 2, 3, 4], {"x_range": (3, 4)}, "at least 3"),
    ],
)
def test_power_law_bad_input(x, y, kw, msg):
    with pytest.raises(ValueError, match=msg):
        fit_power_law(x, y, **kw)


def test_interpolation_peak_reads_the_argmax():
    p = np.array([2, 4, 6, 8, 10, 16])
    loss = np.array([[1.0, 0.9, 5.0, 20.0, 4.0, 0.5]] * 3)[:, :, None]  # (3, 6, 1)
    pk = interpolation_peak(_grid(loss, p, [8]), sample_index=0)
    assert pk.peak_params == 8 and pk.peak_ratio_to_rank == 1.0
    assert pk.quarter_loss == 1.0 and pk.peak_over_quarter == 20.0  # r_T / 4 = 2
    with pytest.raises(ValueError, match="out of range"):
        interpolation_peak(_grid(loss, p, [8]), sample_index=1)


@pytest.mark.parametrize("a_p,a_t", [(1.0, 0.5), (1.0, 1.0)])
def test_frontier_recovers_allocation_exponents(a_p, a_t):
    # L = P^-a_P + T^-a_T on a fine grid: P* ~ C^(a_T/(a_P+a_T)), T* ~ C^(a_P/(a_P+a_T))
    p = np.unique(np.geomspace(1, 1e6, 300).astype(int))
    t = np.unique(np.geomspace(1, 1e6, 300).astype(int))
    loss = p.astype(float)[:, None] ** -a_p + t.astype(float)[None, :] ** -a_t  # (nP, nT)
    fr = compute_optimal_frontier(_grid(loss[None], p, t), num_levels=20)
    assert fr.params_exponent == pytest.approx(a_t / (a_p + a_t), abs=0.03)
    assert fr.samples_exponent == pytest.approx(a_p / (a_p + a_t), abs=0.03)
    assert np.all(fr.best_params * fr.best_samples <= fr.cost * (1 + 1e-9))


def test_frontier_bad_input():
    with pytest.raises(TypeError, match="ScalingGrid"):
        compute_optimal_frontier(np.ones((3, 3)))
    p, t = [1, 2, 4], [1, 2]
    with pytest.raises(ValueError, match="num_levels"):
        compute_optimal_frontier(_grid(np.ones((1, 3, 2)), p, t), num_levels=1)
