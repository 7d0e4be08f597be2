"""Reproduction: AgentWeave versus disaggregated and aggregated-lockstep serving.

For every workload (each template alone and a uniform mix) and seed, on ``D`` simulated
devices: the aggregated baseline's batch size is tuned on a separate seed (flood
capacity); the disaggregated partition follows the roles' expected load; every server's
capacity is estimated by a flood. All servers then receive the *same* arrival sequences
(common random numbers): a saturating one (1.5x the largest capacity) for throughput and
a moderate one (70% of the aggregated capacity) for mean and P90 latency; the mix also
runs at several loads (fractions of the best baseline's capacity). Claim 4 reruns
the mix at the latency load with ``o_sched`` in {0, 50 ms} for the adaptive and the
always-decompose policies. A one-at-a-time sweep of ``c_d`` and the tool-latency CV
(x0.5, x2) on the mix shows how the headline ratios depend on our latency model.

What reproduces and what does not, and why
------------------------------------------
(The measured values are in the store and the report; this says why.)
Against aggregated lockstep batching the paper's picture holds: AgentWeave's saturated
throughput is higher and its mean / P90 latency lower, because lockstep batches leave
devices partly idle while members wait for tools and for the slowest member, and new
requests wait for the whole batch. Claims 1-3 are stated against the *best* baseline,
and in our model that is the disaggregated one in every workload; against it the gains
are small, so claims 1-3 do not reproduce in our model:

- With load-proportional pools, disaggregation loses only to the integer rounding of
  the partition (pipeline bubbles), which is large for ReAct and vanishes for the mix,
  whose 8 module roles pack evenly onto 4 devices.
- At 70% of the *aggregated* capacity the disaggregated and AgentWeave servers are
  lightly loaded, so both serve near the no-contention latency. The load sweep (mix, as
  fractions of the best baseline's flood capacity) shows the gap opening with load: the
  paper's latency figures are approached near saturation of the disaggregated pools,
  not at the spec's operating point.
- Decomposition itself buys little here: the never-decompose ablation (continuous
  admission of whole requests) is about as fast as always-decompose, because a moved
  unit pays a context re-prefill (c_p x generated tokens) while holding a slot through a
  tool call costs little with 32 slots per device. The paper's gains presumably come
  from effects our latency model lacks (KV-memory pressure, real stragglers, its own
  baselines' tuning).

Claim 4 (adaptivity pays at o_sched = 50 ms) does not reproduce either: always-decompose
pays only a few boundary overheads per request, small against end-to-end latencies, and
the inferred rule still cuts whenever any co-batched request is predicted to finish
first, so the gain stays small (the tie at o_sched = 0 holds). The sensitivity sweep
(c_d and tool-latency CV x0.5, x2) shows how much the ratios depend on our latency model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure

from . import (
    TEMPLATES,
    AgentWeaveScheduler,
    AggregatedScheduler,
    DisaggregatedScheduler,
    LatencyModel,
    disaggregated_partition,
    estimate_capacity,
    poisson_arrivals,
    simulate,
)

SERVERS = ("adaptive", "always", "never", "aggregated", "disaggregated")
BASELINES = ("aggregated", "disaggregated")


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    ``workloads`` names templates or ``"mix"``; each runs ``num_seeds`` seeds with
    ``horizon`` simulated seconds (``warmup`` excluded). ``sweep_cd`` and ``sweep_tool_cv``
    scale ``c_d`` and the tool-latency CVs on the mix (seed 0 only).
    """

    seed: int = 0
    num_devices: int = param(4, help="co-deployed devices", min=1)
    workloads: tuple[str, ...] = param(
        ("react", "rag", "debate", "code", "mix"),
        help="agent workflows served",
        choices=("rag", "react", "debate", "code", "mix"),
    )
    num_seeds: int = param(3, help="simulation seeds per setting", min=1)
    horizon: float = param(300.0, help="simulated seconds per run", min=0.0)
    warmup: float = param(
        60.0, help="simulated warm-up seconds left out of the statistics", min=0.0
    )
    num_flood: int = param(300, help="requests of the capacity-probing flood", min=1)
    batch_sizes: tuple[int, ...] = param((4, 8, 16, 32), help="batch sizes swept", min=1)
    saturation: float = param(
        1.5, help="arrival rate as a multiple of capacity in the overload runs", min=0.0
    )
    load: float = param(0.7, help="arrival rate as a fraction of capacity", min=0.0, max=1.0)
    c0: float = param(5e-3, help="fixed latency per batch step (s)", min=0.0)
    c_prefill: float = param(8e-5, help="prefill seconds per token", min=0.0)
    c_decode: float = param(2.5e-4, help="decode seconds per token", min=0.0)
    max_batch: int = param(32, help="largest batch a device runs", min=1)
    hop_cost: float = param(2e-3, help="seconds per cross-device hop", min=0.0)
    sched_overhead: float = param(1e-3, help="scheduler seconds per decision", min=0.0)
    high_overhead: float = param(
        0.05, help="scheduler overhead of the high-overhead ablation (s)", min=0.0
    )
    sweep_cd: tuple[float, ...] = param(
        (0.5, 2.0), help="delegation-cost multipliers (empty: none)", min=0.0, allow_empty=True
    )
    sweep_tool_cv: tuple[float, ...] = param(
        (0.5, 2.0), help="tool-latency CVs swept (empty: no sweep)", min=0.0, allow_empty=True
    )
    claim4: bool = param(True, help="run the claim-4 experiment")
    sweep_loads: tuple[float, ...] = param(
        (0.5, 0.7, 0.9), help="load fractions swept (empty: no sweep)", min=0.0, allow_empty=True
    )


TIERS = {
    "smoke": Config(
        num_devices=1,
        workloads=("rag",),
        num_seeds=1,
        horizon=40.0,
        warmup=10.0,
        num_flood=50,
        batch_sizes=(8, 32),
        sweep_cd=(),
        sweep_tool_cv=(),
        claim4=False,
        sweep_loads=(),
    ),
    "small": Config(),
    "paper": Config(num_seeds=5, horizon=3600.0, warmup=600.0, num_flood=2000),
}


def _latency(cfg: Config, cd_scale: float = 1.0) -> LatencyModel:
    return LatencyModel(
        c0=cfg.c0,
        c_prefill=cfg.c_prefill,
        c_decode=cfg.c_decode * cd_scale,
        max_batch=cfg.max_batch,
        hop_cost=cfg.hop_cost,
    )


def _templates(workload: str):
    if workload == "mix":
        return list(TEMPLATES.values())
    if workload not in TEMPLATES:
        raise ValueError(f"unknown workload {workload!r}; use one of {[*TEMPLATES, 'mix']}")
    return [TEMPLATES[workload]]


def _sample(templates, n, seed, tool_cv):
    rng = np.random.default_rng(seed)
    return [templates[i % len(templates)](rng=rng, tool_cv_scale=tool_cv) for i in range(n)]


def _role_load(workflows, lm: LatencyModel) -> dict[str, float]:
    load: dict[str, float] = {}
    for wf in workflows:
        for m in wf.modules:
            if m.kind == "llm":  # device work at a full batch
                w = lm.c_prefill * m.prompt_tokens + m.output_tokens * (
                    lm.c_decode + lm.c0 / lm.max_batch
                )
                load[m.role] = load.get(m.role, 0.0) + w
    return load


def compare(
    workload: str,
    *,
    seed: int,
    cfg: Config,
    cd_scale: float = 1.0,
    tool_cv: float = 1.0,
    servers: tuple[str, ...] = SERVERS,
) -> dict:
    """One workload and seed: tune, estimate capacities, run every server on shared arrivals.

    Returns a dict with the tuned batch size, capacities, and per-server throughput,
    mean and P90 latency.
    """
    lm = _latency(cfg, cd_scale)
    templates = _templates(workload)
    d = cfg.num_devices
    ss = np.random.SeedSequence([seed, sum(map(ord, workload))]).spawn(5)
    seeds = [int(s.generate_state(1)[0]) for s in ss]
    tune = _sample(templates, cfg.num_flood, seeds[0], tool_cv)  # separate seed for tuning
    b_best = max(
        cfg.batch_sizes,
        key=lambda b: estimate_capacity(
            lambda: AggregatedScheduler(num_workers=d, batch_size=b, latency=lm), tune
        ),
    )
    partition = disaggregated_partition(_role_load(tune, lm), d)

    def make(name: str, overhead: float = cfg.sched_overhead):
        if name == "aggregated":
            return AggregatedScheduler(num_workers=d, batch_size=b_best, latency=lm)
        if name == "disaggregated":
            return DisaggregatedScheduler(num_workers=d, partition=partition, latency=lm)
        return AgentWeaveScheduler(num_workers=d, latency=lm, policy=name, sched_overhead=overhead)

    flood = _sample(templates, cfg.num_flood, seeds[1], tool_cv)
    cap = {
        name: estimate_capacity(lambda n=name: make(n), flood) for name in ("adaptive", *BASELINES)
    }
    out: dict = {"batch_size": b_best, "capacity": cap}
    sat = poisson_arrivals(
        templates,
        rate=cfg.saturation * max(cap.values()),
        horizon=cfg.horizon,
        seed=seeds[2],
        tool_cv_scale=tool_cv,
    )
    mod = poisson_arrivals(
        templates,
        rate=cfg.load * cap["aggregated"],
        horizon=cfg.horizon,
        seed=seeds[3],
        tool_cv_scale=tool_cv,
    )
    out["num_requests_saturated"] = len(sat)
    out["num_requests_moderate"] = len(mod)
    for name in servers:
        thr = simulate(make(name), sat, horizon=cfg.horizon, warmup=cfg.warmup, drain=False)
        lat = simulate(make(name), mod, horizon=cfg.horizon, warmup=cfg.warmup, drain=True)
        out[name] = {
            "throughput": thr.throughput,
            "mean_latency": lat.mean_latency,
            "p90_latency": lat.p90_latency,
            "utilization": float(np.mean(thr.utilization)),
        }
    default_point = cd_scale == 1.0 and tool_cv == 1.0
    if workload == "mix" and default_point and cfg.sweep_loads:
        # several loads, as fractions of the best baseline's capacity
        best_cap = max(cap[b] for b in BASELINES)
        out["load_sweep"] = {}
        for k, frac in enumerate(cfg.sweep_loads):
            arr = poisson_arrivals(
                templates,
                rate=frac * best_cap,
                horizon=cfg.horizon,
                seed=seeds[4] + k,
                tool_cv_scale=tool_cv,
            )
            out["load_sweep"][frac] = {}
            for name in servers:
                res = simulate(make(name), arr, horizon=cfg.horizon, warmup=cfg.warmup)
                out["load_sweep"][frac][name] = (res.mean_latency, res.p90_latency)
    if cfg.claim4 and workload == "mix" and default_point:
        for o in (0.0, cfg.high_overhead):
            for name in ("adaptive", "always"):
                res = simulate(make(name, o), mod, horizon=cfg.horizon, warmup=cfg.warmup)
                out[f"{name}_o{o:g}"] = res.mean_latency
    return out


def _ratios(r: dict) -> dict[str, float]:
    thr_b = max(r[b]["throughput"] for b in BASELINES)
    mean_b = min(r[b]["mean_latency"] for b in BASELINES)
    p90_b = min(r[b]["p90_latency"] for b in BASELINES)
    return {
        "throughput_ratio": r["adaptive"]["throughput"] / thr_b,
        "mean_latency_ratio": mean_b / r["adaptive"]["mean_latency"],
        "p90_latency_ratio": p90_b / r["adaptive"]["p90_latency"],
    }


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "adaptive_gain_high_overhead",
    "adaptive_vs_always_zero_overhead",
    "mean_latency_ratio",
    "p90_latency_ratio",
    "throughput_ratio_mix_and_3rd_template",
    "aggregated_batch_size_*",
    "num_templates_throughput_ge_paper",
    "capacity_aggregated_*",
    "load*_*_latency_ratio_mix",
    "mean_latency_*",
    "mean_latency_*_*",
    "mean_latency_ratio_*",
    "mean_latency_ratio_vs_*_*",
    "p90_latency_*_*",
    "p90_latency_ratio_*",
    "p90_latency_ratio_vs_*_*",
    "sweep_*",
    "sweep_min_*",
    "throughput_*_*",
    "throughput_ratio_*",
    "throughput_ratio_ci_*",
    "throughput_ratio_vs_*_*",
    "utilization_*_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "ratios_by_workload": (
        "Best baseline over AgentWeave, per workload (each template and the uniform mix): "
        "saturated throughput ratio and mean / P90 latency ratios at 70% of the "
        "aggregated capacity (claims throughput, mean_latency, p90_latency; 1 = parity)."
    ),
    "servers": (
        "Each server's saturated throughput and its mean latency at 70% load, per "
        "workload: AgentWeave, its always- and never-decompose ablations, and the "
        "aggregated and disaggregated baselines."
    ),
    "latency_vs_load": (
        "Mean and P90 latency on the mix as the load rises (fractions of the best "
        "baseline's flood capacity), per server: the gap between AgentWeave and the "
        "baselines opens near saturation."
    ),
    "sensitivity": (
        "Headline ratios on the mix when the decode cost c_d and the tool-latency CV are "
        "halved or doubled: how much the verdicts depend on our latency model."
    ),
}


def run(config: Config) -> RunResult:
    """Run the reproduction at ``config``; see the module docstring."""
    cfg = config
    results: dict[tuple[str, int], dict] = {}
    for w in cfg.workloads:
        for s in range(cfg.num_seeds):
            results[(w, s)] = compare(w, seed=cfg.seed + s, cfg=cfg)

    metrics: dict[str, float | int | bool] = {}
    rows = []
    for (w, s), r in results.items():
        for name in SERVERS:
            rows.append(
                {
                    "workload": w,
                    "seed": s,
                    "server": name,
                    **r[name],
                    "aggregated_batch_size": r["batch_size"],
                }
            )
    per_w: dict[str, dict[str, float]] = {}
    for w in cfg.workloads:
        rs = [results[(w, s)] for s in range(cfg.num_seeds)]
        # average each server's metric over seeds, then take ratios
        avg = {
            name: {k: float(np.mean([r[name][k] for r in rs])) for k in rs[0][name]}
            for name in SERVERS
        }
        per_w[w] = _ratios(avg)
        for k, v in per_w[w].items():
            metrics[f"{k}_{w}"] = v
        for b in BASELINES:  # each baseline on its own
            ours = avg["adaptive"]
            metrics[f"throughput_ratio_vs_{b}_{w}"] = ours["throughput"] / avg[b]["throughput"]
            metrics[f"mean_latency_ratio_vs_{b}_{w}"] = (
                avg[b]["mean_latency"] / ours["mean_latency"]
            )
            metrics[f"p90_latency_ratio_vs_{b}_{w}"] = avg[b]["p90_latency"] / ours["p90_latency"]
        # seed-to-seed spread of the throughput ratio (half-width of a normal 95% CI)
        seed_ratios = [_ratios(r)["throughput_ratio"] for r in rs]
        if len(rs) > 1:
            metrics[f"throughput_ratio_ci_{w}"] = float(
                1.96 * np.std(seed_ratios, ddof=1) / math.sqrt(len(rs))
            )
        for name in SERVERS:
            for k, v in avg[name].items():
                metrics[f"{k}_{name}_{w}"] = v
        metrics[f"aggregated_batch_size_{w}"] = int(rs[0]["batch_size"])
        metrics[f"capacity_aggregated_{w}"] = float(
            np.mean([r["capacity"]["aggregated"] for r in rs])
        )

    templates = [w for w in cfg.workloads if w != "mix"]
    if "mix" in per_w and len(templates) >= 4:
        thr = sorted((per_w[w]["throughput_ratio"] for w in templates), reverse=True)
        # Claim 1: the paper's 1.81x on the mix and on >= 3 of 4 templates
        metrics["throughput_ratio_mix_and_3rd_template"] = float(
            min(per_w["mix"]["throughput_ratio"], thr[2])
        )
        metrics["num_templates_throughput_ge_paper"] = int(sum(t >= 1.81 for t in thr))
    main = "mix" if "mix" in per_w else cfg.workloads[0]
    metrics["mean_latency_ratio"] = per_w[main]["mean_latency_ratio"]
    metrics["p90_latency_ratio"] = per_w[main]["p90_latency_ratio"]

    load_rows = []
    if "mix" in cfg.workloads and cfg.sweep_loads:
        rs = [results[("mix", s)] for s in range(cfg.num_seeds)]
        for frac in cfg.sweep_loads:
            lat = {
                name: [float(np.mean([r["load_sweep"][frac][name][i] for r in rs])) for i in (0, 1)]
                for name in SERVERS
            }
            row = {"load_of_best_baseline_capacity": frac}
            for name in SERVERS:
                row[f"mean_{name}"], row[f"p90_{name}"] = lat[name]
            for i, stat in enumerate(("mean", "p90")):
                best = min(lat[b][i] for b in BASELINES)
                ratio = best / lat["adaptive"][i]
                row[f"{stat}_latency_ratio"] = ratio
                metrics[f"load{frac:g}_{stat}_latency_ratio_mix"] = ratio
            load_rows.append(row)

    claim4_rows = []
    if cfg.claim4 and "mix" in cfg.workloads:
        rs = [results[("mix", s)] for s in range(cfg.num_seeds)]
        lat = {
            k: float(np.mean([r[k] for r in rs]))
            for k in (
                "adaptive_o0",
                "always_o0",
                f"adaptive_o{cfg.high_overhead:g}",
                f"always_o{cfg.high_overhead:g}",
            )
        }
        hi = f"{cfg.high_overhead:g}"
        # Claim 4: adaptive beats always by >= 10% at high overhead, ties within 3% at 0
        metrics["adaptive_gain_high_overhead"] = lat[f"always_o{hi}"] / lat[f"adaptive_o{hi}"] - 1
        metrics["adaptive_vs_always_zero_overhead"] = lat["adaptive_o0"] / lat["always_o0"] - 1
        for k, v in lat.items():
            metrics[f"mean_latency_{k}"] = v
            claim4_rows.append({"setting": k, "mean_latency_s": v})

    sweep_rows = []
    if "mix" in cfg.workloads:
        sweep_rows.append(
            {"point": "default", "c_d_scale": 1.0, "tool_cv_scale": 1.0, **per_w["mix"]}
        )
        points = [("c_d", x, 1.0) for x in cfg.sweep_cd]
        points += [("tool_cv", 1.0, x) for x in cfg.sweep_tool_cv]
        for kind, cd, cv in points:
            r = compare(
                "mix",
                seed=cfg.seed,
                cfg=cfg,
                cd_scale=cd,
                tool_cv=cv,
                servers=("adaptive", *BASELINES),
            )
            rat = _ratios(r)
            sweep_rows.append(
                {
                    "point": f"{kind} x{cd if kind == 'c_d' else cv:g}",
                    "c_d_scale": cd,
                    "tool_cv_scale": cv,
                    **rat,
                }
            )
            for k, v in rat.items():
                metrics[f"sweep_{kind}{cd if kind == 'c_d' else cv:g}_{k}"] = v
        if len(sweep_rows) > 1:
            for k in ("throughput_ratio", "mean_latency_ratio", "p90_latency_ratio"):
                metrics[f"sweep_min_{k}"] = float(min(r[k] for r in sweep_rows))

    metrics = {k: (v if isinstance(v, (bool, int)) else float(v)) for k, v in metrics.items()}
    figures = _figures(cfg, per_w, sweep_rows, results, load_rows)
    notes = (
        "Common random numbers: every server sees the same arrival sequences; the "
        "aggregated batch size is tuned on a separate seed by flood capacity.",
        "Throughput at 1.5x the largest estimated capacity (no drain); latency at 70% of "
        "the aggregated baseline's capacity (drained). Best baseline = the better of "
        "aggregated lockstep and disaggregated for each metric.",
        "All numbers are conditional on our parametric latency model (c0 = 5 ms, "
        "c_p = 0.08 ms/token, c_d = 0.25 ms/seq); the sweep shows the sensitivity.",
    )
    return RunResult(
        metrics=metrics,
        tables={
            "servers": rows,
            "sweep": sweep_rows,
            "adaptivity": claim4_rows,
            "load_sweep": load_rows,
        },
        figures=figures,
        captions=CAPTIONS,
        notes=notes,
    )


def _figures(cfg, per_w, sweep_rows, results, load_rows):
    figs = {}
    if load_rows:
        fig, axes = new_figure(2, width=4.6)
        x = [r["load_of_best_baseline_capacity"] for r in load_rows]
        for i, stat in enumerate(("mean", "p90")):
            for name in SERVERS:
                axes[i].plot(x, [r[f"{stat}_{name}"] for r in load_rows], "o-", label=name)
            axes[i].set_xlabel("load (fraction of the best baseline's capacity)")
            axes[i].set_ylabel(f"{stat} latency (s), mix")
            axes[i].set_yscale("log")
        axes[0].legend(fontsize=7)
        figs["latency_vs_load"] = figure_png(fig)
    ws = list(per_w)
    fig, axes = new_figure(3, width=4.0)
    for ax, key, title in zip(
        axes,
        ("throughput_ratio", "mean_latency_ratio", "p90_latency_ratio"),
        (
            "throughput: ours / best baseline",
            "mean latency: best baseline / ours",
            "P90 latency: best baseline / ours",
        ),
        strict=True,
    ):
        ax.bar(range(len(ws)), [per_w[w][key] for w in ws], color="C3")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(range(len(ws)), ws, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
    figs["ratios_by_workload"] = figure_png(fig)

    fig, axes = new_figure(2, width=4.6)
    x = np.arange(len(ws))
    width = 0.16
    for i, name in enumerate(SERVERS):
        thr = [
            np.mean([results[(w, s)][name]["throughput"] for s in range(cfg.num_seeds)]) for w in ws
        ]
        lat = [
            np.mean([results[(w, s)][name]["mean_latency"] for s in range(cfg.num_seeds)])
            for w in ws
        ]
        axes[0].bar(x + (i - 2) * width, thr, width, label=name)
        axes[1].bar(x + (i - 2) * width, lat, width, label=name)
    axes[0].set_ylabel("throughput (req/s, saturated)")
    axes[1].set_ylabel("mean latency (s, 70% load)")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xticks(x, ws, fontsize=8)
    axes[0].legend(fontsize=7)
    figs["servers"] = figure_png(fig)

    if len(sweep_rows) > 1:
        fig, axes = new_figure(1, width=6.0)
        labels = [r["point"] for r in sweep_rows]
        for j, key in enumerate(("throughput_ratio", "mean_latency_ratio", "p90_latency_ratio")):
            axes[0].bar(
                np.arange(len(labels)) + (j - 1) * 0.25,
                [r[key] for r in sweep_rows],
                0.25,
                label=key,
            )
        axes[0].axhline(1.0, color="k", lw=0.8)
        axes[0].set_xticks(range(len(labels)), labels, fontsize=8)
        axes[0].set_yscale("log")
        axes[0].set_title("mix: sensitivity to the latency model", fontsize=9)
        axes[0].legend(fontsize=7)
        figs["sensitivity"] = figure_png(fig)
    return figs
