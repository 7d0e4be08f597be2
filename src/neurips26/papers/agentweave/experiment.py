"""Reproduction: AgentWeave versus disaggregated and aggregated-lockstep serving.

For every workload (each template alone on ``num_devices`` devices, and the uniform mix
on ``mix_devices``) and seed, on simulated devices with KV-cache memory
(:class:`~.workflow.LatencyModel`): the aggregated baseline's batch size is tuned on a
separate seed (flood capacity); the disaggregated partition gives every module role
devices of its own in proportion to the role's expected load (at least one per role).
Every server then meets the *same* saturating arrival sequence (1.3x the largest flood
estimate), and its completion rate there is its measured capacity ``mu``. Latency is
compared at matched fractions of each system's *own* capacity: every server is loaded
at ``f * mu_server`` for ``f`` in ``loads`` (the same requests in the same order, the
arrival times scaled), and the claims use ``f = load`` (70%). Claim 4 reruns the mix at
70% of AgentWeave's capacity with ``o_sched`` in {0, 50 ms} for the adaptive and the
always-decompose policies, and once more at ``o_sched = 0`` with free context moves (a
diagnostic, on the same arrivals). A one-at-a-time sweep of ``c_d`` and the tool-latency CV
(x0.5, x2) on the mix (seed 0) shows how the headline ratios depend on our latency
model.

Units: one (workload, seed) comparison is a unit of the experiment layer, and so is each
point of the sensitivity sweep; every unit draws from its own seed sequence, so the units
are independent of the order they run in. Every claim's value is a per-seed ratio (a gain
is a ratio minus 1) summarised over seeds on the log scale: the geometric mean with its
Student-t 95% interval over seeds, mapped back (:func:`neurips26.experiment.log_t_interval`).

Controls: the throughput and latency claims are measured again for the never-decompose
ablation in AgentWeave's place (the same runtime with continuous admission of whole
requests, without the paper's flow decomposition): if it beats the baselines by as much,
the gain is not the decomposition's. The high-overhead gain of adaptivity is measured
again at ``o_sched = 0``, and the zero-overhead tie again at ``o_sched = 50 ms``, the
setting where the other claim says the two policies differ.

What reproduces and what does not, and why
------------------------------------------
(The measured values are in the store and the report; this says why.)
Claim 1 (capacity 1.81x on the mix and on >= 3 of 4 templates) does not reproduce as a
whole; the per-workload ratios (``throughput_ratio_<workload>``) show where it falls
short. Two diagnostics, each the claim's statistic (min of the mix and the 3rd-best
template, per seed; log scale over seeds), test two causes. (1) Our inferred choice of
comparing with the better of two tuned baselines per workload, against the reading of
one baseline at a time: ``throughput_ratio_mix_and_3rd_template_vs_aggregated`` and
``..._vs_disaggregated``; the cause is supported if either reaches 1.81. (2) The
mechanism the gain rests on, filling device time the baselines leave idle (pipeline
bubbles of per-role pools, lockstep batches idling on tools and stragglers):
``busy_ratio_mix_and_3rd_template`` is AgentWeave's device busy fraction under saturating
arrivals over that of the baseline with the larger capacity (``busy_ratio_<workload>``
per workload). Capacity is busy time over device work per request, so a busy ratio near 1
and well below 1.81 supports "our baselines already keep the devices busy: the mechanism
has little room here", and leaves only less work per request to give a gain. How the
disaggregated pools divide the devices and what KV memory costs each system are not yet
diagnosed.

Claims 2 and 3 (mean / P90 latency 2.45x / 2.04x lower) do not reproduce: at matched
load (each system at the same fraction of its own capacity) AgentWeave's latency is
about that of the best baseline, i.e. on the mix it serves far more load at about the
same latency, but not at much lower latency. The run measures two parts of the cause:
the ratios grow with the load fraction yet stay below the paper's
(``mean_latency_ratio_top_load``, ``p90_latency_ratio_top_load``: the ratios at the
largest load fraction of the sweep), and the never-decompose ablation (continuous
admission of whole requests, the claims' control) sits at about AgentWeave's latency.
What else shapes the service time (context re-prefills of moved units, KV memory near
saturation) is not yet diagnosed; the per-baseline metrics show the larger gains against
lockstep aggregation alone.

Claim 4: with o_sched = 50 ms the adaptive policy beats always-decompose. The tie at
o_sched = 0 does not reproduce. The cause tested: our reading of "o_sched = 0" leaves the
shared context cost (re-prefill of a context not resident on the unit's new device, plus
the hop), which always-decompose pays at every boundary and which keeps the adaptive rule
(``kappa (o_sched + E[o_ctx])``) from cutting. Two diagnostics:
``adaptive_vs_always_free_context`` is the claim's relative difference on the same
arrivals at o_sched = 0 with free context moves (no re-prefill time, no hop, E[o_ctx] = 0;
the other reading of a zero-overhead boundary): within 3% supports the cause.
``adaptive_cut_ratio_zero_overhead`` measures the premise of the tie directly, the
adaptive policy's cuts over always-decompose's on the same arrivals at o_sched = 0: well
below 1 means that the two policies schedule differently at zero scheduler overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, log_t_interval

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
#: Servers run at every load fraction (the ablations run at ``Config.load`` only).
SWEPT = ("adaptive", *BASELINES)


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    ``workloads`` names templates or ``"mix"``; each runs ``num_seeds`` seeds with
    ``horizon`` simulated seconds (``warmup`` excluded). ``sweep_cd`` and ``sweep_tool_cv``
    scale ``c_d`` and the tool-latency CVs on the mix (seed 0 only).
    """

    seed: int = 0
    num_devices: int = param(8, help="devices per single-template workload", min=1)
    mix_devices: int = param(
        16, help="devices for the mix (8 LLM roles: lets disaggregation size pools)", min=1
    )
    workloads: tuple[str, ...] = param(
        ("react", "rag", "debate", "code", "mix"),
        help="agent workflows served",
        choices=("rag", "react", "debate", "code", "mix"),
    )
    num_seeds: int = param(3, help="simulation seeds per setting", min=1)
    horizon: float = param(240.0, help="simulated seconds per run", min=0.0)
    warmup: float = param(
        60.0, help="simulated warm-up seconds left out of the statistics", min=0.0
    )
    num_flood: int = param(300, help="requests of the capacity-probing flood", min=10)
    batch_sizes: tuple[int, ...] = param((4, 8, 16, 32), help="batch sizes swept", min=1)
    saturation: float = param(
        1.3, help="arrival rate of the capacity runs, as a multiple of the flood estimate", min=1.0
    )
    load: float = param(
        0.7, help="load of the latency claims: fraction of each system's capacity", min=0.0, max=1.0
    )
    loads: tuple[float, ...] = param(
        (0.5, 0.7, 0.9), help="load fractions of each system's own capacity", min=0.0, max=1.0
    )
    c0: float = param(5e-3, help="fixed latency per batch step (s)", min=0.0)
    c_prefill: float = param(8e-5, help="prefill seconds per token", min=0.0)
    c_decode: float = param(2.5e-4, help="decode seconds per sequence and step", min=0.0)
    max_batch: int = param(32, help="largest batch a device runs", min=1)
    kv_capacity: int = param(40_000, help="KV-cache tokens per device", min=1)
    hop_cost: float = param(2e-3, help="seconds per context move between devices", min=0.0)
    sched_overhead: float = param(1e-3, help="scheduler seconds per unit boundary", min=0.0)
    high_overhead: float = param(
        0.05, help="unit-boundary overhead of the high-overhead ablation (s)", min=0.0
    )
    sweep_cd: tuple[float, ...] = param(
        (0.5, 2.0), help="decode-cost multipliers (empty: none)", min=0.0, allow_empty=True
    )
    sweep_tool_cv: tuple[float, ...] = param(
        (0.5, 2.0), help="tool-latency CV multipliers (empty: none)", min=0.0, allow_empty=True
    )
    claim4: bool = param(True, help="run the claim-4 experiment")


TIERS = {
    "smoke": Config(
        num_devices=2,
        workloads=("rag",),
        num_seeds=1,
        horizon=40.0,
        warmup=10.0,
        num_flood=50,
        batch_sizes=(8, 32),
        loads=(0.7,),
        sweep_cd=(),
        sweep_tool_cv=(),
        claim4=False,
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
        kv_capacity=cfg.kv_capacity,
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
    loads: tuple[float, ...] | None = None,
    claim4: bool | None = None,
) -> dict:
    """One workload and seed: tune, measure capacities, run every server at matched loads.

    Returns a dict with the tuned batch size, the flood estimates, the offered saturating
    rate, and per server its measured capacity (``throughput``), utilisation, KV counters
    and, per load fraction ``f``, its mean and P90 latency at ``f`` times its own capacity
    (``latency[f] = (mean, p90)``).
    """
    lm = _latency(cfg, cd_scale)
    templates = _templates(workload)
    d = cfg.mix_devices if workload == "mix" else cfg.num_devices
    loads = tuple(cfg.loads) if loads is None else tuple(loads)
    if cfg.load not in loads:
        loads = (*loads, cfg.load)
    claim4 = cfg.claim4 and workload == "mix" if claim4 is None else claim4
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

    def make(name: str, overhead: float = cfg.sched_overhead, context_cost: bool = True):
        if name == "aggregated":
            return AggregatedScheduler(num_workers=d, batch_size=b_best, latency=lm)
        if name == "disaggregated":
            return DisaggregatedScheduler(num_workers=d, partition=partition, latency=lm)
        return AgentWeaveScheduler(num_workers=d, latency=lm, policy=name, sched_overhead=overhead,
                                   context_cost=context_cost)

    flood = _sample(templates, cfg.num_flood, seeds[1], tool_cv)
    flood_cap = {
        name: estimate_capacity(lambda n=name: make(n), flood) for name in ("adaptive", *BASELINES)
    }
    rate = cfg.saturation * max(flood_cap.values())
    sat = poisson_arrivals(
        templates, rate=rate, horizon=cfg.horizon, seed=seeds[2], tool_cv_scale=tool_cv
    )
    offered = sum(cfg.warmup <= r.arrival < cfg.horizon for r in sat) / (cfg.horizon - cfg.warmup)
    out: dict = {
        "batch_size": b_best,
        "devices": d,
        "flood_capacity": flood_cap,
        "offered_rate": offered,
        "partition": partition,
    }
    for name in servers:
        s = make(name)
        thr = simulate(s, sat, horizon=cfg.horizon, warmup=cfg.warmup, drain=False)
        out[name] = {
            "throughput": thr.mix_throughput,
            "completion_rate": thr.throughput,
            "utilization": float(np.mean(thr.utilization)),
            "kv_peak": float(np.max(thr.kv_peak)),
            **thr.counters,
            "latency": {},
            "rate": {},
        }
    for k, frac in enumerate(sorted(loads)):
        for name in servers:
            if name not in SWEPT and frac != cfg.load:
                continue
            out[name]["rate"][frac] = frac * out[name]["throughput"]
            arr = poisson_arrivals(
                templates,
                rate=out[name]["rate"][frac],
                horizon=cfg.horizon,
                seed=seeds[3] + k,  # common random numbers: same requests, times scaled
                tool_cv_scale=tool_cv,
            )
            res = simulate(make(name), arr, horizon=cfg.horizon, warmup=cfg.warmup)
            out[name]["latency"][frac] = (res.mean_latency, res.p90_latency)
    if claim4:
        arr = poisson_arrivals(
            templates,
            rate=cfg.load * out["adaptive"]["throughput"],
            horizon=cfg.horizon,
            seed=seeds[4],
            tool_cv_scale=tool_cv,
        )
        for o in (0.0, cfg.high_overhead):
            for name in ("adaptive", "always"):
                s = make(name, o)
                res = simulate(s, arr, horizon=cfg.horizon, warmup=cfg.warmup)
                out[f"{name}_o{o:g}"] = res.mean_latency
                out[f"{name}_cuts_o{o:g}"] = s.num_cuts
        # diagnostic of the zero-overhead tie: the same pair at o_sched = 0 with free
        # context moves (no re-prefill, no hop), on the same arrivals
        for name in ("adaptive", "always"):
            res = simulate(make(name, 0.0, context_cost=False), arr,
                           horizon=cfg.horizon, warmup=cfg.warmup)
            out[f"{name}_o0_free_context"] = res.mean_latency
    return out


def _ratios(r: dict, frac: float, server: str = "adaptive") -> dict[str, float]:
    """Ratios of ``server`` against the best baseline (the better of the two for each
    metric)."""
    ours = r[server]
    thr_b = max(r[b]["throughput"] for b in BASELINES)
    mean_b = min(r[b]["latency"][frac][0] for b in BASELINES)
    p90_b = min(r[b]["latency"][frac][1] for b in BASELINES)
    return {
        "throughput_ratio": ours["throughput"] / thr_b,
        "mean_latency_ratio": mean_b / ours["latency"][frac][0],
        "p90_latency_ratio": p90_b / ours["latency"][frac][1],
    }


def best_baselines(r: dict, frac: float) -> dict[str, str]:
    """Which baseline is strongest on each metric of one :func:`compare` result."""
    return {
        "throughput": max(BASELINES, key=lambda b: r[b]["throughput"]),
        "mean_latency": min(BASELINES, key=lambda b: r[b]["latency"][frac][0]),
        "p90_latency": min(BASELINES, key=lambda b: r[b]["latency"][frac][1]),
    }


def _log_mean(values, minus_one: bool = False) -> Estimate:
    """Geometric mean over seeds of positive per-seed ratios, with the Student-t interval
    on the log scale (``minus_one``: of the ratio minus 1, a relative gain)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
        return Estimate.missing(f"a per-seed ratio is not positive and finite: {v.tolist()}")
    e = log_t_interval(v)
    return e.map(lambda x: x - 1.0) if minus_one else e


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "adaptive_gain_high_overhead",
    "adaptive_gain_zero_overhead",
    "adaptive_vs_always_zero_overhead",
    "adaptive_vs_always_high_overhead",
    "mean_latency_ratio",
    "never_mean_latency_ratio",
    "p90_latency_ratio",
    "never_p90_latency_ratio",
    "throughput_ratio_mix_and_3rd_template",
    "never_throughput_ratio_mix_and_3rd_template",
    "num_templates_throughput_ge_paper",
    "mean_latency_ratio_top_load",
    "p90_latency_ratio_top_load",
    "throughput_ratio_mix_and_3rd_template_vs_aggregated",
    "throughput_ratio_mix_and_3rd_template_vs_disaggregated",
    "busy_ratio_mix_and_3rd_template",
    "busy_ratio_*",
    "adaptive_vs_always_free_context",
    "adaptive_cut_ratio_zero_overhead",
    "capacity_runs_saturated",
    "aggregated_batch_size_*",
    "capacity_*_*",
    "flood_capacity_*_*",
    "load*_*_latency_ratio_*",
    "mean_latency_*",
    "mean_latency_*_*",
    "p90_latency_*_*",
    "mean_latency_ratio_*",
    "never_*_ratio_*",
    "p90_latency_ratio_*",
    "mean_latency_ratio_vs_*_*",
    "p90_latency_ratio_vs_*_*",
    "sweep_*",
    "sweep_min_*",
    "throughput_*_*",
    "throughput_ratio_*",
    "throughput_ratio_vs_*_*",
    "utilization_*_*",
    "kv_peak_fraction_*_*",
    "kv_waits_per_request_*_*",
    "preemptions_per_request_*_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "ratios_by_workload": (
        "AgentWeave against the best baseline, per workload (each template and the "
        "uniform mix): measured-capacity ratio and mean / P90 latency ratios at 70% of "
        "each system's own capacity (claims throughput, mean_latency, p90_latency; "
        "1 = parity, dashed = the paper's figures)."
    ),
    "servers": (
        "Each server's measured capacity (completion rate under saturating arrivals) and "
        "its mean latency at 70% of that capacity, per workload: AgentWeave, its always- "
        "and never-decompose ablations, and the aggregated and disaggregated baselines."
    ),
    "latency_vs_load": (
        "Mean and P90 latency on the mix at 50/70/90% of each system's own measured "
        "capacity, per server."
    ),
    "sensitivity": (
        "Headline ratios on the mix when the decode cost c_d and the tool-latency CV are "
        "halved or doubled (seed 0): how much the verdicts depend on our latency model."
    ),
}

_PAPER = {"throughput_ratio": 1.81, "mean_latency_ratio": 2.45, "p90_latency_ratio": 2.04}


_KEYS = ("throughput_ratio", "mean_latency_ratio", "p90_latency_ratio")


class AgentWeave(Experiment):
    """Every server on every workload and seed; one unit per comparison or sweep point."""

    Config, TIERS, METRICS, CAPTIONS = Config, TIERS, METRICS, CAPTIONS
    UNIT_TABLE = None  # the rows carry the comparisons; "servers" is the report's table

    def grid(self, config):
        units = [{"workload": w, "seed": s}
                 for w in config.workloads for s in range(config.num_seeds)]
        if "mix" in config.workloads:
            units += [{"sweep": "c_d", "scale": x} for x in config.sweep_cd]
            units += [{"sweep": "tool_cv", "scale": x} for x in config.sweep_tool_cv]
        return units

    def setup(self, config, ctx):
        return {"cfg": config}

    def measure(self, unit, state, ctx):
        cfg = state["cfg"]
        frac = cfg.load
        if "sweep" in unit.columns:
            kind, x = unit["sweep"], unit["scale"]
            cd, cv = (x, 1.0) if kind == "c_d" else (1.0, x)
            r = compare("mix", seed=cfg.seed, cfg=cfg, cd_scale=cd, tool_cv=cv,
                        servers=SWEPT, loads=(frac,), claim4=False)
            return {"c_d_scale": cd, "tool_cv_scale": cv, **_ratios(r, frac)}
        r = compare(unit["workload"], seed=cfg.seed + unit["seed"], cfg=cfg)
        row = {**_ratios(r, frac), "_r": r}
        # diagnostics of the capacity claim: each baseline alone, and the ratio of device
        # busy fractions under saturation against the baseline of the larger capacity
        for b in BASELINES:
            row[f"throughput_ratio_vs_{b}"] = r["adaptive"]["throughput"] / r[b]["throughput"]
        best = best_baselines(r, frac)["throughput"]
        row["busy_ratio"] = r["adaptive"]["utilization"] / r[best]["utilization"]
        row.update({f"never_{k}": v for k, v in _ratios(r, frac, "never").items()})
        return row

    def summarize(self, table, config, ctx):
        cfg = config
        frac = cfg.load
        runs = table.where(lambda r: "workload" in r)
        seeds = range(cfg.num_seeds)
        results = {(r["workload"], r["seed"]): r["_r"] for r in runs}
        metrics: dict[str, float | int | bool | Estimate] = {}
        per_w: dict[str, dict[str, Estimate]] = {}
        for w in cfg.workloads:
            rows_w = runs.where(workload=w)
            per_w[w] = {}
            for k in _KEYS:
                per_w[w][k] = _log_mean(rows_w.column(k))
                metrics[f"{k}_{w}"] = per_w[w][k]
                metrics[f"never_{k}_{w}"] = _log_mean(rows_w.column(f"never_{k}"))
            metrics[f"busy_ratio_{w}"] = _log_mean(rows_w.column("busy_ratio"))
            rs = [results[(w, s)] for s in seeds]
            n_req = max(1.0, cfg.horizon * float(np.mean([r["offered_rate"] for r in rs])))
            for name in SERVERS:
                metrics[f"throughput_{name}_{w}"] = float(
                    np.mean([r[name]["throughput"] for r in rs]))
                metrics[f"capacity_{name}_{w}"] = metrics[f"throughput_{name}_{w}"]
                metrics[f"utilization_{name}_{w}"] = float(
                    np.mean([r[name]["utilization"] for r in rs])
                )
                metrics[f"kv_peak_fraction_{name}_{w}"] = float(
                    np.mean([r[name]["kv_peak"] for r in rs]) / cfg.kv_capacity
                )
                metrics[f"kv_waits_per_request_{name}_{w}"] = float(
                    np.mean([r[name]["num_kv_waits"] for r in rs]) / n_req
                )
                metrics[f"preemptions_per_request_{name}_{w}"] = float(
                    np.mean([r[name]["num_preemptions"] for r in rs]) / n_req
                )
                metrics[f"mean_latency_{name}_{w}"] = float(
                    np.mean([r[name]["latency"][frac][0] for r in rs])
                )
                metrics[f"p90_latency_{name}_{w}"] = float(
                    np.mean([r[name]["latency"][frac][1] for r in rs])
                )
            for b in BASELINES:  # each baseline on its own
                metrics[f"throughput_ratio_vs_{b}_{w}"] = float(
                    np.mean([r["adaptive"]["throughput"] / r[b]["throughput"] for r in rs])
                )
                for i, stat in enumerate(("mean", "p90")):
                    metrics[f"{stat}_latency_ratio_vs_{b}_{w}"] = float(
                        np.mean(
                            [r[b]["latency"][frac][i] / r["adaptive"]["latency"][frac][i]
                             for r in rs]
                        )
                    )
            for name in BASELINES:
                metrics[f"flood_capacity_{name}_{w}"] = float(
                    np.mean([r["flood_capacity"][name] for r in rs])
                )
            metrics[f"flood_capacity_adaptive_{w}"] = float(
                np.mean([r["flood_capacity"]["adaptive"] for r in rs])
            )
            metrics[f"aggregated_batch_size_{w}"] = int(rs[0]["batch_size"])
            for f in sorted(cfg.loads):
                for i, stat in enumerate(("mean", "p90")):
                    vals = [
                        min(r[b]["latency"][f][i] for b in BASELINES)
                        / r["adaptive"]["latency"][f][i]
                        for r in rs
                    ]
                    metrics[f"load{f:g}_{stat}_latency_ratio_{w}"] = float(np.mean(vals))
        # the capacity runs must saturate every server (else "capacity" is the offered rate)
        metrics["capacity_runs_saturated"] = bool(
            all(
                r[name]["throughput"] < 0.95 * r["offered_rate"]
                for r in results.values()
                for name in SERVERS
            )
        )

        templates = [w for w in cfg.workloads if w != "mix"]
        if "mix" in per_w and len(templates) >= 4:
            # Claim 1: the paper's 1.81x on the mix and on >= 3 of 4 templates, per seed;
            # its control: the never-decompose ablation in AgentWeave's place
            # diagnostics: the same statistic against each baseline alone (a weaker
            # baseline) and of the busy-fraction ratio (the room the mechanism has)
            for key, name in (
                ("throughput_ratio", "throughput_ratio_mix_and_3rd_template"),
                ("never_throughput_ratio", "never_throughput_ratio_mix_and_3rd_template"),
                *((f"throughput_ratio_vs_{b}", f"throughput_ratio_mix_and_3rd_template_vs_{b}")
                  for b in BASELINES),
                ("busy_ratio", "busy_ratio_mix_and_3rd_template"),
            ):
                vals = []
                for s in seeds:
                    by_w = {w: runs.where(workload=w, seed=s).rows[0] for w in cfg.workloads}
                    thr = sorted((by_w[w][key] for w in templates), reverse=True)
                    vals.append(min(by_w["mix"][key], thr[2]))
                metrics[name] = _log_mean(vals)
            metrics["num_templates_throughput_ge_paper"] = int(
                sum(per_w[w]["throughput_ratio"].value >= 1.81 for w in templates)
            )
        main = "mix" if "mix" in per_w else cfg.workloads[0]
        main_rows = runs.where(workload=main)
        for k in ("mean_latency_ratio", "p90_latency_ratio"):
            metrics[k] = per_w[main][k]
            metrics[f"never_{k}"] = _log_mean(main_rows.column(f"never_{k}"))
        # the latency claims' diagnostic: the same ratios at the sweep's largest load
        top = max(cfg.loads)
        for stat in ("mean", "p90"):
            metrics[f"{stat}_latency_ratio_top_load"] = metrics[
                f"load{top:g}_{stat}_latency_ratio_{main}"]

        if cfg.claim4 and "mix" in cfg.workloads:
            rs = [results[("mix", s)] for s in seeds]
            hi = f"{cfg.high_overhead:g}"
            # Claim 4: adaptive beats always by >= 10% at high overhead (control: the same
            # gain at zero overhead), ties within 3% at 0 (control: the same at 50 ms)
            always_hi = [r[f"always_o{hi}"] for r in rs]
            adaptive_hi = [r[f"adaptive_o{hi}"] for r in rs]
            always_0 = [r["always_o0"] for r in rs]
            adaptive_0 = [r["adaptive_o0"] for r in rs]
            metrics["adaptive_gain_high_overhead"] = _log_mean(
                np.divide(always_hi, adaptive_hi), minus_one=True)
            metrics["adaptive_gain_zero_overhead"] = _log_mean(
                np.divide(always_0, adaptive_0), minus_one=True)
            metrics["adaptive_vs_always_zero_overhead"] = _log_mean(
                np.divide(adaptive_0, always_0), minus_one=True)
            metrics["adaptive_vs_always_high_overhead"] = _log_mean(
                np.divide(adaptive_hi, always_hi), minus_one=True)
            # diagnostics of the tie: free context moves at o_sched = 0, and how often the
            # adaptive rule cuts at o_sched = 0 relative to always-decompose
            metrics["adaptive_vs_always_free_context"] = _log_mean(
                [r["adaptive_o0_free_context"] / r["always_o0_free_context"] for r in rs],
                minus_one=True)
            metrics["adaptive_cut_ratio_zero_overhead"] = _log_mean(
                [r["adaptive_cuts_o0"] / r["always_cuts_o0"] for r in rs])
            for k in ("adaptive_o0", "always_o0", f"adaptive_o{hi}", f"always_o{hi}"):
                metrics[f"mean_latency_{k}"] = float(np.mean([r[k] for r in rs]))

        sweep = table.where(lambda r: "sweep" in r)
        if "mix" in cfg.workloads and len(sweep):
            rows = [{k: per_w["mix"][k].value for k in _KEYS}, *sweep.rows]
            for r in sweep:
                for k in _KEYS:
                    metrics[f"sweep_{r['sweep']}{r['scale']:g}_{k}"] = r[k]
            for k in _KEYS:
                metrics[f"sweep_min_{k}"] = float(min(r[k] for r in rows))
        return {k: (v if isinstance(v, (bool, int, Estimate)) else float(v))
                for k, v in metrics.items()}

    def tables(self, table, summary, config):
        cfg = config
        frac = cfg.load
        runs = table.where(lambda r: "workload" in r)
        rows, best_rows = [], []
        for run_row in runs:
            w, s, r = run_row["workload"], run_row["seed"], run_row["_r"]
            best = best_baselines(r, frac)
            best_rows.append(
                {"workload": w, "seed": s, **{f"best_{k}": v for k, v in best.items()}}
            )
            for name in SERVERS:
                lat = r[name]["latency"]
                rows.append(
                    {
                        "workload": w,
                        "seed": s,
                        "server": name,
                        "devices": r["devices"],
                        "capacity": r[name]["throughput"],
                        "offered_rate": r["offered_rate"],
                        "utilization": r[name]["utilization"],
                        "kv_peak": r[name]["kv_peak"],
                        "kv_waits": r[name]["num_kv_waits"],
                        "preemptions": r[name]["num_preemptions"],
                        **{f"mean_at_{f:g}": v[0] for f, v in sorted(lat.items())},
                        **{f"p90_at_{f:g}": v[1] for f, v in sorted(lat.items())},
                        "aggregated_batch_size": r["batch_size"],
                    }
                )
        load_rows, claim4_rows = [], []
        if "mix" in cfg.workloads:
            rs = [r["_r"] for r in runs.where(workload="mix")]
            for f in sorted(cfg.loads):
                row = {"load_of_own_capacity": f}
                for name in SWEPT:
                    for i, stat in enumerate(("mean", "p90")):
                        row[f"{stat}_{name}"] = float(
                            np.mean([r[name]["latency"][f][i] for r in rs]))
                for stat in ("mean", "p90"):
                    row[f"{stat}_latency_ratio"] = summary[f"load{f:g}_{stat}_latency_ratio_mix"]
                load_rows.append(row)
            if cfg.claim4:
                hi = f"{cfg.high_overhead:g}"
                for k in ("adaptive_o0", "always_o0", f"adaptive_o{hi}", f"always_o{hi}"):
                    claim4_rows.append(
                        {"setting": k, "mean_latency_s": summary[f"mean_latency_{k}"]})
        return {
            "servers": rows,
            "best_baselines": best_rows,
            "sweep": _sweep_rows(table, summary, cfg),
            "adaptivity": claim4_rows,
            "load_sweep": load_rows,
        }

    def figures(self, table, summary, config):
        runs = table.where(lambda r: "workload" in r)
        results = {(r["workload"], r["seed"]): r["_r"] for r in runs}
        per_w = {w: {k: _value(summary[f"{k}_{w}"]) for k in _KEYS} for w in config.workloads}
        load_rows = self.tables(table, summary, config)["load_sweep"]
        return _figures(config, per_w, _sweep_rows(table, summary, config), results, load_rows)

    def notes(self, table, summary, config):
        return (
            "Common random numbers: every server sees the same saturating arrival sequence; "
            "at each load fraction every server gets the same requests in the same order, "
            "their times scaled to its own capacity.",
            "Capacity = a server's completion rate under arrivals at 1.3x the largest flood "
            "estimate (no drain); latency at 70% of each server's own capacity (drained). "
            "Best baseline = the better of aggregated lockstep and disaggregated per metric "
            "(table best_baselines names it per workload and seed).",
            "All numbers are conditional on our parametric latency and KV-memory model "
            "(c0 = 5 ms, c_p = 0.08 ms/token, c_d = 0.25 ms/seq, 40,000 KV tokens per "
            "device); the sweep shows the sensitivity.",
        )


def _value(v) -> float:
    return v.value if isinstance(v, Estimate) else float(v)


def _sweep_rows(table, summary, cfg) -> list[dict]:
    """The sensitivity table: the default point (the mix's seed means) and each sweep."""
    if "mix" not in cfg.workloads:
        return []
    rows = [{"point": "default", "c_d_scale": 1.0, "tool_cv_scale": 1.0,
             **{k: _value(summary[f"{k}_mix"]) for k in _KEYS}}]
    for r in table.where(lambda r: "sweep" in r):
        rows.append({"point": f"{r['sweep']} x{r['scale']:g}", "c_d_scale": r["c_d_scale"],
                     "tool_cv_scale": r["tool_cv_scale"], **{k: r[k] for k in _KEYS}})
    return rows


def _figures(cfg, per_w, sweep_rows, results, load_rows):
    figs = {}
    if load_rows:
        fig, axes = new_figure(2, width=4.6)
        x = [r["load_of_own_capacity"] for r in load_rows]
        for i, stat in enumerate(("mean", "p90")):
            for name in SWEPT:
                axes[i].plot(x, [r[f"{stat}_{name}"] for r in load_rows], "o-", label=name)
            axes[i].set_xlabel("load (fraction of the server's own capacity)")
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
            "capacity: ours / best baseline",
            "mean latency: best baseline / ours",
            "P90 latency: best baseline / ours",
        ),
        strict=True,
    ):
        ax.bar(range(len(ws)), [per_w[w][key] for w in ws], color="C3")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(_PAPER[key], color="k", lw=0.8, ls="--")
        ax.set_xticks(range(len(ws)), ws, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
    figs["ratios_by_workload"] = figure_png(fig)

    fig, axes = new_figure(2, width=4.6)
    x = np.arange(len(ws))
    width = 0.16
    seeds = range(cfg.num_seeds)
    for i, name in enumerate(SERVERS):
        thr = [np.mean([results[(w, s)][name]["throughput"] for s in seeds]) for w in ws]
        lat = [np.mean([results[(w, s)][name]["latency"][cfg.load][0] for s in seeds]) for w in ws]
        axes[0].bar(x + (i - 2) * width, thr, width, label=name)
        axes[1].bar(x + (i - 2) * width, lat, width, label=name)
    axes[0].set_ylabel("capacity (req/s, saturated)")
    axes[1].set_ylabel("mean latency (s, 70% of own capacity)")
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


EXPERIMENT = AgentWeave()
run = EXPERIMENT.run
