"""Smoke run of the reproduction and its claims."""

import math

from neurips26.common.experiment import RunResult
from neurips26.papers.multiagent_performative import experiment
from neurips26.registry import NOT_RUN, REPRODUCED, get_paper


def test_smoke_run_produces_claim_metrics_and_figures():
    cfg = experiment.TIERS["smoke"]
    res = experiment.run(cfg)
    assert isinstance(res, RunResult)
    paper = get_paper("multiagent_performative")
    verdicts = {c.id: c.verdict for c in paper.evaluate(res.metrics, "smoke")}
    for claim in paper.claims:
        if "smoke" in claim.tiers:
            assert claim.metric in res.metrics, claim.metric
            assert verdicts[claim.id] == REPRODUCED, (claim.id, res.metrics[claim.metric])
        else:
            assert verdicts[claim.id] == NOT_RUN
    assert set(res.figures) == {
        "rate_theory_vs_simulation",
        "transition_and_scalar_constant",
        "excess_loss",
    }
    assert all(png[:4] == b"\x89PNG" for png in res.figures.values())
    assert res.metrics["rho_predictor_accuracy"] == 1.0
    assert res.tables["instances"] and res.tables["single_agent"]
    # the controls fail the claims' tests and the rotated reading is measured
    m = res.metrics
    assert m["super_rrm_cum_excess_ratio_T_over_T10"] > 1.05
    assert m["frac_converged_above"] < 1.0
    assert m["subcritical_min_slope_over_scale"] < 0.01
    for name in ("rotated_max_rate_minus_rho", "rotated_frac_converged_below",
                 "rotated_frac_converged_above", "rotated_frac_rho_m_below_1_above",
                 "rotated_rho_m_predictor_accuracy"):
        assert math.isfinite(m[name]), name
    # the rotated update matrix is no larger than Gamma blockwise: rho(M) <= rho(Gamma)
    for row in res.tables["instances"]:
        assert row["rotated_rho_m"] <= row["rho"] + 1e-9
    assert res.tables["subcritical_control"]
    again = experiment.run(cfg)
    assert again.stable_metrics() == res.stable_metrics()
