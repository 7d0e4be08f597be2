"""A paper's code version covers its own package and the common/ modules it imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from neurips26 import runner


def _tree(root: Path) -> Path:
    pkg = root / "neurips26"
    files = {
        "common/__init__.py": "",
        "common/validation.py": "def check(): ...\n",
        "common/stats.py": "from neurips26.common.validation import check\n",
        "common/unused.py": "X = 1\n",
        "common/models/__init__.py": "",
        "common/models/big.py": "import torch\n",
        "papers/a/__init__.py": "from .method import f\n",
        "papers/a/method.py": (
            "def f():\n    from neurips26.common.stats import check\n    return check\n"
        ),
        "papers/b/__init__.py": "from neurips26.common import models\n",
    }
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    pkg = _tree(tmp_path)
    monkeypatch.setattr(runner, "PACKAGE_DIR", pkg)
    return pkg


def test_dependencies_follow_imports_inside_functions_and_through_common(fake_package):
    deps = {p.relative_to(fake_package).as_posix() for p in runner.common_dependencies("a")}
    assert deps == {"common/__init__.py", "common/stats.py", "common/validation.py"}
    deps_b = {p.relative_to(fake_package).as_posix() for p in runner.common_dependencies("b")}
    assert deps_b == {"common/__init__.py", "common/models/__init__.py", "common/models/big.py"}


def test_version_changes_only_with_code_the_paper_uses(fake_package):
    before = runner.code_version("a"), runner.code_version("b")
    (fake_package / "common/unused.py").write_text("X = 2\n")
    assert (runner.code_version("a"), runner.code_version("b")) == before
    (fake_package / "common/validation.py").write_text("def check(): return 1\n")
    assert runner.code_version("a") != before[0]
    assert runner.code_version("b") == before[1]
    (fake_package / "papers/b/__init__.py").write_text("from neurips26.common import models\n#\n")
    assert runner.code_version("b") != before[1]


def test_real_papers_depend_on_what_they_import():
    deps = {p.name for p in runner.common_dependencies("lambda6_star")}
    assert "validation.py" in deps and "experiment.py" in deps
    assert "llm.py" not in deps and "train.py" not in deps


def test_a_run_records_the_code_version_it_started_with(monkeypatch):
    """Files edited (or commits made) while a run is in progress must not be recorded as
    the code that produced it: the version and commit are taken before the experiment."""
    import neurips26.common.seeding as seeding
    import neurips26.runner as runner
    from neurips26.registry import SLUGS

    started = []
    original_seed = seeding.seed_everything

    def mark_start(seed):
        started.append(True)
        return original_seed(seed)

    monkeypatch.setattr(seeding, "seed_everything", mark_start)
    monkeypatch.setattr(runner, "code_version", lambda slug: "after" if started else "before")
    monkeypatch.setattr(runner, "git_commit", lambda: "after" if started else "before")
    record = runner.run_paper(SLUGS[0], tier="smoke")
    assert started, "the run never seeded: the test no longer observes the start"
    assert (record.code_version, record.git_commit) == ("before", "before")
