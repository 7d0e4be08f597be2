"""Tests of scaling curves on answer logs, the estimator class and the smoke run."""

import numpy as np
import pandas as pd
import pytest

from neurips26.papers.multiagent_neff import (
    EffectiveTeamSize,
    ScalingCurve,
    answer_neff,
    correctness_neff,
    logs_from_table,
    make_task,
    neff_curve,
    scaling_curve,
    simulate_scaling,
)
from neurips26.registry import get_paper


def _equicorrelated(rng, q, n, rho):
    shared = rng.random((q, 1)) < 0.5
    own = rng.random((q, n)) < 0.5
    return np.where(rng.random((q, n)) < np.sqrt(rho), shared, own).astype(int)


def test_known_correlation_recovers_kish_law():
    # oracle: teams with a known correctness correlation rho give c = rho, beta = 0
    rng = np.random.default_rng(0)
    rho = 0.25
    logs = {n: _equicorrelated(rng, 4000, n, rho) for n in (1, 2, 3, 5, 8, 12, 20)}
    curve = neff_curve(logs, level="correctness", num_bootstrap=50)
    assert curve.fit.c == pytest.approx(rho, abs=0.03)
    assert curve.fit.beta < 0.1
    assert curve.fit.regime == "hard_ceiling"
    assert curve.fit.c_ci[0] <= rho <= curve.fit.c_ci[1]


def test_curve_matches_estimators_and_shapes():
    task = make_task(num_questions=60, num_answers=10, seed=0)
    runs = simulate_scaling(task, N_grid=(1, 2, 4, 8), num_runs=2, seed=1)
    ans = {n: r.answers for n, r in runs.items()}
    cur = neff_curve(ans, num_bootstrap=15)
    assert isinstance(cur, ScalingCurve)
    assert cur.replicates.shape == (15, 4)
    assert cur.neff[2] == pytest.approx(answer_neff(runs[4].answers))
    np.testing.assert_allclose(cur.ratio, cur.neff / np.array([1, 2, 4, 8]))
    corr = neff_curve({n: r.correct for n, r in runs.items()}, level="correctness", num_bootstrap=0)
    assert corr.neff[3] == pytest.approx(correctness_neff(runs[8].correct))
    sc = scaling_curve("debate", task=task, N_grid=(1, 2, 4), num_bootstrap=5, num_runs=2)
    assert sc.fit is not None and sc.level == "answer"


def test_long_table_roundtrip_and_estimator_on_dataframe():
    task = make_task(num_questions=30, num_answers=6, seed=0)
    runs = simulate_scaling(task, N_grid=(1, 2, 3, 5), seed=2)
    rows = []
    for n, r in runs.items():
        for q in range(30):
            for i in range(n):
                rows.append(
                    {
                        "question": f"q{q}",
                        "N": n,
                        "agent": i,
                        "answer": f"ans{r.answers[0, q, i]}",
                        "correct": bool(r.correct[0, q, i]),
                    }
                )
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # order must not matter
    logs = logs_from_table(df)
    assert set(logs) == {1, 2, 3, 5} and logs[5].shape == (1, 30, 5)
    est = EffectiveTeamSize(num_bootstrap=10).fit(df)
    direct = neff_curve({n: r.answers for n, r in runs.items()}, num_bootstrap=10)
    np.testing.assert_allclose(est.curve_.neff, direct.neff)
    assert est.regime_ in ("hard_ceiling", "sublinear", "linear", "indeterminate")
    assert est.predict([30]).shape == (1,)
    est_c = EffectiveTeamSize(level="correctness", num_bootstrap=0).fit(df)
    assert est_c.converged_ in (True, False)


def test_bad_logs():
    with pytest.raises(ValueError, match="expected 3"):
        neff_curve({3: np.zeros((5, 2))})
    with pytest.raises(ValueError, match="unknown level"):
        neff_curve({2: np.zeros((5, 2))}, level="votes")
    with pytest.raises(TypeError, match="mapping"):
        neff_curve([np.zeros((5, 2))])
    df = pd.DataFrame(
        {"question": [0, 0, 1], "N": [2, 2, 2], "agent": [0, 1, 0], "answer": [1, 2, 1]}
    )
    with pytest.raises(ValueError, match="ragged"):
        logs_from_table(df)
    with pytest.raises(ValueError, match="lacks column"):
        logs_from_table(df.drop(columns="agent"))
    with pytest.raises(ValueError, match="N_grid"):
        simulate_scaling(make_task(num_questions=5), N_grid=(3, 2))
    with pytest.raises(RuntimeError, match="fit"):
        EffectiveTeamSize().predict([3])


def test_smoke_run_and_claims():
    from neurips26.papers.multiagent_neff import experiment

    res = experiment.run(experiment.TIERS["smoke"])
    assert res.metrics["num_cells"] == 24
    assert isinstance(res.metrics["all_fits_converged"], bool)
    assert {"neff_law_fits", "accuracy_gain"} <= set(res.figures)
    paper = get_paper("multiagent_neff")
    verdicts = paper.evaluate(res.metrics, "smoke")
    assert all(v.verdict == "not run" for v in verdicts)  # claims are small/paper tier
    # every claim's metric exists already at smoke scale except the N<=5 -> N=30 pilot
    missing = {c.metric for c in paper.claims} - set(res.metrics)
    assert missing == {"pilot_frac_within_15pct"}
