"""Benchmark: GETO-LP vs the full LP vs POT's LP barycenter across grid sizes.

For each ``n x n`` grid (random shapes, ``M`` inputs) every method builds and solves its
barycenter LP with HiGHS in a forked child process, under a time limit per solve and an
estimated-memory guard checked before building (from the model's nonzero count, so the
benchmark never exhausts a shared machine). Each method runs at its own default, which is
its best setting: GETO and the full LP with the library's ``solver="auto"`` (HiGHS
interior point with crossover on large models, dual simplex on small ones; ``--solver``
overrides it), POT's ``ot.lp.barycenter`` with its own default (``highs-ipm``). GETO is
also run with dual simplex (``geto_ds``, the library's former default) to show what the
choice of method buys. Reported per size and method: variables, nonzeros, build and solve
seconds, status, the child's peak RSS growth (which includes HiGHS's C++ memory) and, with
``--tracemalloc``, the tracemalloc peak (Python/NumPy side only; it also slows scipy's
hand-over of the model, so timings are taken without it), then the ratios of every
baseline's time to GETO's (build + solve, since POT's single call includes its build) and
the largest size each method solved within budget. Entropic timings (POT Sinkhorn in the
log domain, convolutional barycenter) are listed for reference.

The full LP (and POT's, the same model) is not attempted from ``FULL_LP_OOM_GRID`` on:
at ``M = 3`` it ran out of 24 GB near 53 x 53 (issue 13), and the benchmark says so.

Usage::

    python benchmarks/geto_lp.py [--tier small|paper] [--sizes 8 16 ...] [--time-limit S]
                                 [--memory-gb G] [--solver auto|highs|highs-ds|highs-ipm]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import tracemalloc
import warnings

import numpy as np
import ot  # imported here so that no child pays for the import inside its timing

from neurips26.papers.geto_lp import (
    IPM_MIN_VARIABLES,
    SOLVERS,
    GridSpec,
    full_lp_barycenter,
    geto_barycenter,
    grid_cost_matrix,
    lp_size,
    synthetic_densities,
)

#: Peak process bytes per nonzero of the LP, measured on the full 32 x 32, M = 3 model
#: (linprog + HiGHS); POT's kron-based build is charged 1.5x that.
BYTES_PER_NNZ = 500.0
#: The full LP (M = 3) ran out of 24 GB near this grid side (measured in issue 13); above
#: the same model size (``M n^2``) the full LP and POT are not tried.
FULL_LP_OOM_GRID = 53
FULL_LP_OOM_NOTE = ("the full LP ran out of 24 GB near 53^2 at M = 3 (issue 13): not tried "
                    "at this model size or larger")
METHODS = ("geto", "geto_ds", "full", "pot")
TIERS = {
    "small": {"sizes": (8, 16, 24, 32, 48), "time_limit": 30.0, "memory_gb": 8.0},
    "paper": {"sizes": (16, 32, 48, 64, 96, 128), "time_limit": 300.0, "memory_gb": 16.0},
}


def _vm(field: str) -> float:
    """A /proc/self/status memory field in MB (0 when unavailable)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return float(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child(method: str, mu: np.ndarray, grid: GridSpec, time_limit: float, trace: bool,
           solver: str, queue) -> None:
    try:  # reset this process's peak-RSS counter so VmHWM measures this solve only
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rss0 = _vm("VmRSS")
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    out: dict = {}
    if method == "pot":
        cost = grid_cost_matrix(grid)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # POT at its own default solver (highs-ipm in POT 0.9).
            _, log = ot.lp.barycenter(mu.reshape(len(mu), -1).T, cost, log=True)
        size = lp_size(grid.shape, len(mu), formulation="full")
        elapsed = time.perf_counter() - t0
        out.update(status="optimal" if log.status == 0 else f"status_{log.status}",
                   objective=float(log.fun), vars=size.num_variables, nnz=size.nnz,
                   build_s=float("nan"), solve_s=elapsed, total_s=elapsed, solver="pot default")
    else:
        fn = full_lp_barycenter if method == "full" else geto_barycenter
        res = fn(mu, grid, solver="highs-ds" if method == "geto_ds" else solver,
                 time_limit=time_limit, allow_incomplete=True)
        out.update(status=res.status, objective=res.objective, vars=res.num_variables,
                   nnz=res.nnz, build_s=res.build_seconds, solve_s=res.solve_seconds,
                   total_s=res.build_seconds + res.solve_seconds, solver=res.solver)
    if trace:
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["rss_mb"] = max(_vm("VmHWM") - rss0, 0.0)
    queue.put(out)


def _run(method: str, mu: np.ndarray, grid: GridSpec, time_limit: float, trace: bool,
         solver: str) -> dict:
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(method, mu, grid, time_limit, trace, solver, queue))
    t0 = time.perf_counter()
    proc.start()
    try:
        out = queue.get(timeout=time_limit + 30.0)
    except Exception:  # killed: POT has no time limit of its own, IPM may overrun its own
        elapsed = time.perf_counter() - t0
        out = {"status": "time_limit (killed)", "solve_s": elapsed, "total_s": elapsed}
    proc.join(timeout=5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    return out


def _entropic(mu: np.ndarray, grid: GridSpec) -> dict:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        ot.bregman.convolutional_barycenter2d(mu, 1e-3, method="sinkhorn_log", numItermax=1000)
        out["conv_s"] = time.perf_counter() - t0
        if grid.num_points <= 256:  # the dense log-domain solver is O(N^2) per iteration
            t0 = time.perf_counter()
            ot.bregman.barycenter(mu.reshape(len(mu), -1).T, grid_cost_matrix(grid), 1e-3,
                                  method="sinkhorn_log", numItermax=1000)
            out["sinkhorn_s"] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="small")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="grid sides n (n x n), instead of the tier's")
    parser.add_argument("--solver", choices=SOLVERS, default="auto",
                        help="HiGHS method of GETO and the full LP (default: the library's)")
    parser.add_argument("--num-inputs", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    parser.add_argument("--memory-gb", type=float, default=None, help="estimated-memory guard")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also record tracemalloc peaks (slows scipy's model hand-over)")
    args = parser.parse_args(argv)
    tier = TIERS[args.tier]
    time_limit = args.time_limit or tier["time_limit"]
    memory_gb = args.memory_gb or tier["memory_gb"]
    m_in = args.num_inputs
    sizes = tuple(args.sizes) if args.sizes else tier["sizes"]
    print(f"GETO-LP benchmark: tier {args.tier}, M = {m_in}, time limit {time_limit:g} s, "
          f"memory guard {memory_gb:g} GB (estimated {BYTES_PER_NNZ:g} B per nonzero)")
    print(f"solvers: geto and full {args.solver!r} (auto: highs-ipm from "
          f"{IPM_MIN_VARIABLES:,} variables, highs-ds below), geto_ds 'highs-ds', "
          f"pot ot.lp.barycenter's default")
    print(f"note: {FULL_LP_OOM_NOTE}")
    head = (f"{'grid':>7} {'method':>7} {'solver':>11} {'vars':>10} {'nnz':>10} {'build_s':>8} "
            f"{'solve_s':>8} {'traced_MB':>9} {'rss_MB':>8}  status")
    print(head)
    alive = dict.fromkeys(METHODS, True)
    largest: dict[str, int] = {}
    results: dict[tuple[int, str], dict] = {}
    rng = np.random.default_rng(args.seed)
    for n in sizes:
        mu, _ = synthetic_densities(n, m_in, rng=rng)
        grid = GridSpec((n, n), spacing=(1 / (n - 1),) * 2)
        for method in METHODS:
            form = "full" if method in ("full", "pot") else "geto"
            size = lp_size((n, n), m_in, formulation=form)
            est_gb = BYTES_PER_NNZ * (1.5 if method == "pot" else 1.0) * size.nnz / 2**30
            if not alive[method]:
                out = {"status": "skipped (failed at a smaller size)"}
            elif form == "full" and m_in * n * n >= 3 * FULL_LP_OOM_GRID**2:
                out = {"status": f"skipped ({FULL_LP_OOM_NOTE})"}
                alive[method] = False
            elif est_gb > memory_gb:
                out = {"status": f"skipped (estimated {est_gb:.1f} GB > {memory_gb:g} GB)"}
                alive[method] = False
            else:
                out = _run(method, mu, grid, time_limit, args.tracemalloc, args.solver)
                if out.get("status") == "optimal" and out["solve_s"] <= time_limit:
                    largest[method] = n
                else:
                    alive[method] = False
            out.setdefault("vars", size.num_variables)
            out.setdefault("nnz", size.nnz)
            results[(n, method)] = out
            nan = float("nan")
            print(f"{n:>4}^2 {method:>7} {out.get('solver', '-'):>11} {out['vars']:>10d} "
                  f"{out['nnz']:>10d} "
                  f"{out.get('build_s', nan):>8.2f} {out.get('solve_s', nan):>8.2f} "
                  f"{out.get('traced_mb', nan):>9.1f} {out.get('rss_mb', nan):>8.1f}  "
                  f"{out['status']}", flush=True)
        ent = _entropic(mu, grid)
        print(f"{n:>4}^2 entropic (reg 1e-3, 1000 its max): " +
              ", ".join(f"{k} {v:.2f}" for k, v in ent.items()), flush=True)

    print("\nRatios GETO / baseline; speedup = baseline time / GETO time, both build + solve "
          "(a lower bound where the baseline hit its limit)")
    print(f"{'grid':>7} {'vs':>7} {'vars':>8} {'nnz':>8} {'time':>8} {'speedup':>8} "
          f"{'traced':>8} {'rss':>8} {'rel_obj_gap':>12}")
    for n in sizes:
        g = results[(n, "geto")]
        for base in ("geto_ds", "full", "pot"):
            b = results[(n, base)]

            def ratio(key, g=g, b=b):
                gv, bv = g.get(key), b.get(key)
                return gv / bv if gv is not None and bv and np.isfinite(bv) else float("nan")

            gap = (abs(g["objective"] - b["objective"]) / b["objective"]
                   if g.get("status") == "optimal" and b.get("status") == "optimal"
                   else float("nan"))
            t = ratio("total_s")
            print(f"{n:>4}^2 {base:>7} {g['vars'] / b['vars']:>8.4f} {g['nnz'] / b['nnz']:>8.4f} "
                  f"{t:>8.3f} {1 / t if t else float('nan'):>8.2f} {ratio('traced_mb'):>8.3f} "
                  f"{ratio('rss_mb'):>8.3f} {gap:>12.2e}")
    print(f"\nLargest grid solved within budget ({time_limit:g} s, {memory_gb:g} GB estimated): "
          + ", ".join(f"{m}: {largest[m]}^2" if m in largest else f"{m}: none"
                      for m in METHODS))


if __name__ == "__main__":
    main()
