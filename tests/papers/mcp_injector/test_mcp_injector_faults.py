"""Schedules, profiles and their validation (no SDK traffic)."""

import json
import math

import numpy as np
import pytest

from neurips26.papers.mcp_injector import (
    BurstParams,
    FaultInjector,
    FaultMode,
    FaultProfile,
    FaultRule,
    FaultSchedule,
    Persistence,
    ProfileError,
    apply_fault,
    default_profile,
    load_profile,
    parse_profile,
    profile_from_counts,
)
from neurips26.papers.mcp_injector.faults import FaultDecision


def _rule(**kw):
    return FaultRule(**{"mode": FaultMode.TOOL_ERROR, **kw})


def test_permanent_fails_every_call_from_onset():
    s = FaultSchedule(FaultProfile(rules=(_rule(onset=3),)), seed=1)
    got = [s.decide("x", k) is not None for k in range(20)]
    assert got == [False] * 3 + [True] * 17


def test_transient_fails_exactly_duration_calls():
    r = _rule(persistence=Persistence.TRANSIENT, onset=2, duration=4)
    s = FaultSchedule(FaultProfile(rules=(r,)), seed=5)
    got = [s.decide("x", k) is not None for k in range(12)]
    assert got == [False, False, True, True, True, True] + [False] * 6
    starts = [s.decide("x", k).incident_start for k in range(2, 6)]
    assert starts == [True, False, False, False]


def test_intermittent_rate_within_3_se():
    p, n = 0.3, 5000
    r = _rule(persistence=Persistence.INTERMITTENT, rate=p)
    s = FaultSchedule(FaultProfile(rules=(r,)), seed=11)
    rate = np.mean([s.decide("t", k) is not None for k in range(n)])
    assert abs(rate - p) <= 3 * math.sqrt(p * (1 - p) / n)


def test_bursty_chain_matches_stationary_closed_form_and_is_bursty():
    b = BurstParams(p_enter=0.05, p_exit=0.25, p_fail_bad=0.9)
    r = _rule(persistence=Persistence.INTERMITTENT, burst=b)
    s = FaultSchedule(FaultProfile(rules=(r,)), seed=2)
    n = 6000
    x = np.array([s.decide("t", k) is not None for k in range(n)], float)
    pi = b.stationary_rate()  # 0.05/0.30 * 0.9 = 0.15
    assert pi == pytest.approx(0.15)
    assert abs(x.mean() - pi) < 0.04
    # bursty: P(fail | previous failed) far above the marginal rate
    assert x[1:][x[:-1] == 1].mean() > 2 * x.mean()


def test_order_independence_and_per_tool_counters():
    prof = default_profile()
    a = FaultSchedule(prof, seed=3)
    b = FaultSchedule(prof, seed=3)
    seq_a = [(t, k) for k in range(30) for t in ("search_flights", "book")]
    seq_b = [("book", k) for k in range(30)] + [("search_flights", k) for k in range(30)][::-1]
    da = {(t, k): a.decide(t, k, connection="c") for t, k in seq_a}
    db = {(t, k): b.decide(t, k, connection="c") for t, k in seq_b}
    assert da == db
    assert any(v is not None for v in da.values())
    # another connection or seed gives other decisions
    c = FaultSchedule(prof, seed=3)
    assert {(t, k): c.decide(t, k, connection="d") for t, k in seq_a} != da


def test_targeting_search_rules_never_touch_book():
    s = FaultSchedule(FaultProfile(rules=(_rule(tool="search_*"),)), seed=0)
    assert all(s.decide("search_flights", k) is not None for k in range(10))
    assert all(s.decide("book", k) is None for k in range(10))


def test_profile_from_counts_is_dirichlet_posterior_mean():
    counts = {"timeout": 10, "tool_error": 4, "empty_result": 0}
    p = profile_from_counts(counts, alpha=0.5)
    n, m = 14, 6
    assert p.mode_weights["timeout"] == pytest.approx((10 + 0.5) / (n + m * 0.5))
    assert p.mode_weights["connection_drop"] == pytest.approx(0.5 / (n + m * 0.5))
    assert sum(p.mode_weights.values()) == pytest.approx(1.0)
    assert sum(p.persistence_weights.values()) == pytest.approx(1.0)


def test_calibrated_incidents_follow_weights_chi_square():
    from scipy.stats import chisquare

    prof = default_profile()
    s = FaultSchedule(prof, seed=9)
    modes = []
    for c in range(400):
        for k in range(40):
            d = s.decide("t", k, connection=f"c{c}")
            if d is not None and d.incident_start:
                modes.append(d.mode.value)
    names = list(prof.mode_weights)
    obs = np.array([modes.count(m) for m in names])
    exp = len(modes) * np.array([prof.mode_weights[m] for m in names])
    assert len(modes) > 800
    assert chisquare(obs, exp).pvalue > 1e-3
    # a wrong expectation is rejected (the test can fail)
    wrong = len(modes) * np.full(6, 1 / 6)
    assert chisquare(obs, wrong).pvalue < 1e-6


def test_from_log_replays_records(tmp_path):
    s = FaultSchedule(default_profile(), seed=4)
    recs = []
    for k in range(60):
        d = s.decide("t", k, connection="c")
        if d is not None:
            recs.append(d.to_record(seed=4))
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = FaultSchedule.from_log(path)
    for k in range(60):
        assert r.decide("t", k, connection="c") == s.decide("t", k, connection="c")
    assert r.decide("t", 0, connection="other") is None


def test_apply_fault_shapes():
    d = FaultDecision("c", "t", 0, FaultMode.PROTOCOL_ERROR, Persistence.PERMANENT, "rule:0",
                      True, -32099, "boom")
    resp = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "{}"}]}}
    assert apply_fault(d, resp) == {"jsonrpc": "2.0", "id": 7,
                                    "error": {"code": -32099, "message": "boom"}}
    assert apply_fault(None, resp) is resp


def test_injector_rewrite_applies_the_called_tools_listed_schema_only_to_tools_call():
    """``FaultInjector.rewrite`` is apply_fault with the tool's last-listed outputSchema for
    a ``tools/call`` decision, and with none for another method (whose target is no tool)."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    inj = FaultInjector(FaultProfile(rules=()))
    inj.note_tools([{"name": "t", "outputSchema": schema}])
    d = FaultDecision("c", "t", 0, FaultMode.EMPTY_RESULT, Persistence.PERMANENT, "rule:0",
                      True, -32000, "x")
    resp = {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    got = inj.rewrite(d, resp)
    assert got == apply_fault(d, resp, output_schema=schema)
    assert got != apply_fault(d, resp)  # the schema made a difference: structuredContent
    other = FaultDecision("c", "t", 0, FaultMode.EMPTY_RESULT, Persistence.PERMANENT,
                          "rule:0", True, -32000, "x", method="resources/read")
    assert inj.rewrite(other, resp) == apply_fault(other, resp)
    assert inj.rewrite(None, resp) is resp


@pytest.mark.parametrize(
    "rule, needle",
    [
        ({"mode": "explode"}, "unknown mode 'explode'"),
        ({"mode": "timeout", "persistence": "sometimes"}, "unknown persistence"),
        ({"mode": "timeout", "rate": 1.5}, "rate must be in [0, 1]"),
        ({"mode": "timeout", "onset": -1}, "onset must be >= 0"),
        ({"mode": "timeout", "duration": -2}, "duration must be >= 0"),
        ({"mode": "timeout", "hang_s": 0}, "hang_s must be > 0"),
        ({"mode": "timeout", "colour": "red"}, "unknown field"),
        ({"tool": "x"}, "'mode' is required"),
    ],
)
def test_bad_rules_name_rule_and_field(rule, needle):
    with pytest.raises(ValueError, match="rule 0") as e:
        parse_profile({"rules": [rule]})
    assert needle in str(e.value)


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"mode_weights": {"timeout": -1}}, "must be >= 0"),
        ({"mode_weights": {"timeout": 0, "tool_error": 0}}, "sum to 0"),
        ({"mode_weights": {"lag": 1}}, "unknown key 'lag'"),
        ({"fault_rate": 2.0, "mode_weights": {"timeout": 1}}, "fault_rate"),
        ({"fault_rate": 0.1}, "needs mode_weights"),
        ({"bogus": 1}, "unknown key"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_bad_profiles(data, needle):
    with pytest.raises(ProfileError, match=None) as e:
        parse_profile(data)
    assert needle in str(e.value)


def test_bad_schedule_args():
    with pytest.raises(ValueError, match="seed"):
        FaultSchedule(FaultProfile(), seed=-1)
    with pytest.raises(TypeError, match="FaultProfile"):
        FaultSchedule({"rules": []})
    with pytest.raises(ValueError, match="call_index"):
        FaultSchedule(FaultProfile()).decide("t", -1)
    with pytest.raises(ProfileError, match="alpha"):
        profile_from_counts({"timeout": 1}, alpha=0)
    with pytest.raises(ProfileError, match="count"):
        profile_from_counts({"timeout": -3})


def test_load_profile_formats(tmp_path):
    y = tmp_path / "p.yaml"
    y.write_text("rules:\n  - {tool: 'search_*', mode: timeout, persistence: transient}\n")
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"rules": [{"tool": "search_*", "mode": "timeout",
                                       "persistence": "transient"}]}))
    t = tmp_path / "p.toml"
    t.write_text('[[rules]]\ntool = "search_*"\nmode = "timeout"\npersistence = "transient"\n')
    assert load_profile(y) == load_profile(j) == load_profile(t)
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [{mode: nope}]\n")
    with pytest.raises(ProfileError, match=r"bad\.yaml.*rule 0.*unknown mode"):
        load_profile(bad)
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "missing.yaml")
    assert parse_profile(load_profile(y).to_dict()) == load_profile(y)


def test_jittered_latency_is_keyed_distributed_and_replayed(tmp_path):
    import statistics as st

    from neurips26.papers.mcp_injector import FaultInjector
    from neurips26.papers.mcp_injector.faults import FaultSchedule

    for jitter, check in (
        ("lognormal", lambda d: abs(st.median(d) - 0.2) < 0.02 and max(d) > 2 * min(d)),
        ("exponential", lambda d: abs(st.mean(d) - 0.2) < 0.03),
        ("uniform", lambda d: min(d) >= 0.1 - 1e-12 and max(d) <= 0.3 + 1e-12),
    ):
        rule = FaultRule(tool="t", mode=FaultMode.TIMEOUT, hang_s=0.2, jitter=jitter,
                         jitter_scale=0.5)
        sched = FaultSchedule(FaultProfile(rules=(rule,)), seed=3)
        delays = [sched.decide("t", k).hang_s for k in range(400)]
        assert check(delays), jitter
        again = FaultSchedule(FaultProfile(rules=(rule,)), seed=3)
        assert [again.decide("t", k).hang_s for k in range(400)] == delays  # same seed
        other = FaultSchedule(FaultProfile(rules=(rule,)), seed=4)
        assert [other.decide("t", k).hang_s for k in range(400)] != delays
    log = tmp_path / "log.jsonl"
    inj = FaultInjector(FaultProfile(rules=(rule,)), seed=3, log_path=log)
    drawn = [inj.decide("t").hang_s for _ in range(5)]
    replay = FaultSchedule.from_log(log)
    assert [replay.decide("t", k, connection="default").hang_s for k in range(5)] == drawn


@pytest.mark.parametrize("bad, match", [
    ({"jitter": "gamma"}, "jitter must be one of"),
    ({"jitter": "lognormal", "hang_s": None}, "jitter needs mode 'timeout' with a hang_s"),
    ({"jitter": "uniform", "jitter_scale": 1.5}, "uniform jitter must be <= 1"),
    ({"jitter": "lognormal", "jitter_scale": -1.0}, "jitter_scale must be >= 0"),
])
def test_bad_jitter_is_refused_naming_the_field(bad, match):
    from neurips26.papers.mcp_injector import parse_profile

    rule = {"tool": "t", "mode": "timeout", "hang_s": 0.2, **bad}
    with pytest.raises(ProfileError, match=match):
        parse_profile({"rules": [rule]})


def test_retry_after_hint_is_logged_and_replayed(tmp_path):
    from neurips26.papers.mcp_injector import FaultInjector, apply_fault
    from neurips26.papers.mcp_injector.faults import FaultSchedule

    rule = FaultRule(tool="t", mode=FaultMode.TOOL_ERROR, retry_after_s=3)
    log = tmp_path / "log.jsonl"
    inj = FaultInjector(FaultProfile(rules=(rule,)), seed=1, log_path=log)
    d = inj.decide("t")
    assert d.retry_after_s == 3.0 and d.message.endswith("retry after 3 s")
    again = FaultSchedule.from_log(log).decide("t", 0, connection="default")
    assert again == d
    out = apply_fault(d, {"jsonrpc": "2.0", "id": 7, "result": {"content": []}})
    assert out["result"]["_meta"] == {"retryAfter": 3.0} and out["result"]["isError"] is True
    custom = FaultSchedule(FaultProfile(rules=(FaultRule(
        tool="t", mode=FaultMode.PROTOCOL_ERROR, retry_after_s=1, message="slow down"),)))
    p = apply_fault(custom.decide("t", 0), {"jsonrpc": "2.0", "id": 1, "result": {}})
    assert p["error"] == {"code": -32603, "message": "slow down", "data": {"retryAfter": 1.0}}


@pytest.mark.parametrize("bad, match", [
    ({"retry_after_s": 0}, "retry_after_s must be > 0"),
    ({"retry_after_s": float("inf")}, "retry_after_s must be > 0"),
    ({"retry_after_s": True}, "retry_after_s must be a positive number"),
    ({"retry_after_s": "2"}, "retry_after_s must be a positive number"),
    ({"retry_after_s": 2, "mode": "timeout"}, "retry_after_s needs mode 'tool_error'"),
])
def test_bad_retry_after_is_refused_naming_the_field(bad, match):
    from neurips26.papers.mcp_injector import parse_profile

    rule = {"tool": "t", "mode": "tool_error", **bad}
    with pytest.raises(ProfileError, match=match):
        parse_profile({"rules": [rule]})


def test_wire_cut_rules_are_validated_and_refused_in_process():
    from neurips26.papers.mcp_injector import FaultInjector, parse_profile

    p = parse_profile({"rules": [{"tool": "t", "mode": "malformed_result", "cut_bytes": 10,
                                  "cut_then": "close"}]})
    d = FaultInjector(p).decide("t")
    assert (d.cut_bytes, d.cut_then) == (10, "close")
    assert FaultDecision.from_record(d.to_record(seed=0)) == d
    for bad, match in (({"cut_bytes": 0}, "cut_bytes must be >= 1"),
                       ({"cut_bytes": 2.5}, "cut_bytes must be an integer"),
                       ({"cut_bytes": 5, "mode": "tool_error"}, "cut_bytes needs mode"),
                       ({"cut_then": "explode"}, "cut_then must be")):
        rule = {"tool": "t", "mode": "malformed_result", **bad}
        with pytest.raises(ProfileError, match=match):
            parse_profile({"rules": [rule]})
    with pytest.raises(ValueError, match="wire-level"):
        FaultInjector(p).middleware()
    with pytest.raises(ValueError, match="wire-level"):
        FaultInjector(p).wrap(object())


def test_the_first_matching_rule_that_fires_decides_and_a_silent_one_falls_through():
    """As the README says: rules are tried in the order written; the first that matches
    and fires decides the call; one that matches but does not fire (before its onset)
    leaves the call to the rules after it; no rule firing forwards the call."""
    early = _rule(tool="search_*", mode=FaultMode.EMPTY_RESULT, onset=3)
    late = _rule(tool="*", mode=FaultMode.TOOL_ERROR, onset=1)
    s = FaultSchedule(FaultProfile(rules=(early, late)), seed=0)
    got = [s.decide("search_flights", k) for k in range(5)]
    assert got[0] is None  # neither fires yet: forwarded untouched
    assert [(d.mode, d.source) for d in got[1:3]] == [(FaultMode.TOOL_ERROR, "rule:1")] * 2
    assert [(d.mode, d.source) for d in got[3:]] == [(FaultMode.EMPTY_RESULT, "rule:0")] * 2
    # the written order decides, not specificity: swapped, the catch-all wins from onset 1
    s2 = FaultSchedule(FaultProfile(rules=(late, early)), seed=0)
    assert all(s2.decide("search_flights", k).source == "rule:0" for k in range(1, 5))
