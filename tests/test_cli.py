import json
import subprocess
import sys

import pytest

from neurips26.cli import main
from neurips26.registry import SLUGS


def cli(*args, store):
    return subprocess.run(
        [sys.executable, "-m", "neurips26", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "geto_pl"), "unknown paper 'geto_pl'; did you mean 'geto_lp'?"),
        (("info", "nothing_like_it"), "valid slugs:"),
        (
            ("run", SLUGS[0], "--tier", "huge"),
            "unknown tier 'huge'; valid tiers: smoke, small, paper",
        ),
        (("run", SLUGS[0], "--tier", "smoke", "--set", "no_such_key=1"), "valid keys: seed"),
        (("run", SLUGS[0], "--tier", "smoke", "--set", "seed"), "--set expects key=value"),
        (("reproduce", "--only", "geto_pl"), "did you mean 'geto_lp'?"),
        (("reproduce", "--jobs", "0"), "--jobs must be >= 1"),
    ],
)
def test_bad_input_exits_nonzero_with_one_line(args, message, tmp_path):
    out = cli(*args, store=tmp_path / "s.sqlite")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0]


def test_list_is_complete_and_imports_no_numerics(tmp_path):
    out = cli("list", "--json", store=tmp_path / "s.sqlite")
    assert out.returncode == 0, out.stderr
    papers = json.loads(out.stdout)
    assert [p["slug"] for p in papers] == list(SLUGS)
    assert all(p["shown"] is None for p in papers)
    assert {"title", "link", "field", "grade", "claims"} <= set(papers[0])
    assert "source" not in papers[0] and "paragraph" not in papers[0]
    # one shape for claims everywhere: a list of objects with an id, as `run --json` gives
    assert isinstance(papers[0]["claims"], list) and "id" in papers[0]["claims"][0]
    # papers whose abstract links code show it
    assert {p["slug"] for p in papers if p["link"]} >= {"blanp", "sparse_scaling"}
    # `list` is fast because it imports no experiment: counted in modules, not timed.
    probe = (
        "import sys, contextlib, io\n"
        "from neurips26.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['--store', {str(tmp_path / 's.sqlite')!r}, 'list', '--json'])\n"
        "print(sorted(m for m in ('numpy', 'torch', 'scipy') if m in sys.modules))\n"
    )
    heavy = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           timeout=120)
    assert heavy.returncode == 0, heavy.stderr
    assert heavy.stdout.strip().splitlines()[-1] == "[]", heavy.stdout


def test_run_json_stdout_is_one_object_when_the_experiment_prints(capsys, tmp_path,
                                                                   monkeypatch):
    """A library that prints while the experiment runs (EfficientNet-lite0's loader prints
    "Loaded pretrained weights") must not corrupt `run --json`: its text goes to stderr."""
    import neurips26.runner as runner

    original = runner.run_paper

    def chatty(*args, **kwargs):
        print("Loaded pretrained weights for efficientnet-lite0")
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "run_paper", chatty)
    store = str(tmp_path / "s.sqlite")
    assert main(["--store", store, "run", SLUGS[0], "--tier", "smoke", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["slug"] == SLUGS[0]
    assert "Loaded pretrained weights" in captured.err


def test_info_prints_claims_tiers_and_deviations(capsys, tmp_path):
    assert main(["--store", str(tmp_path / "s.sqlite"), "info", SLUGS[0]]) == 0
    text = capsys.readouterr().out
    for heading in ("What it proposes", "Claims", "Tiers", "Deviations from the paper"):
        assert heading in text


def test_run_json_stores_and_lists_verdicts(capsys, tmp_path):
    store = str(tmp_path / "s.sqlite")
    slug = SLUGS[0]
    assert main(["--store", store, "run", slug, "--tier", "smoke", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["slug"] == slug and out["tier"] == "smoke" and out["seed"] == 3
    assert out["config"]["seed"] == 3
    for key in (
        "metrics",
        "claims",
        "wall_seconds",
        "peak_memory_mb",
        "package_version",
        "git_commit",
    ):
        assert key in out
    for c in out["claims"]:
        keys = {"id", "kind", "tiers", "statement", "metric", "comparison", "target", "measured"}
        assert keys | {"verdict", "reason"} <= set(c)
    assert main(["--store", store, "list", "--json"]) == 0
    listed = {p["slug"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed[slug]["shown"]["tier"] == "smoke"
    shown_claims = listed[slug]["shown"]["claims"]
    assert isinstance(shown_claims, list)  # the same shape as run --json
    assert [c["id"] for c in shown_claims] == [c["id"] for c in out["claims"]]
    assert [set(c) for c in shown_claims] == [set(c) for c in out["claims"]]
    assert "seed" not in listed[slug]
    for c in listed[slug]["claims"]:
        assert c["kind"] in ("paper", "check") and c["tiers"] and c["id"]
    assert main(["--store", store, "report", "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / f"{slug}.html").exists()


def test_list_shows_paper_claims_and_checks_apart_and_a_later_failure(capsys, tmp_path):
    from neurips26.registry import get_paper
    from neurips26.runner import RunRecord
    from neurips26.store import Store

    paper = get_paper("geto_lp")
    metrics = {c.metric: c.target for c in paper.claims}  # every claim at its target
    metrics |= {c.uncertainty: 0.0 for c in paper.claims if c.uncertainty}  # no spread
    # every control far on the failing side of its claim's test
    fail = {"<=": 1, "<": 1, ">=": -1, ">": -1, "abs<=": 1, "==": 1}
    metrics |= {c.control: c.target + fail[c.comparison] * (abs(c.target) + c.tolerance + 1)
                for c in paper.claims if c.control}
    store = Store(tmp_path / "s.sqlite")
    store.save(
        RunRecord(
            "geto_lp", "small", 0, {}, "ok", metrics, (), tuple(paper.evaluate(metrics, "small"))
        )
    )
    store.save(
        RunRecord("geto_lp", "smoke", 0, {}, "failed", {}, (), tuple(paper.evaluate({}, "smoke")))
    )
    assert main(["--store", str(tmp_path / "s.sqlite"), "list"]) == 0
    text = capsys.readouterr().out
    n_paper = sum(c.kind == "paper" for c in paper.claims)
    n_check = len(paper.claims) - n_paper
    assert f"[small] paper claims: {n_paper} reproduced, 0 not reproduced" in text
    assert f"checks: {n_check} reproduced" in text
    assert "note: a later smoke-tier run (run 2) failed" in text
    assert main(["--store", str(tmp_path / "s.sqlite"), "list", "--json"]) == 0
    item = {p["slug"]: p for p in json.loads(capsys.readouterr().out)}["geto_lp"]["shown"]
    assert item["tier"] == "small" and item["counts"]["check"]["reproduced"] == n_check
    assert "later smoke-tier run" in item["note"]


def test_claims_table_never_cuts_claim_ids_that_share_a_long_prefix():
    """Claim ids that differ only at their end (wisp's whisper_beats_sparsegpt_50 / _60 /
    _70 / _2of4) each appear whole, one per row, in the ``run`` table."""
    from neurips26.cli import claims_table
    from neurips26.registry import get_paper

    paper = get_paper("wisp")
    ids = [c.id for c in paper.claims]
    similar = [i for i in ids if i.startswith("whisper_beats_sparsegpt_")]
    assert len(similar) >= 3
    metrics = {c.metric: 1.0 for c in paper.claims}
    text = claims_table(paper.evaluate(metrics, "small"))
    first = [line.split()[0] for line in text.splitlines()[2:] if line.strip()]
    assert first == ids  # every id whole, in order, one row each
