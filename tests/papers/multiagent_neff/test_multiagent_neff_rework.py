"""Tests of the issue-12 rework: claim classification, uncertainties and the k*tau gate."""

import dataclasses

import numpy as np

from neurips26.papers.multiagent_neff import experiment
from neurips26.registry import get_paper

#: Paper claims whose verdict is itself an interval decision (the regime is read from the
#: 95% CI of beta), so they carry no separate half-width.
_REGIME_CLAIMS = {"freeform_sc_sublinear", "freeform_debate_ceiling", "correctness_ceiling"}


def test_claims_classified_and_noisy_paper_claims_carry_uncertainty():
    paper = get_paper("multiagent_neff")
    kinds = {c.id: c.kind for c in paper.claims}
    assert kinds["k_tau_matters"] == "check"  # a precondition of our calibration
    assert kinds["kish_oracle"] == "check"
    assert kinds["dense_debate_no_more_diverse"] == "paper"
    for c in paper.claims:
        if c.kind == "paper" and c.id not in _REGIME_CLAIMS:
            assert c.uncertainty, c.id
            assert c.uncertainty in experiment.METRICS, c.id
    law = next(c for c in paper.claims if c.id == "law_fits")
    assert (law.comparison, law.target) == (">", 0.99)  # the paper's figure


def _mf_config(**kw):
    base = dict(
        num_questions=100, N_grid=(1, 5), num_runs=4, num_bootstrap=10, task_types=("free_form",)
    )
    return dataclasses.replace(experiment.TIERS["smoke"], **{**base, **kw})


def test_collapse_not_judged_without_influence():
    # with no peer influence k*tau cannot matter, and then the collapse claim (trivially
    # "reproduced" by identical curves) is not judged
    metrics, reasons = {}, {}
    experiment._mean_field(_mf_config(influence=0.0), (1, 5), metrics, reasons)
    assert metrics["mf_kt_lo_vs_hi_max_diff"] < 0.1
    assert np.isnan(metrics["mf_collapse_max_diff"])
    assert "not judged" in reasons["mf_collapse_max_diff"]
    verdict = {v.id: v for v in get_paper("multiagent_neff").evaluate(metrics, "small", reasons)}[
        "k_tau_collapse"
    ]
    assert verdict.verdict == "not run" and "not judged" in verdict.detail


def test_collapse_judged_at_default_influence():
    metrics, reasons = {}, {}
    experiment._mean_field(_mf_config(), (1, 5), metrics, reasons)
    assert metrics["mf_kt_lo_vs_hi_max_diff"] >= 0.1
    assert np.isfinite(metrics["mf_collapse_max_diff"])
    assert metrics["mf_collapse_max_diff_ci"] > 0
    assert not reasons


def test_collapse_metric_sees_the_feedback_that_breaks_mean_field():
    # the collapse is not built in: the announced answers' feedback breaks it at second
    # order, so a stronger influence spreads the equal-k*tau curves apart
    spread = {}
    for w in (0.5, 2.0):
        metrics = {}
        cfg = _mf_config(influence=w, num_questions=200, num_runs=6)
        experiment._mean_field(cfg, (1, 5), metrics, {})
        spread[w] = metrics["mf_collapse_max_diff"]
    assert spread[2.0] > 2 * spread[0.5]


def test_dataframe_in_gives_labelled_series_out():
    import pandas as pd

    from neurips26.papers.multiagent_neff import answer_neff_per_question, hill_numbers

    df = pd.DataFrame(
        {"a1": ["A", "B", "C"], "a2": ["A", "B", "D"], "a3": ["A", "C", "E"]},
        index=pd.Index(["q1", "q2", "q3"], name="question"),
    )
    for fn in (hill_numbers, answer_neff_per_question):
        out = fn(df, order=0)
        assert isinstance(out, pd.Series) and out.index.equals(df.index)
        np.testing.assert_array_equal(out.to_numpy(), [1.0, 2.0, 3.0])
        plain = fn(df.to_numpy(), order=0)
        assert isinstance(plain, np.ndarray)
        np.testing.assert_array_equal(plain, out.to_numpy())
