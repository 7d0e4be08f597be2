"""Fault model and seeded schedules for MCP tool calls (no I/O, no SDK imports).

MCP-Injector puts faults on the Model Context Protocol tool-call path: each ``tools/call``
either passes or is turned into one of six client-observable failure modes, with a chosen
persistence over the calls to the same tool on the same connection. This module holds the
pure part: the fault vocabulary (:class:`FaultMode`, :class:`Persistence`), explicit rules
(:class:`FaultRule`), a calibrated profile of mode/persistence weights and a per-call fault
rate (:class:`FaultProfile`, :func:`profile_from_counts`), their validation and loading from
YAML/JSON/TOML (:func:`parse_profile`, :func:`load_profile`), and the stateless keyed
schedule (:class:`FaultSchedule`) whose decision for ``(seed, connection, tool, k)`` does
not depend on how calls to different tools interleave, and which replays a JSONL log.

Rules act on ``tools/call`` by default; a rule's ``method`` puts it on ``tools/list``,
``resources/list``, ``resources/templates/list``, ``resources/read``, ``prompts/list`` or
``prompts/get`` instead (:data:`FAULT_METHODS`), its ``tool`` pattern then matching the
resource URI (``resources/read``) or the prompt name (``prompts/get``); list methods have no
target. The keyed draws of a ``tools/call`` are those of the earlier versions (its key is
the bare tool name), so existing logs and seeds keep their meaning; other methods key on
``"<method> <target>"``.

Deviations from the paper
-------------------------
- The six failure modes and their definitions are inferred (the abstract does not list them).
- The paper mined 57,240 issue/PR threads for its fault distribution; that data is not
  available offline, so :func:`default_profile` ships placeholder weights, labelled as such.
  :func:`profile_from_counts` turns anyone's incident counts into Dirichlet-smoothed weights.
- The calibrated profile is a renewal process of *incidents* per (connection, tool): a call
  starts an incident with probability ``fault_rate``; its mode and persistence are drawn from
  the weights; a permanent incident never ends, a transient one lasts ``transient_duration``
  calls, an intermittent one fails each call of an ``intermittent_window`` with probability
  ``intermittent_p`` (its first call always fails). This design is ours.
- Keyed draws are counter-based: uniforms are the SplitMix64 finaliser of a hash of
  ``(seed, crc32(connection), crc32(tool), k, stream, j)`` (one extra ``stream`` word
  separates rules, as the spec's key allows), not a ``numpy`` generator built per
  decision (that cost ~50 us a call); decisions stay a pure function of the key.
"""

from __future__ import annotations

import bisect
import enum
import fnmatch
import functools
import itertools
import json
import math
import statistics
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FAULT_METHODS",
    "BurstParams",
    "FaultDecision",
    "FaultMode",
    "FaultProfile",
    "FaultRule",
    "FaultSchedule",
    "Persistence",
    "ProfileError",
    "default_profile",
    "load_profile",
    "parse_profile",
    "profile_from_counts",
    "uniform_severe_profile",
]


class ProfileError(ValueError):
    """An invalid fault profile or rule; the message names the rule and the field."""


class FaultMode(enum.StrEnum):
    """The six client-observable failure modes of a ``tools/call``."""

    TIMEOUT = "timeout"
    CONNECTION_DROP = "connection_drop"
    PROTOCOL_ERROR = "protocol_error"
    TOOL_ERROR = "tool_error"
    MALFORMED_RESULT = "malformed_result"
    EMPTY_RESULT = "empty_result"


class Persistence(enum.StrEnum):
    """How a fault persists over the calls ``k = 0, 1, ...`` to one tool on one connection."""

    PERMANENT = "permanent"
    TRANSIENT = "transient"
    INTERMITTENT = "intermittent"


#: Realistic upstream messages for ``tool_error`` (chosen by a keyed draw).
TOOL_ERROR_MESSAGES = (
    "429 Too Many Requests: rate limit exceeded, retry later",
    "503 Service Unavailable: upstream service is temporarily unavailable",
    "401 Unauthorized: access token expired",
)

_MODES = tuple(m.value for m in FaultMode)
_PERSISTENCES = tuple(p.value for p in Persistence)

#: JSON-RPC methods a rule can target (``FaultRule.method``), with the request parameter
#: that names the target (``None``: a list method, no target).
FAULT_METHODS: dict[str, str | None] = {
    "tools/call": "name",
    "tools/list": None,
    "resources/list": None,
    "resources/templates/list": None,
    "resources/read": "uri",
    "prompts/list": None,
    "prompts/get": "name",
}


def schedule_key(method: str, target: str) -> str:
    """The name a call is counted and keyed under: the tool for ``tools/call``, else
    ``"<method> <target>"`` (``"<method>"`` for list methods)."""
    if method == "tools/call":
        return target
    return f"{method} {target}" if target else method


@dataclass(frozen=True)
class BurstParams:
    """Two-state Gilbert-Elliott chain for bursty intermittent faults.

    Parameters
    ----------
    p_enter : float
        P(good -> bad) per call, in [0, 1].
    p_exit : float
        P(bad -> good) per call, in [0, 1].
    p_fail_bad : float
        P(fault | bad state).
    p_fail_good : float
        P(fault | good state), default 0.

    Notes
    -----
    The chain starts in the good state before call 0. Its stationary fault rate is
    ``pi_bad * p_fail_bad + (1 - pi_bad) * p_fail_good`` with
    ``pi_bad = p_enter / (p_enter + p_exit)``.
    """

    p_enter: float
    p_exit: float
    p_fail_bad: float
    p_fail_good: float = 0.0

    def stationary_rate(self) -> float:
        """Long-run fraction of faulted calls."""
        tot = self.p_enter + self.p_exit
        pi_bad = self.p_enter / tot if tot > 0 else 0.0
        return pi_bad * self.p_fail_bad + (1.0 - pi_bad) * self.p_fail_good


@dataclass(frozen=True)
class FaultRule:
    """One explicit injection rule.

    Parameters
    ----------
    tool : str
        Pattern (``fnmatch``: ``"*"``, ``"search_*"``) of the call's target: the tool name
        for ``tools/call``, the resource URI for ``resources/read`` (YAML key ``uri:``
        also), the prompt name for ``prompts/get`` (YAML key ``prompt:``); list methods
        have no target and need ``"*"``.
    mode : FaultMode
        What the client observes.
    persistence : Persistence
        ``permanent``: every call ``k >= onset``; ``transient``: ``onset <= k < onset +
        duration``; ``intermittent``: each call with probability ``rate`` (or by ``burst``).
    rate : float
        For permanent/transient rules the probability that the rule is active on a
        (connection, tool) pair; for intermittent rules the per-call fault probability ``p``.
    onset, duration : int
        First faulted call index and, for transient rules, the number of faulted calls.
    burst : BurstParams or None
        Gilbert-Elliott chain for bursty intermittent faults (replaces ``rate``).
    error_code : int
        JSON-RPC error code of ``protocol_error`` (default ``-32603``, internal error).
    message : str or None
        Error text; ``None`` picks a realistic default.
    hang_s : float or None
        ``timeout`` only: ``None`` drops the response; a positive value delays it by that
        many seconds (a timeout when it exceeds the client's deadline, latency otherwise).
    jitter : {"lognormal", "exponential", "uniform"} or None
        ``timeout`` with ``hang_s`` only: draw each call's delay instead of a fixed hang.
        ``lognormal``: ``hang_s exp(jitter_scale z)``, ``z ~ N(0, 1)`` (``hang_s`` is the
        median); ``exponential``: mean ``hang_s``; ``uniform``: in ``hang_s (1 +- jitter_scale)``.
        The draw is keyed by (seed, connection, tool, k) like every decision, and the drawn
        delay is logged, so a replay repeats it exactly.
    jitter_scale : float
        Spread of the ``lognormal`` (its sigma) and ``uniform`` (half-width, at most 1)
        jitter.
    retry_after_s : float or None
        ``tool_error`` and ``protocol_error`` only: a rate limit with a retry-after hint of
        this many seconds, as HTTP's ``Retry-After``. The hint is in the error text (default
        message ``"429 Too Many Requests: rate limit exceeded, retry after <s> s"``) and
        machine-readable: ``_meta.retryAfter`` of a ``tool_error`` result, ``data.retryAfter``
        of a ``protocol_error``. Logged and replayed like every decision.
    cut_bytes : int or None
        ``malformed_result`` only, a wire-level fault of the stdio proxy: the server's real
        response line is cut after its first ``cut_bytes`` bytes (``>= 1``), a partial
        JSON-RPC message. In-process layers refuse such a rule (they carry messages, not
        bytes).
    cut_then : {"newline", "close"}
        After the cut: ``"newline"`` ends the line (a truncated JSON line on the wire; the
        request never gets a valid response), ``"close"`` closes the connection mid-response.
    after_server : bool
        ``False`` (default): ``tool_error``, ``protocol_error``, ``empty_result`` and
        ``timeout`` without ``hang_s`` model a failure *before* the server acts, so the call
        is never forwarded (an injected 429 on ``git_commit`` creates no commit). ``True``:
        the call is forwarded, the server acts, and its response is replaced (or withheld,
        or the connection dropped). ``malformed_result`` and a delayed ``timeout`` always
        forward (they need or delay the server's response).
    method : str
        The JSON-RPC method the rule acts on, one of :data:`FAULT_METHODS` (default
        ``"tools/call"``). ``tool_error`` (an ``isError`` tool result) exists only for
        ``tools/call``; on the other methods ``empty_result`` is an empty list (or no
        ``contents`` / ``messages``) and ``malformed_result`` gives list items fields of the
        wrong JSON type (the client's validation rejects them) or halves a resource's or
        prompt's text.
    """

    tool: str = "*"
    mode: FaultMode = FaultMode.TOOL_ERROR
    persistence: Persistence = Persistence.PERMANENT
    rate: float = 1.0
    onset: int = 0
    duration: int = 1
    burst: BurstParams | None = None
    error_code: int = -32603
    message: str | None = None
    hang_s: float | None = None
    jitter: str | None = None
    jitter_scale: float = 0.5
    retry_after_s: float | None = None
    cut_bytes: int | None = None
    cut_then: str = "newline"
    after_server: bool = False
    method: str = "tools/call"

    def matches(self, tool: str, method: str = "tools/call") -> bool:
        """Whether the rule acts on ``method`` and its pattern matches the target ``tool``."""
        return method == self.method and fnmatch.fnmatchcase(tool, self.tool)


@dataclass(frozen=True)
class FaultProfile:
    """A fault profile: explicit rules plus an optional calibrated incident process.

    Parameters
    ----------
    rules : tuple of FaultRule
        Checked first, in order; the first that fires decides the call.
    mode_weights : dict of str to float
        Weights of the six modes for calibrated incidents (normalised at load time).
    persistence_weights : dict of str to float
        Weights of the three persistence classes for calibrated incidents.
    fault_rate : float
        Per-call probability that a new calibrated incident starts (0 disables them).
    transient_duration : int
        Length in calls of a transient incident.
    intermittent_p : float
        Per-call fault probability inside an intermittent incident.
    intermittent_window : int
        Length in calls of an intermittent incident.
    error_code : int
        JSON-RPC code of calibrated ``protocol_error`` faults.
    label : str
        Provenance (e.g. ``"placeholder"``, ``"counts"``).
    after_server : bool
        For calibrated incidents, as :attr:`FaultRule.after_server` (default ``False``).
    """

    rules: tuple[FaultRule, ...] = ()
    mode_weights: Mapping[str, float] = field(default_factory=dict)
    persistence_weights: Mapping[str, float] = field(default_factory=dict)
    fault_rate: float = 0.0
    transient_duration: int = 2
    intermittent_p: float = 0.5
    intermittent_window: int = 8
    error_code: int = -32603
    label: str = "custom"
    after_server: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.after_server, bool):
            raise ProfileError(f"profile: after_server must be true or false, got "
                               f"{self.after_server!r}")
        for i, rule in enumerate(self.rules):
            _check_rule(rule, f"rule {i} (tool {rule.tool!r})")
        _check_prob(self.fault_rate, "profile", "fault_rate")
        _check_prob(self.intermittent_p, "profile", "intermittent_p")
        _check_int(self.transient_duration, "profile", "transient_duration", lo=1)
        _check_int(self.intermittent_window, "profile", "intermittent_window", lo=1)
        object.__setattr__(
            self, "mode_weights", _norm_weights(self.mode_weights, _MODES, "mode_weights")
        )
        object.__setattr__(
            self,
            "persistence_weights",
            _norm_weights(self.persistence_weights, _PERSISTENCES, "persistence_weights"),
        )
        if self.fault_rate > 0 and not self.mode_weights:
            raise ProfileError("profile: fault_rate > 0 needs mode_weights")
        if self.fault_rate > 0 and not self.persistence_weights:
            raise ProfileError("profile: fault_rate > 0 needs persistence_weights")

    @property
    def is_empty(self) -> bool:
        """True when the profile can never inject a fault."""
        return not self.rules and self.fault_rate == 0.0

    def to_dict(self) -> dict[str, Any]:
        """A plain dict accepted back by :func:`parse_profile`."""
        rules = []
        for r in self.rules:
            d = asdict(r)
            d["mode"] = r.mode.value
            d["persistence"] = r.persistence.value
            if r.burst is None:
                d.pop("burst")
            rules.append({k: v for k, v in d.items() if v is not None})
        return {
            "rules": rules,
            "mode_weights": dict(self.mode_weights),
            "persistence_weights": dict(self.persistence_weights),
            "fault_rate": self.fault_rate,
            "transient_duration": self.transient_duration,
            "intermittent_p": self.intermittent_p,
            "intermittent_window": self.intermittent_window,
            "error_code": self.error_code,
            "label": self.label,
            "after_server": self.after_server,
        }


@dataclass(frozen=True)
class FaultDecision:
    """The decision for one call: which fault, and why.

    Attributes
    ----------
    connection, tool : str
        Where the call happened.
    call_index : int
        ``k``: the call's index among calls to ``tool`` on ``connection`` (from 0).
    mode : FaultMode
    persistence : Persistence
    source : str
        ``"rule:<i>"`` or ``"profile"`` (a calibrated incident) or ``"replay"``.
    incident_start : bool
        True on the first faulted call of an incident (rules: the first faulted call).
    error_code : int
    message : str
    hang_s : float or None
    after_server : bool
        Whether the call is forwarded to the server before the fault applies.
    retry_after_s : float or None
        The retry-after hint of a rate-limit fault (see :attr:`FaultRule.retry_after_s`).
    cut_bytes : int or None
        Wire-level cut of the response line (see :attr:`FaultRule.cut_bytes`).
    cut_then : str
        ``"newline"`` or ``"close"`` after the cut.
    method : str
        The JSON-RPC method of the call (``tool`` holds its target, see
        :attr:`FaultRule.method`).
    """

    connection: str
    tool: str
    call_index: int
    mode: FaultMode
    persistence: Persistence
    source: str
    incident_start: bool
    error_code: int
    message: str
    hang_s: float | None = None
    after_server: bool = False
    retry_after_s: float | None = None
    cut_bytes: int | None = None
    cut_then: str = "newline"
    method: str = "tools/call"

    @property
    def reaches_server(self) -> bool:
        """Whether the call is forwarded to the server (see :attr:`FaultRule.after_server`)."""
        if self.after_server or self.mode is FaultMode.MALFORMED_RESULT:
            return True
        return self.mode is FaultMode.TIMEOUT and self.hang_s is not None

    def to_record(self, *, seed: int) -> dict[str, Any]:
        """A JSON-ready log record (``kind = "fault"``)."""
        return {
            "kind": "fault",
            "seed": int(seed),
            "connection": self.connection,
            "tool": self.tool,
            "call_index": int(self.call_index),
            "mode": self.mode.value,
            "persistence": self.persistence.value,
            "source": self.source,
            "incident_start": bool(self.incident_start),
            "error_code": int(self.error_code),
            "message": self.message,
            "hang_s": self.hang_s,
            "after_server": bool(self.after_server),
            "retry_after_s": self.retry_after_s,
            "cut_bytes": self.cut_bytes,
            "cut_then": self.cut_then,
            "method": self.method,
        }

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> FaultDecision:
        """Inverse of :meth:`to_record`."""
        return cls(
            connection=str(rec["connection"]),
            tool=str(rec["tool"]),
            call_index=int(rec["call_index"]),
            mode=FaultMode(rec["mode"]),
            persistence=Persistence(rec["persistence"]),
            source=str(rec.get("source", "replay")),
            incident_start=bool(rec.get("incident_start", False)),
            error_code=int(rec.get("error_code", -32603)),
            message=str(rec.get("message", "")),
            hang_s=rec.get("hang_s"),
            after_server=bool(rec.get("after_server", False)),
            retry_after_s=rec.get("retry_after_s"),
            cut_bytes=rec.get("cut_bytes"),
            cut_then=str(rec.get("cut_then", "newline")),
            method=str(rec.get("method", "tools/call")),
        )


# ---------------------------------------------------------------------------------------
# validation


def _check_prob(x: Any, where: str, name: str) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ProfileError(f"{where}: {name} must be a number in [0, 1], got {x!r}")
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ProfileError(f"{where}: {name} must be in [0, 1], got {x!r}")


def _check_int(x: Any, where: str, name: str, *, lo: int) -> None:
    if isinstance(x, bool) or not isinstance(x, int):
        raise ProfileError(f"{where}: {name} must be an integer >= {lo}, got {x!r}")
    if x < lo:
        raise ProfileError(f"{where}: {name} must be >= {lo}, got {x!r}")


#: Distributions of a jittered latency fault (``FaultRule.jitter``).
JITTERS = ("lognormal", "exponential", "uniform")


def _check_rule(rule: FaultRule, where: str) -> None:
    if not isinstance(rule.tool, str) or not rule.tool:
        raise ProfileError(f"{where}: tool must be a non-empty pattern string, got {rule.tool!r}")
    if not isinstance(rule.method, str) or rule.method not in FAULT_METHODS:
        raise ProfileError(f"{where}: method must be one of {', '.join(FAULT_METHODS)}, got "
                           f"{rule.method!r}")
    if FAULT_METHODS[rule.method] is None and rule.tool != "*":
        raise ProfileError(f"{where}: method {rule.method!r} has no target; its pattern must "
                           f"be '*', got {rule.tool!r}")
    if rule.mode is FaultMode.TOOL_ERROR and rule.method != "tools/call":
        raise ProfileError(f"{where}: mode 'tool_error' (an isError tool result) exists only "
                           f"for tools/call; use 'protocol_error' on {rule.method!r}")
    if not isinstance(rule.mode, FaultMode):
        raise ProfileError(f"{where}: mode must be a FaultMode, got {rule.mode!r}")
    if not isinstance(rule.persistence, Persistence):
        raise ProfileError(f"{where}: persistence must be a Persistence, got {rule.persistence!r}")
    _check_prob(rule.rate, where, "rate")
    _check_int(rule.onset, where, "onset", lo=0)
    _check_int(rule.duration, where, "duration", lo=0)
    if isinstance(rule.error_code, bool) or not isinstance(rule.error_code, int):
        raise ProfileError(f"{where}: error_code must be an integer, got {rule.error_code!r}")
    if rule.hang_s is not None:
        if isinstance(rule.hang_s, bool) or not isinstance(rule.hang_s, (int, float)):
            raise ProfileError(f"{where}: hang_s must be a positive number, got {rule.hang_s!r}")
        if not (math.isfinite(rule.hang_s) and rule.hang_s > 0):
            raise ProfileError(f"{where}: hang_s must be > 0, got {rule.hang_s!r}")
    if rule.retry_after_s is not None:
        r = rule.retry_after_s
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise ProfileError(f"{where}: retry_after_s must be a positive number, got {r!r}")
        if not (math.isfinite(r) and r > 0):
            raise ProfileError(f"{where}: retry_after_s must be > 0, got {r!r}")
        if rule.mode not in (FaultMode.TOOL_ERROR, FaultMode.PROTOCOL_ERROR):
            raise ProfileError(f"{where}: retry_after_s needs mode 'tool_error' or "
                               f"'protocol_error', got {rule.mode.value!r}")
    if rule.cut_bytes is not None:
        c = rule.cut_bytes
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise ProfileError(f"{where}: cut_bytes must be an integer >= 1, got {c!r}")
        if c < 1:
            raise ProfileError(f"{where}: cut_bytes must be >= 1, got {c!r}")
        if rule.mode is not FaultMode.MALFORMED_RESULT:
            raise ProfileError(f"{where}: cut_bytes needs mode 'malformed_result', got "
                               f"{rule.mode.value!r}")
    if rule.cut_then not in ("newline", "close"):
        raise ProfileError(f"{where}: cut_then must be 'newline' or 'close', got "
                           f"{rule.cut_then!r}")
    if rule.jitter is not None:
        if rule.jitter not in JITTERS:
            raise ProfileError(f"{where}: jitter must be one of {', '.join(JITTERS)}, got "
                               f"{rule.jitter!r}")
        if rule.mode is not FaultMode.TIMEOUT or rule.hang_s is None:
            raise ProfileError(f"{where}: jitter needs mode 'timeout' with a hang_s")
    if isinstance(rule.jitter_scale, bool) or not isinstance(rule.jitter_scale, (int, float)):
        raise ProfileError(f"{where}: jitter_scale must be a number, got {rule.jitter_scale!r}")
    if not (math.isfinite(rule.jitter_scale) and rule.jitter_scale >= 0):
        raise ProfileError(f"{where}: jitter_scale must be >= 0, got {rule.jitter_scale!r}")
    if rule.jitter == "uniform" and rule.jitter_scale > 1:
        raise ProfileError(f"{where}: jitter_scale of uniform jitter must be <= 1 (delays "
                           f"stay >= 0), got {rule.jitter_scale!r}")
    if not isinstance(rule.after_server, bool):
        raise ProfileError(f"{where}: after_server must be true or false, got "
                           f"{rule.after_server!r}")
    if rule.burst is not None:
        if not isinstance(rule.burst, BurstParams):
            raise ProfileError(f"{where}: burst must be BurstParams, got {rule.burst!r}")
        if rule.persistence is not Persistence.INTERMITTENT:
            raise ProfileError(f"{where}: burst is only valid with persistence 'intermittent'")
        for name in ("p_enter", "p_exit", "p_fail_bad", "p_fail_good"):
            _check_prob(getattr(rule.burst, name), f"{where} burst", name)


def _norm_weights(w: Mapping[str, Any], valid: tuple[str, ...], name: str) -> dict[str, float]:
    if not isinstance(w, Mapping):
        raise ProfileError(f"profile: {name} must be a mapping of name to weight, got {w!r}")
    if not w:
        return {}
    out = {}
    for k, v in w.items():
        if k not in valid:
            raise ProfileError(f"profile: {name} has unknown key {k!r}; valid: {', '.join(valid)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ProfileError(f"profile: {name}[{k!r}] must be a finite number, got {v!r}")
        if v < 0:
            raise ProfileError(f"profile: {name}[{k!r}] must be >= 0, got {v!r}")
        out[k] = float(v)
    tot = sum(out.values())
    if tot <= 0:
        raise ProfileError(f"profile: {name} sum to 0; at least one weight must be positive")
    return {k: out.get(k, 0.0) / tot for k in valid}


_RULE_KEYS = {f for f in FaultRule.__dataclass_fields__}
_PROFILE_KEYS = {
    "rules",
    "mode_weights",
    "persistence_weights",
    "fault_rate",
    "transient_duration",
    "intermittent_p",
    "intermittent_window",
    "error_code",
    "label",
    "after_server",
}


def _parse_rule(i: int, d: Any) -> FaultRule:
    where = f"rule {i}"
    if not isinstance(d, Mapping):
        raise ProfileError(f"{where}: must be a mapping of fields, got {d!r}")
    d = dict(d)
    for alias, method in (("uri", "resources/read"), ("prompt", "prompts/get")):
        if alias in d:
            if "tool" in d:
                raise ProfileError(f"rule {i}: give either 'tool' or {alias!r}, not both")
            d["tool"] = d.pop(alias)
            d.setdefault("method", method)
    where = f"rule {i} (tool {d.get('tool', '*')!r})"
    unknown = set(d) - _RULE_KEYS
    if unknown:
        raise ProfileError(
            f"{where}: unknown field(s) {sorted(unknown)}; valid: {', '.join(sorted(_RULE_KEYS))}"
        )
    kw = dict(d)
    if "mode" not in kw:
        raise ProfileError(f"{where}: field 'mode' is required; one of {', '.join(_MODES)}")
    if kw["mode"] not in _MODES:
        raise ProfileError(f"{where}: unknown mode {kw['mode']!r}; valid: {', '.join(_MODES)}")
    kw["mode"] = FaultMode(kw["mode"])
    pers = kw.get("persistence", "permanent")
    if pers not in _PERSISTENCES:
        raise ProfileError(
            f"{where}: unknown persistence {pers!r}; valid: {', '.join(_PERSISTENCES)}"
        )
    kw["persistence"] = Persistence(pers)
    if kw.get("burst") is not None:
        b = kw["burst"]
        if not isinstance(b, Mapping):
            raise ProfileError(f"{where}: burst must be a mapping, got {b!r}")
        bkeys = set(BurstParams.__dataclass_fields__)
        if set(b) - bkeys or not {"p_enter", "p_exit", "p_fail_bad"} <= set(b):
            raise ProfileError(
                f"{where}: burst needs p_enter, p_exit, p_fail_bad (optional p_fail_good), got "
                f"{sorted(b)}"
            )
        kw["burst"] = BurstParams(**b)
    rule = FaultRule(**kw)
    _check_rule(rule, where)
    return rule


def parse_profile(data: Mapping[str, Any] | None) -> FaultProfile:
    """Build and validate a :class:`FaultProfile` from a plain mapping.

    Parameters
    ----------
    data : mapping or None
        Keys: ``rules`` (list of rule mappings with ``tool``, ``mode``, ``persistence``,
        ``rate``, ``onset``, ``duration``, ``burst``, ``error_code``, ``message``, ``hang_s``,
        ``jitter``, ``jitter_scale``, ``retry_after_s``, ``cut_bytes``, ``cut_then``,
        ``after_server``, ``method``; ``uri`` / ``prompt`` stand for ``tool`` and default
        ``method`` to ``resources/read`` / ``prompts/get``),
        ``mode_weights``, ``persistence_weights``, ``fault_rate``, ``transient_duration``,
        ``intermittent_p``, ``intermittent_window``, ``error_code``, ``label``,
        ``after_server``. ``None`` or
        ``{}`` is the empty (transparent) profile.

    Returns
    -------
    FaultProfile

    Raises
    ------
    ProfileError
        (a ``ValueError``) naming ``data``, the rule and the field at fault.

    Examples
    --------
    >>> p = parse_profile({"rules": [{"tool": "search_*", "mode": "timeout"}]})
    >>> p.rules[0].mode.value
    'timeout'
    """
    try:
        return _parse_profile(data)
    except ProfileError as e:
        msg = str(e).removeprefix("profile: ").removeprefix("profile ")
        raise ProfileError(f"profile data: {msg}") from None


def _parse_profile(data: Mapping[str, Any] | None) -> FaultProfile:
    """:func:`parse_profile` without the ``profile data:`` prefix on its errors."""
    if data is None:
        return FaultProfile()
    if not isinstance(data, Mapping):
        raise ProfileError(f"profile must be a mapping, got {type(data).__name__}")
    unknown = set(data) - _PROFILE_KEYS
    if unknown:
        raise ProfileError(
            f"profile: unknown key(s) {sorted(unknown)}; valid: {', '.join(sorted(_PROFILE_KEYS))}"
        )
    rules_raw = data.get("rules") or []
    if not isinstance(rules_raw, (list, tuple)):
        raise ProfileError(f"profile: rules must be a list, got {rules_raw!r}")
    rules = tuple(_parse_rule(i, r) for i, r in enumerate(rules_raw))
    kw = {k: v for k, v in data.items() if k != "rules"}
    for name in ("mode_weights", "persistence_weights"):
        if kw.get(name) is None:
            kw.pop(name, None)
    return FaultProfile(rules=rules, **kw)


def load_profile(path: str | Path) -> FaultProfile:
    """Load a profile from a ``.yaml``/``.yml``, ``.json`` or ``.toml`` file.

    A top-level ``profile:`` key (as in the proxy's config files) is accepted too.

    Raises
    ------
    ProfileError
        For an unreadable file, a parse error or an invalid profile (naming the file).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ProfileError(f"cannot read profile {str(path)!r}: {e}") from e
    suffix = path.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise ProfileError(
                f"profile {str(path)!r}: unknown extension {suffix!r}; use .yaml, .json or .toml"
            )
    except ProfileError:
        raise
    except Exception as e:  # parse errors of the three formats
        raise ProfileError(f"profile {str(path)!r}: cannot parse: {e}") from e
    if isinstance(data, Mapping) and "profile" in data and set(data) <= {"profile"}:
        data = data["profile"]
    try:
        return _parse_profile(data)
    except ProfileError as e:
        raise ProfileError(f"profile {str(path)!r}: {e}") from None


#: Largest Dirichlet ``alpha`` accepted by :func:`profile_from_counts` (float overflow).
_MAX_ALPHA = 1e300


def profile_from_counts(
    counts: Mapping[str, int],
    *,
    alpha: float = 1.0,
    persistence_counts: Mapping[str, int] | None = None,
    fault_rate: float = 0.1,
) -> FaultProfile:
    """Calibrate mode (and persistence) weights from incident counts.

    Parameters
    ----------
    counts : mapping of mode name to int
        Mined incident counts per failure mode (missing modes count 0).
    alpha : float
        Symmetric Dirichlet prior ``alpha``; the weight of mode ``m`` is the posterior mean
        ``(n_m + alpha) / (N + 6 alpha)``. Must lie in ``(0, 1e300]`` (larger values
        overflow the normaliser).
    persistence_counts : mapping or None
        Optional counts per persistence class, smoothed the same way; uniform if ``None``.
    fault_rate : float
        Per-call incident probability of the returned profile.

    Returns
    -------
    FaultProfile
        With ``label = "counts"``.

    Examples
    --------
    >>> p = profile_from_counts({"timeout": 8, "tool_error": 0}, alpha=1.0)
    >>> round(p.mode_weights["timeout"], 3)  # (8 + 1) / (8 + 6)
    0.643
    """
    if (
        not isinstance(alpha, (int, float))
        or isinstance(alpha, bool)
        or not 0 < alpha <= _MAX_ALPHA
    ):
        # inf gives NaN weights and ~1e308 overflows the normaliser to inf (weights 0)
        raise ProfileError(
            f"profile_from_counts: alpha must lie in (0, {_MAX_ALPHA:g}], got {alpha!r}"
        )

    def smooth(c: Mapping[str, int] | None, valid: tuple[str, ...], name: str) -> dict:
        c = dict(c or {})
        for k, v in c.items():
            if k not in valid:
                raise ProfileError(f"{name}: unknown key {k!r}; valid: {', '.join(valid)}")
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ProfileError(f"{name}[{k!r}] must be a count >= 0, got {v!r}")
        n = np.array([c.get(k, 0) for k in valid], dtype=float)  # (M,)
        w = (n + alpha) / (n.sum() + alpha * len(valid))  # Dirichlet posterior mean
        return {k: float(x) for k, x in zip(valid, w, strict=True)}

    return FaultProfile(
        mode_weights=smooth(counts, _MODES, "counts"),
        persistence_weights=smooth(persistence_counts, _PERSISTENCES, "persistence_counts"),
        fault_rate=fault_rate,
        label="counts",
    )


def default_profile() -> FaultProfile:
    """The shipped calibrated profile. PLACEHOLDER weights, not the paper's mined ones.

    Mode weights (ours, loosely following how often each symptom shows up in public MCP
    issue trackers): tool_error 0.30, timeout 0.20, protocol_error 0.15, malformed_result
    0.15, empty_result 0.12, connection_drop 0.08; persistence: transient 0.5, intermittent
    0.3, permanent 0.2; per-call incident rate 0.1.
    """
    return FaultProfile(
        mode_weights={
            "tool_error": 0.30,
            "timeout": 0.20,
            "protocol_error": 0.15,
            "malformed_result": 0.15,
            "empty_result": 0.12,
            "connection_drop": 0.08,
        },
        persistence_weights={"transient": 0.5, "intermittent": 0.3, "permanent": 0.2},
        fault_rate=0.1,
        label="placeholder (not the paper's mined distribution)",
    )


def uniform_severe_profile() -> FaultProfile:
    """All six modes and three persistence classes equally likely, at double the default rate."""
    base = default_profile()
    return FaultProfile(
        mode_weights={m: 1.0 for m in _MODES},
        persistence_weights={p: 1.0 for p in _PERSISTENCES},
        fault_rate=2 * base.fault_rate,
        label="uniform-severe",
    )


# ---------------------------------------------------------------------------------------
# the schedule


@functools.lru_cache(maxsize=4096)
def _crc(s: str) -> int:
    return zlib.crc32(s.encode("utf-8"))


_M64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """SplitMix64 step: a bijective, well-mixed map of a 64-bit integer."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def keyed_uniforms(key: tuple[int, ...], n: int = 1) -> list[float]:
    """``n`` uniforms in [0, 1) that are a pure function of the integer tuple ``key``.

    Counter-based (a SplitMix64 hash of the key and the draw index), so any draw can be
    recomputed on its own, in any order, at a cost of a few microseconds.

    Examples
    --------
    >>> keyed_uniforms((1, 2, 3), 2) == keyed_uniforms((1, 2, 3), 2)
    True
    >>> all(0.0 <= u < 1.0 for u in keyed_uniforms((0,), 1000))
    True
    """
    return _draw(_fold(_H0, key), n)


_H0 = 0x243F6A8885A308D3


def _fold(h: int, words: Iterable[int]) -> int:
    for word in words:
        h = _mix64(h ^ (int(word) & _M64))
    return h


def _draw(h: int, n: int) -> list[float]:
    return [(_mix64(h + j) >> 11) * (1.0 / 9007199254740992.0) for j in range(n)]


class FaultSchedule:
    """Stateless, seeded decisions: is call ``k`` to ``tool`` on ``connection`` faulted?

    Parameters
    ----------
    profile : FaultProfile
        Rules and the calibrated incident process.
    seed : int
        Master seed ``s``.

    Notes
    -----
    Every random draw is keyed: :func:`keyed_uniforms` of ``(s, crc32(connection),
    crc32(tool), k, stream)``, ``stream = 0`` for the calibrated process and ``i + 1`` (per call) or
    ``1000 + i`` (per pair) for rule ``i``. Decisions therefore do not depend on the order
    in which calls to different tools (or connections) interleave. The sequential parts
    (the incident renewal process and the Gilbert-Elliott chain) are iterated from ``k = 0``
    over the same keyed draws and cached.

    Examples
    --------
    >>> rule = FaultRule(tool="book", mode=FaultMode.TOOL_ERROR,
    ...                  persistence=Persistence.TRANSIENT, onset=1, duration=2)
    >>> s = FaultSchedule(FaultProfile(rules=(rule,)), seed=0)
    >>> [s.decide("book", k) is not None for k in range(4)]
    [False, True, True, False]
    """

    def __init__(self, profile: FaultProfile, *, seed: int = 0) -> None:
        if not isinstance(profile, FaultProfile):
            raise TypeError(f"profile must be a FaultProfile, got {type(profile).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        self.profile = profile
        self.seed = int(seed)
        self._replay: dict[tuple[str, str, str, int], FaultDecision] | None = None
        # (connection, tool) -> (next call index, entry of the call before it): the
        # incident process depends only on the previous call, so O(1) memory per pair
        self._incidents: dict[tuple[str, str], tuple[int, tuple | None]] = {}
        self._bursts: dict[tuple[str, str, int], list[bool]] = {}
        self._prefix: dict[tuple[str, str], int] = {}
        # (method, target) -> indices of matching rules
        self._matching: dict[tuple[str, str], tuple[int, ...]] = {}
        modes, pers = list(profile.mode_weights), list(profile.persistence_weights)
        self._cum = (  # cumulative weights for inverse-CDF draws, computed once
            modes,
            list(itertools.accumulate(profile.mode_weights[m] for m in modes)),
            pers,
            list(itertools.accumulate(profile.persistence_weights[q] for q in pers)),
        )

    # -- keyed draws ---------------------------------------------------------------------
    def _u(self, connection: str, tool: str, k: int, stream: int, n: int = 1) -> list[float]:
        # == keyed_uniforms((seed, crc(connection), crc(tool), k, stream), n); prefix cached
        h = self._prefix.get((connection, tool))
        if h is None:
            h = _fold(_H0, (self.seed, _crc(connection), _crc(tool)))
            self._prefix[(connection, tool)] = h
        return _draw(_mix64(_mix64(h ^ k) ^ stream), n)

    # -- explicit rules ------------------------------------------------------------------
    def _rule_fires(self, i: int, rule: FaultRule, connection: str, tool: str, k: int) -> bool:
        if rule.persistence is Persistence.INTERMITTENT:
            if rule.burst is not None:
                return self._burst_fail(i, rule.burst, connection, tool, k)
            return self._u(connection, tool, k, i + 1)[0] < rule.rate
        if rule.persistence is Persistence.PERMANENT:
            in_window = k >= rule.onset
        else:
            in_window = rule.onset <= k < rule.onset + rule.duration
        if not in_window:
            return False
        if rule.rate >= 1.0:
            return True
        # one draw per (connection, tool) pair: is this rule active on the pair?
        return self._u(connection, tool, 0, 1000 + i)[0] < rule.rate

    def _jittered(self, rule: FaultRule, i: int, connection: str, tool: str, k: int) -> float:
        """The drawn delay of a jittered latency rule for call ``k`` (keyed, replayable)."""
        u = min(max(self._u(connection, tool, k, 5000 + i)[0], 1e-12), 1 - 1e-12)
        if rule.jitter == "lognormal":
            factor = math.exp(rule.jitter_scale * statistics.NormalDist().inv_cdf(u))
        elif rule.jitter == "exponential":
            factor = -math.log1p(-u)
        else:  # uniform
            factor = 1.0 + rule.jitter_scale * (2.0 * u - 1.0)
        return float(rule.hang_s) * factor

    def _burst_fail(self, i: int, b: BurstParams, connection: str, tool: str, k: int) -> bool:
        seq = self._bursts.setdefault((connection, tool, i), [])
        # state after the last computed step; the chain starts good before k = 0
        while len(seq) <= k:
            j = len(seq)
            bad_prev = seq[-1][0] if seq else False
            u_move, u_fail = self._u(connection, tool, j, i + 1, 2)
            bad = (u_move >= b.p_exit) if bad_prev else (u_move < b.p_enter)
            fail = u_fail < (b.p_fail_bad if bad else b.p_fail_good)
            seq.append((bool(bad), bool(fail)))
        return seq[k][1]

    # -- calibrated incidents ------------------------------------------------------------
    def _incident(self, connection: str, tool: str, k: int) -> tuple | None:
        """``(mode, persistence, start)`` if call ``k`` fails under the incident process."""
        p = self.profile
        j, last = self._incidents.get((connection, tool), (0, None))
        if j > k + 1:  # an earlier call than the last one asked: iterate again from 0
            j, last = 0, None
        modes, mcum, pers, pcum = self._cum
        while j <= k:
            u = self._u(connection, tool, j, 0, 4)  # (start, mode, pers, fail)
            # the incident in force from earlier calls, if any: (mode, pers, start, end)
            active = last if last is not None and last[3] > j else None
            if active is None:
                if u[0] < p.fault_rate:
                    mode = modes[min(bisect.bisect_left(mcum, u[1] * mcum[-1]), len(modes) - 1)]
                    q = pers[min(bisect.bisect_left(pcum, u[2] * pcum[-1]), len(pers) - 1)]
                    if q == "permanent":
                        end = math.inf
                    elif q == "transient":
                        end = j + p.transient_duration
                    else:
                        end = j + p.intermittent_window
                    last = (mode, q, j, end, True)
                else:
                    last = None
            else:
                mode, q, start, end = active[:4]
                # within an incident: permanent/transient fail; intermittent fails w.p. p
                fails = q != "intermittent" or u[3] < p.intermittent_p
                last = (mode, q, start, end, fails)
            j += 1
        self._incidents[(connection, tool)] = (j, last)
        entry = last
        if entry is None or not entry[4]:
            return None
        return entry[0], entry[1], entry[2] == k

    # -- public --------------------------------------------------------------------------
    def decide(
        self, tool: str, call_index: int, *, connection: str = "default",
        method: str = "tools/call",
    ) -> FaultDecision | None:
        """The fault for call ``k = call_index`` to ``tool`` on ``connection``, or ``None``.

        Parameters
        ----------
        tool : str
            The call's target: the tool name of a ``tools/call``, the URI of a
            ``resources/read``, the prompt name of a ``prompts/get``, ``""`` for list
            methods.
        call_index : int
            ``k >= 0``, counted per target per method per connection.
        connection : str
            Connection label.
        method : str
            The JSON-RPC method, one of :data:`FAULT_METHODS` (default ``"tools/call"``).

        Returns
        -------
        FaultDecision or None
            Calibrated incidents (``fault_rate``) apply to ``tools/call`` only; rules to
            the method they name.
        """
        if not isinstance(tool, str):
            raise TypeError(f"tool must be a str, got {type(tool).__name__}")
        if isinstance(call_index, bool) or not isinstance(call_index, (int, np.integer)):
            raise TypeError(f"call_index must be an int, got {call_index!r}")
        if call_index < 0:
            raise ValueError(f"call_index must be >= 0, got {call_index}")
        if method not in FAULT_METHODS:
            raise ValueError(f"method must be one of {', '.join(FAULT_METHODS)}, got {method!r}")
        k = int(call_index)
        if self._replay is not None:
            return self._replay.get((connection, method, tool, k))
        idx = self._matching.get((method, tool))
        if idx is None:
            idx = tuple(i for i, r in enumerate(self.profile.rules) if r.matches(tool, method))
            if len(self._matching) < 4096:
                self._matching[(method, tool)] = idx
        key = tool if method == "tools/call" else schedule_key(method, tool)
        for i in idx:
            rule = self.profile.rules[i]
            if self._rule_fires(i, rule, connection, key, k):
                start = k == rule.onset if rule.persistence is not Persistence.INTERMITTENT else (
                    k == 0 or not self._rule_fires(i, rule, connection, key, k - 1)
                )
                hang_s = rule.hang_s
                if rule.jitter is not None:
                    hang_s = self._jittered(rule, i, connection, key, k)
                return self._make(
                    connection, tool, k, rule.mode, rule.persistence, f"rule:{i}", start,
                    rule.error_code, rule.message, hang_s, rule.after_server,
                    rule.retry_after_s, rule.cut_bytes, rule.cut_then, method,
                )
        if self.profile.fault_rate > 0 and method == "tools/call":
            inc = self._incident(connection, tool, k)
            if inc is not None:
                mode, q, start = inc
                return self._make(
                    connection, tool, k, FaultMode(mode), Persistence(q), "profile", start,
                    self.profile.error_code, None, None, self.profile.after_server,
                )
        return None

    def _make(self, connection, tool, k, mode, pers, source, start, code, message, hang_s,
              after_server=False, retry_after_s=None, cut_bytes=None, cut_then="newline",
              method="tools/call"):
        if message is None and retry_after_s is not None:
            message = (f"429 Too Many Requests: rate limit exceeded, retry after "
                       f"{retry_after_s:g} s")  # fmt: skip
        if message is None:
            if mode is FaultMode.TOOL_ERROR:
                message = TOOL_ERROR_MESSAGES[(_crc(tool) + k) % len(TOOL_ERROR_MESSAGES)]
            else:
                message = f"injected {mode.value} fault"
        return FaultDecision(
            connection=connection,
            tool=tool,
            call_index=k,
            mode=mode,
            persistence=pers,
            source=source,
            incident_start=bool(start),
            error_code=int(code),
            message=message,
            hang_s=hang_s,
            after_server=bool(after_server),
            retry_after_s=None if retry_after_s is None else float(retry_after_s),
            cut_bytes=None if cut_bytes is None else int(cut_bytes),
            cut_then=cut_then,
            method=method,
        )

    @classmethod
    def from_log(cls, log: str | Path | Iterable[Mapping[str, Any]]) -> FaultSchedule:
        """A schedule that replays a recorded fault log exactly.

        Parameters
        ----------
        log : path or iterable of records
            A JSONL file written by :class:`~.injector.FaultInjector` (or its records);
            lines with ``kind != "fault"`` are ignored.

        Returns
        -------
        FaultSchedule
            Its :meth:`decide` returns the recorded decision for ``(connection, tool, k)``
            and ``None`` for calls the log does not list. A log appended to by several
            runs (each starts with a ``kind = "start"`` marker) replays its last run.
        """
        if isinstance(log, (str, Path)):
            records = []
            with open(log, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"fault log {str(log)!r} line {n}: not JSON: {e}") from e
        else:
            records = list(log)
        starts = [i for i, r in enumerate(records) if r.get("kind") == "start"]
        if starts:
            records = records[starts[-1] + 1 :]
        seeds = {int(r["seed"]) for r in records if r.get("kind") == "fault" and "seed" in r}
        sched = cls(FaultProfile(label="replay"), seed=min(seeds) if seeds else 0)
        table = {}
        for r in records:
            if r.get("kind") != "fault":
                continue
            d = FaultDecision.from_record(r)
            table[(d.connection, d.method, d.tool, d.call_index)] = d
        sched._replay = table
        return sched
