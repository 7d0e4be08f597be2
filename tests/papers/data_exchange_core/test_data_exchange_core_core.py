"""Core check, deviations, the theorem's construction and the dynamic: oracles and properties."""

import itertools

import numpy as np
import pytest

from neurips26.papers.data_exchange_core import (
    DataExchangeGame,
    Market,
    apply_deviation,
    best_deviation,
    coalition_value,
    constructive_core,
    core_violation,
    exchange_dynamic,
    find_core_exchange,
    pooling_violation,
    set_partitions,
    utilities,
)
from neurips26.papers.data_exchange_core.core import _pareto


def curve(d):
    return 0.95 - 1.2 * np.asarray(d, dtype=float) ** -0.6


def rand_sizes(rng, n):
    return 20.0 + 1000.0 * rng.dirichlet(np.ones(n))


def rand_alpha(rng, n):
    a = rng.random((n, n)) * (rng.random((n, n)) < 0.6)
    np.fill_diagonal(a, 0.0)
    return a


# --- independent n = 2 oracle


def _shares_by_hand(acc, demand, lam):
    acc = np.asarray(acc, dtype=float)
    if demand == "wta":
        top = acc.max(axis=-1, keepdims=True)
        w = (acc >= top - 1e-12).astype(float)
        return w / w.sum(axis=-1, keepdims=True)
    e = np.exp(lam * (acc - acc.max(axis=-1, keepdims=True)))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("demand", "sizes"),
    [
        ("wta", (300.0, 200.0)),
        ("logit", (300.0, 200.0)),
        ("wta", (250.0, 250.0)),
        ("logit", (50.0, 700.0)),
    ],
)
def test_n2_brute_force_core_on_101_grid(demand, sizes):
    """Enumerate alpha on a 101 x 101 grid in alpha space and compute the core exactly."""
    lam = 20.0
    m = np.array(sizes)
    mk = Market(m, curve, demand=demand, rationality=lam)
    g = np.linspace(0, 1, 101)
    a01, a10 = np.meshgrid(g, g, indexing="ij")  # alpha_01: 0 -> 1, alpha_10: 1 -> 0
    d = np.stack([m[0] + a10 * m[1], m[1] + a01 * m[0]], axis=-1)  # (101, 101, 2)
    u = _shares_by_hand(curve(d), demand, lam)  # (101, 101, 2)
    # A singleton deviates to no sharing; its only outsider then has its own data.
    dev = _shares_by_hand(curve(m), demand, lam)  # (2,)
    v_brute = np.maximum(0.0, np.maximum(dev[0] - u[..., 0], dev[1] - u[..., 1]))
    # The grand coalition never blocks: no grid point improves both firms strictly.
    flat = u.reshape(-1, 2)
    assert not np.any(
        (flat[:, None, 0] > flat[None, :, 0] + 1e-15)
        & (flat[:, None, 1] > flat[None, :, 1] + 1e-15)
    )
    core_set = v_brute <= 1e-12
    assert core_set.any()
    # Our numerical check agrees with the brute force on a sub-grid.
    for i in range(0, 101, 20):
        for j in range(0, 101, 25):
            alpha = np.array([[0.0, g[i]], [g[j], 0.0]])
            v = core_violation(mk, alpha, num_restarts=2).violation
            assert v == pytest.approx(v_brute[i, j], abs=1e-12)
    # find_core_exchange returns an exchange in the brute-force core.
    res = find_core_exchange(mk, num_starts=5)
    assert res.converged
    x01, x10 = res.alpha[0, 1], res.alpha[1, 0]
    d_res = np.array([m[0] + x10 * m[1], m[1] + x01 * m[0]])
    u_res = _shares_by_hand(curve(d_res), demand, lam)
    assert np.all(dev <= u_res + 1e-12)


# --- worst-case lemma


@pytest.mark.parametrize("demand", ["wta", "logit"])
@pytest.mark.parametrize("revenue_sharing", [False, True])
def test_outsider_full_pooling_is_the_worst_case(demand, revenue_sharing):
    rng = np.random.default_rng(11)
    n = 5
    for trial in range(60):
        m = rand_sizes(rng, n)
        mk = Market(m, curve, demand=demand, rationality=30.0, revenue_sharing=revenue_sharing)
        k = int(rng.integers(1, n))
        s = np.sort(rng.choice(n, size=k, replace=False))
        out = np.setdiff1d(np.arange(n), s)
        inner = rand_alpha(rng, k)
        base = np.zeros((n, n))
        base[np.ix_(s, s)] = inner
        worst = base.copy()
        worst[np.ix_(out, out)] = 1.0
        np.fill_diagonal(worst, 0.0)
        other = base.copy()
        other[np.ix_(out, out)] = rand_alpha(rng, len(out)) if trial % 3 else 0.0
        if revenue_sharing:
            rest = list(set_partitions(out.tolist()))
            p_other = (tuple(s),) + rest[trial % len(rest)]
            p_worst = (tuple(s),) + rest[trial % len(rest)]
            u_other = utilities(mk, other, partition=p_other)[s]
            u_worst = utilities(mk, worst, partition=p_worst)[s]
        else:
            u_other = utilities(mk, other)[s]
            u_worst = utilities(mk, worst)[s]
        if revenue_sharing or demand == "logit":
            assert np.all(u_other >= u_worst - 1e-15)
        else:  # WTA: a firm's share can rise only if it was winning; check the minimum
            assert u_other.min() >= u_worst.min() - 1e-15


# --- search quality


def test_best_deviation_pair_matches_fine_brute_force():
    """For |S| = 2 the deviation space is 2-D: brute force on a 401 x 401 alpha grid."""
    rng = np.random.default_rng(2)
    lam = 20.0
    for _ in range(3):
        m = rand_sizes(rng, 3)
        mk = Market(m, curve, demand="logit", rationality=lam)
        alpha = rand_alpha(rng, 3)
        base = utilities(mk, alpha)[[0, 2]]
        g = np.linspace(0, 1, 401)
        x, y = np.meshgrid(g, g, indexing="ij")  # alpha_20 and alpha_02
        d0, d2 = m[0] + x * m[2], m[2] + y * m[0]
        d1 = np.full_like(d0, m[1])  # the lone outsider keeps its data
        s = _shares_by_hand(curve(np.stack([d0, d1, d2], -1)), "logit", lam)
        brute = np.minimum(s[..., 0] - base[0], s[..., 2] - base[1]).max()
        dev = best_deviation(mk, alpha, (0, 2))
        assert dev.gain >= brute - 1e-9
        assert dev.gain <= brute + 1e-4  # grid spacing 1/400, Lipschitz gains
        assert (dev.utilities - dev.baseline).min() == pytest.approx(dev.gain, abs=1e-15)


def test_random_full_exchanges_never_beat_best_deviation():
    """Reduction lemma: every internal alpha_S reaches a point of the searched box."""
    rng = np.random.default_rng(4)
    lam = 10.0
    m = rand_sizes(rng, 4)
    for demand in ("logit", "wta"):
        mk = Market(m, curve, demand=demand, rationality=lam)
        alpha = rand_alpha(rng, 4)
        s = (0, 1, 3)
        dev = best_deviation(mk, alpha, s)
        base = utilities(mk, alpha)[list(s)]
        best_random = -np.inf
        for _ in range(400):
            inner = rand_alpha(rng, 3)
            trial = np.ones((4, 4)) - np.eye(4)  # outsider pooling (a single outsider here)
            trial = apply_deviation(trial, s, inner)
            best_random = max(best_random, (utilities(mk, trial)[list(s)] - base).min())
        assert best_random <= dev.gain + 1e-9


def test_grand_coalition_never_blocks():
    rng = np.random.default_rng(8)
    for demand, rs in (("wta", False), ("logit", False), ("logit", True)):
        mk = Market(rand_sizes(rng, 3), curve, demand=demand, rationality=15.0, revenue_sharing=rs)
        for _ in range(3):
            dev = best_deviation(mk, rand_alpha(rng, 3), (0, 1, 2), num_restarts=3)
            assert dev.gain <= 1e-12


def test_pareto_filter_matches_brute_force():
    rng = np.random.default_rng(0)
    for k in (2, 3):
        u = np.round(rng.random((300, k)), 2)  # ties on purpose
        keep = set(_pareto(u).tolist())
        for i in range(u.shape[0]):
            dominated = np.any(np.all(u >= u[i], axis=1) & np.any(u > u[i], axis=1))
            duplicate_kept = any(np.array_equal(u[j], u[i]) for j in keep)
            assert (i in keep) <= (not dominated)
            assert dominated or duplicate_kept


# --- theorem vs search


@pytest.mark.parametrize(("demand", "rs"), [("wta", False), ("wta", True), ("logit", True)])
def test_closed_form_violation_equals_search_where_exact(demand, rs):
    rng = np.random.default_rng(21)
    for _ in range(6):
        n = int(rng.integers(2, 5))
        mk = Market(rand_sizes(rng, n), curve, demand=demand, rationality=12.0, revenue_sharing=rs)
        alpha = rand_alpha(rng, n)
        v_num = core_violation(mk, alpha).violation
        assert pooling_violation(mk, alpha) == pytest.approx(v_num, abs=1e-12)


def test_closed_form_is_a_lower_bound_for_logit():
    rng = np.random.default_rng(22)
    for _ in range(6):
        mk = Market(rand_sizes(rng, 3), curve, demand="logit", rationality=20.0)
        alpha = rand_alpha(rng, 3)
        assert pooling_violation(mk, alpha) <= core_violation(mk, alpha).violation + 1e-12


@pytest.mark.parametrize(("demand", "rs"), [("wta", False), ("logit", True), ("wta", True)])
def test_theorem_construction_is_core_stable(demand, rs):
    rng = np.random.default_rng(31)
    for _ in range(8):
        n = int(rng.integers(2, 5))
        mk = Market(rand_sizes(rng, n), curve, demand=demand, rationality=8.0, revenue_sharing=rs)
        con = constructive_core(mk)
        assert np.all(con.utilities >= con.guarantee - 1e-12)  # the theorem's guarantee
        assert np.all(np.diff(con.values) <= 1e-15)
        part = con.partition if rs else None
        assert core_violation(mk, con.alpha, partition=part).violation <= 1e-12


def test_wta_construction_is_smallest_winning_coalition():
    m = np.array([100.0, 260.0, 250.0, 400.0])  # M = 1010; no firm has half
    mk = Market(m, curve)
    con = constructive_core(mk)
    # The smallest coalitions with more than half the data (> 505) are pairs: (1, 2) holds
    # 510 and (1, 3) 660, while (0, 3) holds only 500; the first in order is (1, 2).
    assert con.partition[0] == (1, 2)
    np.testing.assert_allclose(con.utilities, [0.0, 0.5, 0.5, 0.0])
    # A firm with more than half of all data wins alone: no sharing is in the core.
    mk2 = Market([600.0, 200.0, 150.0], curve)
    assert constructive_core(mk2).partition[0] == (0,)
    assert core_violation(mk2, np.zeros((3, 3))).violation == 0.0


def test_logit_equal_sizes_pair_pooling_is_blocked_by_hand():
    """(x, x, 1 - 2x) from pooling {0, 1} is blocked by {0, 2}: 2 gives 0 everything."""
    lam, mm = 20.0, 200.0
    mk = Market([mm, mm, mm], curve, demand="logit", rationality=lam)
    alpha = np.zeros((3, 3))
    alpha[0, 1] = alpha[1, 0] = 1.0
    delta = curve(2 * mm) - curve(mm)
    q = np.exp(-lam * delta)
    x = 1 / (2 + q)
    np.testing.assert_allclose(utilities(mk, alpha), [x, x, 1 - 2 * x])
    gain_by_hand = min(1 / (1 + 2 * q) - x, q / (1 + 2 * q) - (1 - 2 * x))
    assert gain_by_hand > 0
    dev = best_deviation(mk, alpha, (0, 2))
    assert dev.gain >= gain_by_hand - 1e-12
    assert pooling_violation(mk, alpha) < dev.gain  # symmetric pooling misses it


def test_logit_core_empty_on_equal_sizes():
    mk = Market([200.0, 200.0, 200.0], curve, demand="logit", rationality=20.0)
    res = find_core_exchange(mk, num_starts=5, dynamic_max_iter=5, num_restarts=2)
    assert not res.converged
    assert res.min_violation_found > 1e-3
    assert res.start_violations.size == 15
    assert np.all(res.start_violations >= res.min_violation_found - 1e-15)


# --- symmetry


def test_permuting_firms_permutes_construction_and_preserves_violation():
    rng = np.random.default_rng(41)
    m = rand_sizes(rng, 4)
    perm = np.array([2, 0, 3, 1])
    for demand, rs in (("wta", False), ("logit", True)):
        mk = Market(m, curve, demand=demand, rationality=6.0, revenue_sharing=rs)
        mk_p = Market(m[perm], curve, demand=demand, rationality=6.0, revenue_sharing=rs)
        con, con_p = constructive_core(mk), constructive_core(mk_p)
        np.testing.assert_allclose(con_p.alpha, con.alpha[np.ix_(perm, perm)])
        np.testing.assert_allclose(con_p.utilities, con.utilities[perm])
        alpha = rand_alpha(rng, 4)
        part = ((0, 1, 2, 3),) if rs else None
        v = core_violation(mk, alpha, partition=part).violation
        v_p = core_violation(mk_p, alpha[np.ix_(perm, perm)], partition=part).violation
        assert v_p == pytest.approx(v, abs=1e-12)


# --- dynamic


def test_dynamic_by_hand_and_records():
    mk = Market([300.0, 200.0, 200.0], curve)  # {1, 2} holds 400 > 300: it blocks no sharing
    res = exchange_dynamic(mk)
    assert res.converged and res.blocking == ((1, 2),)
    assert res.trajectory.shape == (2, 3, 3)
    np.testing.assert_allclose(res.violations, [0.5, 0.0])
    np.testing.assert_allclose(utilities(mk, res.alpha), [0.0, 0.5, 0.5])
    assert core_violation(mk, res.alpha, grid_step=0.1).violation == 0.0


def test_dynamic_reaches_core_on_random_wta_markets():
    rng = np.random.default_rng(51)
    for _ in range(6):
        n = int(rng.integers(3, 5))
        mk = Market(rand_sizes(rng, n), curve)
        res = exchange_dynamic(mk)
        assert res.converged
        assert pooling_violation(mk, res.alpha) == 0.0
        assert res.violations.shape == (res.rounds + 1,)


def test_dynamic_revenue_sharing_tracks_partition():
    mk = Market(
        [300.0, 200.0, 200.0], curve, demand="logit", rationality=20.0, revenue_sharing=True
    )
    res = exchange_dynamic(mk)
    assert res.converged
    assert core_violation(mk, res.alpha, partition=res.partition).violation <= 1e-9


def test_apply_deviation_cuts_boundary_flows():
    a = np.full((4, 4), 0.3)
    np.fill_diagonal(a, 0.0)
    out = apply_deviation(a, (0, 2), [[0.0, 0.9], [0.1, 0.0]])
    assert out[0, 2] == 0.9 and out[2, 0] == 0.1
    assert np.all(out[np.ix_([0, 2], [1, 3])] == 0) and np.all(out[np.ix_([1, 3], [0, 2])] == 0)
    assert out[1, 3] == 0.3 and out[3, 1] == 0.3


def test_set_partitions_bell_numbers():
    assert [len(set_partitions(range(k))) for k in range(1, 6)] == [1, 2, 5, 15, 52]
    assert len(set(set_partitions(range(4)))) == 15


# --- estimator and bad input


def test_game_estimator():
    game = DataExchangeGame(demand="logit", rationality=5.0, revenue_sharing=True)
    res = game.fit([300.0, 200.0, 100.0], curve).solve()
    assert res.converged and game.result_ is res
    assert game.violation(res.alpha, partition=res.partition) <= 1e-9
    with pytest.raises(RuntimeError, match="fit"):
        DataExchangeGame().solve()


def test_bad_inputs_core():
    mk = Market([300.0, 200.0, 100.0], curve)
    z = np.zeros((3, 3))
    with pytest.raises(ValueError, match="empty"):
        best_deviation(mk, z, [])
    with pytest.raises(ValueError, match="unknown firm ids"):
        best_deviation(mk, z, [0, 5])
    with pytest.raises(ValueError, match="grid_step"):
        best_deviation(mk, z, [0, 1], grid_step=0.0)
    with pytest.raises(ValueError, match="eps"):
        core_violation(mk, z, eps=-1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        core_violation(mk, np.full((3, 3), 2.0) - 2 * np.eye(3))
    with pytest.raises(ValueError, match="unknown method"):
        find_core_exchange(mk, method="annealing")
    with pytest.raises(ValueError, match="revenue_sharing"):
        core_violation(mk, z, partition=[[0], [1], [2]])
    with pytest.raises(TypeError, match="Market"):
        core_violation("market", z)
    # More than MAX_FIRMS firms are refused when the market is built (issue 10).
    with pytest.raises(ValueError, match="sizes: n = 7 firms, more than the limit of MAX_FIRMS"):
        Market(np.arange(1.0, 8.0), curve)


def test_coalition_values_feed_the_construction():
    mk = Market(
        [100.0, 260.0, 250.0, 400.0], curve, demand="logit", rationality=9.0, revenue_sharing=True
    )
    con = constructive_core(mk)
    first = con.partition[0]
    best = max(
        coalition_value(mk, c) for k in range(1, 5) for c in itertools.combinations(range(4), k)
    )
    assert coalition_value(mk, first) == pytest.approx(best)
