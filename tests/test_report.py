import dataclasses
import math

import numpy as np
import pytest

from conftest import TOY, make_record
from neurips26.report import write_report
from neurips26.report.pages import fmt
from neurips26.summary import run_line, shown_run

GOOD = {"mean": 0.1, "n": 50, "n_ci": 1.0, "err": 0.0}


def test_report_writes_pages_escapes_text_and_marks_tiers_not_run(store, tmp_path):
    store.save(
        make_record(
            {"mean": 0.1, "n": 5, "n_ci": 10.0, "err": 0.0},
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
    assert "meaningful only at paper" in page  # paper_only at the small tier
    assert (tmp_path / "rep" / "figures" / "toy__small__trace.png").read_bytes() == b"png"
    md = (tmp_path / "rep" / "toy.md").read_text()
    assert "None \\| really" in md and "Not run" in md
    assert (tmp_path / "rep" / "figures" / "verdicts.png").stat().st_size > 1000
    # Sections in the order small, paper, smoke.
    assert page.index("small tier</h2>") < page.index("paper tier</h2>") < page.index("smoke tier")


def test_claim_tables_show_kind_metric_and_both_targets(store, tmp_path):
    store.save(make_record(GOOD))
    write_report(store, tmp_path / "rep", papers=[TOY])
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "mean &lt;= 0.5" in page and "err &lt;= 1e-09" in page  # metric and our target
    assert "paper: exact" in page  # the paper's own figure beside it
    assert '<span class="sub">check</span>' in page and '<span class="sub">paper</span>' in page
    index = (tmp_path / "rep" / "index.md").read_text()
    assert "2 reproduced, 1 not run" in index and "| 1 reproduced |" in index  # checks apart


def test_readme_table_is_rewritten_from_the_store(store, tmp_path):
    from neurips26.report import update_readme

    store.save(make_record(GOOD))
    write_report(store, tmp_path / "rep", papers=[TOY])
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- paper-table:start -->\nold\n<!-- paper-table:end -->\nafter\n")
    update_readme(readme, tmp_path / "rep")
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("after\n")
    # paper claims 2 reproduced, 1 not run; the check apart
    assert "| `toy` |" in text and "| small | 2 / 0 / 0 / 0 / 1 | 1 / 0 / 0 / 0 / 0 |" in text


def test_a_later_failed_run_does_not_hide_a_good_one(store, tmp_path):
    good = store.save(make_record(GOOD))
    failed = store.save(make_record({}, status="failed", error="boom"))
    shown = shown_run(store, "toy")
    assert shown.stored.run_id == good and shown.later_failure.run_id == failed
    assert "later small-tier run" in shown.note
    write_report(store, tmp_path / "rep", papers=[TOY])
    index = (tmp_path / "rep" / "index.md").read_text()
    assert "2 reproduced, 1 not run" in index and "later small-tier run" in index
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "later failed run" in page and "boom" in page
    assert "a later run failed" in (tmp_path / "rep" / "papers_table.md").read_text()


def test_policy_prefers_small_then_any_successful_tier(store):
    assert shown_run(store, "toy").stored is None
    store.save(make_record({}, tier="small", status="failed", error="x"))
    assert shown_run(store, "toy").stored.record.status == "failed"  # nothing better
    smoke = store.save(make_record(GOOD, tier="smoke"))
    assert shown_run(store, "toy").stored.run_id == smoke  # labelled with its tier
    small = store.save(make_record(GOOD, tier="small"))
    store.save(make_record(GOOD, tier="smoke"))
    assert shown_run(store, "toy").stored.run_id == small  # small wins over a later smoke


def test_run_line_says_how_many_claims_the_tier_evaluates():
    from neurips26.registry import Claim, Paper, evaluate_claim
    from neurips26.runner import RunRecord

    only_small = Paper(
        slug="toy2",
        title="t",
        seed="s",
        paragraph=1,
        field="f",
        grade="A",
        summary="s",
        claims=tuple(Claim(f"c{i}", "s", "p", "m", "<=", 1.0, tiers=("small",)) for i in range(8)),
        deviations=("d",),
        tiers=(("smoke", "a"), ("small", "b"), ("paper", "c")),
    )
    claims = tuple(evaluate_claim(c, {"m": 0.0}, "smoke") for c in only_small.claims)
    rec = RunRecord("toy2", "smoke", 0, {}, "ok", {"m": 0.0}, (), claims)
    assert run_line(rec, only_small) == "smoke: 0 of 8 claims evaluated at this tier"
    rec = make_record(GOOD)
    assert run_line(rec, TOY) == (
        "small: 3 of 4 claims evaluated at this tier; paper claims 2 of 2 reproduced; "
        "checks 1 of 1 reproduced"
    )


def test_numbers_print_as_people_write_them():
    assert fmt(1e-9) == "1e-09" and fmt(1.5e-9) == "1.5e-09"
    assert fmt(0.333333) == "0.3333" and fmt(12.0) == "12" and fmt(7) == "7"
    assert fmt(2.5e7) == "2.5e+07" and fmt(math.inf) == "inf" and fmt(True) == "yes"
    assert fmt("[555 797  85]") == "555, 797, 85" and fmt([1, 2.5]) == "1, 2.5"
    assert fmt("[note]") == "[note]" and fmt(math.nan) == "n/a"


def test_nan_cells_are_explained_and_figures_captioned(store, tmp_path):
    store.save(
        make_record(
            {"mean": math.nan, "n": 50, "n_ci": 1.0, "err": 0.0},
            figures={"trace": b"png", "other_plot": b"png"},
            captions={"trace": "The trace of <x>, as in Fig. 2 of the paper."},
            tables={"rows": [{"x": math.nan}]},
        )
    )
    write_report(store, tmp_path / "rep", papers=[TOY])
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "<figcaption>The trace of &lt;x&gt;, as in Fig. 2 of the paper.</figcaption>" in page
    assert "<figcaption>Other plot (small tier, seed 0).</figcaption>" in page
    assert "not measured" in page and "mean is NaN" in page  # the claim row says why
    assert "n/a: no value (NaN)" in page  # the table's footnote
    assert "scroll" not in page  # every table fits the page (tests/test_report_browser.py)


def test_index_shows_each_papers_wall_and_cpu_seconds(store, tmp_path):
    store.save(make_record(GOOD, wall_seconds=12.5, cpu_seconds=7.25))
    write_report(store, tmp_path / "rep", papers=[TOY])
    index = (tmp_path / "rep" / "index.md").read_text()
    assert "| wall s | CPU s |" in index and "| 12.5 | 7.25 |" in index


def test_index_prints_the_cpu_total_of_the_runs_shown(store, tmp_path):
    store.save(make_record(GOOD, cpu_seconds=90.0))
    write_report(store, tmp_path / "rep", papers=[TOY])
    text = (tmp_path / "rep" / "index.md").read_text()
    assert "CPU time of the runs shown: 1.5 minutes over 1 papers" in text


def test_claims_tables_explain_the_interval_and_unrun_tiers_list_their_claims(store, tmp_path):
    from neurips26.report.pages import CLAIMS_LEGEND

    store.save(make_record(GOOD))
    write_report(store, tmp_path / "rep", papers=[TOY])
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert page.count(CLAIMS_LEGEND[:22]) == 3  # above each tier's claims table
    # the paper tier has no run: its claims are listed, with the command that runs them
    paper_tier = page[page.index("paper tier</h2>"):page.index("smoke tier</h2>")]
    assert "neurips26 run toy --tier paper" in paper_tier
    for claim in TOY.claims:
        assert claim.id.replace("_", "_<wbr>") in paper_tier
    assert "no run stored" in paper_tier
    md = (tmp_path / "rep" / "toy.md").read_text()
    assert "`neurips26 run toy --tier paper`" in md


def test_each_run_gets_a_claims_chart_with_intervals(store, tmp_path):
    store.save(make_record(GOOD))
    write_report(store, tmp_path / "rep", papers=[TOY])
    chart = tmp_path / "rep" / "figures" / "toy__small.claims.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "figures/toy__small.claims.png" in (tmp_path / "rep" / "toy.html").read_text()


def test_claim_margins_are_positive_exactly_on_the_passing_side():
    from neurips26.report.plots import _margins

    assert _margins(">=", 1.0, 0.0, 1.5, 0.75, 2.0) == (0.5, -0.25, 1.0)
    assert _margins("<=", 1.0, 0.0, 0.5, 0.25, 1.5) == (0.5, -0.5, 0.75)
    m, lo, hi = _margins("abs<=", 0.1, 0.0, 0.05, -0.02, 0.3)
    assert math.isclose(m, 0.05) and math.isclose(lo, -0.2) and math.isclose(hi, 0.1)
    assert _margins("==", 2.0, 0.5, 2.0, None, None) == (0.5, None, None)


def test_paper_pages_show_the_title_not_the_seed_file(store, tmp_path):
    write_report(store, tmp_path / "rep", papers=[TOY])
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "<h1>A &lt;toy&gt; &amp; its claims</h1>" in page
    assert TOY.seed not in page and "paragraph" not in page
    linked = dataclasses.replace(TOY, link="https://example.org/toy?a=1&b=2")
    write_report(store, tmp_path / "rep2", papers=[linked])
    page = (tmp_path / "rep2" / "toy.html").read_text()
    assert '<a href="https://example.org/toy?a=1&amp;b=2">' in page


def test_figures_are_tidied_legends_leave_the_bars_and_crowded_ticks_turn():
    from neurips26.common.plotting import new_figure, tidy

    fig, (ax,) = new_figure(width=3.0)
    names = [f"a_long_label_{i}" for i in range(8)]
    ax.bar(names, [5.0] * 8, label="bars")
    ax.legend(loc="upper left")  # right over the bars
    tidy(fig)
    assert ax.get_xticklabels()[0].get_rotation() == 30
    assert ax.get_legend().get_bbox_to_anchor() is not ax.bbox  # moved outside the axes
    fig2, (ax2,) = new_figure(width=6.0)
    ax2.bar(["a", "b"], [1.0, 1.0], label="bars")
    ax2.set_ylim(0, 10)
    ax2.legend(loc="upper right")  # over empty space: left where it is
    tidy(fig2)
    assert ax2.get_legend().get_bbox_to_anchor() is ax2.bbox
    assert ax2.get_xticklabels()[0].get_rotation() == 0


def test_claim_rows_show_the_interval_in_words_and_the_control_beside_the_claim(store,
                                                                                 tmp_path):
    """A paper claim's row gives its interval as method, level and n, and its control's
    metric, value, interval and verdict; a paper with no run says why on the index."""
    from conftest import TOY
    from neurips26.records import RunRecord
    from neurips26.registry import Claim, Paper, evaluate_claim

    gain = Paper(slug="gainy", title="Gains", seed="s.txt", paragraph=1, field="testing",
                 grade="A", summary="A gain and its control.",
                 claims=(Claim("gain", "A gain", "+1", "gain", ">=", 0.0,
                               control="gain_ctrl"),),
                 deviations=("none",),
                 tiers=(("smoke", "tiny"), ("small", "default"), ("paper", "large")))
    metrics = {"gain": 0.5, "gain_ctrl": -0.1}
    intervals = {
        "gain": {"value": 0.5, "lo": 0.2, "hi": 0.8, "method": "t over seeds",
                 "level": 0.95, "n": 3},
        "gain_ctrl": {"value": -0.1, "lo": -0.4, "hi": 0.2, "method": "t over seeds",
                      "level": 0.95, "n": 3},
    }
    claims = tuple(evaluate_claim(c, metrics, "small", intervals=intervals)
                   for c in gain.claims)  # fmt: skip
    store.save(RunRecord("gainy", "small", 0, {}, "ok", metrics, (), claims,
                         intervals=intervals, code_version="abc"))
    write_report(store, tmp_path / "rep", papers=[gain, TOY])
    page = (tmp_path / "rep" / "gainy.html").read_text()
    row = page[page.index("gain<"):]
    row = row[: row.index("</tr>")]
    assert "95% t over seeds, n = 3" in row  # the interval in words
    assert "gain_ctrl = -0.1 [-0.4, 0.2]" in row  # the control beside the claim
    index = (tmp_path / "rep" / "index.md").read_text()
    assert "not run: no run of any tier is stored; neurips26 run toy runs it" in index


def test_claims_chart_draws_every_interval_as_an_error_bar(monkeypatch):
    """The per-paper claims chart carries our value's and the control's intervals as error
    bars, of the interval's width on the row's scale, and none where no interval exists."""
    from matplotlib.axes import Axes

    from neurips26.registry import Claim, evaluate_claim
    from neurips26.report.plots import claims_png

    drawn = []
    errorbar = Axes.errorbar

    def record(self, x, y, *a, xerr=None, **k):
        drawn.append((x[0], xerr))
        return errorbar(self, x, y, *a, xerr=xerr, **k)

    monkeypatch.setattr(Axes, "errorbar", record)
    iv = {"gain": {"lo": 0.2, "hi": 0.8, "method": "t over seeds", "level": 0.95, "n": 3},
          "ctrl": {"lo": -0.4, "hi": 0.2, "method": "t over seeds", "level": 0.95, "n": 3}}
    metrics = {"gain": 0.5, "ctrl": -0.1, "plain": 2.0}
    claims = [evaluate_claim(Claim("g", "A gain", "+1", "gain", ">=", 0.0, control="ctrl"),
                             metrics, "small", intervals=iv),
              evaluate_claim(Claim("p", "No interval", "1", "plain", ">=", 1.0),
                             metrics, "small")]  # fmt: skip
    assert claims_png(claims)[:4] == b"\x89PNG"
    (ours, ours_err), (ctrl, ctrl_err), (plain, plain_err) = drawn
    scale = 0.8  # the row's largest distance from the threshold (our upper end)
    assert ours == pytest.approx(0.5 / scale) and ctrl == pytest.approx(-0.1 / scale)
    assert np.ravel(ours_err) == pytest.approx([0.3 / scale, 0.3 / scale])
    assert np.ravel(ctrl_err) == pytest.approx([0.3 / scale, 0.3 / scale])
    assert plain_err is None and plain == pytest.approx(1.0)


def test_cpu_text_shows_what_cache_reads_had_cost():
    from neurips26.records import RunRecord
    from neurips26.report.pages import cpu_text

    plain = make_record({"m": 1.0}, cpu_seconds=7.0)
    assert cpu_text(plain) == "7"
    read = make_record({"m": 1.0}, cpu_seconds=7.0,
                       cache_reads={"hits": 2, "cpu_seconds": 880.0, "unrecorded": 1})
    assert cpu_text(read) == "7 + 880 cached + 1 cached (cost not recorded)"
    back = RunRecord.from_dict(read.to_dict())
    assert back.cache_reads == read.cache_reads
