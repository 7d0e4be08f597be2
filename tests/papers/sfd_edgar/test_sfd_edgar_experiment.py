"""The smoke tier runs, its metrics are what the claims need, and the baselines lose."""

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


def test_paper_claims_carry_bootstrap_intervals():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    for claim in PAPER.claims:
        if claim.kind == "paper":
            assert claim.uncertainty == f"{claim.metric}_ci", claim.id
            assert m[claim.uncertainty] >= 0, claim.id
    # per-table TEDS varies, so its margin has a non-degenerate interval
    assert m["teds_margin_all_ci"] > 0
    # the same seed gives the same intervals
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.metrics["teds_margin_all_ci"] == m["teds_margin_all_ci"]
