"""Bad input raises ValueError/TypeError whose message names the argument."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from neurips26.papers.adis_law import (
    ADISParams,
    InjectionPolicy,
    Trajectory,
    adis_predict,
    fit_adis_law,
    rank_policies,
    schedule_features,
    simulate_trajectory,
    trajectories_from_frame,
    wsd_schedule,
)

P = ADISParams(general=dict(L0=1.0, A=2.0, alpha=0.5, C=1e-3, F=0.01, R=0.002),
               target=dict(E_T=1.2, B=3.0, beta=0.4, kappa=0.1, C_T=1e-3), lr_ref=1e-3)


def _traj(**kw):
    base = dict(lrs=np.full(50, 1e-3), mix=np.zeros(50), steps=[10, 20, 30],
                loss_general=[3.0, 2.9, 2.8], loss_target=[3.1, 3.0, 2.9], name="r1")
    base.update(kw)
    return Trajectory(**base)


@pytest.mark.parametrize("kw, match", [
    (dict(fraction=0.0, mix_ratio=0.2, peak_lr=1e-3), "fraction"),
    (dict(fraction=1.5, mix_ratio=0.2, peak_lr=1e-3), "fraction"),
    (dict(fraction=0.5, mix_ratio=-0.1, peak_lr=1e-3), "mix_ratio"),
    (dict(fraction=0.5, mix_ratio=1.1, peak_lr=1e-3), "mix_ratio"),
    (dict(fraction=0.5, mix_ratio=0.2, peak_lr=0.0), "peak_lr"),
    (dict(fraction=0.5, mix_ratio=0.2, peak_lr=float("nan")), "peak_lr"),
    (dict(fraction=0.5, mix_ratio=0.2, peak_lr=float("inf")), "peak_lr"),
])
def test_policy_ranges(kw, match):
    with pytest.raises(ValueError, match=match):
        InjectionPolicy(**kw)
    with pytest.raises(TypeError, match="fraction"):
        InjectionPolicy("half", 0.2, 1e-3)


def test_schedule_arguments():
    with pytest.raises(ValueError, match=r"total_steps=5 .* the minimum is 8"):
        wsd_schedule(5, peak_lr=1e-3)
    with pytest.raises(ValueError, match=r"total_steps.*minimum is"):
        wsd_schedule(20, peak_lr=1e-3, policy=InjectionPolicy(0.1, 0.2, 1e-3))
    with pytest.raises(ValueError, match="peak_lr"):
        wsd_schedule(100, peak_lr=-1.0)
    with pytest.raises(TypeError, match="total_steps"):
        wsd_schedule(100.0, peak_lr=1e-3)
    with pytest.raises(ValueError, match="anneal_frac"):
        wsd_schedule(100, peak_lr=1e-3, anneal_frac=1.0)
    with pytest.raises(ValueError, match="min_lr_ratio"):
        wsd_schedule(100, peak_lr=1e-3, min_lr_ratio=2.0)
    with pytest.raises(TypeError, match="policy"):
        wsd_schedule(100, peak_lr=1e-3, policy=(0.5, 0.2, 1e-3))


def test_feature_arguments():
    with pytest.raises(ValueError, match="zeta"):
        schedule_features(np.ones(5), zeta=1.0)
    with pytest.raises(ValueError, match="zeta"):
        schedule_features(np.ones(5), zeta=0.0)
    with pytest.raises(ValueError, match="zero learning rate everywhere"):
        schedule_features(np.zeros(5))
    with pytest.raises(ValueError, match="schedule has a non-finite"):
        schedule_features([1.0, np.nan])
    with pytest.raises(ValueError, match="mix"):
        schedule_features(np.ones(5), mix=np.ones(4))
    with pytest.raises(ValueError, match="mix"):
        schedule_features(np.ones(3), mix=[0, 2, 0])
    with pytest.raises(ValueError, match="negative"):
        schedule_features([1.0, -1.0])


def test_trajectory_checks():
    with pytest.raises(ValueError, match=r"'r1'.*loss_target is NaN .* step 20"):
        _traj(loss_target=[3.0, np.nan, 2.9])
    with pytest.raises(ValueError, match=r"'r1'.*steps must be strictly increasing"):
        _traj(steps=[10, 30, 20])
    with pytest.raises(ValueError, match=r"'r1'.*zero learning rate everywhere"):
        _traj(lrs=np.zeros(50))
    with pytest.raises(ValueError, match=r"'r1'.*steps must lie"):
        _traj(steps=[10, 20, 60])
    with pytest.raises(ValueError, match=r"'r1'.*loss_general has shape"):
        _traj(loss_general=[3.0, 2.9])
    with pytest.raises(ValueError, match=r"'r1'.*mix must lie"):
        _traj(mix=np.full(50, 1.5))
    with pytest.raises(ValueError, match=r"'r1'.*lrs has a non-finite"):
        _traj(lrs=np.r_[np.full(49, 1e-3), np.inf])


def _grid_runs(n):
    pols = [InjectionPolicy(1.0, r, 1e-3) for r in np.linspace(0.1, 0.9, n)]
    return [simulate_trajectory(P, wsd_schedule(100, peak_lr=1e-3, policy=p),
                                steps=range(10, 100, 10)) for p in pols]


def test_fit_arguments():
    with pytest.raises(ValueError, match=r"trajectories: 3 runs .* at least 6 runs"):
        fit_adis_law(_grid_runs(3))
    base = simulate_trajectory(P, wsd_schedule(100, peak_lr=1e-3), steps=range(10, 100, 10))
    one = _grid_runs(1)
    with pytest.raises(ValueError, match="at least 2 injection policies"):
        fit_adis_law([base] * 6 + one)
    runs = _grid_runs(7)
    with pytest.raises(ValueError, match="zeta"):
        fit_adis_law(runs, zeta=1.5)
    with pytest.raises(ValueError, match="restarts"):
        fit_adis_law(runs, restarts=0)
    with pytest.raises(ValueError, match="loss"):
        fit_adis_law(runs, loss="l2")
    with pytest.raises(ValueError, match="f_scale"):
        fit_adis_law(runs, f_scale=0.0)
    with pytest.raises(TypeError, match="trajectories"):
        fit_adis_law([1, 2, 3])
    with pytest.raises(TypeError, match="trajectories"):
        fit_adis_law(5)
    zero_start = _traj(lrs=np.r_[0.0, np.full(49, 1e-3)], steps=[0, 10, 20])
    with pytest.raises(ValueError, match=r"'r1'.*S1 = 0"):
        fit_adis_law([*runs, zero_start])


def test_frame_checks():
    good = pd.DataFrame({"run": ["a"] * 3, "step": [0, 10, 20], "lr": [1.0, 1.0, 0.5],
                         "domain_fraction": [0.0, 0.5, 0.5], "loss_general": [3.0, 2.0, 1.9],
                         "loss_target": [3.0, 2.5, 2.0]})
    with pytest.raises(ValueError, match=r"'loss_target' has NaN .* run 'a'"):
        trajectories_from_frame(good.assign(loss_target=[3.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="'step' is not strictly increasing in run 'a'"):
        trajectories_from_frame(good.assign(step=[0, 20, 10]))
    with pytest.raises(ValueError, match="run 'a' starts at step 5"):
        trajectories_from_frame(good.assign(step=[5, 10, 20]))
    with pytest.raises(ValueError, match="lacks the columns"):
        trajectories_from_frame(good.drop(columns="lr"))
    with pytest.raises(ValueError, match="zero learning rate everywhere"):
        trajectories_from_frame(good.assign(lr=0.0))
    with pytest.raises(ValueError, match="no rows"):
        trajectories_from_frame(good.iloc[:0])
    with pytest.raises(TypeError, match="frame"):
        trajectories_from_frame(good.to_dict())
    with pytest.raises(ValueError, match="at least 6 runs"):
        fit_adis_law(good)


def test_predict_and_rank_arguments():
    f = schedule_features(wsd_schedule(100, peak_lr=1e-3))
    with pytest.raises(TypeError, match="params"):
        adis_predict({"L0": 1.0}, f)
    with pytest.raises(TypeError, match="features"):
        adis_predict(P, np.ones(3))
    with pytest.raises(ValueError, match="general must have the keys"):
        ADISParams(general={"L0": 1.0}, target=P.target)
    with pytest.raises(ValueError, match=r"target\['beta'\]"):
        ADISParams(general=P.general, target={**P.target, "beta": float("nan")})
    pol = InjectionPolicy(0.5, 0.3, 1e-3)
    with pytest.raises(ValueError, match="candidates"):
        rank_policies(P, [], total_steps=100, peak_lr=1e-3)
    with pytest.raises(TypeError, match="candidates"):
        rank_policies(P, [(0.5, 0.3, 1e-3)], total_steps=100, peak_lr=1e-3)
    with pytest.raises(ValueError, match="mu"):
        rank_policies(P, [pol], total_steps=100, peak_lr=1e-3, mu=-1.0)
    with pytest.raises(ValueError, match="total_steps"):
        rank_policies(P, [pol], total_steps=5, peak_lr=1e-3)
    with pytest.raises(ValueError, match="noise"):
        simulate_trajectory(P, wsd_schedule(100, peak_lr=1e-3), steps=[10], noise=-1.0)
    with pytest.raises(ValueError, match="rng"):
        simulate_trajectory(P, wsd_schedule(100, peak_lr=1e-3), steps=[10], noise=0.1)
    with pytest.raises(ValueError, match="steps"):
        simulate_trajectory(P, wsd_schedule(100, peak_lr=1e-3), steps=[100])
