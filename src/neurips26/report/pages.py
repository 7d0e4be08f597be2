"""HTML and Markdown pages of the report. All text passes through :func:`esc` / :func:`md`."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field

from neurips26.registry import (
    INCONCLUSIVE,
    NO_RUN_STORED,
    NOT_EVIDENCE,
    NOT_RUN,
    VERDICTS,
    Paper,
    evaluate_claim,
    format_counts,
    not_run,
)
from neurips26.summary import (
    TIER_ORDER,
    Shown,
    counts,
    counts_short,
    run_line,
)

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:1em 0;font-size:.92em;table-layout:fixed;width:100%}
table.auto{width:auto;max-width:100%}
p,li,h1,h2,h3,figcaption,td,th{overflow-wrap:anywhere}
figure{margin:1em 0}figcaption{font-size:.9em;color:#444;max-width:60em}
.why,.sub{font-size:.85em;color:#555}.nowrap{white-space:nowrap}
.sub{display:block;margin-top:.2em}
th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
col.verdict{width:10.5em}
.v{font-weight:600;padding:.1em .45em;border-radius:.3em;color:#fff;white-space:nowrap;
display:inline-block;margin:.1em 0}
.reproduced{background:#2e7d32}.not-reproduced{background:#c62828}
.inconclusive{background:#f9a825;color:#222}.not-run{background:#9e9e9e}
.not-evidence{background:#e65100}
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


_NUMPY_ARRAY = re.compile(r"^\[\s*[-+0-9.eEnaif\s]*\]$")

#: How a NaN cell is printed, and the footnote that explains it.
NAN_TEXT = "n/a"
NAN_NOTE = "n/a: no value (NaN): the quantity was not measured in this run."


def fmt(value: object) -> str:
    """A value as people write it: ``1e-09``, ``0.3333``, ``12``, ``555, 797, 85``.

    NaN prints as ``n/a`` (see :data:`NAN_NOTE`); lists print their items; the text of
    a numpy array (``"[555 797  85]"``, from older stores) is read back as its items.
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return NAN_TEXT
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        if value == int(value) and abs(value) < 1e6:
            return str(int(value))
        if 1e-3 <= abs(value) < 1e6:
            return f"{value:.4g}"
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt(v)}" for k, v in value.items())
    text = str(value)
    if _NUMPY_ARRAY.match(text) and text.strip("[] "):
        items = []
        for tok in text.strip("[] ").split():
            try:
                items.append(fmt(float(tok)))
            except ValueError:
                return text
        return ", ".join(items)
    return text


def interval_text(iv: dict | None) -> str:
    """An interval's method, level and n in words: ``"95% t over seeds, n = 3"``."""
    if not iv:
        return ""
    method = str(iv.get("method") or "unknown method")
    level, n = iv.get("level"), iv.get("n")
    text = (f"{100 * float(level):g}% " if isinstance(level, (int, float)) else "") + method
    return text + (f", n = {n}" if isinstance(n, int) and n else "")


def _range(lo, hi) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]"


def control_text(c) -> str:
    """The control of a claim result: ``"ctrl_metric = 0.01 [..] (not reproduced)"``, or
    the reason none applies; empty for checks and old records."""
    ctrl = getattr(c, "control", None)
    if ctrl:
        value = ctrl.get("value")
        shown = "not measured" if value is None or value != value else fmt(value)
        iv = ctrl.get("interval")
        if iv and shown != "not measured" and iv.get("lo") != iv.get("hi"):
            shown += " " + _range(iv.get("lo"), iv.get("hi"))
        return f"{ctrl.get('metric')} = {shown} ({ctrl.get('verdict')})"
    reason = getattr(c, "no_control", "")
    return f"no control: {reason}" if reason else ""


def claim_cells(c) -> dict[str, str]:
    """The display texts of one claim result: its test, our value with its interval, the
    interval's method, the control, the diagnostics, and why it is not run or not
    decided."""
    tol = f" (tolerance {fmt(c.tolerance)})" if c.tolerance else ""
    if c.comparison == "abs<=":
        test = f"|{c.metric}| <= {fmt(c.target)}{tol}"
    else:
        test = f"{c.metric} {c.comparison} {fmt(c.target)}{tol}"
    iv = getattr(c, "interval", None)
    if c.measured is None:
        ours = "-"
    elif c.measured != c.measured:
        ours = "not measured"
    else:
        ours = fmt(c.measured)
        if iv and iv.get("lo") != iv.get("hi"):
            ours += " " + _range(iv.get("lo"), iv.get("hi"))
        elif c.uncertainty is not None and c.uncertainty:
            ours += f" ± {fmt(c.uncertainty)}"
    reason = getattr(c, "reason", "")
    detail = getattr(c, "detail", "")
    if c.verdict == NOT_RUN:
        why = reason + (f": {detail}" if detail and reason else detail)
    elif c.verdict in (INCONCLUSIVE, NOT_EVIDENCE):
        why = detail
    else:
        why = ""
    diags = getattr(c, "diagnostics", None) or {}
    diag = "; ".join(f"{k} = {'not measured' if v is None or v != v else fmt(v)}"
                     for k, v in diags.items())
    return {"test": test, "ours": ours, "why": why, "interval": interval_text(iv),
            "control": control_text(c), "diagnostics": diag}


def _slugify(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


@dataclass
class PaperView:
    """A paper with the run that represents it and the run shown for each tier.

    ``shown`` follows the one policy of :func:`neurips26.summary.shown_run`; ``tiers``
    maps each stored tier to the same policy within that tier.
    """

    paper: Paper
    shown: Shown
    tiers: dict  # tier -> Shown
    claim_charts: dict = field(default_factory=dict)  # tier -> file of the claims chart

    @property
    def runs(self) -> dict:
        """Tier to the stored run shown for it."""
        return {t: s.stored for t, s in self.tiers.items() if s.stored is not None}

    def figure_file(self, tier: str, name: str) -> str:
        return f"{self.paper.slug}__{tier}__{_slugify(name)}.png"

    @property
    def shown_tier(self) -> str | None:
        return self.shown.tier

    def counts(self) -> dict[str, dict[str, int]]:
        """Verdict counts of paper claims and checks in the shown run."""
        if not self.shown.ok:
            zero = {k: dict.fromkeys(VERDICTS, 0) for k in ("paper", "check")}
            for c in self.paper.claims:
                zero[c.kind][NOT_RUN] += 1
            return zero
        return counts(self.shown.stored.record, self.paper)

    def verdict_counts(self) -> dict[str, int]:
        """Paper-claim verdict counts of the shown run (the headline)."""
        return self.counts()["paper"]


def badge(verdict: str) -> str:
    return f'<span class="v {esc(verdict.replace(" ", "-"))}">{esc(verdict)}</span>'


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


CLAIM_HEAD = ("claim", "kind", "statement", "paper", "metric and test", "ours (interval)",
              "control", "verdict")

#: What the claims table's cells mean, printed above every claims table.
CLAIMS_LEGEND = (
    "How to read this table: 'ours' is the value this run measured, followed by its interval "
    "[lo, hi] and, in parentheses, how the interval was computed (its level, its method and "
    "the number of units n it rests on: seeds, items, queries or bootstrap draws). A value "
    "followed by '±' comes from an older run that stored a half-width without its method. "
    "A paper claim is reproduced when its interval lies on the target's side of the test; "
    "its control is the same statistic measured where the effect must be absent, and when "
    "the control passes the same test the claim reads 'not evidence'. Checks are properties "
    "of our own construction and need no control."
)


def _claims_rows(claims, paper: Paper) -> list[dict[str, str]]:
    """One dict of display texts per claim (see :func:`claim_cells`)."""
    kinds = paper.kinds
    rows = []
    for c in claims:
        cells = claim_cells(c)
        cells.update(id=c.id, kind=kinds.get(c.id, c.kind), statement=c.statement,
                     paper=fmt(c.paper_value), verdict=c.verdict)
        rows.append(cells)
    return rows


def _control_html(text: str) -> str:
    """A control's value, or the reason none applies folded under 'no control'."""
    if not text:
        return "-"
    if text.startswith("no control: "):
        reason = text[len("no control: "):]
        return (f'<details><summary>no control (why)</summary><span class="why">'
                f"{esc(reason)}</span></details>")
    return esc(text)


def _claims_html(rows) -> str:
    """The claims table in five columns that always fit the page: the claim, the paper's
    statement and figure, our test and value with its interval, the control, the verdict."""

    def sub(text: str) -> str:
        return f'<span class="sub">{esc(text)}</span>' if text else ""

    body = "".join(
        "<tr>"
        f"<td><b>{esc(r['id']).replace('_', '_<wbr>')}</b>{sub(r['kind'])}</td>"
        f"<td>{esc(r['statement'])}{sub('paper: ' + r['paper'] if r['paper'] != '-' else '')}</td>"
        f"<td>{esc(r['test'])}<span class=\"sub\">ours: {esc(r['ours'])}</span>"
        f"{sub(r['interval'])}</td>"
        f"<td>{_control_html(r['control'])}"
        f"{sub('diagnostics: ' + r['diagnostics'] if r['diagnostics'] else '')}</td>"
        f"<td>{badge(r['verdict'])}"
        + (f'<div class="why">{esc(r["why"])}</div>' if r["why"] else "")
        + "</td></tr>"
        for r in rows
    )
    head = "".join(f"<th>{esc(h)}</th>" for h in
                   ("claim", "statement (the paper's figure)", "test and ours (interval)",
                    "control", "verdict"))
    cols = ('<colgroup><col style="width:15%"><col style="width:30%"><col style="width:24%">'
            '<col><col class="verdict"></colgroup>')
    return (f'<p class="why">{esc(CLAIMS_LEGEND)}</p>'
            f'<table class="claims">{cols}<tr>{head}</tr>{body}</table>')


def _claims_md(rows) -> str:
    out = md(CLAIMS_LEGEND) + "\n\n"
    out += "| " + " | ".join(CLAIM_HEAD) + " |\n|" + "---|" * len(CLAIM_HEAD) + "\n"
    for r in rows:
        ours = r["ours"] + (f" ({r['interval']})" if r["interval"] else "")
        control = r["control"] + (f"; diagnostics: {r['diagnostics']}" if r["diagnostics"] else "")
        verdict = r["verdict"] + (f" ({r['why']})" if r["why"] else "")
        cells = (r["id"], r["kind"], r["statement"], r["paper"], r["test"], ours, control, verdict)
        out += "| " + " | ".join(md(x) for x in cells) + " |\n"
    return out


def _counts_html(c: dict[str, int]) -> str:
    shown = [(k, n) for k, n in c.items() if n]
    if not shown:
        return "none"
    return " ".join(f"{badge(k)}&nbsp;×{n}" for k, n in shown)


def _index_order(views: list[PaperView]) -> list[PaperView]:
    rank = {t: i for i, t in enumerate(TIER_ORDER)}
    return sorted(views, key=lambda v: rank.get(v.shown_tier, len(rank)))


def _cached_cpu(record) -> tuple[float, int]:
    """The CPU seconds that computing the cache entries a run read had cost, and how many
    of those entries had no recorded cost (runs stored before costs were kept read as
    none)."""
    reads = getattr(record, "cache_reads", None) or {}
    return float(reads.get("cpu_seconds", 0.0) or 0.0), int(reads.get("unrecorded", 0) or 0)


def cpu_text(record) -> str:
    """A run's CPU seconds, with what its cache reads had cost to compute: ``"7.4 + 883
    cached"``, and ``"+ cached (cost not recorded)"`` for entries of unknown cost."""
    text = fmt(record.cpu_seconds)
    cost, unrecorded = _cached_cpu(record)
    if cost > 0:
        text += f" + {fmt(cost)} cached"
    if unrecorded:
        text += f" + {unrecorded} cached (cost not recorded)"
    return text


def render_index(views: list[PaperView]) -> tuple[str, str]:
    """The index page: every paper, its shown run, paper claims and checks apart."""
    head = ("paper", "title", "grade", "field", "shown run", "paper claims", "checks", "wall s",
            "CPU s", "note")
    rows_html, rows_md = [], []
    for v in _index_order(views):
        p, shown = v.paper, v.shown
        c = v.counts()
        if shown.stored is None:
            tier_text, paper_html, check_html = "not run", _counts_html(c["paper"]), "-"
            paper_md, check_md, wall, cpu = format_counts(c["paper"]), "-", "-", "-"
        elif not shown.ok:
            tier_text = f"{shown.tier} (failed)"
            paper_html = check_html = badge(NOT_RUN) + " run failed"
            paper_md = check_md = "run failed"
            wall = fmt(shown.stored.record.wall_seconds)
            cpu = cpu_text(shown.stored.record)
        else:
            tier_text = shown.tier
            paper_html, check_html = _counts_html(c["paper"]), _counts_html(c["check"])
            paper_md, check_md = format_counts(c["paper"]), format_counts(c["check"])
            wall = fmt(shown.stored.record.wall_seconds)
            cpu = cpu_text(shown.stored.record)
        if not sum(c["check"].values()):
            check_html = check_md = "-"
        note = shown.note
        if shown.stored is None:
            note = f"not run: no run of any tier is stored; neurips26 run {p.slug} runs it"
        rows_html.append(
            f'<tr><td><a href="{esc(p.slug)}.html">{esc(p.slug)}</a>'
            f'<span class="sub">{esc(p.title)}</span>'
            f'<span class="sub">{esc(p.field)} · grade {esc(p.grade)}</span></td>'
            f"<td>{esc(tier_text)}</td><td>{paper_html}</td><td>{check_html}</td>"
            f'<td>{esc(cpu)}<span class="sub">wall {esc(wall)}</span></td>'
            f"<td>{esc(note)}</td></tr>"
        )
        rows_md.append(
            f"| [{md(p.slug)}]({p.slug}.md) | {md(p.title)} | {md(p.grade)} | {md(p.field)} | "
            f"{md(tier_text)} | {md(paper_md)} | {md(check_md)} | {md(wall)} | {md(cpu)} | "
            f"{md(note)} |"
        )
    ok_runs = [v.shown.stored.record for v in views if v.shown.stored is not None and v.shown.ok]
    cpu_total = sum(r.cpu_seconds for r in ok_runs)
    small = [r for r in ok_runs if r.tier == "small"]
    cached = [_cached_cpu(r) for r in small]
    unrecorded = sum(u for _, u in cached)
    cpu_line = (
        f"CPU time of the runs shown: {cpu_total / 60:.1f} minutes over {len(ok_runs)} papers "
        f"({sum(r.cpu_seconds for r in small) / 60:.1f} minutes for the {len(small)} small-tier "
        "runs; the largest consumers are the rows with the most CPU s). Models and arrays "
        "read from the cache cost a run next to nothing; computing the entries the small-tier "
        f"runs read had cost {sum(c for c, _ in cached) / 60:.1f} more CPU minutes, so a "
        "first run on a fresh machine takes "
        f"{(sum(r.cpu_seconds for r in small) + sum(c for c, _ in cached)) / 60:.1f} minutes"
        + (f" plus the unrecorded cost of {unrecorded} cache entries written before costs "
           "were kept" if unrecorded else "")
        + " (the '+ cached' in the CPU column)."
    )
    intro = (
        "Each paper's claims, with verdicts computed from the metrics its reproduction "
        "measured. Paper claims are statements the paper makes, tested at the paper's "
        "figure; checks are oracles, sanity checks and properties of our construction, "
        "counted apart. The run shown is the latest successful small-tier run, else the "
        "latest successful run of another tier (named in 'shown run'); a later failed run is "
        "noted. Papers are listed by the tier shown: small, paper, smoke. Wall and CPU seconds "
        "are the shown run's own (they depend on the machine and its load)."
    )
    body = (
        "<h1>neurips26 report</h1>"
        f"<p>{esc(intro)}</p><p>{esc(cpu_line)}</p>"
        '<figure><img src="figures/verdicts.png" alt="paper-claim verdicts per paper">'
        "<figcaption>Verdicts of each paper's claims (paper claims only, checks left out) in "
        "the run shown for it.</figcaption></figure>"
        '<table class="index"><colgroup><col style="width:30%"><col style="width:9%">'
        '<col style="width:20%"><col style="width:20%"><col style="width:8%"><col></colgroup>'
        "<tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in
                  ("paper", "shown run", "paper claims", "checks", "CPU s", "note"))
        + "</tr>"
        + "".join(rows_html)
        + "</table>"
    )
    md_text = (
        "# neurips26 report\n\n" + md(intro) + "\n\n" + md(cpu_line)
        + "\n\n![paper-claim verdicts per paper]"
        "(figures/verdicts.png)\n\n"
        "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n" + "\n".join(rows_md) + "\n"
    )
    return _page("neurips26 report", body), md_text


def render_readme_table(views: list[PaperView]) -> str:
    """The README's paper table: slug, paper, grade, shown run, paper claims, checks."""
    lines = [
        "| slug | paper | grade | run shown | paper claims (reproduced / not / not evidence / "
        "inconclusive / not run) | checks (same) | run |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in views:
        p, shown = v.paper, v.shown
        c = v.counts()
        if shown.stored is None:
            tier, paper_c, check_c = "not run", counts_short(c["paper"]), "-"
        elif not shown.ok:
            tier, paper_c, check_c = f"{shown.tier}: run failed", "-", "-"
        else:
            tier, paper_c = shown.tier, counts_short(c["paper"])
            check_c = counts_short(c["check"]) if sum(c["check"].values()) else "-"
        if shown.note:
            tier += " (a later run failed)"
        lines.append(
            f"| `{p.slug}` | {md(p.title)} | {p.grade} | {md(tier)} | {paper_c} | {check_c} | "
            f"`neurips26 run {p.slug}` |"
        )
    return "\n".join(lines) + "\n"


def _has_nan(rows: list[dict]) -> bool:
    return any(fmt(v) == NAN_TEXT for r in rows for v in r.values())


#: The most columns one HTML table shows; wider tables are cut into several that repeat
#: the first column, so every table fits the page without scrolling.
MAX_COLUMNS = 7


def _table_html(rows: list[dict]) -> str:
    if not rows:
        return "<p class=muted>(empty)</p>"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    first, rest = cols[:1], cols[1:]
    step = MAX_COLUMNS - 1
    groups = [first + rest[i:i + step] for i in range(0, len(rest), step)] or [first]
    out = ""
    for group in groups:
        cls = ' class="auto"' if len(group) <= 3 else ""
        out += f"<table{cls}><tr>" + "".join(f"<th>{esc(c)}</th>" for c in group) + "</tr>"
        for r in rows:
            out += "<tr>" + "".join(f"<td>{esc(fmt(r.get(c)))}</td>" for c in group) + "</tr>"
        out += "</table>"
    if len(groups) > 1:
        out = (f'<p class="why">{len(cols)} columns, shown in {len(groups)} parts that each '
               f"repeat the first column.</p>" + out)
    if _has_nan(rows):
        out += f'<p class="why">{esc(NAN_NOTE)}</p>'
    return out


def _table_md(rows: list[dict]) -> str:
    if not rows:
        return "(empty)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = "| " + " | ".join(md(c) for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in rows:
        out += "| " + " | ".join(md(fmt(r.get(c))) for c in cols) + " |\n"
    if _has_nan(rows):
        out += f"\n{md(NAN_NOTE)}\n"
    return out


def caption(record, name: str) -> str:
    """The figure's caption from the run, else a plain one naming the figure."""
    text = (getattr(record, "captions", None) or {}).get(name)
    if text:
        return text
    return f"{name.replace('_', ' ').capitalize()} ({record.tier} tier, seed {record.seed})."


def _unrun_claims(paper: Paper, tier: str) -> list:
    """The claims of a tier no stored run covers, each ``not run`` with the reason."""
    out = []
    for c in paper.claims:
        if tier in c.tiers:
            out.append(not_run(c, tier, NO_RUN_STORED))
        else:
            out.append(evaluate_claim(c, {}, tier))
    return out


def render_paper(view: PaperView) -> tuple[str, str]:
    """One paper's page: claims per tier, figures, tables, config, timings, environment."""
    p = view.paper
    h: list[str] = [
        '<p><a href="index.html">← all papers</a></p>',
        f"<h1>{esc(p.title)}</h1>",
        f"<p class=muted>{esc(p.slug)} · {esc(p.field)} · grade {esc(p.grade)}"
        + (f' · the abstract links <a href="{esc(p.link)}">{esc(p.link)}</a>' if p.link else "")
        + "</p>",
        f"<h2>What the paper proposes</h2><p>{esc(p.summary)}</p>",
    ]
    m: list[str] = [
        "[← all papers](index.md)\n",
        f"# {md(p.title)}\n",
        f"{md(p.slug)} · {md(p.field)} · grade {md(p.grade)}"
        + (f" · the abstract links <{p.link}>" if p.link else "") + "\n",
        f"## What the paper proposes\n\n{md(p.summary)}\n",
    ]
    for tier in TIER_ORDER:
        shown = view.tiers.get(tier)
        stored = shown.stored if shown is not None else None
        h.append(f"<h2>Claims at the {esc(tier)} tier</h2>")
        m.append(f"## Claims at the {tier} tier\n")
        if stored is None:
            command = f"neurips26 run {p.slug} --tier {tier}"
            h.append(f"<p>{badge(NOT_RUN)} No run of this tier is stored; "
                     f"<code>{esc(command)}</code> runs it. Its claims:</p>")
            m.append(f"Not run: no run of this tier is stored; `{command}` runs it. "
                     "Its claims:\n")
            rows = _claims_rows(_unrun_claims(p, tier), p)
            h.append(_claims_html(rows))
            m.append(_claims_md(rows))
            continue
        r = stored.record
        meta = (
            f"run {stored.run_id} · seed {r.seed} · status {r.status} · "
            f"{fmt(r.wall_seconds)} s wall, {cpu_text(r)} s CPU · "
            f"peak RSS {fmt(r.peak_memory_mb)} MB · version {r.package_version} · "
            f"commit {r.git_commit} · {r.created_at}"
        )
        h.append(f"<p class=muted>{esc(meta)}</p>")
        m.append(md(meta) + "\n")
        if shown.note:
            h.append(f"<p>Note: {esc(shown.note)}.</p>")
            m.append(f"Note: {md(shown.note)}.\n")
        if r.status == "ok":
            line = run_line(r, p)
            h.append(f"<p>{esc(line)}.</p>")
            m.append(md(line) + ".\n")
        rows = _claims_rows(r.claims, p)
        h.append(_claims_html(rows))
        m.append(_claims_md(rows))
        chart = view.claim_charts.get(tier)
        if chart:
            text = (f"The claims of this {tier}-tier run: our value with its interval "
                    "(filled), the control with its interval (hollow) and the target "
                    "(dashed), each row on its own scale.")
            h.append(f'<figure><img src="figures/{esc(chart)}" alt="{esc(text)}">'
                     f"<figcaption>{esc(text)}</figcaption></figure>")
            m.append(f"![{md(text)}](figures/{chart})\n")
        if r.error:
            h.append(f"<h3>Error</h3><pre>{esc(r.error)}</pre>")
            m.append("### Error\n\n```\n" + r.error.replace("```", "'''") + "\n```\n")
        if shown.later_failure is not None and shown.later_failure.record.error:
            err = shown.later_failure.record.error
            h.append(
                f"<details><summary>Error of the later failed run {shown.later_failure.run_id}"
                f"</summary><pre>{esc(err)}</pre></details>"
            )
            m.append(
                f"### Error of the later failed run {shown.later_failure.run_id}\n\n```\n"
                + err.replace("```", "'''")
                + "\n```\n"
            )
        for note in r.notes:
            h.append(f"<p>Note: {esc(note)}</p>")
            m.append(f"Note: {md(note)}\n")
        for name in r.figures:
            src = "figures/" + view.figure_file(tier, name)
            text = caption(r, name)
            h.append(
                f'<figure><img src="{esc(src)}" alt="{esc(text)}">'
                f"<figcaption>{esc(text)}</figcaption></figure>"
            )
            m.append(f"![{md(text)}]({src})\n\n*{md(text)}*\n")
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
