"""The smoke tier runs, its metrics are what the claims need, and the baselines lose."""

import math

from neurips26.papers.sfd_edgar import experiment
from neurips26.papers.sfd_edgar.paper import PAPER


def test_smoke_run():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    for claim in PAPER.claims:
        if "smoke" in claim.tiers:
            assert claim.metric in m, claim.id
    assert m["golden_exact"] == 1.0 and m["mmd_roundtrip"] == 1.0
    assert m["duplication_ours"] == 0.0 and m["hidden_leak"] == 0.0
    assert m["cell_f1_ours"] > m["cell_f1_html2text"] + 0.2
    assert m["fact_recall_ours"] == 1.0
    assert 0 < m["token_ratio_html_ours"] < m["token_ratio_html_markdownify"]
    assert set(res.volatile) >= {"seconds_ours", "mb_per_s_ours"}
    assert {row["converter"] for row in res.tables["converters"]} >= {"ours", "html2text"}


def test_claims_carry_bootstrap_intervals_and_controls():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    for claim in PAPER.claims:
        if claim.kind == "paper" and claim.tiers and "smoke" in claim.tiers:
            assert claim.metric in res.intervals, claim.id
            assert claim.control or claim.no_control, claim.id
    # per-table TEDS varies, so its margin has a non-degenerate interval
    iv = res.intervals["teds_margin_all"]
    assert iv["hi"] - iv["lo"] > 0 and "gold tables" in iv["method"]
    # a number looked up in another row's label is not found: the control fails
    assert m["fact_recall_ours_wrong_label"] < 0.5 < m["fact_recall_ours"]
    # the table-fidelity comparisons score against our own output: checks
    kinds = {c.id: c.kind for c in PAPER.claims}
    assert {kinds[i] for i in ("tables_beat_generic", "tables_beat_all",
                               "cell_f1_beat_all")} == {"check"}
    # the abstract's corpus claims are listed and not run
    for name in experiment.CORPUS_METRICS:
        assert math.isnan(m[name]) and res.reasons[name]
    # the same seed gives the same intervals
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.intervals["teds_margin_all"] == res.intervals["teds_margin_all"]
