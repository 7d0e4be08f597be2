"""The contract between a paper's experiment and the runner.

A paper's ``experiment.py`` defines:

- ``Config``: a frozen dataclass whose fields are the experiment's settings, with a
  ``seed: int`` field;
- ``TIERS``: a dict mapping ``"smoke"``, ``"small"`` and ``"paper"`` to a ``Config``;
- ``METRICS``: a tuple naming every metric ``run()`` can return; a name with ``*``
  stands for a family (``"rmse_*_n*"``), claims name their metrics exactly
  (:func:`is_declared`);
- ``run(config) -> RunResult``: the reproduction, using only the paper's public API.

The runner applies ``--seed`` and ``--set key=value`` overrides with
:func:`apply_overrides`, which type-checks each value against the dataclass fields.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any

Scalar = float | int | bool


@dataclass(frozen=True)
class RunResult:
    """What an experiment returns.

    Attributes
    ----------
    metrics : dict
        Scalar measurements, by name. Claims are evaluated on these.
    volatile : tuple of str
        Names of metrics that depend on the machine's clock or memory (times,
        speed ratios, peak memory); they are left out of determinism checks.
    tables : dict
        Named tables (lists of row dicts with scalar or string values) for the report.
    figures : dict
        Named PNG images (bytes) for the report.
    notes : tuple of str
        Plain-language remarks (did a fit converge, what was skipped and why).
    captions : dict, optional
        Figure name to caption: what is plotted and which figure of the paper it
        reproduces. The report shows it under the figure (a figure without one gets a
        generic caption); captions of figures the run did not make are dropped.
    reasons : dict, optional
        Metric name to why it is NaN (not measured at this size, too few points for a
        fit); shown in the row of every claim that tests the metric.
    intervals : dict, optional
        Metric name to its interval, as :meth:`neurips26.experiment.Estimate.to_dict`
        gives it (``value``, ``lo``, ``hi``, ``method``, ``level``, ``n``); a claim on
        the metric is judged on the interval. Filled by the experiment layer's driver.
    """

    metrics: dict[str, Scalar]
    volatile: tuple[str, ...] = ()
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    captions: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        metrics = {}
        for key, value in self.metrics.items():
            if not isinstance(key, str):
                raise TypeError(f"metric names must be str, got {key!r}")
            metrics[key] = _to_python_scalar(value)
        object.__setattr__(self, "metrics", metrics)
        for key, value in self.metrics.items():
            if not isinstance(value, (int, float, bool)):
                raise TypeError(
                    f"metric {key!r} must be a Python int, float or bool, "
                    f"got {type(value).__name__}"
                )
        missing = set(self.volatile) - set(self.metrics)
        if missing:
            raise ValueError(f"volatile names metrics that do not exist: {sorted(missing)}")
        missing = set(self.intervals) - set(self.metrics)
        if missing:
            raise ValueError(f"intervals name metrics that do not exist: {sorted(missing)}")
        # A caption of a figure this run did not make (one a tier skips) is dropped.
        captions = {k: str(v) for k, v in self.captions.items() if k in self.figures}
        object.__setattr__(self, "captions", captions)
        tables = {
            name: [{k: _to_python_value(v) for k, v in row.items()} for row in rows]
            for name, rows in self.tables.items()
        }
        object.__setattr__(self, "tables", tables)

    def stable_metrics(self) -> dict[str, Scalar]:
        """The metrics that must be identical for the same seed on the same machine."""
        return {k: v for k, v in self.metrics.items() if k not in self.volatile}


def is_declared(name: str, declared: tuple[str, ...]) -> bool:
    """Whether metric ``name`` is in an experiment's ``METRICS`` (exactly or by a pattern).

    >>> is_declared("rmse_skf_n8", ("wall", "rmse_*_n*"))
    True
    >>> is_declared("rmse_skf", ("wall", "rmse_*_n*"))
    False
    """
    return name in declared or any(
        "*" in pattern and fnmatch.fnmatchcase(name, pattern) for pattern in declared
    )


def _to_python_scalar(value: Any) -> Any:
    """numpy scalars (and 0-d arrays) become the Python int, float or bool they hold."""
    if isinstance(value, (bool, int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        out = item()
        if isinstance(out, (bool, int, float)):
            return out
    return value


def _to_python_value(value: Any) -> Any:
    """A table cell as plain Python: numpy scalars unwrapped, arrays made lists."""
    value = _to_python_scalar(value)
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and getattr(value, "shape", None) is not None:
        return tolist()
    if isinstance(value, tuple):
        return [_to_python_value(v) for v in value]
    return value


class ConfigError(ValueError):
    """A bad ``--set`` override or config value."""


#: The largest seed accepted (numpy's SeedSequence takes any non-negative int, but the
#: store keeps seeds as SQLite integers).
MAX_SEED = 2**63 - 1


def param(
    default: Any,
    *,
    help: str = "",
    min: float | None = None,
    max: float | None = None,
    choices: tuple[Any, ...] | None = None,
    allow_empty: bool = False,
) -> Any:
    """A config field with its meaning and valid range, for ``info`` and ``--set``.

    Parameters
    ----------
    default : object
        The field's default (tuples are immutable, so they are safe defaults).
    help : str
        What the field means, shown by ``neurips26 info``.
    min, max : float, optional
        Inclusive bounds on the value (on every element of a tuple).
    choices : tuple, optional
        The allowed values (of every element of a tuple).
    allow_empty : bool
        Whether a tuple field may be empty (refused by default).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Config:
    ...     seed: int = 0
    ...     num_runs: int = param(10, help="independent runs", min=1)
    >>> validate_config(Config(num_runs=0))
    Traceback (most recent call last):
    ...
    neurips26.common.experiment.ConfigError: num_runs: 0 is below the minimum 1
    """
    meta = {"help": help, "min": min, "max": max, "choices": choices, "allow_empty": allow_empty}
    return field(default=default, metadata=meta)


def validate_config(config: Any) -> Any:
    """Check every field of ``config`` against its declared range; return it unchanged.

    Always checked: ``seed`` is an integer in ``[0, MAX_SEED]``; floats are not NaN;
    tuples are not empty (unless the field allows it). Fields made with :func:`param`
    are also checked against ``min``, ``max`` and ``choices``.

    Raises
    ------
    ConfigError
        Naming the field and what is wrong with its value.
    """
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        meta = f.metadata or {}
        if f.name == "seed":
            check_seed(value)
        values = value if isinstance(value, tuple) else (value,)
        if isinstance(value, tuple) and not value and not meta.get("allow_empty", False):
            raise ConfigError(f"{f.name}: an empty list is not allowed")
        for v in values:
            if isinstance(v, float) and v != v:
                raise ConfigError(f"{f.name}: NaN is not allowed")
            if v is None or isinstance(v, bool):
                continue
            choices = meta.get("choices")
            if choices is not None and v not in choices:
                raise ConfigError(f"{f.name}: {v!r} is not one of {tuple(choices)}")
            lo, hi = meta.get("min"), meta.get("max")
            if isinstance(v, (int, float)):
                if lo is not None and v < lo:
                    raise ConfigError(f"{f.name}: {v!r} is below the minimum {lo!r}")
                if hi is not None and v > hi:
                    raise ConfigError(f"{f.name}: {v!r} is above the maximum {hi!r}")
    return config


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of a config dataclass (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def config_from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a config dataclass from :func:`config_to_dict` output."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _coerce(data[f.name], hints[f.name], f.name)
    return cls(**kwargs)


def _coerce(value: Any, hint: Any, name: str) -> Any:
    """Check ``value`` (already parsed) against the type ``hint``; convert lists to tuples."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return _coerce(value, arg, name)
            except ConfigError:
                continue
        raise ConfigError(f"{name}: {value!r} matches none of {hint}")
    if hint is type(None):
        if value is None:
            return None
        raise ConfigError(f"{name}: expected None, got {value!r}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], name) for v in value)
        if len(args) != len(value):
            raise ConfigError(f"{name}: expected {len(args)} values, got {len(value)}")
        return tuple(_coerce(v, a, name) for v, a in zip(args, value, strict=True))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if hint is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{name}: expected a string, got {value!r}")
    if typing.get_origin(hint) is typing.Literal:
        if value in args:
            return value
        raise ConfigError(f"{name}: expected one of {args}, got {value!r}")
    raise ConfigError(f"{name}: unsupported field type {hint}")  # pragma: no cover


def _parse_text(text: str, hint: Any) -> Any:
    """Parse the text of ``--set key=TEXT`` for a field of type ``hint``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        pass
    else:
        if value is not None or _allows_none(hint):
            return value
        return text
    origin = typing.get_origin(hint)
    if origin is tuple or (
        origin in (typing.Union, types.UnionType)
        and any(typing.get_origin(a) is tuple for a in typing.get_args(hint))
    ):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        return [_parse_text(p, str) for p in parts]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() in ("none", "null") and _allows_none(hint):
        return None
    return text


def _allows_none(hint: Any) -> bool:
    """Whether a field of type ``hint`` may be ``None`` (``"none"`` is text otherwise)."""
    return hint is type(None) or (
        typing.get_origin(hint) in (typing.Union, types.UnionType)
        and type(None) in typing.get_args(hint)
    )


def apply_overrides(config: Any, overrides: dict[str, str] | None = None, **values: Any) -> Any:
    """Return ``config`` with fields replaced.

    Parameters
    ----------
    config : dataclass instance
        The tier's config.
    overrides : dict of str to str
        Raw ``--set`` texts (JSON, or comma-separated for tuples).
    **values
        Already-typed values (e.g. ``seed=3`` from ``--seed``); ``None`` leaves the
        field as it is. A key given both here and in ``overrides`` must agree.

    Raises
    ------
    ConfigError
        For an unknown key (naming the valid ones), a value of the wrong type, or a
        value outside the field's declared range (:func:`validate_config`).
    """
    cls = type(config)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    changes: dict[str, Any] = {}
    for key, text in (overrides or {}).items():
        if key not in hints or key not in names:
            raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(names)}")
        changes[key] = _coerce(_parse_text(text, hints[key]), hints[key], key)
    for key, value in values.items():
        if value is None:
            continue
        if key not in names:
            raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(names)}")
        typed = _coerce(value, hints[key], key)
        if key in changes and changes[key] != typed:
            raise ConfigError(
                f"{key} given twice with different values ({changes[key]!r} by --set, {typed!r} "
                f"by --{key}); give it once"
            )
        changes[key] = typed
    return validate_config(dataclasses.replace(config, **changes))


def check_seed(seed: Any) -> int:
    """Return ``seed`` if it is an integer in ``[0, MAX_SEED]``; else raise ConfigError.

    >>> check_seed(3)
    3
    >>> check_seed(-5)
    Traceback (most recent call last):
    ...
    neurips26.common.experiment.ConfigError: seed: -5 is outside [0, 9223372036854775807]
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed: expected an integer, got {seed!r}")
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed: {seed} is outside [0, {MAX_SEED}]")
    return seed


def parse_set_args(items: list[str] | None) -> dict[str, str]:
    """Turn ``["a=1", "b=x,y"]`` into ``{"a": "1", "b": "x,y"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = text.strip()
    return out
