"""Benchmark: GETO-LP vs the full LP vs POT's LP barycenter across grid sizes.

For each ``n x n`` grid (random shapes, ``M`` inputs) every method builds and solves its
barycenter LP with HiGHS in a forked child process, under a time limit per solve and an
estimated-memory guard checked before building (from the model's nonzero count, so the
benchmark never exhausts a shared machine). Reported per size and method: variables,
nonzeros, build and solve seconds, status, the child's peak RSS growth (which includes
HiGHS's C++ memory) and, with ``--tracemalloc``, the tracemalloc peak (Python/NumPy side
only; it also slows scipy's hand-over of the model, so timings are taken without it),
then GETO/full and GETO/POT ratios and the largest size each method solved within
budget. Entropic timings (POT Sinkhorn in the log domain, convolutional barycenter) are
listed for reference.

Usage::

    python benchmarks/geto_lp.py [--tier small|paper] [--time-limit S] [--memory-gb G]
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
           queue) -> None:
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
            _, log = ot.lp.barycenter(mu.reshape(len(mu), -1).T, cost, solver="highs-ds",
                                      log=True)
        size = lp_size(grid.shape, len(mu), formulation="full")
        out.update(status="optimal" if log.status == 0 else f"status_{log.status}",
                   objective=float(log.fun), vars=size.num_variables, nnz=size.nnz,
                   build_s=float("nan"), solve_s=time.perf_counter() - t0)
    else:
        fn = geto_barycenter if method == "geto" else full_lp_barycenter
        res = fn(mu, grid, solver="highs-ds", time_limit=time_limit, allow_incomplete=True)
        out.update(status=res.status, objective=res.objective, vars=res.num_variables,
                   nnz=res.nnz, build_s=res.build_seconds, solve_s=res.solve_seconds)
    if trace:
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["rss_mb"] = max(_vm("VmHWM") - rss0, 0.0)
    queue.put(out)


def _run(method: str, mu: np.ndarray, grid: GridSpec, time_limit: float, trace: bool) -> dict:
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(method, mu, grid, time_limit, trace, queue))
    t0 = time.perf_counter()
    proc.start()
    try:
        out = queue.get(timeout=time_limit + 30.0)
    except Exception:  # killed: POT has no time limit of its own
        out = {"status": "time_limit (killed)", "solve_s": time.perf_counter() - t0}
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
    print(f"GETO-LP benchmark: tier {args.tier}, M = {m_in}, time limit {time_limit:g} s, "
          f"memory guard {memory_gb:g} GB (estimated {BYTES_PER_NNZ:g} B per nonzero)")
    head = (f"{'grid':>7} {'method':>5} {'vars':>10} {'nnz':>10} {'build_s':>8} {'solve_s':>8} "
            f"{'traced_MB':>9} {'rss_MB':>8}  status")
    print(head)
    alive = {"geto": True, "full": True, "pot": True}
    largest: dict[str, int] = {}
    results: dict[tuple[int, str], dict] = {}
    rng = np.random.default_rng(args.seed)
    for n in tier["sizes"]:
        mu, _ = synthetic_densities(n, m_in, rng=rng)
        grid = GridSpec((n, n), spacing=(1 / (n - 1),) * 2)
        for method in ("geto", "full", "pot"):
            form = "geto" if method == "geto" else "full"
            size = lp_size((n, n), m_in, formulation=form)
            est_gb = BYTES_PER_NNZ * (1.5 if method == "pot" else 1.0) * size.nnz / 2**30
            if not alive[method]:
                out = {"status": "skipped (failed at a smaller size)"}
            elif est_gb > memory_gb:
                out = {"status": f"skipped (estimated {est_gb:.1f} GB > {memory_gb:g} GB)"}
                alive[method] = False
            else:
                out = _run(method, mu, grid, time_limit, args.tracemalloc)
                if out.get("status") == "optimal" and out["solve_s"] <= time_limit:
                    largest[method] = n
                else:
                    alive[method] = False
            out.setdefault("vars", size.num_variables)
            out.setdefault("nnz", size.nnz)
            results[(n, method)] = out
            nan = float("nan")
            print(f"{n:>4}^2 {method:>5} {out['vars']:>10d} {out['nnz']:>10d} "
                  f"{out.get('build_s', nan):>8.2f} {out.get('solve_s', nan):>8.2f} "
                  f"{out.get('traced_mb', nan):>9.1f} {out.get('rss_mb', nan):>8.1f}  "
                  f"{out['status']}", flush=True)
        ent = _entropic(mu, grid)
        print(f"{n:>4}^2 entropic (reg 1e-3, 1000 its max): " +
              ", ".join(f"{k} {v:.2f}" for k, v in ent.items()), flush=True)

    print("\nRatios GETO / baseline (time: an upper bound where the baseline hit its limit)")
    print(f"{'grid':>7} {'vs':>5} {'vars':>8} {'nnz':>8} {'solve':>8} {'traced':>8} "
          f"{'rss':>8} {'rel_obj_gap':>12}")
    for n in tier["sizes"]:
        g = results[(n, "geto")]
        for base in ("full", "pot"):
            b = results[(n, base)]

            def ratio(key, g=g, b=b):
                gv, bv = g.get(key), b.get(key)
                return gv / bv if gv is not None and bv and np.isfinite(bv) else float("nan")

            gap = (abs(g["objective"] - b["objective"]) / b["objective"]
                   if g.get("status") == "optimal" and b.get("status") == "optimal"
                   else float("nan"))
            print(f"{n:>4}^2 {base:>5} {g['vars'] / b['vars']:>8.4f} {g['nnz'] / b['nnz']:>8.4f} "
                  f"{ratio('solve_s'):>8.3f} {ratio('traced_mb'):>8.3f} {ratio('rss_mb'):>8.3f} "
                  f"{gap:>12.2e}")
    print("\nLargest grid solved within budget: " + ", ".join(
        f"{m}: {largest[m]}^2" if m in largest else f"{m}: none" for m in ("geto", "full", "pot")))


if __name__ == "__main__":
    main()
