"""discriminator_rl: the smoke tier runs and reports every metric it declares."""

from __future__ import annotations

import math

from _smoke import smoke_fixture
from neurips26.papers.discriminator_rl.experiment import METRICS, TIERS, Config, run

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert set(m) <= set(METRICS)
    nan_ok = {"pareto_hv_gain", "pareto_hv_gain_zero", "fd_eval_pg", "fd_eval_pg_drop"}
    assert set(smoke.reasons) == nan_ok
    # one seed at smoke: the seed intervals are infinite by design; the correlation's is a
    # bootstrap over probe points, finite with one seed
    for k in ("fd_eval_drop", "fd_phi_drop", "fd_eval_drop_zero", "drl_minus_cfm_fd_eval",
              "pref_gain", "pref_gain_zero", "zero_minus_pixel_fd_eval"):
        assert smoke.intervals[k]["lo"] == -math.inf and smoke.intervals[k]["n"] == 1
    # a drop 1 - FD_after / FD_before is intervalled through the ratio's log scale: <= 1
    assert smoke.intervals["fd_eval_drop"]["hi"] == 1.0
    ci = smoke.intervals["logit_ratio_corr"]
    assert ci["lo"] < m["logit_ratio_corr"] < ci["hi"] and ci["hi"] - ci["lo"] < 1
    assert "bootstrap over probe points" in ci["method"]
    assert all(math.isfinite(v) for k, v in m.items() if k not in nan_ok)
    assert m["check_zero_reward_ess_error"] < 1e-9 and m["check_linear_flow_loglik_error"] < 1e-5
    assert -1 <= m["logit_ratio_corr"] <= 1 and -1 <= m["logit_ratio_corr_shuffled"] <= 1
    assert 0.5 <= m["disc_accuracy_mean"] <= 1 and 0 < m["ess_fraction_min"] <= 1
    for name in ("base", "drl", "cfm", "pixel", "zero"):
        assert m[f"fd_eval_{name}"] >= 0 and 0 <= m[f"pref_{name}"] <= 1
    assert len(smoke.tables["models"]) == 5 * TIERS["smoke"].num_seeds
    assert smoke.figures["fd"][:4] == b"\x89PNG"


def test_zero_reward_control_is_the_same_statistic(smoke):
    """The control arm is the zero-reward update from the same base: its drop is measured
    against the same base FD as DRL's, and it is a different model from DRL's."""
    m = smoke.metrics
    assert m["fd_eval_drop_zero"] == 1 - m["fd_eval_zero"] / m["fd_eval_base"]
    assert m["fd_eval_zero"] != m["fd_eval_drl"]
    assert math.isclose(m["zero_minus_cfm_fd_eval"], m["fd_eval_zero"] - m["fd_eval_cfm"])
    assert m["nll2d_drop_zero"] == m["nll2d_base"] - m["nll2d_zero"]


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].num_rounds > TIERS["small"].num_rounds > TIERS["smoke"].num_rounds
    assert TIERS["small"].eval_space == "efficientnet"
