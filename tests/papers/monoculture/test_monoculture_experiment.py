"""Smoke run of the monoculture experiment and its claims."""

from neurips26.registry import get_paper


def test_smoke_run_deterministic_and_claims_evaluate():
    paper = get_paper("monoculture")
    exp = paper.experiment()
    cfg = exp.TIERS["smoke"]
    a = exp.run(cfg)
    b = exp.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    assert a.metrics["synth_accuracy_mean_excess"] > 0
    assert "mean_excess_by_null" in a.figures
    assert len(paper.evaluate(a.metrics, "smoke")) == len(paper.claims)
