"""The static report: an HTML site and its Markdown twin, written from the store.

``write_report(store, out)`` writes ``index.html``/``index.md`` (every paper and its
verdicts, paper claims and checks apart, from the run chosen by
:func:`neurips26.summary.shown_run`) and one page per paper (claims per tier, in the
order small, paper, smoke; captioned figures, tables, config, timings, environment,
notes, errors). Every piece of text from papers or runs is escaped.
"""

from __future__ import annotations

from pathlib import Path

from neurips26.registry import TIERS, all_papers
from neurips26.report.pages import PaperView, render_index, render_paper, render_readme_table
from neurips26.report.plots import claims_png, verdict_summary_png
from neurips26.summary import shown_run, shown_tier_run

__all__ = ["update_readme", "write_report"]

START, END = "<!-- paper-table:start -->", "<!-- paper-table:end -->"


def write_report(store, out: str | Path = "report", *, papers=None) -> Path:
    """Write the report; returns the path of ``index.html``.

    Parameters
    ----------
    store : neurips26.store.Store
        Where the runs are read from.
    out : str or Path
        Output folder (created).
    papers : list of Paper, optional
        The papers to show; every registered paper by default.
    """
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    views = []
    for paper in all_papers() if papers is None else papers:
        tiers = {tier: shown_tier_run(store, paper.slug, tier, with_figures=True) for tier in TIERS}
        view = PaperView(paper=paper, shown=shown_run(store, paper.slug), tiers=tiers)
        views.append(view)
        for tier, stored in view.runs.items():
            for name, png in stored.record.figures.items():
                (out / "figures" / view.figure_file(tier, name)).write_bytes(png)
            chart = claims_png(stored.record.claims) if stored.record.status == "ok" else None
            if chart is not None:
                name = f"{paper.slug}__{tier}.claims.png"  # no experiment figure is named so
                (out / "figures" / name).write_bytes(chart)
                view.claim_charts[tier] = name
        html, md = render_paper(view)
        (out / f"{paper.slug}.html").write_text(html, encoding="utf-8")
        (out / f"{paper.slug}.md").write_text(md, encoding="utf-8")
    (out / "figures" / "verdicts.png").write_bytes(verdict_summary_png(views))
    (out / "papers_table.md").write_text(render_readme_table(views), encoding="utf-8")
    html, md = render_index(views)
    (out / "index.html").write_text(html, encoding="utf-8")
    (out / "index.md").write_text(md, encoding="utf-8")
    return out / "index.html"


def update_readme(readme: str | Path, report_dir: str | Path = "report") -> None:
    """Replace the README's paper table (between the marker comments) with the report's."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"{readme} has no {START} ... {END} block to replace")
    table = (Path(report_dir) / "papers_table.md").read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table}{END}{tail}", encoding="utf-8")
