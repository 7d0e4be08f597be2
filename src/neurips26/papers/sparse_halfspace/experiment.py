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
   seeds with Student-t intervals, and each baseline's paired difference from 1.5 times
   our error (Student-t over draws). The single-round variant (no localisation) is reported
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

Controls: each sample-need growth claim is measured on the other learner (the dense
reference for attribute efficiency, ours for its absence), and the robust error on the
no-reweighting ablation at the same draws (outlier removal switched off).

Claims that do not reproduce at the small tier, and why we think so (the numbers are in the
store and the report):

- ``beats_baselines`` was read as the ratio "smallest baseline error / ours", which divides
  by our near-zero, seed-dependent error (floored at 0.001) and gave intervals too wide to
  decide. It is now tested as a paired difference on the same draws: for each baseline the
  mean over draws of its error minus 1.5 times ours (ours floored per draw), with a
  Student-t interval; the claim reads the smallest over the baselines. The ratio is still
  reported (``baseline_error_ratio_min``, without an interval).
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

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import (
    Estimate,
    Experiment,
    binomial_interval,
    bootstrap_interval,
    t_interval,
)

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
    # the analysis's setting: unit clean scale and its variance cap (not the estimators'
    # "auto" defaults, which are for real features)
    common = {"noise_rate": cfg.learner_noise_rate, "max_iter": cfg.max_iter,
              "clean_variance": 1.0, "variance_slack": 1.0}
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


def _ratio_interval(lo: np.ndarray, hi: np.ndarray, cfg: Config,
                    log_base: float | None = None):
    """``median(hi) / median(lo)`` (or its log over ``log(log_base)``) with a percentile
    bootstrap over seeds (a seed's two scans drawn together)."""

    def stat(a):
        r = np.median(a[:, 1]) / np.median(a[:, 0])
        return math.log(r) / math.log(log_base) if log_base else r

    return bootstrap_interval(np.column_stack([lo, hi]), stat,
                              num_resamples=cfg.num_bootstrap, seed=cfg.seed, unit="seeds")


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "baseline_error_excess_min",
    "baseline_error_ratio_min",
    "certified_frac_sdp_dmin",
    "certified_fraction_claim_eta",
    "corrupt_weight_over_eta",
    "error_no_reweighting_claim_eta",
    "error_ours_claim_eta",
    "error_ours_sdp_dmin",
    "filter_clean_kept_frac",
    "filter_removed_frac",
    "growth_dense",
    "growth_ours",
    "localization_rounds_mean",
    "lower_bound_not_checked",
    "sparsity_slope_ours",
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


class SparseHalfspaceExperiment(Experiment):
    """Units in the order of the original run: the sample-need scans (one unit per method
    and d, then per s), the noise-rate sweep (one unit per rate and draw), the certified
    SDP check, the large-norm filter draws and the SDP cost. Each scan starts its search
    at the previous d's (or s's) median index and the sweep's n comes from the scan, so the
    setup state carries both (units run in grid order). Every draw has its own seed
    (``_seed``), as before the port."""

    Config, TIERS, METRICS, CAPTIONS = Config, TIERS, METRICS, CAPTIONS
    VOLATILE = ("sdp_seconds_d*", "power_seconds_d*")
    UNIT_TABLE = None

    def setup(self, config, ctx):
        return {"config": config, "start": {}, "needs": {}}

    def grid(self, config):
        cfg = config
        units = [{"part": "scan", "method": m, "dim": d} for m in ("ours", "dense_l2")
                 for d in cfg.dims]
        units += [{"part": "scan_s", "method": "ours", "sparsity": s_}
                  for s_ in cfg.sparsities]
        for k, eta in enumerate(cfg.sweep_etas):
            at_claim = math.isclose(eta, cfg.claim_eta)
            units += [{"part": "sweep", "eta": eta, "eta_index": k, "seed": i}
                      for i in range(cfg.claim_seeds if at_claim else cfg.sweep_seeds)]
        units += [{"part": "sdp_check", "seed": i} for i in range(cfg.sdp_check_seeds)]
        units += [{"part": "filter", "seed": i} for i in range(cfg.claim_seeds)]
        units += [{"part": "sdp_cost", "dim": dd} for dd in cfg.sdp_dims]
        return units

    def measure(self, unit, state, ctx):
        return getattr(self, f"_{unit['part']}")(unit, state["config"], state)

    # ------------------------------------------------------------------ units
    @staticmethod
    def _scan_rows(cfg, method, d, s_, key, chain, state):
        evals: list[dict] = []
        start = state["start"].get(chain, 0)
        arr, cens, idx = _scan(cfg, method, d, s_, start - 1, key, evals)
        state["start"][chain] = idx
        state["needs"][(chain, d, s_)] = arr
        rows = [{"row": "eval", **{k: v for k, v in e.items() if k != "method"}}
                for e in evals]
        rows += [{"row": "need", "sparsity": s_, "seed_index": i, "need": float(v),
                  "censored": bool(c)} for i, (v, c) in enumerate(zip(arr, cens, strict=True))]
        return rows

    def _scan(self, unit, cfg, state):
        """Sample need across d (eta = 0), per seed."""
        return self._scan_rows(cfg, unit["method"], unit["dim"], cfg.sparsity, 1,
                               unit["method"], state)

    def _scan_s(self, unit, cfg, state):
        """Sample need across s at one d (ours)."""
        rows = self._scan_rows(cfg, "ours", cfg.sparsity_dim, unit["sparsity"], 2, "ours_s",
                               state)
        return [{**r, "dim": cfg.sparsity_dim} for r in rows]

    @staticmethod
    def _sweep_n(cfg, state):
        need = state["needs"].get(("ours", cfg.sweep_dim, cfg.sparsity))
        base = float(np.median(need)) if need is not None else _grid(cfg)[-1]
        return round(cfg.sweep_n_mult * base)

    def _sweep(self, unit, cfg, state):
        """Robustness at one flip-cluster rate: every method on one draw."""
        s, d = cfg.sparsity, cfg.sweep_dim
        eta, i = unit["eta"], unit["seed"]
        n = self._sweep_n(cfg, state)
        at_claim = math.isclose(eta, cfg.claim_eta)
        methods = METHODS + EXTRA_METHODS if at_claim else METHODS
        data = make_margin_halfspace(
            n, d, s, margin=cfg.margin, noise_rate=eta, adversary=cfg.adversary,
            attack_scale=cfg.attack_scale, attack_spike=cfg.attack_spike,
            seed=_seed(cfg, 10_000 + unit["eta_index"], i),
        )
        rows = []
        for method in methods:
            w, est = _fit_coef(method, data.X, data.y, cfg, i, s, cfg.sweep_outlier_method)
            err = clean_error(w, data.w_star, margin=cfg.margin)
            row = {
                "row": "sweep",
                "method": method,
                "error": float(err),
                # ours' error times the spec's 1.5 (floored at ERROR_FLOOR, as in the
                # ratio): the paired comparison with the baselines
                "bar_error": float(1.5 * max(err, ERROR_FLOOR)) if method == "ours"
                else float(err),
                "infeasible": int(method in ("ours", "no_reweighting", "dense_l2")
                                  and est is None),
            }
            if method == "ours" and at_claim and est is not None:
                kept = est.kept_mask_
                before = data.is_corrupt[kept].mean()  # uniform weight after the filter
                after = hinge_weight_on(data.is_corrupt, est.sample_weight_)
                if before > 0:
                    row["mass_ratio"] = float(after / before)
                row["certified"] = bool(est.certified_)
                row["rounds"] = int(est.n_rounds_)
            rows.append(row)
        return rows

    def _sdp_check(self, unit, cfg, state):
        """The certified (SDP) oracle at the smallest d, at ours' n_eps there."""
        s, d0, i = cfg.sparsity, cfg.dims[0], unit["seed"]
        n0 = int(np.median(state["needs"][("ours", d0, s)]))
        data = make_margin_halfspace(n0, d0, s, margin=cfg.margin, seed=_seed(cfg, 1, d0, s, i))
        w, est = _fit_coef("ours", data.X, data.y, cfg, i, s, "sdp")
        return {"row": "sdp_check",
                "error": float(clean_error(w, data.w_star, margin=cfg.margin)),
                "certified": bool(est is not None and est.certified_)}

    def _filter(self, unit, cfg, state):
        """Large-norm attack and the L-infinity filter (the learner's own filter level)."""
        n = self._sweep_n(cfg, state)
        d, i = cfg.sweep_dim, unit["seed"]
        data = make_margin_halfspace(
            n, d, cfg.sparsity, margin=cfg.margin, noise_rate=cfg.claim_eta,
            adversary="large_norm", attack_spike=cfg.attack_spike,
            seed=_seed(cfg, 20_000, i),
        )
        kept = linf_filter(data.X, threshold=filter_threshold(n, d))
        return {"row": "filter",
                "removed": int((~kept & data.is_corrupt).sum()),
                "attacks": int(data.is_corrupt.sum()),
                "clean_kept": int((kept & ~data.is_corrupt).sum()),
                "clean": int((~data.is_corrupt).sum())}

    def _sdp_cost(self, unit, cfg, state):
        """One SDP solve against the power method (seconds: volatile, context only)."""
        dd = unit["dim"]
        data = make_margin_halfspace(
            cfg.sdp_num_samples, dd, cfg.sparsity, margin=cfg.margin,
            seed=_seed(cfg, 30_000, dd)
        )
        Sigma = data.X.T @ data.X / cfg.sdp_num_samples  # (d, d)
        t0 = time.perf_counter()
        sdp = sparse_pca_sdp(Sigma, sparsity=cfg.sparsity, solver="SCS")
        t_sdp = time.perf_counter() - t0
        t0 = time.perf_counter()
        pw = sparse_variance_power(Sigma, sparsity=cfg.sparsity)
        t_pw = time.perf_counter() - t0
        return {"row": "sdp_cost", "sdp_value": round(sdp.value, 4),
                "power_value": round(pw.value, 4), "sdp_seconds": t_sdp,
                "power_seconds": t_pw}

    # ------------------------------------------------------------------ summary
    @staticmethod
    def _needs(table, part, method, dim, sparsity):
        sel = table.where(row="need", part=part, method=method, dim=dim, sparsity=sparsity)
        return sel.column("need"), [bool(r["censored"]) for r in sel]

    def _need_rows(self, table, cfg):
        out = []
        keys = [("scan", m, d, cfg.sparsity) for m in ("ours", "dense_l2") for d in cfg.dims]
        keys += [("scan_s", "ours", cfg.sparsity_dim, s_) for s_ in cfg.sparsities]
        for part, method, d, s_ in keys:
            arr, cens = self._needs(table, part, method, d, s_)
            out.append({"method": method, "dim": d, "sparsity": s_,
                        "n_eps": float(np.median(arr)), "censored_seeds": int(sum(cens)),
                        "per_seed": " ".join(str(int(v)) for v in arr)})
        return out

    def summarize(self, table, config, ctx):
        cfg = config
        s = cfg.sparsity
        metrics: dict = {}
        for method in ("ours", "dense_l2"):
            for d in cfg.dims:
                arr, cens = self._needs(table, "scan", method, d, s)
                metrics[f"n_eps_{method}_d{d}"] = float(np.median(arr))
                metrics[f"n_eps_censored_{method}_d{d}"] = bool(sum(cens) * 2 > len(cens))
        d_lo, d_hi = cfg.growth_dims
        for method, key in (("ours", "growth_ours"), ("dense_l2", "growth_dense")):
            if d_lo not in cfg.dims or d_hi not in cfg.dims:
                metrics[key] = Estimate.missing(
                    f"growth_dims {cfg.growth_dims} not both in dims {cfg.dims}")
                continue
            lo = self._needs(table, "scan", method, d_lo, s)[0]
            hi = self._needs(table, "scan", method, d_hi, s)[0]
            metrics[key] = _ratio_interval(lo, hi, cfg)
        for s_ in cfg.sparsities:
            arr, _ = self._needs(table, "scan_s", "ours", cfg.sparsity_dim, s_)
            metrics[f"n_eps_ours_s{s_}"] = float(np.median(arr))
        s_lo, s_hi = min(cfg.sparsities), max(cfg.sparsities)
        if s_hi > s_lo:
            metrics["sparsity_slope_ours"] = _ratio_interval(
                self._needs(table, "scan_s", "ours", cfg.sparsity_dim, s_lo)[0],
                self._needs(table, "scan_s", "ours", cfg.sparsity_dim, s_hi)[0],
                cfg, log_base=s_hi / s_lo)
        else:
            metrics["sparsity_slope_ours"] = Estimate.missing("one sparsity scanned: no slope")

        if cfg.sweep_dim in cfg.dims:
            base = float(np.median(self._needs(table, "scan", "ours", cfg.sweep_dim, s)[0]))
        else:
            base = _grid(cfg)[-1]
        metrics["sweep_num_samples"] = round(cfg.sweep_n_mult * base)
        sweep = table.where(row="sweep")
        metrics["sweep_infeasible_fits"] = int(sweep.column("infeasible").sum())
        claim_etas = [e for e in cfg.sweep_etas if math.isclose(e, cfg.claim_eta)]
        if claim_etas:
            at = sweep.where(eta=claim_etas[0])
            metrics["error_ours_claim_eta"] = at.where(method="ours").mean_over("error")
            for m in BASELINES + EXTRA_METHODS:
                metrics[f"error_{m}_claim_eta"] = at.where(method=m).mean_over("error")
            # the spec's ratio, reported only: it divides by a near-zero error
            ours = max(float(np.mean(at.where(method="ours").column("error"))), ERROR_FLOOR)
            metrics["baseline_error_ratio_min"] = float(
                min(np.mean(at.where(method=m).column("error")) for m in BASELINES) / ours)
            # the claim: each baseline's error minus 1.5 x ours, paired on the draw; the
            # smallest over the baselines, with that baseline's paired t interval
            diffs = [at.paired_diff("bar_error", {"method": m}, {"method": "ours"})
                     for m in BASELINES]
            metrics["baseline_error_excess_min"] = min(diffs, key=lambda e: e.value)
            ratios = [r["mass_ratio"] for r in at.where(method="ours") if "mass_ratio" in r]
            metrics["corrupt_weight_over_eta"] = (
                t_interval(ratios) if ratios
                else Estimate.missing("no feasible fit with corrupted rows"))
            cert = [r["certified"] for r in at.where(method="ours") if "certified" in r]
            rounds = [r["rounds"] for r in at.where(method="ours") if "rounds" in r]
            metrics["certified_fraction_claim_eta"] = (
                float(np.mean(cert)) if cert else math.nan)
            metrics["localization_rounds_mean"] = (
                float(np.mean(rounds)) if rounds else math.nan)
        else:
            why = f"claim_eta {cfg.claim_eta} is not in sweep_etas"
            for key in ("error_ours_claim_eta", "baseline_error_excess_min",
                        "corrupt_weight_over_eta", "error_no_reweighting_claim_eta"):
                metrics[key] = Estimate.missing(why)
            metrics["baseline_error_ratio_min"] = math.nan
            metrics["certified_fraction_claim_eta"] = math.nan
            metrics["localization_rounds_mean"] = math.nan

        chk = table.where(row="sdp_check")
        metrics["error_ours_sdp_dmin"] = float(np.median(chk.column("error")))
        metrics["certified_frac_sdp_dmin"] = float(np.mean(chk.column("certified")))

        filt = table.where(row="filter")
        removed, total = int(filt.column("removed").sum()), int(filt.column("attacks").sum())
        kept, clean = int(filt.column("clean_kept").sum()), int(filt.column("clean").sum())
        metrics["filter_removed_frac"] = (
            binomial_interval(removed, total, method="exact", unit="attack points")
            if total else Estimate.missing("no attack points were drawn"))
        metrics["filter_clean_kept_frac"] = binomial_interval(
            kept, clean, method="exact", unit="clean points")

        for r in table.where(row="sdp_cost"):
            metrics[f"sdp_seconds_d{r['dim']}"] = r["sdp_seconds"]
            metrics[f"power_seconds_d{r['dim']}"] = r["power_seconds"]
        # The lower bound is a theorem; no experiment of ours tests it.
        metrics["lower_bound_not_checked"] = Estimate.missing(
            "a theorem; not checked by experiment")
        return metrics

    # ------------------------------------------------------------------ report
    def tables(self, table, summary, config):
        robust_rows = []
        sweep = table.where(row="sweep")
        for eta in config.sweep_etas:
            for method in METHODS + EXTRA_METHODS:
                sel = sweep.where(eta=eta, method=method)
                if not len(sel):
                    continue
                e = sel.column("error")
                robust_rows.append({"eta": eta, "method": method,
                                    "mean_error": float(np.mean(e)),
                                    "median_error": float(np.median(e)),
                                    "max_error": float(np.max(e)), "seeds": len(e)})
        evals = [{"method": r["method"], "dim": r["dim"], "sparsity": r["sparsity"],
                  "n": r["n"], "error": r["error"], "infeasible": r["infeasible"],
                  "reached_eps": r["reached_eps"]} for r in table.where(row="eval")]
        sdp_rows = [{"dim": r["dim"], "sdp_value": r["sdp_value"],
                     "power_value": r["power_value"], "sdp_seconds": round(r["sdp_seconds"], 3),
                     "power_seconds": round(r["power_seconds"], 4)}
                    for r in table.where(row="sdp_cost")]
        return {"sample_need": self._need_rows(table, config), "scan_evaluations": evals,
                "robustness": robust_rows, "sdp_cost": sdp_rows}

    def figures(self, table, summary, config):
        errors: dict = {}
        for r in table.where(row="sweep"):
            errors.setdefault((r["eta"], r["method"]), []).append(r["error"])
        tabs = self.tables(table, summary, config)
        return {"sample_need": _plot_need(config, tabs["sample_need"]),
                "robustness": _plot_robust(config, errors),
                "sdp_cost": _plot_sdp(tabs["sdp_cost"])}

    def notes(self, table, summary, config):
        cfg = config
        notes = []
        if cfg.sweep_dim not in cfg.dims:
            notes.append(f"n_eps(ours, d={cfg.sweep_dim}) unavailable; the sweep uses "
                         f"n = mult * {_grid(cfg)[-1]}")
        d_hi = cfg.growth_dims[1]
        if d_hi in cfg.dims:
            for method, key in (("ours", "growth_ours"), ("dense_l2", "growth_dense")):
                if summary.get(f"n_eps_censored_{method}_d{d_hi}"):
                    notes.append(
                        f"{method}: n_eps at d={d_hi} is censored; {key} is a lower bound")
        notes.append(
            f"Learners assume noise_rate {cfg.learner_noise_rate}; ours runs {cfg.num_rounds} "
            "localisation rounds (bands halving from 1, hinge scale = band width); soft "
            "outlier removal uses the SDP (SCS) for d <= 60 and the power method above."
        )
        return tuple(notes)


EXPERIMENT = SparseHalfspaceExperiment()
run = EXPERIMENT.run


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
