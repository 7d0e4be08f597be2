"""Reproduction: sample need across d and s, robustness across eta, the mechanism at work.

1. Sample need ``n_eps``: for each ``d`` and each seed (one clean draw, eta = 0, nested
   prefixes), the first ``n`` on a geometric grid (factor 1.4) whose clean error is
   ``<= eps``; ``n_eps`` is the median over seeds (a seed that never reaches ``eps`` by
   ``n_max`` counts as ``1.4 n_max``, a lower bound). For our learner (set W, localisation)
   and the L2-ball-only reference (Shen's dense algorithm). The growth
   ``n_eps(400) / n_eps(50)`` tests attribute efficiency; the same scan over ``s`` at one
   ``d`` gives the log-log slope of ``n_eps`` in ``s`` (the paper's bound is ``s^2``). Each
   ratio carries a bootstrap interval over seeds.
2. Robustness: at ``d = 200`` and ``n = 4 n_eps(ours, eta = 0)``, the clean error of our
   learner, the no-reweighting ablation (localisation kept), the dense reference,
   LinearSVC and L1-logistic regression as the flip-cluster rate ``eta`` rises; means over
   seeds with Student-t intervals, and a paired bootstrap interval of the smallest
   baseline / ours error ratio. The single-round variant (no localisation) is reported
   beside them.
3. Mechanism: round 0's hinge weight left on corrupted rows after soft outlier removal
   relative to their share before it (eta = 0.1; the variance cap comes from the analysis,
   :func:`~.outliers.variance_cap`, so a cluster of scale ``alpha`` keeps at most
   ``(sigma_bar^2 - 1) / (alpha^2 - 1)``), and the shares of large-norm attack points the
   L-infinity filter drops and of clean points it keeps (Clopper-Pearson intervals). The
   large-norm spike is ``1.75 sqrt(2 log(n d))``, a multiple of the clean sample's largest
   coordinate that does not depend on the filter: the union-bound filter level sits between
   the two, and a looser filter (the earlier ``3 sqrt(log(n d))``) lets most spikes through.
4. Cost: one sparse-PCA SDP solve (SCS) versus the power method at ``d = 20, 40, 60``
   (seconds, volatile: context only).

Claims that do not reproduce at the small tier, and why we think so (the numbers are in the
store and the report):

- ``beats_baselines`` comes out inconclusive, not failed: our mean error at ``eta = 0.1`` is
  close to 0, so the ratio "smallest baseline error / ours" divides by a tiny, seed-dependent
  number (floored at 0.001); with five seeds its bootstrap interval is very wide and
  reaches below 1.5 although every baseline's mean error is far above ours. A paired test on
  error differences, or more seeds, would decide it; we keep the spec's ratio.
- ``outlier_removal_downweights`` (a check) is inconclusive: the flip cluster's scale 4 is
  deliberately close to the detection edge of the analysis' cap (the residual-mass bound
  ``(sigma_bar^2 - 1) / (alpha^2 - 1)`` sits just under ``eta / 2``), so the share of weight
  left on the cluster varies from seed to seed around a value below the bar, and five
  seeds' Student-t interval straddles it.
- The dense reference's ``n_eps(400)`` is censored at ``dense_n_max``, so its growth is a
  lower bound (it can only understate the contrast with ours).

See
``paper.py`` for the claims and tiers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.progress import track
from neurips26.common.stats import bootstrap_ci, seed_ci

from . import (
    InfeasibleWeightsError,
    RobustDenseHalfspace,
    RobustSparseHalfspace,
    clean_error,
    filter_threshold,
    hinge_weight_on,
    l1_logistic,
    linear_svc,
    linf_filter,
    make_margin_halfspace,
    sparse_pca_sdp,
    sparse_variance_power,
)

METHODS = ("ours", "no_reweighting", "dense_l2", "linear_svc", "l1_logistic")
BASELINES = METHODS[1:]
#: Our learner without localisation (reported, not a claim's baseline).
EXTRA_METHODS = ("single_round",)

#: Errors below this floor count as the floor in error ratios (a ratio of two errors that
#: are both essentially 0 says nothing).
ERROR_FLOOR = 1e-3


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    ``dims`` x ``num_seeds`` clean samples feed the sample-need scan (grid ``n_start *
    n_factor^k`` up to ``n_max``; a seed that misses ``eps`` at ``n_max`` is censored);
    ``growth_dims`` names the pair of dimensions whose ``n_eps`` ratio tests attribute
    efficiency, ``sparsities`` the values of ``s`` scanned at ``sparsity_dim``. The
    robustness sweep runs at ``sweep_dim`` with ``sweep_n_mult * n_eps`` samples,
    ``sweep_seeds`` draws per rate in ``sweep_etas``; the learners assume the noise rate
    ``learner_noise_rate``.
    """

    seed: int = 0
    sparsity: int = param(3, help="s: nonzero coordinates of the target halfspace", min=1)
    margin: float = param(0.1, help="gamma: margin of the clean distribution", min=0.0)
    eps: float = param(0.05, help="target error epsilon of the sample-need scan", min=0.0, max=1.0)
    dims: tuple[int, ...] = param(
        (50, 100, 200, 400), help="dimensions d of the sample-need scan", min=1
    )
    growth_dims: tuple[int, ...] = param(
        (50, 400), help="the two dimensions whose n_eps ratio tests attribute efficiency", min=1
    )
    sparsities: tuple[int, ...] = param(
        (2, 4, 8), help="sparsities s of the sample-need scan over s", min=1
    )
    sparsity_dim: int = param(100, help="dimension of the sample-need scan over s", min=1)
    num_seeds: int = param(5, help="clean draws per dimension (and per sparsity)", min=1)
    n_start: int = param(20, help="first sample size of the scan grid", min=1)
    n_factor: float = param(1.4, help="growth factor of the scan grid", min=1.0)
    n_max: int = param(4500, help="largest sample size of the scan (censoring point)", min=1)
    dense_n_max: int = param(4500, help="largest sample size of the dense reference's scan", min=1)
    num_rounds: int = param(3, help="localisation rounds T of our learner", min=0)
    learner_noise_rate: float = param(
        0.15, help="noise rate eta the learners assume", min=0.0, max=1.0
    )
    sweep_dim: int = param(200, help="dimension of the robustness sweep", min=1)
    sweep_etas: tuple[float, ...] = param(
        (0.0, 0.05, 0.1, 0.15),
        help="malicious-noise rates of the robustness sweep",
        min=0.0,
        max=1.0,
    )
    claim_eta: float = param(
        0.1, help="noise rate at which the robustness claim is read", min=0.0, max=1.0
    )
    sweep_seeds: int = param(3, help="draws per noise rate in the sweep", min=1)
    claim_seeds: int = param(5, help="draws at the claim's noise rate", min=1)
    sweep_n_mult: float = param(4.0, help="sweep samples as a multiple of n_eps", min=0.0)
    adversary: str = param(
        "flip_cluster",
        help="malicious-noise adversary",
        choices=("label_flip", "flip_cluster", "large_norm"),
    )
    attack_scale: float = param(4.0, help="scale alpha of the flip cluster", min=0.0)
    attack_spike: float = param(
        1.75, help="large-norm spike height in units of sqrt(2 log(n d))", min=0.0
    )
    sdp_dims: tuple[int, ...] = param(
        (20, 40, 60), help="dimensions of the SDP cost measurement", min=1
    )
    sdp_num_samples: int = param(200, help="samples per SDP cost measurement", min=1)
    sdp_check_seeds: int = param(
        1, help="draws of the certified (SDP) oracle check at the smallest d", min=1
    )
    max_iter: int = param(50, help="cutting planes per round of the iterative learners", min=1)
    num_bootstrap: int = param(1000, help="bootstrap resamples of the intervals", min=1)
    scan_outlier_method: str = param(
        "power",
        help="outlier oracle used in the sample-need scan",
        choices=("auto", "sdp", "power", "eig", "none"),
    )
    sweep_outlier_method: str = param(
        "auto",
        help="outlier oracle of ours in the robustness sweep (auto: SDP for d <= 60)",
        choices=("auto", "sdp", "power"),
    )


TIERS = {
    "smoke": Config(
        dims=(10, 20),
        growth_dims=(10, 20),
        sparsities=(1, 2),
        sparsity_dim=10,
        num_seeds=2,
        n_start=40,
        n_max=300,
        dense_n_max=300,
        num_rounds=1,
        sweep_dim=20,
        sweep_outlier_method="power",
        sweep_etas=(0.1,),
        sweep_seeds=2,
        claim_seeds=2,
        sdp_dims=(20,),
        sdp_num_samples=100,
        max_iter=10,
        num_bootstrap=200,
    ),
    "small": Config(),
    "paper": Config(
        dims=(50, 100, 200, 400, 800, 1600),
        sparsities=(2, 4, 8, 16),
        sparsity_dim=400,
        num_seeds=9,
        eps=0.02,
        n_max=20000,
        dense_n_max=20000,
        sweep_etas=(0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15),
        sweep_seeds=10,
        claim_seeds=10,
        sdp_dims=(20, 40, 60, 80, 100),
        sdp_check_seeds=3,
    ),
}


def _seed(cfg: Config, *keys: int) -> int:
    """An integer seed derived from the run seed and ``keys`` (independent streams)."""
    return int(np.random.SeedSequence([cfg.seed, *keys]).generate_state(1)[0])


def _grid(cfg: Config, n_max: int | None = None) -> list[int]:
    n_max = cfg.n_max if n_max is None else n_max
    out: list[int] = []
    k = 0
    while True:
        n = round(cfg.n_start * cfg.n_factor**k)
        if n > n_max:
            break
        if not out or n > out[-1]:
            out.append(n)
        k += 1
    return out


def _learner(name: str, cfg: Config, s: int, outlier_method: str = "auto"):
    common = {"noise_rate": cfg.learner_noise_rate, "max_iter": cfg.max_iter}
    if name == "ours":
        return RobustSparseHalfspace(
            sparsity=s, outlier_method=outlier_method, num_rounds=cfg.num_rounds, **common
        )
    if name == "single_round":
        return RobustSparseHalfspace(
            sparsity=s, outlier_method=outlier_method, num_rounds=0, **common
        )
    if name == "no_reweighting":
        return RobustSparseHalfspace(
            sparsity=s, outlier_method="none", num_rounds=cfg.num_rounds, **common
        )
    if name == "dense_l2":
        return RobustDenseHalfspace(**common)
    raise ValueError(name)  # pragma: no cover


def _fit_coef(name: str, X, y, cfg: Config, seed: int, s: int, outlier_method: str = "auto"):
    """Return ``(w, fitted_estimator_or_None)``; ``w = 0`` (error 1/2) when infeasible.

    An infeasible soft outlier removal (the clean sample is too small for the variance cap
    to hold) is the algorithm declining to answer, scored as a random guess.
    """
    d = X.shape[1]
    if name == "linear_svc":
        return linear_svc(X, y, seed=seed), None
    if name == "l1_logistic":
        return l1_logistic(X, y, seed=seed), None
    try:
        est = _learner(name, cfg, s, outlier_method).fit(X, y)
    except InfeasibleWeightsError:
        return np.zeros(d), None
    return est.coef_, est


def _seed_need(cfg: Config, method: str, s: int, data, grid: list[int], start: int, rows):
    """First grid index where this seed's nested prefix reaches ``eps`` (len(grid): never).

    Starts at ``start`` and steps down while the smaller prefix also passes, else up.
    """
    cache: dict[int, bool] = {}

    def ok(idx: int) -> bool:
        if idx not in cache:
            n = grid[idx]
            w, est = _fit_coef(method, data.X[:n], data.y[:n], cfg, 0, s, cfg.scan_outlier_method)
            e = clean_error(w, data.w_star, margin=cfg.margin)
            cache[idx] = e <= cfg.eps
            rows.append(
                {
                    "method": method,
                    "dim": data.X.shape[1],
                    "sparsity": s,
                    "n": n,
                    "error": float(e),
                    "infeasible": int(method != "dense_l2" and est is None),
                    "reached_eps": cache[idx],
                }
            )
        return cache[idx]

    idx = min(max(start, 0), len(grid) - 1)
    if ok(idx):
        while idx > 0 and ok(idx - 1):
            idx -= 1
        return idx
    while idx + 1 < len(grid):
        idx += 1
        if ok(idx):
            return idx
    return len(grid)


def _scan(cfg: Config, method: str, d: int, s: int, start: int, key: int, rows):
    """Per-seed ``n_eps`` (censored seeds at ``n_factor * grid[-1]``) and the median index."""
    grid = _grid(cfg, cfg.dense_n_max if method == "dense_l2" else cfg.n_max)
    needs, idxs = [], []
    for i in range(cfg.num_seeds):
        data = make_margin_halfspace(
            grid[-1], d, s, margin=cfg.margin, seed=_seed(cfg, key, d, s, i)
        )
        idx = _seed_need(cfg, method, s, data, grid, start, rows)
        idxs.append(idx)
        needs.append(grid[idx] if idx < len(grid) else grid[-1] * cfg.n_factor)
    censored = [i >= len(grid) for i in idxs]
    return np.array(needs, dtype=float), censored, int(np.median(idxs))


def _ratio_ci(lo: np.ndarray, hi: np.ndarray, cfg: Config, log_base: float | None = None):
    """``median(hi) / median(lo)`` (or its log over ``log(log_base)``) with a bootstrap CI."""

    def stat(a):
        r = np.median(a[:, 1]) / np.median(a[:, 0])
        return math.log(r) / math.log(log_base) if log_base else r

    ci = bootstrap_ci(
        np.column_stack([lo, hi]), stat, num_bootstrap=cfg.num_bootstrap, seed=cfg.seed
    )
    return ci.estimate, ci.half_width


def _proportion(k: int, total: int) -> tuple[float, float]:
    """``k / total`` and the half-width of its 95% Clopper-Pearson interval."""
    if total == 0:
        return math.nan, math.nan
    ci = stats.binomtest(k, total).proportion_ci(confidence_level=0.95, method="exact")
    return k / total, 0.5 * (ci.high - ci.low)


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "baseline_error_ratio_min",
    "baseline_error_ratio_min_ci",
    "certified_frac_sdp_dmin",
    "certified_fraction_claim_eta",
    "corrupt_weight_over_eta",
    "corrupt_weight_over_eta_ci",
    "error_ours_claim_eta",
    "error_ours_claim_eta_ci",
    "error_ours_sdp_dmin",
    "filter_clean_kept_frac",
    "filter_clean_kept_frac_ci",
    "filter_removed_frac",
    "filter_removed_frac_ci",
    "growth_dense",
    "growth_dense_ci",
    "growth_ours",
    "growth_ours_ci",
    "localization_rounds_mean",
    "lower_bound_not_checked",
    "sparsity_slope_ours",
    "sparsity_slope_ours_ci",
    "sweep_infeasible_fits",
    "sweep_num_samples",
    "error_*_claim_eta",
    "n_eps_*",
    "n_eps_censored_*",
    "power_seconds_d*",
    "sdp_seconds_d*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "sample_need": (
        "Samples needed to reach the target clean error (median over seeds) against the "
        "dimension d, for our learner and the L2-ball-only reference ('>' marks a censored "
        "scan), and against the sparsity s for ours (claims attribute_efficiency, "
        "dense_not_attribute_efficient, sample_need_sparsity)."
    ),
    "robustness": (
        "Mean clean error against the malicious noise rate eta, for our learner, the "
        "no-reweighting ablation, the dense reference, LinearSVC and L1-logistic "
        "regression (claims robust_error, beats_baselines)."
    ),
    "sdp_cost": (
        "Seconds per oracle call of the sparse-PCA SDP (SCS) and of the power method "
        "against the dimension d (machine-dependent; context only)."
    ),
}


def run(config: Config) -> RunResult:
    """Run the reproduction at ``config`` and return metrics, tables and figures."""
    return _run(config)


def _run(cfg: Config) -> RunResult:
    s = cfg.sparsity
    metrics: dict[str, float | int | bool] = {}
    notes: list[str] = []
    reasons: dict[str, str] = {}

    # 1. Sample need across d (eta = 0), per seed.
    needs: dict[tuple[str, int, int], np.ndarray] = {}
    need_rows: list[dict] = []
    eval_rows: list[dict] = []

    def scan_row(method, d, s_, arr, cens):
        med = float(np.median(arr))
        need_rows.append(
            {
                "method": method,
                "dim": d,
                "sparsity": s_,
                "n_eps": med,
                "censored_seeds": int(sum(cens)),
                "per_seed": " ".join(str(int(v)) for v in arr),
            }
        )
        return med

    for method in track(("ours", "dense_l2"), "sample-need scan over d"):
        start = 0
        for d in cfg.dims:
            arr, cens, idx = _scan(cfg, method, d, s, start - 1, 1, eval_rows)
            start = idx
            needs[(method, d, s)] = arr
            med = scan_row(method, d, s, arr, cens)
            tag = f"{method}_d{d}"
            metrics[f"n_eps_{tag}"] = med
            metrics[f"n_eps_censored_{tag}"] = bool(sum(cens) * 2 > len(cens))
    d_lo, d_hi = cfg.growth_dims
    for method, key in (("ours", "growth_ours"), ("dense_l2", "growth_dense")):
        lo, hi = needs.get((method, d_lo, s)), needs.get((method, d_hi, s))
        if lo is None or hi is None:
            metrics[key] = metrics[f"{key}_ci"] = math.nan
            reasons[key] = f"growth_dims {cfg.growth_dims} not both in dims {cfg.dims}"
            continue
        metrics[key], metrics[f"{key}_ci"] = _ratio_ci(lo, hi, cfg)
        if metrics[f"n_eps_censored_{method}_d{d_hi}"]:
            notes.append(f"{method}: n_eps at d={d_hi} is censored; {key} is a lower bound")

    # 1b. Sample need across s at one d (ours).
    d_s = cfg.sparsity_dim
    start = 0
    for s_ in track(cfg.sparsities, "sample-need scan over s"):
        arr, cens, idx = _scan(cfg, "ours", d_s, s_, start - 1, 2, eval_rows)
        start = idx
        needs[("ours_s", d_s, s_)] = arr
        metrics[f"n_eps_ours_s{s_}"] = scan_row("ours", d_s, s_, arr, cens)
    s_lo, s_hi = min(cfg.sparsities), max(cfg.sparsities)
    if s_hi > s_lo:
        metrics["sparsity_slope_ours"], metrics["sparsity_slope_ours_ci"] = _ratio_ci(
            needs[("ours_s", d_s, s_lo)], needs[("ours_s", d_s, s_hi)], cfg, log_base=s_hi / s_lo
        )
    else:
        metrics["sparsity_slope_ours"] = metrics["sparsity_slope_ours_ci"] = math.nan
        reasons["sparsity_slope_ours"] = "one sparsity scanned: no slope"

    # 2. Robustness as eta rises (flip cluster), d = sweep_dim, n = sweep_n_mult * n_eps.
    d = cfg.sweep_dim
    base = metrics.get(f"n_eps_ours_d{d}")
    if base is None:
        base = _grid(cfg)[-1]
        notes.append(f"n_eps(ours, d={d}) unavailable; the sweep uses n = mult * {base}")
    n = round(cfg.sweep_n_mult * base)
    metrics["sweep_num_samples"] = n
    errors: dict[tuple[float, str], list[float]] = {}
    mass_ratio: list[float] = []
    certified: list[bool] = []
    rounds_done: list[int] = []
    sweep_infeasible = 0
    for k, eta in enumerate(track(cfg.sweep_etas, "noise-rate sweep")):
        at_claim = math.isclose(eta, cfg.claim_eta)
        methods = METHODS + EXTRA_METHODS if at_claim else METHODS
        for i in range(cfg.claim_seeds if at_claim else cfg.sweep_seeds):
            data = make_margin_halfspace(
                n,
                d,
                s,
                margin=cfg.margin,
                noise_rate=eta,
                adversary=cfg.adversary,
                attack_scale=cfg.attack_scale,
                attack_spike=cfg.attack_spike,
                seed=_seed(cfg, 10_000 + k, i),
            )
            for method in methods:
                w, est = _fit_coef(method, data.X, data.y, cfg, i, s, cfg.sweep_outlier_method)
                errors.setdefault((eta, method), []).append(
                    clean_error(w, data.w_star, margin=cfg.margin)
                )
                if method in ("ours", "no_reweighting", "dense_l2") and est is None:
                    sweep_infeasible += 1
                if method == "ours" and at_claim and est is not None:
                    kept = est.kept_mask_
                    before = data.is_corrupt[kept].mean()  # uniform weight after the filter
                    after = hinge_weight_on(data.is_corrupt, est.sample_weight_)
                    if before > 0:
                        mass_ratio.append(after / before)
                    certified.append(est.certified_)
                    rounds_done.append(est.n_rounds_)
    metrics["sweep_infeasible_fits"] = sweep_infeasible
    robust_rows = []
    for eta in cfg.sweep_etas:
        for method in METHODS + EXTRA_METHODS:
            if (eta, method) not in errors:
                continue
            e = errors[(eta, method)]
            robust_rows.append(
                {
                    "eta": eta,
                    "method": method,
                    "mean_error": float(np.mean(e)),
                    "median_error": float(np.median(e)),
                    "max_error": float(np.max(e)),
                    "seeds": len(e),
                }
            )
    if any(math.isclose(eta, cfg.claim_eta) for eta in cfg.sweep_etas):
        eta_c = next(e for e in cfg.sweep_etas if math.isclose(e, cfg.claim_eta))
        ci = seed_ci(errors[(eta_c, "ours")])
        metrics["error_ours_claim_eta"] = ci.estimate
        metrics["error_ours_claim_eta_ci"] = ci.half_width
        for m in BASELINES + EXTRA_METHODS:
            metrics[f"error_{m}_claim_eta"] = float(np.mean(errors[(eta_c, m)]))
        paired = np.column_stack([errors[(eta_c, m)] for m in METHODS])  # (seeds, methods)

        def min_ratio(a):
            ours = max(float(np.mean(a[:, 0])), ERROR_FLOOR)
            return float(min(np.mean(a[:, j]) for j in range(1, a.shape[1])) / ours)

        ci = bootstrap_ci(paired, min_ratio, num_bootstrap=cfg.num_bootstrap, seed=cfg.seed)
        metrics["baseline_error_ratio_min"] = ci.estimate
        metrics["baseline_error_ratio_min_ci"] = ci.half_width
        if mass_ratio:
            ci = seed_ci(mass_ratio)
            metrics["corrupt_weight_over_eta"] = ci.estimate
            metrics["corrupt_weight_over_eta_ci"] = ci.half_width
        else:
            metrics["corrupt_weight_over_eta"] = metrics["corrupt_weight_over_eta_ci"] = math.nan
            reasons["corrupt_weight_over_eta"] = "no feasible fit with corrupted rows"
        metrics["certified_fraction_claim_eta"] = (
            float(np.mean(certified)) if certified else math.nan
        )
        metrics["localization_rounds_mean"] = (
            float(np.mean(rounds_done)) if rounds_done else math.nan
        )
    else:
        for key in (
            "error_ours_claim_eta",
            "baseline_error_ratio_min",
            "corrupt_weight_over_eta",
        ):
            metrics[key] = metrics[f"{key}_ci"] = math.nan
            reasons[key] = f"claim_eta {cfg.claim_eta} is not in sweep_etas"
        metrics["certified_fraction_claim_eta"] = math.nan
        metrics["localization_rounds_mean"] = math.nan

    # 2b. The certified (SDP) oracle at the smallest d, at ours' n_eps there.
    d0 = cfg.dims[0]
    n0 = int(metrics[f"n_eps_ours_d{d0}"])
    sdp_err, sdp_cert = [], []
    for i in range(cfg.sdp_check_seeds):
        data = make_margin_halfspace(n0, d0, s, margin=cfg.margin, seed=_seed(cfg, 1, d0, s, i))
        w, est = _fit_coef("ours", data.X, data.y, cfg, i, s, "sdp")
        sdp_err.append(clean_error(w, data.w_star, margin=cfg.margin))
        sdp_cert.append(est is not None and est.certified_)
    metrics["error_ours_sdp_dmin"] = float(np.median(sdp_err))
    metrics["certified_frac_sdp_dmin"] = float(np.mean(sdp_cert))

    # 3. Large-norm attack and the L-infinity filter (the learner's own filter level).
    removed, total, clean_kept, clean_total = 0, 0, 0, 0
    for i in range(cfg.claim_seeds):
        data = make_margin_halfspace(
            n,
            d,
            s,
            margin=cfg.margin,
            noise_rate=cfg.claim_eta,
            adversary="large_norm",
            attack_spike=cfg.attack_spike,
            seed=_seed(cfg, 20_000, i),
        )
        kept = linf_filter(data.X, threshold=filter_threshold(n, d))
        removed += int((~kept & data.is_corrupt).sum())
        total += int(data.is_corrupt.sum())
        clean_kept += int((kept & ~data.is_corrupt).sum())
        clean_total += int((~data.is_corrupt).sum())
    metrics["filter_removed_frac"], metrics["filter_removed_frac_ci"] = _proportion(removed, total)
    metrics["filter_clean_kept_frac"], metrics["filter_clean_kept_frac_ci"] = _proportion(
        clean_kept, clean_total
    )
    if total == 0:
        reasons["filter_removed_frac"] = "no attack points were drawn"

    # 4. SDP versus power-method cost.
    sdp_rows = []
    volatile = []
    for dd in cfg.sdp_dims:
        data = make_margin_halfspace(
            cfg.sdp_num_samples, dd, s, margin=cfg.margin, seed=_seed(cfg, 30_000, dd)
        )
        Sigma = data.X.T @ data.X / cfg.sdp_num_samples  # (d, d)
        t0 = time.perf_counter()
        sdp = sparse_pca_sdp(Sigma, sparsity=s, solver="SCS")
        t_sdp = time.perf_counter() - t0
        t0 = time.perf_counter()
        pw = sparse_variance_power(Sigma, sparsity=s)
        t_pw = time.perf_counter() - t0
        metrics[f"sdp_seconds_d{dd}"] = t_sdp
        metrics[f"power_seconds_d{dd}"] = t_pw
        volatile += [f"sdp_seconds_d{dd}", f"power_seconds_d{dd}"]
        sdp_rows.append(
            {
                "dim": dd,
                "sdp_value": round(sdp.value, 4),
                "power_value": round(pw.value, 4),
                "sdp_seconds": round(t_sdp, 3),
                "power_seconds": round(t_pw, 4),
            }
        )

    notes.append(
        f"Learners assume noise_rate {cfg.learner_noise_rate}; ours runs {cfg.num_rounds} "
        "localisation rounds (bands halving from 1, hinge scale = band width); soft outlier "
        "removal uses the SDP (SCS) for d <= 60 and the power method above."
    )
    figures = {
        "sample_need": _plot_need(cfg, need_rows),
        "robustness": _plot_robust(cfg, errors),
        "sdp_cost": _plot_sdp(sdp_rows),
    }
    # The lower bound is a theorem; no experiment of ours tests it.
    metrics["lower_bound_not_checked"] = math.nan
    reasons["lower_bound_not_checked"] = "a theorem; not checked by experiment"
    return RunResult(
        metrics=metrics,
        volatile=tuple(volatile),
        reasons=reasons,
        tables={
            "sample_need": need_rows,
            "scan_evaluations": eval_rows,
            "robustness": robust_rows,
            "sdp_cost": sdp_rows,
        },
        figures=figures,
        captions=CAPTIONS,
        notes=tuple(notes),
    )


def _plot_need(cfg, rows) -> bytes:
    fig, (ax, ax2) = new_figure(2)
    for method, label, mk in (("ours", "ours (set W)", "o"), ("dense_l2", "L2 ball (Shen)", "s")):
        sel = [
            r
            for r in rows
            if r["method"] == method and r["sparsity"] == cfg.sparsity and r["dim"] in cfg.dims
        ]
        sel = sel[: len(cfg.dims)]
        ds = [r["dim"] for r in sel]
        ax.plot(ds, [r["n_eps"] for r in sel], marker=mk, label=label)
        for r in sel:
            if 2 * r["censored_seeds"] > cfg.num_seeds:
                ax.annotate(
                    ">",
                    (r["dim"], r["n_eps"]),
                    textcoords="offset points",
                    xytext=(0, 6),
                    ha="center",
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel(f"n to reach clean error {cfg.eps:g} (median)")
    ax.set_title(f"sample need vs d, s = {cfg.sparsity}, eta = 0")
    ax.legend()
    sel = rows[-len(cfg.sparsities) :]
    ax2.plot([r["sparsity"] for r in sel], [r["n_eps"] for r in sel], marker="o", label="ours")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("sparsity s")
    ax2.set_ylabel("n to reach the target error (median)")
    ax2.set_title(f"sample need vs s, d = {cfg.sparsity_dim}")
    ax2.legend()
    return figure_png(fig)


def _plot_robust(cfg, errors) -> bytes:
    fig, (ax,) = new_figure(1)
    for method in METHODS:
        ax.plot(
            cfg.sweep_etas,
            [np.mean(errors[(e, method)]) for e in cfg.sweep_etas],
            marker="o",
            label=method,
        )
    ax.set_xlabel("malicious noise rate eta (flip cluster)")
    ax.set_ylabel("mean clean error")
    ax.set_title(f"d = {cfg.sweep_dim}, s = {cfg.sparsity}")
    ax.legend(fontsize=8)
    return figure_png(fig)


def _plot_sdp(rows) -> bytes:
    fig, (ax,) = new_figure(1)
    ds = [r["dim"] for r in rows]
    ax.plot(ds, [r["sdp_seconds"] for r in rows], marker="o", label="sparse-PCA SDP (SCS)")
    ax.plot(ds, [r["power_seconds"] for r in rows], marker="s", label="power method over W")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("seconds per oracle call")
    ax.legend()
    return figure_png(fig)
