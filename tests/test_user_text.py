"""User-facing text names no internal issue numbers: not the package (docstrings, CLI and
report strings, READMEs) nor the top-level documents a user reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: "issue 12", "issues 30/31", "issue #7", "the issue-13 goals".
INTERNAL = re.compile(r"\bissues?\s*#?\d+|\bissue-\d+", re.IGNORECASE)


#: Adjacent string literals split over lines ("... (issue "\n    "13) ..."), joined.
CONTINUED = re.compile(r"[\"']\s*\n\s*[rbf]?[\"']")


def _user_files():
    yield from sorted((ROOT / "src" / "neurips26").rglob("*.py"))
    yield from sorted((ROOT / "src" / "neurips26").rglob("*.md"))
    yield from sorted((ROOT / "benchmarks").glob("*.py"))  # their output and docstrings
    yield from sorted(ROOT.glob("*.md"))


def test_no_internal_issue_numbers_in_user_facing_text():
    hits = []
    for p in _user_files():
        text = p.read_text(encoding="utf-8")
        for line in CONTINUED.sub("", text).splitlines():
            if INTERNAL.search(line):
                hits.append(f"{p.relative_to(ROOT)}: {line.strip()[:80]}")
    assert not hits, "internal issue numbers in user-facing text:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_must():
    for text in ("see issue 12", "issues 30/31", "issue #7", "the issue-13 goals"):
        assert INTERNAL.search(text), text
    assert INTERNAL.search(CONTINUED.sub("", '("runs out (issue "\n        "13): ...")'))
    for text in ("the issue asks", "tissue 3", "an issue of scale"):
        assert not INTERNAL.search(text), text
