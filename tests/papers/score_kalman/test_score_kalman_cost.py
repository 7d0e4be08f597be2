"""The filter's cost model, counted rather than timed: a user's 2-D pendulum with the full
quartic basis (the case that once took half a minute for 120 steps) costs exactly four
moment-closure evaluations per substep (classical RK4) and a fixed number of Stein
solves per update, so a run's work grows linearly in steps and substeps. Timing the same
pendulum against the UKF is ``benchmarks/score_kalman.py``'s job."""

import importlib
from unittest import mock

import numpy as np
import pytest

from neurips26.papers.score_kalman import PolySDE, ScoreKalmanFilter, full_basis
from neurips26.papers.score_kalman import skf as skf_module

# the package exports the function under the module's name: reach the module itself
stein_module = importlib.import_module("neurips26.papers.score_kalman.stein_moments")


def _pendulum(steps: int):
    g_l, dt = 9.81, 0.05
    G = np.array([[0.0], [0.3]])

    def f(x):
        return np.stack([x[:, 1], -g_l * np.sin(x[:, 0])], axis=1)

    sde = PolySDE.from_function(f, G, degree=3, scale=[0.6, 1.5])
    rng = np.random.default_rng(0)
    ys = 0.5 * np.cos(np.sqrt(g_l) * dt * np.arange(steps))[:, None]
    ys = ys + np.sqrt(0.05) * rng.standard_normal((steps, 1))
    return sde, ys, dt


def _counted(steps: int, substeps: int) -> tuple[dict, object]:
    sde, ys, dt = _pendulum(steps)
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=sde, H=np.array([[1.0, 0.0]]),
                            R=np.array([[0.05]]), dt=dt, num_substeps=substeps)  # fmt: skip
    calls = {"closure": 0, "stein": 0}
    expand, stein = skf_module._PredictPlan._expand, stein_module.stein_moments

    def count_expand(self, *a, **k):
        calls["closure"] += 1
        return expand(self, *a, **k)

    def count_stein(*a, **k):
        calls["stein"] += 1
        return stein(*a, **k)

    with (mock.patch.object(skf_module._PredictPlan, "_expand", count_expand),
          mock.patch.object(stein_module, "stein_moments", count_stein)):  # fmt: skip
        res = skf.filter(ys, np.array([0.3, 0.0]), 0.1 * np.eye(2))
    return calls, res


@pytest.mark.parametrize("substeps", [1, 3])
def test_pendulum_work_is_linear_in_steps_and_substeps(substeps):
    short, res_short = _counted(4, substeps)
    long, res_long = _counted(8, substeps)
    assert not res_short.fallback.any() and not res_long.fallback.any()
    # RK4: four closed right-hand sides per substep, nothing else in the prediction
    assert short["closure"] == 4 * substeps * 4
    assert long["closure"] == 4 * substeps * 8
    # the update (one block, so one sweep): the truncated Stein solve at K and the one at
    # K - 4 for the convergence gap, every step
    assert short["stein"] == 2 * 4
    assert long["stein"] == 2 * 8
