"""The report as a browser shows it: headless Chromium renders pages of a small store and
a script checks that nothing overflows the page width and that every image loads."""

from __future__ import annotations

import json
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
    if (parent && parent.closest(".scroll, pre")) continue;  // clipped and scrollable
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // hidden (closed <details>)
    if (r.right > width + 1) overflowing.push(el.tagName + ": " + el.textContent.slice(0, 60));
  }
  const broken = [...document.images]
    .filter((img) => !(img.complete && img.naturalWidth > 0))
    .map((img) => img.getAttribute("src"));
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    width, overflowing, broken, images: document.images.length,
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
    out = subprocess.run(
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
    found = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert found, f"the probe did not run; chromium said: {out.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


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
