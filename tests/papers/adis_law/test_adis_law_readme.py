"""The README's usage example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import neurips26.papers.adis_law as pkg


def test_readme_example_runs(capsys):
    text = (Path(pkg.__file__).parent / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "best policy at 4S" in out
