"""Every ```python block of the paper READMEs runs as written."""

import re
from pathlib import Path

import pytest

from neurips26.registry import PAPERS_DIR, SLUGS

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def blocks():
    for slug in SLUGS:
        path = PAPERS_DIR / slug / "README.md"
        text = path.read_text() if path.exists() else ""
        for i, code in enumerate(BLOCK.findall(text)):
            yield pytest.param(code, id=f"{slug}-{i}")


def test_every_paper_has_a_readme_with_an_example():
    for slug in SLUGS:
        path = PAPERS_DIR / slug / "README.md"
        assert path.exists(), f"{slug} has no README.md"
        assert BLOCK.search(path.read_text()), f"{slug}/README.md has no python example"


@pytest.mark.parametrize("code", list(blocks()))
def test_readme_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<README>", "exec"), {"__name__": "__readme__"})


def test_main_readme_lists_every_paper():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for slug in SLUGS:
        assert f"`{slug}`" in text, f"README.md's paper table lacks {slug}"
