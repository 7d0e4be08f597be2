"""HTML (and SGML/text) SEC filings to layout-faithful MultiMarkdown.

The block model (spec step 3): every text node belongs to its nearest block ancestor and a
block emits only its own inline text, flushed when a child block starts or the block ends,
so text inside five nested ``<div>`` wrappers is written once. Inline-XBRL is stripped first
(step 2: ``ix:header`` and ``display:none`` content dropped, ``ix:*`` wrappers unwrapped);
short bold, large or ``PART``/``Item`` lines become headings (step 4); page numbers, folios
and running headers next to page breaks are removed (step 5); tables go through
:func:`~.tables.table_to_grid` (step 6) unless they are layout tables (a single column, a
bullet column, a one-row caption), which become paragraphs and lists (steps 6b, 7).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
from sklearn.base import BaseEstimator

from ._checks import check_bool, check_choice
from .decode import decode_html, is_submission, split_submission
from .tables import TableGrid, clean_text, grid_to_mmd, is_numeric, table_to_grid

BLOCK_TAGS = frozenset(
    "address article aside blockquote body center dd div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header html li main nav ol p section tbody thead tfoot "
    "tr td th ul caption".split()
)
DROP_TAGS = frozenset({"script", "style", "head", "noscript", "template", "ix:header", "title"})
BULLETS = "•●◦▪■·○➢►–-"
_PAGE_NUMBER = re.compile(
    r"^(page\s+)?(\d{1,4}|[A-Z]{1,2}\s?-\s?\d{1,3}|-\s*\d{1,4}\s*-|[ivxlc]{1,6})(\s+of\s+\d+)?$",
    re.I,
)
_PART = re.compile(r"^PART\s+[IVX]+\b", re.I)
_ITEM = re.compile(r"^ITEM\s+\d+[A-Z]?(\.\d+)?\.?(\s|$)", re.I)
_MARKER = re.compile(r"^(\(\w{1,3}\)|\*{1,3}|†|‡|\d{1,2}\.?|[a-z]\.)$")
_HIDDEN = re.compile(r"display\s*:\s*none", re.I)
_PAGE_BREAK = re.compile(r"(page-)?break-(before|after)\s*:\s*(always|page)", re.I)
_INLINE = re.compile(r"display\s*:\s*inline(?!-table)", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)


@dataclass(frozen=True)
class ConversionResult:
    """What a conversion gives back.

    Attributes
    ----------
    markdown : str
        The MultiMarkdown document.
    tables : tuple of TableGrid
        The data tables, in document order (layout tables turned into text are not here).
    warnings : tuple of str
        Everything skipped or repaired (hidden elements, images, malformed spans, ...).
    stats : dict
        Counts: input and output characters, tables, headings, skipped elements.
    """

    markdown: str
    tables: tuple[TableGrid, ...] = ()
    warnings: tuple[str, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DocumentResult:
    """One converted ``<DOCUMENT>`` of a full submission: its ``<TYPE>``, ``<SEQUENCE>``
    and ``<FILENAME>``, its MultiMarkdown, warnings and data tables (as
    :attr:`ConversionResult.tables`)."""

    type: str
    sequence: str
    filename: str
    markdown: str
    warnings: tuple[str, ...] = ()
    tables: tuple[TableGrid, ...] = ()


@dataclass
class _Para:
    runs: list  # (text, bold, italic, size, link)
    marker: str | None = None  # list marker ("- ", "1. ") for <li>
    depth: int = 0
    plain_list: bool = False  # from a bullet layout table or a bullet glyph

    def plain(self) -> str:
        return clean_text("".join(t for t, *_ in self.runs).replace("\n", " "))


@dataclass
class _Table:
    grid: TableGrid


@dataclass
class _Pre:
    text: str


class _Break:
    pass


_FONT_SIZE = re.compile(r"font-size\s*:\s*([\d.]+)\s*(pt|px|em|rem|%)?", re.I)
_WEIGHT = re.compile(r"font-weight\s*:\s*(bold|bolder|normal|lighter|\d{3})", re.I)
_ITALIC = re.compile(r"font-style\s*:\s*(italic|oblique|normal)", re.I)


def _style(el, parent: tuple[bool, bool, float | None]) -> tuple[bool, bool, float | None]:
    bold, italic, size = parent
    tag = el.tag
    if tag in ("b", "strong") or tag in ("h1", "h2", "h3", "h4", "h5", "h6", "th"):
        bold = True
    if tag in ("i", "em"):
        italic = True
    css = el.get("style")
    if css:
        m = _WEIGHT.search(css)
        if m:
            w = m.group(1).lower()
            bold = w in ("bold", "bolder") or (w.isdigit() and int(w) >= 600)
        m = _ITALIC.search(css)
        if m:
            italic = m.group(1).lower() != "normal"
        m = _FONT_SIZE.search(css)
        if m:
            v, unit = float(m.group(1)), (m.group(2) or "px").lower()
            base = size or 10.0
            size = {"pt": v, "px": v * 0.75, "em": v * base, "rem": v * 10.0}.get(
                unit, v / 100 * base
            )
    return bold, italic, size


class _Walker:
    """Turns a cleaned lxml tree into blocks (the block model of spec step 3)."""

    def __init__(self, currency: str, strict: bool, warnings: list[str]) -> None:
        self.currency, self.strict, self.warnings = currency, strict, warnings
        self.blocks: list = []
        self.runs: list = []
        self.pending_marker: str | None = None
        self.list_stack: list[list] = []  # [ordered, counter]
        self.num_tables = 0

    def flush(self) -> None:
        if any(t.strip() for t, *_ in self.runs):
            para = _Para(self.runs)
            if self.pending_marker is not None:
                para.marker, para.depth = self.pending_marker, max(len(self.list_stack) - 1, 0)
                self.pending_marker = None
            self.blocks.append(para)
        self.runs = []

    def walk(self, el, style, link: bool) -> None:
        tag = el.tag
        if tag == "br":
            self.runs.append(("\n", *style, link))
            return
        css = el.get("style") or ""
        brk = _PAGE_BREAK.search(css) if css else None
        if brk and brk.group(2).lower() == "before":
            self.flush()
            self.blocks.append(_Break())
        if tag == "hr":
            self.flush()
            self.blocks.append(_Break())
            return
        if tag == "table":
            self.flush()
            self.table(el)
        elif tag in ("pre", "xmp", "plaintext"):
            self.flush()
            self.blocks.append(_Pre(el.text_content()))
        else:
            st = _style(el, style)
            lk = link or (tag == "a" and el.get("href") is not None)
            block = tag in BLOCK_TAGS and not (css and _INLINE.search(css))
            if block:
                self.flush()
            if tag in ("ul", "ol"):
                self.list_stack.append([tag == "ol", 0])
            if tag == "li":
                if self.list_stack:
                    top = self.list_stack[-1]
                    top[1] += 1
                    self.pending_marker = f"{top[1]}. " if top[0] else "- "
                else:
                    self.pending_marker = "- "
            if el.text:
                self.runs.append((el.text, *st, lk))
            for child in el:
                if isinstance(child.tag, str):
                    self.walk(child, st, lk)
                if child.tail:
                    self.runs.append((child.tail, *st, lk))
            if block:
                self.flush()
            if tag in ("ul", "ol") and self.list_stack:
                self.list_stack.pop()
        if brk and brk.group(2).lower() == "after":
            self.flush()
            self.blocks.append(_Break())

    def table(self, el) -> None:
        index = self.num_tables
        self.num_tables += 1
        grid = table_to_grid(
            el, currency=self.currency, strict=self.strict, warnings=self.warnings, index=index
        )
        if not grid.rows:
            return
        texts = grid.texts()
        nonempty_cols = {c for row in texts for c, t in enumerate(row) if t}
        if len(nonempty_cols) <= 1 or (len(grid.rows) == 1 and not any(
            c.numeric for c in grid.rows[0]
        )):  # layout table: one column, or a one-row caption ("Item 5.02 | Departure ...")
            for row in grid.rows:
                text = " ".join(c.text for c in row if c.text)
                if text:
                    self.blocks.append(_Para([(text, False, False, None, False)]))
            return
        first = [row[0] for row in texts]
        rest = [" ".join(dict.fromkeys(t for t in row[1:] if t)) for row in texts]
        if all(f and (f in BULLETS or _MARKER.match(f)) for f in first) and all(rest):
            for f, r in zip(first, rest, strict=True):  # bullet / footnote layout table
                if f in BULLETS:
                    self.blocks.append(_Para([(r, False, False, None, False)], marker="- "))
                else:
                    self.blocks.append(_Para([(f"{f} {r}", False, False, None, False)]))
            return
        self.blocks.append(_Table(grid))


def _render_runs(runs: list) -> str:
    """Inline runs to Markdown: emphasis from bold/italic, whitespace collapsed."""
    out: list[str] = []
    prev = (False, False)
    groups: list[list] = []
    for text, bold, italic, _size, _link in runs:
        t = text.replace("\xa0", " ")
        if t == "\n":
            groups.append(["\x00", prev])
            continue
        t = re.sub(r"\s+", " ", t)
        key = (bold, italic) if t.strip() else prev
        if groups and groups[-1][1] == key and groups[-1][0] != "\x00":
            groups[-1][0] += t
        else:
            groups.append([t, key])
        prev = key
    for text, (bold, italic) in groups:
        if text == "\x00":
            out.append("\x00")
            continue
        core = text.strip()
        if not core:
            out.append(text)
            continue
        core = core.replace("*", "\\*")
        lead = " " if text[0] == " " else ""
        trail = " " if text[-1] == " " else ""
        mark = ("**" if bold else "") + ("*" if italic else "")
        out.append(f"{lead}{mark}{core}{mark[::-1]}{trail}")
    s = "".join(out).translate({0x200B: None, 0x200C: None, 0x200D: None, 0xFEFF: None})
    s = re.sub(r" {2,}", " ", s)
    s = re.sub(r" *\x00 *", "\n", s)
    s = re.sub(r"\n{2,}", "\n", s).strip()
    return s


def _para_size(p: _Para) -> float | None:
    weights: Counter = Counter()
    for text, _b, _i, size, _l in p.runs:
        if size is not None:
            weights[round(size, 1)] += len(text.strip())
    return weights.most_common(1)[0][0] if weights else None


def _all_bold(p: _Para) -> bool:
    return all(b for t, b, *_ in p.runs if t.strip())


def _remove_page_artifacts(blocks: list) -> tuple[list, int]:
    """Spec step 5: folios and running headers next to page breaks, TOC back-links."""
    drop: set[int] = set()
    near: list[list[int]] = []  # per break, the paragraph indices around it
    for i, b in enumerate(blocks):
        if not isinstance(b, _Break):
            continue
        around = []
        for step in (-1, 1):
            j, seen = i + step, 0
            while 0 <= j < len(blocks) and seen < 3:
                if isinstance(blocks[j], _Break):
                    break
                if not isinstance(blocks[j], _Para):
                    break
                around.append(j)
                seen += 1
                j += step
        near.append(around)
    keys: dict[str, set[int]] = {}
    for k, around in enumerate(near):
        for j in around:
            text = blocks[j].plain()
            if _PAGE_NUMBER.match(text) or text.lower() == "table of contents":
                drop.add(j)
            elif len(text.split()) <= 20:
                keys.setdefault(re.sub(r"\d+", "#", text.lower()), set()).add(k)
    repeated = {key for key, breaks in keys.items() if len(breaks) >= 3}
    for around in near:
        for j in around:
            if re.sub(r"\d+", "#", blocks[j].plain().lower()) in repeated:
                drop.add(j)
    for j, b in enumerate(blocks):  # "Table of Contents" back-links anywhere
        if isinstance(b, _Para) and b.plain().lower() == "table of contents":
            if all(link for t, *_, link in b.runs if t.strip()):
                drop.add(j)
    kept = [b for j, b in enumerate(blocks) if j not in drop and not isinstance(b, _Break)]
    return kept, len(drop)


def _fence(text: str, lang: str = "text") -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    body = "\n".join(line.rstrip() for line in lines).expandtabs(8)
    ticks = "```"
    while ticks in body:
        ticks += "`"
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _render(blocks: list, detect_headings: bool, rowspan: str, stats: dict) -> str:
    sizes: Counter = Counter()
    for b in blocks:
        if isinstance(b, _Para):
            s = _para_size(b)
            if s is not None:
                sizes[s] += len(b.plain())
    body_size = sizes.most_common(1)[0][0] if sizes else None
    out: list[str] = []
    kinds: list[str] = []
    for b in blocks:
        if isinstance(b, _Table):
            out.append(grid_to_mmd(b.grid, rowspan=rowspan))
            kinds.append("table")
            continue
        if isinstance(b, _Pre):
            if b.text.strip():
                out.append(_fence(b.text))
                kinds.append("pre")
            continue
        text = _render_runs(b.runs)
        if not text:
            continue
        plain = b.plain()
        marker = b.marker
        if marker is None and plain[:1] in BULLETS and plain[1:2] == " ":
            marker, text = "- ", re.sub(r"^(\*\*|\*)?[" + BULLETS + r"]\s*", r"\1", text)
        if marker is not None:
            out.append("  " * b.depth + marker + text)
            kinds.append("li")
            continue
        level = 0
        words = len(plain.split())
        if detect_headings and "\n" not in text and words <= 25 and not is_numeric(plain):
            size = _para_size(b)
            if _PART.match(plain) and (_all_bold(b) or words <= 12):
                level = 1
            elif _ITEM.match(plain) and (_all_bold(b) or words <= 12):
                level = 2
            elif words <= 12:
                if _all_bold(b) and any(ch.isalpha() for ch in plain):
                    level = 3
                elif size and body_size and size > body_size + 0.5 and len(plain) > 1:
                    level = 3
        if level:
            out.append("#" * level + " " + plain.replace("*", "\\*"))
            kinds.append("h")
            stats["num_headings"] += 1
            continue
        text = re.sub(r"^(\d+)\. ", r"\1\\. ", text)
        text = re.sub(r"^([#>+]|- )", r"\\\1", text)
        out.append(text)
        kinds.append("p")
    pieces: list[str] = []
    for k, (kind, text) in enumerate(zip(kinds, out, strict=True)):
        if k:
            pieces.append("\n" if kind == "li" and kinds[k - 1] == "li" else "\n\n")
        pieces.append(text)
    return "".join(pieces) + ("\n" if pieces else "")


def _drop(el) -> None:
    """Remove ``el`` but keep its tail text."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    prev = el.getprevious()
    if tail:
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


#: Markup and character references, for counting a document's text characters.
_TAGS = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)
_ENTITY = re.compile(r"&#?\w+;")
_SPACE = re.compile(r"\s+")

#: The share of the input's text characters (an estimate from the raw markup) the parsed
#: tree must keep; below it the parse lost text (libxml2's limits) and html5lib is tried.
KEEP_SHARE = 0.5


def _text_chars(text: str) -> int:
    """Characters of text outside markup, whitespace and entities left out (an estimate)."""
    return len(_SPACE.sub("", _ENTITY.sub("x", _TAGS.sub("", text))))


def _tree_chars(root) -> int:
    return sum(len(_SPACE.sub("", t)) for t in root.itertext())


def _parse(text: str, warnings: list[str]):
    """Parse with lxml (``huge_tree``: no libxml2 limit on depth or text size); when the
    tree still holds less than :data:`KEEP_SHARE` of the input's text, parse with html5lib
    and keep whichever holds more, saying so in ``warnings``."""
    text = _XML_DECL.sub("", text, count=1)
    if "\x00" in text:
        warnings.append(f"removed {text.count(chr(0))} NUL bytes (they end the parser's input)")
        text = text.replace("\x00", "")
    want = _text_chars(text)
    parser = lxml.html.HTMLParser(huge_tree=True, remove_comments=False)
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        warnings.append(f"lxml could not parse the document ({exc}); used html5lib")
        return _html5lib(text)
    got = _tree_chars(root)
    if want and got < KEEP_SHARE * want:
        try:
            other = _html5lib(text)
        except RecursionError:
            other = None
        other_got = _tree_chars(other) if other is not None else -1
        if other_got > got:
            warnings.append(
                f"lxml kept {got} of about {want} text characters; used html5lib, which kept "
                f"{other_got}"
            )
            root, got = other, other_got
        if got < KEEP_SHARE * want:
            warnings.append(
                f"the parsed document holds {got} of about {want} text characters of the "
                "input: some text may be lost"
            )
    return root


def _html5lib(text: str):
    import html5lib

    return html5lib.parse(text, treebuilder="lxml", namespaceHTMLElements=False).getroot()


def _clean(root, stats: dict) -> None:
    """Spec step 2: drop scripts, hidden content, ``ix:header``; unwrap ``ix:*`` tags."""
    for el in list(root.iter(lxml.etree.Comment, lxml.etree.ProcessingInstruction)):
        _drop(el)
    for el in list(root.iter()):
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if el.getparent() is None and tag == "html":
            continue
        if tag in DROP_TAGS:
            stats["skipped_scripts_styles_headers"] += 1
            _drop(el)
        elif _HIDDEN.search(el.get("style") or "") or el.get("hidden") is not None:
            stats["skipped_hidden"] += 1
            _drop(el)
        elif tag == "img":
            stats["skipped_images"] += 1
            _drop(el)
    for el in list(root.iter()):
        if isinstance(el.tag, str) and ":" in el.tag and el.getparent() is not None:
            el.drop_tag()


def html_to_mmd(
    html: str | bytes,
    *,
    currency: str = "attach",
    rowspan: str = "mmd6",
    detect_headings: bool = True,
    strict: bool = False,
) -> ConversionResult:
    """Convert one SEC filing (HTML, iXBRL, SGML submission or plain text) to MultiMarkdown.

    Parameters
    ----------
    html : str or bytes
        The filing. Bytes are decoded by :func:`~.decode.decode_html`. A full submission
        (``<DOCUMENT>`` blocks) converts each document; text without markup becomes a
        fenced ``text`` block.
    currency : {"attach", "drop", "column"}
        Split currency cells: join the number (default), drop, or keep as a column.
    rowspan : {"mmd6", "empty"}
        Write cells covered by a rowspan as ``^^`` (MultiMarkdown 6) or empty.
    detect_headings : bool
        Promote short bold / large / ``PART`` / ``Item`` lines to headings (spec step 4).
    strict : bool
        Raise ``ValueError`` on malformed table spans instead of repairing them.

    Returns
    -------
    ConversionResult
        The markdown, the data tables as grids, the warnings and the counts. An empty
        filing gives an empty markdown and a warning, not an error.

    Raises
    ------
    TypeError
        For input that is not str or bytes, or options of the wrong type.
    ValueError
        For PDF/image/archive bytes, undecodable bytes, or an unknown option value.

    Examples
    --------
    >>> r = html_to_mmd('<div><div><div><b>PART I</b></div></div></div>'
    ...                 '<table><tr><td></td><td colspan="3">2025</td></tr>'
    ...                 '<tr><td>Net loss</td><td>$</td><td>(1,056</td><td>)</td></tr></table>')
    >>> print(r.markdown)
    # PART I
    <BLANKLINE>
    |  | 2025 |
    |---|---:|
    | Net loss | $(1,056) |
    <BLANKLINE>
    """
    check_choice("currency", currency, ("attach", "drop", "column"))
    check_choice("rowspan", rowspan, ("mmd6", "empty"))
    check_bool("detect_headings", detect_headings)
    check_bool("strict", strict)
    text, encoding = decode_html(html, name="html")
    stats: dict[str, Any] = Counter(
        input_chars=len(text), num_tables=0, num_headings=0, skipped_hidden=0,
        skipped_images=0, skipped_scripts_styles_headers=0, skipped_page_artifacts=0,
    )
    stats["encoding"] = encoding
    warnings: list[str] = []
    if "ignored" in encoding:
        warnings.append(f"decoded as {encoding}")
    if not text.strip():
        return ConversionResult("", (), ("empty filing: nothing to convert",), dict(stats))
    if is_submission(text):
        docs = submission_to_mmd(
            text, currency=currency, rowspan=rowspan, detect_headings=detect_headings,
            strict=strict,
        )
        parts = []
        for d in docs:
            parts.append(f"<!-- document {d.sequence}: {d.type} {d.filename} -->\n\n{d.markdown}")
            warnings.extend(f"document {d.sequence}: {w}" for w in d.warnings)
        md = "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
        tables = tuple(t for d in docs for t in d.tables)  # in document order
        stats["num_documents"] = len(docs)
        stats["num_tables"] = len(tables)
        return ConversionResult(md, tables, tuple(warnings), dict(stats))
    if not re.search(r"<\s*(html|body|div|p|table|pre|font|span|br|tr|td|b|a)\b", text[:100_000],
                     re.I):
        stats["output_chars"] = len(text)
        return ConversionResult(_fence(text) + "\n", (), ("no markup: kept as a text block",),
                                dict(stats))
    root = _parse(text, warnings)
    _clean(root, stats)
    walker = _Walker(currency, strict, warnings)
    body = root.find("body")
    walker.walk(body if body is not None else root, (False, False, None), False)
    walker.flush()
    blocks, removed = _remove_page_artifacts(walker.blocks)
    stats["skipped_page_artifacts"] = removed
    md = _render(blocks, detect_headings, rowspan, stats)
    tables = tuple(b.grid for b in blocks if isinstance(b, _Table))
    stats["num_tables"] = len(tables)
    stats["num_layout_tables"] = walker.num_tables - len(tables)
    stats["output_chars"] = len(md)
    for key, what in (
        ("skipped_hidden", "hidden (display:none) elements"),
        ("skipped_images", "images"),
        ("skipped_page_artifacts", "page numbers / running headers"),
    ):
        if stats[key]:
            warnings.append(f"skipped {stats[key]} {what}")
    if not md.strip():
        warnings.append("no visible text in the filing")
    return ConversionResult(md, tables, tuple(warnings), dict(stats))


def submission_to_mmd(text: str | bytes, **kw: Any) -> list[DocumentResult]:
    """Convert every ``<DOCUMENT>`` of an EDGAR full-submission ``.txt`` file.

    Parameters
    ----------
    text : str or bytes
        The submission (``<SEC-DOCUMENT>`` with ``<DOCUMENT>`` blocks).
    **kw
        Options of :func:`html_to_mmd`.

    Returns
    -------
    list of DocumentResult
        HTML documents converted, plain-text ones fenced; uuencoded binaries (images,
        PDFs, ZIPs) and XBRL/XML documents skipped with a warning.

    Raises
    ------
    ValueError
        For an unterminated ``<DOCUMENT>`` (naming its sequence number).
    """
    text, _ = decode_html(text, name="text")
    out = []
    for doc in split_submission(text):
        body = doc.text
        head = body[:5000].lstrip()
        if re.match(r"^begin \d{3} ", head) or detect_uu(head):
            out.append(DocumentResult(doc.type, doc.sequence, doc.filename, "",
                                      ("uuencoded binary document skipped",)))
            continue
        if re.match(r"^<XML>|^<\?xml", head, re.I) and not re.search(r"<html", head, re.I):
            out.append(DocumentResult(doc.type, doc.sequence, doc.filename, "",
                                      ("XML/XBRL document skipped",)))
            continue
        res = html_to_mmd(body, **kw)
        out.append(DocumentResult(doc.type, doc.sequence, doc.filename, res.markdown,
                                  res.warnings, res.tables))
    return out


def detect_uu(head: str) -> bool:
    """Whether a document body starts with uuencoded data (``begin 644 name``)."""
    return bool(re.match(r"^<PDF>|^begin \d{3} \S+", head, re.I))


class EdgarConverter(BaseEstimator):
    """The converter as an object with fixed options (scikit-learn style parameters).

    Parameters are those of :func:`html_to_mmd`.

    Examples
    --------
    >>> EdgarConverter(currency="drop").convert("<p>Hello</p>").markdown
    'Hello\\n'
    """

    def __init__(
        self,
        *,
        currency: str = "attach",
        rowspan: str = "mmd6",
        detect_headings: bool = True,
        strict: bool = False,
    ) -> None:
        self.currency = currency
        self.rowspan = rowspan
        self.detect_headings = detect_headings
        self.strict = strict

    def convert(self, html: str | bytes) -> ConversionResult:
        """Convert one filing (see :func:`html_to_mmd`)."""
        return html_to_mmd(
            html,
            currency=self.currency,
            rowspan=self.rowspan,
            detect_headings=self.detect_headings,
            strict=self.strict,
        )

    def convert_file(self, path: str | Path) -> ConversionResult:
        """Read and convert a file (``.htm``, ``.html``, ``.txt`` submission)."""
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"path: {str(p)!r} is not a file")
        return self.convert(p.read_bytes())


__all__ = [
    "ConversionResult",
    "DocumentResult",
    "EdgarConverter",
    "html_to_mmd",
    "submission_to_mmd",
]
