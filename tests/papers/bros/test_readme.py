"""The README's example runs."""

import re
from pathlib import Path

import neurips26.papers.bros as pkg


def test_readme_example_runs():
    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code.replace("print(", "(lambda *a: None)("), "README.md", "exec"), {})
