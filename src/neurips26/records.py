"""The data a run leaves behind, and its one serialisation.

:class:`RunRecord` is what the runner produces and the store keeps. It is written to
JSON in one way only (:meth:`RunRecord.to_dict`, the dataclass's own fields) and read
back by :meth:`RunRecord.from_dict`, which ignores keys it does not know and fills
missing ones with their defaults, so records written by an older or newer package
still read. This module imports nothing that executes experiments: the store and
the report depend on it, not on :mod:`neurips26.runner`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from neurips26 import __version__
from neurips26.registry import ClaimResult

OK = "ok"
FAILED = "failed"


class RecordError(ValueError):
    """A stored record that cannot be decoded."""


@dataclass(frozen=True)
class RunRecord:
    """Everything stored about one run of one paper.

    ``wall_seconds`` and ``cpu_seconds`` are measured by the runner around the
    experiment's ``run`` (experiments need not time themselves); ``peak_memory_mb`` is
    the peak resident set of the process that ran it. ``cache_reads`` is what the run
    read from the model and array cache (:func:`neurips26.common.cache.cache_reads`:
    ``hits``, the ``cpu_seconds`` computing those entries had cost, and how many had no
    recorded cost); ``cpu_seconds`` does not include that cost.
    """

    slug: str
    tier: str
    seed: int
    config: dict[str, Any]
    status: str
    metrics: dict[str, Any]
    volatile: tuple[str, ...]
    claims: tuple[ClaimResult, ...]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    error: str | None = None
    captions: dict[str, str] = field(default_factory=dict)
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)
    device: str = "cpu"
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_memory_mb: float = 0.0
    cache_reads: dict[str, Any] = field(default_factory=dict)
    package_version: str = __version__
    git_commit: str = "unknown"
    code_version: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    created_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field except ``figures`` (binary, stored apart).

        Examples
        --------
        >>> r = RunRecord("toy", "smoke", 0, {}, OK, {"x": 1.0}, (), ())
        >>> RunRecord.from_dict(r.to_dict()) == r
        True
        """
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "figures":
                continue
            value = getattr(self, f.name)
            if f.name == "claims":
                value = [dataclasses.asdict(c) for c in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` view: :meth:`to_dict` without the tables."""
        out = self.to_dict()
        out.pop("tables", None)
        return out

    def dumps(self) -> str:
        """:meth:`to_dict` as JSON text (values JSON cannot hold are written as text)."""
        return json.dumps(self.to_dict(), default=str)

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], figures: dict[str, bytes] | None = None
    ) -> RunRecord:
        """Rebuild a record from :meth:`to_dict` output (of this or another version).

        Raises
        ------
        RecordError
            If ``data`` is not a dict or lacks a required field.
        """
        if not isinstance(data, dict):
            raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "figures":
                continue
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise RecordError(f"the record has no {f.name!r}")
                continue
            value = data[f.name]
            _check_type(f.name, value)
            if f.name == "claims":
                value = tuple(_claim_from_dict(c) for c in value or ())
            elif f.name in ("volatile", "notes"):
                value = tuple(value or ())
            kwargs[f.name] = value
        return cls(figures=dict(figures or {}), **kwargs)

    @classmethod
    def loads(cls, text: str, figures: dict[str, bytes] | None = None) -> RunRecord:
        """Inverse of :meth:`dumps`."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as err:
            raise RecordError(f"the record is not valid JSON ({err})") from err
        return cls.from_dict(data, figures)


#: The JSON type each field of a stored record must have (None allowed where noted).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "slug": (str,), "tier": (str,), "seed": (int,), "status": (str,),
    "config": (dict,), "metrics": (dict,), "volatile": (list, tuple, type(None)),
    "claims": (list, tuple, type(None)), "tables": (dict,), "notes": (list, tuple, type(None)),
    "error": (str, type(None)), "captions": (dict,), "intervals": (dict,), "device": (str,),
    "wall_seconds": (int, float), "cpu_seconds": (int, float), "peak_memory_mb": (int, float),
    "cache_reads": (dict,), "environment": (dict,),
}


def _check_type(name: str, value: Any) -> None:
    want = _FIELD_TYPES.get(name)
    if want is not None and (not isinstance(value, want) or (isinstance(value, bool)
                             and bool not in want)):
        raise RecordError(f"field {name!r} is a {type(value).__name__}, expected "
                          f"{' or '.join(t.__name__ for t in want)}")


def _claim_from_dict(data: Any) -> ClaimResult:
    """A :class:`ClaimResult` from its dict; unknown keys dropped, missing ones None.

    A verdict or kind this package does not know is refused (a crafted or foreign row)."""
    from neurips26.registry import CLAIM_KINDS, VERDICTS

    if not isinstance(data, dict):
        raise RecordError(f"a claim result must be a JSON object, got {data!r}")
    if data.get("verdict") not in VERDICTS:
        raise RecordError(f"claim {data.get('id')!r} has an unknown verdict "
                          f"{data.get('verdict')!r}")
    if data.get("kind", "paper") not in CLAIM_KINDS:
        raise RecordError(f"claim {data.get('id')!r} has an unknown kind {data.get('kind')!r}")
    kwargs = {}
    for f in dataclasses.fields(ClaimResult):
        if f.name in data:
            kwargs[f.name] = data[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = None
    return ClaimResult(**kwargs)

