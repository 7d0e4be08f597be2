"""Reproduction: the steering Hessian of CAA vectors on SmolLM2-135M-Instruct.

For each condition (behaviour x layer x position mode) we build the CAA vector from
contrastive multiple-choice prompts, scale it by ``alpha``, and compute the steering
Hessian of the behavioural loss (Eq. 1) at that point on a separate prompt set: densely on
the tiny model of the smoke tier, by Lanczos (``num_steps`` Hessian-vector products) on
SmolLM2. We then remove the top-``k`` (sharp) eigen-directions and measure what the
paper reports: cosine and norm change of the vector, its sharp share, the drop of its
directional curvature (against removing random subspaces of the same size), the
anti-steer rate of the sharp part alone on held-out prompts, the polarity test, and in
open-ended generation the per-step KL attribution and the behaviour score of ``v'``
against ``v`` at equal coherence (a bag-of-words logistic-regression scorer trained on the
answer texts). Oracle checks on a tiny float64 model run in every tier.

Uncertainties: conditions and held-out prompts are the units. Medians over conditions get
a percentile-bootstrap half-width over conditions (``common.stats.bootstrap_ci``); the
worst anti-steer rate gets the normal-approximation half-width over its held-out prompts.

Deviations from the paper
-------------------------
- Models: SmolLM2-135M-Instruct (LLaMA layout, 30 layers, d = 576) instead of
  Qwen2.5-7B, Llama-3.1-8B and Mistral-7B (not available offline); the paper tier runs any
  local checkpoint given by ``--set model_path=...``. The smoke tier uses a random tiny
  LLaMA with byte tokens, whose "behaviours" are meaningless: it exercises the pipeline.
- Behaviours: two of our own multiple-choice tasks (sentiment of a reply; refusal-style
  phrasing of a reply to an improper request), generated from our word lists; the paper
  has four tasks. The behavioural loss is our reading: the mean NLL of the
  behaviour-matching answer letter, with the Hessian evaluated at ``alpha v_CAA``.
- The small tier uses the "last" position mode only (the answer position; for generation,
  the last prompt position and every new token), where a key/value cache of the prompts
  makes each Hessian-vector product cost one token per prompt; "all" positions run at the
  paper tier. Fixed ``k`` (Lanczos gives no full spectrum for the adaptive rule); the
  paper's adaptive setting is the dense smoke tier's.
- Curvature reduction is ``|kappa(v)| / |kappa(v')|`` (the Hessian of a NLL at a steered
  point need not be positive definite; the paper does not say how it treats signs).
- Generation: short sampled continuations of a few open prompts, scored by a
  bag-of-words classifier trained on the answer texts, so behaviour scores are coarse.
- Polarity test (the jailbreak analogue) is our construction on the multiple-choice
  prompts: ``sign * (v' + s * sharp part)`` for ``s`` in ``{-1, 0, +1}``.
- Uncertainties are bootstraps over conditions and prompts within one run, not over seeds
  (each seed would repeat every Hessian).

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
- Direction and norm are kept and the sharp share is small, as the paper says; but on
  SmolLM2 this follows from the sharp subspace holding little of the CAA vector, which the
  paper also reports, so these claims are weak evidence on their own.
- The curvature does not fall, and sharp removal does not beat a random subspace. The CAA
  vector's own directional curvature is tiny against the top eigenvalues (it lies almost
  entirely in flat directions of this model's steering Hessian), and at a steered point the
  Hessian is indefinite, so ``kappa(v')`` can be as large as ``kappa(v)`` or change sign;
  the ratio then measures noise. The paper's 7B models may have CAA vectors with a larger
  component along sharp directions; we cannot test that offline.
- The sharp part's KL share is above its squared-norm share (disproportionate) but below
  the spec's 3x; the polarity test finds the sharp part does not act as noise here (adding
  it with either sign barely changes behaviour, because it is so small).
- CAA itself moves the answer-letter probabilities of a 135M model only a little (and the
  wrong way at the later layer), so generation wins of ``v'`` over ``v`` are coin flips
  on short, noisy continuations; with four conditions the bootstrap interval is wide.
- The anti-steer rate is high in most conditions; its worst condition sits near one half,
  so the verdict depends on held-out prompt noise.
The verdicts of a real run are in the store; this docstring does not quote numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.data.text import ByteTokenizer
from neurips26.common.experiment import RunResult, param
from neurips26.common.models.llm import load_causal_lm, load_smollm2, tiny_causal_lm
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.progress import track
from neurips26.common.stats import bootstrap_ci

from . import (
    BEHAVIOURS,
    BowScorer,
    SteeringObjective,
    anti_steer_rate,
    caa_vector,
    finite_difference_hessian,
    generation_eval,
    linear_softmax_hessian,
    linear_softmax_loss,
    make_contrastive_set,
    open_prompts,
    polarity_test,
    random_subspace_removal,
    sharp_removal,
    steer,
    steering_hessian,
)
from .behaviours import _left_pad


@dataclass(frozen=True)
class Config:
    seed: int = 0
    model: str = param("smollm2", help="tiny (random, byte tokens), smollm2, or path",
                       choices=("tiny", "smollm2", "path"))
    model_path: str = param("", help="local Hugging Face checkpoint (model=path)")
    behaviours: tuple[str, ...] = param(BEHAVIOURS, help="behaviours", choices=BEHAVIOURS)
    layers: tuple[int, ...] = param((10, 20), help="steered blocks", min=0, max=1000)
    positions: tuple[str, ...] = param(("last",), help="position modes",
                                       choices=("last", "all"))
    alpha: float = param(4.0, help="steering scale (H at alpha v_CAA)", min=0.0,
                         max=100.0)
    num_caa: int = param(16, help="contrastive pairs for CAA", min=1, max=10_000)
    num_hessian: int = param(8, help="prompts in the Hessian's loss", min=1, max=10_000)
    num_eval: int = param(32, help="held-out prompts (anti-steer, polarity)", min=1,
                          max=10_000)
    method: str = param("lanczos", help="Hessian method", choices=("dense", "lanczos"))
    num_steps: int = param(20, help="Lanczos steps (HVPs)", min=1, max=100_000)
    k: int = param(4, help="sharp subspace size (0 = adaptive, dense only)", min=0,
                   max=100_000)
    ratio: float = param(10.0, help="adaptive-k threshold on lambda/median|lambda|",
                         min=1e-6, max=1e6)
    num_random: int = param(3, help="random-subspace controls per condition", min=1,
                            max=1000)
    gen_prompts: int = param(3, help="open prompts for generation", min=1, max=10_000)
    gen_samples: int = param(2, help="continuations per prompt", min=1, max=1000)
    max_new_tokens: int = param(16, help="tokens per continuation", min=1, max=4096)
    temperature: float = param(1.0, help="sampling temperature", min=0.0, max=10.0)
    device: str = param("cpu", help="torch device", choices=("cpu", "cuda"))


TIERS = {
    "smoke": Config(model="tiny", behaviours=("sentiment",), layers=(0, 1), num_caa=8,
                    num_hessian=4, num_eval=8, method="dense", k=0, num_random=2,
                    gen_prompts=2, gen_samples=1, max_new_tokens=6),
    "small": Config(),
    "paper": Config(model="path", layers=(8, 14, 20), positions=("last", "all"), num_caa=256,
                    num_hessian=64, num_eval=256, num_steps=80, k=8, num_random=10,
                    gen_prompts=32, gen_samples=4, max_new_tokens=32, device="cuda"),
}

METRICS = (
    "num_conditions", "k_mean", "caa_effect_median",
    "removal_cosine_median", "removal_cosine_median_ci",
    "removal_norm_reduction_median", "removal_norm_reduction_median_ci",
    "curvature_reduction_median", "curvature_reduction_median_ci", "curvature_reduction_max",
    "random_curvature_reduction_median", "sharp_beats_random_frac",
    "sharp_share_median", "sharp_share_median_ci",
    "anti_steer_rate_min", "anti_steer_rate_min_ci", "anti_steer_rate_median",
    "kl_attribution_median", "kl_attribution_median_ci",
    "generation_win_frac", "generation_win_frac_ci", "behaviour_gain_median",
    "polarity_noise_frac", "num_hvp_per_condition",
    "hessian_seconds", "caa_seconds", "hessian_cost_ratio",
    "check_hessian_fd_error", "check_lanczos_error", "check_closed_form_error",
    "check_projection_error", "check_zero_steer_error", "check_prefix_cache_error",
)  # fmt: skip

VOLATILE = ("hessian_seconds", "caa_seconds", "hessian_cost_ratio")


@dataclass(frozen=True)
class Row:
    behaviour: str
    layer: int
    positions: str
    k: int
    caa_norm: float
    caa_effect: float  # mean p_match(v) - p_match(0) on held-out prompts
    cosine: float
    norm_reduction: float
    sharp_share: float
    curvature_before: float
    curvature_after: float
    curvature_reduction: float
    random_reduction: float
    top_eigval: float
    anti_steer: float
    anti_steer_hw: float
    polarity_noise: float  # share of the two polarities where the sharp part is noise-like
    kl_full: float
    kl_sharp: float
    kl_clean: float
    behaviour_v: float
    behaviour_clean: float
    nll_v: float
    nll_clean: float
    projection_error: float
    num_hvp: int
    hessian_s: float
    caa_s: float
    eigvals: tuple[float, ...]


@dataclass(frozen=True)
class LM:
    model: torch.nn.Module
    encode: object
    decode: object
    pad_id: int


def _load(cfg: Config) -> LM:
    if cfg.model == "tiny":
        tok = ByteTokenizer()
        model = tiny_causal_lm("llama", seed=0, hidden_size=32, num_layers=2, num_heads=4,
                               num_kv_heads=2, intermediate_size=64)  # fmt: skip
        return LM(model, lambda t: [int(i) for i in tok.encode(t)], tok.decode, 0)
    if cfg.model == "smollm2":
        model, tok = load_smollm2(attn_implementation="eager")
    else:
        if not cfg.model_path:
            raise ValueError("model_path: give a local Hugging Face checkpoint with model=path")
        model, tok = load_causal_lm(cfg.model_path, attn_implementation="eager",
                                    device=cfg.device)  # fmt: skip
    model = model.to(cfg.device).eval().requires_grad_(False)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return LM(model, lambda t: tok(t, add_special_tokens=False).input_ids,
              lambda ids: tok.decode(ids, skip_special_tokens=True), int(pad))  # fmt: skip


def _measure(lm: LM, data, behaviour: str, layer: int, positions: str, cfg: Config,
             scorer) -> Row:  # fmt: skip
    n1, n2 = cfg.num_caa, cfg.num_caa + cfg.num_hessian
    caa, hess, held = (data.subset(np.arange(0, n1)), data.subset(np.arange(n1, n2)),
                       data.subset(np.arange(n2, len(data))))  # fmt: skip
    dev = cfg.device
    t0 = time.perf_counter()
    v = caa_vector(lm.model, caa.pos_ids.to(dev), caa.neg_ids.to(dev), layer=layer,
                   attention_mask=caa.pair_mask.to(dev)).cpu() * cfg.alpha  # fmt: skip
    caa_s = time.perf_counter() - t0
    label = f"{behaviour}, layer {layer}, positions {positions}"
    obj = SteeringObjective(lm.model, hess.prompts.to(dev), hess.targets.to(dev), layer=layer,
                            positions=positions, attention_mask=hess.mask.to(dev))  # fmt: skip
    t0 = time.perf_counter()
    H = steering_hessian(obj, v.to(dev), method=cfg.method, num_steps=cfg.num_steps,
                         seed=cfg.seed, label=label)  # fmt: skip
    hessian_s = time.perf_counter() - t0
    rem = sharp_removal(v, H, k=None if cfg.k == 0 else cfg.k, ratio=cfg.ratio)
    rnd = [random_subspace_removal(v, H, k=rem.k, seed=cfg.seed * 1000 + i).curvature_reduction
           for i in range(cfg.num_random)]  # fmt: skip
    held_obj = SteeringObjective(lm.model, held.prompts.to(dev), held.targets.to(dev),
                                 layer=layer, positions=positions,
                                 attention_mask=held.mask.to(dev))  # fmt: skip
    with torch.no_grad():
        p0 = held_obj.log_probs(None).exp()
        pv = held_obj.log_probs(v.to(dev)).exp()
    anti = anti_steer_rate(held_obj, rem.sharp_direction())
    pol = polarity_test(held_obj, rem)
    # generation: continuations under v (KL of v, v', sharp part) and under v'
    texts = open_prompts(behaviour, num_prompts=cfg.gen_prompts,
                         rng=np.random.default_rng([cfg.seed, 7, layer]))  # fmt: skip
    ids, mask = _left_pad([list(lm.encode(t)) for t in texts], lm.pad_id)
    common = dict(layer=layer, positions=positions, attention_mask=mask.to(dev),
                  max_new_tokens=cfg.max_new_tokens, num_samples=cfg.gen_samples,
                  temperature=cfg.temperature, decode=lm.decode, scorer=scorer.score)  # fmt: skip
    sharp = torch.as_tensor(rem.sharp_part, dtype=torch.float32)
    clean = torch.as_tensor(rem.v_clean, dtype=torch.float32)
    seed = cfg.seed * 7919 + layer
    ev = generation_eval(lm.model, ids.to(dev), v.to(dev), seed=seed,
                         others={"sharp": sharp.to(dev), "clean": clean.to(dev)},
                         **common)  # fmt: skip
    ev_c = generation_eval(lm.model, ids.to(dev), clean.to(dev), seed=seed, **common)
    return Row(
        behaviour, layer, positions, rem.k, float(v.norm()), float((pv - p0).mean()),
        rem.cosine, rem.norm_reduction, rem.sharp_share, rem.curvature_before,
        rem.curvature_after, rem.curvature_reduction, float(np.median(rnd)),
        float(H.eigvals[0]), anti.rate, anti.half_width, float(pol.noise_like.mean()),
        ev.mean_kl("self"), ev.mean_kl("sharp"), ev.mean_kl("clean"), ev.behaviour,
        ev_c.behaviour, ev.coherence_nll, ev_c.coherence_nll,
        float(np.abs(rem.basis.T @ rem.v_clean).max()) if rem.k else 0.0, H.num_hvp + 0,
        hessian_s, caa_s, tuple(float(x) for x in H.eigvals[:16]),
    )  # fmt: skip


def _checks(seed: int) -> dict:
    """Oracles on a tiny float64 model (no padding: HF's float64 masks overflow)."""
    m = tiny_causal_lm("llama", seed=seed, hidden_size=16, num_layers=2, num_heads=2,
                       num_kv_heads=1, intermediate_size=32).double()  # fmt: skip
    rng = np.random.default_rng(seed)
    prompts = torch.as_tensor(rng.integers(0, 256, size=(3, 6)))
    targets = torch.as_tensor(rng.integers(0, 256, size=3))
    f = SteeringObjective(m, prompts, targets, layer=0, positions="last")
    g = SteeringObjective(m, prompts, targets, layer=0, positions="last", cache_prefix=False)
    v = torch.as_tensor(rng.normal(size=16) * 0.5)
    dense = steering_hessian(f, v, method="dense")
    fd = finite_difference_hessian(f, v, step=1e-3)
    fd = 0.5 * (fd + fd.T)
    scale = np.abs(dense.dense).max()
    lz = steering_hessian(f, v, method="lanczos", num_steps=16, seed=seed)
    top = np.linalg.eigvalsh(dense.dense)[::-1][:4]
    W, h = rng.normal(size=(9, 5)), rng.normal(size=(4, 5))
    y, u = rng.integers(0, 9, size=4), rng.normal(size=5)
    closed = steering_hessian(linear_softmax_loss(W, h, y), torch.as_tensor(u), method="dense")
    with torch.no_grad():
        base = m(input_ids=prompts).logits
        with steer(m, torch.zeros(16, dtype=torch.float64), layer=1, positions="all"):
            zero = m(input_ids=prompts).logits
    return {
        "check_hessian_fd_error": float(np.abs(dense.dense - fd).max() / scale),
        "check_lanczos_error": float(np.max(np.abs(lz.eigvals[:4] - top) / np.abs(top))),
        "check_closed_form_error": float(np.abs(closed.dense - linear_softmax_hessian(W, h, u))
                                         .max()),
        "check_zero_steer_error": float((zero - base).abs().max()),
        "check_prefix_cache_error": float((f.log_probs(v) - g.log_probs(v)).detach().abs().max()),
    }


def _median_ci(values, seed: int) -> tuple[float, float]:
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return float(np.median(x)), float("inf")
    ci = bootstrap_ci(x, np.median, num_bootstrap=2000, seed=seed)
    return float(np.median(x)), float(ci.half_width)


def run(cfg: Config) -> RunResult:
    lm = _load(cfg)
    n_layers = len(lm.model.model.layers) if hasattr(lm.model, "model") else None
    if n_layers is not None and max(cfg.layers) >= n_layers:
        raise ValueError(f"layers: {max(cfg.layers)} out of range for a model with "
                         f"{n_layers} layers")  # fmt: skip
    rows: list[Row] = []
    conds = [(b, layer, p) for b in cfg.behaviours for layer in cfg.layers for p in cfg.positions]
    sets = {b: make_contrastive_set(b, lm.encode, num_items=cfg.num_caa + cfg.num_hessian
                                    + cfg.num_eval, rng=np.random.default_rng([cfg.seed, i]),
                                    pad_id=lm.pad_id)
            for i, b in enumerate(cfg.behaviours)}  # fmt: skip
    scorers = {b: BowScorer(b) for b in cfg.behaviours}
    for b, layer, p in track(conds, "steering_hessian conditions"):
        rows.append(_measure(lm, sets[b], b, layer, p, cfg, scorers[b]))
    m = _summarize(rows, cfg)
    m.update(_checks(cfg.seed))
    table = [{k: v for k, v in r.__dict__.items() if k != "eigvals"} for r in rows]
    return RunResult(
        metrics=m, volatile=VOLATILE, tables={"conditions": table},
        figures={"curvature": _figure(rows)},
        captions={"curvature": "Left: directional curvature reduction |kappa(v)|/|kappa(v')| "
                  "per condition, sharp removal against a random subspace of the same size "
                  "(the paper's curvature-reduction figure). Right: the top Ritz values / "
                  "eigenvalues of the steering Hessian per condition."},
        notes=(f"{len(rows)} conditions; Hessian by {cfg.method} "
               f"({rows[0].num_hvp} HVPs per condition)",),
    )  # fmt: skip


def _summarize(rows: list[Row], cfg: Config) -> dict:
    s = cfg.seed
    m: dict = {"num_conditions": len(rows), "k_mean": float(np.mean([r.k for r in rows])),
               "caa_effect_median": float(np.median([r.caa_effect for r in rows]))}  # fmt: skip
    for name, vals in (("removal_cosine_median", [r.cosine for r in rows]),
                       ("removal_norm_reduction_median", [r.norm_reduction for r in rows]),
                       ("curvature_reduction_median", [r.curvature_reduction for r in rows]),
                       ("sharp_share_median", [r.sharp_share for r in rows])):  # fmt: skip
        m[name], m[f"{name}_ci"] = _median_ci(vals, s)
    m["curvature_reduction_max"] = float(max(r.curvature_reduction for r in rows))
    m["random_curvature_reduction_median"] = float(np.median([r.random_reduction for r in rows]))
    m["sharp_beats_random_frac"] = float(np.mean([r.curvature_reduction > r.random_reduction
                                                  for r in rows]))  # fmt: skip
    worst = min(rows, key=lambda r: r.anti_steer)
    m["anti_steer_rate_min"], m["anti_steer_rate_min_ci"] = worst.anti_steer, worst.anti_steer_hw
    m["anti_steer_rate_median"] = float(np.median([r.anti_steer for r in rows]))
    # KL attribution: the sharp part's share of the KL gap over its share of ||v||^2
    attr = [(r.kl_sharp / r.kl_full) / max(r.sharp_share, 1e-12) if r.kl_full > 0 else np.nan
            for r in rows]  # fmt: skip
    m["kl_attribution_median"], m["kl_attribution_median_ci"] = _median_ci(attr, s)
    wins = [float(r.behaviour_clean >= r.behaviour_v and r.nll_clean <= 1.05 * r.nll_v)
            for r in rows]  # fmt: skip
    m["generation_win_frac"] = float(np.mean(wins))
    m["generation_win_frac_ci"] = (float(bootstrap_ci(np.array(wins), seed=s).half_width)
                                   if len(wins) > 1 else float("inf"))  # fmt: skip
    m["behaviour_gain_median"] = float(np.median([r.behaviour_clean - r.behaviour_v
                                                  for r in rows]))  # fmt: skip
    m["polarity_noise_frac"] = float(np.mean([r.polarity_noise for r in rows]))
    m["num_hvp_per_condition"] = float(np.mean([r.num_hvp for r in rows]))
    m["check_projection_error"] = float(max(r.projection_error for r in rows))
    m["hessian_seconds"] = float(np.sum([r.hessian_s for r in rows]))
    m["caa_seconds"] = float(np.sum([r.caa_s for r in rows]))
    m["hessian_cost_ratio"] = m["hessian_seconds"] / max(m["caa_seconds"], 1e-12)
    return m


def _figure(rows: list[Row]) -> bytes:
    fig, (ax, ax2) = new_figure(2, width=5.0)
    names = [f"{r.behaviour[:4]} L{r.layer} {r.positions}" for r in rows]
    xs = np.arange(len(rows))
    ax.bar(xs - 0.2, [r.curvature_reduction for r in rows], 0.4, label="sharp removal")
    ax.bar(xs + 0.2, [r.random_reduction for r in rows], 0.4, label="random subspace")
    ax.set_yscale("log")
    ax.set_xticks(xs, names, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("|kappa(v)| / |kappa(v')|")
    ax.legend(fontsize=7)
    for r, name in zip(rows, names, strict=True):
        ax2.plot(np.arange(len(r.eigvals)), r.eigvals, marker=".", label=name)
    ax2.set_xlabel("index")
    ax2.set_ylabel("eigenvalue (top)")
    ax2.legend(fontsize=6)
    return figure_png(fig)
