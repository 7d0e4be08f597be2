"""Smoke run of the reproduction, its claims, and the feature helpers."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from neurips26.papers.cil_decentering import experiment
from neurips26.papers.cil_decentering.features import network_features, photo_views
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
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.stable_metrics() == res.stable_metrics()


def test_photo_views_shapes_and_bad_input():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, size=(40, 50, 3), dtype=np.uint8) for _ in range(2)]
    views, labels = photo_views(imgs, 3, size=16, rng=rng)
    assert views.shape == (6, 16, 16, 3) and views.dtype == np.uint8
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match=r"images\[0\] must have shape"):
        photo_views([np.zeros((4, 4))], 1, rng=rng)
    with pytest.raises(ValueError, match="min_scale must be in"):
        photo_views(imgs, 1, min_scale=2.0, rng=rng)
    with pytest.raises(ValueError, match="num_views must be >= 1"):
        photo_views(imgs, 0, rng=rng)


def test_network_features_of_an_mlp():
    torch = pytest.importorskip("torch")
    from neurips26.common.models import MLPClassifier

    net = MLPClassifier(12, (7,), 3)
    F = network_features(net, np.zeros((5, 12)))
    assert F.shape == (5, 7) and F.dtype == np.float64
    with pytest.raises(TypeError, match="features"):
        network_features(torch.nn.Linear(2, 2), np.zeros((1, 2)))


@pytest.mark.skipif(importlib.util.find_spec("efficientnet_lite_pytorch") is None,
                    reason="efficientnet-lite-pytorch not installed")
def test_efficientnet_pooled_features_shape():
    from neurips26.papers.cil_decentering.features import efficientnet_lite0, pooled_features

    model = efficientnet_lite0()
    F = pooled_features(model, np.zeros((2, 32, 32, 3), dtype=np.uint8))
    assert F.shape == (2, 1280) and np.all(np.isfinite(F))
    with pytest.raises(ValueError, match="images must have shape"):
        pooled_features(model, np.zeros((2, 32, 32)))
