import math

import pytest

from neurips26.registry import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    SLUGS,
    Claim,
    UnknownPaperError,
    check_slug,
    evaluate_claim,
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


def test_missing_nan_or_wrong_tier_is_not_run():
    c = claim(tiers=("paper",))
    assert evaluate_claim(c, {"m": 0.0}, "small").verdict == NOT_RUN
    assert evaluate_claim(claim(), {}, "small").verdict == NOT_RUN
    assert evaluate_claim(claim(), {"m": math.nan}, "small").verdict == NOT_RUN
    assert evaluate_claim(claim(), {"m": "text"}, "small").verdict == NOT_RUN


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
