"""The ``neurips26`` command: list | info | run | reproduce | report.

Heavy modules (numpy, the experiments) are imported inside the commands that need
them, so ``neurips26 list`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence

from neurips26 import __version__
from neurips26.registry import (
    SLUGS,
    TIERS,
    UnknownPaperError,
    all_papers,
    check_slug,
    get_paper,
)


class UsageError(Exception):
    """Bad input at the command line: printed as one line, exit status 2."""


def claims_table(claims) -> str:
    """A plain-text table of claim results: kind, the paper's figure, the metric and our
    test of it, our value, the verdict (and why a claim was not run)."""
    from neurips26.report.pages import claim_cells

    rows = [("claim", "kind", "paper", "metric and test", "ours", "verdict")]
    for c in claims:
        cells = claim_cells(c)
        verdict = c.verdict + (f" ({cells['why']})" if cells["why"] else "")
        rows.append((c.id, c.kind, c.paper_value, cells["test"], cells["ours"], verdict))
    limits = (28, 5, 36, 60, 24)
    widths = [min(lim, max(len(r[i]) for r in rows)) for i, lim in enumerate(limits)] + [0]
    widths[-1] = max(len(r[-1]) for r in rows)  # the verdict and its reason, never cut
    lines = []
    for n, row in enumerate(rows):
        cells = [
            cell if len(cell) <= widths[i] else cell[: widths[i] - 1] + "…"
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _store(args):
    from neurips26.store import Store

    return Store(args.store)


def cmd_list(args) -> int:
    from neurips26.summary import counts, counts_text, shown_run

    store = _store(args)
    out = []
    for paper in all_papers():
        shown = shown_run(store, paper.slug)
        item = None
        if shown.stored is not None:
            r = shown.stored.record
            item = {
                "run_id": shown.stored.run_id,
                "tier": r.tier,
                "status": r.status,
                "created_at": r.created_at,
                "counts": counts(r, paper) if r.status == "ok" else None,
                "claims": {
                    c.id: {
                        "verdict": c.verdict,
                        "kind": paper.kinds.get(c.id, c.kind),
                        "tiers": list(c.tiers),
                        "reason": c.reason,
                    }
                    for c in r.claims
                },
                "note": shown.note,
            }
        out.append(
            {
                "slug": paper.slug,
                "title": paper.title,
                "source": paper.seed,
                "paragraph": paper.paragraph,
                "field": paper.field,
                "grade": paper.grade,
                "claims": {
                    c.id: {"kind": c.kind, "tiers": list(c.tiers), "metric": c.metric}
                    for c in paper.claims
                },
                "shown": item,
            }
        )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    width = max(len(item["slug"]) for item in out) + 2
    pad = " " * (width + 3)
    for item in out:
        shown = item["shown"]
        print(f"{item['slug']:<{width}} {item['grade']}  {item['title']}")
        print(f"{pad}{item['source']} ¶{item['paragraph']} · {item['field']}")
        if shown is None:
            print(f"{pad}not run")
        elif shown["status"] != "ok":
            print(f"{pad}[{shown['tier']}] run failed (no successful run stored)")
        else:
            c = shown["counts"]
            print(f"{pad}[{shown['tier']}] paper claims: {counts_text(c['paper'])}")
            if sum(c["check"].values()):
                print(f"{pad}{' ' * (len(shown['tier']) + 3)}checks: {counts_text(c['check'])}")
        if shown is not None and shown["note"]:
            print(f"{pad}note: {shown['note']}")
    return 0


def cmd_info(args) -> int:
    paper = get_paper(check_slug(args.slug))
    wrap = textwrap.TextWrapper(width=88, initial_indent="  ", subsequent_indent="  ")
    print(f"{paper.slug}: {paper.title}")
    print(f"  seed {paper.seed}, paragraph {paper.paragraph} · {paper.field} · grade {paper.grade}")
    print("\nWhat it proposes")
    print(wrap.fill(paper.summary))
    print("\nClaims")
    for c in paper.claims:
        print(wrap.fill(f"[{c.id}] {c.statement} (paper: {c.paper_value})"))
        print(f"      test: {c.describe()}; tiers: {', '.join(c.tiers)}")
    print("\nTiers")
    for tier, text in paper.tiers:
        print(wrap.fill(f"{tier}: {text}"))
    print("\nDeviations from the paper")
    for d in paper.deviations:
        print(wrap.fill(f"- {d}"))
    return 0


def cmd_run(args) -> int:
    from neurips26.common.experiment import ConfigError, parse_set_args
    from neurips26.runner import run_paper

    slug = check_slug(args.slug)
    try:
        overrides = parse_set_args(args.set)
        record = run_paper(slug, tier=args.tier, seed=args.seed, overrides=overrides)
    except ConfigError as err:
        raise UsageError(str(err)) from err
    store = _store(args)
    run_id = store.save(record)
    if args.json:
        out = record.to_json()
        out["run_id"] = run_id
        print(json.dumps(out, indent=2, default=str))
    else:
        print(
            f"{slug} · tier {record.tier} · seed {record.seed} · {record.status} · "
            f"{record.wall_seconds:.1f} s ({record.cpu_seconds:.1f} s CPU) · "
            f"peak {record.peak_memory_mb:.0f} MB · run {run_id}"
        )
        if record.error:
            print(record.error, file=sys.stderr)
        print(claims_table(record.claims))
        for note in record.notes:
            print(f"note: {note}")
    return 0 if record.status == "ok" else 1


def cmd_reproduce(args) -> int:
    from tqdm import tqdm

    from neurips26.runner import code_version, run_many

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    slugs = [check_slug(s) for s in args.only] if args.only else list(SLUGS)
    store = _store(args)
    todo = []
    for slug in slugs:
        if not args.force and store.find(slug, args.tier, args.seed, code_version(slug)):
            print(
                f"skip {slug}: already stored for tier {args.tier}, seed {args.seed} and this "
                "code version (--force reruns)",
                file=sys.stderr,
            )
        else:
            todo.append(slug)
    failed: list[str] = []
    bar = tqdm(total=len(todo), desc=f"reproduce [{args.tier}]", unit="paper", file=sys.stderr)

    def done(record) -> None:
        from neurips26.summary import run_line

        store.save(record)
        state = run_line(record, get_paper(record.slug))
        bar.write(f"{record.slug}: {state} ({record.wall_seconds:.1f} s)", file=sys.stderr)
        if record.status != "ok":
            failed.append(record.slug)
        bar.update(1)

    run_many(
        todo,
        tier=args.tier,
        seed=args.seed,
        jobs=args.jobs,
        on_done=done,
        on_start=lambda s: bar.set_postfix_str(s),
    )
    bar.close()
    if failed:
        print(
            f"{len(failed)} paper(s) failed: {', '.join(failed)} (tracebacks in the store and "
            "the report)",
            file=sys.stderr,
        )
    return 1 if failed else 0


def cmd_report(args) -> int:
    from neurips26.report import update_readme, write_report

    index = write_report(_store(args), args.out)
    print(f"report written to {index}")
    if args.readme:
        update_readme(args.readme, args.out)
        print(f"paper table of {args.readme} updated")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neurips26",
        description="NeurIPS 2026 papers as working software: list, run and report reproductions.",
    )
    parser.add_argument("--version", action="version", version=f"neurips26 {__version__}")
    parser.add_argument(
        "--store",
        default=None,
        help="results database (default: $NEURIPS26_STORE or runs/neurips26.sqlite)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="every registered paper and its latest verdicts")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("info", help="what a paper proposes, its claims, tiers and deviations")
    p.add_argument("slug")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", help="run one reproduction and store it")
    p.add_argument("slug")
    p.add_argument("--tier", default="small", help=f"one of {', '.join(TIERS)} (default small)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a config field (repeatable)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reproduce", help="run every paper (skipping runs already stored)")
    p.add_argument("--tier", default="small", help=f"one of {', '.join(TIERS)} (default small)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="+", metavar="SLUG", help="only these papers")
    p.add_argument("--jobs", type=int, default=1, help="papers run at once (default 1)")
    p.add_argument("--force", action="store_true", help="rerun even if stored")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("report", help="write the HTML and Markdown report from the store")
    p.add_argument("--out", default="report", help="output folder (default report/)")
    p.add_argument("--readme", metavar="PATH", help="also rewrite the paper table of this README")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "tier", None) is not None and args.tier not in TIERS:
        print(
            f"neurips26: error: unknown tier {args.tier!r}; valid tiers: {', '.join(TIERS)}",
            file=sys.stderr,
        )
        return 2
    try:
        return args.func(args)
    except (UsageError, UnknownPaperError) as err:
        print(f"neurips26: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
