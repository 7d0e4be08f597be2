"""``neurips26-mcp-inject``: run an MCP server behind the fault-injecting stdio proxy.

Usage::

    neurips26-mcp-inject --config faults.yaml [--seed N] [--log faults.jsonl] -- <server command...>
    neurips26-mcp-inject --replay faults.jsonl -- <server command...>
    neurips26-mcp-inject --config faults.yaml --upstream http://127.0.0.1:8000/mcp \
        --listen 127.0.0.1:8001                      # Streamable HTTP: point clients at :8001
    neurips26-mcp-inject report faults.jsonl [--json]
    python -m neurips26.papers.mcp_injector.cli --config faults.yaml -- python server.py

Put this command in your agent's MCP server configuration in place of the server command
(stdio), or point the agent at the ``--listen`` address instead of the server's URL
(Streamable HTTP); neither the agent nor the server changes. Exit status: 0 normal end,
1 downstream server failure, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys

from .faults import FaultProfile, ProfileError
from .proxy import MAX_LINE, ProxyConfig, load_config, run_proxy

__all__ = ["main"]

PROG = "neurips26-mcp-inject"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [--config FILE | --replay LOG] [--seed N] [--log FILE] [--strict] "
              "(-- COMMAND [ARG ...] | --upstream URL [--listen HOST:PORT])",
        description="Fault-injecting stdio proxy for Model Context Protocol servers.",
        epilog=f"Summarise a log written with --log: {PROG} report LOG [--json] "
               "(calls, faults by mode, outcomes, retries, latency).",
    )
    p.add_argument(
        "--config", help="YAML, JSON or TOML fault configuration (omit for a transparent proxy)"
    )
    p.add_argument(
        "--replay",
        help="replay the faults of a JSONL log written by an earlier run (its last run), "
        "call for call, instead of the config's rules; the config still sets the log, "
        "connection label and strictness",
    )
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.add_argument("--log", help="override the config's JSONL fault log path (appended to)")
    p.add_argument(
        "--max-line-bytes",
        type=int,
        default=MAX_LINE,
        help="longest server line relayed; a longer one is answered with an error",
    )
    p.add_argument("--strict", action="store_true", help="rules must match a listed tool")
    p.add_argument("--upstream", help="front a Streamable HTTP MCP server at this URL instead "
                   "of a stdio command")
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT of the HTTP proxy "
                   "(with --upstream; port 0 picks a free one, printed on stderr)")
    return p


def _report(argv: list[str]) -> int:
    """``report LOG [--json]``: summarise a proxy log (calls, faults, retries, latency)."""
    import json

    from .calllog import format_summary, summarize_log

    p = argparse.ArgumentParser(prog=f"{PROG} report",
                                description="Summarise a JSONL log written with --log.")
    p.add_argument("log", help="the JSONL log")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        summary = summarize_log(args.log)
    except OSError as e:
        print(f"{PROG} report: error: cannot read {args.log!r}: {e.strerror or e}",
              file=sys.stderr)  # fmt: skip
        return 2
    except ValueError as e:
        print(f"{PROG} report: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary.to_dict()) if args.json else format_summary(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 downstream failure, 2 usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return _report(argv[1:])
    parser = _parser()
    if "--" in argv:
        cut = argv.index("--")
        opts, command = argv[:cut], argv[cut + 1 :]
    else:
        opts, command = argv, []
    try:
        args = parser.parse_args(opts)
    except SystemExit as e:  # argparse already printed the message
        return int(e.code or 0)
    if args.upstream is not None and command:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: give either --upstream URL or a command after '--', not both",
              file=sys.stderr)  # fmt: skip
        return 2
    if not command and args.upstream is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: no server command given after '--'", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config) if args.config else ProxyConfig(profile=FaultProfile())
    except ProfileError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    profile = cfg.profile
    if args.replay is not None:
        from .faults import FaultSchedule

        try:
            profile = FaultSchedule.from_log(args.replay)
        except OSError as e:
            print(f"{PROG}: error: --replay: cannot read {args.replay!r}: {e.strerror or e}",
                  file=sys.stderr)  # fmt: skip
            return 2
        except (ValueError, KeyError) as e:
            print(f"{PROG}: error: --replay: {e}", file=sys.stderr)
            return 2
    seed = cfg.seed if args.seed is None else args.seed
    if seed < 0:
        print(f"{PROG}: error: --seed must be >= 0, got {seed}", file=sys.stderr)
        return 2
    if args.max_line_bytes < 1:
        print(f"{PROG}: error: --max-line-bytes must be >= 1", file=sys.stderr)
        return 2
    if args.upstream is not None:
        from .http_proxy import run_http_proxy

        try:
            return run_http_proxy(
                args.upstream,
                profile,
                listen=args.listen,
                seed=seed,
                log_path=args.log if args.log is not None else cfg.log_path,
                strict=cfg.strict or args.strict,
                connection="http" if cfg.connection == "stdio" else cfg.connection,
            )
        except (ProfileError, ValueError, TypeError) as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # pragma: no cover
            return 130
    try:
        return run_proxy(
            command,
            profile,
            seed=seed,
            log_path=args.log if args.log is not None else cfg.log_path,
            strict=cfg.strict or args.strict,
            connection=cfg.connection,
            max_line=args.max_line_bytes,
        )
    except ProfileError as e:  # e.g. an unwritable log
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":
    sys.exit(main())
