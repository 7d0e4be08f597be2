"""Tables: the HTML table model, split-cell merging, spacer removal, MultiMarkdown in and out.

An EDGAR table is laid out for print, not for meaning: a number sits in three cells
(``$`` | ``(1,056`` | ``)``), every value column has empty spacer columns on both sides,
and headers span the spacers with ``colspan``. :func:`table_to_grid` undoes this in the
steps of our spec (step 6): expand the grid by HTML's span occupancy (6a), merge split
currency and parenthesis cells within a row (6c), drop empty rows and merge spacer columns
into their neighbours, re-deriving the spans on the compacted grid (6d), and count the
header rows (6e). :func:`grid_to_mmd` writes MultiMarkdown (6f): ``||`` for a colspan,
``^^`` for a cell covered from above; :func:`mmd_to_grids` is an independent parser of
MultiMarkdown (and GitHub pipe) tables back into grids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._checks import check_bool, check_choice, check_text

#: Currency-only cells that join the next non-empty cell (Eq. merge rule of step 6c).
CURRENCY = frozenset({"$", "€", "£", "¥", "US$", "C$", "A$", "(", "$(", "($"})
#: Cells that join the previous numeric cell: a closing parenthesis or a percent sign.
CLOSERS = frozenset({")", "%", ")%", "%)", ")*"})
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_WS = re.compile(r"\s+")
_NUMBER = re.compile(
    r"^[\$€£¥]?\s*\(?\s*[\$€£¥]?\s*[-+]?(\d[\d,]*(\.\d+)?|\.\d+)\s*\)?\s*%?\s*\)?\*?$"
)
_NIL = frozenset({"—", "–", "-", "--", "—%", "- %", "*"})
_YEAR = re.compile(r"^(19|20)\d\d$")


def clean_text(text: str) -> str:
    """Collapse whitespace (``&nbsp;`` included) and drop zero-width characters.

    >>> clean_text("Net\\u00a0 sales\\u200b ")
    'Net sales'
    """
    return _WS.sub(" ", text.translate(_ZERO_WIDTH).replace("\xa0", " ")).strip()


def is_numeric(text: str) -> bool:
    """Whether a cell holds one number (``$(1,056)``, ``15.9%``, ``0.4``) or a nil dash.

    >>> [is_numeric(t) for t in ("$(1,056)", "15.9 %", "—", "Net sales", "2024")]
    [True, True, True, False, True]
    """
    t = text.strip()
    return bool(t) and (t in _NIL or _NUMBER.match(t) is not None)


@dataclass(frozen=True)
class Cell:
    """One table cell: its text and how many columns and rows it spans."""

    text: str
    colspan: int = 1
    rowspan: int = 1

    def __post_init__(self) -> None:
        check_text("text", self.text)
        for name in ("colspan", "rowspan"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")

    @property
    def numeric(self) -> bool:
        """Whether the cell holds a number (see :func:`is_numeric`)."""
        return is_numeric(self.text)


@dataclass(frozen=True)
class TableGrid:
    """A table in the HTML model: rows list the cells that start in them.

    Parameters
    ----------
    rows : tuple of tuple of Cell
        Row ``r`` lists, left to right, the cells whose top-left slot is in row ``r``;
        slots covered by a ``rowspan`` from above are not listed (as in HTML).
    header_rows : int
        How many leading rows are column headers (MultiMarkdown allows several).
    """

    rows: tuple[tuple[Cell, ...], ...]
    header_rows: int = 0

    def __post_init__(self) -> None:
        rows = tuple(tuple(r) for r in self.rows)
        for r in rows:
            for c in r:
                if not isinstance(c, Cell):
                    raise TypeError(f"rows must hold Cell objects, got {type(c).__name__}")
        object.__setattr__(self, "rows", rows)
        if isinstance(self.header_rows, bool) or not isinstance(self.header_rows, int):
            raise TypeError("header_rows must be an int")
        if not 0 <= self.header_rows <= len(rows):
            raise ValueError(f"header_rows must lie in [0, {len(rows)}], got {self.header_rows}")

    def layout(self) -> list[list[tuple[int, int] | None]]:
        """The dense grid: slot ``[r][c]`` holds the (row, index in row) of its cell.

        Returns
        -------
        list of list
            ``num_rows x num_cols``; ``None`` where a short row leaves a slot empty.
        """
        occ: dict[tuple[int, int], tuple[int, int]] = {}
        for r, row in enumerate(self.rows):
            c = 0
            for k, cell in enumerate(row):
                while (r, c) in occ:
                    c += 1
                for dr in range(min(cell.rowspan, len(self.rows) - r)):
                    for dc in range(cell.colspan):
                        occ.setdefault((r + dr, c + dc), (r, k))
                c += cell.colspan
        ncols = max((c + 1 for _, c in occ), default=0)
        return [[occ.get((r, c)) for c in range(ncols)] for r in range(len(self.rows))]

    @property
    def num_cols(self) -> int:
        """Width of the dense grid."""
        lay = self.layout()
        return len(lay[0]) if lay else 0

    def texts(self) -> list[list[str]]:
        """Dense texts: every slot holds the text of its cell (spans repeat it)."""
        return [
            [self.rows[o[0]][o[1]].text if o else "" for o in row] for row in self.layout()
        ]

    def to_html(self) -> str:
        """A plain HTML ``<table>`` of the grid (``<thead>`` for the header rows)."""
        out = ["<table>"]
        for r, row in enumerate(self.rows):
            if r == 0 and self.header_rows:
                out.append("<thead>")
            if r == self.header_rows:
                out.append("<tbody>")
            tag = "th" if r < self.header_rows else "td"
            tds = []
            for cell in row:
                attrs = (f' colspan="{cell.colspan}"' if cell.colspan > 1 else "") + (
                    f' rowspan="{cell.rowspan}"' if cell.rowspan > 1 else ""
                )
                text = cell.text.replace("&", "&amp;").replace("<", "&lt;")
                tds.append(f"<{tag}{attrs}>{text}</{tag}>")
            out.append("<tr>" + "".join(tds) + "</tr>")
            if r == self.header_rows - 1:
                out.append("</thead>")
        if self.rows and self.header_rows < len(self.rows):
            out.append("</tbody>")
        out.append("</table>")
        return "".join(out)


# --------------------------------------------------------------------------------------
# HTML -> grid
# --------------------------------------------------------------------------------------

_BLOCKISH = frozenset(
    {"div", "p", "br", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol"}
)


def element_text(el) -> str:
    """The displayed text of an lxml element; block children and ``<br>`` separate words."""
    parts: list[str] = []

    def walk(e) -> None:
        if not isinstance(e.tag, str):  # comments, processing instructions
            if e.tail:
                parts.append(e.tail)
            return
        block = e.tag in _BLOCKISH
        if block:
            parts.append(" ")
        if e.text:
            parts.append(e.text)
        for child in e:
            walk(child)
        if block:
            parts.append(" ")
        if e.tail:
            parts.append(e.tail)

    if el.text:
        parts.append(el.text)
    for child in el:
        walk(child)
    return clean_text("".join(parts))


def _span(td, name: str, limit: int, warnings: list[str], where: str, strict: bool) -> int:
    raw = td.get(name)
    if raw is None:
        return 1
    try:
        v = int(str(raw).strip().rstrip(";"))
    except ValueError:
        v = None
    if v is None or v < 1 or v > limit:
        msg = f"{where}: {name}={raw!r} is not in [1, {limit}]; treated as 1"
        if strict:
            raise ValueError(msg)
        warnings.append(msg)
        return 1
    return v


def _table_rows(table) -> list:
    """The ``<tr>`` of ``table`` itself, not of tables nested in its cells."""
    rows = []
    for child in table:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            rows.extend(c for c in child if isinstance(c.tag, str) and c.tag == "tr")
    return rows


def raw_cells(table, *, warnings: list[str] | None = None, strict: bool = False, index: int = 0):
    """Rows of (text, colspan, rowspan) of an lxml ``<table>``, spans checked and repaired."""
    warnings = [] if warnings is None else warnings
    out = []
    rows = _table_rows(table)
    for r, tr in enumerate(rows):
        row = []
        for k, td in enumerate(c for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")):
            where = f"table {index} row {r} cell {k}"
            cs = _span(td, "colspan", 1000, warnings, where, strict)
            rs = _span(td, "rowspan", 1000, warnings, where, strict)
            if r + rs > len(rows):
                msg = f"{where}: rowspan {rs} runs past the last row; truncated"
                if strict:
                    raise ValueError(msg)
                warnings.append(msg)
                rs = len(rows) - r
            row.append((element_text(td), cs, rs))
        out.append(row)
    return out


@dataclass
class _Piece:
    row: int
    c0: int
    c1: int
    rowspan: int
    text: str
    alive: bool = True
    span_rows: int = 1  # rows of its span that hold any text (empty rows are dropped later)


def _ends_numeric(text: str) -> bool:
    return bool(re.search(r"\d\s*$", text)) or text.endswith("%")


def _starts_numeric(text: str) -> bool:
    return bool(re.match(r"^\s*[\(\-]?\s*[\d.]", text)) or text.strip() in _NIL


def _merge_row(pieces: list[_Piece], currency: str, at: dict[int, _Piece]) -> None:
    """Step 6c on one row's pieces (in column order), in place.

    ``at`` maps each column of the row to the piece covering it (rowspans from above
    included); two cells merge only across slots without text.
    """

    def clear(a: _Piece, b: _Piece) -> bool:
        return all((q := at.get(c)) is None or not q.text for c in range(a.c1, b.c0))

    live = [p for p in pieces if p.span_rows == 1]
    for i, p in enumerate(live):  # ")" / "%" join the previous numeric cell
        if p.alive and p.text in CLOSERS:
            for q in reversed(live[:i]):
                if not q.alive or not q.text:
                    continue
                ok = _ends_numeric(q.text) or (
                    q.text.endswith(")") and p.text.startswith("%") and _NUMBER.match(q.text)
                )
                if ok and clear(q, p):
                    q.text, q.c1, p.alive = q.text + p.text, p.c1, False
                    for c in range(q.c0, q.c1):
                        at[c] = q
                break
    live = [p for p in live if p.alive]
    for i, p in enumerate(live):  # "$" joins the next non-empty cell
        if not (p.alive and p.text in CURRENCY):
            continue
        if currency == "drop" and p.text not in ("(", "$(", "($"):
            p.text = ""
            continue
        if currency == "column" and p.text not in ("(", "$(", "($"):
            continue
        for q in live[i + 1 :]:
            if not q.alive or not q.text:
                continue
            if _starts_numeric(q.text) and clear(p, q):
                if p.text in ("(", "$(", "($"):
                    q.text = p.text + q.text.lstrip("(")
                else:
                    q.text = p.text + q.text
                q.c0, p.alive = p.c0, False
                for c in range(q.c0, q.c1):
                    at[c] = q
            break


def table_to_grid(
    table,
    *,
    currency: str = "attach",
    strict: bool = False,
    warnings: list[str] | None = None,
    index: int = 0,
) -> TableGrid:
    """Normalise an HTML table into a compact :class:`TableGrid` (spec step 6a-6e).

    Parameters
    ----------
    table : lxml element or str
        A ``<table>`` element (or its HTML text).
    currency : {"attach", "drop", "column"}
        What a currency-only cell does: join the next number (``$`` + ``(1,056`` ->
        ``$(1,056``), vanish, or stay a column of its own.
    strict : bool
        Raise ``ValueError`` on malformed spans instead of repairing them.
    warnings : list of str, optional
        Repairs are appended here.
    index : int
        The table's number in its document, for the warnings.

    Returns
    -------
    TableGrid
        Spacer columns and empty rows removed, spans re-derived, header rows counted.

    Examples
    --------
    >>> g = table_to_grid('<table><tr><td>Net loss</td><td>$</td><td>(1,056</td>'
    ...                   '<td>)</td><td></td></tr></table>')
    >>> [c.text for c in g.rows[0]]
    ['Net loss', '$(1,056)']
    """
    check_choice("currency", currency, ("attach", "drop", "column"))
    check_bool("strict", strict)
    if isinstance(table, str):
        import lxml.html

        frag = lxml.html.fragment_fromstring(table, create_parent="div")
        found = frag.find(".//table")
        if found is None:
            raise ValueError("table: no <table> element in the given HTML")
        table = found
    if getattr(table, "tag", None) != "table":
        raise TypeError(f"table must be an lxml <table> element or HTML text, got {table!r}")
    warnings = [] if warnings is None else warnings
    raw = raw_cells(table, warnings=warnings, strict=strict, index=index)

    # 6a: occupancy grid of the HTML table model
    pieces: list[_Piece] = []
    occ: dict[tuple[int, int], int] = {}
    for r, row in enumerate(raw):
        c = 0
        for text, cs, rs in row:
            while (r, c) in occ:
                c += 1
            width = cs
            for dc in range(cs):  # a colspan running into a rowspan from above is cut
                if any((r + dr, c + dc) in occ for dr in range(rs)):
                    width = dc
                    warnings.append(f"table {index} row {r}: overlapping spans; colspan cut")
                    break
            width = max(width, 1)
            pieces.append(_Piece(r, c, c + width, rs, text))
            for dr in range(rs):
                for dc in range(width):
                    occ[(r + dr, c + dc)] = len(pieces) - 1
            c += width
    widths = {len(row) for row in raw if row}
    if len(widths) > 1 and not any(rs > 1 or cs > 1 for row in raw for _, cs, rs in row):
        warnings.append(f"table {index}: rows of unequal length padded with empty cells")

    # 6c: split currency / parenthesis cells (a cell spanning rows that will all but one
    # be dropped as empty counts as a one-row cell, so a second pass changes nothing)
    filled = {p.row for p in pieces if p.text}
    for p in pieces:
        p.span_rows = max(1, sum(1 for r in range(p.row, p.row + p.rowspan) if r in filled))
    by_row: dict[int, list[_Piece]] = {}
    for p in pieces:
        by_row.setdefault(p.row, []).append(p)
    row_occ: dict[int, dict[int, _Piece]] = {}
    for (r, c), k in occ.items():
        row_occ.setdefault(r, {})[c] = pieces[k]
    for r, row_pieces in by_row.items():
        _merge_row(sorted(row_pieces, key=lambda p: p.c0), currency, row_occ.get(r, {}))
    alive = [p for p in pieces if p.alive and p.text]
    if not alive:
        return TableGrid(rows=(), header_rows=0)

    # 6d: drop empty rows; drop every column whose non-empty cells all still cover another
    # kept column (spacers, the split-off halves of spans); spans shrink accordingly
    keep_rows = sorted({p.row for p in alive})
    ncols = max(p.c1 for p in alive)
    users: list[set[int]] = [set() for _ in range(ncols)]
    for k, p in enumerate(alive):
        for c in range(p.c0, p.c1):
            users[c].add(k)
    remaining = [p.c1 - p.c0 for p in alive]
    kept: list[int] = []
    for c in range(ncols):
        if all(remaining[k] > 1 for k in users[c]):
            for k in users[c]:
                remaining[k] -= 1
        else:
            kept.append(c)
    index_of = {c: g for g, c in enumerate(kept)}
    num_groups = len(kept)
    new_row = {r: i for i, r in enumerate(keep_rows)}

    cell_at: dict[tuple[int, int], tuple[int, Cell, int]] = {}  # (row, group) -> origin
    for k, p in enumerate(alive):
        inside = [index_of[c] for c in range(p.c0, p.c1) if c in index_of]
        g0, g1 = inside[0], inside[-1]
        rspan = sum(1 for r in range(p.row, p.row + p.rowspan) if r in new_row)
        cell = Cell(p.text, colspan=g1 - g0 + 1, rowspan=max(rspan, 1))
        for r in range(p.row, p.row + p.rowspan):
            if r in new_row:
                for gg in range(g0, g1 + 1):
                    cell_at[(new_row[r], gg)] = (k, cell, new_row[p.row])
    out_rows: list[tuple[Cell, ...]] = []
    for i in range(len(keep_rows)):
        row: list[Cell] = []
        gg = 0
        while gg < num_groups:
            hit = cell_at.get((i, gg))
            if hit is None:
                row.append(Cell(""))
                gg += 1
                continue
            _, cell, origin_row = hit
            if origin_row == i:
                row.append(cell)
            gg += cell.colspan if origin_row == i else 1
        out_rows.append(tuple(row))
    grid = TableGrid(rows=tuple(out_rows), header_rows=0)
    return TableGrid(rows=grid.rows, header_rows=count_header_rows(grid))


def count_header_rows(grid: TableGrid) -> int:
    """Leading rows before the first row with a numeric data cell (spec step 6e).

    A header row must hold text outside the first column (a lone row label starts the
    body); bare years (``2024``) do not count as data.
    """
    texts = grid.texts()
    lay = grid.layout()
    n = 0
    for r, row in enumerate(texts):
        origins = {lay[r][c] for c in range(len(row)) if lay[r][c] and row[c] and lay[r][c][1]}
        data = [
            t
            for c, t in enumerate(row)
            if c > 0 and t and is_numeric(t) and not _YEAR.match(t.strip()) and t not in _NIL
        ]
        title = len(grid.rows[r]) == 1 and len(row) > 1 and grid.rows[r][0].colspan == len(row)
        if data or not (origins or (title and r == n)):
            break
        n += 1
    if n >= len(texts):  # no numeric rows: a text table gets one header row
        n = 1 if len(texts) > 1 else 0
    # a rowspan may not cross from the header into the body (MultiMarkdown cannot say it):
    # take the spanned rows into the header, or have no header at all
    changed = True
    while changed and n:
        changed = False
        for r in range(n):
            if any(r + c.rowspan > n for c in grid.rows[r]):
                n, changed = n + 1, True
                break
        if n >= len(texts):
            return 0
    return n


# --------------------------------------------------------------------------------------
# grid <-> MultiMarkdown
# --------------------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|") if text else text


def column_alignment(grid: TableGrid) -> list[str]:
    """``"right"`` for columns whose body cells are mostly numeric, else ``"left"``."""
    lay = grid.layout()
    ncols = len(lay[0]) if lay else 0
    out = []
    for c in range(ncols):
        vals = []
        for r in range(grid.header_rows, len(lay)):
            o = lay[r][c]
            if o and o[0] == r:
                t = grid.rows[o[0]][o[1]].text
                if t and grid.rows[o[0]][o[1]].colspan == 1:
                    vals.append(is_numeric(t))
        out.append("right" if vals and sum(vals) * 2 >= len(vals) and c > 0 else "left")
    return out


def grid_to_mmd(grid: TableGrid, *, rowspan: str = "mmd6") -> str:
    """Write a grid as a MultiMarkdown table (spec step 6f).

    Parameters
    ----------
    grid : TableGrid
    rowspan : {"mmd6", "empty"}
        Write a slot covered from above as ``^^`` (MultiMarkdown 6) or leave it empty.

    Returns
    -------
    str
        Header rows, the separator line (``---:`` for numeric columns), the body rows;
        a cell spanning ``k`` columns is followed by ``k - 1`` extra pipes.

    Examples
    --------
    >>> g = TableGrid(rows=((Cell(""), Cell("Year Ended", colspan=2)),
    ...                     (Cell(""), Cell("2025"), Cell("2024")),
    ...                     (Cell("Net loss"), Cell("$(1,056)"), Cell("$(987)"))),
    ...               header_rows=2)
    >>> print(grid_to_mmd(g))
    |  | Year Ended ||
    |  | 2025 | 2024 |
    |---|---:|---:|
    | Net loss | $(1,056) | $(987) |
    """
    if not isinstance(grid, TableGrid):
        raise TypeError(f"grid must be a TableGrid, got {type(grid).__name__}")
    check_choice("rowspan", rowspan, ("mmd6", "empty"))
    lay = grid.layout()
    if not lay or not lay[0]:
        return ""
    ncols = len(lay[0])
    lines = []
    if grid.header_rows == 0:
        lines.append("|" + "  |" * ncols)
    for r, row in enumerate(lay):
        parts = []
        c = 0
        while c < ncols:
            o = row[c]
            if o is None:
                parts.append("  |")
                c += 1
            elif o[0] != r:  # covered from above
                span = grid.rows[o[0]][o[1]].colspan
                parts.append((" ^^ " if rowspan == "mmd6" else "  ") + "|" * span)
                c += span
            else:
                cell = grid.rows[o[0]][o[1]]
                text = _escape(cell.text)
                parts.append(f" {text} " + "|" * cell.colspan)
                c += cell.colspan
        lines.append("|" + "".join(parts))
        if r == grid.header_rows - 1:
            lines.append(_separator(column_alignment(grid)))
    if grid.header_rows == 0:
        lines.insert(1, _separator(column_alignment(grid)))
    return "\n".join(lines)


def _separator(align: list[str]) -> str:
    return "|" + "".join("---:|" if a == "right" else "---|" for a in align)


_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|+\s*:?-{3,}:?\s*)*\|?\s*$")


def _split_row(line: str) -> list[str]:
    """Split a pipe row on unescaped pipes, keeping empty segments (colspan markers)."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    segs, cur, i = [], [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            cur.append(s[i + 1] if s[i + 1] in "|\\" else ch + s[i + 1])
            i += 2
            continue
        if ch == "|":
            segs.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    tail = "".join(cur)
    if tail.strip():
        segs.append(tail)
    return segs


def mmd_to_grids(markdown: str, *, colspan: bool = True, rowspan: bool = True) -> list[TableGrid]:
    """Parse every pipe table of a Markdown text back into grids.

    An independent reader of what :func:`grid_to_mmd` writes (and of GitHub tables).

    Parameters
    ----------
    markdown : str
    colspan : bool
        Read an empty segment (``||``) as a colspan of the cell before, as MultiMarkdown
        does; with ``False`` it is an empty cell (GitHub semantics, for other converters).
    rowspan : bool
        Read a cell holding only ``^^`` as covered by the cell above.

    Returns
    -------
    list of TableGrid
        In document order; all-empty header rows (a headerless table) are dropped.

    Examples
    --------
    >>> g = mmd_to_grids("| | A ||\\n|---|---|---|\\n| x | 1 | 2 |")[0]
    >>> g.header_rows, [c.colspan for c in g.rows[0]]
    (1, [1, 2])
    """
    check_text("markdown", markdown)
    check_bool("colspan", colspan)
    check_bool("rowspan", rowspan)
    lines = markdown.split("\n")
    grids: list[TableGrid] = []
    i = 0
    while i < len(lines):
        if "|" in lines[i] and _SEP.match(lines[i]):
            start = i
            while start > 0 and "|" in lines[start - 1] and lines[start - 1].strip():
                if _SEP.match(lines[start - 1]):
                    break
                start -= 1
            if start == i:  # a separator with no header above: not a table
                i += 1
                continue
            end = i + 1
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            rows = [lines[k] for k in range(start, end) if k != i]
            grids.append(_rows_to_grid(rows, i - start, colspan, rowspan))
            i = end
        else:
            i += 1
    return grids


def _rows_to_grid(lines: list[str], header_rows: int, colspan: bool, rowspan: bool) -> TableGrid:
    parsed: list[list[list]] = []  # per row: [text, colspan, rowspan, covered]
    for line in lines:
        row: list[list] = []
        for seg in _split_row(line):
            if seg == "" and colspan and row:
                row[-1][1] += 1
                continue
            text = clean_text(seg)
            row.append([text, 1, 1, rowspan and text == "^^"])
        parsed.append(row)
    # resolve ^^ against the dense layout of the rows above
    origin: dict[tuple[int, int], list] = {}
    for r, row in enumerate(parsed):
        c = 0
        for cell in row:
            if cell[3]:
                above = origin.get((r - 1, c))
                if above is not None:
                    above[2] += 1
                    for dc in range(cell[1]):
                        origin[(r, c + dc)] = above
                    c += cell[1]
                    continue
                cell[3] = False
                cell[0] = ""
            for dc in range(cell[1]):
                origin[(r, c + dc)] = cell
            c += cell[1]
    out = []
    for row in parsed:
        out.append(tuple(Cell(t, colspan=cs, rowspan=rs) for t, cs, rs, cov in row if not cov))
    # a headerless table was written with one all-empty header row
    while header_rows and all(not c.text for c in out[0]) and len(out) > 1:
        out.pop(0)
        header_rows -= 1
    return TableGrid(rows=tuple(out), header_rows=header_rows)
