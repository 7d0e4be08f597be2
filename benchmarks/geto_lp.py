"""Benchmark: GETO-LP vs POT's LP barycenter, the full LP and entropic barycenters.

Every method runs at its own best setting, in a forked child process per solve:

- ``geto``: :func:`geto_barycenter` with the library defaults, ``solver="auto"`` (HiGHS
  dual simplex below ``IPM_MIN_VARIABLES`` variables, interior point with crossover
  above: the one documented setting, also used by the experiment) and the exact support
  reduction (``reduce_support=True``: barycenter points outside :func:`support_box` and
  arcs no optimal flow can use are left out);
- ``geto_whole``: the same without the reduction, the whole layered formulation, so the
  share of the speed-up that is the paper's formulation and the share that is the
  reduction are both visible;
- ``pot``: POT's ``ot.lp.barycenter`` with POT's own default (``highs-ipm``), the
  classical ``O(M N^2)`` LP;
- ``full``: our build of the same classical LP with the same support reduction and
  ``solver="auto"`` as GETO (the classical LP at its best);
- ``geto_ds`` (``--with-ds``): GETO with dual simplex, the library's former default;
- entropic: POT's ``convolutional_barycenter2d`` in the log domain (``sinkhorn_log``)
  and plain (``sinkhorn``) at ``reg`` 1e-3 and 1e-2, evaluated exactly with ``ot.emd2``
  (:func:`w2_to_inputs`); their gap to the exact optimum and support size are printed
  beside their time, the time-vs-gap frontier that shows when the exact LP is worth it.

Times are CPU seconds of the child (the machine is shared, so wall-clock seconds are
printed too but the ratios use CPU time), build + solve (POT's one call includes its
build). Memory is the child's peak RSS growth (HiGHS's C++ memory included). The
largest grid each method solves within the stated budget (``--time-limit`` CPU seconds,
``--memory-gb`` peak RSS) is printed at the end, with the performance goals and whether
this run met them.

POT's classical LP is not attempted from ``FULL_LP_OOM_GRID`` on: at ``M = 3`` the whole
full LP runs out of 24 GB near 53 x 53. A memory guard estimated from the
nonzero count (for our full LP, that of its reduced model, counted without building it)
also skips any model expected to exceed ``--memory-gb``.

Usage::

    python benchmarks/geto_lp.py --quick            # 8^2 .. 24^2, about a minute
    python benchmarks/geto_lp.py                    # 16^2 .. 64^2 (tens of minutes)
    python benchmarks/geto_lp.py --tier paper       # adds 96^2 (5.3M GETO variables)
    python benchmarks/geto_lp.py --sizes 32 --num-inputs 3 [--with-ds]
    python benchmarks/geto_lp.py --quick --floor 0  # untruncated shapes (larger supports)
    python benchmarks/geto_lp.py --sizes 32 --background 0.01  # full support

``--background B`` mixes every histogram with the uniform one, ``(1 - B) mu + B / n^2``:
every grid point carries mass, the case where the support reduction has nothing to drop
(the shapes alone, even with ``--floor 0``, leave much of the grid empty).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import time
import warnings

import numpy as np
import ot  # imported here so that no child pays for the import inside its timing

from neurips26.papers.geto_lp import (
    IPM_MIN_VARIABLES,
    GridSpec,
    full_lp_barycenter,
    geto_barycenter,
    grid_cost_matrix,
    lp_size,
    support_box,
    synthetic_densities,
    w2_to_inputs,
)

#: Peak process bytes per nonzero of the full LP (linprog + HiGHS, measured at 32 x 32,
#: M = 3); POT's kron-based build is charged 1.5x that. Used only to skip hopeless runs.
BYTES_PER_NNZ = 500.0
#: The full LP (M = 3) runs out of 24 GB near this grid side: from the same
#: model size (``M n^2``) on, the full LP and POT are not tried.
FULL_LP_OOM_GRID = 53
FULL_LP_OOM_NOTE = ("the whole full LP (POT's) runs out of 24 GB near 53^2 at M = 3: "
                    "POT is not tried at this model size or larger; our full LP is "
                    "reduced and guarded by its own memory estimate")
LP_METHODS = ("geto", "geto_whole", "pot", "full")
#: Entropic methods: (name, POT method of convolutional_barycenter2d, reg).
ENTROPIC = (("conv_log_1e-3", "sinkhorn_log", 1e-3), ("conv_plain_1e-3", "sinkhorn", 1e-3),
            ("conv_log_1e-2", "sinkhorn_log", 1e-2), ("conv_plain_1e-2", "sinkhorn", 1e-2))
#: Largest grid on which entropic results are evaluated with ot.emd2 (dense N x N cost).
EMD2_MAX_SIDE = 64
TIERS = {
    "quick": {"sizes": (8, 16, 24), "time_limit": 120.0, "memory_gb": 8.0},
    "small": {"sizes": (16, 24, 32, 48, 64), "time_limit": 600.0, "memory_gb": 8.0},
    "paper": {"sizes": (16, 24, 32, 48, 64, 96), "time_limit": 1200.0, "memory_gb": 8.0},
}
#: Performance goals: (description, check on the collected results) evaluated in main().
GOAL_SPEEDUP_32 = 30.0
GOAL_SECONDS_64 = 20.0
GOAL_SECONDS_96 = 180.0
GOAL_GB_96 = 8.0
GOAL_REL_GAP = 1e-9


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


def _child(method: str, mu: np.ndarray, grid: GridSpec, time_limit: float, queue) -> None:
    try:  # reset this process's peak-RSS counter so VmHWM measures this solve only
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rss0 = _vm("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    out: dict = {}
    if method == "pot":
        cost = grid_cost_matrix(grid)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bary, log = ot.lp.barycenter(mu.reshape(len(mu), -1).T, cost, log=True)  # default
        size = lp_size(grid.shape, len(mu), formulation="full")
        out.update(status="optimal" if log.status == 0 else f"status_{log.status}",
                   objective=float(log.fun), vars=size.num_variables, nnz=size.nnz,
                   solver="POT default", bary=np.asarray(bary).reshape(grid.shape))
    elif method.startswith("conv_"):
        _, pot_method, reg = next(e for e in ENTROPIC if e[0] == method)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bary = ot.bregman.convolutional_barycenter2d(mu, reg, method=pot_method,
                                                         numItermax=3000, stopThr=1e-9)
        bary = np.clip(np.nan_to_num(np.asarray(bary, dtype=float), nan=0.0), 0.0, None)
        out.update(status="finite" if bary.sum() > 0 else "nan/zero", bary=bary, solver=pot_method)
    else:
        fn = full_lp_barycenter if method == "full" else geto_barycenter
        res = fn(mu, grid, solver="highs-ds" if method == "geto_ds" else "auto",
                 time_limit=time_limit, allow_incomplete=True,
                 reduce_support=method != "geto_whole")
        out.update(status=res.status, objective=res.objective, vars=res.num_variables,
                   nnz=res.nnz, solver=res.solver, gap=res.optimality_gap,
                   bary=res.barycenter)
    out["cpu_s"] = time.process_time() - c0
    out["wall_s"] = time.perf_counter() - t0
    out["rss_mb"] = max(_vm("VmHWM") - rss0, 0.0)
    queue.put(out)


def _run(method: str, mu: np.ndarray, grid: GridSpec, time_limit: float) -> dict:
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(method, mu, grid, time_limit, queue))
    t0 = time.perf_counter()
    proc.start()
    try:  # CPU-second budget; wall time on a loaded machine may be a few times more
        out = queue.get(timeout=4 * time_limit + 60.0)
    except Exception:  # killed: POT has no time limit of its own, IPM may overrun its own
        elapsed = time.perf_counter() - t0
        out = {"status": "time_limit (killed)", "cpu_s": math.nan, "wall_s": elapsed}
    proc.join(timeout=5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    return out


def _reduced_full_nnz(mu: np.ndarray, grid: GridSpec) -> int:
    """Nonzeros of our full LP after the support reduction, counted without building it.

    Its plans run from the ``B`` barycenter points of :func:`support_box` to the points
    where each input has mass: ``2 B sum_m |supp mu_m|`` plan entries plus ``M B``.
    """
    box = support_box(mu, grid)
    num_box = math.prod(hi - lo + 1 for lo, hi in box)
    support = int((mu.reshape(len(mu), -1) > 0).sum())
    return 2 * num_box * support + len(mu) * num_box


def _fmt(x: float, spec: str = ".2f") -> str:
    return format(x, spec) if x is not None and np.isfinite(x) else "-"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="small")
    parser.add_argument("--quick", action="store_true", help="the quick tier (8^2 .. 24^2)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="grid sides n (n x n), instead of the tier's")
    parser.add_argument("--num-inputs", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=None,
                        help="CPU seconds per solve (the time budget)")
    parser.add_argument("--memory-gb", type=float, default=None,
                        help="memory budget (peak RSS; also the estimated-memory guard)")
    parser.add_argument("--with-ds", action="store_true",
                        help="also run GETO with dual simplex (the former default)")
    parser.add_argument("--no-entropic", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--floor", type=float, default=1e-5,
                        help="masses below floor x max are set to 0 (the default cuts the "
                             "shapes' faint tails; 0 keeps every mass the shapes have, so "
                             "their supports are as large as they get: the share is printed)")
    parser.add_argument("--background", type=float, default=0.0,
                        help="mix each histogram with the uniform one at this weight, "
                             "(1 - B) mu + B / n^2 (B > 0: mass at every grid point)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.background <= 1.0:
        parser.error("--background must be in [0, 1]")
    tier = TIERS["quick" if args.quick else args.tier]
    time_limit = args.time_limit or tier["time_limit"]
    memory_gb = args.memory_gb or tier["memory_gb"]
    m_in = args.num_inputs
    sizes = tuple(args.sizes) if args.sizes else tier["sizes"]
    methods = LP_METHODS + (("geto_ds",) if args.with_ds else ())
    print(f"GETO-LP benchmark: grids {sizes}, M = {m_in}, budget {time_limit:g} CPU s and "
          f"{memory_gb:g} GB peak RSS per solve; times are CPU seconds (build + solve)")
    print(f"solvers: geto/geto_whole/full solver='auto' (highs-ipm with crossover from "
          f"{IPM_MIN_VARIABLES:,} variables, highs-ds below); geto and full with the exact "
          f"support reduction, geto_whole without; pot: ot.lp.barycenter's "
          f"default (highs-ipm); entropic: convolutional_barycenter2d, 3000 its max")
    print(f"note: {FULL_LP_OOM_NOTE}")
    print(f"inputs: synthetic shapes, masses below {args.floor:g} x max set to 0, mixed "
          f"with the uniform histogram at weight {args.background:g} (the share of grid "
          "points with mass is printed per grid)")
    print(f"{'grid':>6} {'method':>15} {'solver':>12} {'vars':>10} {'cpu_s':>8} {'wall_s':>8} "
          f"{'rss_MB':>8} {'gap_to_opt_%':>12} {'support':>8}  status")
    alive = dict.fromkeys(methods, True)
    largest: dict[str, int] = {}
    results: dict[tuple[int, str], dict] = {}
    rng = np.random.default_rng(args.seed)
    for n in sizes:
        mu, _ = synthetic_densities(n, m_in, rng=rng, floor=args.floor)
        mu = (1.0 - args.background) * mu + args.background / (n * n)  # each still sums to 1
        print(f"{n}^2: {float((mu > 0).mean()):.0%} of the input grid points carry mass")
        grid = GridSpec((n, n), spacing=(1 / (n - 1),) * 2)
        for method in methods:
            form = "full" if method in ("full", "pot") else "geto"
            size = lp_size((n, n), m_in, formulation=form)
            nnz = _reduced_full_nnz(mu, grid) if method == "full" else size.nnz
            est_gb = BYTES_PER_NNZ * (1.5 if method == "pot" else 1.0) * nnz / 2**30
            if not alive[method]:
                out = {"status": "skipped (over budget at a smaller size)"}
            elif method == "pot" and m_in * n * n >= 3 * FULL_LP_OOM_GRID**2:
                out = {"status": "skipped (24 GB limit near 53^2, see note)"}
                alive[method] = False
            elif est_gb > memory_gb:
                out = {"status": f"skipped (estimated {est_gb:.1f} GB > {memory_gb:g} GB)"}
                alive[method] = False
            else:
                out = _run(method, mu, grid, time_limit)
                within = (out.get("status") == "optimal" and out["cpu_s"] <= time_limit
                          and out["rss_mb"] <= 1024 * memory_gb)
                if within:
                    largest[method] = n
                else:
                    alive[method] = False
            out.setdefault("vars", size.num_variables)
            results[(n, method)] = out
        geto = results[(n, "geto")]
        ref = geto.get("objective", math.nan) if geto.get("status") == "optimal" else math.nan
        entropic = () if args.no_entropic or n > EMD2_MAX_SIDE or not np.isfinite(ref) else ENTROPIC
        for name, _, _ in entropic:
            results[(n, name)] = _run(name, mu, grid, time_limit)
        for key in [k for k in results if k[0] == n]:
            out = results[key]
            if "bary" in out and np.isfinite(ref):
                bary = out["bary"]
                if key[1].startswith("conv_") and out["status"] == "finite":
                    value = float(np.full(m_in, 1 / m_in) @ w2_to_inputs(bary, mu, grid))
                    out["gap_pct"] = 100 * (value - ref) / ref
                elif out.get("status") == "optimal":
                    out["gap_pct"] = 100 * (out["objective"] - ref) / ref
                out["support"] = int((bary / max(bary.sum(), 1e-300) > 1e-8).sum())
            vars_ = out.get("vars", "-")
            print(f"{n:>4}^2 {key[1]:>15} {out.get('solver', '-'):>12} {vars_:>10} "
                  f"{_fmt(out.get('cpu_s'))} {_fmt(out.get('wall_s')):>8} "
                  f"{_fmt(out.get('rss_mb'), '.0f'):>8} {_fmt(out.get('gap_pct'), '.3g'):>12} "
                  f"{out.get('support', '-'):>8}  {out['status']}", flush=True)

    print("\nSpeedup = baseline CPU s / GETO CPU s (build + solve, same run); memory = "
          "baseline peak RSS / GETO's; rel_obj_gap = |GETO - baseline| / baseline")
    print(f"{'grid':>6} {'vs':>15} {'speedup':>8} {'memory':>8} {'rel_obj_gap':>12}")
    for n in sizes:
        g = results[(n, "geto")]
        for base in [k[1] for k in results if k[0] == n and k[1] != "geto"]:
            b = results[(n, base)]
            speed = b.get("cpu_s", math.nan) / g.get("cpu_s", math.nan)
            mem = b.get("rss_mb", math.nan) / max(g.get("rss_mb", math.nan), 1e-9)
            gap = (abs(g["objective"] - b["objective"]) / b["objective"]
                   if g.get("status") == "optimal" and b.get("status") == "optimal"
                   else math.nan)
            print(f"{n:>4}^2 {base:>15} {_fmt(speed):>8} {_fmt(mem):>8} {_fmt(gap, '.2e'):>12}")

    print("\nTime-vs-gap frontier (entropic gap to the exact optimum, evaluated with "
          "ot.emd2; time as a ratio to GETO's exact solve):")
    for n in sizes:
        g = results[(n, "geto")]
        rows = sorted((results[(n, e[0])] | {"name": e[0]}
                       for e in ENTROPIC if (n, e[0]) in results),
                      key=lambda r: r.get("cpu_s", math.inf))
        if rows:
            print(f"  {n}^2: GETO exact (gap 0) in {_fmt(g.get('cpu_s'))} CPU s; " + "; ".join(
                f"{r['name']} {_fmt(r.get('cpu_s', math.nan) / g.get('cpu_s', math.nan))}x "
                f"time, gap {_fmt(r.get('gap_pct'), '.3g')}%, support "
                f"{_fmt(r.get('support', math.nan) / max(g.get('support', 1), 1), '.2f')}x"
                for r in rows))

    print(f"\nLargest grid solved within budget ({time_limit:g} CPU s, {memory_gb:g} GB peak "
          "RSS): " + ", ".join(f"{m}: {largest[m]}^2" if m in largest else f"{m}: none"
                               for m in methods))
    _goals(results, m_in)
    return results


def _goals(results: dict, m_in: int) -> None:
    """Print the performance goals with what this run measured (n/a where not run)."""
    def get(n, method, key):
        out = results.get((n, method), {})
        return out.get(key, math.nan) if out.get("status") == "optimal" else math.nan

    speed = get(32, "pot", "cpu_s") / get(32, "geto", "cpu_s")
    speed_whole = get(32, "pot", "cpu_s") / get(32, "geto_whole", "cpu_s")
    gaps = [abs(get(n, "geto", "objective") - get(n, "pot", "objective"))
            / get(n, "pot", "objective") for (n, m) in results if m == "pot"]
    gaps = [x for x in gaps if np.isfinite(x)]
    goals = (
        (f">= {GOAL_SPEEDUP_32:g}x faster than POT's LP at 32^2, M = 3", speed,
         speed >= GOAL_SPEEDUP_32 and m_in == 3, "x"),
        (f"64^2 in under {GOAL_SECONDS_64:g} CPU s", get(64, "geto", "cpu_s"),
         get(64, "geto", "cpu_s") < GOAL_SECONDS_64, " CPU s"),
        (f"96^2 in under {GOAL_SECONDS_96:g} CPU s", get(96, "geto", "cpu_s"),
         get(96, "geto", "cpu_s") < GOAL_SECONDS_96, " CPU s"),
        (f"96^2 in under {GOAL_GB_96:g} GB", get(96, "geto", "rss_mb") / 1024,
         get(96, "geto", "rss_mb") / 1024 < GOAL_GB_96, " GB"),
        (f"exact to {GOAL_REL_GAP:g} relative against POT", max(gaps, default=math.nan),
         bool(gaps) and max(gaps) <= GOAL_REL_GAP, ""),
    )
    print("\nPerformance goals in this run (geto: the library default, with the reduction):")
    for text, value, ok, unit in goals:
        verdict = "n/a (not run)" if not np.isfinite(value) else ("met" if ok else "NOT met")
        print(f"  {text}: {_fmt(value, '.3g')}{unit if np.isfinite(value) else ''} -> {verdict}")
    if np.isfinite(speed_whole):
        print(f"  (the whole formulation, geto_whole, is {speed_whole:.3g}x POT at 32^2)")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
