"""beta_tta: the smoke tier runs, counts its calls exactly and reports every metric."""

from __future__ import annotations

import math

from _smoke import smoke_fixture
from neurips26.papers.beta_tta.experiment import METRICS, TIERS, VOLATILE, Config, run

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert set(m) <= set(METRICS) and set(VOLATILE) == set(smoke.volatile)
    assert m["beta_calls_per_sample"] == 1.0
    assert m["zoo_calls_per_sample"] == 2 * TIERS["smoke"].zoo_directions + 1
    assert m["check_beta_calls_error"] == 0 and m["check_no_grad_leak"] == 1
    for k in ("source_acc", "beta_acc", "tent_blackbox_acc", "zoo_acc", "em_acc"):
        assert 0 <= m[k] <= 1
    assert all(math.isfinite(v) for k, v in m.items() if k not in ("beta_gain_mild",))
    assert len(smoke.tables["streams"]) == 2 * 2  # 2 corruptions x 2 seeds


def test_smoke_measures_the_no_adaptation_control(smoke):
    m = smoke.metrics
    assert 0 <= m["beta_noadapt_acc"] <= 1
    for k in ("beta_noadapt_gain", "beta_noadapt_minus_tent", "beta_noadapt_minus_zoo",
              "beta_noadapt_worst_drop"):
        assert math.isfinite(m[k])
    # The gain claims' metrics carry their interval over seeds (two seeds: finite).
    for k in ("beta_gain", "beta_noadapt_gain", "beta_minus_zoo"):
        iv = smoke.intervals[k]
        assert iv["n"] == 2 and iv["lo"] <= m[k] <= iv["hi"] and iv["method"] == "t over seeds"


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].num_test > TIERS["small"].num_test > TIERS["smoke"].num_test
