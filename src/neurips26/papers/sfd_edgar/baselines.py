"""The other converters we compare against, all offline, behind one signature.

Each baseline is ``convert(html: str) -> str`` (Markdown or text). Generic HTML converters:
html2text, markdownify, html-to-markdown (Rust), inscriptis (text only, layout by spaces);
SEC-specific: sec2md and edgartools' document parser. A baseline whose package is not
installed is left out of :func:`available_baselines` rather than failing.
"""

from __future__ import annotations

import importlib.util
import io
import logging
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout

from ._checks import check_choice, check_text


def _html2text(html: str) -> str:
    import html2text

    h = html2text.HTML2Text()
    h.body_width = 0
    h.ignore_images = True
    h.ignore_links = True
    return h.handle(html)


def _markdownify(html: str) -> str:
    from markdownify import markdownify

    return markdownify(html, heading_style="ATX")


def _html_to_markdown(html: str) -> str:
    from html_to_markdown import convert

    out = convert(html)
    return out if isinstance(out, str) else getattr(out, "content", str(out))


def _inscriptis(html: str) -> str:
    from inscriptis import get_text

    return get_text(html)


def _sec2md(html: str) -> str:
    from sec2md import convert_to_markdown

    return convert_to_markdown(html)


def _edgartools(html: str) -> str:
    from edgar.documents import parse_html

    logging.getLogger("edgar").setLevel(logging.ERROR)
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        return parse_html(html).to_markdown()


#: name -> (module to import, converter, whether it writes pipe tables)
BASELINES: dict[str, tuple[str, Callable[[str], str], bool]] = {
    "html2text": ("html2text", _html2text, True),
    "markdownify": ("markdownify", _markdownify, True),
    "html-to-markdown": ("html_to_markdown", _html_to_markdown, True),
    "inscriptis": ("inscriptis", _inscriptis, False),
    "sec2md": ("sec2md", _sec2md, True),
    "edgartools": ("edgar", _edgartools, True),
}


def available_baselines() -> tuple[str, ...]:
    """The baselines whose packages are installed, in a fixed order."""
    return tuple(n for n, (mod, _, _) in BASELINES.items() if importlib.util.find_spec(mod))


def run_baseline(name: str, html: str) -> str:
    """Convert ``html`` with the baseline ``name``.

    Raises
    ------
    ValueError
        For an unknown name; ``ImportError`` if its package is missing.
    """
    check_choice("name", name, tuple(BASELINES))
    check_text("html", html)
    return BASELINES[name][1](html)
