"""The README's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import neurips26.papers.seagram as pkg


def test_readme_example_runs(capsys):
    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "label kept:" in out and "oracle solver calls:" in out
