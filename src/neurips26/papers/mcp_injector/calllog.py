"""Read a proxy's JSONL log back: calls, faults by mode, outcomes, retries, latency.

The stdio proxy appends one ``kind = "call"`` record per ``tools/call`` (time, connection,
request id, tool, a hash of the arguments, the fault applied, the outcome the client saw,
the latency in milliseconds) beside its ``kind = "fault"`` and ``kind = "anomaly"``
records, after a ``kind = "start"`` marker per proxy start. :func:`summarize_log` turns a
log into a :class:`LogSummary`; ``neurips26-mcp-inject report LOG`` prints it.

A *retry* is a call whose (connection, tool, argument hash) an earlier call in the same
proxy run had and whose last such call did not succeed (its outcome was not ``ok``): the
client asked again after a failure. Asking the same thing again after a success is a
repeated call, not a retry. Calls that were never answered (``unanswered``,
``no_response``, ``disconnected``) carry no latency and are left out of the percentiles.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LogSummary", "format_summary", "read_log", "summarize_log"]


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Every JSON record of a JSONL log (blank lines skipped).

    Raises
    ------
    ValueError
        Naming the file and line of a line that is not a JSON object.
    OSError
        When the file cannot be read.
    """
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"log {str(path)!r} line {n}: not JSON: {e}") from None
            if not isinstance(rec, dict):
                raise ValueError(f"log {str(path)!r} line {n}: not a JSON object")
            out.append(rec)
    return out


@dataclass(frozen=True)
class LogSummary:
    """What a proxy log says about the calls it relayed.

    Attributes
    ----------
    num_runs : int
        Proxy starts in the log (``kind = "start"`` markers).
    num_calls : int
        ``tools/call`` requests logged.
    num_faults : int
        Faults injected (``kind = "fault"`` records).
    num_retries : int
        Calls that repeat an earlier call's (connection, tool, argument hash) in the run
        right after that earlier call failed (any outcome but ``ok``).
    num_anomalies : int
        Unexpected traffic passed through.
    calls_by_tool, faults_by_mode, outcomes : dict of str to int
    latency_ms : dict of str to float
        ``p50``, ``p90``, ``p99`` and ``max`` over the calls with a latency (NaN if none).
    """

    num_runs: int
    num_calls: int
    num_faults: int
    num_retries: int
    num_anomalies: int
    calls_by_tool: dict[str, int] = field(default_factory=dict)
    faults_by_mode: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "num_runs": self.num_runs, "num_calls": self.num_calls,
            "num_faults": self.num_faults, "num_retries": self.num_retries,
            "num_anomalies": self.num_anomalies, "calls_by_tool": dict(self.calls_by_tool),
            "faults_by_mode": dict(self.faults_by_mode), "outcomes": dict(self.outcomes),
            "latency_ms": dict(self.latency_ms),
        }  # fmt: skip


def summarize_log(log: str | Path | Iterable[Mapping[str, Any]]) -> LogSummary:
    """Summarise a proxy log (a path or its records).

    Parameters
    ----------
    log : path or iterable of mappings
        A JSONL file written by the proxy (``--log``), or its records.

    Returns
    -------
    LogSummary

    Examples
    --------
    >>> recs = [{"kind": "start"},
    ...         {"kind": "call", "connection": "c", "tool": "t", "arg_hash": "a",
    ...          "fault": "tool_error", "outcome": "is_error", "latency_ms": 1.0},
    ...         {"kind": "fault", "mode": "tool_error"},
    ...         {"kind": "call", "connection": "c", "tool": "t", "arg_hash": "a",
    ...          "fault": None, "outcome": "ok", "latency_ms": 3.0}]
    >>> s = summarize_log(recs)
    >>> s.num_calls, s.num_retries, s.faults_by_mode, s.outcomes
    (2, 1, {'tool_error': 1}, {'is_error': 1, 'ok': 1})
    """
    if isinstance(log, (str, Path)):
        records = read_log(log)
    elif isinstance(log, Iterable) and not isinstance(log, (bytes, Mapping)):
        records = list(log)
    else:
        raise TypeError(f"log: expected a path or an iterable of records, got "
                        f"{type(log).__name__}")  # fmt: skip
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise TypeError(f"log: record {i} is a {type(r).__name__}, not a mapping")
    runs = 0
    failed: set[tuple] = set()  # keys whose last call did not succeed
    calls, retries = [], 0
    faults: Counter[str] = Counter()
    anomalies = 0
    for r in records:
        kind = r.get("kind")
        if kind == "start":
            runs += 1
            failed = set()  # retries are counted within one proxy run
        elif kind == "call":
            key = (r.get("connection"), r.get("tool"), r.get("arg_hash"))
            retries += key in failed
            if r.get("outcome") == "ok":
                failed.discard(key)
            else:
                failed.add(key)
            calls.append(r)
        elif kind == "fault":
            faults[str(r.get("mode"))] += 1
        elif kind == "anomaly":
            anomalies += 1
    lat = np.array([float(r["latency_ms"]) for r in calls
                    if isinstance(r.get("latency_ms"), (int, float))])  # fmt: skip
    if lat.size:
        p50, p90, p99 = np.percentile(lat, [50, 90, 99])
        latency = {"p50": float(p50), "p90": float(p90), "p99": float(p99),
                   "max": float(lat.max())}  # fmt: skip
    else:
        latency = dict.fromkeys(("p50", "p90", "p99", "max"), float("nan"))
    return LogSummary(
        num_runs=runs,
        num_calls=len(calls),
        num_faults=sum(faults.values()),
        num_retries=int(retries),
        num_anomalies=anomalies,
        calls_by_tool=dict(sorted(Counter(str(r.get("tool")) for r in calls).items())),
        faults_by_mode=dict(sorted(faults.items())),
        outcomes=dict(sorted(Counter(str(r.get("outcome")) for r in calls).items())),
        latency_ms=latency,
    )


def format_summary(summary: LogSummary) -> str:
    """The summary as a few plain-text lines (what ``report LOG`` prints)."""
    if not isinstance(summary, LogSummary):
        raise TypeError(f"summary: expected a LogSummary, got {type(summary).__name__}")

    def counts(d: Mapping[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"

    lat = summary.latency_ms
    return "\n".join([
        f"proxy runs: {summary.num_runs}",
        f"calls: {summary.num_calls} ({counts(summary.calls_by_tool)})",
        f"faults: {summary.num_faults} ({counts(summary.faults_by_mode)})",
        f"outcomes: {counts(summary.outcomes)}",
        f"retries: {summary.num_retries}",
        f"anomalies: {summary.num_anomalies}",
        f"latency ms: p50 {lat['p50']:.2f}, p90 {lat['p90']:.2f}, p99 {lat['p99']:.2f}, "
        f"max {lat['max']:.2f}",
    ])  # fmt: skip
