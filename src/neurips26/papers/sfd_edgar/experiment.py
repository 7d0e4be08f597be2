"""Reproduction of SFD's conversion on real SEC filings, against six other converters.

Every filing shipped in ``data/`` (17 real EDGAR documents: Apple's 10-K and 10-Q, statement
tables of Apple and Oracle, XBRL viewer pages, Forms 3 and 4, two 8-Ks, a 13F table, a
``<PRE>`` text filing) is converted by our converter and by each available baseline
(html2text, markdownify, html-to-markdown, inscriptis, sec2md, edgartools). Measured:

1. Table fidelity on the golden fixtures: the tables of each output (our MultiMarkdown read
   with colspans, the baselines' pipe tables read GitHub-style) are matched to the gold
   tables and scored by TEDS, cell-triple F1 and numeric recall (:mod:`.metrics`). The gold
   is our golden output, written with the converter and checked by hand against the HTML,
   so our own score there is a regression check; the baselines' scores are measurements.
2. Numbers against an independent gold: every inline-XBRL fact (``ix:nonFraction``) of the
   10-K, 10-Q and fragments, with the label of its table row read by plain lxml; recall in
   the right row (``fact_recall``) and anywhere in the text (``fact_text_recall``).
3. Duplicated text: share of the source's text blocks written more than once.
4. Tokens (cl100k_base, offline): our output over the raw HTML (median over files), and
   over each baseline's output (summed over files).
5. Near-duplicates: sections of the converted filings plus planted amended copies
   (exact shingle Jaccard drawn in [0.85, 0.95]) through :func:`near_duplicates`; the truth
   is every pair whose exact Jaccard is at least the threshold.
6. Checks: golden files reproduced exactly, grids survive MultiMarkdown and HTML round
   trips, conversion is deterministic, hidden iXBRL never appears, and (where node and the
   npm oracle are installed) markdown-it-multimd-table renders our tables to the same grid.

Uncertainty: each claim's metric carries a 95% percentile-bootstrap interval (scipy) over
the units it averages (gold tables, paired across converters; filings for fact recall and
tokens), so a margin that rests on one or two tables reads inconclusive, not reproduced.

Claims and controls: the table-fidelity comparisons are checks, not paper claims, because
their gold is our own converter's output (our score is 1 by construction). The fact
recall is measured again with each fact looked up in a row of another label of its
filing (the control: a converter that merely contains the numbers must fail it), and the
token ratio over the raw HTML again for html2text (any converter that drops the markup
could pass it). The abstract's corpus-level claims (152B tokens, Common Crawl overlap,
EDGAR-Forecast, EDGAR-OCR) are listed and not run.

Results are in the store and the report, never here. If a claim does not reproduce, the
report says so; the likely reasons are recorded in ``paper.py``'s deviations.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from statistics import median

import numpy as np

from neurips26.common.experiment import param
from neurips26.experiment import Estimate, Experiment, bootstrap_interval

from . import (
    count_tokens,
    decode_html,
    duplication_rate,
    fact_recall,
    html_to_mmd,
    ixbrl_facts,
    jaccard,
    match_tables,
    mmd_to_grids,
    near_duplicates,
    shingles,
    table_to_grid,
    tokenizer_name,
)
from .baselines import available_baselines, run_baseline
from .metrics import text_numeric_recall

#: The table fixtures that have a golden output (checked by hand).
GOLDEN = (
    "AppleTable",
    "OracleTable",
    "AppleIncomeTaxTable",
    "AppleRSUTable",
    "OracleRandDTable",
    "TableInsideIxElement",
    "aapl-R4",
    "form4.Evans",
    "ixbrl.simple",
    "document-with-pre",
)
ALL_FILES = (
    *GOLDEN,
    "Apple.10-K",
    "Apple.10-Q",
    "13F-HR.privateportfolio.infotable",
    "1800Flowers.8-K",
    "BuckleInc.8-K",
    "form3.snow",
    "orcl-R2",
)
BASELINE_NAMES = ("html2text", "markdownify", "html-to-markdown", "inscriptis", "sec2md",
                  "edgartools")


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see the module docstring)."""

    seed: int = 0
    files: tuple[str, ...] = param(ALL_FILES, help="filings of data/ to convert",
                                   choices=ALL_FILES)
    baselines: tuple[str, ...] = param(BASELINE_NAMES, help="converters to compare",
                                       choices=BASELINE_NAMES)
    num_planted: int = param(60, help="planted near-duplicate copies", min=1, max=1000)
    min_section_words: int = param(80, help="shortest section used as a document", min=10)
    threshold: float = param(0.8, help="MinHash LSH Jaccard threshold", min=0.05, max=0.99)
    num_perm: int = param(128, help="MinHash permutations", min=16, max=1024)
    num_bootstrap: int = param(1000, help="bootstrap resamples of the claims' intervals",
                               min=10, max=100_000)


TIERS = {
    "smoke": Config(
        files=("AppleTable", "AppleIncomeTaxTable", "OracleRandDTable", "TableInsideIxElement",
               "ixbrl.simple", "document-with-pre", "1800Flowers.8-K", "BuckleInc.8-K"),
        baselines=("html2text", "markdownify", "html-to-markdown", "inscriptis"),
        num_planted=8,
        min_section_words=40,
    ),
    "small": Config(),
    "paper": Config(num_planted=200),
}

#: Every metric run() returns; ``*`` stands for one per converter (``ours`` and each
#: baseline, dashes as underscores).
METRICS = (
    "teds_*", "cell_f1_*", "table_numeric_recall_*", "fact_recall_*", "fact_text_recall_*",
    "duplication_*", "tokens_*", "token_ratio_html_*", "token_ratio_vs_*", "seconds_*",
    "speedup_vs_*",
    "cell_f1_margin_generic", "cell_f1_margin_all", "teds_margin_all", "teds_ours",
    "fact_recall_ours", "fact_recall_margin_all", "token_ratio_html_ours",
    "token_ratio_vs_baselines_max", "duplication_ours", "tokens_ours", "tokens_raw_html",
    "num_gold_tables", "num_ixbrl_facts", "num_tables", "golden_exact", "mmd_roundtrip",
    "html_roundtrip", "deterministic", "hidden_leak", "markdown_it_agree", "mb_per_s_ours",
    "dedup_num_docs", "dedup_num_true_pairs", "dedup_precision", "dedup_recall",
    "planted_jaccard_min",
    "fact_recall_ours_wrong_label", "token_ratio_html_html2text",
    "corpus_tokens_billion", "common_crawl_overlap", "edgar_forecast_score",
    "edgar_ocr_score",
)  # fmt: skip

#: The abstract's corpus-level claims: not run here (they need EDGAR bulk data).
CORPUS_METRICS = ("corpus_tokens_billion", "common_crawl_overlap", "edgar_forecast_score",
                  "edgar_ocr_score")


def _bootstrap_intervals(cfg: Config, baselines: list[str], per_table, fact_hits,
                         fact_counts: list[int], tokens, raw_tokens, wrong_hits,
                         wrong_counts) -> dict[str, Estimate]:
    """Percentile-bootstrap intervals (scipy) of the claims' metrics and their controls.

    The units resampled are the independent ones each metric averages over: gold tables for
    TEDS and cell F1 (paired across converters: one resample scores every converter on the
    same tables), filings for the iXBRL fact recall (a cluster bootstrap: facts of one
    filing move together) and for the token ratios.
    """
    out: dict[str, Estimate] = {}
    convs = ["ours", *baselines]
    generic = [b for b in ("html2text", "markdownify") if b in baselines]

    def interval(data, stat, unit) -> Estimate:
        if len(data) == 0:
            return Estimate.missing(f"no {unit} to resample")
        return bootstrap_interval(np.asarray(data, dtype=float), stat,
                                  num_resamples=cfg.num_bootstrap, seed=cfg.seed, unit=unit)

    def table_margin(names):
        idx = [convs.index(n) for n in names]
        return lambda a: float(a[:, 0].mean() - max(a[:, i].mean() for i in idx))

    for metric in ("teds", "cell_f1"):
        a = np.stack([per_table[metric][c] for c in convs], axis=1)  # (tables, converters)
        if baselines:
            out[f"{metric}_margin_all"] = interval(a, table_margin(baselines), "gold tables")
        if metric == "cell_f1" and generic:
            out["cell_f1_margin_generic"] = interval(a, table_margin(generic), "gold tables")
    if fact_counts:
        h = np.column_stack([np.asarray(fact_hits[c]) for c in convs] + [fact_counts])

        def recall(a, i):
            return float(a[:, i].sum() / a[:, -1].sum())

        out["fact_recall_ours"] = interval(h, lambda a: recall(a, 0), "filings")
        if baselines:
            out["fact_recall_margin_all"] = interval(
                h, lambda a: recall(a, 0) - max(recall(a, i) for i in range(1, len(convs))),
                "filings")
    if wrong_counts:
        w = np.column_stack([wrong_hits, wrong_counts])
        out["fact_recall_ours_wrong_label"] = interval(
            w, lambda a: float(a[:, 0].sum() / a[:, 1].sum()), "filings")
    files = list(raw_tokens)
    t = np.array([[tokens[c][f] for c in convs] + [raw_tokens[f]] for f in files], dtype=float)
    out["token_ratio_html_ours"] = interval(
        t, lambda a: float(np.median(a[:, 0] / a[:, -1])), "filings")
    if "html2text" in baselines:
        j = convs.index("html2text")
        out["token_ratio_html_html2text"] = interval(
            t, lambda a: float(np.median(a[:, j] / a[:, -1])), "filings")
    if baselines:
        out["token_ratio_vs_baselines_max"] = interval(t, lambda a: float(max(
            a[:, 0].sum() / max(a[:, i].sum(), 1) for i in range(1, len(convs)))), "filings")
    return out


def data_dir() -> Path:
    """The folder of the shipped filings (and ``golden/``)."""
    return Path(str(resources.files(__package__) / "data"))


def load_filing(name: str) -> str:
    """The decoded HTML of a shipped filing, by stem (``"AppleTable"``)."""
    return decode_html((data_dir() / f"{name}.html").read_bytes())[0]


def load_golden(name: str) -> str:
    """The golden MultiMarkdown of a fixture."""
    return (data_dir() / "golden" / f"{name}.md").read_text(encoding="utf-8")


def _sections(markdown: str, min_words: int) -> list[str]:
    parts, cur = [], []
    for line in markdown.split("\n"):
        if line.startswith("#") and cur:
            parts.append("\n".join(cur))
            cur = []
        cur.append(line)
    parts.append("\n".join(cur))
    return [p for p in parts if len(p.split()) >= min_words]


def _amend(text: str, target: float, rng: np.random.Generator) -> str:
    """An 'amended copy': words replaced until the exact shingle Jaccard falls to ``target``."""
    words = text.split()
    base = shingles(text)
    out = list(words)
    order = rng.permutation(len(words))
    lo, hi = 0, len(order)
    while lo < hi:  # fewest replacements with J <= target (J falls as more are replaced)
        mid = (lo + hi) // 2
        trial = list(words)
        for k in order[:mid]:
            trial[k] = f"amended{int(k)}"
        if jaccard(base, shingles(" ".join(trial))) <= target:
            hi = mid
        else:
            lo = mid + 1
    for k in order[:lo]:
        out[k] = f"amended{int(k)}"
    return " ".join(out)


def _dedup(sections: list[str], cfg: Config, rng: np.random.Generator) -> dict[str, float]:
    docs = {f"s{i:04d}": t for i, t in enumerate(sections)}
    picks = rng.choice(len(sections), size=min(cfg.num_planted, len(sections)), replace=False)
    targets = []
    for j, i in enumerate(picks):
        t = float(rng.uniform(0.85, 0.95))
        docs[f"p{j:04d}"] = _amend(sections[int(i)], t, rng)
        targets.append(t)
    found = {(a, b) for a, b, _ in near_duplicates(docs, threshold=cfg.threshold,
                                                    num_perm=cfg.num_perm, seed=cfg.seed)}
    sh = {k: shingles(v) for k, v in docs.items()}
    keys = sorted(docs)
    truth = set()
    for x in range(len(keys)):
        for y in range(x + 1, len(keys)):
            a, b = keys[x], keys[y]
            if jaccard(sh[a], sh[b]) >= cfg.threshold:
                truth.add((a, b))
    tp = len(found & truth)
    return {
        "dedup_recall": tp / len(truth) if truth else float("nan"),
        "dedup_precision": tp / len(found) if found else float("nan"),
        "dedup_num_docs": len(docs),
        "dedup_num_true_pairs": len(truth),
        "planted_jaccard_min": min(targets),
    }


def node_oracle_available() -> Path | None:
    """The ``node_modules`` folder of the npm oracle, if node and it are installed."""
    if shutil.which("node") is None:
        return None
    for base in (os.environ.get("SFD_NODE_MODULES"),
                 Path.cwd() / ".cache" / "node" / "node_modules"):
        if base and (Path(base) / "markdown-it-multimd-table").is_dir():
            return Path(base)
    return None


def render_with_markdown_it(markdown: str, node_modules: Path) -> str:
    """HTML of ``markdown`` rendered by markdown-it + markdown-it-multimd-table (node)."""
    script = Path(__file__).resolve().parent / "render_mmd.js"
    env = dict(os.environ, SFD_NODE_MODULES=str(node_modules))
    res = subprocess.run(["node", str(script)], input=markdown, capture_output=True,
                         text=True, env=env, timeout=120, check=True)
    return res.stdout


def oracle_grids(rendered_html: str) -> list:
    """Grids of the rendered tables, read with plain lxml (no merging, no compaction)."""
    import lxml.html

    from .tables import Cell, TableGrid, clean_text

    root = lxml.html.fragment_fromstring(rendered_html, create_parent="div")
    out = []
    for t in root.iter("table"):
        rows, head = [], 0
        for tr in t.iter("tr"):
            if tr.getparent().tag == "thead":
                head += 1
            rows.append(tuple(
                Cell(clean_text(td.text_content()), int(td.get("colspan", 1)),
                     int(td.get("rowspan", 1)))
                for td in tr if td.tag in ("td", "th")))
        # our writer gives a headerless table one all-empty header row: drop it here too
        while head and rows and all(not c.text for c in rows[0]) and len(rows) > 1:
            rows.pop(0)
            head -= 1
        out.append(TableGrid(rows=tuple(rows), header_rows=head))
    return out


def _key(converter: str) -> str:
    return converter.replace("-", "_")


def _wrong_labels(facts: list[tuple[str, str]], rng: np.random.Generator):
    """Each fact with the label of another row of its filing (the control of the fact
    recall: a number looked for in a row that is not its own). Facts of a filing with a
    single label are left out."""
    labels = sorted({lab for lab, _ in facts})
    out = []
    for lab, num in facts:
        others = [x for x in labels if x != lab]
        if others:
            out.append((others[int(rng.integers(len(others)))], num))
    return out


class SfdEdgarExperiment(Experiment):
    """One unit per filing: converted by ours and by every available baseline (timed);
    everything else is scored over the rows of every filing in :meth:`summarize` (the
    near-duplicate draw uses the run's seed, as before the port)."""

    Config, TIERS, METRICS = Config, TIERS, METRICS
    VOLATILE = ("seconds_*", "speedup_*", "mb_per_s*")
    UNIT_TABLE = None

    def grid(self, config):
        return [{"file": f} for f in config.files]

    def setup(self, config, ctx):
        return {"baselines": [b for b in config.baselines if b in available_baselines()]}

    def measure(self, unit, state, ctx):
        f = unit["file"]
        html = load_filing(f)
        t0 = time.perf_counter()
        ours = html_to_mmd(html)
        rows = [{"converter": "ours", "markdown": ours.markdown,
                 "seconds": time.perf_counter() - t0, "html": html, "_ours": ours}]
        for b in state["baselines"]:
            t0 = time.perf_counter()
            error = ""
            try:
                out = run_baseline(b, html)
            except Exception as exc:  # a baseline that crashes scores zero on that file
                out, error = "", f"{b} on {f}: {type(exc).__name__}"
            rows.append({"converter": b, "markdown": out, "error": error,
                         "seconds": time.perf_counter() - t0})
        return rows

    # ------------------------------------------------------------------ summary
    def _collect(self, table, cfg):
        baselines = [c for c in table.unique("converter") if c != "ours"]
        convs = ["ours", *baselines]
        outputs = {c: {r["file"]: r["markdown"] for r in table.where(converter=c)}
                   for c in convs}
        seconds = {c: float(sum(table.where(converter=c).column("seconds"))) for c in convs}
        html = {r["file"]: r["html"] for r in table.where(converter="ours")}
        ours = {r["file"]: r["_ours"] for r in table.where(converter="ours")}
        skipped = [b for b in cfg.baselines if b not in baselines]
        skipped += [r["error"] for r in table if r.get("error")]
        return baselines, convs, outputs, seconds, html, ours, skipped

    def summarize(self, table, config, ctx):
        cfg = config
        baselines, convs, outputs, seconds, html, ours, _ = self._collect(table, cfg)
        metrics: dict = {}

        # 1. table fidelity on the golden fixtures (our own hand-checked output: checks)
        gold_files = [f for f in cfg.files if f in GOLDEN]
        gold = {f: mmd_to_grids(load_golden(f)) for f in gold_files}
        per_table: dict[str, dict[str, np.ndarray]] = {"teds": {}, "cell_f1": {}}
        for c in convs:
            scores = []
            for f in gold_files:
                if not gold[f]:
                    continue
                pred = mmd_to_grids(outputs[c][f], colspan=(c == "ours"), rowspan=(c == "ours"))
                scores.extend(match_tables(pred, gold[f]))
            key = _key(c)
            metrics[f"teds_{key}"] = float(np.mean([s.teds for s in scores]))
            metrics[f"cell_f1_{key}"] = float(np.mean([s.cell_f1 for s in scores]))
            metrics[f"table_numeric_recall_{key}"] = float(
                np.mean([s.numeric_recall for s in scores]))
            per_table["teds"][c] = np.array([s.teds for s in scores])
            per_table["cell_f1"][c] = np.array([s.cell_f1 for s in scores])
        metrics["num_gold_tables"] = sum(len(g) for g in gold.values())

        # 2. iXBRL facts: an independent gold for numbers; the control looks each number
        # up in a row of another label
        facts = {f: ixbrl_facts(html[f]) for f in cfg.files}
        facts = {f: v for f, v in facts.items() if v}
        metrics["num_ixbrl_facts"] = sum(len(v) for v in facts.values())
        fact_hits: dict[str, list[float]] = {c: [] for c in convs}  # per filing
        for c in convs:
            key = _key(c)
            hit = tot = hit_t = 0.0
            for f, fl in facts.items():
                grids = mmd_to_grids(outputs[c][f], colspan=(c == "ours"), rowspan=(c == "ours"))
                fact_hits[c].append(fact_recall(grids, fl) * len(fl))
                hit += fact_hits[c][-1]
                hit_t += text_numeric_recall(outputs[c][f], [n for _, n in fl]) * len(fl)
                tot += len(fl)
            metrics[f"fact_recall_{key}"] = hit / tot if tot else float("nan")
            metrics[f"fact_text_recall_{key}"] = hit_t / tot if tot else float("nan")
        wrong_rng = np.random.default_rng([cfg.seed, 1])
        wrong_hits, wrong_counts = [], []
        for f, fl in facts.items():
            wrong = _wrong_labels(fl, wrong_rng)
            if wrong:
                grids = mmd_to_grids(outputs["ours"][f], colspan=True, rowspan=True)
                wrong_hits.append(fact_recall(grids, wrong) * len(wrong))
                wrong_counts.append(len(wrong))

        # 3. duplicated text, 4. tokens
        raw_tokens = {f: count_tokens(html[f]) for f in cfg.files}
        tokens = {c: {f: count_tokens(outputs[c][f]) for f in cfg.files} for c in convs}
        for c in convs:
            key = _key(c)
            metrics[f"duplication_{key}"] = float(np.mean(
                [duplication_rate(html[f], outputs[c][f]) for f in cfg.files]))
            metrics[f"tokens_{key}"] = sum(tokens[c].values())
            metrics[f"token_ratio_html_{key}"] = float(median(
                tokens[c][f] / raw_tokens[f] for f in cfg.files))
        metrics["tokens_raw_html"] = sum(raw_tokens.values())
        for b in baselines:
            metrics[f"token_ratio_vs_{_key(b)}"] = (
                metrics["tokens_ours"] / max(metrics[f"tokens_{_key(b)}"], 1))
        vs = [metrics[f"token_ratio_vs_{_key(b)}"] for b in baselines]
        metrics["token_ratio_vs_baselines_max"] = max(vs) if vs else float("nan")

        # margins over the baselines
        def margin(metric: str, names) -> float:
            names = [n for n in names if n in baselines]
            if not names:
                return float("nan")
            return metrics[f"{metric}_ours"] - max(metrics[f"{metric}_{_key(n)}"]
                                                   for n in names)

        metrics["cell_f1_margin_generic"] = margin("cell_f1", ("html2text", "markdownify"))
        metrics["cell_f1_margin_all"] = margin("cell_f1", baselines)
        metrics["teds_margin_all"] = margin("teds", baselines)
        metrics["fact_recall_margin_all"] = margin("fact_recall", baselines)
        intervals = _bootstrap_intervals(cfg, baselines, per_table, fact_hits,
                                         [len(v) for v in facts.values()], tokens, raw_tokens,
                                         wrong_hits, wrong_counts)
        for name, est in intervals.items():
            # the point estimate as the run computed it; the interval from the bootstrap
            value = metrics.get(name, est.value)
            metrics[name] = (est if math.isnan(est.value) else Estimate(
                value, min(est.lo, value), max(est.hi, value), est.method, est.level, est.n))

        # 5. near-duplicates on sections of the converted filings
        rng = np.random.default_rng(cfg.seed)
        sections = [s for f in cfg.files
                    for s in _sections(ours[f].markdown, cfg.min_section_words)]
        metrics.update(_dedup(sections, cfg, rng))

        # 6. checks
        metrics["golden_exact"] = float(np.mean(
            [ours[f].markdown == load_golden(f) for f in gold_files])) if gold_files else float(
            "nan")
        grids = [g for f in cfg.files for g in ours[f].tables]
        metrics["num_tables"] = len(grids)
        metrics["mmd_roundtrip"] = float(np.mean(
            [mmd_to_grids(_one(g))[0] == g for g in grids])) if grids else float("nan")
        metrics["html_roundtrip"] = float(np.mean(
            [table_to_grid(g.to_html()) == g for g in grids])) if grids else float("nan")
        metrics["deterministic"] = float(all(
            html_to_mmd(html[f]).markdown == ours[f].markdown for f in cfg.files[:4]))
        metrics["hidden_leak"] = float(_hidden_leak(html, ours))
        node = node_oracle_available()
        if node is None:
            metrics["markdown_it_agree"] = Estimate.missing(
                "node or the npm markdown-it oracle is not installed (make node-oracle)")
        else:
            agree = []
            for f in cfg.files:
                if not ours[f].tables:
                    continue
                rendered = oracle_grids(render_with_markdown_it(ours[f].markdown, node))
                agree.append(rendered == list(ours[f].tables))
            metrics["markdown_it_agree"] = float(np.mean(agree)) if agree else float("nan")

        total_mb = sum(len(h.encode("utf-8")) for h in html.values()) / 1e6
        for c in convs:
            metrics[f"seconds_{_key(c)}"] = seconds[c]
            if c != "ours":
                metrics[f"speedup_vs_{_key(c)}"] = seconds[c] / max(seconds["ours"], 1e-9)
        metrics["mb_per_s_ours"] = total_mb / max(seconds["ours"], 1e-9)
        # the abstract's corpus-level claims need EDGAR bulk data and the network
        for name in CORPUS_METRICS:
            metrics[name] = Estimate.missing(
                "needs EDGAR bulk data and network access (the corpus is not built here)")
        return metrics

    # ------------------------------------------------------------------ report
    def tables(self, table, summary, config):
        _, convs, _, _, html, ours, _ = self._collect(table, config)
        rows = []
        for c in convs:
            key = _key(c)
            rows.append({
                "converter": c,
                "teds": summary[f"teds_{key}"],
                "cell_f1": summary[f"cell_f1_{key}"],
                "table_numeric_recall": summary[f"table_numeric_recall_{key}"],
                "fact_recall": _value(summary[f"fact_recall_{key}"]),
                "fact_text_recall": summary[f"fact_text_recall_{key}"],
                "duplication": summary[f"duplication_{key}"],
                "tokens": summary[f"tokens_{key}"],
                "median_tokens_over_html": _value(summary[f"token_ratio_html_{key}"]),
            })
        per_file = []
        for f in config.files:
            toks = {f"{c}_tokens": count_tokens(r["markdown"])
                    for c in convs for r in table.where(file=f, converter=c)}
            per_file.append({"file": f, "html_tokens": count_tokens(html[f]), **toks,
                             "tables": len(ours[f].tables),
                             "warnings": "; ".join(ours[f].warnings)})
        return {"converters": rows, "files": per_file}

    def notes(self, table, summary, config):
        *_, skipped = self._collect(table, config)
        notes = [f"tokenizer: {tokenizer_name()}"]
        if skipped:
            notes.append("baselines skipped or failing: " + json.dumps(skipped))
        if node_oracle_available() is None:
            notes.append("markdown-it oracle not run: node or .cache/node missing "
                         "(make node-oracle)")
        return tuple(notes)


def _value(x) -> float:
    return x.value if isinstance(x, Estimate) else x


EXPERIMENT = SfdEdgarExperiment()
run = EXPERIMENT.run


def _one(grid) -> str:
    from .tables import grid_to_mmd

    return grid_to_mmd(grid)


_IX_HEADER = re.compile(r"<ix:header>(.*?)</ix:header>", re.S | re.I)


def _hidden_leak(html: dict[str, str], ours: dict) -> int:
    """How many hidden iXBRL texts (``ix:header`` content, not shown elsewhere) reach the output."""
    leaks = 0
    for f, h in html.items():
        visible = _IX_HEADER.sub("", h)
        for m in _IX_HEADER.finditer(h):
            for t in re.sub(r"<[^>]+>", "\n", m.group(1)).split("\n"):
                t = t.strip()
                if len(t) >= 8 and t in ours[f].markdown and t not in visible:
                    leaks += 1
    return leaks
