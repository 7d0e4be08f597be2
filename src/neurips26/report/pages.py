"""HTML and Markdown pages of the report. All text passes through :func:`esc` / :func:`md`."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

from neurips26.registry import NOT_RUN, TIERS, Paper, summarize_verdicts, verdict_counts

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.v{font-weight:600;padding:.1em .45em;border-radius:.3em;color:#fff;white-space:nowrap}
.reproduced{background:#2e7d32}.not-reproduced{background:#c62828}
.inconclusive{background:#f9a825;color:#222}.not-run{background:#9e9e9e}
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.muted{color:#666}
"""


def esc(text: object) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape(str(text), quote=True)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def md(text: object) -> str:
    """Escape any value for a Markdown table cell or paragraph."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value == 0 or 1e-3 <= abs(value) < 1e5:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


def _slugify(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


@dataclass
class PaperView:
    """A paper with its latest stored run per tier."""

    paper: Paper
    runs: dict  # tier -> StoredRun

    def figure_file(self, tier: str, name: str) -> str:
        return f"{self.paper.slug}__{tier}__{_slugify(name)}.png"

    @property
    def shown_tier(self) -> str | None:
        for tier in ("small", "paper", "smoke"):
            if tier in self.runs:
                return tier
        return None

    def claims(self, tier: str | None = None):
        tier = tier or self.shown_tier
        if tier is None or tier not in self.runs:
            return None
        return self.runs[tier].record.claims

    def verdict_counts(self) -> dict[str, int]:
        claims = self.claims()
        if claims is None:
            return {NOT_RUN: len(self.paper.claims)}
        return verdict_counts(c.verdict for c in claims)


def badge(verdict: str) -> str:
    return f'<span class="v {esc(verdict.replace(" ", "-"))}">{esc(verdict)}</span>'


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def _claims_rows(claims, paper: Paper) -> list[tuple[str, ...]]:
    if claims is None:
        return [
            (c.id, c.statement, c.paper_value, c.describe(), "-", NOT_RUN) for c in paper.claims
        ]
    by_id = {c.id: c for c in paper.claims}
    rows = []
    for c in claims:
        ours = fmt(c.measured)
        if c.uncertainty:
            ours += f" ± {fmt(c.uncertainty)}"
        test = by_id[c.id].describe() if c.id in by_id else f"{c.metric} {c.comparison} {c.target}"
        rows.append((c.id, c.statement, c.paper_value, test, ours, c.verdict))
    return rows


def render_index(views: list[PaperView]) -> tuple[str, str]:
    """The index page: every paper, its grade and verdicts."""
    head = ("paper", "title", "grade", "field", "tier", "verdicts", "wall s")
    rows_html, rows_md = [], []
    for v in views:
        p, tier = v.paper, v.shown_tier
        counts = v.verdict_counts()
        if tier and v.runs[tier].record.status != "ok":
            verdicts_html = badge("not run") + " run failed"
            verdicts_md = "run failed"
            wall = fmt(v.runs[tier].record.wall_seconds)
        else:
            verdicts_html = " ".join(f"{badge(k)}&nbsp;×{n}" for k, n in counts.items())
            verdicts_md = ", ".join(f"{n} {k}" for k, n in counts.items())
            wall = fmt(v.runs[tier].record.wall_seconds) if tier else "-"
        rows_html.append(
            f'<tr><td><a href="{esc(p.slug)}.html">{esc(p.slug)}</a></td><td>{esc(p.title)}</td>'
            f"<td>{esc(p.grade)}</td><td>{esc(p.field)}</td><td>{esc(tier or 'not run')}</td>"
            f"<td>{verdicts_html}</td><td>{esc(wall)}</td></tr>"
        )
        rows_md.append(
            f"| [{md(p.slug)}]({p.slug}.md) | {md(p.title)} | {md(p.grade)} | {md(p.field)} | "
            f"{md(tier or 'not run')} | {md(verdicts_md)} | {md(wall)} |"
        )
    intro = (
        "Each paper's claims, with verdicts computed from the metrics its reproduction measured. "
        "The small tier is shown where it was run; a tier never run says so."
    )
    body = (
        "<h1>neurips26 report</h1>"
        f"<p>{esc(intro)}</p>"
        '<img src="figures/verdicts.png" alt="verdicts per paper">'
        "<table><tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr>"
        + "".join(rows_html)
        + "</table>"
    )
    md_text = (
        "# neurips26 report\n\n" + md(intro) + "\n\n![verdicts per paper](figures/verdicts.png)\n\n"
        "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n" + "\n".join(rows_md) + "\n"
    )
    return _page("neurips26 report", body), md_text


def render_readme_table(views: list[PaperView]) -> str:
    """The README's paper table: slug, paper, grade, small-tier verdicts, how to run."""
    lines = [
        "| slug | paper | grade | small-tier verdicts | run |",
        "|---|---|---|---|---|",
    ]
    for v in views:
        p = v.paper
        stored = v.runs.get("small")
        if stored is None:
            verdicts = "not run"
        elif stored.record.status != "ok":
            verdicts = "run failed"
        else:
            verdicts = summarize_verdicts(c.verdict for c in stored.record.claims)
        lines.append(
            f"| `{p.slug}` | {md(p.title)} | {p.grade} | {md(verdicts)} | "
            f"`neurips26 run {p.slug}` |"
        )
    return "\n".join(lines) + "\n"


def _table_html(rows: list[dict]) -> str:
    if not rows:
        return "<p class=muted>(empty)</p>"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = "<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"
    for r in rows:
        out += "<tr>" + "".join(f"<td>{esc(fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
    return out + "</table>"


def _table_md(rows: list[dict]) -> str:
    if not rows:
        return "(empty)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = "| " + " | ".join(md(c) for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in rows:
        out += "| " + " | ".join(md(fmt(r.get(c))) for c in cols) + " |\n"
    return out


def render_paper(view: PaperView) -> tuple[str, str]:
    """One paper's page: claims per tier, figures, tables, config, timings, environment."""
    p = view.paper
    h: list[str] = [
        '<p><a href="index.html">← all papers</a></p>',
        f"<h1>{esc(p.slug)}: {esc(p.title)}</h1>",
        f"<p class=muted>Seed {esc(p.seed)}, paragraph {esc(p.paragraph)} · {esc(p.field)} · "
        f"grade {esc(p.grade)}</p>",
        f"<h2>What the paper proposes</h2><p>{esc(p.summary)}</p>",
    ]
    m: list[str] = [
        "[← all papers](index.md)\n",
        f"# {md(p.slug)}: {md(p.title)}\n",
        f"Seed {md(p.seed)}, paragraph {p.paragraph} · {md(p.field)} · grade {md(p.grade)}\n",
        f"## What the paper proposes\n\n{md(p.summary)}\n",
    ]
    head = ("claim", "statement", "paper", "test", "ours", "verdict")
    for tier in TIERS:
        stored = view.runs.get(tier)
        h.append(f"<h2>Claims at the {esc(tier)} tier</h2>")
        m.append(f"## Claims at the {tier} tier\n")
        if stored is None:
            h.append(f"<p>{badge(NOT_RUN)} No run of this tier is stored.</p>")
            m.append("Not run: no run of this tier is stored.\n")
            continue
        r = stored.record
        meta = (
            f"run {stored.run_id} · seed {r.seed} · status {r.status} · "
            f"{fmt(r.wall_seconds)} s wall, {fmt(r.cpu_seconds)} s CPU · "
            f"peak RSS {fmt(r.peak_memory_mb)} MB · version {r.package_version} · "
            f"commit {r.git_commit} · {r.created_at}"
        )
        h.append(f"<p class=muted>{esc(meta)}</p>")
        m.append(md(meta) + "\n")
        rows = _claims_rows(r.claims, p)
        h.append(
            "<table><tr>"
            + "".join(f"<th>{esc(x)}</th>" for x in head)
            + "</tr>"
            + "".join(
                "<tr>"
                + "".join(f"<td>{esc(c)}</td>" for c in row[:-1])
                + f"<td>{badge(row[-1])}</td></tr>"
                for row in rows
            )
            + "</table>"
        )
        m.append(
            "| "
            + " | ".join(head)
            + " |\n|"
            + "---|" * len(head)
            + "\n"
            + "".join("| " + " | ".join(md(c) for c in row) + " |\n" for row in rows)
        )
        if r.error:
            h.append(f"<h3>Error</h3><pre>{esc(r.error)}</pre>")
            m.append("### Error\n\n```\n" + r.error.replace("```", "'''") + "\n```\n")
        for note in r.notes:
            h.append(f"<p>Note: {esc(note)}</p>")
            m.append(f"Note: {md(note)}\n")
        for name in r.figures:
            src = "figures/" + view.figure_file(tier, name)
            h.append(f'<h3>{esc(name)}</h3><img src="{esc(src)}" alt="{esc(name)}">')
            m.append(f"### {md(name)}\n\n![{md(name)}]({src})\n")
        for name, rows_t in r.tables.items():
            h.append(f"<h3>{esc(name)}</h3>" + _table_html(rows_t))
            m.append(f"### {md(name)}\n\n" + _table_md(rows_t))
        metric_rows = [
            {"metric": k, "value": v, "volatile": k in r.volatile} for k, v in r.metrics.items()
        ]
        h.append(
            "<details><summary>All metrics</summary>" + _table_html(metric_rows) + "</details>"
        )
        m.append("### All metrics\n\n" + _table_md(metric_rows))
        cfg = json.dumps(r.config, indent=2)
        env = json.dumps(r.environment, indent=2)
        h.append(
            f"<details><summary>Config and environment</summary><pre>{esc(cfg)}</pre>"
            f"<pre>{esc(env)}</pre></details>"
        )
        m.append(f"### Config\n\n```json\n{cfg}\n```\n\n### Environment\n\n```json\n{env}\n```\n")
    h.append(
        "<h2>Tiers</h2><ul>"
        + "".join(f"<li><b>{esc(t)}</b>: {esc(text)}</li>" for t, text in p.tiers)
        + "</ul>"
    )
    m.append("## Tiers\n\n" + "".join(f"- **{t}**: {md(text)}\n" for t, text in p.tiers))
    h.append(
        "<h2>Deviations from the paper</h2><ul>"
        + "".join(f"<li>{esc(d)}</li>" for d in p.deviations)
        + "</ul>"
    )
    m.append("## Deviations from the paper\n\n" + "".join(f"- {md(d)}\n" for d in p.deviations))
    return _page(f"{p.slug}: {p.title}", "\n".join(h)), "\n".join(m)
