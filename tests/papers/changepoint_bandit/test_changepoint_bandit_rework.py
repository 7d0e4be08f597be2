"""Issue 13: tighter confidence sequences, the paired certificate, adaptive detection.

Each test here would fail on the landed code: its union-over-n intervals, its
disjoint-interval verification, and its certified-cells detection that made our
procedure spend several times MCPI's queries at eta = 1e-3.
"""

import math

import numpy as np
import pytest

from neurips26.papers.changepoint_bandit import (
    QueryOracle,
    confidence_radius,
    localize_change_points,
    make_step_function,
    mcpi_track_and_stop,
    min_samples_to_separate,
    paired_certified_different,
    uniform_ruptures,
)


@pytest.mark.parametrize("delta", [0.1, 0.5])
def test_stitched_sequence_holds_over_a_long_horizon(delta):
    # 2000 Gaussian paths of 5000 steps: the boundary may be crossed at some n on at most
    # a delta fraction of the paths (time-uniform), and at delta = 0.5 it is crossed on
    # some paths (not vacuous).
    rng = np.random.default_rng(7)
    T = 5000
    n = np.arange(1, T + 1)
    r = confidence_radius(n, delta=delta, sigma=2.0)
    miss = 0
    for _ in range(4):
        s = np.cumsum(2.0 * rng.standard_normal((500, T)), axis=1)
        miss += int(np.any(np.abs(s / n) > r, axis=1).sum())
    rate = miss / 2000
    assert rate <= delta + 3 * math.sqrt(delta * (1 - delta) / 2000)
    if delta == 0.5:
        assert rate > 0.01


def test_paired_certificate_false_alarm_rate_and_power():
    # Equal means: over 1000 step-by-step checks to n = 2000, the paired test certifies
    # "different" on at most a delta fraction of the pairs; a gap of 0.5 is certified.
    rng = np.random.default_rng(3)
    delta, T, P = 0.1, 2000, 1000
    n = np.broadcast_to(np.arange(1, T + 1), (P, T))
    a = np.cumsum(rng.standard_normal((P, T)) + 0.3, axis=1)
    b = np.cumsum(rng.standard_normal((P, T)) + 0.3, axis=1)
    alarms = paired_certified_different(a, b, n, delta=delta).any(axis=1)
    assert alarms.mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / P)
    m = min_samples_to_separate(0.5, delta=delta, paired=True)
    assert paired_certified_different([0.5 * m], [0.0], [m], delta=delta).tolist() == [True]
    # the paired rule needs about half the samples of disjoint intervals
    assert m <= 0.55 * min_samples_to_separate(0.5, delta=delta)


def test_delta_correct_on_many_seeds():
    # Our procedure and the uniform baseline at a loose delta = 0.3 on instances of
    # both layouts (40 instances): their error rates stay below delta (+3 SE).
    delta, eta, runs = 0.3, 0.02, 40
    errs = {"ours": 0, "uniform": 0}
    for s in range(runs):
        layout = "clustered" if s % 2 else "spread"
        f = make_step_function(
            num_change_points=2, jump=0.5, layout=layout, min_spacing=0.1, seed=100 + s
        )
        kw = dict(num_change_points=2, eta=eta, delta=delta)
        errs["ours"] += not localize_change_points(QueryOracle(f, seed=s), **kw).correct(
            f.change_points, eta
        )
        errs["uniform"] += not uniform_ruptures(QueryOracle(f, seed=s), **kw).correct(
            f.change_points, eta
        )
    bound = delta + 3 * math.sqrt(delta * (1 - delta) / runs)
    assert errs["ours"] / runs <= bound and errs["uniform"] / runs <= bound


@pytest.mark.parametrize(
    "layout, spacing", [("spread", 0.1), ("clustered", 16e-3)], ids=["spread", "clustered16"]
)
def test_at_most_mcpi_queries_at_eta_1e3(layout, spacing):
    # The issue-13 goal on the benchmark's families (N = 3, jump 0.5, delta = 0.01,
    # eta = 1e-3): our median queries at most the MCPI baseline's, both correct. On the
    # landed code MCPI used 4-16x fewer queries than ours in every family.
    eta, delta, q_ours, q_mcpi = 1e-3, 0.01, [], []
    for s in range(5):
        f = make_step_function(
            num_change_points=3, jump=0.5, layout=layout, min_spacing=spacing, seed=s
        )
        kw = dict(num_change_points=3, eta=eta, delta=delta, max_queries=10**7)
        ours = localize_change_points(QueryOracle(f, seed=s), **kw)
        mcpi = mcpi_track_and_stop(QueryOracle(f, seed=s), **kw)
        assert ours.correct(f.change_points, eta) and mcpi.correct(f.change_points, eta)
        q_ours.append(ours.num_queries)
        q_mcpi.append(mcpi.num_queries)
    assert np.median(q_ours) <= np.median(q_mcpi)


def test_segmentation_detection_beats_the_certified_search_on_a_close_pair():
    # A close pair of opposite jumps (8 eta apart): the certified-cells search (the landed
    # detection) pays a union-bounded certificate for every cell down to the pair's
    # level; the segmentation detection with focused sampling needs far fewer queries.
    eta, q = 1e-3, {"segmentation": [], "certified": []}
    for s in range(3):
        f = make_step_function(
            num_change_points=2, jump=0.5, layout="clustered", min_spacing=8 * eta, seed=s
        )
        for det in q:
            res = localize_change_points(
                QueryOracle(f, seed=s), num_change_points=2, eta=eta, delta=0.05, detection=det
            )
            assert res.correct(f.change_points, eta)
            q[det].append(res.num_queries)
    assert np.median(q["segmentation"]) < 0.5 * np.median(q["certified"])


def test_bad_detection_name():
    f = make_step_function(num_change_points=2, seed=0)
    with pytest.raises(ValueError, match="detection"):
        localize_change_points(QueryOracle(f), num_change_points=2, eta=0.01, detection="x")
