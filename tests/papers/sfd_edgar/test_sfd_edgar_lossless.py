"""The converter keeps every byte of text it is given, or says what it dropped (issue 32)."""

import pytest

from neurips26.papers.sfd_edgar import html_to_mmd
from neurips26.papers.sfd_edgar.cli import main


def test_a_pre_block_over_ten_megabytes_is_kept():
    body = "x" * (11 << 20)
    r = html_to_mmd(f"<html><body><p>BEFORE</p><pre>{body}</pre><p>AFTER</p></body></html>")
    assert body in r.markdown and "BEFORE" in r.markdown and "AFTER" in r.markdown


def test_text_after_hundreds_of_unclosed_inline_tags_is_kept():
    html = "<html><body>" + "<font>a " * 300 + "<b>b " * 300 + "<p>THE END</p></body></html>"
    r = html_to_mmd(html)
    assert "THE END" in r.markdown and r.markdown.count("a") >= 300


def test_deeply_nested_tables_keep_their_text():
    html = ("<html><body>" + "<table><tr><td>" * 85 + "BEFORE" + "</td></tr></table>" * 85
            + "<p>AFTER</p></body></html>")
    r = html_to_mmd(html)
    assert "BEFORE" in r.markdown and "AFTER" in r.markdown


def test_a_nul_byte_is_removed_and_reported_not_the_text_after_it():
    r = html_to_mmd(b"<html><body><p>head</p>\x00" + b"<p>word</p>" * 20000 + b"</body></html>")
    assert r.markdown.count("word") == 20000
    assert any("NUL" in w for w in r.warnings)


def test_a_meta_charset_that_lies_is_ignored_and_reported():
    data = b'<html><head><meta charset="utf-16"></head><body><p>Plain ASCII text here.</p>'
    data += b"" if len(data) % 2 == 0 else b" "  # even: utf-16 would decode it to CJK garbage
    r = html_to_mmd(data)
    assert "Plain ASCII text here." in r.markdown
    assert any("declared utf-16 ignored" in w for w in r.warnings)


def test_convert_refuses_to_overwrite_its_input(tmp_path):
    src = tmp_path / "filing.htm"
    src.write_text("<html><body><p>keep me</p></body></html>")
    with pytest.raises(SystemExit, match="refusing to overwrite an input"):
        main(["convert", str(src), "-o", str(src), "-q"])
    assert src.read_text() == "<html><body><p>keep me</p></body></html>"
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.md.htm").write_text("<p>x</p>")
    (folder / "conversion_report.jsonl").write_text("{}")  # not an input: not refused
    assert main(["convert", str(folder), "-o", str(folder / "out"), "-q"]) == 0
