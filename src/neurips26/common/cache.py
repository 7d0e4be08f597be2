"""A cache for trained models and derived arrays, keyed by code version, config and seed.

Entries live in a user cache directory (``$NEURIPS26_CACHE``, else
``$XDG_CACHE_HOME/neurips26``, else ``~/.cache/neurips26``), never in the repository. They
are safe to delete at any time; a missing or unreadable entry is recomputed. Writes are
atomic (a temporary file renamed into place), so a killed run leaves no half entry.
``NEURIPS26_NO_CACHE=1`` turns the cache off. Tests run with a fresh empty cache, so no
test ever depends on an entry.

Each entry keeps, beside it, the CPU seconds its computation took (``<entry>.cpu``: the
process's CPU time while computing it, plus what entries it read on the way had cost).
Every read adds that cost to a per-process tally (:func:`cache_reads`), which the runner
resets before a run and stores with it, so a run that reads a cached model still shows
what producing it cost.

The key of an entry is the SHA-256 of: the entry's name, the package version, a hash of
the source files of the code that produced it (``code_version(module)``), the config (as
sorted JSON) and the seed. Changing any of them gives a new entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np


def cache_dir() -> Path:
    """The cache directory (created on first write, not here)."""
    env = os.environ.get("NEURIPS26_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "neurips26"


def cache_enabled() -> bool:
    return os.environ.get("NEURIPS26_NO_CACHE", "") not in ("1", "true", "yes")


#: This process's cache reads since the last :func:`reset_cache_reads`: entries read, the
#: CPU seconds their computation had cost, and how many had no recorded cost (entries
#: written before costs were kept).
_READS = {"hits": 0, "cpu_seconds": 0.0, "unrecorded": 0}


def cache_reads() -> dict[str, float | int]:
    """This process's cache reads since :func:`reset_cache_reads` (a copy): ``hits``,
    ``cpu_seconds`` (what computing the entries read had cost) and ``unrecorded`` (entries
    read whose cost was never recorded)."""
    return dict(_READS)


def reset_cache_reads() -> None:
    """Start a new tally of :func:`cache_reads` (the runner calls it before each run)."""
    _READS.update(hits=0, cpu_seconds=0.0, unrecorded=0)


def _cost_path(path: Path) -> Path:
    return path.with_name(path.name + ".cpu")


def _note_hit(path: Path) -> None:
    _READS["hits"] += 1
    try:
        cost = float(json.loads(_cost_path(path).read_text())["cpu_seconds"])
        if not cost >= 0:
            raise ValueError(cost)
    except (OSError, ValueError, KeyError, TypeError):
        _READS["unrecorded"] += 1
        return
    _READS["cpu_seconds"] += cost


def _costed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its cost: this process's CPU seconds while it ran plus the recorded
    cost of the cache entries it read."""
    c0, r0 = time.process_time(), _READS["cpu_seconds"]
    out = fn()
    return out, time.process_time() - c0 + (_READS["cpu_seconds"] - r0)


def _write_entry(path: Path, data: bytes, cost: float) -> None:
    try:
        _atomic_write(path, data)
        _atomic_write(_cost_path(path), json.dumps({"cpu_seconds": cost}).encode())
    except OSError:
        pass  # a read-only or full cache only costs the recomputation next time


@lru_cache(maxsize=64)
def code_version(module: str) -> str:
    """A short hash of the ``.py`` sources of ``module``'s package folder (sorted by path)."""
    mod = importlib.import_module(module)
    path = Path(mod.__file__ or "")
    root = path.parent if path.name == "__init__.py" or path.suffix == ".py" else path
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_key(name: str, config: Any = None, seed: int | None = None, *,
              modules: tuple[str, ...] = ()) -> str:  # fmt: skip
    """The hex key of an entry (see the module docstring for what goes in)."""
    import neurips26

    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    payload = {
        "name": name,
        "version": neurips26.__version__,
        "code": [code_version(m) for m in modules],
        "config": config,
        "seed": seed,
    }
    text = json.dumps(payload, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(name: str, key: str, suffix: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    return cache_dir() / safe / f"{key}{suffix}"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_arrays(name: str, key: str, compute: Callable[[], dict[str, np.ndarray]]
                  ) -> tuple[dict[str, np.ndarray], bool]:  # fmt: skip
    """Arrays from the cache, or ``compute()`` them and store them.

    Returns
    -------
    arrays : dict of str to ndarray
    hit : bool
        Whether they came from the cache.
    """
    path = _path(name, key, ".npz")
    if cache_enabled() and path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            _note_hit(path)
            return arrays, True
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
    arrays, cost = _costed(compute)
    if not isinstance(arrays, dict):
        raise TypeError("compute: must return a dict of arrays")
    if cache_enabled():
        buf = io.BytesIO()
        np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
        _write_entry(path, buf.getvalue(), cost)
    return arrays, False


def cached_module(name: str, key: str, build: Callable[[], Any],
                  train: Callable[[Any], Any]) -> tuple[Any, bool]:  # fmt: skip
    """A trained ``torch.nn.Module``: ``build()`` it, then load its weights from the cache
    or ``train(model)`` it in place and store its ``state_dict`` (safetensors when
    available, else ``torch.save`` of tensors only, read with ``weights_only=True``).

    Returns
    -------
    model : nn.Module (in eval mode)
    hit : bool
    """
    import torch

    model = build()
    path = _path(name, key, ".pt")
    if cache_enabled() and path.exists():
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(state)
            model.eval()
            _note_hit(path)
            return model, True
        except (OSError, RuntimeError, ValueError, KeyError):
            path.unlink(missing_ok=True)
    _, cost = _costed(lambda: train(model))
    model.eval()
    if cache_enabled():
        buf = io.BytesIO()
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buf)
        _write_entry(path, buf.getvalue(), cost)
    return model, False
