"""The ``neurips26`` command: list | info | run | reproduce | report.

Heavy modules (numpy, the experiments) are imported inside the commands that need
them, so ``neurips26 list`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import signal
import sys
import textwrap
import threading
import time
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
    test of it, our value with its interval, the control, the verdict (and why a claim
    was not run or not decided). Claim ids are never cut."""
    from neurips26.report.pages import claim_cells

    rows = [("claim", "kind", "paper", "metric and test", "ours", "control", "verdict")]
    for c in claims:
        cells = claim_cells(c)
        verdict = c.verdict + (f" ({cells['why']})" if cells["why"] else "")
        ours = cells["ours"] + (f" ({cells['interval']})" if cells["interval"] else "")
        rows.append((c.id, c.kind, c.paper_value, cells["test"], ours, cells["control"],
                     verdict))
    limits = (None, 5, 30, 48, 48, 40)
    widths = [max(len(r[i]) for r in rows) if lim is None else
              min(lim, max(len(r[i]) for r in rows)) for i, lim in enumerate(limits)] + [0]
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


def _store(args, *, create: bool):
    """The store of ``--store``; ``create=False`` (list, report) creates nothing."""
    from neurips26.store import Store

    return Store(args.store, create=create)


def _report_problems(store) -> None:
    """Say on stderr which stored rows were skipped because they do not decode."""
    for problem in store.problems:
        print(f"neurips26: warning: skipped a damaged row of the store: {problem}", file=sys.stderr)


def cmd_list(args) -> int:
    from neurips26.summary import counts, counts_text, shown_run

    store = _store(args, create=False)
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
                # each claim in run --json's shape (ClaimResult.to_dict), kind as now declared
                "claims": [{**c.to_dict(), "kind": paper.kinds.get(c.id, c.kind)}
                           for c in r.claims],
                "note": shown.note,
            }
        out.append(
            {
                "slug": paper.slug,
                "title": paper.title,
                "link": paper.link,
                "field": paper.field,
                "grade": paper.grade,
                "claims": [
                    {"id": c.id, "kind": c.kind, "tiers": list(c.tiers), "metric": c.metric,
                     "control": c.control, "no_control": c.no_control,
                     "diagnostics": list(c.diagnostics)}
                    for c in paper.claims
                ],
                "shown": item,
            }
        )
    _report_problems(store)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    width = max(len(item["slug"]) for item in out) + 2
    pad = " " * (width + 3)
    for item in out:
        shown = item["shown"]
        print(f"{item['slug']:<{width}} {item['grade']}  {item['title']}")
        print(f"{pad}{item['field']}" + (f" · {item['link']}" if item["link"] else ""))
        if shown is None:
            n_paper = sum(c["kind"] == "paper" for c in item["claims"])
            n_check = len(item["claims"]) - n_paper
            print(f"{pad}not run: {n_paper} paper claims, {n_check} checks "
                  f"(neurips26 run {item['slug']})")
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


def config_fields(slug: str) -> list[dict]:
    """Every config key of a paper: name, type, default per tier, range and help."""
    import dataclasses
    import typing

    from neurips26.common.experiment import config_to_dict

    experiment = get_paper(slug).experiment()
    tiers = {t: config_to_dict(experiment.TIERS[t]) for t in TIERS}
    cls = type(experiment.TIERS["small"])
    hints = typing.get_type_hints(cls)
    documented = _attribute_docs(cls.__doc__ or "")
    out = []
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata or {})
        item = {
            "name": f.name,
            "type": _type_name(hints.get(f.name, f.type)),
            "defaults": {t: tiers[t][f.name] for t in TIERS},
            "help": meta.get("help") or documented.get(f.name, ""),
        }
        for key in ("min", "max", "choices"):
            if meta.get(key) is not None:
                item[key] = list(meta[key]) if key == "choices" else meta[key]
        out.append(item)
    return out


def _type_name(hint) -> str:
    text = getattr(hint, "__name__", None) if not getattr(hint, "__args__", None) else None
    return text or str(hint).replace("typing.", "")


def _attribute_docs(doc: str) -> dict[str, str]:
    """The numpydoc ``Attributes`` entries of a Config docstring, by field name."""
    lines = textwrap.dedent("\n".join(doc.splitlines()[1:])).splitlines()
    out: dict[str, str] = {}
    names: list[str] = []
    inside = False
    for n, line in enumerate(lines):
        if line.strip() in ("Attributes", "Parameters") and n + 1 < len(lines) and set(
            lines[n + 1].strip()
        ) == {"-"}:
            inside = True
            continue
        if not inside or set(line.strip()) == {"-"}:
            continue
        if line and not line.startswith(" "):
            names = [x.strip() for x in line.split(":")[0].split(",")]
            for name in names:
                out.setdefault(name, "")
        elif line.strip() and names:
            for name in names:
                out[name] = (out[name] + " " + line.strip()).strip()
    return out


def cmd_info(args) -> int:
    paper = get_paper(check_slug(args.slug))
    fields = config_fields(paper.slug)
    if args.json:
        out = {
            "slug": paper.slug,
            "title": paper.title,
            "link": paper.link,
            "field": paper.field,
            "grade": paper.grade,
            "summary": paper.summary,
            "claims": [
                {
                    "id": c.id,
                    "kind": c.kind,
                    "statement": c.statement,
                    "paper_value": c.paper_value,
                    "test": c.describe(),
                    "tiers": list(c.tiers),
                }
                for c in paper.claims
            ],
            "tiers": dict(paper.tiers),
            "deviations": list(paper.deviations),
            "resources": dataclasses.asdict(paper.resources),
            "paper_hours": paper.paper_hours,
            "config": fields,
        }
        print(json.dumps(out, indent=2, default=str))
        return 0
    wrap = textwrap.TextWrapper(width=88, initial_indent="  ", subsequent_indent="  ")
    print(f"{paper.slug}: {paper.title}")
    print(f"  {paper.field} · grade {paper.grade}" + (f" · {paper.link}" if paper.link else ""))
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
    print("\nConfig (--set KEY=VALUE; defaults per tier smoke / small / paper)")
    help_wrap = textwrap.TextWrapper(width=88, initial_indent="      ", subsequent_indent="      ")
    for item in fields:
        values = [json.dumps(item["defaults"][t]) for t in TIERS]
        shown = values[0] if len(set(values)) == 1 else " / ".join(values)
        bounds = []
        if "min" in item:
            bounds.append(f">= {item['min']:g}")
        if "max" in item:
            bounds.append(f"<= {item['max']:g}")
        if "choices" in item:
            bounds.append("one of " + ", ".join(map(str, item["choices"])))
        extra = f" ({'; '.join(bounds)})" if bounds else ""
        print(f"  {item['name']}: {item['type']} = {shown}{extra}")
        if item["help"]:
            print(help_wrap.fill(item["help"]))
    return 0


def paper_tier_hours(paper) -> float | None:
    """Expected hours of the paper tier: the declared figure, else read from its tier text.

    A tier text that says "hours" counts as more than one hour; "minutes" as less.
    ``None`` when nothing says.
    """
    if paper.paper_hours is not None:
        return paper.paper_hours
    text = dict(paper.tiers)["paper"].lower()
    if re.search(r"\bhours?\b", text):
        return 2.0
    if re.search(r"\b(min|minutes?)\b", text):
        return 0.5
    return None


def _paper_tier_needs_yes(paper) -> bool:
    """Whether ``--tier paper`` of ``paper`` runs only with ``--yes``: expected to take
    over an hour, or an unknown time (``run`` and ``reproduce`` alike)."""
    hours = paper_tier_hours(paper)
    return hours is None or hours > 1


def _check_paper_tier(paper, yes: bool) -> None:
    hours = paper_tier_hours(paper)
    text = dict(paper.tiers)["paper"]
    if _paper_tier_needs_yes(paper) and not yes:
        expected = "more than an hour" if hours is not None else "an unknown time"
        raise UsageError(
            f"the paper tier of {paper.slug} is expected to take {expected} ({text}); "
            "pass --yes to run it"
        )
    cost = "unknown" if hours is None else ("over an hour" if hours > 1 else "under an hour")
    print(f"neurips26: note: paper tier of {paper.slug}, expected cost {cost}: {text}",
          file=sys.stderr)


@contextlib.contextmanager
def _progress(label: str, enabled: bool):
    """Progress on stderr while the block runs (a terminal only): elapsed time, and the
    experiment's current phase with its count when it marks phases
    (:mod:`neurips26.common.progress`)."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    from tqdm import tqdm

    from neurips26.common.progress import listen

    plain = "{desc}: {elapsed} elapsed"
    counted = "{desc}: {n_fmt}/{total_fmt} {bar:20} {elapsed} elapsed"
    bar = tqdm(desc=label, bar_format=plain, file=sys.stderr, leave=False)
    lock = threading.Lock()
    done = threading.Event()
    last = [0.0]

    def on_phase(p) -> None:
        now = time.monotonic()
        if p.done and not p.finished and now - last[0] < 0.2:
            bar.n = p.done  # cheap; drawn at the next refresh
            return
        last[0] = now
        with lock:
            if p.finished:
                bar.bar_format, bar.total, bar.n = plain, None, 0
                bar.set_description_str(label, refresh=False)
            else:
                bar.bar_format = counted if p.total else plain
                bar.total = p.total
                bar.n = p.done
                bar.set_description_str(f"{label} · {p.name}", refresh=False)
            bar.refresh()

    def tick() -> None:
        while not done.wait(1.0):
            with lock:
                bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        with listen(on_phase):
            yield
    finally:
        done.set()
        thread.join()
        bar.close()


def cmd_run(args) -> int:
    from neurips26.common.experiment import ConfigError, parse_set_args
    from neurips26.runner import check_device, resolve_config, run_paper
    from neurips26.store import StoreError

    slug = check_slug(args.slug)
    try:
        overrides = parse_set_args(args.set)
        resolved = resolve_config(slug, args.tier, args.seed, overrides)  # bad values first
        check_device(slug, args.device)
    except ConfigError as err:
        raise UsageError(str(err)) from err
    if args.tier == "paper":
        _check_paper_tier(get_paper(slug), args.yes)
    store = _store(args, create=True)  # a store that cannot be written fails before the run
    # With --json, stdout carries one JSON object: whatever the experiment or a library it
    # loads prints (a model loader's "Loaded pretrained weights", say) goes to stderr.
    quiet_stdout = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    with _progress(f"{slug} [{args.tier}]", not args.quiet), quiet_stdout:
        record = run_paper(slug, tier=args.tier, seed=args.seed, overrides=overrides,
                           device=args.device, resolved=resolved)
    try:
        run_id = store.save(record)
    except StoreError as err:
        kept = store.keep_unsaved(record)
        where = f"the run is kept in {kept}" if kept else "no file could hold it either"
        print(f"neurips26: error: {err}; {where}", file=sys.stderr)
        return 1
    if args.json:
        out = record.to_json()
        out["run_id"] = run_id
        print(json.dumps(out, indent=2, default=str))
    else:
        reads = record.cache_reads or {}
        cached = ""
        if reads.get("hits"):
            cached = (f" · read {reads['hits']} cache entries that took "
                      f"{reads.get('cpu_seconds', 0.0):.1f} s CPU to compute"
                      + (f" ({reads['unrecorded']} of unrecorded cost)"
                         if reads.get("unrecorded") else ""))
        print(
            f"{slug} · tier {record.tier} · seed {record.seed} · {record.status} · "
            f"{record.wall_seconds:.1f} s ({record.cpu_seconds:.1f} s CPU) · "
            f"peak {record.peak_memory_mb:.0f} MB · run {run_id}{cached}"
        )
        if record.error:
            print(record.error, file=sys.stderr)
        print(claims_table(record.claims))
        for note in record.notes:
            print(f"note: {note}")
    return 0 if record.status == "ok" else 1


def cmd_reproduce(args) -> int:
    from tqdm import tqdm

    from neurips26.common.experiment import ConfigError, check_seed
    from neurips26.runner import check_device, code_version, run_many
    from neurips26.store import STORED, StoreError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {args.timeout}")
    try:
        check_seed(args.seed)
    except ConfigError as err:
        raise UsageError(str(err)) from err
    if args.backend == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise UsageError("--backend ray needs Ray: pip install 'neurips26[ray]'")
    elif args.ray_address:
        raise UsageError("--ray-address needs --backend ray")
    slugs = [check_slug(s) for s in args.only] if args.only else list(SLUGS)
    if args.tier == "paper" and not args.yes:
        # the gate of `run --tier paper`, paper by paper
        long = [s for s in slugs if _paper_tier_needs_yes(get_paper(s))]
        if long:
            shown = ", ".join(long[:5]) + (f" and {len(long) - 5} more" if len(long) > 5 else "")
            raise UsageError(
                f"--tier paper: {len(long)} of the {len(slugs)} paper(s) chosen are expected "
                f"to take more than an hour or an unknown time ({shown}); pass --yes to "
                "start them, or --only SLUG to pick papers that take under an hour")
    if args.device == "cuda":
        # Papers that declare no GPU run on the CPU; the device is checked once, here.
        gpu_slugs = [s for s in slugs if get_paper(s).resources.gpu > 0]
        if not gpu_slugs:
            raise UsageError("--device cuda: none of these papers declares a GPU")
        try:
            check_device(gpu_slugs[0], "cuda")
        except ConfigError as err:
            raise UsageError(str(err)) from err
    store = _store(args, create=True)
    versions = {slug: code_version(slug) for slug in slugs}

    def stored(slug: str) -> bool:
        return not args.force and store.find(slug, args.tier, args.seed, versions[slug]) is not None

    todo = []
    for slug in slugs:
        if stored(slug):
            print(
                f"skip {slug}: already stored for tier {args.tier}, seed {args.seed} and this "
                "code version (--force reruns)",
                file=sys.stderr,
            )
        else:
            todo.append(slug)
    failed: list[str] = []
    leased: set[str] = set()
    bar = tqdm(total=len(todo), desc=f"reproduce [{args.tier}]", unit="paper", file=sys.stderr)

    def should_start(slug: str) -> bool:
        # Checked again right before the start: another reproduce may have stored it or
        # be running it now (its lease), so two processes on one store share the work.
        # One transaction checks the store and takes the lease (no check-then-lease race).
        try:
            holder = store.claim(slug, args.tier, args.seed, versions[slug],
                                 unless_stored=not args.force)
        except StoreError as err:
            bar.write(f"{slug}: not run: {err}", file=sys.stderr)
            failed.append(slug)
            bar.update(1)
            return False
        if holder == STORED:
            bar.write(f"skip {slug}: stored by another process meanwhile", file=sys.stderr)
            bar.update(1)
            return False
        if holder is not None and not args.force:
            bar.write(f"skip {slug}: being run by another reproduce ({holder})", file=sys.stderr)
            bar.update(1)
            return False
        leased.add(slug)
        return True

    def done(record) -> None:
        from neurips26.summary import run_line

        try:
            store.save(record)
        except StoreError as err:
            kept = store.keep_unsaved(record)
            where = f"kept in {kept}" if kept else "no file could hold it either"
            bar.write(f"{record.slug}: not saved: {err}; {where}", file=sys.stderr)
            failed.append(record.slug)
        else:
            state = run_line(record, get_paper(record.slug))
            bar.write(f"{record.slug}: {state} ({record.wall_seconds:.1f} s)", file=sys.stderr)
            if record.status != "ok":
                failed.append(record.slug)
        finally:
            _release(store, record.slug, args, versions, leased)
        bar.update(1)

    try:
        run_many(
            todo,
            tier=args.tier,
            seed=args.seed,
            jobs=args.jobs,
            on_done=done,
            on_start=lambda s: bar.set_postfix_str(s),
            should_start=should_start,
            timeout=args.timeout,
            backend=args.backend,
            ray_address=args.ray_address,
            device=args.device,
        )
    finally:
        bar.close()
        for slug in list(leased):
            _release(store, slug, args, versions, leased)
    if failed:
        print(
            f"{len(failed)} paper(s) failed: {', '.join(failed)} (tracebacks in the store and "
            "the report)",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _release(store, slug, args, versions, leased) -> None:
    if slug in leased:
        leased.discard(slug)
        with contextlib.suppress(Exception):  # a lease left behind is taken over later
            store.release(slug, args.tier, args.seed, versions[slug])


def cmd_report(args) -> int:
    from neurips26.report import update_readme, write_report

    store = _store(args, create=False)
    try:
        index = write_report(store, args.out)
        _report_problems(store)
        print(f"report written to {index}")
        if args.readme:
            try:
                update_readme(args.readme, args.out)
            except ValueError as err:
                raise UsageError(str(err)) from err
            print(f"paper table of {args.readme} updated")
    except OSError as err:
        where = err.filename or args.out
        raise UsageError(
            f"cannot write the report to {where} ({err.strerror or err}); give another --out"
        ) from err
    return 0


def build_parser() -> argparse.ArgumentParser:
    # --store is accepted before and after the subcommand; after wins.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        help="results database (default: $NEURIPS26_STORE or runs/neurips26.sqlite)",
    )
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

    p = sub.add_parser("list", parents=[common], help="every registered paper and its verdicts")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "info", parents=[common], help="what a paper proposes, its claims, tiers and config"
    )
    p.add_argument("slug")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", parents=[common], help="run one reproduction and store it")
    p.add_argument("slug")
    p.add_argument("--tier", default="small", help=f"one of {', '.join(TIERS)} (default small)")
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: the tier's, 0)"
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a config field (repeatable)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress indication on stderr")
    p.add_argument("--yes", action="store_true",
                   help="run a paper tier expected to take hours or of unknown cost")
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu",
        help="where the paper computes (cuda only for papers that declare a GPU)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "reproduce", parents=[common], help="run every paper (skipping runs already stored)"
    )
    p.add_argument("--tier", default="small", help=f"one of {', '.join(TIERS)} (default small)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="+", metavar="SLUG", help="only these papers")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="cores used at once (local, default 1) or tasks in flight (ray, default its CPUs)",
    )
    p.add_argument("--force", action="store_true", help="rerun even if stored")
    p.add_argument("--yes", action="store_true",
                   help="with --tier paper: start paper tiers expected to take over an hour "
                        "or an unknown time")
    p.add_argument(
        "--backend", choices=("local", "ray"), default="local",
        help="local: a process per paper (default); ray: a Ray task per paper",
    )
    p.add_argument(
        "--ray-address", default=None, metavar="ADDRESS",
        help="Ray cluster to use (default $RAY_ADDRESS, else a local Ray started here)",
    )
    p.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS",
        help="time limit per paper; a run over it is stopped and recorded as failed",
    )
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu",
        help="cuda: papers that declare a GPU run on it, the others on the CPU",
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser(
        "report", parents=[common], help="write the HTML and Markdown report from the store"
    )
    p.add_argument("--out", default="report", help="output folder (default report/)")
    p.add_argument("--readme", metavar="PATH", help="also rewrite the paper table of this README")
    p.set_defaults(func=cmd_report)
    return parser


INTERRUPTED_MESSAGE = (
    "interrupted; every run that had finished is in the store, run the same command again to "
    "resume"
)
#: What an interrupted ``run`` says: its one run had not finished, so nothing was stored.
INTERRUPTED_RUN_MESSAGE = "interrupted; the run had not finished and nothing was stored"



def main(argv: Sequence[str] | None = None) -> int:
    from neurips26.runner import Interrupted
    from neurips26.store import StoreError

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
    except StoreError as err:
        print(f"neurips26: error: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Interrupted) as err:
        signum = getattr(err, "signum", signal.SIGINT)
        if args.command == "reproduce":
            message = INTERRUPTED_MESSAGE
        elif args.command == "run":
            message = INTERRUPTED_RUN_MESSAGE
        else:
            message = "interrupted"
        print(f"\nneurips26: {message}", file=sys.stderr)
        return 128 + int(signum)
    except BrokenPipeError:
        # The reader went away (`neurips26 list | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
