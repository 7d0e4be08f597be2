"""EDGAR-OCR-style metrics: TEDS, cell-triple F1, numeric recall, duplication rate.

TEDS (tree-edit-distance similarity, Zhong et al. 2020, PubTabNet) compares two tables as
trees ``table -> thead/tbody -> tr -> td``:

    TEDS(T_a, T_b) = 1 - EditDist(T_a, T_b) / max(|T_a|, |T_b|)            # Eq. (1)

with unit insert/delete costs and a rename cost of 1 between nodes of different tags or
spans, else the normalised Levenshtein distance of the two cells' texts. The edit distance
is APTED's (``apted``). Cell-triple F1 scores the set of (row label, column-header path,
value) triples of the data cells; numeric recall is the share of gold numbers found again
in a row with the same label (the table-level version of "nothing numeric lost").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ._checks import check_grid, check_grids, check_int
from .tables import TableGrid, clean_text

_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")


@dataclass(frozen=True)
class TableMetrics:
    """Scores of a predicted table against a gold table (all in [0, 1])."""

    teds: float
    cell_f1: float
    numeric_recall: float


class _Node:
    __slots__ = ("children", "colspan", "rowspan", "tag", "text")

    def __init__(self, tag, text="", colspan=1, rowspan=1, children=None):
        self.tag, self.text, self.colspan, self.rowspan = tag, text, colspan, rowspan
        self.children = children or []


def _tree(grid: TableGrid) -> _Node:
    head = [r for r in grid.rows[: grid.header_rows]]
    body = [r for r in grid.rows[grid.header_rows :]]

    def rows(rs):
        return [
            _Node("tr", children=[_Node("td", c.text, c.colspan, c.rowspan) for c in r])
            for r in rs
        ]

    kids = []
    if head:
        kids.append(_Node("thead", children=rows(head)))
    kids.append(_Node("tbody", children=rows(body)))
    return _Node("table", children=kids)


def _count(n: _Node) -> int:
    return 1 + sum(_count(c) for c in n.children)


def levenshtein(a: str, b: str) -> int:
    """Edit distance between two strings (unit costs).

    >>> levenshtein("kitten", "sitting")
    3
    """
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def teds(pred: TableGrid, gold: TableGrid) -> float:
    """Tree-edit-distance similarity of two tables, Eq. (1).

    Parameters
    ----------
    pred, gold : TableGrid

    Returns
    -------
    float
        1 for identical tables (texts, spans, header rows), towards 0 as they differ.

    Examples
    --------
    >>> from neurips26.papers.sfd_edgar.tables import Cell
    >>> g = TableGrid(rows=((Cell("a"), Cell("1")),), header_rows=0)
    >>> teds(g, g)
    1.0
    """
    from apted import APTED, Config

    for name, g in (("pred", pred), ("gold", gold)):
        if not isinstance(g, TableGrid):
            raise TypeError(f"{name} must be a TableGrid, got {type(g).__name__}")

    class _Cfg(Config):
        def rename(self, a, b):
            if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
                return 1.0
            if a.tag != "td":
                return 0.0
            if not a.text and not b.text:
                return 0.0
            return levenshtein(a.text, b.text) / max(len(a.text), len(b.text))

        def children(self, node):
            return node.children

    ta, tb = _tree(pred), _tree(gold)
    dist = APTED(ta, tb, _Cfg()).compute_edit_distance()
    return float(1.0 - dist / max(_count(ta), _count(tb)))


def _key(text: str) -> str:
    """Label / header normal form: lower-case letters and digits only."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _value(text: str) -> str:
    return re.sub(r"\s+", "", clean_text(text)).lower()


def numbers_in(text: str) -> list[str]:
    """The numbers of a text in normal form (no thousands separators, no sign).

    >>> numbers_in("$(1,056) and 15.9% of 0.40")
    ['1056', '15.9', '0.4']
    """
    out = []
    for m in _NUM.findall(text):
        s = m.replace(",", "")
        if "." in s:
            s = s.rstrip("0").rstrip(".") or "0"
        s = s.lstrip("0") or "0"
        if s.startswith("."):
            s = "0" + s
        out.append(s)
    return out


def cell_triples(grid: TableGrid) -> Counter:
    """Multiset of (row label, column-header path, value) over the data cells.

    The row label is the first column's text; the header path joins the distinct texts of
    the header cells above the column. Cells are compared in a light normal form
    (case and punctuation of labels, whitespace of values ignored).
    """
    if not isinstance(grid, TableGrid):
        raise TypeError(f"grid must be a TableGrid, got {type(grid).__name__}")
    texts = grid.texts()
    lay = grid.layout()
    if not texts:
        return Counter()
    ncols = len(texts[0])
    paths = []
    for c in range(ncols):
        parts: list[str] = []
        for r in range(grid.header_rows):
            t = texts[r][c]
            if t and (not parts or parts[-1] != t):
                parts.append(t)
        paths.append(_key(" ".join(parts)))
    out: Counter = Counter()
    for r in range(grid.header_rows, len(texts)):
        label = _key(texts[r][0])
        seen = set()
        for c in range(1, ncols):
            o = lay[r][c]
            if not o or o in seen or o == lay[r][0] or not texts[r][c]:
                continue
            seen.add(o)
            out[(label, paths[c], _value(texts[r][c]))] += 1
    return out


def _row_numbers(grids, *, skip_header: bool = False) -> Counter:
    """Multiset of (row label, number): the label is the row's first non-empty cell."""
    out: Counter = Counter()
    for g in grids:
        texts = g.texts()
        lay = g.layout()
        for r in range(g.header_rows if skip_header else 0, len(texts)):
            label = _key(next((t for t in texts[r] if t), ""))
            seen = set()
            for c in range(len(texts[r])):
                if lay[r][c] in seen:
                    continue
                seen.add(lay[r][c])
                for n in numbers_in(texts[r][c]):
                    out[(label, n)] += 1
    return out


def numeric_recall(pred: list[TableGrid], gold: list[TableGrid]) -> float:
    """Share of gold (row label, number) pairs found again in the predicted tables.

    Counted as multisets over all tables of a document; the row label is the first
    non-empty cell of the row, and header rows of the gold are skipped, so a year in a
    header is not a number to recall.
    """
    pred, gold = check_grids("pred", pred), check_grids("gold", gold)
    want = _row_numbers(gold, skip_header=True)
    have = _row_numbers(pred)
    total = sum(want.values())
    if total == 0:
        return float("nan")
    return float(sum(min(n, have[k]) for k, n in want.items()) / total)


def f1(pred: Counter, gold: Counter) -> float:
    """F1 of two multisets (1 when both are empty)."""
    tp = sum((pred & gold).values())
    np_, ng = sum(pred.values()), sum(gold.values())
    if np_ == 0 and ng == 0:
        return 1.0
    if tp == 0:
        return 0.0
    p, r = tp / np_, tp / ng
    return 2 * p * r / (p + r)


def table_metrics(pred: TableGrid | None, gold: TableGrid) -> TableMetrics:
    """TEDS, cell-triple F1 and numeric recall of one predicted table (``None``: missing).

    Examples
    --------
    >>> from neurips26.papers.sfd_edgar.tables import Cell
    >>> gold = TableGrid(rows=((Cell(""), Cell("2024")), (Cell("Sales"), Cell("$1,000"))),
    ...                  header_rows=1)
    >>> table_metrics(gold, gold)
    TableMetrics(teds=1.0, cell_f1=1.0, numeric_recall=1.0)
    """
    if not isinstance(gold, TableGrid):
        raise TypeError(f"gold must be a TableGrid, got {type(gold).__name__}")
    if pred is None:
        return TableMetrics(0.0, 0.0, 0.0)
    check_grid("pred", pred)
    rec = numeric_recall([pred], [gold])
    return TableMetrics(
        teds=teds(pred, gold),
        cell_f1=float(f1(cell_triples(pred), cell_triples(gold))),
        numeric_recall=1.0 if rec != rec else rec,
    )


def match_tables(pred: list[TableGrid], gold: list[TableGrid]) -> list[TableMetrics]:
    """Score each gold table against its best predicted table (by cell F1, then TEDS)."""
    pred, gold = check_grids("pred", pred), check_grids("gold", gold)
    out = []
    for g in gold:
        best = TableMetrics(0.0, 0.0, 0.0)
        gold_nums = Counter(n for row in g.texts() for t in row for n in numbers_in(t))
        for p in pred:
            pn = Counter(n for row in p.texts() for t in row for n in numbers_in(t))
            if gold_nums and not (gold_nums & pn):
                continue
            m = table_metrics(p, g)
            if (m.cell_f1, m.teds) > (best.cell_f1, best.teds):
                best = m
        out.append(best)
    return out


def text_numeric_recall(output: str, gold_numbers: list[str]) -> float:
    """Share of gold numbers (multiset) that appear anywhere in ``output``."""
    if not isinstance(output, str):
        raise TypeError(f"output must be a str, got {type(output).__name__}")
    want = Counter(gold_numbers)
    if not want:
        return float("nan")
    have = Counter(numbers_in(output))
    return float(sum(min(n, have[k]) for k, n in want.items()) / sum(want.values()))


def ixbrl_facts(html: str) -> list[tuple[str, str]]:
    """Gold numbers from inline XBRL: (row label, number) of every ``ix:nonFraction`` in a table.

    Independent of the converter: the label is the first non-empty cell of the fact's
    ``<tr>``, read with plain lxml ``text_content``. Nested facts (two tags on one
    displayed number) count once.
    """
    import lxml.html

    from .decode import decode_html

    text, _ = decode_html(html, name="html")
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    root = lxml.html.document_fromstring(text)
    out = []
    for el in root.iter("ix:nonfraction"):
        ancestors = [a.tag for a in el.iterancestors()]
        if "ix:nonfraction" in ancestors or "ix:header" in ancestors:
            continue  # a fact nested in another shows the same text once
        tr = next((a for a in el.iterancestors() if a.tag == "tr"), None)
        if tr is None:
            continue
        label = ""
        for td in tr:
            t = clean_text(td.text_content()) if isinstance(td.tag, str) else ""
            if t:
                label = t
                break
        for n in numbers_in(el.text_content()):
            out.append((_key(label), n))
    return out


def fact_recall(grids: list[TableGrid], facts: list[tuple[str, str]]) -> float:
    """Share of iXBRL facts (row label, number) found in a row of that label in ``grids``."""
    grids = check_grids("grids", grids)
    if not isinstance(facts, (list, tuple)):
        raise TypeError(f"facts must be a list of (label, number) pairs, got "
                        f"{type(facts).__name__}")
    for i, f in enumerate(facts):
        if not (isinstance(f, tuple) and len(f) == 2 and all(isinstance(x, str) for x in f)):
            raise TypeError(f"facts[{i}] must be a (label, number) pair of str, got {f!r}")
    want = Counter(facts)
    if not want:
        return float("nan")  # no facts to recall: nothing measured
    have = _row_numbers(grids)
    return float(sum(min(n, have[k]) for k, n in want.items()) / sum(want.values()))


def duplication_rate(source_html: str, output: str, *, min_chars: int = 30) -> float:
    """Share of the source's text blocks that the output holds more than once.

    Source blocks are the texts of leaf block elements (``p``, ``div``, ``td``, ...) with
    at least ``min_chars`` letters or digits that occur once in the source's visible text
    (scripts, styles, ``ix:header`` and ``display:none`` content removed); texts are
    compared in letters-and-digits-only form, so Markdown markup does not matter.
    """
    import lxml.html

    from .decode import decode_html

    if not isinstance(output, str):
        raise TypeError(f"output must be a str, got {type(output).__name__}")
    check_int("min_chars", min_chars, lo=1, hi=10**6)
    text, _ = decode_html(source_html, name="source_html")
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    root = lxml.html.document_fromstring(text)
    for el in list(root.iter("ix:header", "script", "style", "head")):
        el.drop_tree()
    for el in list(root.iter()):
        if isinstance(el.tag, str) and "display:none" in (el.get("style") or "").replace(" ", ""):
            el.drop_tree()
    source = _key(root.text_content())
    blocks = set()
    tags = ("p", "div", "td", "th", "li", "h1", "h2", "h3", "h4", "h5", "h6", "font")
    for el in root.iter(*tags):
        if any(isinstance(c.tag, str) and c.tag in tags for c in el.iterdescendants()):
            continue
        k = _key(el.text_content())
        if len(k) >= min_chars:
            blocks.add(k)
    unique = [k for k in blocks if source.count(k) == 1]
    if not unique:
        return 0.0
    out = _key(output)
    return float(sum(out.count(k) > 1 for k in unique) / len(unique))

