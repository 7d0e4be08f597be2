from conftest import TOY, make_record
from neurips26.report import write_report


def test_report_writes_pages_escapes_text_and_marks_tiers_not_run(store, tmp_path):
    store.save(
        make_record(
            {"mean": 0.1, "n": 5, "n_ci": 10.0},
            figures={"trace": b"png"},
            tables={"rows": [{"x": "<b>bold</b>"}]},
            notes=("a <note>",),
        )
    )
    store.save(make_record({}, tier="smoke", status="failed", error="Traceback <boom>"))
    index = write_report(store, tmp_path / "rep", papers=[TOY])
    html = index.read_text()
    assert "toy.html" in html and "&lt;toy&gt;" in html and "<toy>" not in html
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "Traceback &lt;boom&gt;" in page
    assert "No run of this tier is stored" in page  # the paper tier
    assert 'class="v inconclusive"' in page  # n = 5 ± 10 straddles 10
    assert (tmp_path / "rep" / "figures" / "toy__small__trace.png").read_bytes() == b"png"
    md = (tmp_path / "rep" / "toy.md").read_text()
    assert "None \\| really" in md and "Not run" in md
    assert (tmp_path / "rep" / "figures" / "verdicts.png").stat().st_size > 1000


def test_readme_table_is_rewritten_from_the_store(store, tmp_path):
    from neurips26.report import update_readme

    store.save(make_record({"mean": 0.1, "n": 50}))
    write_report(store, tmp_path / "rep", papers=[TOY])
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- paper-table:start -->\nold\n<!-- paper-table:end -->\nafter\n")
    update_readme(readme, tmp_path / "rep")
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("after\n")
    assert "| `toy` |" in text and "2 reproduced, 1 not run" in text
