"""Reproduction of Wisp / Wisp+ / Whisper on SmolLM2-135M (held-out perplexity).

A pretrained causal LM is pruned with each of the six criteria at each sparsity, with the
layer-by-layer sequential protocol, from a calibration set of random windows of the
standard library's ``pydoc_data.topics`` text (its first 90%); perplexity is measured on
windows of the last 10% (held out, never seen in calibration). Each calibration seed
draws a different calibration set; every method sees the same one at a given seed, so
the ratios ``ppl(method) / ppl(baseline)`` are paired; each is the geometric mean over
calibration sets with a Student-t interval on the log scale (differences of gains and
sensitivities: a Student-t interval over calibration sets). The claims compare with
Wanda and SparseGPT, the paper's own baselines, pruned from the same calibration set:
the baseline is the comparison, so they carry a ``no_control`` reason.

Only the top ``num_pruned_layers`` decoder blocks are pruned at the small tier. The dense
blocks below them are the same for every method, so their outputs on the calibration and
evaluation windows are captured once (:func:`capture_block_inputs`) and each method runs
only the pruned blocks, the final norm and the head: a 135M-parameter model on 2 CPU
cores then allows every method at every sparsity over five calibration sets.

Deviations from the paper
-------------------------
- Model and scale: the paper prunes every block of Llama-2 7B/13B/70B and Llama-3.1 8B
  with 128 calibration sequences of 2048 tokens from C4 and measures WikiText-2
  perplexity. Those weights and corpora are not available offline; the small tier prunes
  the top 4 of SmolLM2-135M's 30 blocks (all seven linear maps of each) from 8 windows of
  64 tokens and evaluates 2 windows of 256 held-out tokens of Python's documentation;
  4:8 is left to the paper tier (2:4 is run). The paper tier prunes every block of any
  local Hugging Face checkpoint (``--set model_path=...``) from 128 x 2048 tokens.
- The smoke tier runs a randomly initialised two-block LLaMA-layout model
  (``tiny_causal_lm``) on UTF-8 bytes: it exercises the code, its perplexities mean
  nothing.
- Two readings of Wisp's score, both run: pure input differences (``wisp``, the one the
  claims are judged on) and "preserve not only activations but also differences" as
  both terms, ``|W_ij| sqrt(||Delta X_j||^2 / |P| + ||X_j||^2 / N)`` (``wisp_act``;
  ``ratio_wisp_act_wanda_*`` are diagnostics of the Wisp-over-Wanda claims).
- The pairing (each token with its nearest other token by cosine similarity of the
  layer input), Wisp+'s ``q = 0.1`` and Whisper's Hessian
  ``Delta X^T Delta X / |P| + 0.05 X^T X / N`` are inferred from the abstract (see
  :mod:`.pruning`). Difference criteria are used in all seven linear maps.
- The readings diagnostic: at the highest unstructured sparsity (70% at the small tier),
  each inferred choice of the difference methods is varied one at a time on the same
  calibration sets: Wisp's pairing (nearest neighbour, random, adjacent tokens), Wisp+'s
  ``q`` (``readings_q``) and Whisper's ``lam`` (``readings_lam``; large ``lam`` tends to
  SparseGPT). ``reading_ratio_*`` is each reading's perplexity ratio to the method's
  baseline (Wanda; SparseGPT for Whisper); ``reading_best_ratio_*`` is the best of a
  method's readings, the default included, chosen on the same calibration sets, so an
  optimistic figure.
- Claim 6 (gate/up neurons are sparsity-sensitive) compares pruning only gate+up with
  pruning only the attention projections at 70% with Wanda's scores; gate+up hold twice
  as many weights as q, k, v, o together in SmolLM2, so the claim compares the rise in
  log-perplexity per million pruned weights (the raw rise is reported beside it).

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
- With our nearest-neighbour pairing, Wisp is behind Wanda at 50, 60 and 70% and about
  level under 2:4; Wisp+ is not ahead of Wisp; Whisper is behind SparseGPT at 60%, 70%
  and 2:4 and not ahead at 50% (five calibration sets; the report gives each interval).
  The gain of Wisp over Wanda does not grow with sparsity. The motivation claim
  (gate+up more sensitive than attention) is judged per pruned weight; see the report
  for whether it holds once the group sizes are accounted for.
- The methods do what they are built for, and the run measures it: their output-difference
  error on gate/up (``diff_error_*``) against their output reconstruction error
  (``recon_error_*``), beside their baselines' (the 70% ones are the diagnostics of the
  70% claims, the 60% and 2:4 ones of Whisper's claims there). Whether our inferred
  pairing, ``q`` and ``lam`` cause the negatives is what the readings diagnostic tests
  (shown beside the 70% claims). In the stored small run
  the pairing decides Wisp's result at 70%: with pairs drawn at random (an estimate of
  the all-pairs difference norm) or with adjacent tokens, Wisp is ahead of Wanda beyond
  its interval, while with our nearest-neighbour reading of "similar inputs" it is
  behind. So the Wisp negative at 70% is our reading of the pairing, not the method; the
  abstract does not say how pairs are formed, and the other sparsities were not run
  under the other pairings. Whisper is level with SparseGPT at ``lam = 0.5`` and behind
  at our ``lam = 0.05`` and at 5: no ``lam`` tried puts it ahead. The top-4-block scope
  and the model's scale are not yet tested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch

from neurips26.common.data.text import ByteTokenizer, pydoc_topics_text
from neurips26.common.experiment import param
from neurips26.common.models.llm import decoder_layers, load_lm, perplexity
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import (
    Estimate,
    Experiment,
    log_t_interval,
    ratio_t_interval,
    t_interval,
)

from . import (
    ATTENTION,
    METHODS,
    PROJECTIONS,
    block_linears,
    block_perplexity,
    capture_block_inputs,
    parse_sparsity,
    prune_linear,
    prune_model,
    sparsity_label,
)

MODELS = ("tiny", "smollm2", "path")
SEEDED = tuple(m for m in METHODS if m != "magnitude")  # magnitude needs no calibration


@dataclass(frozen=True)
class Config:
    seed: int = 0
    model: str = param("smollm2", help="'tiny' (random LLaMA layout), 'smollm2' or 'path'",
                       choices=MODELS)
    model_path: str = param("", help="local Hugging Face checkpoint folder (model='path')")
    methods: tuple[str, ...] = param(METHODS, help="pruning methods", choices=METHODS)
    sparsities: tuple[str, ...] = param(("0.5", "0.6", "0.7", "2:4"),
                                        help="unstructured fractions or N:M patterns")
    num_seeds: int = param(3, help="calibration sets (paired over methods)", min=1, max=64)
    num_calib: int = param(8, help="calibration windows", min=1, max=4096)
    calib_len: int = param(64, help="tokens per calibration window", min=2, max=8192)
    num_eval: int = param(2, help="held-out evaluation windows", min=1, max=4096)
    eval_len: int = param(256, help="tokens per evaluation window", min=2, max=8192)
    num_pruned_layers: int = param(4, help="top blocks pruned (0 = every block)", min=0)
    lam: float = param(0.05, help="Whisper's activation regulariser lam", min=0.0, max=1e6)
    top_frac: float = param(0.1, help="Wisp+'s fraction q of pairs per neuron",
                            min=1e-6, max=1.0)
    pairing: str = param("knn", help="input pairing", choices=("knn", "random", "adjacent"))
    block_size: int = param(128, help="SparseGPT/Whisper lazy block size", min=1)
    sensitivity: bool = param(True, help="run the gate+up vs attention ablation (claim 6)")
    readings: bool = param(True, help="run the readings diagnostic at the highest "
                           "unstructured sparsity: Wisp with every pairing, Wisp+ at each "
                           "readings_q, Whisper at each readings_lam")
    readings_q: tuple[float, ...] = param((0.5,), help="Wisp+ fractions q of the readings "
                                          "diagnostic", min=1e-6, max=1.0, allow_empty=True)
    readings_lam: tuple[float, ...] = param((0.5, 5.0), help="Whisper lam values of the "
                                            "readings diagnostic", min=0.0, max=1e6,
                                            allow_empty=True)


TIERS = {
    "smoke": Config(model="tiny", sparsities=("0.5", "2:4"), num_seeds=2, num_calib=4,
                    calib_len=32, num_eval=2, eval_len=64, num_pruned_layers=0,
                    block_size=32),
    "small": Config(num_seeds=5),
    "paper": Config(model="path", sparsities=("0.5", "0.6", "0.7", "2:4", "4:8"),
                    num_seeds=3, num_calib=128, calib_len=2048, num_eval=4,
                    eval_len=2048, num_pruned_layers=0),
}

LABELS = ("50", "60", "70", "2of4", "4of8")
METRICS = (
    "ppl_dense",
    *(f"ratio_wisp_wanda_{lb}" for lb in LABELS),
    *(f"ratio_whisper_sparsegpt_{lb}" for lb in LABELS),
    *(f"ratio_wisp_act_wanda_{lb}" for lb in LABELS),  # the second reading of Wisp
    "ratio_wisp_plus_wisp_70", "gain_growth",
    "sensitivity_gateup_minus_attn_70", "sensitivity_per_weight_gateup_minus_attn_70",
    # diagnostics of the negatives: what each method preserves on gate/up at 70%
    *(f"{e}_error_{m}_70" for e in ("diff", "recon")
      for m in ("wanda", "wisp", "wisp_plus", "sparsegpt", "whisper")),
    # and Whisper against SparseGPT at 60% and 2:4
    *(f"{e}_error_{m}_{lb}" for lb in ("60", "2of4") for e in ("diff", "recon")
      for m in ("sparsegpt", "whisper")),
    "ratio_wanda_magnitude_50", "ratio_sparsegpt_magnitude_50",
    "check_sparsity_error", "check_nm_valid", "check_block_ppl_error",
    "check_whisper_lam_limit", "check_dense_restored",
    "ppl_*", "ratio_*", "diff_error_*", "recon_error_*", "prune_seconds_*",
    # the readings diagnostic: each inferred choice varied at the highest sparsity
    "reading_ratio_wisp_pairing_random_wanda", "reading_ratio_wisp_pairing_adjacent_wanda",
    "reading_ratio_whisper_lam_0p5_sparsegpt", "reading_ratio_whisper_lam_5p0_sparsegpt",
    "reading_ratio_*", "reading_best_ratio_wisp_wanda", "reading_best_ratio_whisper_sparsegpt",
    "reading_best_ratio_wisp_plus_wanda",
)


def _load(cfg: Config, device: str):
    path = cfg.model_path or None if cfg.model == "path" else None
    model, tok = load_lm(cfg.model, model_path=path, device=device,
                         tiny=dict(seed=cfg.seed, num_layers=2))
    if tok is None:
        return model, ByteTokenizer()
    return model.eval(), tok


def _encode(tok, text: str) -> np.ndarray:
    if isinstance(tok, ByteTokenizer):
        return np.asarray(tok.encode(text), dtype=np.int64)
    return np.asarray(tok(text)["input_ids"], dtype=np.int64)


def _texts(tok, cfg: Config):
    """Token streams of the calibration pool (first 90%) and the held-out tail."""
    text = pydoc_topics_text()
    cut = int(0.9 * len(text))
    need = 8 * max(cfg.num_calib * cfg.calib_len, 20_000)  # characters, ~4 per token
    pool = _encode(tok, text[: min(cut, need)])
    held = _encode(tok, text[cut : cut + 8 * cfg.num_eval * cfg.eval_len])
    if len(held) < cfg.num_eval * cfg.eval_len or len(pool) <= cfg.calib_len:
        raise ValueError("num_eval/eval_len/calib_len: more tokens than the text holds")
    return pool, held


def _calib_ids(pool, cfg: Config, s: int, device: str) -> torch.Tensor:
    rng = np.random.default_rng([cfg.seed, s])
    starts = rng.integers(0, len(pool) - cfg.calib_len, size=cfg.num_calib)
    return torch.from_numpy(np.stack([pool[o : o + cfg.calib_len] for o in starts])).to(device)


def _nm_valid(model, layers, sparsity) -> float:
    _, nm = parse_sparsity(sparsity)
    if nm is None:
        return 1.0
    n, m = nm
    ok = []
    for i in layers:
        for lin in block_linears(decoder_layers(model)[i]).values():
            nz = (lin.weight != 0).reshape(lin.out_features, -1, m).sum(2)
            ok.append(bool((nz <= n).all()))
    return float(all(ok))


def _reading(reading: str) -> dict:
    """The settings a readings-diagnostic unit overrides (``"pairing=random"``, ``"lam=5.0"``,
    ``"q=0.5"``; ``""``: none)."""
    if not reading:
        return {}
    key, value = reading.split("=")
    return {"pairing": value} if key == "pairing" else {
        {"lam": "lam", "q": "top_frac"}[key]: float(value)}


def _reading_sparsity(cfg: Config) -> str | None:
    """The sparsity of the readings diagnostic: 0.7 when run, else the highest fraction."""
    fractions = [sp for sp in cfg.sparsities if parse_sparsity(sp)[1] is None]
    if not fractions:
        return None
    return "0.7" if "0.7" in fractions else max(fractions, key=lambda sp: float(sp))


def _readings(cfg: Config) -> list[tuple[str, str]]:
    """``(method, reading)`` of the readings diagnostic: every inferred choice of the
    difference methods varied one at a time (the defaults are the main runs)."""
    out = [("wisp", f"pairing={p}") for p in ("knn", "random", "adjacent") if p != cfg.pairing]
    out += [("wisp_plus", f"q={q}") for q in cfg.readings_q if q != cfg.top_frac]
    out += [("whisper", f"lam={lam}") for lam in cfg.readings_lam if lam != cfg.lam]
    return [(m, r) for m, r in out if m in cfg.methods]


def _measure(model, cap, ev, cfg, s, method, sparsity, projections, layers,
             reading: str = "") -> dict:
    kw = {"pairing": cfg.pairing, "lam": cfg.lam, "top_frac": cfg.top_frac, **_reading(reading)}
    rep = prune_model(model, cap, method=method, sparsity=sparsity, projections=projections,
                      block_size=cfg.block_size, seed=s, diagnostics=True, **kw)  # fmt: skip
    target, _ = parse_sparsity(sparsity)
    blocks = decoder_layers(model)
    num = sum(lin.weight.numel() for i in layers
              for lin in block_linears(blocks[i], projections).values())  # fmt: skip
    return {
        "ppl": block_perplexity(model, ev), "recon_error": rep.mean("recon_error"),
        "diff_error": rep.mean("diff_error", ("gate", "up") if "gate" in projections
                               else projections),
        "sparsity_error": max(abs(r.sparsity - target) for r in rep.layers),
        "nm_valid": _nm_valid(model, layers, sparsity), "seconds": rep.wall_seconds,
        "num_weights": num,
    }  # fmt: skip


def _ratio(main, a: str, b: str, sp: str, seeds: int) -> Estimate:
    """Geometric mean over calibration sets of ppl(a) / ppl(b) at sparsity ``sp``, with a
    Student-t interval on the log scale (magnitude pruning needs no calibration: its one
    run is every set's denominator)."""
    by = {(r["seed"], r["method"]): r["ppl"] for r in main if r["sparsity"] == sp}
    vals = [by[(s, a)] / by[(s if b != "magnitude" else 0, b)] for s in range(seeds)
            if (s, a) in by and (s if b != "magnitude" else 0, b) in by]  # fmt: skip
    if not vals:
        return Estimate.missing(f"{a} or {b} not run at sparsity {sp}")
    return ratio_t_interval(vals, unit="calibration sets")


def _mean_t(vals, reason: str) -> Estimate:
    return t_interval(vals, unit="calibration sets") if vals else Estimate.missing(reason)


ALL = "+".join(PROJECTIONS)


def _checks(model, cap, cfg, layers, ev, dense_ppl, ids, device) -> dict:
    out = {}
    # block perplexity from the captured states equals the full model's (window by window)
    logs = [np.log(perplexity(model, row, window=len(row), device=device))
            for row in ids.cpu()]  # fmt: skip
    full = float(np.exp(np.mean(logs)))
    out["check_block_ppl_error"] = abs(dense_ppl - full) / full
    # Whisper with lam -> inf selects SparseGPT's mask on a real layer's inputs
    blk = decoder_layers(model)[layers[0]]
    lin = block_linears(blk, ("up",))["up"]
    seen = {}
    h = lin.register_forward_hook(lambda mod, a, o: seen.update(x=a[0].detach()))
    with torch.no_grad():
        blk(cap.hidden, **cap.kwargs[layers[0]])
    h.remove()
    X = seen["x"].reshape(-1, lin.in_features).double()
    W = lin.weight.detach().double()
    a = prune_linear(W, X, method="whisper", sparsity=0.5, lam=1e8, block_size=cfg.block_size)
    b = prune_linear(W, X, method="sparsegpt", sparsity=0.5, block_size=cfg.block_size)
    out["check_whisper_lam_limit"] = float((a.mask == b.mask).float().mean())
    return out


@dataclass
class State:
    cfg: Config
    model: torch.nn.Module
    pool: np.ndarray
    ids: torch.Tensor
    ev: object
    dense_ppl: float
    dense: dict
    layers: list
    start: int
    caps: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)

    def restore(self) -> None:
        with torch.no_grad():
            for n, p in self.model.named_parameters():
                if n in self.dense:
                    p.copy_(self.dense[n])


class WispExperiment(Experiment):
    Config, TIERS, METRICS = Config, TIERS, METRICS
    VOLATILE = ("prune_seconds_*",)
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "ppl": "Held-out perplexity of each method against sparsity, unstructured and N:M "
               "(the paper's perplexity tables): the geometric mean over calibration sets, "
               "with bars of its 95% Student-t interval on the log scale (n = the run's "
               "calibration sets)."}

    def setup(self, cfg: Config, ctx) -> State:
        for sp in cfg.sparsities:
            parse_sparsity(sp)
        model, tok = _load(cfg, ctx.device)
        n_layers = len(decoder_layers(model))
        k = cfg.num_pruned_layers or n_layers
        if k > n_layers:
            raise ValueError(f"num_pruned_layers: {k} > the model's {n_layers} blocks")
        start = n_layers - k
        layers = list(range(start, n_layers))
        pool, held = _texts(tok, cfg)
        ids = torch.from_numpy(held[: cfg.num_eval * cfg.eval_len].reshape(cfg.num_eval, -1))
        ids = ids.to(ctx.device)
        ev = capture_block_inputs(model, ids, start=start)
        dense_ppl = block_perplexity(model, ev)
        dense = {n: p.detach().clone() for n, p in model.named_parameters()
                 if any(f".{i}." in n for i in layers)}  # fmt: skip
        return State(cfg, model, pool, ids, ev, dense_ppl, dense, layers, start)

    def grid(self, cfg: Config):
        jobs = []
        for s in range(cfg.num_seeds):
            for sp in cfg.sparsities:
                for meth in cfg.methods:
                    if meth != "magnitude" or s == 0:
                        jobs.append({"seed": s, "method": meth, "sparsity": sp,
                                     "projections": ALL})
            if cfg.sensitivity and {"0.7"} <= set(cfg.sparsities) and "wanda" in cfg.methods:
                for projs in (("gate", "up"), ATTENTION):
                    jobs.append({"seed": s, "method": "wanda", "sparsity": "0.7",
                                 "projections": "+".join(projs)})
            sp_r = _reading_sparsity(cfg)
            if cfg.readings and sp_r is not None:
                jobs += [{"seed": s, "method": m, "sparsity": sp_r, "projections": ALL,
                          "reading": r} for m, r in _readings(cfg)]
        # after every pruned model: the dense weights must be back exactly
        return [*jobs, {"seed": -1, "method": "checks", "sparsity": "", "projections": ""}]

    def measure(self, unit, st: State, ctx) -> dict:
        cfg, s = st.cfg, unit["seed"]
        if unit["method"] == "checks":
            ppl = block_perplexity(st.model, st.ev)
            return {**st.checks, "ppl_dense": st.dense_ppl,
                    "check_dense_restored": abs(ppl - st.dense_ppl) / st.dense_ppl}
        if s not in st.caps:
            st.caps = {s: capture_block_inputs(st.model, _calib_ids(st.pool, cfg, s,
                                                                     ctx.device),
                                               start=st.start)}  # fmt: skip
            if s == 0:
                st.checks = _checks(st.model, st.caps[s], cfg, st.layers, st.ev, st.dense_ppl,
                                    st.ids, ctx.device)  # fmt: skip
        try:
            return {"reading": unit.get("reading", ""), **_measure(
                st.model, st.caps[s], st.ev, cfg, s, unit["method"], unit["sparsity"],
                tuple(unit["projections"].split("+")), st.layers, unit.get("reading", ""))}
        finally:
            st.restore()

    def summarize(self, t, cfg: Config, ctx) -> dict:
        checks = t.where(method="checks").rows[0]
        return _summarize(t.where(lambda r: r["method"] != "checks").rows, cfg, checks)

    def tables(self, t, summary, cfg) -> dict:
        return {"runs": [{k: r[k] for k in ("seed", "method", "sparsity", "projections",
                                           "reading", "ppl", "recon_error", "diff_error")}
                         for r in t if r["method"] != "checks"]}

    def figures(self, t, summary, cfg) -> dict:
        main = [r for r in t if r["method"] != "checks" and r["projections"] == ALL
                and not r["reading"]]
        return {"ppl": _figure(main, cfg, summary["ppl_dense"])}

    def notes(self, t, summary, cfg) -> tuple[str, ...]:
        n = len(t) - 1
        return (f"{n} pruned models; top {cfg.num_pruned_layers or 'all'} blocks pruned",)


def _summarize(runs, cfg, checks) -> dict:
    m: dict = {"ppl_dense": checks["ppl_dense"]}
    dense_ppl = checks["ppl_dense"]
    main = [r for r in runs if r["projections"] == ALL and not r["reading"]]
    for meth in cfg.methods:
        for sp in cfg.sparsities:
            sel = [r for r in main if r["method"] == meth and r["sparsity"] == sp]
            lb = sparsity_label(sp)
            m[f"ppl_{meth}_{lb}"] = float(np.mean([r["ppl"] for r in sel]))
            m[f"diff_error_{meth}_{lb}"] = float(np.mean([r["diff_error"] for r in sel]))
            m[f"recon_error_{meth}_{lb}"] = float(np.mean([r["recon_error"] for r in sel]))
            m[f"prune_seconds_{meth}_{lb}"] = float(np.mean([r["seconds"] for r in sel]))
    labels = {sparsity_label(sp): sp for sp in cfg.sparsities}
    for lb in LABELS:
        sp = labels.get(lb)
        for a, b in (("wisp", "wanda"), ("whisper", "sparsegpt"), ("wisp_act", "wanda")):
            key = f"ratio_{a}_{b}_{lb}"
            if a not in cfg.methods or b not in cfg.methods:
                m[key] = Estimate.missing(f"{a} or {b} not in methods")
                continue
            m[key] = (Estimate.missing(f"sparsity {lb} not run at this tier") if sp is None
                      else _ratio(main, a, b, sp, cfg.num_seeds))
    both = "needs sparsities 0.5 and 0.7 with wisp and wanda"
    m["ratio_wisp_plus_wisp_70"] = (_ratio(main, "wisp_plus", "wisp", labels["70"],
                                           cfg.num_seeds) if "70" in labels
                                    else Estimate.missing(both))  # fmt: skip
    # Claim 3: relative gain of Wisp over Wanda at 70% minus at 50%, per seed.
    by = {(r["seed"], r["method"], r["sparsity"]): r["ppl"] for r in main}
    gains = [(1 - by[(s, "wisp", labels["70"])] / by[(s, "wanda", labels["70"])])
             - (1 - by[(s, "wisp", labels["50"])] / by[(s, "wanda", labels["50"])])
             for s in range(cfg.num_seeds)
             if "70" in labels and "50" in labels and (s, "wisp", labels["70"]) in by
             and (s, "wanda", labels["50"]) in by]  # fmt: skip
    m["gain_growth"] = _mean_t(gains, both)
    m.update(_summarize_readings(runs, main, cfg))
    sens = {(r["seed"], r["projections"]): r for r in runs if r["projections"] != ALL}
    att = "+".join(ATTENTION)
    diffs, per_weight = [], []
    for s in range(cfg.num_seeds):
        if (s, "gate+up") not in sens or (s, att) not in sens:
            continue
        gu, at = sens[(s, "gate+up")], sens[(s, att)]
        diffs.append((gu["ppl"] - at["ppl"]) / dense_ppl)
        # Per pruned weight: gate+up hold more weights than attention (2x in SmolLM2), so
        # the claim compares the log-perplexity rise per million pruned weights.
        per_weight.append(math.log(gu["ppl"] / dense_ppl) / gu["num_weights"] * 1e6
                          - math.log(at["ppl"] / dense_ppl) / at["num_weights"] * 1e6)
    why = "needs sparsity 0.7, wanda, sensitivity"
    m["sensitivity_gateup_minus_attn_70"] = _mean_t(diffs, why)
    m["sensitivity_per_weight_gateup_minus_attn_70"] = _mean_t(per_weight, why)
    if "magnitude" in cfg.methods and "50" in labels:
        for a in ("wanda", "sparsegpt"):
            m[f"ratio_{a}_magnitude_50"] = _ratio(main, a, "magnitude", labels["50"],
                                                  cfg.num_seeds)
    else:
        m["ratio_wanda_magnitude_50"] = m["ratio_sparsegpt_magnitude_50"] = Estimate.missing(
            "needs magnitude pruning at 50%")
    m["check_sparsity_error"] = float(max(r["sparsity_error"] for r in runs))
    m["check_nm_valid"] = float(min(r["nm_valid"] for r in runs))
    for k in ("check_block_ppl_error", "check_whisper_lam_limit", "check_dense_restored"):
        m[k] = checks[k]
    return m


def _label(reading: str) -> str:
    return reading.replace("=", "_").replace(".", "p")


def _summarize_readings(runs, main, cfg: Config) -> dict:
    """Each reading's perplexity ratio to the method's baseline at the readings sparsity
    (Wisp and Wisp+ to Wanda, Whisper to SparseGPT; paired by calibration set), and per
    method the best of its readings, the default included."""
    m: dict = {}
    sp = _reading_sparsity(cfg)
    readings = _readings(cfg) if cfg.readings and sp is not None else []
    base_of = {"wisp": "wanda", "wisp_plus": "wanda", "whisper": "sparsegpt"}
    why = "the readings diagnostic is off at this tier (readings) or its sparsity is not run"
    best: dict[str, list] = {meth: [] for meth in base_of}
    for meth, base in base_of.items():
        if sp is not None and meth in cfg.methods and base in cfg.methods:
            best[meth].append(_ratio(main, meth, base, sp, cfg.num_seeds))
    for meth, reading in readings:
        base = base_of[meth]
        rows = [r for r in runs if r["reading"] == reading and r["method"] == meth]
        rows += [r for r in main if r["method"] == base]
        key = f"reading_ratio_{meth}_{_label(reading)}_{base}"
        m[key] = (_ratio(rows, meth, base, sp, cfg.num_seeds) if base in cfg.methods
                  else Estimate.missing(f"{base} not in methods"))
        best[meth].append(m[key])
    for meth, base in base_of.items():
        ok = [e for e in best[meth] if np.isfinite(e.value)]
        m[f"reading_best_ratio_{meth}_{base}"] = (min(ok, key=lambda e: e.value) if ok
                                                  else Estimate.missing(why))
    return m


def _figure(rows, cfg, dense_ppl) -> bytes:
    fig, (ax,) = new_figure(width=6.5)
    sps = list(cfg.sparsities)
    xs = np.arange(len(sps))
    shift = 0.3 / max(1, len(cfg.methods))  # methods side by side, so the bars stay apart
    for i, meth in enumerate(cfg.methods):
        est = [log_t_interval([r["ppl"] for r in rows
                               if r["method"] == meth and r["sparsity"] == sp],
                              unit="calibration sets") for sp in sps]  # fmt: skip
        ys = np.array([e.value for e in est])
        # the interval of the geometric mean (none, so no bar, from one calibration set)
        err = np.array([[e.value - e.lo, e.hi - e.value] if np.isfinite([e.lo, e.hi]).all()
                        else [0.0, 0.0] for e in est]).T  # fmt: skip
        ax.errorbar(xs + (i - (len(cfg.methods) - 1) / 2) * shift, ys, yerr=err, marker="o",
                    capsize=3, label=meth)
    ax.axhline(dense_ppl, color="k", lw=0.8, ls="--", label="dense")
    ax.set_xticks(xs, sps)
    ax.set_yscale("log")
    ax.set_xlabel("sparsity")
    ax.set_ylabel("held-out perplexity")
    ax.legend(fontsize=7)
    return figure_png(fig)


EXPERIMENT = WispExperiment()
run = EXPERIMENT.run
