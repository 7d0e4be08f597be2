"""The report as a browser shows it: headless Chromium renders pages of a store and a
script checks that nothing overflows the page width, that no table is wider than its
container, that no verdict or cell is clipped, and that every image loads. One store holds a
run of every registered paper (its real claims, statements and deviations)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import TOY, make_record
from neurips26.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)

# Runs after load: every visible element outside a scrolling box must end inside the
# viewport, the page itself must not scroll sideways, and every image must have decoded.
PROBE = """
<script>
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const overflowing = [];
  for (const el of document.body.querySelectorAll("*")) {
    const parent = el.parentElement;
    if (parent && parent.closest("pre")) continue;  // preformatted text scrolls
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // hidden (closed <details>)
    if (r.right > width + 1) overflowing.push(el.tagName + ": " + el.textContent.slice(0, 60));
  }
  const clipped = [];
  for (const table of document.querySelectorAll("table")) {
    const box = table.parentElement.getBoundingClientRect();
    const r = table.getBoundingClientRect();
    if (r.width > 0 && r.right > box.right + 1)
      clipped.push("table wider than its container: " + table.textContent.slice(0, 60));
  }
  for (const cell of document.querySelectorAll("td, th")) {
    if (cell.getBoundingClientRect().width === 0) continue;
    if (cell.scrollWidth > cell.clientWidth + 1)
      clipped.push("cell content wider than its cell: " + cell.textContent.slice(0, 60));
    for (const badge of cell.querySelectorAll(".v")) {
      const b = badge.getBoundingClientRect(), c = cell.getBoundingClientRect();
      if (b.right > c.right + 1 || b.left < c.left - 1)
        clipped.push("verdict clipped: " + badge.textContent);
    }
  }
  // a claim's statement must get a readable measure, not a few words per line
  const statementEm = [];
  for (const row of document.querySelectorAll("table.claims tr")) {
    const cell = row.children[1];
    if (!cell || cell.tagName !== "TD") continue;
    statementEm.push(cell.clientWidth / parseFloat(getComputedStyle(cell).fontSize));
  }
  // every image shown undistorted and at a legible fraction of its drawn size
  const imageScales = [...document.images].filter((img) => img.naturalWidth > 0).map((img) => ({
    src: img.getAttribute("src"),
    scale: img.clientWidth / img.naturalWidth,
    distortion: Math.abs((img.clientHeight / img.clientWidth)
                         / (img.naturalHeight / img.naturalWidth) - 1),
  }));
  const broken = [...document.images]
    .filter((img) => !(img.complete && img.naturalWidth > 0))
    .map((img) => img.getAttribute("src"));
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    width, overflowing, clipped, broken, images: document.images.length, statementEm,
    imageScales,
    pageScrolls: document.documentElement.scrollWidth > width + 1,
  });
  document.body.appendChild(out);
});
</script>
"""


def png(width: int = 4, height: int = 3) -> bytes:
    """A small valid PNG (grey), so the browser can decode it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def probe(page: Path, tmp_path: Path, width: int) -> dict:
    probed = page.with_name(page.stem + "__probe.html")  # same folder: relative images work
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        out = _render(probed, tmp_path, width)
    finally:
        probed.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert found, f"the probe did not run; chromium said: {out.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def _render(probed: Path, tmp_path: Path, width: int):
    return subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--window-size={width},900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from neurips26.store import Store

    tmp = tmp_path_factory.mktemp("browser")
    store = Store(tmp / "s.sqlite")
    wide = [{f"a_rather_long_column_name_{i}": 123456.789 * (i + 1) for i in range(30)}] * 3
    store.save(
        make_record(
            {"mean": 0.1, "n": 50, "n_ci": 1.0, "err": float("nan")},
            figures={"trace": png(1600, 40), "small": png()},
            captions={"trace": "A figure wider than the page, scaled down to fit."},
            tables={"wide": wide, "nan": [{"x": float("nan"), "y": "[555 797  85]"}]},
            notes=("an_unbreakable_" + "x" * 300,),
            error=None,
        )
    )
    store.save(make_record({}, tier="smoke", status="failed", error="Traceback " + "y" * 400))
    write_report(store, tmp / "rep", papers=[TOY])
    return tmp / "rep", tmp


@pytest.mark.parametrize("name", ["index.html", "toy.html"])
@pytest.mark.parametrize("width", [1400, 800])
def test_no_element_overflows_and_every_image_loads(report, name, width):
    out_dir, tmp = report
    result = probe(out_dir / name, tmp, width)
    assert result["width"] > 0
    assert not result["overflowing"], result["overflowing"][:5]
    assert not result["pageScrolls"]
    assert result["images"] >= 1 and not result["broken"], result["broken"]


@pytest.fixture(scope="module")
def every_paper(tmp_path_factory):
    """A report of a store holding a small-tier run of every registered paper: each
    claim's metric, control and diagnostics measured with an interval, a wide table and a
    wide figure; the paper tier left unrun, so its claims are listed as not run."""
    from neurips26.records import RunRecord
    from neurips26.registry import all_papers
    from neurips26.store import Store

    tmp = tmp_path_factory.mktemp("browser_all")
    store = Store(tmp / "s.sqlite")
    papers = all_papers()
    for i, paper in enumerate(papers):
        names = {c.metric for c in paper.claims}
        names |= {c.control for c in paper.claims if c.control}
        names |= {d for c in paper.claims for d in c.diagnostics}
        metrics = {n: 0.123456 * (j + 1) * (-1) ** (i + j) for j, n in enumerate(sorted(names))}
        intervals = {n: {"lo": v - 0.05, "hi": v + 0.05, "method": "bootstrap percentile over "
                         "seeds and items", "level": 0.95, "n": 5} for n, v in metrics.items()}
        config = {f"setting_{k}": [k] * 12 for k in range(12)}
        store.save(RunRecord(
            slug=paper.slug, tier="small", seed=0, config=config, status="ok",
            metrics=metrics, volatile=(), intervals=intervals,
            claims=tuple(paper.evaluate(metrics, "small", intervals=intervals)),
            figures={"curve": png(1600, 40)},
            tables={"settings": [{f"column_number_{k}": 1234.5678 * k for k in range(15)}] * 2},
            code_version="abc",
        ))
    write_report(store, tmp / "rep", papers=papers)
    return tmp / "rep", tmp, [p.slug for p in papers]


#: The narrowest measure a claim's statement may get at 1400 px (in em: about two
#: characters each), and the smallest scale an image may be shown at.
MIN_STATEMENT_EM = 15
MIN_IMAGE_SCALE = 0.4


def _assert_fits(result):
    assert result["width"] > 0
    small = [i for i in result["imageScales"]
             if i["scale"] < MIN_IMAGE_SCALE or i["distortion"] > 0.02]  # fmt: skip
    assert not small, small
    assert not result["overflowing"], result["overflowing"][:5]
    assert not result["clipped"], result["clipped"][:5]
    assert not result["pageScrolls"]
    assert not result["broken"], result["broken"]
    narrow = [em for em in result["statementEm"] if em < MIN_STATEMENT_EM]
    assert not narrow, f"claim statements narrower than {MIN_STATEMENT_EM} em: {narrow[:5]}"


def _pages_fit(pages, tmp_path) -> dict:
    """``{(page, width): why}`` for each page that does not fit (the index at 1400 and
    800 px, every other page at 1400 px)."""
    bad = {}
    for page in pages:
        for width in (1400, 800) if page.name == "index.html" else (1400,):
            try:
                _assert_fits(probe(page, tmp_path, width))
            except AssertionError as err:
                bad[page.name, width] = str(err)[:300]
    return bad


@pytest.mark.parametrize("width", [1400, 800])
def test_index_of_every_paper_fits(every_paper, width):
    out_dir, tmp, _ = every_paper
    _assert_fits(probe(out_dir / "index.html", tmp, width))


# The pages with the longest claim ids, statements and the most claims; every page is
# rendered by the slow test below.
WIDEST = ("multiagent_performative", "sfd_edgar", "steering_hessian")


@pytest.mark.parametrize("slug", WIDEST)
def test_paper_pages_fit_at_1400_px(every_paper, slug):
    out_dir, tmp, _ = every_paper
    result = probe(out_dir / f"{slug}.html", tmp, 1400)
    _assert_fits(result)
    assert result["statementEm"]  # the claims table was measured


@pytest.mark.slow
def test_every_paper_page_fits_at_1400_px(every_paper):
    out_dir, tmp, slugs = every_paper
    bad = _pages_fit([out_dir / f"{slug}.html" for slug in slugs], tmp)
    assert not bad, bad


#: A report written by ``neurips26 report`` from a real store (``make check-report`` sets
#: it to ``report/``); the tests above render made-up stores.
WRITTEN = os.environ.get("NEURIPS26_REPORT")


@pytest.mark.skipif(not WRITTEN, reason="NEURIPS26_REPORT names no written report "
                    "(make check-report)")
def test_written_report_fits(tmp_path):
    out_dir = Path(WRITTEN).resolve()
    pages = sorted(out_dir.glob("*.html"))
    assert pages, f"no pages in {out_dir}"
    bad = _pages_fit(pages, tmp_path)
    assert not bad, bad
