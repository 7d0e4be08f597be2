"""Reproduction: core-stable data exchange on markets built from real learning curves.

Learning curves of logistic regression on scikit-learn's ``digits``, ``breast_cancer`` and
``wine`` are fitted once (cached in-process). Each instance draws firm sizes
``m = m_min + (D - n m_min) * Dirichlet(1_n)`` (``D`` the data set's training size,
``m_min`` its smallest measured training size). For every instance we compute the
theorem's side (the closed-form violation (*) and the greedy core exchange of
:func:`constructive_core`) beside the simulated side (the numerical core check, the
exchange dynamic and the outer search for core exchanges). See ``paper.py`` for claims.

Units: each instance (a winner-takes-all market, or a logit market solved without and
with revenue sharing) is a unit of the experiment layer; firm sizes come from one
generator drawn in grid order (every winner-takes-all instance, then every logit one), so
every instance is the one the tier always drew.

Controls (each the same statistic where the effect must be absent): the core searches of
the winner-takes-all and revenue-sharing claims run again on the same logit markets
without sharing, where the core may be empty (``logit_core_found_frac``); the emptiness
claim's largest violation is measured again on those markets with revenue sharing, where a
core exists (``rs_max_min_violation``); the dynamic's claim is measured again at its
starting exchange, no sharing, under the same independent checks (``wta_start_core_frac``:
the dynamic with zero rounds).

The two existence claims (and their control) are universal statements over the drawn
instances ("every instance"): one counterexample refutes them and no interval can confirm
them, so they are judged on the counts themselves. The dynamic's claim is a rate (at least
0.95 of instances), so it and its control carry a Wilson binomial interval over the
instances, which are independent draws of firm sizes. The emptiness claim's largest
violation (and its revenue-sharing control) carries a percentile bootstrap over the logit
instances, stratified by data set, rationality and firm count: it asks whether a redraw
of as many instances would again hold an empty eps-core, not only whether one was found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.ticker import MaxNLocator

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, binomial_interval

from . import (
    Market,
    constructive_core,
    core_violation,
    dataset_curve,
    exchange_dynamic,
    find_core_exchange,
    pooling_violation,
)


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    ``num_wta`` winner-takes-all instances spread over ``wta_firms``; ``num_logit`` logit
    instances spread over ``logit_firms`` and ``rationalities``, each solved without and
    with revenue sharing. The outer search uses ``num_starts`` random starts, a grid of
    step ``outer_step`` and deviation grids of step ``grid_step`` with ``num_restarts``
    Nelder-Mead refinements; ``eps_empty`` is the eps of the eps-core emptiness claim.
    """

    seed: int = 0
    datasets: tuple[str, ...] = param(
        ("digits", "breast_cancer", "wine"),
        help="scikit-learn data sets behind the accuracy curves",
        choices=("wine", "digits", "breast_cancer"),
    )
    curve_splits: int = param(5, help="train/test splits per curve point", min=1)
    wta_firms: tuple[int, ...] = param(
        (3, 4), help="firm counts of the winner-take-all instances", min=1
    )
    num_wta: int = param(200, help="winner-take-all instances (cheap; enough that a rate "
                         "of 0.95 can be decided on its Wilson interval)", min=1)
    logit_firms: tuple[int, ...] = param((3,), help="firm counts of the logit instances", min=1)
    num_logit: int = param(30, help="logit instances per firm count", min=1)
    rationalities: tuple[float, ...] = param(
        (2.0, 5.0, 20.0), help="logit rationality parameters swept", min=0.0
    )
    num_starts: int = param(50, help="random starts of the core search", min=1)
    outer_step: float = param(0.1, help="step of the outer search", min=0.0)
    grid_step: float = param(0.25, help="step of the deviation grid", min=0.0)
    num_restarts: int = param(10, help="restarts of the local search", min=1)
    max_iter: int = param(200, help="iteration cap of the dynamics", min=1)
    logit_dynamic_iter: int = param(30, help="iterations of the logit dynamic", min=1)
    tol: float = param(1e-9, help="convergence tolerance", min=0.0)
    eps_empty: float = param(
        1e-3, help="slack under which a coalition's gain counts as none", min=0.0
    )


TIERS = {
    "smoke": Config(
        datasets=("wine",),
        curve_splits=2,
        wta_firms=(3,),
        num_wta=1,
        num_logit=1,
        rationalities=(20.0,),
        num_starts=3,
        outer_step=0.25,
        num_restarts=2,
        logit_dynamic_iter=5,
    ),
    "small": Config(),
    "paper": Config(
        wta_firms=(3, 4, 5),
        num_wta=200,
        logit_firms=(3, 4, 5),
        num_logit=200,
        grid_step=0.1,
        num_restarts=10,
        logit_dynamic_iter=200,
    ),
}

_COLORS = {"wta": "tab:blue", "logit": "tab:red", "logit+rs": "tab:green"}


def _sizes(rng, n: int, curve) -> np.ndarray:
    total = curve.max_size
    floor = curve.min_size
    return floor + (total - n * floor) * rng.dirichlet(np.ones(n))  # (n,)


def _stable(search, tol: float) -> str:
    """The reference exchanges (theorem, no sharing, full pooling, dynamic) in the core."""
    names = [name for name, v in search.candidates if v <= tol]
    return ", ".join(names) if names else "none"


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "logit_core_found_frac",
    "logit_frac_eps_core_empty",
    "logit_max_min_violation",
    "logit_num_eps_core_empty",
    "logit_search_above_closed_form_frac",
    "num_logit_instances",
    "num_wta_instances",
    "rs_constructive_core_frac",
    "rs_max_min_violation",
    "rs_core_found_frac",
    "rs_dynamic_core_frac",
    "theorem_guarantee_holds_frac",
    "theory_vs_search_max_abs_gap",
    "wta_core_found_frac",
    "wta_dynamic_converged_frac",
    "wta_dynamic_core_frac",
    "wta_dynamic_mean_rounds",
    "wta_full_pooling_blocked_frac",
    "wta_start_core_frac",
    "curve_r2_*",
    "logit_frac_empty_lambda_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "theory_vs_simulation": (
        "Left: the closed-form core violation (*) against the numerical core search on "
        "reference exchanges (check closed_form_matches_search). Right: the smallest "
        "violation over searched exchanges per instance, winner-takes-all, logit and "
        "revenue sharing (claims wta_core_nonempty, logit_core_can_be_empty, "
        "revenue_sharing_restores_core)."
    ),
    "wta_dynamic": (
        "Core violation along the exchange dynamic, round by round, on winner-takes-all "
        "markets (claim dynamic_converges_wta)."
    ),
}


def _wta(config: Config, i: int, rng, curves) -> list[dict]:
    """Winner-takes-all instance ``i``: its row, reference pairs and dynamic trajectory."""
    kw = {"grid_step": config.grid_step, "num_restarts": config.num_restarts}
    n = config.wta_firms[i % len(config.wta_firms)]
    name = config.datasets[i % len(config.datasets)]
    m = _sizes(rng, n, curves[name])
    mk = Market(m, curves[name], demand="wta")
    con = constructive_core(mk)
    search = find_core_exchange(mk, max_iter=config.max_iter, tol=config.tol, seed=i, **kw)
    dyn = exchange_dynamic(mk, max_iter=config.max_iter, tol=config.tol, seed=i, **kw)
    # Independent check of the dynamic's end point: another grid and the closed form.
    check = core_violation(mk, dyn.alpha, grid_step=0.1, num_restarts=0, seed=10_000 + i)
    closed = pooling_violation(mk, dyn.alpha)
    ok = dyn.converged and check.violation <= config.tol and closed <= config.tol
    # The control: the dynamic with zero rounds (its start, no sharing) under the same
    # checks: round 0 finds no blocking coalition, and the independent ones pass.
    start = np.zeros((n, n))
    start_check = core_violation(mk, start, grid_step=0.1, num_restarts=0, seed=10_000 + i)
    start_ok = (float(dyn.violations[0]) <= config.tol
                and start_check.violation <= config.tol
                and pooling_violation(mk, start) <= config.tol)
    refs = {
        "no_sharing": np.zeros((n, n)),
        "full_pooling": np.ones((n, n)) - np.eye(n),
        "dynamic": dyn.alpha,
        "constructive": con.alpha,
    }
    pairs, v_ref = [], {}
    for key, alpha in refs.items():
        v_num = core_violation(mk, alpha, seed=i, **kw).violation
        pairs.append(("wta", pooling_violation(mk, alpha), v_num))
        v_ref[key] = v_num
    rows = []
    if not search.converged:  # report a failure with its instance
        rows.append({"kind": "WTA FAILURE", "dataset": name, "sizes": str(np.round(m, 3))})
    rows.append(
        {
            "kind": "wta",
            "n": n,
            "dataset": name,
            "lambda": float("nan"),
            "sizes": " ".join(f"{x:.0f}" for x in m),
            "theorem_blocks": str(con.partition),
            "v_no_sharing": v_ref["no_sharing"],
            "v_full_pooling": v_ref["full_pooling"],
            "v_dynamic": float(dyn.violations[-1]),
            "dynamic_rounds": dyn.rounds,
            "min_violation_found": search.min_violation_found,
            "core_found": bool(search.converged),
            "stable_references": _stable(search, config.tol),
            "_dynamic_core": bool(ok),
            "_dynamic_converged": bool(dyn.converged),
            "_start_core": bool(start_ok),
            "_full_pooling_blocked": bool(v_ref["full_pooling"] > config.tol),
            "_guarantee": bool(np.all(con.utilities >= con.guarantee - 1e-12)),
            "_pairs": pairs,
            "_trajectory": dyn.violations,
        }
    )
    return rows


def _logit(config: Config, i: int, rng, curves) -> list[dict]:
    """Logit instance ``i``, without and with revenue sharing: two rows."""
    kw = {"grid_step": config.grid_step, "num_restarts": config.num_restarts}
    n = config.logit_firms[i % len(config.logit_firms)]
    name = config.datasets[i % len(config.datasets)]
    lam = config.rationalities[i % len(config.rationalities)]
    m = _sizes(rng, n, curves[name])
    mk = Market(m, curves[name], demand="logit", rationality=lam)
    res = find_core_exchange(
        mk,
        num_starts=config.num_starts,
        outer_step=config.outer_step,
        dynamic_max_iter=config.logit_dynamic_iter,
        tol=config.tol,
        seed=i,
        **kw,
    )
    con = constructive_core(mk)
    cand = dict(res.candidates)
    refs = {
        "no_sharing": np.zeros((n, n)),
        "full_pooling": np.ones((n, n)) - np.eye(n),
        "constructive": con.alpha,
    }
    pairs = [("logit", pooling_violation(mk, alpha), cand[key]) for key, alpha in refs.items()]
    rows = [
        {
            "kind": "logit",
            "n": n,
            "dataset": name,
            "lambda": lam,
            "sizes": " ".join(f"{x:.0f}" for x in m),
            "theorem_blocks": str(con.partition),
            "v_no_sharing": cand["no_sharing"],
            "v_full_pooling": cand["full_pooling"],
            "v_dynamic": cand["dynamic"],
            "dynamic_rounds": int(res.trajectory.size - 1),
            "min_violation_found": res.min_violation_found,
            "core_found": bool(res.converged),
            "stable_references": _stable(res, config.tol),
            "_pairs": pairs,
        }
    ]
    # Same market with equal revenue sharing inside coalitions.
    mk_rs = Market(m, curves[name], demand="logit", rationality=lam, revenue_sharing=True)
    res_rs = find_core_exchange(
        mk_rs,
        num_starts=config.num_starts,
        outer_step=config.outer_step,
        dynamic_max_iter=config.logit_dynamic_iter,
        tol=config.tol,
        seed=i,
        **kw,
    )
    con_rs = constructive_core(mk_rs)
    cand_rs = dict(res_rs.candidates)
    singles = tuple((j,) for j in range(n))
    pairs_rs = [
        ("logit+rs", pooling_violation(mk_rs, alpha, partition=part), cand_rs[key])
        for key, alpha, part in (
            ("no_sharing", refs["no_sharing"], singles),
            ("full_pooling", refs["full_pooling"], (tuple(range(n)),)),
            ("constructive", con_rs.alpha, con_rs.partition),
        )
    ]
    rows.append(
        {
            "kind": "logit+rs",
            "n": n,
            "dataset": name,
            "lambda": lam,
            "sizes": " ".join(f"{x:.0f}" for x in m),
            "theorem_blocks": str(con_rs.partition),
            "v_no_sharing": cand_rs["no_sharing"],
            "v_full_pooling": cand_rs["full_pooling"],
            "v_dynamic": cand_rs["dynamic"],
            "dynamic_rounds": int(res_rs.trajectory.size - 1),
            "min_violation_found": res_rs.min_violation_found,
            "core_found": bool(res_rs.converged),
            "stable_references": _stable(res_rs, config.tol),
            "_dynamic_core": bool(cand_rs["dynamic"] <= config.tol),
            "_constructive_core": bool(cand_rs["constructive"] <= config.tol),
            "_pairs": pairs_rs,
        }
    )
    return rows


def _frac(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def _rate(values, what: str) -> Estimate:
    """The share of instances where ``values`` holds, with its Wilson interval over them."""
    if not len(values):
        return Estimate.missing(f"no {what} instance at this tier")
    return binomial_interval(int(np.sum(values)), len(values), unit=f"{what} instances")


def _max_violation(table, kind: str, config: Config) -> Estimate:
    """Largest smallest-violation over the ``kind`` rows of the logit instances, with a
    percentile bootstrap over instances (an instance brings its rows without and with
    revenue sharing), stratified by the design cell (data set, rationality, firms)."""
    logit = table.where(market="logit")
    if not len(logit.where(kind=kind)):
        return Estimate.missing(f"no {kind} instance at this tier")
    return logit.bootstrap(
        lambda t: float(np.max([r["min_violation_found"] for r in t if r["kind"] == kind])),
        unit="instance",
        strata=("dataset", "lambda", "n"),
        seed=config.seed,
    )


def _curves(config: Config) -> dict:
    # fitted once per process (dataset_curve caches)
    return {name: dataset_curve(name, num_splits=config.curve_splits)
            for name in config.datasets}


class DataExchangeCore(Experiment):
    """Winner-takes-all and logit markets; one unit per instance."""

    Config, TIERS, METRICS, CAPTIONS = Config, TIERS, METRICS, CAPTIONS
    UNIT_TABLE = None  # the report's table is "instances" (the old rows)

    def setup(self, config, ctx):
        # one sequential generator: every winner-takes-all instance's sizes, then every
        # logit instance's, drawn in grid order
        return {"cfg": config, "rng": np.random.default_rng(config.seed),
                "curves": _curves(config)}

    def grid(self, config):
        return ([{"market": "wta", "instance": i} for i in range(config.num_wta)]
                + [{"market": "logit", "instance": i} for i in range(config.num_logit)])

    def measure(self, unit, state, ctx):
        fn = _wta if unit["market"] == "wta" else _logit
        return fn(state["cfg"], unit["instance"], state["rng"], state["curves"])

    def summarize(self, table, config, ctx):
        wta = [r for r in table if r["kind"] == "wta"]
        logit = [r for r in table if r["kind"] == "logit"]
        rs = [r for r in table if r["kind"] == "logit+rs"]
        kinds, closed, numeric = _pairs(table)
        exact = kinds != "logit"
        lmin = np.array([r["min_violation_found"] for r in logit], dtype=float)
        metrics: dict[str, float | int | bool | Estimate] = {
            "num_wta_instances": len(wta),
            "num_logit_instances": len(logit),
            "wta_core_found_frac": _frac([r["core_found"] for r in wta]),
            "wta_dynamic_core_frac": _rate([r["_dynamic_core"] for r in wta], "winner-takes-all"),
            "wta_dynamic_converged_frac": _frac([r["_dynamic_converged"] for r in wta]),
            "wta_dynamic_mean_rounds": _frac([len(r["_trajectory"]) - 1 for r in wta]),
            "wta_full_pooling_blocked_frac": _frac([r["_full_pooling_blocked"] for r in wta]),
            "wta_start_core_frac": _rate([r["_start_core"] for r in wta], "winner-takes-all"),
            "theorem_guarantee_holds_frac": _frac([r["_guarantee"] for r in wta]),
            "theory_vs_search_max_abs_gap": float(np.max(np.abs(closed[exact] - numeric[exact])))
            if exact.any()
            else float("nan"),
            "logit_search_above_closed_form_frac": float(
                np.mean(numeric[~exact] >= closed[~exact] - 1e-12)
            )
            if (~exact).any()
            else float("nan"),
            "logit_max_min_violation": _max_violation(table, "logit", config),
            "logit_num_eps_core_empty": int((lmin > config.eps_empty).sum()),
            "logit_frac_eps_core_empty": float(np.mean(lmin > config.eps_empty))
            if lmin.size
            else float("nan"),
            "logit_core_found_frac": _frac([r["core_found"] for r in logit]),
            "rs_core_found_frac": _frac([r["core_found"] for r in rs]),
            "rs_constructive_core_frac": _frac([r["_constructive_core"] for r in rs]),
            "rs_dynamic_core_frac": _frac([r["_dynamic_core"] for r in rs]),
            "rs_max_min_violation": _max_violation(table, "logit+rs", config),
        }
        logit_lam = np.array([r["lambda"] for r in logit])
        for lam in config.rationalities:
            sel = lmin[logit_lam == lam] if lmin.size else np.zeros(0)
            if sel.size:
                metrics[f"logit_frac_empty_lambda_{lam:g}"] = float(
                    np.mean(sel > config.eps_empty))
        for name, c in _curves(config).items():
            metrics[f"curve_r2_{name}"] = float(c.r2)
        return metrics

    def figures(self, table, summary, config):
        rows = _rows(table)
        kinds, closed, numeric = _pairs(table)
        trajectories = [r["_trajectory"] for r in table if r["kind"] == "wta"]
        return _figures(config, rows, kinds, closed, numeric, trajectories)

    def tables(self, table, summary, config):
        rows = _rows(table)
        out = []
        for kind in ("wta", "logit", "logit+rs"):
            sel = [r for r in rows if r["kind"] == kind]
            if not sel:
                continue
            out.append(
                {
                    "market": kind,
                    "instances": len(sel),
                    "core_found_frac": float(np.mean([r["core_found"] for r in sel])),
                    "full_pooling_blocked_frac": float(
                        np.mean([r["v_full_pooling"] > config.tol for r in sel])
                    ),
                    "no_sharing_blocked_frac": float(
                        np.mean([r["v_no_sharing"] > config.tol for r in sel])
                    ),
                    "median_min_violation": float(
                        np.median([r["min_violation_found"] for r in sel])),
                    "max_min_violation": float(np.max([r["min_violation_found"] for r in sel])),
                }
            )
        return {"summary": out, "instances": rows}

    def notes(self, table, summary, config):
        curves = _curves(config)
        return (
            f"Search settings: deviation grid step {config.grid_step} (|S| <= 3), "
            f"{config.num_restarts} Nelder-Mead refinements per coalition (logit only), outer "
            f"search: grid step {config.outer_step} over the reachable effective-data box, its "
            f"10 best points + {config.num_starts} random starts + the dynamic "
            f"({config.logit_dynamic_iter} rounds) + no sharing, full pooling and the theorem's "
            "exchange. Lower-bound deviation sets: pair grid step 0.02, triple 0.1, 256 random.",
            "Logit emptiness is certified only up to the search: every exchange evaluated has a "
            "deviation found with gain above min_violation_found.",
            "Curves: "
            + "; ".join(
                f"{k}: f(d) = {c.a_inf:.3f} - {c.c:.3g} d^-{c.gamma:.3f} (R^2 {c.r2:.3f})"
                for k, c in curves.items()
            ),
        )


def _rows(table) -> list[dict]:
    """The instances table of the report: each row without the columns for the metrics."""
    return [{k: v for k, v in r.items() if not k.startswith("_") and k not in
             ("market", "instance", "unit_seconds")} for r in table]


def _pairs(table):
    """(market kind, closed form, searched) of every reference exchange, as arrays."""
    pairs = [p for r in table for p in r.get("_pairs", ())]
    return (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]),
            np.array([p[2] for p in pairs]))


def _figures(config, rows, kinds, closed, numeric, trajectories) -> dict[str, bytes]:
    figures = {}
    fig, axes = new_figure(2, width=5.2, height=4.0)
    ax = axes[0]
    floor = 1e-5
    for kind, label in (
        ("wta", "winner-takes-all (theory exact)"),
        ("logit+rs", "logit + revenue sharing (exact)"),
        ("logit", "logit (theory = lower bound)"),
    ):
        sel = kinds == kind
        if sel.any():
            ax.scatter(
                np.maximum(closed[sel], floor),
                np.maximum(numeric[sel], floor),
                s=18,
                alpha=0.7,
                color=_COLORS[kind],
                label=label,
            )
    lim = [floor / 2, 1.0]
    ax.plot(lim, lim, "k--", lw=1, label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted violation: closed form (*) (floored at 1e-5)")
    ax.set_ylabel("simulated violation: numerical core search")
    ax.set_title("Theory vs simulation on reference exchanges")
    ax.legend(fontsize=7)
    ax = axes[1]
    groups = [("WTA", [r["min_violation_found"] for r in rows if r["kind"] == "wta"])]
    for lam in config.rationalities:
        groups.append(
            (
                f"logit\nlam={lam:g}",
                [
                    r["min_violation_found"]
                    for r in rows
                    if r["kind"] == "logit" and r["lambda"] == lam
                ],
            )
        )
    groups.append(("logit+RS", [r["min_violation_found"] for r in rows if r["kind"] == "logit+rs"]))
    for g, (label, vals) in enumerate(groups):
        vals = np.maximum(np.asarray(vals, dtype=float), floor)
        jitter = np.linspace(-0.2, 0.2, vals.size) if vals.size > 1 else np.zeros(vals.size)
        color = {"WTA": "tab:blue", "logit+RS": "tab:green"}.get(label, "tab:red")
        ax.scatter(g + jitter, vals, s=16, alpha=0.7, color=color)
        pred = "core exists\n(theorem)" if not label.startswith("logit\n") else "may be empty"
        ax.text(g, 0.3, pred, ha="center", fontsize=7)
    ax.axhline(config.eps_empty, color="gray", ls=":", label=f"eps = {config.eps_empty:g}")
    ax.axhline(floor, color="k", lw=0.8, label="predicted 0 (floor 1e-5)")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, 1.0)
    ax.set_xticks(range(len(groups)), [g[0] for g in groups], fontsize=8)
    ax.set_ylabel("smallest violation over searched exchanges")
    ax.set_title("Core emptiness: prediction vs search")
    ax.legend(fontsize=7, loc="center right")
    figures["theory_vs_simulation"] = figure_png(fig)

    fig, axes = new_figure(1, width=5.5, height=3.8)
    ax = axes[0]
    for t in trajectories:
        ax.plot(np.arange(t.size), np.maximum(t, floor), "-o", ms=3, alpha=0.6, color="tab:blue")
    ax.axhline(floor, color="k", lw=0.8, label="core (v = 0, floored)")
    ax.set_ylim(floor / 2, 1.0)
    ax.set_xlim(-0.5, max([t.size for t in trajectories], default=1) - 0.5)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round of the exchange dynamic")
    ax.set_ylabel("core violation v(alpha)")
    ax.set_title("Winner-takes-all: the dynamic reaches the core")
    ax.legend(fontsize=8)
    figures["wta_dynamic"] = figure_png(fig)

    return figures


EXPERIMENT = DataExchangeCore()
run = EXPERIMENT.run
