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
    # the theorem's quantities are there beside the simulation even at smoke scale
    assert m["unseen_mass_max_rel_err"] < 1.0 and np.isfinite(m["param_theory_max_rel_err"])


def test_tiers_are_consistent():
    for cfg in experiment.TIERS.values():
        assert len(cfg.under_window) == 2 and len(cfg.over_window) == 2
        assert cfg.num_params_grid[-1] <= cfg.dim
        assert list(cfg.num_samples_grid) == sorted(set(cfg.num_samples_grid))
