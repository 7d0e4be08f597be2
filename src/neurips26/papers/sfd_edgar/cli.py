"""``neurips26-sfd convert FILE|DIR -o OUT``: SEC filings to MultiMarkdown from the shell.

A directory is walked for ``.htm``, ``.html`` and ``.txt`` files, converted in a process
pool as the results stream in (a progress bar on stderr), and written under ``OUT`` with the
same relative paths and a ``.md`` suffix. A file that cannot be converted (a PDF, bytes in
no supported charset) is skipped and reported; ``OUT/conversion_report.jsonl`` lists every
file with its warnings.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from itertools import islice
from pathlib import Path

SUFFIXES = (".htm", ".html", ".txt", ".xml")


def _convert_one(path: str, out: str, options: dict) -> dict:
    from .convert import EdgarConverter

    try:
        res = EdgarConverter(**options).convert_file(path)
    except (ValueError, OSError) as exc:
        return {"file": path, "ok": False, "error": str(exc)}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(res.markdown, encoding="utf-8")
    return {"file": path, "ok": True, "out": out, "tables": res.stats.get("num_tables", 0),
            "warnings": list(res.warnings)}


def _jobs(path: Path, out: Path) -> list[tuple[str, str]]:
    if path.is_file():
        target = out / (path.stem + ".md") if out.is_dir() or not out.suffix else out
        return [(str(path), str(target))]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    return [(str(p), str((out / p.relative_to(path)).with_suffix(".md"))) for p in files]


def convert_command(args: argparse.Namespace) -> int:
    """Run ``convert``; returns the exit status (1 if any file failed)."""
    from tqdm import tqdm

    src = Path(args.input)
    if not src.exists():
        raise SystemExit(f"neurips26-sfd: input {str(src)!r} does not exist")
    if args.jobs < 1:
        raise SystemExit(f"neurips26-sfd: --jobs must be >= 1, got {args.jobs}")
    out = Path(args.output)
    jobs = _jobs(src, out)
    if not jobs:
        raise SystemExit(f"neurips26-sfd: no {'/'.join(SUFFIXES)} files under {str(src)!r}")
    report_dir = out if (out.is_dir() or not out.suffix) else out.parent
    inputs = {Path(f).resolve() for f, _ in jobs}
    clash = sorted(str(o) for _, o in jobs if Path(o).resolve() in inputs)
    if (report_dir / "conversion_report.jsonl").resolve() in inputs:
        clash.append(str(report_dir / "conversion_report.jsonl"))
    if clash:
        raise SystemExit(
            f"neurips26-sfd: refusing to overwrite an input with the output: {clash[0]}"
            + (f" and {len(clash) - 1} more" if len(clash) > 1 else "")
            + "; give -o a path that is not an input"
        )
    options = {"currency": args.currency, "rowspan": args.rowspan,
               "detect_headings": not args.no_headings, "strict": args.strict}
    results = []
    bar = tqdm(total=len(jobs), unit="filing", disable=args.quiet, file=sys.stderr)
    if args.jobs == 1 or len(jobs) == 1:
        for f, o in jobs:
            results.append(_convert_one(f, o, options))
            bar.update()
    else:
        # stream: at most 4 filings per worker in flight, results taken as they finish
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            pending = iter(jobs)
            inflight = {pool.submit(_convert_one, f, o, options)
                        for f, o in islice(pending, 4 * args.jobs)}
            while inflight:
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    results.append(fut.result())
                    bar.update()
                for f, o in islice(pending, len(done)):
                    inflight.add(pool.submit(_convert_one, f, o, options))
    bar.close()
    failed = [r for r in results if not r["ok"]]
    report_dir.mkdir(parents=True, exist_ok=True)
    with open(report_dir / "conversion_report.jsonl", "w", encoding="utf-8") as fh:
        for r in sorted(results, key=lambda r: r["file"]):
            fh.write(json.dumps(r) + "\n")
    print(f"converted {len(results) - len(failed)} of {len(results)} filings into {out}",
          file=sys.stderr)
    for r in failed:
        print(f"skipped {r['file']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neurips26-sfd", description="SEC EDGAR filings to layout-faithful MultiMarkdown."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert a filing or a directory of filings")
    conv.add_argument("input", help="a filing (.htm/.html/.txt) or a directory of them")
    conv.add_argument("-o", "--output", required=True,
                      help="output directory (or a .md file for a single input)")
    conv.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default 2)")
    conv.add_argument("--currency", choices=("attach", "drop", "column"), default="attach")
    conv.add_argument("--rowspan", choices=("mmd6", "empty"), default="mmd6")
    conv.add_argument("--no-headings", action="store_true", help="do not promote headings")
    conv.add_argument("--strict", action="store_true", help="fail on malformed tables")
    conv.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``neurips26-sfd``."""
    args = build_parser().parse_args(argv)
    return convert_command(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
