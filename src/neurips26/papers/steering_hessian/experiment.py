"""Reproduction: the steering Hessian of CAA vectors on SmolLM2-135M-Instruct.

For each condition (behaviour x layer x position mode; one unit of the experiment) we
build the CAA vector from contrastive multiple-choice prompts, scale it by ``alpha``, and
compute the steering Hessian of the behavioural loss (Eq. 1) at that point on a separate
prompt set: densely on the tiny model of the smoke tier, by Lanczos (``num_steps``
Hessian-vector products) on SmolLM2. We then remove the top-``k`` (sharp)
eigen-directions and measure what the paper reports: cosine and norm change of the
vector, its sharp share, the drop of its directional curvature, the anti-steer rate of
the sharp part alone on held-out prompts, the polarity test, and in open-ended
generation the per-step KL attribution and the behaviour score of ``v'`` against ``v``
at equal coherence (a bag-of-words logistic-regression scorer trained on the answer
texts). Oracle checks on a tiny float64 model run in every tier.

Controls: every paper claim's statistic is measured again with a uniformly random
orthonormal subspace of the same dimension ``k`` removed instead of the sharp one
(``random_subspace_removal``): the cosine, norm reduction, share of ``||v||^2`` and
curvature reduction are the median over ``num_random`` random subspaces per condition;
the anti-steer rate, KL attribution, polarity test and generation comparison use the
first random subspace's part of ``v`` in place of the sharp part. A claim about the
sharp directions is evidence only where the random subspace fails the same test.

Uncertainties: conditions and held-out prompts are the units. Medians over conditions
get a percentile bootstrap over conditions (2000 resamples); the worst condition's
anti-steer rate gets a Wilson binomial interval over its held-out prompts.
Shares of conditions (generation wins, the polarity test) get the same bootstrap over
conditions.

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

What does not reproduce at the small tier, and what the run measures about it
------------------------------------------------------------------------------
- Direction and norm are kept and the sharp share is small, as the paper says; whether
  that says anything about sharp directions is what the random-subspace controls decide
  (a small subspace of a large residual stream holds little of any vector).
- The curvature does not fall. Two diagnostics measure the reasons we suspect: the CAA
  vector's own directional curvature against the top eigenvalue
  (``caa_curvature_over_top_median``; small when the vector lies in flat directions) and
  the share of conditions where ``kappa(v')`` has the other sign than ``kappa(v)``
  (``curvature_sign_flip_frac``; the Hessian at a steered point is indefinite).
- The polarity test: the sharp part's share of ``||v||^2`` (``sharp_share_median``) is
  the diagnostic of "too small to act as noise".
- Generation wins of ``v'`` over ``v``: ``caa_effect_median`` measures how much CAA moves
  the answer-letter probabilities at all. The premise itself is not established on
  SmolLM2 with our two behaviours (check ``caa_steers``): CAA's median gain on held-out
  prompts is not distinguishable from zero over the conditions, while a random direction
  of the same norm (its control) lowers the behaviour-matching probability clearly.
  Three diagnostics of the premise, on the same held-out prompts and continuations.
  (a) Whether the unsteered model tells the two answers apart at all:
  ``choice_acc_<behaviour>``, the share of held-out prompts on which the matching letter
  gets more probability than the other (Wilson interval over the prompts); a share at
  chance means the contrastive pairs differ in the letter only, so their mean
  difference carries no behaviour direction. (b) CAA's effect on that choice, the
  matching letter's probability normalised over the two letters
  (``caa_choice_effect_median`` beside ``random_choice_effect_median``), which separates
  a change of choice from probability mass moved off both letters. (c) CAA in
  generation: the behaviour score of continuations under ``v`` minus that of unsteered
  continuations (``caa_generation_gain_median``; control ``random_generation_gain_median``,
  the random direction of the same norm), scored on the same samples' seeds. In the
  stored small run the unsteered model's choice is within its interval of chance on both
  behaviours, CAA does not move the normalised choice, and it changes the generations'
  behaviour score no more than the random direction does: with these behaviours the
  premise fails on SmolLM2-135M because the model does not read the answers, not because
  of a step of the method. A larger model, or Gemma-3-270M, was not tried.
- The anti-steer rate's worst condition: ``anti_steer_rate_median`` shows the other
  conditions.
- The KL attribution during generation (the sharp part's KL over the full vector's,
  per unit of its share of ``||v||^2``). Two causes are tested. (a) Where the Hessian
  is evaluated (our reading: at ``alpha v_CAA``): the sharp part alone is a small
  vector whose KL is measured against the unsteered model, so the curvature near the
  unsteered point, not at ``alpha v_CAA``, may be what decides it. Diagnostic
  ``kl_attribution_h0_median``: the same statistic with the sharp subspace (same
  ``k``) of the Hessian at ``v = 0`` (``h0_num_steps`` Lanczos steps), removed from
  the same ``v`` and scored on the same continuations; reaching the target there
  (and exceeding the random-subspace control) supports it. (b) The reading of the
  statistic: "the sharp part drives a share of the KL" read as the KL lost when the
  sharp part is removed, ``(KL(v) - KL(v'))/KL(v)`` per unit of share
  (``kl_removal_attribution_median``, its control
  ``random_kl_removal_attribution_median`` with the random subspace removed; both
  bootstraps over conditions); a removal attribution that passes where the
  part-alone one fails would make the verdict depend on that reading. Whether our
  behavioural loss (the answer letter's NLL on multiple-choice prompts) ranks the
  directions that matter for open-ended generation at all is not yet diagnosed.
The verdicts of a real run are in the store; this docstring does not quote numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from neurips26.common.data.text import ByteTokenizer
from neurips26.common.experiment import param
from neurips26.common.models.llm import load_lm, tiny_causal_lm
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, binomial_interval

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
    h0_num_steps: int = param(16, help="Lanczos steps (HVPs) of the diagnostic Hessian at the "
                              "unsteered point", min=1, max=100_000)


TIERS = {
    "smoke": Config(model="tiny", behaviours=("sentiment",), layers=(0, 1), num_caa=8,
                    num_hessian=4, num_eval=8, method="dense", k=0, num_random=2,
                    gen_prompts=2, gen_samples=1, max_new_tokens=6),
    "small": Config(),
    "paper": Config(model="path", layers=(8, 14, 20), positions=("last", "all"), num_caa=256,
                    num_hessian=64, num_eval=256, num_steps=80, k=8, num_random=10,
                    gen_prompts=32, gen_samples=4, max_new_tokens=32),
}

METRICS = (
    "num_conditions", "k_mean", "caa_effect_median", "random_effect_median",
    "removal_cosine_median", "random_removal_cosine_median",
    "removal_norm_reduction_median", "random_removal_norm_reduction_median",
    "curvature_reduction_median", "curvature_reduction_max",
    "random_curvature_reduction_median", "sharp_beats_random_frac",
    "caa_curvature_over_top_median", "curvature_sign_flip_frac",
    "sharp_share_median", "random_share_median",
    "anti_steer_rate_min", "anti_steer_rate_median", "random_anti_steer_rate_min",
    "caa_choice_effect_median", "random_choice_effect_median", "choice_acc_sentiment",
    "choice_acc_refusal", "caa_generation_gain_median", "random_generation_gain_median",
    "kl_attribution_median", "random_kl_attribution_median",
    "kl_attribution_h0_median", "kl_removal_attribution_median",
    "random_kl_removal_attribution_median",
    "generation_win_frac", "random_generation_win_frac", "behaviour_gain_median",
    "polarity_noise_frac", "random_polarity_noise_frac", "num_hvp_per_condition",
    "hessian_seconds", "caa_seconds", "hessian_cost_ratio",
    "check_hessian_fd_error", "check_lanczos_error", "check_closed_form_error",
    "check_projection_error", "check_zero_steer_error", "check_prefix_cache_error",
)  # fmt: skip

VOLATILE = ("hessian_seconds", "caa_seconds", "hessian_cost_ratio")

#: Resamples of the bootstrap over conditions.
NUM_RESAMPLES = 2000


@dataclass(frozen=True)
class LM:
    model: torch.nn.Module
    encode: object
    decode: object
    pad_id: int


@dataclass(frozen=True)
class State:
    cfg: Config
    lm: LM
    sets: dict
    scorers: dict


def _load(cfg: Config, device: str) -> LM:
    path = cfg.model_path or None if cfg.model == "path" else None
    model, tok = load_lm(cfg.model, model_path=path, device=device,
                         attn_implementation="eager",
                         tiny=dict(seed=0, hidden_size=32, num_layers=2, num_heads=4,
                                   num_kv_heads=2, intermediate_size=64))
    if tok is None:
        byte = ByteTokenizer()
        return LM(model, lambda t: [int(i) for i in byte.encode(t)], byte.decode, 0)
    model = model.eval().requires_grad_(False)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return LM(model, lambda t: tok(t, add_special_tokens=False).input_ids,
              lambda ids: tok.decode(ids, skip_special_tokens=True), int(pad))  # fmt: skip


def _attribution(kl_part: float, kl_full: float, share: float) -> float:
    """A part's KL over the full vector's, divided by its share of ``||v||^2``."""
    return (kl_part / kl_full) / max(share, 1e-12) if kl_full > 0 else float("nan")


def _direction(part: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``part`` rescaled to ``||v||`` (zero stays zero), as ``sharp_direction``."""
    n = np.linalg.norm(part)
    return np.zeros_like(part) if n == 0 else part * (np.linalg.norm(v) / n)


def _measure(lm: LM, data, behaviour: str, layer: int, positions: str, cfg: Config,
             scorer, dev: str) -> dict:  # fmt: skip
    n1, n2 = cfg.num_caa, cfg.num_caa + cfg.num_hessian
    caa, hess, held = (data.subset(np.arange(0, n1)), data.subset(np.arange(n1, n2)),
                       data.subset(np.arange(n2, len(data))))  # fmt: skip
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
    rnds = [random_subspace_removal(v, H, k=rem.k, seed=cfg.seed * 1000 + i)
            for i in range(cfg.num_random)]  # fmt: skip
    rnd = rnds[0]  # the control of the direction-based statistics
    # diagnostic of the KL attribution: the sharp subspace of the Hessian at the unsteered
    # point (v = 0), the same k, removed from the same v
    H0 = steering_hessian(obj, torch.zeros_like(v).to(dev), method=cfg.method,
                          num_steps=cfg.h0_num_steps, seed=cfg.seed,
                          label=f"{label}, at v = 0")  # fmt: skip
    rem0 = sharp_removal(v, H0, k=rem.k)
    held_obj = SteeringObjective(lm.model, held.prompts.to(dev), held.targets.to(dev),
                                 layer=layer, positions=positions,
                                 attention_mask=held.mask.to(dev))  # fmt: skip
    # the control of CAA's own effect: a random direction of the same norm
    g = torch.Generator().manual_seed(cfg.seed * 1000 + layer)
    u = torch.randn(v.shape, generator=g, dtype=v.dtype)
    u = u * (v.norm() / u.norm())
    # with the other answer letter's probability (the premise's diagnostic), so that the
    # choice between the two answers (the matching letter's probability normalised over
    # both) is measured apart from the probability mass steering moves off the two letters
    other = held.neg_ids[:, -1:].to(dev)
    with torch.no_grad():
        (p0, q0), (pv, qv), (pu, qu) = (held_obj.log_probs(x, others=other).exp().unbind(1)
                                        for x in (None, v.to(dev), u.to(dev)))
    c0, cv, cu = p0 / (p0 + q0), pv / (pv + qv), pu / (pu + qu)
    anti = anti_steer_rate(held_obj, rem.sharp_direction())
    pol = polarity_test(held_obj, rem)
    anti_r = anti_steer_rate(held_obj, _direction(rnd.sharp_part, rnd.v))
    pol_r = polarity_test(held_obj, rnd)
    # generation: continuations under v (KL of v, v', sharp part, random part) and under v'
    texts = open_prompts(behaviour, num_prompts=cfg.gen_prompts,
                         rng=np.random.default_rng([cfg.seed, 7, layer]))  # fmt: skip
    ids, mask = _left_pad([list(lm.encode(t)) for t in texts], lm.pad_id)
    common = dict(layer=layer, positions=positions, attention_mask=mask.to(dev),
                  max_new_tokens=cfg.max_new_tokens, num_samples=cfg.gen_samples,
                  temperature=cfg.temperature, decode=lm.decode, scorer=scorer.score)  # fmt: skip

    def vec(x):
        return torch.as_tensor(x, dtype=torch.float32).to(dev)

    seed = cfg.seed * 7919 + layer
    ev = generation_eval(lm.model, ids.to(dev), v.to(dev), seed=seed,
                         others={"sharp": vec(rem.sharp_part), "clean": vec(rem.v_clean),
                                 "random": vec(rnd.sharp_part),
                                 # the diagnostics' vectors (each KL on its own)
                                 "sharp_h0": vec(rem0.sharp_part),
                                 "random_clean": vec(rnd.v_clean)}, **common)  # fmt: skip
    ev_c = generation_eval(lm.model, ids.to(dev), vec(rem.v_clean), seed=seed, **common)
    ev_r = generation_eval(lm.model, ids.to(dev), vec(rnd.v_clean), seed=seed, **common)
    # the premise in generation: the behaviour unsteered and under the random direction
    ev_0 = generation_eval(lm.model, ids.to(dev), torch.zeros_like(v).to(dev), seed=seed,
                           **common)  # fmt: skip
    ev_u = generation_eval(lm.model, ids.to(dev), u.to(dev), seed=seed, **common)
    kl_full = ev.mean_kl("self")
    return {
        "condition": label, "k": rem.k, "caa_norm": float(v.norm()),
        "caa_effect": float((pv - p0).mean()),
        "random_effect": float((pu - p0).mean()),
        "choice_correct": int((c0 > 0.5).sum()),
        "caa_choice_effect": float((cv - c0).mean()),
        "random_choice_effect": float((cu - c0).mean()),
        "caa_generation_gain": ev.behaviour - ev_0.behaviour,
        "random_generation_gain": ev_u.behaviour - ev_0.behaviour,
        "cosine": rem.cosine, "norm_reduction": rem.norm_reduction,
        "sharp_share": rem.sharp_share, "curvature_before": rem.curvature_before,
        "curvature_after": rem.curvature_after,
        "curvature_reduction": rem.curvature_reduction,
        "random_reduction": float(np.median([r.curvature_reduction for r in rnds])),
        "random_cosine": float(np.median([r.cosine for r in rnds])),
        "random_norm_reduction": float(np.median([r.norm_reduction for r in rnds])),
        "random_share": float(np.median([r.sharp_share for r in rnds])),
        "top_eigval": float(H.eigvals[0]),
        "anti_steer": anti.rate, "anti_steer_count": int(np.sum(anti.delta < 0)),
        "num_held": len(anti.delta), "random_anti_steer": anti_r.rate,
        "random_anti_steer_count": int(np.sum(anti_r.delta < 0)),
        "polarity_noise": float(pol.noise_like.mean()),
        "random_polarity_noise": float(pol_r.noise_like.mean()),
        "kl_full": kl_full, "kl_sharp": ev.mean_kl("sharp"), "kl_clean": ev.mean_kl("clean"),
        "kl_random": ev.mean_kl("random"),
        "kl_attribution": _attribution(ev.mean_kl("sharp"), kl_full, rem.sharp_share),
        "random_kl_attribution": _attribution(ev.mean_kl("random"), kl_full,
                                              rnd.sharp_share),
        "sharp_share_h0": rem0.sharp_share, "kl_sharp_h0": ev.mean_kl("sharp_h0"),
        "kl_attribution_h0": _attribution(ev.mean_kl("sharp_h0"), kl_full, rem0.sharp_share),
        "kl_random_clean": ev.mean_kl("random_clean"),
        "kl_removal_attribution": _attribution(kl_full - ev.mean_kl("clean"), kl_full,
                                               rem.sharp_share),
        "random_kl_removal_attribution": _attribution(kl_full - ev.mean_kl("random_clean"),
                                                      kl_full, rnd.sharp_share),
        "behaviour_v": ev.behaviour, "behaviour_clean": ev_c.behaviour,
        "behaviour_random": ev_r.behaviour, "nll_v": ev.coherence_nll,
        "nll_clean": ev_c.coherence_nll, "nll_random": ev_r.coherence_nll,
        "projection_error": (float(np.abs(rem.basis.T @ rem.v_clean).max())
                             if rem.k else 0.0),
        "num_hvp": H.num_hvp + 0, "hessian_s": hessian_s, "caa_s": caa_s,
        "eigvals": " ".join(f"{float(x):.6g}" for x in H.eigvals[:16]),
    }  # fmt: skip


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


def _median(col: str):
    def stat(t) -> float:
        return float(np.median(t.column(col)))
    return stat


def _mean(col: str):
    def stat(t) -> float:
        return float(np.mean(t.column(col)))
    return stat


def _wins(arm: str):
    """Share of conditions where ``arm``'s vector scores at least as high as ``v`` on the
    behaviour at equal coherence (NLL within 5%)."""
    def stat(t) -> float:
        b, n = t.column(f"behaviour_{arm}"), t.column(f"nll_{arm}")
        return float(np.mean((b >= t.column("behaviour_v")) & (n <= 1.05 * t.column("nll_v"))))
    return stat


class SteeringHessianExperiment(Experiment):
    Config, TIERS, METRICS, VOLATILE = Config, TIERS, METRICS, VOLATILE
    UNIT_TABLE = "conditions"
    CAPTIONS: ClassVar[dict[str, str]] = {
        "curvature": "Left: directional curvature reduction |kappa(v)|/|kappa(v')| "
                "per condition, sharp removal against a random subspace of the same size "
                "(the paper's curvature-reduction figure). Right: the top Ritz values / "
                "eigenvalues of the steering Hessian per condition."}

    def setup(self, cfg: Config, ctx) -> State:
        lm = _load(cfg, ctx.device)
        n_layers = len(lm.model.model.layers) if hasattr(lm.model, "model") else None
        if n_layers is not None and max(cfg.layers) >= n_layers:
            raise ValueError(f"layers: {max(cfg.layers)} out of range for a model with "
                             f"{n_layers} layers")  # fmt: skip
        sets = {b: make_contrastive_set(b, lm.encode, num_items=cfg.num_caa + cfg.num_hessian
                                        + cfg.num_eval, rng=np.random.default_rng([cfg.seed, i]),
                                        pad_id=lm.pad_id)
                for i, b in enumerate(cfg.behaviours)}  # fmt: skip
        return State(cfg, lm, sets, {b: BowScorer(b) for b in cfg.behaviours})

    def grid(self, cfg: Config):
        return [{"behaviour": b, "layer": layer, "positions": p}
                for b in cfg.behaviours for layer in cfg.layers for p in cfg.positions]

    def measure(self, unit, state: State, ctx) -> dict:
        b = unit["behaviour"]
        return _measure(state.lm, state.sets[b], b, unit["layer"], unit["positions"],
                        state.cfg, state.scorers[b], ctx.device)

    def summarize(self, t, cfg: Config, ctx) -> dict:
        def boot(stat):
            return t.bootstrap(stat, unit="condition", num_resamples=NUM_RESAMPLES,
                               seed=cfg.seed)

        worst = min(t.rows, key=lambda r: r["anti_steer"])
        worst_r = min(t.rows, key=lambda r: r["random_anti_steer"])
        before, after = t.column("curvature_before"), t.column("curvature_after")
        m: dict = {
            "num_conditions": len(t), "k_mean": float(np.mean(t.column("k"))),
            "caa_effect_median": boot(_median("caa_effect")),
            "random_effect_median": boot(_median("random_effect")),
            "caa_choice_effect_median": boot(_median("caa_choice_effect")),
            "random_choice_effect_median": boot(_median("random_choice_effect")),
            "caa_generation_gain_median": boot(_median("caa_generation_gain")),
            "random_generation_gain_median": boot(_median("random_generation_gain")),
            "removal_cosine_median": boot(_median("cosine")),
            "random_removal_cosine_median": boot(_median("random_cosine")),
            "removal_norm_reduction_median": boot(_median("norm_reduction")),
            "random_removal_norm_reduction_median": boot(_median("random_norm_reduction")),
            "curvature_reduction_median": boot(_median("curvature_reduction")),
            "curvature_reduction_max": float(t.column("curvature_reduction").max()),
            "random_curvature_reduction_median": boot(_median("random_reduction")),
            "sharp_beats_random_frac": float(np.mean(t.column("curvature_reduction")
                                                     > t.column("random_reduction"))),
            "caa_curvature_over_top_median": float(np.median(
                np.abs(before) / np.maximum(np.abs(t.column("top_eigval")), 1e-300))),
            "curvature_sign_flip_frac": float(np.mean(np.sign(before) != np.sign(after))),
            "sharp_share_median": boot(_median("sharp_share")),
            "random_share_median": boot(_median("random_share")),
            "anti_steer_rate_min": binomial_interval(worst["anti_steer_count"],
                                                     worst["num_held"], unit="held-out prompts"),
            "random_anti_steer_rate_min": binomial_interval(
                worst_r["random_anti_steer_count"], worst_r["num_held"],
                unit="held-out prompts"),
            "anti_steer_rate_median": float(np.median(t.column("anti_steer"))),
            "kl_attribution_median": boot(_median("kl_attribution")),
            "random_kl_attribution_median": boot(_median("random_kl_attribution")),
            "kl_attribution_h0_median": boot(_median("kl_attribution_h0")),
            "kl_removal_attribution_median": boot(_median("kl_removal_attribution")),
            "random_kl_removal_attribution_median": boot(
                _median("random_kl_removal_attribution")),
            "generation_win_frac": boot(_wins("clean")),
            "random_generation_win_frac": boot(_wins("random")),
            "behaviour_gain_median": float(np.median(t.column("behaviour_clean")
                                                     - t.column("behaviour_v"))),
            "polarity_noise_frac": boot(_mean("polarity_noise")),
            "random_polarity_noise_frac": boot(_mean("random_polarity_noise")),
            "num_hvp_per_condition": float(np.mean(t.column("num_hvp"))),
            "check_projection_error": float(t.column("projection_error").max()),
            "hessian_seconds": float(np.sum(t.column("hessian_s"))),
            "caa_seconds": float(np.sum(t.column("caa_s"))),
        }  # fmt: skip
        for b in BEHAVIOURS:  # unsteered, the held-out prompts are the same at every layer
            rows = [r for r in t.rows if r["behaviour"] == b]
            m[f"choice_acc_{b}"] = (
                binomial_interval(rows[0]["choice_correct"], rows[0]["num_held"],
                                  unit="held-out prompts")
                if rows else Estimate.missing(f"behaviour {b} is not among this run's behaviours"))
        m["hessian_cost_ratio"] = m["hessian_seconds"] / max(m["caa_seconds"], 1e-12)
        m.update(_checks(cfg.seed))
        return m

    def notes(self, t, summary, cfg) -> tuple[str, ...]:
        return (f"{len(t)} conditions; Hessian by {cfg.method} "
                f"({t.rows[0]['num_hvp']} HVPs per condition)",)

    def figures(self, t, summary, cfg) -> dict[str, bytes]:
        return {"curvature": _figure(t)}


def _figure(t) -> bytes:
    fig, (ax, ax2) = new_figure(2, width=5.0)
    names = [f"{r['behaviour'][:4]} L{r['layer']} {r['positions']}" for r in t]
    xs = np.arange(len(t))
    ax.bar(xs - 0.2, t.column("curvature_reduction"), 0.4, label="sharp removal")
    ax.bar(xs + 0.2, t.column("random_reduction"), 0.4, label="random subspace")
    ax.set_yscale("log")
    ax.set_xticks(xs, names, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("|kappa(v)| / |kappa(v')|")
    ax.legend(fontsize=7)
    for r, name in zip(t, names, strict=True):
        eig = [float(x) for x in r["eigvals"].split()]
        ax2.plot(np.arange(len(eig)), eig, marker=".", label=name)
    ax2.set_xlabel("index")
    ax2.set_ylabel("eigenvalue (top)")
    ax2.legend(fontsize=6)
    return figure_png(fig)


EXPERIMENT = SteeringHessianExperiment()
run = EXPERIMENT.run
