"""Baselines: each recovers data of its own form; bad input names the argument."""

from __future__ import annotations

import numpy as np
import pytest

from neurips26.papers.adis_law import InjectionPolicy, Trajectory, wsd_schedule
from neurips26.papers.adis_law.baselines import (
    AdditiveRegression,
    DecoupledLaw,
    NearestConfiguration,
)

POLS = [InjectionPolicy(f, r, e) for f in (0.25, 0.5, 1.0) for r in (0.1, 0.3, 0.6)
        for e in (3e-4, 6e-4, 1e-3)]


def test_additive_regression_is_exact_on_additive_data():
    def truth(p):
        return 2.0 + 0.3 * p.fraction - 0.1 * np.log(p.mix_ratio) + 0.05 * np.log(p.peak_lr / 1e-3)

    y = np.array([[truth(p)] for p in POLS])
    reg = AdditiveRegression(lr_ref=1e-3).fit(POLS, y)
    new = [InjectionPolicy(0.7, 0.2, 8e-4)]
    assert reg.predict(new)[0, 0] == pytest.approx(truth(new[0]), rel=1e-6)


def test_nearest_configuration_returns_the_nearest_row():
    y = np.arange(len(POLS), dtype=float)
    nn = NearestConfiguration().fit(POLS, y)
    assert nn.predict(POLS).ravel().tolist() == y.tolist()
    assert nn.predict([InjectionPolicy(0.26, 0.11, 3.1e-4)])[0, 0] == 0.0


def _decoupled_run(p, e=2.0, b=3.0, beta=0.5, d0=20.0):
    sch = wsd_schedule(300, peak_lr=1e-3, policy=p)
    steps = np.arange(20, 300, 10)
    dom = np.cumsum(sch.mix)[steps]
    lt = e + b * (dom + d0) ** (-beta)
    lg = np.full(steps.shape, 3.0)
    return Trajectory.from_schedule(sch, steps, lg, lt)


def test_decoupled_law_recovers_its_own_form():
    runs = [_decoupled_run(p) for p in POLS[::3]]
    base = wsd_schedule(300, peak_lr=1e-3)
    steps = np.arange(20, 300, 10)
    runs.append(Trajectory.from_schedule(base, steps, np.full(steps.shape, 3.0),
                                         np.full(steps.shape, 2.0 + 3.0 * 20.0 ** -0.5)))
    law = DecoupledLaw(restarts=6).fit(runs)
    np.testing.assert_allclose(law.target_, [2.0, 3.0, 0.5, 20.0], rtol=1e-3)
    pred = law.predict(_decoupled_run(POLS[1]))
    np.testing.assert_allclose(pred.loss_target, _decoupled_run(POLS[1]).loss_target, rtol=1e-6)


def test_baseline_bad_input():
    with pytest.raises(ValueError, match="policies"):
        AdditiveRegression().fit([], [])
    with pytest.raises(TypeError, match="policies"):
        NearestConfiguration().fit([(0.5, 0.1, 1e-3)], [1.0])
    with pytest.raises(ValueError, match="y has 2 rows"):
        AdditiveRegression().fit(POLS[:3], [1.0, 2.0])
    with pytest.raises(ValueError, match="y has a non-finite"):
        NearestConfiguration().fit(POLS[:2], [1.0, np.nan])
    with pytest.raises(ValueError, match="lr_ref"):
        AdditiveRegression(lr_ref=0.0).fit(POLS[:3], [1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="fit"):
        NearestConfiguration().predict(POLS[:1])
    with pytest.raises(RuntimeError, match="fit"):
        DecoupledLaw().predict(_decoupled_run(POLS[0]))
    with pytest.raises(ValueError, match="base run"):
        DecoupledLaw().fit([_decoupled_run(p) for p in POLS[:4]])
    with pytest.raises(TypeError, match="trajectory"):
        DecoupledLaw().fit([_decoupled_run(p) for p in POLS[:4]] + [
            Trajectory.from_schedule(wsd_schedule(300, peak_lr=1e-3), [20], [3.0], [2.5])]
        ).predict("run")
