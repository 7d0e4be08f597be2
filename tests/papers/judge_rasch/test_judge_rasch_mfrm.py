"""Stage 1 (many-facet Rasch rating scale model): oracles, properties and bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from neurips26.papers.judge_rasch import (
    category_probabilities,
    expected_score,
    fit_mfrm,
    mfrm_gradient,
    mfrm_loglik,
    simulate_benchmark,
)
from neurips26.papers.judge_rasch.mfrm import _mfrm_problem


def _simulate(s=8, d=20, r=3, k=4, seed=0, theta_sd=1.0, tau=None):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, theta_sd, s)
    delta = rng.normal(0, 0.5, d)
    delta -= delta.mean()
    rho = rng.normal(0, 0.3, r)
    rho -= rho.mean()
    tau = np.linspace(-1.5, 1.5, k - 1) if tau is None else np.asarray(tau)
    ss, dd, rr = (
        a.ravel() for a in np.meshgrid(np.arange(s), np.arange(d), np.arange(r), indexing="ij")
    )
    p = category_probabilities(theta[ss] - delta[dd] - rho[rr], tau)
    x = (np.cumsum(p, 1) < rng.random((ss.size, 1))).sum(1) + 1
    df = pd.DataFrame({"system": ss, "item": dd, "rater": rr, "score": x})
    return df, (theta, delta, rho, tau)


def _loop_loglik(theta, delta, rho, tau, df):
    """Direct per-observation log-likelihood, written from the model's definition."""
    total = 0.0
    k_max = len(tau) + 1
    for s, d, r, x in df[["system", "item", "rater", "score"]].itertuples(index=False):
        eta = theta[s] - delta[d] - rho[r]
        # psi_k = sum_{h=2..k} (eta - tau_h), psi_1 = 0
        psi = [sum(eta - tau[h - 2] for h in range(2, k + 1)) for k in range(1, k_max + 1)]
        log_norm = math.log(sum(math.exp(v) for v in psi))
        total += psi[x - 1] - log_norm
    return total


# ---------------------------------------------------------------------------- properties
@settings(max_examples=40, deadline=None)
@given(
    eta=st.floats(-8, 8),
    tau=st.lists(st.floats(-4, 4), min_size=1, max_size=6),
)
def test_category_probabilities_sum_to_one_and_expected_score_increases(eta, tau):
    p = category_probabilities([eta, eta + 0.5], tau)
    assert p.shape == (2, len(tau) + 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(p >= 0)
    e = expected_score([eta, eta + 0.5], tau)
    assert e[1] > e[0]


def test_adjacent_category_log_odds_is_eta_minus_tau():
    tau = np.array([-1.0, 0.3, 1.2])
    p = category_probabilities([0.7], tau)[0]
    np.testing.assert_allclose(np.log(p[1:] / p[:-1]), 0.7 - tau, atol=1e-12)


def test_loglik_equals_per_observation_loop():
    df, (theta, delta, rho, tau) = _simulate(s=4, d=5, r=2, k=4, seed=3)
    ours = mfrm_loglik(theta, delta, rho, tau, df.system, df.item, df.rater, df.score)
    assert ours == pytest.approx(_loop_loglik(theta, delta, rho, tau, df), rel=1e-12)


@pytest.mark.parametrize("rater_thresholds", [False, True])
def test_gradient_matches_finite_differences(rater_thresholds):
    df, (theta, delta, rho, tau) = _simulate(s=4, d=5, r=3, k=4, seed=4)
    rng = np.random.default_rng(0)
    if rater_thresholds:
        tau = tau + rng.normal(0, 0.3, (3, tau.size))
    args = (df.system.to_numpy(), df.item.to_numpy(), df.rater.to_numpy(), df.score.to_numpy())
    grad = mfrm_gradient(theta, delta, rho, tau, *args)
    params = [theta, delta, rho, tau]
    analytic = [grad.theta, grad.delta, grad.rho, grad.tau]
    h = 1e-6
    for i, (p, g) in enumerate(zip(params, analytic, strict=True)):
        assert g.shape == p.shape
        flat = p.ravel()
        for j in range(flat.size):
            up, dn = [q.copy() for q in params], [q.copy() for q in params]
            up[i].ravel()[j] += h
            dn[i].ravel()[j] -= h
            fd = (mfrm_loglik(*up, *args) - mfrm_loglik(*dn, *args)) / (2 * h)
            assert g.ravel()[j] == pytest.approx(fd, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("thresholds", ["shared", "rater"])
def test_information_matches_finite_difference_hessian(thresholds):
    df, _ = _simulate(s=4, d=5, r=2, k=4, seed=5)
    prob = _mfrm_problem(
        df.system.to_numpy(),
        df.item.to_numpy(),
        df.rater.to_numpy(),
        df.score.to_numpy() - 1,
        sizes=(4, 5, 2),
        num_categories=4,
        thresholds=thresholds,
        ridge=1e-3,
    )
    b = np.random.default_rng(1).normal(0, 0.5, prob.basis.shape[1])
    info = prob.information(b)
    h = 1e-6
    num = np.zeros_like(info)
    for j in range(b.size):
        e = np.zeros(b.size)
        e[j] = h
        num[:, j] = -(prob.value_grad(b + e)[1] - prob.value_grad(b - e)[1]) / (2 * h)
    np.testing.assert_allclose(info, num, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- oracles
def test_optimum_matches_scipy_on_loop_likelihood():
    df, _ = _simulate(s=3, d=4, r=2, k=3, seed=6)
    fit = fit_mfrm(df, num_categories=3, ridge=0.0)

    def unpack(v):  # sum-to-zero parametrisation, written independently
        theta = v[:3]
        delta = np.append(v[3:6], -v[3:6].sum())
        rho = np.array([v[6], -v[6]])
        tau = np.array([v[7], -v[7]])
        return theta, delta, rho, tau

    res = minimize(
        lambda v: -_loop_loglik(*unpack(v), df), np.zeros(8), method="BFGS", options={"gtol": 1e-8}
    )
    theta, delta, rho, tau = unpack(res.x)
    np.testing.assert_allclose(fit.theta, theta, atol=2e-4)
    np.testing.assert_allclose(fit.delta, delta, atol=2e-4)
    np.testing.assert_allclose(fit.rho, rho, atol=2e-4)
    np.testing.assert_allclose(fit.tau, tau, atol=2e-4)
    assert fit.loglik == pytest.approx(-res.fun, abs=1e-7)


def test_dichotomous_case_equals_statsmodels_binomial_glm():
    sm = pytest.importorskip("statsmodels.api")
    df, _ = _simulate(s=5, d=12, r=3, k=2, seed=7, tau=[0.0])
    fit = fit_mfrm(df, num_categories=2, ridge=0.0, tol=1e-10)
    # logit P(X=2) = theta_s - delta_d - rho_r with sum delta = sum rho = 0
    n_s, n_d, n_r = 5, 12, 3
    x_theta = np.eye(n_s)[df.system]
    c_d = np.vstack([np.eye(n_d - 1), -np.ones(n_d - 1)])
    c_r = np.vstack([np.eye(n_r - 1), -np.ones(n_r - 1)])
    design = np.hstack([x_theta, -c_d[df.item], -c_r[df.rater]])
    glm = sm.GLM((df.score == 2).astype(float), design, family=sm.families.Binomial()).fit(
        tol=1e-12
    )
    np.testing.assert_allclose(fit.theta, glm.params[:n_s], atol=1e-5)
    np.testing.assert_allclose(fit.delta[:-1], glm.params[n_s : n_s + n_d - 1], atol=1e-5)
    np.testing.assert_allclose(fit.rho[:-1], glm.params[n_s + n_d - 1 :], atol=1e-5)
    np.testing.assert_allclose(fit.theta_se, glm.bse[:n_s], rtol=1e-4)
    assert fit.loglik == pytest.approx(glm.llf, abs=1e-6)


def test_parameter_recovery_within_three_se():
    zs = []
    for seed in range(10):
        df, (theta, delta, rho, tau) = _simulate(s=10, d=40, r=3, k=5, seed=100 + seed)
        fit = fit_mfrm(df, num_categories=5)
        assert fit.converged
        zs += [
            (est - true) / se
            for est, se, true in (
                (fit.theta, fit.theta_se, theta),
                (fit.rho, fit.rho_se, rho),
                (fit.tau, fit.tau_se, tau),
                (fit.delta, fit.delta_se, delta),
            )
        ]
    z = np.concatenate(zs)  # (570,)
    assert np.mean(np.abs(z) < 3) >= 0.99
    assert 0.85 < np.std(z) < 1.15  # SEs neither too small nor too large
    assert abs(np.mean(z)) < 0.15


def test_identification_constraints_and_shapes():
    df, _ = _simulate(s=5, d=8, r=3, k=4, seed=9)
    fit = fit_mfrm(df, num_categories=4)
    assert fit.theta.shape == (5,) and fit.delta.shape == (8,) and fit.rho.shape == (3,)
    assert fit.tau.shape == (3,) and fit.theta_cov.shape == (5, 5)
    assert abs(fit.delta.sum()) < 1e-10 and abs(fit.rho.sum()) < 1e-10
    assert abs(fit.tau.sum()) < 1e-10
    np.testing.assert_allclose(np.sqrt(np.diag(fit.theta_cov)), fit.theta_se)
    table = fit.table("rater")
    assert list(table.columns) == ["rater", "measure", "se", "infit", "outfit"]
    rater_fit = fit_mfrm(df, num_categories=4, thresholds="rater")
    assert rater_fit.tau.shape == (3, 3)
    np.testing.assert_allclose(rater_fit.tau.sum(axis=1), 0, atol=1e-10)
    assert rater_fit.loglik >= fit.loglik - 1e-8  # nested models


def test_fit_statistics_near_one_on_model_data_and_flag_noisy_rater():
    bench = simulate_benchmark(
        num_systems=10,
        num_items=60,
        num_raters=4,
        num_dimensions=1,
        num_misfit_raters=1,
        misfit_rate=0.6,
        seed=2,
    )
    fit = fit_mfrm(bench.ratings.drop(columns="dimension"), num_categories=5)
    assert fit.outfit["rater"][0] > 1.5  # the planted misfit
    clean = [r for r in range(4) if r != 0]
    assert np.all((fit.outfit["rater"][clean] > 0.5) & (fit.outfit["rater"][clean] < 1.5))
    df, _ = _simulate(s=10, d=60, r=3, k=5, seed=10)
    fit = fit_mfrm(df, num_categories=5)
    for facet in ("system", "item", "rater"):
        assert 0.9 <= np.mean(fit.infit[facet]) <= 1.1
        assert 0.9 <= np.mean(fit.outfit[facet]) <= 1.1


def test_inputs_as_mapping_and_array_give_same_fit():
    df, _ = _simulate(s=4, d=6, r=2, k=3, seed=11)
    a = fit_mfrm(df, num_categories=3)
    b = fit_mfrm({c: df[c].to_numpy() for c in df.columns}, num_categories=3)
    c = fit_mfrm(df.to_numpy(), num_categories=3)
    np.testing.assert_allclose(a.theta, b.theta)
    np.testing.assert_allclose(a.theta, c.theta)


# ---------------------------------------------------------------------------- bad input
@pytest.fixture
def ratings():
    return _simulate(s=4, d=6, r=2, k=4, seed=12)[0]


def test_missing_column(ratings):
    with pytest.raises(ValueError, match=r"missing column.*'rater'"):
        fit_mfrm(ratings.drop(columns="rater"), num_categories=4)


def test_nan_score(ratings):
    bad = ratings.astype({"score": float})
    bad.loc[3, "score"] = np.nan
    with pytest.raises(ValueError, match="'score' has 1 missing"):
        fit_mfrm(bad, num_categories=4)


def test_non_integer_and_out_of_range_scores(ratings):
    bad = ratings.astype({"score": float})
    bad.loc[0, "score"] = 2.5
    with pytest.raises(ValueError, match="integers"):
        fit_mfrm(bad, num_categories=4)
    bad = ratings.copy()
    bad.loc[0, "score"] = 7
    with pytest.raises(ValueError, match=r"1\.\.4"):
        fit_mfrm(bad, num_categories=4)


def test_empty_category_named_or_collapsed(ratings):
    bad = ratings.copy()
    bad.loc[bad.score == 3, "score"] = 2
    with pytest.raises(ValueError, match=r"\[3\] never observed"):
        fit_mfrm(bad, num_categories=4)
    fit = fit_mfrm(bad, num_categories=4, collapse_empty=True)
    assert fit.num_categories == 3 and list(fit.data.categories) == [1, 2, 4]


def test_constant_scores(ratings):
    with pytest.raises(ValueError, match="constant"):
        fit_mfrm(ratings.assign(score=2), num_categories=4)


def test_ragged_and_wrong_types(ratings):
    with pytest.raises(ValueError, match="ragged"):
        fit_mfrm(
            {"system": [0, 1], "item": [0, 1, 2], "rater": [0, 0], "score": [1, 2]},
            num_categories=2,
        )
    with pytest.raises(TypeError, match="DataFrame"):
        fit_mfrm([1, 2, 3], num_categories=2)
    with pytest.raises(ValueError, match="shape"):
        fit_mfrm(np.zeros((5, 3)), num_categories=2)
    with pytest.raises(ValueError, match="empty"):
        fit_mfrm(ratings.iloc[:0], num_categories=4)


def test_too_few_levels_and_bad_hyperparameters(ratings):
    with pytest.raises(ValueError, match="at least 2 systems"):
        fit_mfrm(ratings[ratings.system == 0], num_categories=4)
    with pytest.raises(ValueError, match="at least 2 items"):
        fit_mfrm(ratings[ratings.item == 0], num_categories=4)
    with pytest.raises(ValueError, match="num_categories must be >= 2"):
        fit_mfrm(ratings, num_categories=1)
    with pytest.raises(TypeError, match="num_categories must be an int"):
        fit_mfrm(ratings, num_categories=4.0)
    with pytest.raises(ValueError, match="thresholds"):
        fit_mfrm(ratings, num_categories=4, thresholds="item")
    with pytest.raises(ValueError, match="ridge"):
        fit_mfrm(ratings, num_categories=4, ridge=-1.0)


def test_disconnected_design_raises():
    a = _simulate(s=3, d=4, r=1, k=3, seed=13)[0]
    b = _simulate(s=3, d=4, r=1, k=3, seed=14)[0]
    b = b.assign(system=b.system + 10, item=b.item + 10, rater=b.rater + 10)
    with pytest.raises(ValueError, match="disconnected into 2 subsets"):
        fit_mfrm(pd.concat([a, b]), num_categories=3)


def test_nested_design_warns_and_keeps_system_contrasts():
    df, _ = _simulate(s=5, d=30, r=2, k=4, seed=15, theta_sd=0.5)
    nested = df[df.rater == (df.item % 2)]  # every item rated by one rater only
    with pytest.warns(RuntimeWarning, match="not fully identified"):
        fit = fit_mfrm(nested, num_categories=4)
    assert not fit.identified
    assert np.all(np.isfinite(fit.theta_se)) and np.all(fit.theta_se < 1.5)


def test_non_convergence_is_reported(ratings):
    with pytest.warns(RuntimeWarning, match="did not converge"):
        fit = fit_mfrm(ratings, num_categories=4, max_iter=1, tol=1e-14, dense_limit=0)
    assert fit.converged is False


def test_rater_thresholds_need_every_category_per_rater(ratings):
    bad = ratings.copy()
    bad.loc[(bad.rater == 1) & (bad.score == 4), "score"] = 3
    with pytest.raises(ValueError, match="never uses category 4"):
        fit_mfrm(bad, num_categories=4, thresholds="rater")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_mfrm(bad, num_categories=4)  # shared thresholds are fine
