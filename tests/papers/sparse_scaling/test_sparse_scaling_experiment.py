"""The reproduction at smoke scale, and its claims."""

import numpy as np

from neurips26.papers.sparse_scaling import experiment
from neurips26.registry import get_paper


def test_smoke_run_and_claims():
    cfg = experiment.TIERS["smoke"]
    res = experiment.run(cfg)
    m = res.metrics
    for key in (
        "a_P",
        "a_T_sparse",
        "a_T_dense",
        "unseen_fraction_of_loss",
        "peak_location_in_range_frac",
        "gd_law_r2_sparse",
        "relu_a_T_sparse",
    ):
        assert key in m and np.isfinite(m[key])
    assert set(res.figures) == {"theory_vs_simulation", "double_descent", "frontier_and_gd"}
    assert all(png.startswith(b"\x89PNG") for png in res.figures.values())
    assert res.tables["exponents"] and res.tables["double_descent_peaks"]
    paper = get_paper("sparse_scaling")
    verdicts = paper.evaluate(m, "smoke")
    assert len(verdicts) == len(paper.claims)
    small_metrics = {c.metric for c in paper.claims}
    assert small_metrics <= set(m) | {"frontier_b_minus_a_sparse", "frontier_b_minus_a_dense"}
    # the controls are measured; the ridge readout has no interpolation peak to speak of
    for key in ("peak_over_quarter_min_ridge", "gap_monotone_in_alpha_dense",
                "dense_exponent_cis_disjoint", "unseen_fraction_of_loss_dense"):
        assert key in m
    assert m["peak_over_quarter_min_ridge"] < m["peak_over_quarter_min"]
    assert "bootstrap" in res.intervals["exponent_gap_sparse"]["method"]
    # the 0/1 and fractional claims (and their controls) are not decided on one draw of
    # the seeds: each carries a bootstrap over them
    for key in ("sparse_exponent_cis_disjoint", "dense_exponent_cis_disjoint",
                "gap_monotone_in_alpha", "gap_monotone_in_alpha_dense",
                "unseen_fraction_of_loss", "unseen_fraction_of_loss_dense",
                "peak_location_in_range_frac", "relu_a_T_dense_minus_sparse"):
        iv = res.intervals[key]
        assert "bootstrap over seeds" in iv["method"] and iv["n"] > 1, key
        assert iv["lo"] <= iv["value"] <= iv["hi"], key
    # the theorem's quantities are there beside the simulation even at smoke scale
    assert m["unseen_mass_max_rel_err"] < 1.0 and np.isfinite(m["param_theory_max_rel_err"])


def test_tiers_are_consistent():
    for cfg in experiment.TIERS.values():
        assert len(cfg.under_window) == 2 and len(cfg.over_window) == 2
        assert cfg.num_params_grid[-1] <= cfg.dim
        assert list(cfg.num_samples_grid) == sorted(set(cfg.num_samples_grid))


def _toy_grid(loss_by_seed):
    loss = np.asarray(loss_by_seed, dtype=float)[:, :, None]  # (S, nP, 1)
    s = loss.shape[0]
    return experiment.ScalingGrid(
        num_params=np.array([1, 2, 4, 8]),
        num_samples=np.array([8]),
        loss=loss,
        train_loss=np.zeros_like(loss),
        rank=np.ones_like(loss),
        data_rank=np.full((s, 1), 8.0),
        seen_coords=np.ones((s, 1)),
        unseen_mass=np.zeros((s, 1)),
    )


def test_peak_height_interval_resamples_seeds():
    # identical seeds: every resample gives the same peak / quarter ratio, half-width 0
    same = _toy_grid([[1.0, 2.0, 3.0, 9.0]] * 4)  # r_T / 4 = 2 -> quarter loss 2, peak 9
    assert experiment._peak_height_interval([same], 200, 0).half_width == 0.0
    # one seed: no spread is known
    one = experiment._peak_height_interval([_toy_grid([[1.0, 2.0, 3.0, 9.0]])], 200, 0)
    assert one.half_width == float("inf")
    # seeds that disagree: resampled ratios are 3, 4.5 or 6, so the half-width is within
    # (0, (6 - 3) / 2]
    spread = _toy_grid([[1.0, 2.0, 3.0, 6.0], [1.0, 2.0, 3.0, 12.0]])
    e = experiment._peak_height_interval([spread], 2000, 1)
    assert e.value == 4.5 and 0.5 < e.half_width <= 1.5
    # the min over grids: a steady grid below every resample of the other decides alone
    low = _toy_grid([[1.0, 2.0, 3.0, 4.0]] * 2)  # ratio 2 < 3
    assert experiment._peak_height_interval([spread, low], 500, 1).half_width == 0.0


def test_seed_subset_keeps_every_per_seed_field():
    g = _toy_grid([[1.0, 2.0, 3.0, 6.0], [1.0, 2.0, 3.0, 12.0]])
    sub = experiment._seed_subset(g, np.array([1, 1, 1]))
    assert sub.loss.shape == (3, 4, 1) and np.all(sub.loss[:, 3, 0] == 12.0)
    assert sub.data_rank.shape == (3, 1) and sub.unseen_mass.shape == (3, 1)
    np.testing.assert_array_equal(sub.num_params, g.num_params)


def _draws_with_rates(rates, num_draws):
    """(num_draws, nT) 0/1 divergence indicators whose column means are ``rates``."""
    counts = np.rint(np.asarray(rates) * num_draws).astype(int)
    return (np.arange(num_draws)[:, None] < counts[None, :]).astype(float)


def test_gd_law_r2_fits_the_window_of_each_resample():
    t = np.array([16.0, 32, 64, 128, 256, 512])
    # an exact power law P = 0.8 (T / 16)^-1 inside the window: R^2 = 1 up to rounding
    exact = _draws_with_rates(0.8 * (t / 16) ** -1.0, 4000)
    assert experiment._gd_law_r2(t, exact) > 0.9999
    # points outside 0.01 < P < 0.9 are left out: a P = 1 head does not lower R^2
    head = _draws_with_rates(np.r_[1.0, 0.8 * (t[1:] / 16) ** -1.0], 4000)
    assert experiment._gd_law_r2(t, head) > 0.9999
    # a law that bends (log P quadratic in log T) fits worse than a straight one
    bent = _draws_with_rates(0.5 * np.exp(-0.15 * np.log(t / 16) ** 2), 4000)
    assert experiment._gd_law_r2(t, bent) < 0.95
    # fewer than 3 points in the window: no fit, NaN (the bootstrap drops such replicates)
    assert np.isnan(experiment._gd_law_r2(t, _draws_with_rates([1, 1, 1, 0.5, 0.2, 0], 100)))


def _surface(noise, seeds, seed=0):
    p = np.array([8, 16, 32, 64, 128, 256])
    t = np.array([16, 32, 64, 128, 256])
    rng = np.random.default_rng(seed)
    clean = p[None, :, None] ** -0.5 + t[None, None, :] ** -0.3
    loss = clean * rng.lognormal(0.0, noise, (seeds, p.size, t.size))
    ones = np.ones((seeds, t.size))
    return experiment.ScalingGrid(num_params=p, num_samples=t, loss=loss,
                                  train_loss=np.zeros_like(loss), rank=np.ones_like(loss),
                                  data_rank=ones, seen_coords=ones, unseen_mass=0 * ones)


def test_frontier_gap_interval_resamples_seeds():
    # identical seeds: every resample has the same loss surface, half-width 0
    same = _surface(0.0, 6)
    assert experiment._frontier_gap_interval(same, 8, 100, 0).half_width == 0.0
    assert np.isfinite(experiment._frontier_gap(same, 8))
    # seeds that disagree give an open interval, and one seed none at all
    assert experiment._frontier_gap_interval(_surface(0.3, 6), 8, 200, 0).half_width > 0.0
    assert experiment._frontier_gap_interval(_surface(0.3, 1), 8, 100, 0).half_width == np.inf


def test_gap_monotone_interval_redraws_the_seeds():
    x_p, x_t = np.array([16.0, 32, 64, 128, 256]), np.array([32.0, 64, 128, 256, 512])
    y_p = np.stack([x_p**-1.0] * 3)  # a_P = 1 at every alpha
    # gaps 0.2, 0.3, 0.5 whatever the seeds: monotone in every resample
    steady = [(y_p, np.stack([x_t ** -(1 - g)] * 3)) for g in (0.2, 0.3, 0.5)]
    e = experiment._gap_monotone_interval(x_p, None, x_t, None, steady, 200, 0)
    assert (e.value, e.lo, e.hi) == (1.0, 1.0, 1.0)
    assert "bootstrap over seeds" in e.method and e.n == 18
    # the middle alpha's seeds disagree (a_T 0.6 or 1.0: gap 0.4 or 0): a resample of
    # one kind breaks the order, a mixed one keeps it, so the interval spans [0, 1]
    mixed = np.stack([x_t**-0.6, x_t**-1.0])
    flips = [steady[0], (y_p, mixed), steady[2]]
    e = experiment._gap_monotone_interval(x_p, None, x_t, None, flips, 400, 1)
    assert (e.lo, e.hi) == (0.0, 1.0)


def test_peak_location_interval_counts_peaks_in_range():
    # r_T = 8: a peak at P = 8 is in range in every resample; at P = 4 in none
    at_rank = _toy_grid([[1.0, 2.0, 3.0, 9.0]] * 3)
    below = _toy_grid([[1.0, 2.0, 9.0, 3.0]] * 3)
    e = experiment._peak_location_interval([at_rank, below], 200, 0)
    assert (e.value, e.lo, e.hi) == (0.5, 0.5, 0.5)
    # seeds that disagree on where the mean peaks
    torn = _toy_grid([[1.0, 2.0, 9.0, 3.0], [1.0, 2.0, 3.0, 12.0]])
    e = experiment._peak_location_interval([torn], 400, 0)
    assert (e.lo, e.hi) == (0.0, 1.0)
