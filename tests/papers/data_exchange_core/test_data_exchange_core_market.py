"""The market model: effective data, shares, utilities, coalition values, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.data_exchange_core import (
    Market,
    coalition_value,
    coalitions,
    effective_data,
    market_shares,
    sharing_partition,
    utilities,
)


def curve(d):
    return 0.95 - 1.2 * np.asarray(d, dtype=float) ** -0.6


SIZES = np.array([120.0, 300.0, 80.0, 500.0])


def rand_alpha(rng, n):
    a = rng.random((n, n))
    np.fill_diagonal(a, 0.0)
    return a


# --------------------------------------------------------------------------- shapes / API


def test_shapes_and_basic_values():
    mk = Market(SIZES, curve, demand="logit", rationality=5.0)
    assert mk.num_firms == 4 and mk.total == SIZES.sum()
    a = rand_alpha(np.random.default_rng(0), 4)
    d = effective_data(a, SIZES)
    assert d.shape == (4,)
    u = utilities(mk, a)
    assert u.shape == (4,)
    assert mk.shares(np.tile(SIZES, (7, 1))).shape == (7, 4)
    assert len(coalitions(4)) == 15 and len(coalitions(4, include_grand=False)) == 14
    assert coalitions(3)[:3] == [(0,), (1,), (2,)]


def test_effective_data_zero_exchange_and_by_hand():
    np.testing.assert_array_equal(effective_data(np.zeros((4, 4)), SIZES), SIZES)
    a = np.zeros((3, 3))
    a[0, 1], a[2, 1] = 0.5, 1.0  # firm 1 gets half of firm 0's data and all of firm 2's
    np.testing.assert_allclose(effective_data(a, [10.0, 20.0, 30.0]), [10.0, 55.0, 30.0])
    full = np.ones((3, 3)) - np.eye(3)
    np.testing.assert_allclose(effective_data(full, [10.0, 20.0, 30.0]), [60.0] * 3)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(0, 3),
    st.integers(0, 3),
    st.floats(0.0, 1.0),
)
def test_effective_data_monotone_in_every_entry(seed, i, j, bump):
    if i == j:
        return
    rng = np.random.default_rng(seed)
    a = rand_alpha(rng, 4)
    b = a.copy()
    b[i, j] = max(a[i, j], bump)
    d_a, d_b = effective_data(a, SIZES), effective_data(b, SIZES)
    assert np.all(d_b >= d_a - 1e-12)
    assert d_b[j] - d_a[j] == pytest.approx((b[i, j] - a[i, j]) * SIZES[i])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6),
    st.sampled_from(["wta", "logit"]),
    st.floats(0.1, 100.0),
)
def test_shares_sum_to_one_and_are_nonnegative(acc, demand, lam):
    s = market_shares(np.array(acc), demand=demand, rationality=lam)
    assert s.sum() == pytest.approx(1.0)
    assert np.all(s >= 0)


def test_wta_splits_ties_equally_and_logit_by_hand():
    np.testing.assert_allclose(market_shares([0.8, 0.9, 0.9, 0.7]), [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(market_shares([0.5, 0.5, 0.5]), [1 / 3] * 3)
    a = np.array([0.1, 0.4, 0.2])
    e = np.exp(3.0 * a)
    np.testing.assert_allclose(market_shares(a, demand="logit", rationality=3.0), e / e.sum())


def test_logit_tends_to_wta():
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.random(5)  # no ties (gaps >> 1e-6 almost surely)
        assert np.min(np.diff(np.sort(a))) > 1e-3
        gap = np.abs(
            market_shares(a, demand="logit", rationality=1e4) - market_shares(a, demand="wta")
        )
        assert gap.max() < 1e-6


def test_utilities_revenue_sharing_block_averages():
    mk = Market(SIZES, curve, demand="logit", rationality=5.0)
    rs = Market(SIZES, curve, demand="logit", rationality=5.0, revenue_sharing=True)
    a = np.zeros((4, 4))
    a[0, 2] = 0.3  # 0 and 2 share: one block by default
    s = utilities(mk, a)
    u = utilities(rs, a)
    np.testing.assert_allclose(u[[0, 2]], (s[0] + s[2]) / 2)
    np.testing.assert_allclose(u[[1, 3]], s[[1, 3]])
    u2 = utilities(rs, a, partition=[[0, 1, 2, 3]])
    np.testing.assert_allclose(u2, 0.25)
    assert sharing_partition(a, 4) == ((0, 2), (1,), (3,))


def test_coalition_value_closed_form_by_hand():
    lam = 7.0
    mk = Market(SIZES, curve, demand="logit", rationality=lam)
    m = SIZES
    # S = {0, 1}: members train on m0 + m1, outsiders {2, 3} on m2 + m3.
    a_in, a_out = curve(m[0] + m[1]), curve(m[2] + m[3])
    want = np.exp(lam * a_in) / (2 * np.exp(lam * a_in) + 2 * np.exp(lam * a_out))
    assert coalition_value(mk, [1, 0]) == pytest.approx(want, rel=1e-12)
    # Under WTA: {0} (120 vs 880) loses; {3} (500 vs 500) ties with the pooled rest.
    assert coalition_value(Market(SIZES, curve), [0]) == 0.0
    assert coalition_value(Market(SIZES, curve), [3]) == 0.25
    assert coalition_value(Market(SIZES, curve), [1, 3]) == 0.5  # 800 > 200
    assert coalition_value(Market(SIZES, curve), [0, 1, 2, 3]) == 0.25


def test_utilities_permutation_equivariant():
    rng = np.random.default_rng(5)
    a = rand_alpha(rng, 4)
    perm = rng.permutation(4)
    for demand in ("wta", "logit"):
        mk = Market(SIZES, curve, demand=demand, rationality=4.0)
        mk_p = Market(SIZES[perm], curve, demand=demand, rationality=4.0)
        u = utilities(mk, a)
        u_p = utilities(mk_p, a[np.ix_(perm, perm)])
        np.testing.assert_allclose(u_p, u[perm])


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([1.0, -2.0], "positive"),
        ([1.0, 0.0], "positive"),
        ([1.0, np.nan], "finite"),
        ([1.0, np.inf], "finite"),
        ([5.0], "at least 2 firms"),
        ([[1.0, 2.0]], "1-D"),
    ],
)
def test_bad_sizes(sizes, match):
    with pytest.raises(ValueError, match=match):
        Market(sizes, curve)


def test_bad_market_settings():
    with pytest.raises(ValueError, match="unknown demand"):
        Market([1.0, 2.0], curve, demand="probit")
    with pytest.raises(ValueError, match="rationality"):
        Market([1.0, 2.0], curve, demand="logit", rationality=0.0)
    with pytest.raises(ValueError, match="rationality"):
        Market([1.0, 2.0], curve, demand="logit", rationality=-3.0)
    with pytest.raises(ValueError, match="non-decreasing"):
        Market([1.0, 2.0], lambda d: -np.asarray(d, dtype=float))
    with pytest.raises(ValueError, match="non-finite"):
        Market([1.0, 2.0], lambda d: np.full(np.shape(d), np.nan))
    with pytest.raises(TypeError, match="callable"):
        Market([1.0, 2.0], 0.9)
    with pytest.raises(ValueError, match="unknown demand"):
        market_shares([0.1, 0.2], demand="argmax")
    with pytest.raises(ValueError, match="NaN"):
        market_shares([0.1, np.nan])


@pytest.mark.parametrize(
    ("alpha", "match"),
    [
        ([[0.0, 1.5], [0.0, 0.0]], r"\[0, 1\]"),
        ([[0.0, -0.1], [0.0, 0.0]], r"\[0, 1\]"),
        ([[0.2, 0.5], [0.0, 0.0]], "diagonal"),
        ([[0.0, np.nan], [0.0, 0.0]], "NaN"),
        (np.zeros((3, 3)), "shape"),
    ],
)
def test_bad_alpha(alpha, match):
    with pytest.raises(ValueError, match=match):
        effective_data(alpha, [1.0, 2.0])
    with pytest.raises(ValueError, match=match):
        utilities(Market([1.0, 2.0], curve), alpha)


def test_bad_coalitions_and_partitions():
    mk = Market(SIZES, curve)
    with pytest.raises(ValueError, match="empty"):
        coalition_value(mk, [])
    with pytest.raises(ValueError, match="unknown firm ids"):
        coalition_value(mk, [0, 7])
    with pytest.raises(ValueError, match="twice"):
        coalition_value(mk, [1, 1])
    rs = Market(SIZES, curve, revenue_sharing=True)
    with pytest.raises(ValueError, match="cover every firm"):
        utilities(rs, np.zeros((4, 4)), partition=[[0, 1], [2]])
    with pytest.raises(ValueError, match="revenue_sharing"):
        utilities(mk, np.zeros((4, 4)), partition=[[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="combinatorially"):
        coalitions(9)
    for bad in (0, -2, 2.5):
        with pytest.raises(ValueError, match="positive integer"):
            coalitions(bad)
