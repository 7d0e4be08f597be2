"""Smoke run of the reproduction, its claims, and the feature helpers."""

from __future__ import annotations

import numpy as np
import pytest

from neurips26.papers.cil_decentering import experiment
from neurips26.papers.cil_decentering.features import network_features
from neurips26.registry import NOT_RUN, REPRODUCED, get_paper


def test_smoke_run_and_claims():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    assert set(m) <= set(experiment.METRICS), set(m) - set(experiment.METRICS)
    assert m["num_cil_runs"] == 2
    assert {"cil", "failure", "bound"} <= set(res.tables)
    verdicts = {c.id: c.verdict for c in get_paper("cil_decentering").evaluate(m, "smoke")}
    for cid in ("offset_identity_population", "exact_recovery_population",
                "exact_recovery_predictions", "failure_confusion"):
        assert verdicts[cid] == REPRODUCED, (cid, m)
    assert verdicts["gap_mnist"] == NOT_RUN
    # the sequential heads are far worse than the de-centred ones on every run
    for row in res.tables["cil"]:
        assert row["acc_dec"] > row["acc_seq"] + 0.1


def test_network_features_of_an_mlp():
    torch = pytest.importorskip("torch")
    from neurips26.common.models import MLPClassifier

    net = MLPClassifier(12, (7,), 3)
    F = network_features(net, np.zeros((5, 12)))
    assert F.shape == (5, 7) and F.dtype == np.float64
    with pytest.raises(TypeError, match="features"):
        network_features(torch.nn.Linear(2, 2), np.zeros((1, 2)))


def test_the_placebo_correction_keeps_the_scale_and_moves_the_offsets():
    from neurips26.papers.cil_decentering import decenter, gaussian_tasks, population_heads
    from neurips26.papers.cil_decentering.experiment import _placebo, _task_means

    g = gaussian_tasks(num_tasks=3, classes_per_task=2, dim=4, task_scale=0.5,
                       class_scale=0.3, rng=np.random.default_rng(0))
    stats = g.stats()
    dec = decenter(population_heads(stats).sequential, stats, shrinkage=None)
    fake = _placebo(dec)
    _, W, b = _task_means(dec)
    _, Wp, bp = _task_means(fake)
    assert np.allclose(Wp, np.roll(W, -1, axis=0)) and np.allclose(bp, np.roll(b, -1))
    # within a task the rows keep their differences: only the task's offset moves
    assert np.allclose(fake.W[1] - fake.W[0], dec.W[1] - dec.W[0])


def test_smoke_measures_the_controls():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    assert m["placebo_gap_digits"] < m["gap_digits"]
    assert m["failure_min_confusion_at_min_ratio"] < m["failure_min_confusion_at_max_ratio"]
    # the claimed fractions carry binomial intervals over their trials
    top = max(experiment.TIERS["smoke"].failure_ratios)
    failure = [r for r in res.tables["failure"] if r["ratio"] == top]
    for name, n in (("failure_min_confusion_at_max_ratio", failure[0]["num_test"]),
                    ("failure_min_confusion_at_min_ratio", failure[0]["num_test"]),
                    ("diag_control_quantile_max", 200)):
        iv = res.intervals[name]
        assert iv["method"].startswith("wilson binomial over") and iv["n"] == n > 1, name
        assert iv["lo"] <= m[name] <= iv["hi"] and iv["lo"] < iv["hi"], name
    assert m["failure_min_confusion_at_max_ratio"] == min(r["confusion_seq"] for r in failure)
    real = [r for r in res.tables["cil"] if r["dataset"] in experiment.REAL]
    assert m["diag_control_quantile_max"] == max(r["diag_control_quantile"] for r in real)
