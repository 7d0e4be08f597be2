"""Interposition on the official MCP Python SDK (``mcp`` 2.x): server middleware, client transport.

:class:`FaultInjector` is the shared core: a :class:`~.faults.FaultSchedule`, per-connection
per-tool call counters and a fault log (in memory and optionally JSONL). It plugs into the
SDK in two places: :meth:`FaultInjector.middleware` returns a ``ServerMiddleware`` for
servers you own (``MCPServer(..., middleware=[inj.middleware()])``), and
:meth:`FaultInjector.wrap` returns a client-side :class:`FaultInjectingTransport` around any
SDK transport (stdio, streamable HTTP, in-memory); the stdio proxy (:mod:`.proxy`) applies
the same message-level rewrite (:func:`apply_fault`) to raw JSON-RPC lines.

Deviations from the paper
-------------------------
- ``tool_error``, ``protocol_error``, ``empty_result`` and ``timeout`` without ``hang_s``
  model failures before the server acts: by default the call is never forwarded (the
  proxy, the client transport and the middleware alike); ``after_server: true`` on a rule
  forwards it first and replaces the response (see :attr:`~.faults.FaultRule.after_server`).
- ``timeout`` without ``hang_s`` drops the ``tools/call`` response (client side) or blocks
  the handler until the client's ``notifications/cancelled`` cancels it (server side); the
  client sees the SDK's ``REQUEST_TIMEOUT`` error. With ``hang_s`` the response is delayed.
- ``connection_drop`` closes the connection in the client transport and the proxy; the
  server middleware cannot close its transport and answers with a ``CONNECTION_CLOSED``
  (-32000) error instead (recorded as such in the log).
- The middleware hook (``mcp.server.context.ServerMiddleware``) is provisional in the SDK;
  this adapter is kept thin and tested against ``mcp==2.3.0``.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import time
import warnings
import weakref
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from .faults import FAULT_METHODS, FaultDecision, FaultMode, FaultProfile, FaultSchedule

__all__ = [
    "CONNECTION_CLOSED_CODE",
    "FaultInjectingTransport",
    "FaultInjectionMiddleware",
    "FaultInjector",
    "apply_fault",
    "corrupt_result",
    "empty_instance",
    "fault_result",
    "request_target",
]

#: The SDK's code for a closed connection (``mcp_types.CONNECTION_CLOSED``).
CONNECTION_CLOSED_CODE = -32000

DROP = "drop"  # apply_fault: withhold the response
DISCONNECT = "disconnect"  # apply_fault: close the connection
#: Outcomes of a call the client never got an answer to: such a call has no latency.
UNANSWERED = frozenset({"unanswered", "no_response", "disconnected"})


def _corrupt_value(v: Any) -> Any:
    """A value of a different JSON type (so a typed output schema rejects it)."""
    if isinstance(v, bool):
        return "not-a-bool"
    if isinstance(v, (int, float)):
        return "NaN (corrupted)"
    if isinstance(v, str):
        return -1
    return "corrupted"


def empty_instance(schema: Mapping[str, Any]) -> Any:
    """The emptiest JSON value that a tool's JSON Schema accepts.

    Objects get their ``required`` properties only, each filled recursively; strings are
    ``""`` (``minLength`` padded with spaces), numbers their ``minimum`` or 0, booleans
    ``false``, arrays ``minItems`` empty items, ``null`` where the type allows it;
    ``const``, ``enum`` and ``default`` are honoured, and ``anyOf`` / ``oneOf`` take their
    first branch. Local ``$ref`` (``#/$defs/...``) are followed.

    Examples
    --------
    >>> empty_instance({"type": "object", "properties": {"result": {"type": "string"}},
    ...                 "required": ["result"]})
    {'result': ''}
    >>> empty_instance({"type": ["integer", "null"]}) is None
    True
    """
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema must be a JSON Schema object, got {type(schema).__name__}")
    return _empty(schema, schema, 0)


def _empty(node: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if depth > 32:
        raise ValueError("schema: nesting deeper than 32 (a recursive $ref?)")
    ref = node.get("$ref")
    if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else ():
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return _empty(target, root, depth + 1)
    if "const" in node:
        return copy.deepcopy(node["const"])
    if isinstance(node.get("enum"), list) and node["enum"]:
        return copy.deepcopy(node["enum"][0])
    if "default" in node:
        return copy.deepcopy(node["default"])
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list) and node[key]:
            return _empty(node[key][0], root, depth + 1)
    if isinstance(node.get("allOf"), list) and node["allOf"]:
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            if isinstance(part, Mapping):
                merged.update(part)
        return _empty(merged, root, depth + 1)
    types = node.get("type")
    if isinstance(types, list):
        if "null" in types:
            return None
        types = types[0] if types else None
    if types is None and ("properties" in node or "required" in node):
        types = "object"
    if types == "object":
        props = node.get("properties") or {}
        return {name: _empty(props.get(name, {}), root, depth + 1)
                for name in node.get("required") or ()}
    if types == "array":
        item = node.get("items") if isinstance(node.get("items"), Mapping) else {}
        return [_empty(item, root, depth + 1) for _ in range(int(node.get("minItems", 0)))]
    if types == "string":
        return " " * int(node.get("minLength", 0))
    if types in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum"))
        value = 0 if low is None or low <= 0 else low
        if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
            value = node["exclusiveMinimum"] + 1
        return int(value) if types == "integer" else float(value)
    if types == "boolean":
        return False
    if types == "null":
        return None
    return {}  # an unconstrained schema accepts anything; {} is the emptiest object


def corrupt_result(decision: FaultDecision, result: Mapping[str, Any] | None, *,
                   output_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``CallToolResult`` wire dict (camelCase) that ``decision`` turns ``result`` into.

    Parameters
    ----------
    decision : FaultDecision
        A ``tool_error``, ``empty_result`` or ``malformed_result`` decision.
    result : mapping or None
        The server's original ``result`` object (``None`` when it was not computed).
    output_schema : mapping or None
        The tool's declared ``outputSchema`` (from ``tools/list``), if any. A client that
        knows it rejects a result without ``structuredContent``, so ``empty_result`` then
        carries :func:`empty_instance` of the schema.

    Returns
    -------
    dict
        ``tool_error``: ``{"content": [text], "isError": true}``; ``empty_result``:
        ``{"content": []}`` (plus the emptiest valid ``structuredContent`` when the tool
        declares an output schema); ``malformed_result``: text halved mid-token and every
        ``structuredContent`` field given a value of the wrong JSON type. Keys such as
        ``_meta`` and ``resultType`` of the original are kept; without an original (the
        call never reached the server) ``resultType`` is ``"complete"``.
    """
    if result is None:  # the server never ran: a complete result (valid in every version)
        base: dict[str, Any] = {"resultType": "complete"}
    else:
        base = {k: v for k, v in result.items() if k in ("_meta", "resultType")}
    mode = decision.mode
    if mode is FaultMode.TOOL_ERROR:
        if decision.retry_after_s is not None:  # a rate limit's machine-readable hint
            base["_meta"] = {**base.get("_meta", {}), "retryAfter": decision.retry_after_s}
        return {**base, "content": [{"type": "text", "text": decision.message}], "isError": True}
    if mode is FaultMode.EMPTY_RESULT:
        if output_schema is not None:
            return {**base, "content": [], "structuredContent": empty_instance(output_schema)}
        return {**base, "content": []}
    if mode is FaultMode.MALFORMED_RESULT:
        out = copy.deepcopy(dict(result or {}))
        content = []
        for block in out.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                text = str(block.get("text", ""))
                block = {**block, "text": text[: max(1, len(text) // 2)]}
            content.append(block)
        if not content:
            content = [{"type": "text", "text": '{"truncated": '}]
        out["content"] = content
        sc = out.get("structuredContent")
        if isinstance(sc, dict):
            out["structuredContent"] = {k: _corrupt_value(v) for k, v in sc.items()} or {
                "corrupted": True
            }
        out.pop("isError", None)
        return out
    raise ValueError(f"corrupt_result: mode {mode.value!r} does not produce a result")


#: The list key of each list method's result.
_LIST_KEYS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def request_target(method: Any, params: Any) -> str | None:
    """The target of a request that rules can act on, or ``None`` if none can.

    The tool name of a ``tools/call``, the URI of a ``resources/read``, the prompt name of
    a ``prompts/get``, ``""`` for the list methods of :data:`~.faults.FAULT_METHODS`;
    ``None`` for any other method or a request without a string target.

    Examples
    --------
    >>> request_target("resources/read", {"uri": "memo://insights"})
    'memo://insights'
    >>> request_target("tools/list", None), request_target("ping", {})
    ('', None)
    """
    if not isinstance(method, str) or method not in FAULT_METHODS:
        return None
    field = FAULT_METHODS[method]
    if field is None:
        return ""
    target = params.get(field) if isinstance(params, Mapping) else None
    return target if isinstance(target, str) else None


def _halve_text(block: Any) -> Any:
    if isinstance(block, dict):
        out = dict(block)
        for key in ("text", "blob"):
            if isinstance(out.get(key), str):
                out[key] = out[key][: max(1, len(out[key]) // 2)]
        if isinstance(out.get("content"), dict):  # a prompt message
            out["content"] = _halve_text(out["content"])
        return out
    return block


def fault_result(decision: FaultDecision, result: Mapping[str, Any] | None, *,
                 output_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The wire ``result`` that ``decision`` turns ``result`` into, for any fault method.

    ``tools/call`` is :func:`corrupt_result`. For the list methods ``empty_result`` is an
    empty list (``{"tools": []}``, ...) and ``malformed_result`` gives every listed item's
    ``name`` and ``uri`` a value of the wrong JSON type (an SDK client's validation rejects
    it); for ``resources/read`` they are no ``contents`` / every text and blob halved, for
    ``prompts/get`` no ``messages`` / every message text halved.

    Parameters
    ----------
    decision : FaultDecision
        An ``empty_result`` or ``malformed_result`` decision (or ``tool_error`` for
        ``tools/call``).
    result : mapping or None
        The server's original ``result`` (``None`` when the call never reached it).
    output_schema : mapping or None
        The tool's ``outputSchema`` (``tools/call`` only).

    Returns
    -------
    dict
        The replacement ``result`` object (camelCase wire keys).
    """
    if not isinstance(decision, FaultDecision):
        raise TypeError(f"decision must be a FaultDecision, got {type(decision).__name__}")
    if result is not None and not isinstance(result, Mapping):
        raise TypeError(f"result must be a mapping or None, got {type(result).__name__}")
    if output_schema is not None and not isinstance(output_schema, Mapping):
        raise TypeError(f"output_schema must be a mapping or None, got "
                        f"{type(output_schema).__name__}")
    method = decision.method
    if method == "tools/call":
        return corrupt_result(decision, result, output_schema=output_schema)
    mode = decision.mode
    if mode not in (FaultMode.EMPTY_RESULT, FaultMode.MALFORMED_RESULT):
        raise ValueError(f"fault_result: mode {mode.value!r} does not produce a result")
    if result is None:  # never reached the server: what every protocol version accepts
        out: dict[str, Any] = {"resultType": "complete"}
        if method != "prompts/get":  # cacheable results (required by 2026-07-28)
            out.update(ttlMs=0, cacheScope="private")
    else:
        out = copy.deepcopy(dict(result))
    key = _LIST_KEYS.get(method) or ("contents" if method == "resources/read" else "messages")
    if mode is FaultMode.EMPTY_RESULT:
        out[key] = []
        out.pop("nextCursor", None)
        if method == "prompts/get":
            out.pop("description", None)
        return out
    items = out.get(key) if isinstance(out.get(key), list) else []
    if method in _LIST_KEYS:
        bad = []
        for item in items or [{"name": "x", "uri": "x"}]:
            item = dict(item) if isinstance(item, dict) else {}
            for f in ("name", "uri", "uriTemplate"):
                if f in item or f == "name":
                    item[f] = _corrupt_value(item.get(f, ""))
            bad.append(item)
        out[key] = bad
    else:
        out[key] = [_halve_text(b) for b in items] or [{"text": '{"truncated": '}]
    return out


def apply_fault(decision: FaultDecision | None, response: Mapping[str, Any], *,
                output_schema: Mapping[str, Any] | None = None) -> Any:
    """Rewrite one JSON-RPC response (a dict) according to ``decision``.

    The response answers a ``tools/call`` or another method of
    :data:`~.faults.FAULT_METHODS` (``decision.method``; see :func:`fault_result`).

    Returns the new response dict, the original when ``decision`` is ``None``, ``DROP``
    (``"drop"``: withhold it) or ``DISCONNECT`` (``"disconnect"``: close the connection).
    A ``timeout`` with ``hang_s`` returns the original; the caller delays it.

    Parameters
    ----------
    decision : FaultDecision or None
        The injector's decision for this call (``None``: no fault).
    response : mapping
        The server's JSON-RPC response (``result`` or ``error``) to the request.
    output_schema : mapping or None
        The called tool's ``outputSchema``, passed to :func:`corrupt_result`.

    Returns
    -------
    dict or str
        The rewritten response, or the ``DROP`` / ``DISCONNECT`` sentinels.
    """
    if decision is None:
        return response
    rid = response.get("id")
    mode = decision.mode
    if mode is FaultMode.TIMEOUT:
        return DROP if decision.hang_s is None else response
    if mode is FaultMode.CONNECTION_DROP:
        return DISCONNECT
    if mode is FaultMode.PROTOCOL_ERROR:
        err = {"code": decision.error_code, "message": decision.message}
        if decision.retry_after_s is not None:
            err["data"] = {"retryAfter": decision.retry_after_s}
        return {"jsonrpc": "2.0", "id": rid, "error": err}
    result = fault_result(decision, response.get("result"), output_schema=output_schema)
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def response_outcome(msg: Any) -> str:
    """``"ok"``, ``"is_error"`` or ``"error"`` of a JSON-RPC response the client gets."""
    if isinstance(msg, dict) and "error" in msg:
        return "error"
    res = msg.get("result") if isinstance(msg, dict) else None
    return "is_error" if isinstance(res, dict) and res.get("isError") else "ok"


class FaultInjector:
    """Shared core: seeded schedule, per-connection per-tool counters and a fault log.

    Parameters
    ----------
    profile : FaultProfile or FaultSchedule
        What to inject (a schedule from :meth:`FaultSchedule.from_log` replays a log).
    seed : int
        Master seed of the schedule (ignored when a schedule is passed).
    log_path : str or Path or None
        When set, every record is also appended to this JSONL file, after a
        ``{"kind": "start", ...}`` marker written when the injector is created (earlier runs
        in the file are kept; :meth:`FaultSchedule.from_log` replays the last run). The file
        is opened once, unbuffered in append mode: each record is one ``write(2)`` of a
        whole line; :meth:`close` (or garbage collection) closes it.
    strict : bool
        :meth:`check_tools` raises instead of warning for rules that match no listed tool.

    Attributes
    ----------
    log_ : list of dict
        Records in call order: ``kind = "fault"`` (one per injected fault, see
        :meth:`FaultDecision.to_record`) and ``kind = "anomaly"`` (unexpected traffic).
    calls_ : dict
        ``(connection, tool) -> number of tools/call seen``.
    method_calls_ : dict
        ``(connection, method, target) -> number of calls seen`` for the other methods of
        :data:`~.faults.FAULT_METHODS` (``target`` ``""`` for list methods).
    cancelled_ : int
        Server-side handlers held by a ``timeout`` that observed their cancellation.

    Examples
    --------
    >>> from neurips26.papers.mcp_injector import FaultRule, FaultMode, FaultProfile
    >>> inj = FaultInjector(FaultProfile(rules=(FaultRule(mode=FaultMode.EMPTY_RESULT),)))
    >>> inj.decide("weather", connection="c0").mode.value
    'empty_result'
    >>> inj.calls_[("c0", "weather")]
    1
    """

    def __init__(
        self,
        profile: FaultProfile | FaultSchedule,
        *,
        seed: int = 0,
        log_path: str | Path | None = None,
        strict: bool = False,
    ) -> None:
        if isinstance(profile, FaultSchedule):
            self.schedule = profile
        elif isinstance(profile, FaultProfile):
            self.schedule = FaultSchedule(profile, seed=seed)
        else:
            raise TypeError(
                f"profile must be a FaultProfile or FaultSchedule, got {type(profile).__name__}"
            )
        self.log_path = Path(log_path) if log_path is not None else None
        self.strict = bool(strict)
        self.log_: list[dict[str, Any]] = []
        self.calls_: dict[tuple[str, str], int] = {}
        self.method_calls_: dict[tuple[str, str, str], int] = {}
        self.cancelled_ = 0
        self.output_schemas_: dict[str, dict[str, Any]] = {}
        self._n_connections = 0
        self._session_names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._log_fh = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            marker = {
                "kind": "start",
                "seed": self.seed,
                "pid": os.getpid(),
                "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            }
            # unbuffered, append-only: one write(2) per record, so each is on disk as a
            # whole line at once (no separate flush) and concurrent appenders never interleave
            self._log_fh = open(self.log_path, "ab", buffering=0)
            self._finalizer = weakref.finalize(self, self._log_fh.close)
            self._write(marker)

    def _write(self, rec: dict[str, Any]) -> None:
        fh = self._log_fh
        if fh is None or fh.closed:
            return
        fh.write((json.dumps(rec, sort_keys=True) + "\n").encode("utf-8"))

    def close(self) -> None:
        """Close the log file (records after this go to :attr:`log_` only)."""
        if self._log_fh is not None and not self._log_fh.closed:
            self._log_fh.close()

    @property
    def seed(self) -> int:
        return self.schedule.seed

    def new_connection(self, name: str | None = None) -> str:
        """A fresh connection label (``conn-0``, ``conn-1``, ... in creation order)."""
        label = name if name is not None else f"conn-{self._n_connections}"
        self._n_connections += 1
        return label

    def decide(self, tool: str, *, connection: str = "default",
               method: str = "tools/call") -> FaultDecision | None:
        """Count a call of ``method`` to target ``tool`` on ``connection``; return (and log)
        its fault. ``tool`` is the target of :func:`request_target` (``""`` for lists)."""
        if method == "tools/call":
            key: tuple = (connection, tool)
            counts: dict = self.calls_
        else:
            key, counts = (connection, method, tool), self.method_calls_
        k = counts.get(key, 0)
        counts[key] = k + 1
        d = self.schedule.decide(tool, k, connection=connection, method=method)
        if d is not None:
            self._append(d.to_record(seed=self.seed))
        return d

    def note_tools(self, tools: Any) -> None:
        """Remember each listed tool's ``outputSchema`` (from a ``tools/list`` result)."""
        if not isinstance(tools, list):
            return
        for t in tools:
            if isinstance(t, Mapping) and isinstance(t.get("name"), str):
                schema = t.get("outputSchema")
                if isinstance(schema, Mapping):
                    self.output_schemas_[t["name"]] = dict(schema)
                else:
                    self.output_schemas_.pop(t["name"], None)

    def output_schema(self, tool: str | None) -> dict[str, Any] | None:
        """The ``outputSchema`` last listed for ``tool``, or None."""
        return self.output_schemas_.get(tool) if isinstance(tool, str) else None

    def rewrite(self, decision: FaultDecision | None, response: Mapping[str, Any]) -> Any:
        """:func:`apply_fault` of ``decision`` to ``response``, with the called tool's
        ``outputSchema`` (last listed, :meth:`output_schema`) where ``decision`` answers a
        ``tools/call``: what every proxy does with a server's (or its own stand-in)
        response. Returns what :func:`apply_fault` returns."""
        schema = (self.output_schema(decision.tool)
                  if decision is not None and decision.method == "tools/call" else None)
        return apply_fault(decision, response, output_schema=schema)

    def record_anomaly(self, direction: str, detail: str, *, connection: str = "default") -> None:
        """Log unexpected traffic (unparsable lines, unknown ids, batches) passed through."""
        self._append(
            {"kind": "anomaly", "connection": connection, "direction": direction, "detail": detail}
        )

    def log_call(self, rec: dict[str, Any]) -> None:
        """Log one ``tools/call`` as the client saw it (``kind = "call"``: time, connection,
        id, tool, ``arg_hash``, the fault applied, ``outcome``, ``latency_ms``); the stdio
        proxy writes one per call. :func:`~.calllog.summarize_log` reads them back.

        Written to ``log_path`` only (a no-op without one), not kept in :attr:`log_`: a
        long-running proxy would otherwise hold every call in memory."""
        self._write(rec)

    def open_call(
        self, connection: str, msg_id: Any, tool: Any, params: Any, decision: Any
    ) -> dict[str, Any] | None:
        """Start the per-call log record of a ``tools/call`` (finished by :meth:`close_call`).

        Returns None without a ``log_path``: nothing is written, so the proxies do no
        argument hashing on their hot path."""
        if self.log_path is None:
            return None
        args = params.get("arguments") if isinstance(params, Mapping) else None
        blob = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
        return {
            "kind": "call",
            "time": time.time(),
            "connection": connection,
            "id": msg_id,
            "tool": tool,
            "arg_hash": hashlib.sha256(blob.encode()).hexdigest()[:16],
            "fault": decision.mode.value if decision is not None else None,
            "_t0": time.perf_counter(),
        }

    def close_call(self, rec: dict[str, Any] | None, outcome: str) -> None:
        """Finish a record of :meth:`open_call` (``outcome``, the latency the client saw)
        and log it with :meth:`log_call`; a no-op for None."""
        if rec is None:
            return
        t0 = rec.pop("_t0")
        # a call never answered has no latency (not the time until the proxy stopped)
        rec["latency_ms"] = (None if outcome in UNANSWERED
                             else round(1e3 * (time.perf_counter() - t0), 3))
        rec["outcome"] = outcome
        self.log_call(rec)

    def _append(self, rec: dict[str, Any]) -> None:
        self.log_.append(rec)
        self._write(rec)

    def faults(self) -> list[dict[str, Any]]:
        """The ``kind = "fault"`` records of the log."""
        return [r for r in self.log_ if r.get("kind") == "fault"]

    def _tool_rules(self) -> list[Any]:
        rules = getattr(getattr(self.schedule, "profile", None), "rules", ())
        return [r for r in rules if r.method == "tools/call"]

    def unmatched_tool_rules(self, names: Iterable[Any]) -> list[str]:
        """``tools/call`` rule patterns that match none of ``names`` (non-strings ignored)."""
        names = [n for n in names if isinstance(n, str)]
        return [r.tool for r in self._tool_rules() if not any(r.matches(n) for n in names)]

    def check_tools(self, names: Iterable[str]) -> list[str]:
        """``tools/call`` rule patterns that match none of ``names`` (a warning, or an error
        if strict)."""
        names = list(names)
        unused = self.unmatched_tool_rules(names)
        if unused:
            msg = f"fault rules match no tool the server lists: {unused}; tools: {names}"
            if self.strict:
                raise ValueError(msg)
            warnings.warn(msg, UserWarning, stacklevel=2)
        return unused

    def check_tools_quiet(self, names: Iterable[str]) -> list[str]:
        """Like :meth:`check_tools` without the warning (still raises when strict)."""
        unused = self.unmatched_tool_rules(names)
        if unused and self.strict:
            raise ValueError(f"fault rules match no tool the server lists: {unused}")
        return unused

    def _refuse_wire_faults(self, layer: str) -> None:
        rules = getattr(getattr(self.schedule, "profile", None), "rules", ())
        cut = [r.tool for r in rules if r.cut_bytes is not None]
        if cut:
            raise ValueError(f"profile: cut_bytes (rules for {cut}) is a wire-level fault of "
                             f"the stdio proxy; the {layer} carries messages, not bytes")

    def middleware(self) -> FaultInjectionMiddleware:
        """A server-side ``ServerMiddleware`` for ``MCPServer(..., middleware=[...])``."""
        self._refuse_wire_faults("middleware")
        return FaultInjectionMiddleware(self)

    def wrap(self, transport: Any, *, connection: str | None = None) -> FaultInjectingTransport:
        """Wrap an SDK client transport (an async context manager of ``(read, write)``)."""
        self._refuse_wire_faults("client transport")
        return FaultInjectingTransport(transport, self, connection=connection)

    def _connection_label(self, ctx: Any) -> str:
        # Handshake-era connections keep one Connection object for their lifetime; the
        # 2026-07-28 protocol is stateless (a fresh one per request), so all its requests
        # share the label "stateless" and counters run per tool per server.
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return "stateless"
        session = getattr(ctx.session, "_connection", ctx.session)
        try:
            label = self._session_names.get(session)
            if label is None:
                label = self.new_connection()
                self._session_names[session] = label
            return label
        except TypeError:  # not weak-referenceable
            return "default"


class FaultInjectionMiddleware:
    """Server-side fault injection as an ``mcp.server.context.ServerMiddleware``.

    Acts on the requests of :data:`~.faults.FAULT_METHODS` (``ctx.method``: ``tools/call``
    with the tool name from ``ctx.params["name"]``, the list methods, ``resources/read``
    with its ``uri``, ``prompts/get`` with its ``name``); every other request and
    notification passes through untouched.
    Handshake-era connections (``Client(..., mode="legacy")``, stdio) are labelled
    ``conn-<n>`` in order of first sight; requests of the stateless 2026-07-28 protocol
    (the SDK's default for in-process clients) share the label ``"stateless"``.
    """

    def __init__(self, injector: FaultInjector) -> None:
        self.injector = injector

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method = ctx.method
        target = request_target(method, ctx.params) if ctx.request_id is not None else None
        if target is None:
            return await call_next(ctx)
        conn = self.injector._connection_label(ctx)
        d = self.injector.decide(target, connection=conn, method=method)
        if d is None:
            res = await call_next(ctx)
            if method == "tools/list":
                self._note(res)
            return res
        from mcp import MCPError  # lazy: keep `faults` importable without the SDK

        res = None
        if d.after_server and d.mode is not FaultMode.MALFORMED_RESULT:
            res = await call_next(ctx)  # the server acts; then the fault replaces its answer
            if method == "tools/list":
                self._note(res)
            if d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
                await anyio.sleep(d.hang_s)
                return res
        if d.mode is FaultMode.TIMEOUT:
            try:
                if d.hang_s is None:
                    await anyio.sleep_forever()
                await anyio.sleep(d.hang_s)
            except anyio.get_cancelled_exc_class():
                self.injector.cancelled_ += 1
                raise
            return await call_next(ctx)
        if d.mode is FaultMode.PROTOCOL_ERROR:
            data = None if d.retry_after_s is None else {"retryAfter": d.retry_after_s}
            raise MCPError(code=d.error_code, message=d.message, data=data)
        if d.mode is FaultMode.CONNECTION_DROP:
            raise MCPError(code=CONNECTION_CLOSED_CODE, message="injected connection drop")
        if d.mode is FaultMode.MALFORMED_RESULT:
            res = await call_next(ctx)
            if method == "tools/list":
                self._note(res)
        if hasattr(res, "model_dump"):
            res = res.model_dump(by_alias=True, mode="json", exclude_none=True)
        out = fault_result(d, res, output_schema=self.injector.output_schema(target))
        if method != "tools/call":
            return out  # a wire dict: the runner sends it as is
        from mcp_types import CallToolResult

        # a model, so the runner serialises it for the negotiated protocol version
        return CallToolResult.model_validate(out)

    def _note(self, res: Any) -> None:
        tools = res.get("tools") if isinstance(res, dict) else getattr(res, "tools", None)
        if tools is not None:
            self.injector.note_tools([t.model_dump(by_alias=True, mode="json", exclude_none=True)
                                      if hasattr(t, "model_dump") else t for t in tools])


class FaultInjectingTransport:
    """Client-side fault injection around any SDK transport; itself a ``Transport``.

    Records outgoing requests of :data:`~.faults.FAULT_METHODS` (``tools/call``, the list
    methods, ``resources/read``, ``prompts/get``) by id and rewrites, withholds or replaces
    the matching response (:func:`apply_fault`); every other message, including pings,
    notifications and exceptions from the inner transport, passes through unchanged (a
    request no rule fires on too). A ``connection_drop`` closes both directions, so the
    pending call and every later call fail with the SDK's connection error.

    Parameters
    ----------
    inner : Transport
        E.g. ``stdio_client(StdioServerParameters(...))`` or the SDK's in-memory transport.
    injector : FaultInjector
    connection : str or None
        Connection label for the per-connection counters (default: ``conn-<n>``).
    """

    def __init__(self, inner: Any, injector: FaultInjector, *, connection: str | None = None):
        if not hasattr(inner, "__aenter__"):
            raise TypeError(f"inner must be an async context manager, got {type(inner).__name__}")
        self.inner = inner
        self.injector = injector
        self._name = connection
        self.connection: str | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> tuple[Any, Any]:
        from mcp.shared.message import SessionMessage

        self.connection = self.injector.new_connection(self._name)
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            inner_read, inner_write = await stack.enter_async_context(self.inner)
            c2s_send, c2s_recv = anyio.create_memory_object_stream[SessionMessage](32)
            s2c_send, s2c_recv = anyio.create_memory_object_stream[Any](32)
            tg = anyio.create_task_group()
            await stack.enter_async_context(tg)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack, self._tg = stack, tg
        self._pending: dict[Any, FaultDecision | None] = {}
        self._closed = False
        self._s2c_send = s2c_send
        tg.start_soon(self._pump_out, c2s_recv, inner_write, s2c_send)
        tg.start_soon(self._pump_in, inner_read, s2c_send)
        return s2c_recv, c2s_send

    async def __aexit__(self, *exc: Any) -> None:
        if self._stack is None:
            return
        self._tg.cancel_scope.cancel()
        stack, self._stack = self._stack, None
        await stack.__aexit__(*exc)

    async def _disconnect(self) -> None:
        self._closed = True
        await self._s2c_send.aclose()

    async def _pump_out(self, c2s_recv: Any, inner_write: Any, s2c_send: Any) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import JSONRPCRequest, jsonrpc_message_adapter

        async with c2s_recv:
            async for msg in c2s_recv:
                if self._closed:
                    break
                m = msg.message
                if isinstance(m, JSONRPCRequest) and m.method in FAULT_METHODS:
                    tool = request_target(m.method, m.params)
                    if tool is not None:
                        d = self.injector.decide(tool, connection=self.connection,
                                                 method=m.method)
                        if d is not None and not d.reaches_server:
                            if d.mode is FaultMode.CONNECTION_DROP:
                                await self._disconnect()
                                break
                            new = self.injector.rewrite(d, {"jsonrpc": "2.0", "id": m.id})
                            if new != DROP:
                                reply = SessionMessage(
                                    message=jsonrpc_message_adapter.validate_python(new)
                                )
                                try:
                                    await s2c_send.send(reply)
                                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                                    break
                            continue
                        self._pending[m.id] = d
                try:
                    await inner_write.send(msg)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break

    async def _pump_in(self, inner_read: Any, s2c_send: Any) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

        try:
            async for msg in inner_read:
                if self._closed:
                    break
                m = getattr(msg, "message", None)
                if isinstance(m, JSONRPCResponse) and isinstance(m.result, dict):
                    self.injector.note_tools(m.result.get("tools"))
                if isinstance(m, (JSONRPCResponse, JSONRPCError)) and m.id in self._pending:
                    d = self._pending.pop(m.id)
                    if d is not None:
                        wire = m.model_dump(by_alias=True, mode="json", exclude_unset=True)
                        new = self.injector.rewrite(d, wire)
                        if new == DROP:
                            continue
                        if new == DISCONNECT:  # connection_drop with after_server
                            await self._disconnect()
                            break
                        if new is not wire:
                            msg = SessionMessage(
                                message=jsonrpc_message_adapter.validate_python(new),
                                metadata=msg.metadata,
                            )
                        if d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
                            self._tg.start_soon(self._deliver_later, msg, d.hang_s, s2c_send)
                            continue
                try:
                    await s2c_send.send(msg)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break
        finally:
            await s2c_send.aclose()

    async def _deliver_later(self, msg: Any, delay: float, s2c_send: Any) -> None:
        await anyio.sleep(delay)
        try:
            await s2c_send.send(msg)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
