"""qc_a2s: the smoke tier runs on a tiny random LLaMA-layout model and passes its checks."""

from __future__ import annotations

import math

import pytest

from neurips26.common.experiment import is_declared
from neurips26.papers.qc_a2s.experiment import METRICS, TIERS, Config, run
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return run(TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert m["snn_ann_max_abs_diff"] == 0.0 and m["closed_form_mismatch"] == 0.0
    assert m["max_spikes_per_neuron"] == 1 and 0 < m["spikes_per_neuron"] <= 1
    assert m["num_stages"] == 4 and m["qc_latency_steps"] == m["qc_min_steps"] * 4
    cfg = TIERS["smoke"]
    for meth in ("qc", "nocalib", "floor", "cont"):
        for t in cfg.steps:
            assert math.isfinite(m[f"ppl_{meth}_t{t}"])
    assert "ppl_cont_t64" in m and "ppl_qc_t64" not in m
    # seed 0: float, four arms over T, the extra continuous T, the subsample diagnostic;
    # other seeds: float, QC-A2S and the max clip over T, floor and subsample at claim T
    extra_seeds = cfg.num_seeds - 1
    n_t = len(cfg.steps)
    assert len(smoke.tables["perplexity"]) == (1 + 4 * n_t + 1 + 1
                                               + extra_seeds * (1 + 2 * n_t + 2))
    # each swept T has a seed interval for QC-A2S and the max clip, and the first T whose
    # interval lies within 3% is one of the grid's T (or inf)
    for meth in ("qc", "nocalib"):
        for t in cfg.steps:
            assert f"gapci_{meth}_t{t}" in smoke.intervals
        assert m[f"{meth}_within_steps"] in (*map(float, cfg.steps), math.inf)
    assert set(smoke.figures) == {"ppl_vs_T"} and smoke.figures["ppl_vs_T"][:4] == b"\x89PNG"


def test_smoke_claims_checks_hold(smoke):
    for c in get_paper("qc_a2s").evaluate(smoke.metrics, "smoke"):
        if "smoke" in c.tiers:
            assert c.verdict == "reproduced", c


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["small"].model == "smollm2" and TIERS["smoke"].model == "tiny"
    assert TIERS["small"].claim_steps in TIERS["small"].steps


def test_a_perplexity_blow_up_reads_not_reproduced():
    """An 88x blow-up over three seeds: the log-scale interval stays far above 3%, so the
    low-latency claim is 'not reproduced' (a symmetric t-interval reached below zero)."""
    from neurips26.experiment import Table
    from neurips26.papers.qc_a2s.experiment import _gap
    from neurips26.registry import evaluate_claim

    rows = []
    for s, (base, ratio) in enumerate([(20.0, 12.0), (22.0, 300.0), (19.0, 180.0)]):
        rows += [{"seed": s, "method": "float", "steps": 0, "ppl": base},
                 {"seed": s, "method": "qc", "steps": 16, "ppl": base * ratio}]
    e = _gap(Table(rows), "qc", 16)
    assert e.lo > 0.03 and "log scale" in e.method
    claim = next(c for c in get_paper("qc_a2s").claims if c.id == "low_latency")
    m = {"qc_gap": e.value, "nocalib_gap": 0.5}
    iv = {"qc_gap": e.to_dict()}
    assert evaluate_claim(claim, m, "small", {}, iv).verdict == "not reproduced"
    # the same blow-up at every T: no T of the sweep is within, so the latency T is inf
    from neurips26.papers.qc_a2s.experiment import _within_steps

    rows += [{**r, "steps": t} for r in rows if r["method"] == "qc" for t in (64, 1024)]
    within, gaps = _within_steps(Table(rows), "qc", [16, 64, 1024])
    assert within == math.inf and all(e.lo > 0.03 for e in gaps.values())
    claim = next(c for c in get_paper("qc_a2s").claims if c.id == "low_latency_steps")
    m = {"qc_within_steps": within, "nocalib_within_steps": math.inf}
    assert evaluate_claim(claim, m, "small", {}, {}).verdict == "not reproduced"


def test_the_control_and_the_diagnostic_are_measured(smoke):
    assert math.isfinite(smoke.metrics["nocalib_gap"]) and "nocalib_gap" in smoke.intervals
    assert 0 < smoke.metrics["calib_subsample_max_share"] <= 1
    assert math.isfinite(smoke.metrics["qcsub_gap"]) and "qcsub_gap" in smoke.intervals


def test_within_steps_is_the_first_T_whose_interval_is_within():
    """qc_within_steps reads the upper end of each T's seed interval: a T whose mean gap
    is within 3% but whose interval is not does not count."""
    from neurips26.experiment import Table
    from neurips26.papers.qc_a2s.experiment import SEED_SWEEP, _gap, _within_steps

    rows, ratios = [], {4: (1.5, 1.6, 1.4), 16: (1.0, 1.08, 0.96), 64: (1.01, 1.0, 1.005)}
    for s in range(3):
        rows.append({"seed": s, "method": "float", "steps": 0, "ppl": 10.0})
        for t, r in ratios.items():
            rows += [{"seed": s, "method": meth, "steps": t, "ppl": 10.0 * r[s]}
                     for meth in SEED_SWEEP]  # fmt: skip
    t = Table(rows)
    assert _gap(t, "qc", 16).value <= 0.03 < _gap(t, "qc", 16).hi  # mean in, interval out
    assert _gap(t, "qc", 64).hi <= 0.03
    assert _within_steps(t, "qc", [4, 16, 64])[0] == 64.0
    assert _within_steps(t, "qc", [4, 16])[0] == math.inf
