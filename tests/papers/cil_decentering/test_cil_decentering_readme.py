"""The README's usage example runs and de-centering beats the sequential heads in it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import neurips26.papers.cil_decentering as pkg


def test_readme_example_runs():
    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    seq, dec = map(float, re.search(r"sequential (\S+) de-centred (\S+)", out.getvalue()).groups())
    assert dec > seq + 0.3
