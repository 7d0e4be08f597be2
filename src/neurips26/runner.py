"""Running reproductions: config, seed, timing, memory, environment, verdicts.

:func:`run_paper` runs a paper's experiment in this process and returns a
:class:`~neurips26.records.RunRecord`, timing it (wall and CPU seconds) itself.
:func:`run_many` runs several on a *backend*:

- ``local`` (the default): each paper in a fresh child process, so one crash or memory
  blow-up cannot take the others down and peak memory is the run's own;
- ``ray``: each paper as a Ray task, on a local Ray instance or an existing cluster
  (``pip install 'neurips26[ray]'``).

Both hand each finished record to a callback as soon as it arrives (the caller stores
it before anything else happens), honour each paper's declared
:class:`~neurips26.registry.Resources` and a per-paper time limit, and record a run
that dies, is killed or times out as failed with its reason. SIGINT and SIGTERM stop
the running papers and raise :class:`Interrupted`; runs already handed over are kept.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import multiprocessing
import os
import platform
import resource
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from neurips26 import __version__
from neurips26.records import FAILED, OK, RunRecord
from neurips26.registry import (
    NOT_AT_TIER,
    RUN_FAILED,
    TIERS,
    ClaimResult,
    evaluate_claim,
    get_paper,
    not_run,
)

__all__ = [
    "BACKENDS",
    "FAILED",
    "OK",
    "Interrupted",
    "RunRecord",
    "code_version",
    "failed_record",
    "resolve_config",
    "run_many",
    "run_paper",
]

PACKAGE_DIR = Path(__file__).resolve().parent

BACKENDS = ("local", "ray")


class Interrupted(Exception):
    """``run_many`` was stopped by a signal; the runs handed over before are kept."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def git_commit() -> str:
    """The checkout's commit (with ``-dirty`` for uncommitted changes), or ``unknown``."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def code_version(slug: str) -> str:
    """A hash of the code a paper's result depends on: its package and the ``common/``
    modules it imports.

    Two runs with the same slug, tier, seed and code version are the same run, so
    ``reproduce`` skips the second. The ``common/`` part is the closure of the paper's
    imports found statically (:func:`common_dependencies`), so a change to a shared module
    reruns only the papers that use it.
    """
    digest = hashlib.sha256(__version__.encode())
    paper = sorted((PACKAGE_DIR / "papers" / slug).rglob("*.py"))
    for path in paper + common_dependencies(slug):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _module_files(name: str) -> list[Path]:
    """The ``.py`` files behind a ``neurips26.common`` module name (a package: all of it).

    A package counts whole because its ``__init__`` may import submodules lazily
    (``common.models`` does, PEP 562); importing any of ``neurips26.common`` also runs
    ``common/__init__.py``.
    """
    parts = name.split(".")
    if parts[:2] not in (["neurips26", "common"], ["neurips26", "experiment"]):
        return []
    base = PACKAGE_DIR.joinpath(*parts[1:])
    files = [PACKAGE_DIR / parts[1] / "__init__.py"]
    if base.is_dir():
        files += sorted(base.rglob("*.py"))
    elif base.with_suffix(".py").exists():
        files.append(base.with_suffix(".py"))
        for k in range(2, len(parts)):  # parent packages' __init__ run too
            init = PACKAGE_DIR.joinpath(*parts[1:k], "__init__.py")
            if init.exists():
                files.append(init)
    return files


def _is_module(name: str) -> bool:
    base = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    return base.is_dir() or base.with_suffix(".py").exists()


def _imported_names(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports anywhere (functions included)."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return set()
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    package = list(rel.parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = package[: len(package) - node.level + 1]
                module = ".".join(up + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = [f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")]
            # ``from pkg import submodule`` runs pkg/__init__.py and the submodule only.
            names.update(subs or [module])
            if subs:
                names.add(f"{module}.__init__")
    return names


def common_dependencies(slug: str) -> list[Path]:
    """The ``common/`` files a paper's package imports, directly or through ``common/``."""
    todo = sorted((PACKAGE_DIR / "papers" / slug).rglob("*.py"))
    seen: set[Path] = set()
    deps: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imported_names(path):
            for f in _module_files(name):
                if f not in deps:
                    deps.add(f)
                    todo.append(f)
    return sorted(deps)


def environment() -> dict[str, str]:
    """Versions and machine facts recorded with each run."""
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": str(os.cpu_count()),
    }
    for name in ("numpy", "scipy", "torch", "sklearn", "pandas"):
        module = sys.modules.get(name)
        if module is not None:
            env[name] = str(getattr(module, "__version__", "?"))
    return env


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux: the peak resident set of this process.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def resolve_config(
    slug: str, tier: str, seed: int | None = None, overrides: dict[str, str] | None = None
):
    """The experiment module and the tier's config with ``seed`` and overrides applied.

    This is the one place where command-line values become a config: ``seed`` (from
    ``--seed``; ``None`` keeps the tier's) and ``overrides`` (``--set``, which may also
    set ``seed``; the two must agree) are type-checked and range-checked against the
    config's fields before anything runs.

    Raises
    ------
    ConfigError
        For an unknown tier or key, a mistyped value, or one outside its range.
    """
    from neurips26.common.experiment import ConfigError, apply_overrides

    if tier not in TIERS:
        raise ConfigError(f"unknown tier {tier!r}; valid tiers: {', '.join(TIERS)}")
    experiment = get_paper(slug).experiment()
    config = apply_overrides(experiment.TIERS[tier], overrides, seed=seed)
    return experiment, config


def check_device(slug: str, device: str) -> str:
    """Return ``device`` if ``slug`` can run on it here; else raise ConfigError.

    ``cuda`` needs a paper that declares a GPU (``Resources.gpu > 0``: a paper that
    declares none would be scheduled on CPUs by Ray) and a visible CUDA device.
    """
    from neurips26.common.experiment import ConfigError
    from neurips26.experiment import DEVICES

    if device not in DEVICES:
        raise ConfigError(f"device: {device!r} is not one of {', '.join(DEVICES)}")
    if device == "cuda":
        if not get_paper(slug).resources.gpu > 0:
            raise ConfigError(
                f"device: {slug} declares no GPU (Resources.gpu = 0) and runs on the CPU only"
            )
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency
            raise ConfigError("device: cuda needs torch") from None
        if not torch.cuda.is_available():
            raise ConfigError("device: cuda was asked for but no CUDA device is visible")
    return device


def run_paper(
    slug: str,
    *,
    tier: str = "small",
    seed: int | None = None,
    overrides: dict[str, str] | None = None,
    device: str = "cpu",
    resolved: tuple | None = None,
) -> RunRecord:
    """Run one paper's reproduction in this process.

    ``resolved`` is the ``(experiment module, config)`` that :func:`resolve_config`
    already returned for these arguments (the command line checks them before opening
    the store), so the config is resolved once per run.

    Configuration errors (unknown tier, bad override, a device the paper or the machine
    cannot use) raise :class:`~neurips26.common.experiment.ConfigError` before anything
    runs. An exception inside the experiment does not raise: it gives a record with
    ``status="failed"`` and the traceback, and every claim ``not run``.
    """
    from neurips26.common.experiment import config_to_dict
    from neurips26.common.seeding import seed_everything
    from neurips26.common.threads import limit_threads
    from neurips26.experiment import Context

    paper = get_paper(slug)
    if resolved is None:
        resolved = resolve_config(slug, tier, seed, overrides)
    experiment, config = resolved
    check_device(slug, device)
    ctx = Context(device=device, tier=tier)
    seed = config.seed
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    # The code's version and commit as the run starts: files edited or commits made while
    # it runs must not be recorded as the code that produced it.
    version, commit = code_version(slug), git_commit()
    seed_everything(seed)
    from neurips26.common.cache import cache_reads, reset_cache_reads  # numpy: lazily

    reset_cache_reads()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        # One thread limit for every paper, in `run` and `reproduce` alike: BLAS and torch
        # use the cores the paper declares (its resources), never the whole machine's pool.
        with limit_threads(paper.resources.cpus):
            driver = getattr(experiment, "EXPERIMENT", None)
            result = driver.run(config, ctx) if driver is not None else experiment.run(config)
        status, error = OK, None
    except Exception:
        result, status, error = None, FAILED, traceback.format_exc()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    metrics = dict(result.metrics) if result is not None else {}
    reasons = dict(getattr(result, "reasons", {}) or {})
    intervals = dict(getattr(result, "intervals", {}) or {})
    claims = tuple(
        evaluate_claim(c, metrics, tier, reasons, intervals) if status == OK
        else _not_run(c, tier)
        for c in paper.claims
    )
    return RunRecord(
        slug=slug,
        tier=tier,
        seed=seed,
        config=config_to_dict(config),
        status=status,
        metrics=metrics,
        volatile=tuple(result.volatile) if result is not None else (),
        claims=claims,
        tables=dict(result.tables) if result is not None else {},
        figures=dict(result.figures) if result is not None else {},
        notes=tuple(result.notes) if result is not None else (),
        captions=dict(getattr(result, "captions", {}) or {}) if result is not None else {},
        intervals=intervals,
        device=device,
        error=error,
        wall_seconds=wall,
        cpu_seconds=cpu,
        peak_memory_mb=_peak_rss_mb(),
        cache_reads=cache_reads(),
        git_commit=commit,
        code_version=version,
        environment=environment(),
        created_at=started,
    )


def _not_run(claim, tier: str) -> ClaimResult:
    result = evaluate_claim(claim, {}, tier)
    if result.reason == NOT_AT_TIER:
        return result
    return not_run(claim, tier, RUN_FAILED, "the run failed before measuring it")


def failed_record(
    slug: str,
    tier: str,
    seed: int,
    error: str,
    overrides: dict[str, str] | None = None,
    *,
    wall_seconds: float = 0.0,
) -> RunRecord:
    """A record for a run that died before it could report (crash, kill, OOM, timeout)."""
    paper = get_paper(slug)
    return RunRecord(
        slug=slug,
        tier=tier,
        seed=seed,
        config={"overrides": overrides or {}},
        status=FAILED,
        metrics={},
        volatile=(),
        claims=tuple(_not_run(c, tier) for c in paper.claims),
        error=error,
        wall_seconds=wall_seconds,
        git_commit=git_commit(),
        code_version=code_version(slug),
        environment=environment(),
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    )


# --------------------------------------------------------------------------- run_many


@dataclass(frozen=True)
class _Job:
    slug: str
    tier: str
    seed: int
    overrides: dict[str, str] | None
    device: str = "cpu"

    def failed(self, error: str, wall_seconds: float = 0.0) -> RunRecord:
        return failed_record(
            self.slug, self.tier, self.seed, error, self.overrides, wall_seconds=wall_seconds
        )


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _watch_parent(parent_pid: int) -> None:
    """Exit this process as soon as its parent has died (no orphans running on)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(3)


def _child(conn, job: _Job, threads: int, parent_pid: int) -> None:
    # The parent stops its children itself on Ctrl-C (SIGTERM); the terminal's SIGINT,
    # which reaches the whole process group, must not print a traceback here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    # Before numpy or torch load: share the cores among the runs instead of letting each
    # BLAS pool claim all of them (oversubscription slows numerical code many times over).
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
    try:
        record = run_paper(job.slug, tier=job.tier, seed=job.seed, overrides=job.overrides,
                           device=job.device)
    except Exception:
        record = job.failed(traceback.format_exc())
    try:
        conn.send(record)
        conn.close()
    except (BrokenPipeError, OSError):  # the parent is gone; nobody to report to
        os._exit(3)


@contextmanager
def _signals_to_flag() -> Iterator[dict[str, int | None]]:
    """While inside, SIGINT and SIGTERM only set ``flag["signum"]`` (polled by the loops)."""
    flag: dict[str, int | None] = {"signum": None}

    def handler(signum, frame) -> None:
        flag["signum"] = signum

    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _timeout_message(timeout: float) -> str:
    return f"timed out: the run took longer than its limit of {timeout:g} s (--timeout)"


def run_many(
    slugs: Iterable[str],
    *,
    tier: str,
    seed: int,
    jobs: int | None = None,
    overrides: dict[str, str] | None = None,
    on_done: Callable[[RunRecord], None],
    on_start: Callable[[str], None] | None = None,
    should_start: Callable[[str], bool] | None = None,
    timeout: float | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    device: str = "cpu",
) -> None:
    """Run several papers on a backend, handing each record to ``on_done`` as it ends.

    Parameters
    ----------
    slugs : iterable of str
        The papers, started in this order.
    tier, seed, overrides
        As for :func:`run_paper`.
    jobs : int, optional
        Cores to use at once (local; default 1), or tasks in flight at once (ray;
        default the cluster's CPUs). A paper takes ``min(resources.cpus, jobs)`` cores.
    on_done : callable
        Receives every record, failed ones included, as soon as its run ends and
        before anything else is done with that run (the caller stores it).
    on_start : callable, optional
        Called with the slug when a paper starts.
    should_start : callable, optional
        Asked right before a paper would start; ``False`` skips it (``reproduce``
        checks the store again and takes a lease here).
    timeout : float, optional
        Seconds a paper may run; a run over it is stopped and recorded as failed.
    backend : {"local", "ray"}
        Where the papers run.
    ray_address : str, optional
        The Ray cluster to connect to (default ``$RAY_ADDRESS``, else a local Ray
        instance started and stopped here).
    device : {"cpu", "cuda"}
        Where each paper computes; with ``cuda`` each paper takes the GPUs it declares
        (a paper that declares none is refused before it starts).

    Raises
    ------
    Interrupted
        On SIGINT or SIGTERM, after the running papers have been stopped.
    """
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    # With cuda, a paper that declares no GPU runs on the CPU (its device is recorded).
    pending = [
        _Job(s, tier, seed, overrides, device if get_paper(s).resources.gpu > 0 else "cpu")
        for s in slugs
    ]
    ask = should_start or (lambda slug: True)
    started = on_start or (lambda slug: None)
    with _signals_to_flag() as flag:
        if backend == "local":
            _run_local(pending, jobs or 1, timeout, ask, started, on_done, flag)
        else:
            _run_ray(pending, jobs, timeout, ray_address, ask, started, on_done, flag)


def _run_local(pending, jobs, timeout, ask, on_start, on_done, flag) -> None:
    ctx = multiprocessing.get_context("spawn")
    share = max(1, (os.cpu_count() or 1) // jobs)
    running: dict[Any, tuple[_Job, Any, float, int]] = {}  # conn -> (job, process, t0, cores)
    try:
        while pending or running:
            free = jobs - sum(cores for *_, cores in running.values())
            while pending and flag["signum"] is None:
                cores = min(get_paper(pending[0].slug).resources.cpus, jobs)
                if cores > free:
                    break
                job = pending.pop(0)
                if not ask(job.slug):
                    continue
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(
                    target=_child, args=(child, job, max(cores, share), os.getpid())
                )
                # The child starts with SIGINT ignored (dispositions survive exec).
                old = signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    proc.start()
                finally:
                    signal.signal(signal.SIGINT, old)
                child.close()
                running[parent] = (job, proc, time.monotonic(), cores)
                free -= cores
                on_start(job.slug)
            if flag["signum"] is not None:
                raise Interrupted(flag["signum"])
            if not running:
                continue
            for conn in wait(list(running), timeout=0.2):
                job, proc, t0, _ = running.pop(conn)
                try:
                    record = conn.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    record = job.failed(
                        f"the run's process died with exit code {proc.exitcode} before "
                        "reporting",
                        time.monotonic() - t0,
                    )
                conn.close()
                on_done(record)  # store first: a signal now must not lose this run
                proc.join(10)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
            if timeout is not None:
                now = time.monotonic()
                for conn, (job, proc, t0, _) in list(running.items()):
                    if now - t0 > timeout:
                        del running[conn]
                        proc.kill()
                        proc.join()
                        conn.close()
                        on_done(job.failed(_timeout_message(timeout), now - t0))
    finally:
        for _, proc, _, _ in running.values():
            if proc.is_alive():
                proc.terminate()
        for _, proc, _, _ in running.values():
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()


def _ray_run_paper(job: _Job) -> RunRecord:
    """The Ray task: one paper, in a fresh worker process."""
    try:
        return run_paper(job.slug, tier=job.tier, seed=job.seed, overrides=job.overrides,
                         device=job.device)
    except Exception:
        return job.failed(traceback.format_exc())


def _ray_error(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    detail = next((line for line in text if line.strip()), "")
    return f"the Ray task failed ({type(err).__name__}): {detail}"


def _run_ray(pending, jobs, timeout, address, ask, on_start, on_done, flag) -> None:
    try:
        import ray
    except ImportError as err:
        raise RuntimeError(
            "the ray backend needs Ray: pip install 'neurips26[ray]'"
        ) from err
    address = address or os.environ.get("RAY_ADDRESS") or None
    owned = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(include_dashboard=False, **kwargs)
            owned = True
    try:
        total = ray.cluster_resources()
        limit = jobs or max(1, int(total.get("CPU", 1)))
        # A fresh worker per paper (max_calls=1): its own memory peak, no leftovers.
        task = ray.remote(max_calls=1)(_ray_run_paper)
        in_flight: dict[Any, tuple[_Job, float]] = {}
        while pending or in_flight:
            while pending and len(in_flight) < limit and flag["signum"] is None:
                job = pending.pop(0)
                if not ask(job.slug):
                    continue
                res = get_paper(job.slug).resources
                short = [
                    f"{need:g} {name} (the cluster has {total.get(key, 0):g})"
                    for name, key, need in (
                        ("CPUs", "CPU", res.cpus),
                        ("GB of memory", "memory", res.memory_gb),
                        ("GPUs", "GPU", res.gpu if job.device == "cuda" else 0),
                    )
                    if need > total.get(key, 0) / (2**30 if key == "memory" else 1)
                ]
                on_start(job.slug)
                if short:
                    on_done(job.failed("not scheduled: the paper needs " + ", ".join(short)))
                    continue
                ref = task.options(
                    name=f"neurips26:{job.slug}",
                    num_cpus=res.cpus,
                    num_gpus=res.gpu if job.device == "cuda" else 0,
                    memory=int(res.memory_gb * 2**30),
                    max_retries=0,  # a killed run is reported, not silently rerun
                ).remote(job)  # Ray sets OMP_NUM_THREADS to the task's num_cpus
                in_flight[ref] = (job, time.monotonic())
            if flag["signum"] is not None:
                for ref in in_flight:
                    ray.cancel(ref, force=True)
                raise Interrupted(flag["signum"])
            if not in_flight:
                continue
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.2)
            for ref in ready:
                job, t0 = in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as err:  # the worker died, was killed or ran out of memory
                    record = job.failed(_ray_error(err), time.monotonic() - t0)
                on_done(record)
            if timeout is not None:
                now = time.monotonic()
                for ref, (job, t0) in list(in_flight.items()):
                    if now - t0 > timeout:
                        del in_flight[ref]
                        ray.cancel(ref, force=True)
                        on_done(job.failed(_timeout_message(timeout), now - t0))
    finally:
        if owned:
            ray.shutdown()
