"""The shared experiment layer: Estimate, Table, the driver, and claims judged on them."""

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from neurips26.common.experiment import RunResult
from neurips26.experiment import (
    Context,
    Estimate,
    Experiment,
    Table,
    binomial_interval,
    bootstrap_interval,
    log_t_interval,
    ratio_t_interval,
    t_interval,
    unit_seed,
)
from neurips26.registry import (
    INCONCLUSIVE,
    NOT_EVIDENCE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Claim,
    evaluate_claim,
)

# ---------------------------------------------------------------- Estimate


def test_t_interval_matches_scipy():
    x = np.array([1.3, 2.2, 0.7, 1.9, 2.4])
    e = t_interval(x, level=0.9)
    lo, hi = stats.t.interval(0.9, df=4, loc=x.mean(), scale=stats.sem(x))
    assert math.isclose(e.lo, lo) and math.isclose(e.hi, hi)
    assert (e.method, e.level, e.n) == ("t over seeds", 0.9, 5)


def test_one_unit_gives_an_infinite_interval_never_a_zero_width_one():
    for e in (t_interval([3.0]), log_t_interval([3.0]), bootstrap_interval([3.0]),
              Table([{"seed": 0, "v": 1.0}]).mean_over("v"),
              Table([{"seed": 0, "v": 1.0}]).bootstrap(lambda t: t.column("v").mean())):
        assert e.lo == -math.inf or (e.lo == 0.0 and e.hi == math.inf), e
        assert e.hi == math.inf


def test_log_scale_interval_of_a_ratio_stays_positive_and_asymmetric():
    e = ratio_t_interval([80.0, 95.0, 90.0])
    assert 0 < e.lo < e.value < e.hi
    assert e.hi - e.value > e.value - e.lo  # exp of a symmetric log interval
    logs = np.log([80.0, 95.0, 90.0])
    lo, hi = stats.t.interval(0.95, df=2, loc=logs.mean(), scale=stats.sem(logs))
    assert math.isclose(e.lo, math.exp(lo)) and math.isclose(e.hi, math.exp(hi))


def test_symmetric_t_on_a_blowup_is_inconclusive_but_the_log_interval_decides():
    """The 88x perplexity blow-up over three seeds: "within 1.1x of float" must fail."""
    ratios = [30.0, 88.0, 260.0]  # every seed blows up, by heavy-tailed amounts
    claim = Claim("ppl", "close to float", "1.1x", "ratio", "<=", 1.1)
    sym = t_interval(ratios)
    assert sym.lo < 1.1  # the symmetric interval reaches below the target (and below 0)
    old = evaluate_claim(claim, {"ratio": sym.value}, "small",
                         intervals={"ratio": sym.to_dict()})
    assert old.verdict == INCONCLUSIVE
    log = log_t_interval(ratios)
    new = evaluate_claim(claim, {"ratio": log.value}, "small",
                         intervals={"ratio": log.to_dict()})
    assert new.verdict == NOT_REPRODUCED
    assert new.interval["method"] == "t over seeds on the log scale"


def test_bootstrap_interval_covers_and_bca_runs():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=60)
    p = bootstrap_interval(x, num_resamples=999, seed=1)
    b = bootstrap_interval(x, method="BCa", num_resamples=999, seed=1)
    ref = stats.bootstrap((x,), np.mean, n_resamples=999, method="BCa",
                          random_state=np.random.default_rng(1)).confidence_interval
    assert p.lo < x.mean() < p.hi and b.lo < x.mean() < b.hi
    assert abs(b.lo - ref.low) < 0.05 and abs(b.hi - ref.high) < 0.05
    assert b.method == "BCa bootstrap over units"


def test_binomial_interval_is_scipys_wilson():
    e = binomial_interval(37, 50)
    ci = stats.binomtest(37, 50).proportion_ci(method="wilson")
    assert (e.lo, e.hi) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_estimate_refuses_bad_values():
    with pytest.raises(ValueError, match="reason"):
        Estimate(math.nan, 0.0, 1.0, "t over seeds")
    with pytest.raises(ValueError, match="lo"):
        Estimate(1.0, 2.0, 0.5, "t over seeds")
    with pytest.raises(TypeError, match="value"):
        Estimate("1", 0.0, 2.0, "t")
    with pytest.raises(ValueError, match="method"):
        Estimate(1.0, 0.0, 2.0, "")
    with pytest.raises(ValueError, match="level"):
        t_interval([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="values"):
        t_interval([1.0, math.nan])
    with pytest.raises(ValueError, match="positive"):
        log_t_interval([1.0, -2.0])
    with pytest.raises(ValueError, match="successes"):
        binomial_interval(5, 3)
    e = Estimate.missing("too few points")
    assert math.isnan(e.value) and e.reason == "too few points"
    assert Estimate.from_dict(e.to_dict()) == e
    assert Estimate.from_dict(t_interval([1.0, 2.0]).to_dict()) == t_interval([1.0, 2.0])


# ---------------------------------------------------------------- Table


def _table():
    rows = []
    rng = np.random.default_rng(3)
    for s in range(6):
        base = rng.normal(2.0, 0.3)
        rows.append({"seed": s, "method": "base", "err": base})
        rows.append({"seed": s, "method": "ours", "err": base - 0.5 + rng.normal(0, 0.05)})
    return Table(rows)


def test_table_is_frozen_and_selects():
    t = _table()
    with pytest.raises(AttributeError):
        t.extra = 1
    with pytest.raises(TypeError):
        t.rows[0]["err"] = 0.0
    assert len(t.where(method="ours")) == 6 and t.unique("method") == ("base", "ours")
    assert set(t.groups("method")) == {"base", "ours"}
    with pytest.raises(TypeError, match="rows"):
        Table([1, 2])


def test_paired_diff_is_the_paired_t_interval():
    t = _table()
    a, b = t.where(method="base").column("err"), t.where(method="ours").column("err")
    d = t.paired_diff("err", {"method": "base"}, {"method": "ours"})
    ref = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert d.lo == pytest.approx(ref.low) and d.hi == pytest.approx(ref.high)
    r = t.paired_ratio("err", {"method": "base"}, {"method": "ours"})
    assert r.value == pytest.approx(math.exp(np.mean(np.log(a / b))))


def test_interval_labels_name_the_unit_as_an_english_plural():
    rows = [{"query": q, "seed_index": q, "box": q, "err": float(q)} for q in range(4)]
    t = Table(rows)
    assert t.mean_over("err", unit="query").method == "t over queries"
    assert t.mean_over("err", unit="seed_index").method == "t over seed indexes"
    assert t.mean_over("err", unit="box").method == "t over boxes"
    assert "over seeds" in _table().paired_diff(
        "err", {"method": "base"}, {"method": "ours"}).method


def test_grouped_bootstrap_keeps_a_units_rows_together_and_strata_apart():
    t = _table()

    def gap(tb):  # pairs on the unit column: a drawn seed's two rows must stay together
        d = tb.paired_diff("err", {"method": "base"}, {"method": "ours"})
        return d.value

    e = t.bootstrap(gap, unit="seed", num_resamples=400, seed=0)
    # Paired differences vary by ~0.05; if rows were drawn apart they would vary by ~0.3.
    assert e.lo > 0.35 and e.hi < 0.65 and e.n == 6
    strat = Table([{"task": f"{g}{i}", "g": g, "v": float(g == "a") + 0.01 * i}
                   for g in "ab" for i in range(5)])
    s = strat.bootstrap(lambda tb: tb.column("v").mean(), unit="task", strata="g",
                        num_resamples=300)
    # Each stratum keeps its five units, so the mean stays near 0.5 in every replicate.
    assert 0.49 < s.lo <= s.value <= s.hi < 0.53
    assert "stratified by g" in s.method
    bca = t.bootstrap(gap, unit="seed", method="BCa", num_resamples=400)
    assert bca.lo <= bca.value <= bca.hi and bca.method.startswith("BCa")


# ---------------------------------------------------------------- the driver


@dataclass(frozen=True)
class ToyConfig:
    seed: int = 0
    seeds: tuple[int, ...] = (0, 1, 2, 3)


class Toy(Experiment):
    Config = ToyConfig
    TIERS: ClassVar[dict] = {"smoke": ToyConfig(), "small": ToyConfig(), "paper": ToyConfig()}
    METRICS = ("gap", "gap_placebo", "never")
    VOLATILE = ()

    def grid(self, config):
        return [{"seed": s, "method": m} for s in config.seeds for m in ("ours", "placebo")]

    def measure(self, unit, state, ctx):
        rng = unit.rng()
        effect = 1.0 if unit["method"] == "ours" else 0.0
        return {"gain": effect + rng.normal(0, 0.1), "device": ctx.device}

    def summarize(self, table, config, ctx):
        return {
            "gap": table.where(method="ours").mean_over("gain"),
            "gap_placebo": table.where(method="placebo").mean_over("gain"),
            "never": Estimate.missing("not at this size"),
        }


def test_driver_runs_units_and_carries_intervals_and_reasons():
    res = Toy().run(ToyConfig(), Context(device="cpu"))
    assert isinstance(res, RunResult)
    assert res.intervals["gap"]["method"] == "t over seeds" and res.intervals["gap"]["n"] == 4
    assert math.isnan(res.metrics["never"]) and res.reasons["never"] == "not at this size"
    rows = res.tables["units"]
    assert len(rows) == 8 and {r["device"] for r in rows} == {"cpu"}
    again = Toy().run(ToyConfig(), Context())
    assert again.metrics == pytest.approx(res.metrics, nan_ok=True)
    # a unit's seed depends on its index, not on what ran before it
    assert unit_seed(0, 5) == unit_seed(0, 5) and unit_seed(0, 5) != unit_seed(0, 6)
    with pytest.raises(ValueError, match="device"):
        Context(device="tpu")


def _ctrl_claim(**kw):
    return Claim("c", "s", "p", "gap", ">", 0.5, control="gap_placebo", **kw)


def test_a_claim_whose_control_passes_is_not_evidence():
    res = Toy().run(ToyConfig(), Context())
    good = evaluate_claim(_ctrl_claim(), res.metrics, "small", res.reasons, res.intervals)
    assert good.verdict == REPRODUCED and good.control["verdict"] == NOT_REPRODUCED
    # the same test on a threshold the placebo also passes: no evidence for the effect
    weak = Claim("c", "s", "p", "gap", ">", -0.5, control="gap_placebo")
    bad = evaluate_claim(weak, res.metrics, "small", res.reasons, res.intervals)
    assert bad.verdict == NOT_EVIDENCE and "control" in bad.detail
    nan_ctrl = Claim("c", "s", "p", "gap", ">", 0.5, control="never")
    assert evaluate_claim(nan_ctrl, res.metrics, "small", res.reasons,
                          res.intervals).verdict == INCONCLUSIVE
    fails = Claim("c", "s", "p", "gap", ">", 5.0, control="gap_placebo")
    assert evaluate_claim(fails, res.metrics, "small", res.reasons,
                          res.intervals).verdict == NOT_REPRODUCED


def test_claim_refuses_a_control_and_a_reason_together():
    with pytest.raises(ValueError, match="not both"):
        Claim("c", "s", "p", "m", ">", 0.0, control="m0", no_control="why")
    with pytest.raises(ValueError, match="another metric"):
        Claim("c", "s", "p", "m", ">", 0.0, control="m")


def test_asymmetric_interval_decides_the_verdict():
    c = Claim("c", "s", "p", "m", ">=", 1.0)
    iv = {"m": {"lo": 1.2, "hi": 9.0, "method": "t over seeds on the log scale",
                "level": 0.95, "n": 3}}
    assert evaluate_claim(c, {"m": 2.0}, "small", intervals=iv).verdict == REPRODUCED
    iv["m"]["lo"] = 0.8
    r = evaluate_claim(c, {"m": 2.0}, "small", intervals=iv)
    assert r.verdict == INCONCLUSIVE and r.interval["n"] == 3
    two = Claim("c", "s", "p", "m", "abs<=", 0.5)
    assert evaluate_claim(two, {"m": 0.1}, "small", intervals={
        "m": {"lo": -0.4, "hi": 0.45, "method": "x"}}).verdict == REPRODUCED
    assert evaluate_claim(two, {"m": 0.7}, "small", intervals={
        "m": {"lo": 0.6, "hi": 0.9, "method": "x"}}).verdict == NOT_REPRODUCED
    assert evaluate_claim(two, {"m": 0.7}, "small", intervals={
        "m": {"lo": 0.3, "hi": 0.9, "method": "x"}}).verdict == INCONCLUSIVE
    missing = evaluate_claim(c, {}, "small")
    assert missing.verdict == NOT_RUN


def test_cuda_is_refused_for_a_paper_without_a_gpu():
    from neurips26.common.experiment import ConfigError
    from neurips26.runner import check_device

    with pytest.raises(ConfigError, match="device"):
        check_device("geto_lp", "cuda")
    with pytest.raises(ConfigError, match="device"):
        check_device("geto_lp", "tpu")
    assert check_device("geto_lp", "cpu") == "cpu"


def test_estimate_from_replicates_is_the_percentile_interval():
    reps = np.random.default_rng(0).normal(size=999)
    e = Estimate.from_replicates(0.1, reps, n=40, unit="questions", design="two-level")
    assert (e.lo, e.hi) == (pytest.approx(np.percentile(reps, 2.5)),
                            pytest.approx(np.percentile(reps, 97.5)))
    assert e.method == "percentile bootstrap over questions (two-level)" and e.n == 40
    assert Estimate.from_replicates(1.0, [np.nan, 2.0], n=3).hi == math.inf
    assert math.isnan(Estimate.from_replicates(math.nan, reps, n=3).value)
