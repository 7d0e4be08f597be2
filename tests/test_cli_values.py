"""Bad values are refused before any work; overrides go through one place; the CLI is quiet."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from neurips26.cli import build_parser, main
from neurips26.common.experiment import MAX_SEED
from neurips26.registry import SLUGS, TIERS, get_paper

README = Path(__file__).resolve().parents[1] / "README.md"


def cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "neurips26", *args], capture_output=True, text=True, timeout=300,
        **kw,
    )


BAD_VALUES = [
    (["run", "geto_lp", "--seed", "-5"], "seed: -5 is outside [0, "),
    (["run", "geto_lp", "--seed", str(MAX_SEED + 1)], f"is outside [0, {MAX_SEED}]"),
    (["run", "geto_lp", "--set", "seed=-1"], "seed: -1 is outside"),
    (["run", "changepoint_bandit", "--set", "n_runs=0"], "n_runs: 0 is below the minimum 1"),
    (["run", "changepoint_bandit", "--set", "etas="], "etas: an empty list is not allowed"),
    (["run", "changepoint_bandit", "--set", "baselines=nonexistent"],
     "baselines: 'nonexistent' is not one of ('uniform_ruptures', 'mcpi', 'mcpi_certified')"),
    (["run", "changepoint_bandit", "--set", "sigma=NaN"], "sigma: NaN is not allowed"),
    (["run", "geto_lp", "--set", "num_inputs=0"], "num_inputs: 0 is below the minimum 1"),
    (["run", "geto_lp", "--seed", "3", "--set", "seed=5"], "seed given twice"),
    (["reproduce", "--seed", "-5", "--only", "geto_lp"], "seed: -5 is outside"),
    (["reproduce", "--timeout", "0"], "--timeout must be > 0"),
    (["reproduce", "--ray-address", "x:1"], "--ray-address needs --backend ray"),
]


@pytest.mark.parametrize(("args", "message"), [BAD_VALUES[0], BAD_VALUES[9]])
def test_bad_values_are_refused_before_any_work(args, message, tmp_path):
    # end to end, as a user meets it: a fresh interpreter, exit status 2, one stderr line
    store = tmp_path / "s.sqlite"
    out = cli("--store", str(store), *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0]
    assert not store.exists()  # refused before the store was even opened


@pytest.mark.parametrize(("args", "message"), BAD_VALUES)
def test_bad_values_are_refused_in_process(args, message, tmp_path, capsys):
    # every case through main() itself (the subprocess test above covers the entry point)
    store = tmp_path / "s.sqlite"
    try:
        code = main(["--store", str(store), *args])
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert message in lines[0]
    assert not store.exists()


def test_set_seed_is_honoured(tmp_path, capsys):
    store = str(tmp_path / "s.sqlite")
    slug = "skill_laws"
    assert main(["--store", store, "run", slug, "--tier", "smoke", "--set", "seed=5", "--json",
                 "--quiet"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["seed"] == 5 and out["config"]["seed"] == 5


def test_store_works_after_the_subcommand(tmp_path):
    store = tmp_path / "after.sqlite"
    out = cli("run", "skill_laws", "--tier", "smoke", "--store", str(store), "--quiet")
    assert out.returncode in (0, 1), out.stderr
    assert store.exists()
    listed = cli("list", "--json", "--store", str(store))
    latest = {p["slug"]: p["shown"] for p in json.loads(listed.stdout)}
    assert latest["skill_laws"] is not None


def test_list_into_a_closed_pipe_is_quiet(tmp_path):
    out = subprocess.run(
        f"{shlex.quote(sys.executable)} -m neurips26 --store {tmp_path / 's.sqlite'} list"
        " | head -n 1",
        shell=True, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0
    assert len(out.stdout.splitlines()) == 1
    assert out.stderr == "", out.stderr


def test_report_to_an_unwritable_place_gives_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    out = cli("--store", str(tmp_path / "s.sqlite"), "report", "--out", str(tmp_path / "afile"))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write the report to" in lines[0], out.stderr
    assert "give another --out" in lines[0]


def test_info_lists_every_config_key(capsys):
    assert main(["info", "geto_lp", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    experiment = get_paper("geto_lp").experiment()
    names = [f["name"] for f in info["config"]]
    assert names == list(experiment.Config.__dataclass_fields__)
    sizes = next(f for f in info["config"] if f["name"] == "sizes")
    assert sizes["type"] == "tuple[int, ...]"
    assert sizes["defaults"] == {t: list(experiment.TIERS[t].sizes) for t in TIERS}
    solver = next(f for f in info["config"] if f["name"] == "solver")
    assert solver["choices"] == ["auto", "highs", "highs-ds", "highs-ipm"] and solver["help"]
    assert main(["info", "geto_lp"]) == 0
    text = capsys.readouterr().out
    assert "Config (--set KEY=VALUE" in text and "  num_inputs: int = 2 / 3 / 10 (>= 1)" in text


@pytest.mark.parametrize("slug", SLUGS)
def test_every_config_key_has_help(slug):
    from neurips26.cli import config_fields

    missing = [f["name"] for f in config_fields(slug) if not f["help"] and f["name"] != "seed"]
    assert not missing, f"{slug}: config keys without help: {missing}"


def test_paper_tier_of_hours_asks_for_yes(tmp_path):
    out = cli("--store", str(tmp_path / "s.sqlite"), "run", "geto_lp", "--tier", "paper")
    assert out.returncode == 2
    assert "expected to take more than an hour" in out.stderr and "--yes" in out.stderr
    assert not (tmp_path / "s.sqlite").exists()


def test_paper_tier_of_unknown_cost_asks_for_yes(tmp_path):
    from neurips26.registry import all_papers

    unknown = next(p.slug for p in all_papers() if p.paper_hours is None)
    out = cli("--store", str(tmp_path / "s.sqlite"), "run", unknown, "--tier", "paper")
    assert out.returncode == 2
    assert "an unknown time" in out.stderr and "--yes" in out.stderr


def test_reproduce_paper_tier_asks_for_yes(tmp_path):
    out = cli("--store", str(tmp_path / "s.sqlite"), "reproduce", "--tier", "paper",
              "--only", "geto_lp")
    assert out.returncode == 2
    assert "--yes" in out.stderr and "paper" in out.stderr
    assert not (tmp_path / "s.sqlite").exists()  # refused before the store is created


def test_reproduce_paper_tier_gates_paper_by_paper_as_run_does(tmp_path):
    """reproduce asks for --yes exactly where `run --tier paper` would: it names the papers
    of over an hour or unknown cost, not those declared under an hour."""
    from neurips26.cli import paper_tier_hours
    from neurips26.registry import all_papers

    short = next(p.slug for p in all_papers()
                 if (h := paper_tier_hours(p)) is not None and h <= 1)
    out = cli("--store", str(tmp_path / "s.sqlite"), "reproduce", "--tier", "paper",
              "--only", short, "geto_lp")
    assert out.returncode == 2
    assert "1 of the 2 paper(s)" in out.stderr and "geto_lp" in out.stderr
    assert short not in out.stderr


def readme_cli_examples():
    text = README.read_text()
    for line in re.findall(r"^(?:\.venv/bin/)?neurips26 (.+?)(?:\s+#.*)?$", text, re.M):
        yield line.strip()
    yield from re.findall(r"`neurips26 ([^`]+)`", text)


PLACEHOLDERS = {
    "SLUG": "geto_lp", "N": "1", "PATH": "p", "ADDRESS": "127.0.0.1:6379", "SECONDS": "10",
    "key=value": "seed=1",
}


@pytest.mark.parametrize("example", sorted(set(readme_cli_examples())))
def test_readme_cli_examples_parse(example):
    """Every `neurips26 ...` command of the README parses, and its --set keys exist."""
    if "[" in example:  # a synopsis: check each optional part on its own
        base = example.split("[")[0].split()
        variants = [base]
        for part in re.findall(r"\[([^\]]+)\]", example):
            first = part.split("|")[0].replace("...", "").split()
            variants.append(base + first)
    else:
        variants = [shlex.split(example)]
    parser = build_parser()
    for argv in variants:
        argv = [PLACEHOLDERS.get(a, a) for a in argv]
        args = parser.parse_args(argv)
        if getattr(args, "set", None) and getattr(args, "slug", None):
            from neurips26.common.experiment import parse_set_args
            from neurips26.runner import resolve_config

            resolve_config(args.slug, args.tier, args.seed, parse_set_args(args.set))


def test_readme_set_example_uses_existing_keys():
    text = README.read_text()
    example = re.search(r"\(`(--set [^`]+)`", text).group(1)
    sets = re.findall(r"--set (\S+)", example)
    from neurips26.common.experiment import parse_set_args
    from neurips26.runner import resolve_config

    resolve_config("geto_lp", "small", None, parse_set_args(sets))


def test_progress_is_off_when_not_a_terminal(tmp_path):
    env = dict(os.environ)
    out = cli("--store", str(tmp_path / "s.sqlite"), "run", "skill_laws", "--tier", "smoke",
              env=env)
    assert "elapsed" not in out.stderr


def test_report_readme_without_table_markers_is_one_line(tmp_path):
    readme = tmp_path / "R.md"
    readme.write_text("no markers here\n")
    out = cli("--store", str(tmp_path / "s.sqlite"), "report", "--out", str(tmp_path / "rep"),
              "--readme", str(readme))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "paper-table:start" in out.stderr.strip().splitlines()[-1]
    assert readme.read_text() == "no markers here\n"
