"""Table model: span occupancy, split-cell merging, spacer merging, MultiMarkdown in and out."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.sfd_edgar import Cell, TableGrid, grid_to_mmd, mmd_to_grids, table_to_grid

SPEC_EXAMPLE = (
    "<table><tr><td></td><td colspan='8'>Year Ended December 31,</td></tr>"
    "<tr><td></td><td></td><td colspan='3'>2025</td><td></td><td colspan='3'>2024</td></tr>"
    "<tr><td>Net loss</td><td></td><td>$</td><td>(1,056</td><td>)</td><td></td><td>$</td>"
    "<td>(987</td><td>)</td></tr></table>"
)


def test_spec_example():
    g = table_to_grid(SPEC_EXAMPLE)
    assert grid_to_mmd(g) == (
        "|  | Year Ended December 31, ||\n"
        "|  | 2025 | 2024 |\n"
        "|---|---:|---:|\n"
        "| Net loss | $(1,056) | $(987) |"
    )
    assert g.header_rows == 2 and g.num_cols == 3


@pytest.mark.parametrize(
    ("currency", "cells"),
    [("attach", ["Net loss", "$(1,056)"]), ("drop", ["Net loss", "(1,056)"]),
     ("column", ["Net loss", "$", "(1,056)"])],
)
def test_currency_modes(currency, cells):
    g = table_to_grid("<table><tr><td>Net loss</td><td>$</td><td>(1,056</td><td>)</td></tr>"
                      "</table>", currency=currency)
    assert [c.text for c in g.rows[0]] == cells


def test_percent_joins_previous_number():
    g = table_to_grid("<table><tr><td>Rate</td><td>15.9</td><td>%</td><td></td></tr></table>")
    assert [c.text for c in g.rows[0]] == ["Rate", "15.9%"]


def test_rowspan_written_as_carets_and_read_back():
    g = table_to_grid("<table><tr><td rowspan='2'>Equity</td><td>Opening</td><td>1</td></tr>"
                      "<tr><td>Closing</td><td>2</td></tr></table>")
    md = grid_to_mmd(g)
    assert "| ^^ | Closing | 2 |" in md
    assert mmd_to_grids(md)[0] == g
    assert "^^" not in grid_to_mmd(g, rowspan="empty")


def test_pipe_escaped():
    g = TableGrid(rows=((Cell("a|b"), Cell("1")),), header_rows=0)
    md = grid_to_mmd(g)
    assert "a\\|b" in md
    assert mmd_to_grids(md)[0].rows[0][0].text == "a|b"


def test_colspan_survives_compaction():
    html = ("<table><tr><td></td><td></td><td colspan='5'>Three Months</td></tr>"
            "<tr><td></td><td></td><td>2024</td><td></td><td></td><td></td><td>2023</td></tr>"
            "<tr><td>Sales</td><td></td><td>10</td><td></td><td></td><td></td><td>9</td></tr>"
            "</table>")
    g = table_to_grid(html)
    assert g.rows[0][1] == Cell("Three Months", colspan=2)
    assert g.num_cols == 3


def test_malformed_spans_repaired_and_reported():
    html = ("<table><tr><td colspan='0'>a</td><td rowspan='9'>b</td><td colspan='x'>c</td></tr>"
            "<tr><td>d</td><td>e</td><td>f</td><td>extra</td></tr></table>")
    warnings = []
    g = table_to_grid(html, warnings=warnings)
    assert g.rows and any("colspan" in w for w in warnings)
    assert any("rowspan" in w for w in warnings)
    with pytest.raises(ValueError, match="colspan"):
        table_to_grid(html, strict=True)


def test_bad_arguments_named():
    with pytest.raises(ValueError, match="currency"):
        table_to_grid("<table></table>", currency="euro")
    with pytest.raises(TypeError, match="table"):
        table_to_grid(42)
    with pytest.raises(ValueError, match="table"):
        table_to_grid("<p>no table</p>")
    with pytest.raises(TypeError, match="grid"):
        grid_to_mmd("x")
    with pytest.raises(ValueError, match="rowspan"):
        grid_to_mmd(TableGrid(rows=((Cell("a"),),)), rowspan="mmd7")
    with pytest.raises(ValueError, match="colspan"):
        Cell("a", colspan=0)
    with pytest.raises(ValueError, match="header_rows"):
        TableGrid(rows=((Cell("a"),),), header_rows=3)
    with pytest.raises(TypeError, match="markdown"):
        mmd_to_grids(None)


def test_empty_table_is_empty_grid():
    assert table_to_grid("<table><tr><td></td><td> </td></tr></table>").rows == ()


# -- property: random grids rendered EDGAR-style (spacers, split $ and ')') come back ------

_label = st.text(alphabet="abcdefgh ", min_size=1, max_size=8).map(lambda s: " ".join(s.split()))
_label = _label.filter(bool)
_num = st.integers(min_value=1, max_value=99_999).map(lambda n: f"{n:,}")


@st.composite
def _tables(draw):
    ncols = draw(st.integers(1, 4))
    nrows = draw(st.integers(1, 5))
    header = [draw(_label) + f" {k}" for k in range(ncols)]
    body = []
    for r in range(nrows):
        vals = [(draw(_num), draw(st.booleans()), draw(st.booleans())) for _ in range(ncols)]
        body.append((f"row {r} " + draw(_label), vals))
    return header, body


def _render(header, body) -> tuple[str, TableGrid]:
    """EDGAR layout: every value in 3 cells ($ | number | ')'), a spacer column between."""
    tr = ["<tr><td></td>" + "".join(f"<td></td><td colspan='3'>{h}</td>" for h in header)
          + "</tr>"]
    rows = [(Cell(""), *(Cell(h) for h in header))]
    for label, vals in body:
        cells = [f"<td>{label}</td>"]
        out = [Cell(label)]
        for n, dollar, neg in vals:
            cells.append("<td></td>")
            cells.append("<td>$</td>" if dollar else "<td></td>")
            cells.append(f"<td>{'(' if neg else ''}{n}</td>")
            cells.append("<td>)</td>" if neg else "<td></td>")
            out.append(Cell(("$" if dollar else "") + (f"({n})" if neg else n)))
        tr.append("<tr>" + "".join(cells) + "</tr>")
        rows.append(tuple(out))
    return "<table>" + "".join(tr) + "</table>", TableGrid(rows=tuple(rows), header_rows=1)


@settings(max_examples=40, deadline=None)
@given(_tables())
def test_edgar_layout_round_trip(table):
    html, expected = _render(*table)
    g = table_to_grid(html)
    assert g == expected
    assert mmd_to_grids(grid_to_mmd(g))[0] == g  # MultiMarkdown round trip
    assert table_to_grid(g.to_html()) == g  # idempotent on its own output


_span = st.sampled_from(["1", "2", "3", "0", "-1", "x", "9999", None])
_text = st.sampled_from(["", "", "$", ")", "%", "(12", "3,400", "Sales", "a|b", "—", "2024"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(_text, _span, _span), min_size=1, max_size=6),
                min_size=1, max_size=6))
def test_random_malformed_tables_never_crash_and_round_trip(rows):
    def attr(name, v):
        return "" if v is None else f" {name}='{v}'"

    html = "<table>" + "".join(
        "<tr>" + "".join(f"<td{attr('colspan', c)}{attr('rowspan', r)}>{t}</td>"
                         for t, c, r in row) + "</tr>" for row in rows) + "</table>"
    warnings = []
    g = table_to_grid(html, warnings=warnings)
    if g.rows:
        assert mmd_to_grids(grid_to_mmd(g))[0] == g
        assert table_to_grid(g.to_html()) == g
        assert all(not (0 < r < g.header_rows and any(r + c.rowspan > g.header_rows
                                                        for c in g.rows[r]))
                   for r in range(len(g.rows)))
