"""discriminator_rl: the smoke tier runs and reports every metric it declares."""

from __future__ import annotations

import math

from _smoke import smoke_fixture
from neurips26.papers.discriminator_rl.experiment import METRICS, TIERS, Config, run

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert set(m) <= set(METRICS)
    nan_ok = {"pareto_hv_gain", "fd_eval_pg", "fd_eval_pg_drop"}
    assert set(smoke.reasons) == nan_ok
    # one seed at smoke: the seed CIs are infinite by design (common.stats.seed_ci); the
    # correlation's is a bootstrap over probe points, finite with one seed
    assert all(m[k] == math.inf for k in m if k.endswith("_ci") and k != "logit_ratio_corr_ci")
    assert 0 < m["logit_ratio_corr_ci"] < 1
    assert all(math.isfinite(v) for k, v in m.items() if k not in nan_ok and not k.endswith("_ci"))
    assert m["check_zero_reward_ess_error"] < 1e-9 and m["check_linear_flow_loglik_error"] < 1e-5
    assert -1 <= m["logit_ratio_corr"] <= 1
    assert 0.5 <= m["disc_accuracy_mean"] <= 1 and 0 < m["ess_fraction_min"] <= 1
    for name in ("base", "drl", "cfm", "pixel"):
        assert m[f"fd_eval_{name}"] >= 0 and 0 <= m[f"pref_{name}"] <= 1
    assert len(smoke.tables["models"]) == 4 * TIERS["smoke"].num_seeds
    assert smoke.figures["fd"][:4] == b"\x89PNG"


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].num_rounds > TIERS["small"].num_rounds > TIERS["smoke"].num_rounds
    assert TIERS["small"].eval_space == "efficientnet"
