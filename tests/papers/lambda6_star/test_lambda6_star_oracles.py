"""Oracle tests: independent implementations, libraries and closed forms."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.linear_model import LinearRegression

from neurips26.papers.lambda6_star import (
    IllPosedWarning,
    expected_kendall_tau,
    g_coefficient,
    guttman_lambda6,
    lambda6_star,
    lambda6_star_loo,
    select_items,
    shrinkage_intensity,
    signal_to_noise,
    spearman_brown,
    variance_components,
)


def _signal_matrix(n, k, seed, *, noise=1.0, binary=False):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, 1)) + noise * rng.normal(size=(n, k)) + rng.normal(size=(1, k))
    return (y > 0).astype(float) if binary else y


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(12, 5), (30, 20), (8, 40)])
def test_g_coefficient_equals_pingouin_cronbach_alpha(seed, shape):
    pingouin = pytest.importorskip("pingouin")
    y = _signal_matrix(*shape, seed, noise=1.5)
    alpha, _ci = pingouin.cronbach_alpha(pd.DataFrame(y))
    assert alpha > 0  # the G coefficient is truncated at 0; keep to the positive regime
    assert g_coefficient(y) == pytest.approx(alpha, rel=1e-10)


def test_variance_components_equal_statsmodels_two_way_anova():
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    n, k = 15, 9
    y = _signal_matrix(n, k, seed=3)
    long = pd.DataFrame(
        {"y": y.ravel(), "model": np.repeat(np.arange(n), k), "item": np.tile(np.arange(k), n)}
    )
    table = sm.stats.anova_lm(ols("y ~ C(model) + C(item)", data=long).fit(), typ=2)
    ms = table["sum_sq"] / table["df"]
    ms_model, ms_item, ms_res = ms["C(model)"], ms["C(item)"], ms["Residual"]
    vc = variance_components(y)
    assert vc.ms_model == pytest.approx(ms_model, rel=1e-10)
    assert vc.ms_item == pytest.approx(ms_item, rel=1e-10)
    assert vc.residual_var == pytest.approx(ms_res, rel=1e-10)
    assert vc.model_var == pytest.approx((ms_model - ms_res) / k, rel=1e-10)
    assert vc.item_var == pytest.approx((ms_item - ms_res) / n, rel=1e-10)
    assert g_coefficient(y) == pytest.approx((ms_model - ms_res) / ms_model, rel=1e-10)  # Hoyt


def test_snr_reliability_identity_and_spearman_brown_reprojection():
    y = _signal_matrix(20, 16, seed=5, noise=2.0)
    rho, snr = g_coefficient(y), signal_to_noise(y)
    assert rho == pytest.approx(snr / (1 + snr), rel=1e-12)
    # rho_K' via num_items equals Spearman-Brown from rho_1 and from rho_K
    rho1 = g_coefficient(y, num_items=1)
    assert g_coefficient(y, num_items=40) == pytest.approx(spearman_brown(rho1, 40), rel=1e-12)
    assert g_coefficient(y, num_items=8) == pytest.approx(spearman_brown(rho, 0.5), rel=1e-12)
    assert signal_to_noise(y, num_items=32) == pytest.approx(2 * snr, rel=1e-12)


def _lambda6_by_regression(y):
    c = np.cov(y, rowvar=False)
    err = []
    for j in range(y.shape[1]):
        x = np.delete(y, j, axis=1)
        r2 = LinearRegression().fit(x, y[:, j]).score(x, y[:, j])
        err.append(c[j, j] * (1 - r2))  # e_j^2 = var_j (1 - R_j^2)
    return 1 - np.sum(err) / c.sum(), np.array(err)


@pytest.mark.parametrize("seed", range(3))
def test_guttman_lambda6_matches_sklearn_regressions(seed):
    y = _signal_matrix(60, 8, seed, noise=1.3)
    expected, err = _lambda6_by_regression(y)
    assert guttman_lambda6(y) == pytest.approx(expected, abs=1e-8)
    res = lambda6_star(y, shrinkage=0.0)
    np.testing.assert_allclose(res.item_error_var, err, atol=1e-8)


def test_guttman_lambda6_hand_checked_two_items():
    # Two items with covariance [[1, r], [r, 1]]: e^2 = 1 - r^2 each, 1'C1 = 2 + 2r,
    # lambda6 = 1 - 2(1 - r^2)/(2 + 2r) = r.
    rng = np.random.default_rng(0)
    y = rng.normal(size=(50, 2))
    r = np.corrcoef(y, rowvar=False)[0, 1]
    z = (y - y.mean(0)) / y.std(0, ddof=1)
    assert guttman_lambda6(z) == pytest.approx(r, abs=1e-12)


def test_lambda6_is_one_and_warns_when_k_at_least_n():
    y = _signal_matrix(10, 10, seed=1)
    with pytest.warns(IllPosedWarning, match="K=10 items >= N=10"):
        assert guttman_lambda6(y) == 1.0
    with pytest.warns(IllPosedWarning):
        assert lambda6_star(y, shrinkage=0.0).value == 1.0
    # the proxy's delta -> 0 limit really collapses to 1 (computed, not asserted)
    assert lambda6_star(y, shrinkage=1e-12, solver="woodbury").value == pytest.approx(1, abs=1e-9)


def test_lambda6_star_tends_to_classical_as_shrinkage_vanishes():
    y = _signal_matrix(80, 12, seed=2)
    classical = guttman_lambda6(y)
    for solver in ("woodbury", "dense"):
        near = lambda6_star(y, shrinkage=1e-7, solver=solver).value
        assert near == pytest.approx(classical, abs=1e-5)
    assert lambda6_star(y, shrinkage=0.0).value == pytest.approx(classical, abs=1e-12)
    # and is monotone towards 1 - sum var / 1'C1 at delta = 1
    full = lambda6_star(y, shrinkage=1.0)
    np.testing.assert_allclose(full.item_error_var, np.var(y, axis=0, ddof=1), rtol=1e-12)


@pytest.mark.parametrize("shape", [(30, 300), (100, 60), (40, 41), (25, 150)])
@pytest.mark.parametrize("delta", [0.01, 0.3, 0.9])
def test_woodbury_equals_dense_inverse(shape, delta):
    y = _signal_matrix(*shape, seed=shape[1], binary=True)
    w = lambda6_star(y, shrinkage=delta, solver="woodbury")
    d = lambda6_star(y, shrinkage=delta, solver="dense")
    # independent: C_delta built in covariance units and inverted with np.linalg.inv
    c = np.cov(y[:, w.kept_items], rowvar=False)
    s = np.sqrt(np.diag(c))
    r = c / np.outer(s, s)
    c_delta = np.outer(s, s) * ((1 - delta) * r + delta * np.eye(len(s)))
    err = 1 / np.diag(np.linalg.inv(c_delta))
    np.testing.assert_allclose(w.item_error_var, d.item_error_var, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(w.item_error_var, err, rtol=1e-8, atol=1e-12)
    assert w.value == pytest.approx(1 - err.sum() / c.sum(), abs=1e-8)


def test_shrinkage_intensity_matches_pairwise_loop():
    n, k = 12, 15
    y = _signal_matrix(n, k, seed=7)
    xs = (y - y.mean(0)) / y.std(0, ddof=1)
    num = den = 0.0
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            w = xs[:, i] * xs[:, j]
            num += n / (n - 1) ** 3 * np.sum((w - w.mean()) ** 2)  # Var^(r_ij)
            den += (n / (n - 1) * w.mean()) ** 2  # r_ij^2
    assert shrinkage_intensity(y) == pytest.approx(min(1.0, num / den), rel=1e-10)
    assert lambda6_star(y).shrinkage == pytest.approx(min(1.0, num / den), rel=1e-10)


def test_lambda6_star_loo_matches_brute_force_ridge():
    from sklearn.linear_model import Ridge

    n, k, ridge = 14, 20, 0.8  # K > N: the regime that matters
    y = _signal_matrix(n, k, seed=11)
    res = lambda6_star_loo(y, ridge=ridge)
    xc = y - y.mean(0)
    z = xc / np.sqrt((xc**2).sum(0))
    r2 = []
    for j in range(k):
        x, t = np.delete(z, j, axis=1), z[:, j]
        pred = np.empty(n)
        for i in range(n):
            keep = np.arange(n) != i
            pred[i] = Ridge(alpha=ridge).fit(x[keep], t[keep]).predict(x[i : i + 1])[0]
        r2.append(1 - np.sum((t - pred) ** 2) / np.sum(t**2))
    np.testing.assert_allclose(res.item_r2, np.clip(r2, 0, 1), atol=1e-10)
    var = np.var(y, axis=0, ddof=1)
    assert res.value == pytest.approx(1 - np.sum(var * (1 - res.item_r2)) / np.cov(y.T).sum())


def test_greedy_first_pick_and_path_equal_direct_recomputation():
    y = _signal_matrix(25, 40, seed=4, binary=True)
    full = lambda6_star(y)
    sel = select_items(y, 12, rule="greedy")
    kept = full.kept_items
    assert sel.indices[0] == kept[np.argmax(full.item_r2)]  # argmax R*_j^2
    err = dict(zip(kept, full.item_error_var, strict=True))
    c = np.cov(y, rowvar=False)
    for t in range(12):
        s = sel.indices[: t + 1]
        direct = 1 - sum(err[i] for i in s) / c[np.ix_(s, s)].sum()
        assert sel.objective_path[t] == pytest.approx(direct, abs=1e-10)
    # each greedy step is the best one-item extension
    s = list(sel.indices[:5])
    cand = [j for j in kept if j not in s]
    vals = [1 - (sum(err[i] for i in s) + err[j]) / c[np.ix_([*s, j], [*s, j])].sum() for j in cand]
    assert sel.indices[5] == cand[int(np.argmax(vals))]


def test_refit_each_step_objective_is_the_subset_lambda6_star():
    y = _signal_matrix(20, 15, seed=9, binary=True)
    sel = select_items(y, 5, refit="each_step", rule="greedy")
    for t in range(1, 5):
        sub = y[:, sel.indices[: t + 1]]
        assert sel.objective_path[t] == pytest.approx(lambda6_star(sub).value, abs=1e-12)
    assert len(set(sel.indices.tolist())) == 5


def test_expected_tau_arcsine_law_by_monte_carlo():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    for rho in (0.3, 0.7, 0.9):
        x = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=5000)
        tau = kendalltau(x[:, 0], x[:, 1]).statistic
        assert tau == pytest.approx(expected_kendall_tau(rho), abs=0.02)
        # against the truth: a form with reliability rho correlates sqrt(rho) with the truth
        t = rng.normal(size=5000)
        form = t + rng.normal(scale=np.sqrt(1 / rho - 1), size=5000)
        tau_t = kendalltau(t, form).statistic
        assert tau_t == pytest.approx(expected_kendall_tau(rho, against="truth"), abs=0.02)


def _congeneric(n, k, seed, *, true_rel_items=None):
    rng = np.random.default_rng(seed)
    loadings = rng.uniform(0.3, 1.0, size=k)
    err_sd = rng.uniform(0.8, 1.5, size=k)
    y = rng.normal(size=(n, 1)) * loadings + rng.normal(size=(n, k)) * err_sd
    true = loadings.sum() ** 2 / (loadings.sum() ** 2 + np.sum(err_sd**2))  # omega
    return y, true


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_lambda6_is_a_lower_bound_when_k_much_less_than_n(seed):
    y, true = _congeneric(2000, 8, seed)
    assert guttman_lambda6(y) <= true + 0.01


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_lambda6_star_does_not_overshoot_true_reliability_when_k_much_greater_than_n(seed):
    vals, trues = [], []
    for rep in range(3):
        y, true = _congeneric(40, 400, seed * 7 + rep)
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllPosedWarning)  # the proxy never warns
            vals.append(lambda6_star(y).value)
        trues.append(true)
    assert np.mean(vals) <= np.mean(trues) + 0.03
    assert all(0 < v < 1 for v in vals)


def test_variance_components_hand_checked_example():
    # rows means 2/3, 1/3, 1, 0; column means 3/4, 1/2, 1/4; grand mean 1/2.
    # SS_model = 5/3, SS_item = 1/2, SS_res = 3 - 5/3 - 1/2 = 5/6 on 6 df.
    y = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    vc = variance_components(y)
    assert vc.ms_model == pytest.approx(5 / 9)
    assert vc.residual_var == pytest.approx(5 / 36)
    assert vc.model_var == pytest.approx((5 / 9 - 5 / 36) / 3)  # = 5/36
    assert vc.item_var == pytest.approx((1 / 4 - 5 / 36) / 4)  # = 1/36
    assert g_coefficient(y) == pytest.approx(0.75)  # (MS_m - MS_res) / MS_m


def test_selection_does_not_fill_the_budget_with_copies_of_one_pattern():
    """Few models, many items: copies of one response pattern are predicted exactly by
    each other and inflate V(S), so keeping them lets greedy pick copy after copy;
    duplicates="collapse" stops that (the default keeps every item, see the few-model
    tests of test_lambda6_star_selection.py for why)."""
    from neurips26.papers.lambda6_star import simulate_irt

    sim = simulate_irt(num_models=12, num_items=300, num_runs=1, seed=3)
    y = sim.scores[0]
    y = y[:, np.ptp(y, axis=0) > 0]
    copy = y[:, [int(np.argmax(y.var(axis=0)))]]
    y = np.hstack([y, np.repeat(copy, 200, axis=1)])  # one pattern, 201 times in all
    keep = select_items(y, 20, duplicates="keep", rule="greedy")
    assert np.unique(y[:, keep.indices], axis=1).shape[1] < 10  # mostly copies
    sel = select_items(y, 20, duplicates="collapse")
    assert sel.num_duplicates >= 200
    assert np.unique(y[:, sel.indices], axis=1).shape[1] == 20  # all distinct
    truth = stats.kendalltau(y[:, sel.indices].mean(1), sim.ability).statistic
    dup = stats.kendalltau(y[:, keep.indices].mean(1), sim.ability).statistic
    assert truth > dup
    with pytest.raises(ValueError, match="duplicates"):
        select_items(y, 5, duplicates="drop")
    with pytest.raises(ValueError, match="distinct item response columns"):
        select_items(np.hstack([copy, copy, 1 - copy]), 3, duplicates="collapse")
    assert select_items(np.hstack([copy, copy, 1 - copy]), 3).num_duplicates == 0  # "keep"
