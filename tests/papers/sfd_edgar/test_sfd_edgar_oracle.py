"""Independent oracle: markdown-it + markdown-it-multimd-table (npm) renders our tables.

The npm packages are installed once per test session into ``.cache/node`` (ignored by git)
when node and npm are present; without them the tests skip.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from neurips26.papers.sfd_edgar import html_to_mmd, table_to_grid
from neurips26.papers.sfd_edgar.experiment import (
    ALL_FILES,
    load_filing,
    oracle_grids,
    render_with_markdown_it,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def node_modules():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    base = ROOT / ".cache" / "node"
    mods = base / "node_modules"
    if not (mods / "markdown-it-multimd-table").is_dir():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed")
        base.mkdir(parents=True, exist_ok=True)
        res = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(base),
             "markdown-it@14", "markdown-it-multimd-table@4.2.3"],
            capture_output=True, text=True, timeout=300, check=False)
        if res.returncode != 0 or not (mods / "markdown-it-multimd-table").is_dir():
            pytest.skip(f"npm install failed: {res.stderr[-300:]}")
    return mods


@pytest.mark.parametrize("name", [f for f in ALL_FILES if f not in ("Apple.10-K", "Apple.10-Q")])
def test_markdown_it_renders_our_grids(node_modules, name):
    res = html_to_mmd(load_filing(name))
    rendered = oracle_grids(render_with_markdown_it(res.markdown, node_modules))
    assert rendered == list(res.tables)


def test_markdown_it_on_the_10k(node_modules):
    res = html_to_mmd(load_filing("Apple.10-K"))
    rendered = oracle_grids(render_with_markdown_it(res.markdown, node_modules))
    assert len(rendered) == len(res.tables) > 40
    assert rendered == list(res.tables)


def test_markdown_it_grid_equals_html_grid(node_modules):
    """The rendered grid equals the grid of the source HTML table, split cells merged."""
    html = ("<table><tr><td></td><td colspan='7'>Year Ended</td></tr>"
            "<tr><td></td><td colspan='3'>2025</td><td></td><td colspan='3'>2024</td></tr>"
            "<tr><td rowspan='2'>Equity</td><td>$</td><td>(5</td><td>)</td><td></td>"
            "<td></td><td>7</td><td></td></tr>"
            "<tr><td></td><td>3</td><td></td><td></td><td>$</td><td>4</td><td></td></tr></table>")
    res = html_to_mmd(html)
    (rendered,) = oracle_grids(render_with_markdown_it(res.markdown, node_modules))
    import lxml.html

    assert rendered == table_to_grid(lxml.html.fragment_fromstring(html))
    assert [c.text for c in rendered.rows[2]] == ["Equity", "$(5)", "7"]
    assert rendered.rows[2][0].rowspan == 2
