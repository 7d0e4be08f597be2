"""Oracle, property and bad-input tests of the N_eff estimators."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy

from neurips26.papers.multiagent_neff import (
    answer_neff,
    correctness_neff,
    hill_numbers,
    kish_neff,
    mean_pairwise_correlation,
)


def test_hill_numbers_match_scipy_entropy():
    rng = np.random.default_rng(0)
    answers = rng.integers(0, 6, size=(50, 9))
    ours = hill_numbers(answers, order=1)
    ref = [np.exp(entropy(np.bincount(row, minlength=6))) for row in answers]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    ref2 = [1 / np.sum((np.bincount(row) / 9) ** 2) for row in answers]
    np.testing.assert_allclose(hill_numbers(answers, order=2), ref2, rtol=1e-12)
    ref0 = [len(set(row)) for row in answers]
    np.testing.assert_allclose(hill_numbers(answers, order=0), ref0)


def test_answer_neff_special_cases_and_labels():
    distinct = np.arange(40).reshape(5, 8)
    unanimous = np.repeat(np.arange(5)[:, None], 8, axis=1)
    for order in (0, 1, 2, 3.5):
        assert answer_neff(distinct, order=order) == pytest.approx(8)
        assert answer_neff(unanimous, order=order) == pytest.approx(1)
    strings = [["4", "four", "4", "x"], ["a", "a", "a", "b"]]
    codes = [[0, 1, 0, 2], [3, 3, 3, 4]]
    assert answer_neff(strings) == pytest.approx(answer_neff(codes))
    runs = np.stack([distinct, unanimous])  # (R=2, Q, N)
    assert answer_neff(runs) == pytest.approx(4.5)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 5), min_size=6, max_size=6), min_size=2, max_size=8),
    st.floats(0, 4),
)
def test_answer_neff_bounds_and_invariances(rows, order):
    x = np.array(rows)
    v = answer_neff(x, order=order)
    assert 1 - 1e-9 <= v <= x.shape[1] + 1e-9
    perm = np.random.default_rng(0).permutation(x.shape[1])
    assert answer_neff(x[:, perm], order=order) == pytest.approx(v)  # agent order
    assert answer_neff(x + 100, order=order) == pytest.approx(v)  # relabelling


def test_mean_pairwise_correlation_matches_corrcoef_and_weights():
    rng = np.random.default_rng(1)
    x = (rng.random((80, 6)) < 0.4).astype(float)
    x[:, 1] = np.maximum(x[:, 0], x[:, 1])
    c = np.corrcoef(x.T)
    expected = (c.sum() - 6) / 30
    assert mean_pairwise_correlation(x) == pytest.approx(expected, rel=1e-10)
    w = rng.multinomial(80, np.full(80, 1 / 80), size=3).astype(float)  # (B, Q)
    got = mean_pairwise_correlation(x, w)
    for b in range(3):
        xr = np.repeat(x, w[b].astype(int), axis=0)  # the resample itself
        cr = np.corrcoef(xr.T)
        assert got[b] == pytest.approx((cr.sum() - 6) / 30, rel=1e-9)


def test_correctness_neff_independent_agents_is_n():
    rng = np.random.default_rng(2)
    x = rng.random((20000, 10)) < 0.6
    assert correctness_neff(x) == pytest.approx(10, rel=0.05)
    runs = rng.random((40, 300, 10)) < rng.random((1, 300, 1))  # p_q varies by question
    assert correctness_neff(runs, method="variance") == pytest.approx(10, rel=0.1)


@pytest.mark.parametrize("rho", [0.1, 0.4])
def test_correctness_neff_equicorrelated_is_kish(rho):
    rng = np.random.default_rng(3)
    q, n = 20000, 8
    shared = rng.random((q, 1)) < 0.5  # latent variable shared by the team
    own = rng.random((q, n)) < 0.5
    x = np.where(rng.random((q, n)) < np.sqrt(rho), shared, own)  # corr = rho
    assert correctness_neff(x) == pytest.approx(kish_neff(n, rho)[0], rel=0.05)
    # a different, wrong rho must not pass: the test can fail
    assert abs(correctness_neff(x) - kish_neff(n, rho + 0.1)[0]) > 0.05 * kish_neff(n, rho)[0]


def test_correctness_neff_clones_and_single_agent():
    rng = np.random.default_rng(4)
    col = rng.random((100, 1)) < 0.5
    assert correctness_neff(np.repeat(col, 5, axis=1)) == pytest.approx(1.0)
    assert correctness_neff(col) == 1.0


@pytest.mark.parametrize(
    "bad,match",
    [
        ([[0, 1, 1]], "at least 2 questions"),
        (np.zeros((0, 3)), "empty"),
        ([[0, 1], [1, np.nan]], "missing"),
        ([[0, 1], [1, None]], "missing"),
        (np.zeros((2, 2, 2, 2)), "shape"),
        ([[0, 1, 2], [1, 0]], "ragged"),
    ],
)
def test_bad_answer_logs(bad, match):
    with pytest.raises(ValueError, match=match):
        answer_neff(bad)


def test_bad_correctness_logs():
    with pytest.raises(ValueError, match="0/1"):
        correctness_neff([[0, 2], [1, 0]])
    with pytest.raises(ValueError, match="constant"):
        correctness_neff([[1, 0], [1, 1], [1, 0]])
    with pytest.raises(ValueError, match="unknown method"):
        correctness_neff([[1, 0], [0, 1]], method="simpson")
    with pytest.raises(ValueError, match="repeated runs"):
        correctness_neff([[1, 0], [0, 1]], method="variance")
    with pytest.raises(ValueError, match="order"):
        answer_neff([[1, 0], [0, 1]], order=-1)
