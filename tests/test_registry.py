import math

import pytest

from neurips26.registry import (
    INCONCLUSIVE,
    MISSING_METRIC,
    NOT_AT_TIER,
    NOT_EVIDENCE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    SLUGS,
    Claim,
    ClaimResult,
    UnknownPaperError,
    check_slug,
    claim_counts,
    evaluate_claim,
    format_counts,
    get_paper,
    summarize_verdicts,
    verdict_counts,
)


def claim(**kw):
    base = dict(id="c", statement="s", paper_value="p", metric="m", comparison="<=", target=1.0)
    base.update(kw)
    return Claim(**base)


@pytest.mark.parametrize(
    ("comparison", "target", "tol", "value", "verdict"),
    [
        ("<=", 1.0, 0.0, 1.0, REPRODUCED),
        ("<=", 1.0, 0.0, 1.0001, NOT_REPRODUCED),
        ("<=", 1.0, 0.01, 1.005, REPRODUCED),
        ("<", 1.0, 0.0, 1.0, NOT_REPRODUCED),
        (">=", 2.0, 0.0, 2.0, REPRODUCED),
        (">=", 2.0, 0.5, 1.6, REPRODUCED),
        (">=", 2.0, 0.5, 1.4, NOT_REPRODUCED),
        (">", 0.0, 0.0, 1e-12, REPRODUCED),
        ("==", 3.0, 1e-9, 3.0 + 1e-10, REPRODUCED),
        ("==", 3.0, 1e-9, 3.0 + 1e-8, NOT_REPRODUCED),
        ("abs<=", 0.1, 0.0, -0.05, REPRODUCED),
        ("abs<=", 0.1, 0.0, -0.2, NOT_REPRODUCED),
    ],
)
def test_verdict_from_comparison(comparison, target, tol, value, verdict):
    c = claim(comparison=comparison, target=target, tolerance=tol)
    assert evaluate_claim(c, {"m": value}, "small").verdict == verdict


def test_booleans_count_as_numbers():
    c = claim(comparison=">=", target=1)
    assert evaluate_claim(c, {"m": True}, "small").verdict == REPRODUCED
    assert evaluate_claim(c, {"m": False}, "small").verdict == NOT_REPRODUCED


def test_missing_nan_or_wrong_tier_is_not_run_with_its_reason():
    wrong_tier = evaluate_claim(claim(tiers=("paper",)), {"m": 0.0}, "small")
    assert (wrong_tier.verdict, wrong_tier.reason) == (NOT_RUN, NOT_AT_TIER)
    assert "meaningful only at paper" in wrong_tier.detail
    missing = evaluate_claim(claim(), {}, "small")
    assert (missing.verdict, missing.reason) == (NOT_RUN, MISSING_METRIC)
    assert evaluate_claim(claim(), {"m": "text"}, "small").reason == MISSING_METRIC
    nan = evaluate_claim(claim(), {"m": math.nan}, "small", {"m": "too few settings"})
    assert (nan.verdict, nan.reason) == (NOT_RUN, NOT_MEASURED)
    assert nan.detail == "m is NaN: too few settings"
    assert evaluate_claim(claim(), {"m": 0.5}, "small").reason == ""
    never = evaluate_claim(claim(tiers=()), {}, "small")
    assert never.reason == NOT_AT_TIER and "not checked by experiment" in never.detail


def test_results_carry_kind_and_tiers_and_survive_json():
    import json

    c = claim(kind="check", tiers=("small", "paper"))
    result = evaluate_claim(c, {"m": 0.5}, "small")
    assert result.kind == "check" and result.tiers == ("small", "paper")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["kind"] == "check" and data["tiers"] == ["small", "paper"]
    assert ClaimResult(**data) == result
    old = {k: v for k, v in data.items() if k not in ("kind", "tiers", "reason", "detail")}
    assert ClaimResult(**old).kind == "paper"  # records stored before kinds existed


def test_claim_counts_split_paper_claims_and_checks():
    results = [
        evaluate_claim(claim(id="a"), {"m": 0.5}, "small"),
        evaluate_claim(claim(id="b", kind="check"), {"m": 2.0}, "small"),
        evaluate_claim(claim(id="c", tiers=("paper",)), {"m": 2.0}, "small"),
    ]
    counts = claim_counts(results)
    assert counts["paper"] == {
        REPRODUCED: 1, NOT_REPRODUCED: 0, NOT_EVIDENCE: 0, INCONCLUSIVE: 0, NOT_RUN: 1
    }
    assert counts["check"][NOT_REPRODUCED] == 1
    # The registry's kinds win over stored ones (records from before the split).
    assert claim_counts(results, {"b": "paper"})["check"][NOT_REPRODUCED] == 0
    assert format_counts(counts["paper"]) == "1 reproduced, 1 not run"
    assert format_counts(dict.fromkeys(counts["paper"], 0)) == "none"


def test_infinite_values_are_measurements():
    worse_is_higher = claim(comparison="<=", target=0.5)
    assert evaluate_claim(worse_is_higher, {"m": math.inf}, "small").verdict == NOT_REPRODUCED
    assert (
        evaluate_claim(claim(comparison=">", target=0.0), {"m": -math.inf}, "small").verdict
        == NOT_REPRODUCED
    )


def test_verdict_counts_are_in_canonical_order():
    verdicts = [NOT_RUN, REPRODUCED, NOT_REPRODUCED, REPRODUCED]
    counts = verdict_counts(verdicts)
    assert list(counts.items()) == [(REPRODUCED, 2), (NOT_REPRODUCED, 1), (NOT_RUN, 1)]
    assert summarize_verdicts(verdicts) == "2 reproduced, 1 not reproduced, 1 not run"


def test_uncertainty_straddling_the_target_is_inconclusive():
    c = claim(comparison=">=", target=0.0, uncertainty="m_ci")
    assert evaluate_claim(c, {"m": 0.1, "m_ci": 0.2}, "small").verdict == INCONCLUSIVE
    assert evaluate_claim(c, {"m": 0.3, "m_ci": 0.2}, "small").verdict == REPRODUCED
    assert evaluate_claim(c, {"m": -0.3, "m_ci": 0.2}, "small").verdict == NOT_REPRODUCED
    result = evaluate_claim(c, {"m": 0.1, "m_ci": 0.2}, "small")
    assert result.measured == 0.1 and result.uncertainty == 0.2


@pytest.mark.parametrize(
    ("comparison", "target", "tol", "value", "half", "verdict"),
    [
        # abs<=: an interval covering the whole band [-1, 1] holds values on both sides.
        ("abs<=", 1.0, 0.0, 0.0, 2.0, INCONCLUSIVE),
        ("abs<=", 1.0, 0.0, 0.0, 0.5, REPRODUCED),
        ("abs<=", 1.0, 0.0, -0.8, 0.5, INCONCLUSIVE),
        ("abs<=", 1.0, 0.0, -3.0, 0.5, NOT_REPRODUCED),
        # ==: a noisy estimate never certifies an exact equality.
        ("==", 1.0, 0.0, 1.0, 0.1, INCONCLUSIVE),
        ("==", 1.0, 0.0, 1.5, 0.1, NOT_REPRODUCED),
        ("==", 0.94, 0.04, 0.95, 0.01, REPRODUCED),
        ("==", 0.94, 0.04, 0.99, 0.02, INCONCLUSIVE),
        ("<", 1.0, 0.0, 0.5, 0.5, INCONCLUSIVE),  # the interval reaches 1, which fails <
        ("<", 1.0, 0.0, 0.4, 0.5, REPRODUCED),
        ("<=", 1.0, 0.0, 2.0, 0.5, NOT_REPRODUCED),
        (">", 0.0, 0.0, 1.0, 1.0, INCONCLUSIVE),
        # An infinite or NaN half-width is never certain, whatever the point says.
        (">=", 0.0, 0.0, 5.0, math.inf, INCONCLUSIVE),
        ("abs<=", 1.0, 0.0, 0.0, math.inf, INCONCLUSIVE),
        (">=", 0.0, 0.0, 5.0, math.nan, INCONCLUSIVE),
        # A zero half-width is the plain comparison; a negative one counts as its size.
        (">=", 0.0, 0.0, 5.0, 0.0, REPRODUCED),
        (">=", 0.0, 0.0, 0.1, -0.2, INCONCLUSIVE),
    ],
)
def test_interval_edge_cases(comparison, target, tol, value, half, verdict):
    c = claim(comparison=comparison, target=target, tolerance=tol, uncertainty="m_ci")
    assert evaluate_claim(c, {"m": value, "m_ci": half}, "small").verdict == verdict


def test_equality_is_symmetric_in_floating_point():
    # 0.4 - 0.3 rounds to 0.10000000000000003 and 0.3 - 0.2 to 0.09999999999999998:
    # both lie exactly 0.1 from the target and must get the same verdict, with or
    # without an uncertainty, and for abs<= too.
    for uncertainty in (None, "m_ci"):
        c = claim(comparison="==", target=0.3, tolerance=0.1, uncertainty=uncertainty)
        below = evaluate_claim(c, {"m": 0.2, "m_ci": 0.0}, "small").verdict
        above = evaluate_claim(c, {"m": 0.4, "m_ci": 0.0}, "small").verdict
        assert below == above == REPRODUCED
        # just beyond the band on either side: not reproduced on both
        for m in (0.2 - 1e-9, 0.4 + 1e-9):
            assert evaluate_claim(c, {"m": m, "m_ci": 0.0}, "small").verdict == NOT_REPRODUCED
    band = claim(comparison="abs<=", target=0.1, tolerance=0.2)
    assert evaluate_claim(band, {"m": -0.3}, "small").verdict == REPRODUCED
    assert evaluate_claim(band, {"m": 0.3}, "small").verdict == REPRODUCED
    # An interval reaching the band's edge from either side by the same amount.
    c = claim(comparison="==", target=0.3, tolerance=0.1, uncertainty="m_ci")
    for m in (0.15, 0.45):
        assert evaluate_claim(c, {"m": m, "m_ci": 0.1}, "small").verdict == INCONCLUSIVE


def test_a_missing_uncertainty_metric_is_a_missing_metric():
    c = claim(comparison=">=", target=0.0, uncertainty="m_ci")
    result = evaluate_claim(c, {"m": 1.0}, "small")
    assert (result.verdict, result.reason) == (NOT_RUN, MISSING_METRIC)


def test_claim_rejects_bad_definitions():
    with pytest.raises(ValueError, match="comparison"):
        claim(comparison="~")
    with pytest.raises(ValueError, match="tolerance"):
        claim(tolerance=-1)
    with pytest.raises(ValueError, match="unknown tiers"):
        claim(tiers=("huge",))


def test_unknown_slug_suggests_the_nearest():
    with pytest.raises(UnknownPaperError, match="did you mean 'geto_lp'"):
        check_slug("geto_pl")
    with pytest.raises(UnknownPaperError, match="valid slugs"):
        check_slug("zzzzzz")


def test_every_slug_loads_without_heavy_imports():
    import subprocess
    import sys

    code = (
        "import sys; from neurips26.registry import all_papers; all_papers(); "
        "heavy = [m for m in ('numpy', 'torch', 'scipy', 'pandas') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"listing papers imported {out.stdout.strip()}"
    assert [get_paper(s).slug for s in SLUGS] == list(SLUGS)
