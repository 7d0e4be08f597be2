"""qc_a2s: the README's usage example runs as written (on the tiny model)."""

import re
from pathlib import Path

import neurips26.papers.qc_a2s as pkg


def test_readme_example_runs():
    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
