"""Reproduction of QC-A2S on SmolLM2-135M: perplexity against time steps T.

The MLP activations of every decoder layer of SmolLM2-135M-Instruct (the inputs of
``gate_proj``/``up_proj`` and of ``down_proj``: 60 spiking stages) are carried by discrete
TTFS neurons. For each seed, calibration sequences come from the first half of the
standard library's documentation (``pydoc_data.topics``) and evaluation windows from the
second half (held out). Two streamed float passes give the calibration statistics (each
channel's maximum, then a histogram of every value), reused for every ``T``. We measure
held-out perplexity of the float model and of conversions at every ``T`` of the sweep:
QC-A2S (SmoothQuant migration, MSE clips over every calibration token, discretization-
compatible neurons) and QC-A2S without calibration (max clip) on every seed, QC-A2S with
the naive floor neuron and the continuous-time baseline (max clip, floor, no smoothing)
on seed 0. At the claim's ``T`` every seed also runs the floor ablation and a calibration
diagnostic (``qcsub``: the clip searched on a uniform subsample of the values only, the
earlier reading). The perplexity gap ``ppl / float ppl - 1`` is the geometric mean of the
per-seed ratio minus one, with a 95% Student-t interval over seeds on the log scale (a
perplexity blow-up is heavy-tailed: a symmetric interval of three blown-up ratios reaches
below zero); the ablation differences are paired t intervals over seeds. The T at which
"low latency" holds is measured as ``qc_within_steps``: the smallest T of the sweep whose
gap interval lies within 3% (``nocalib_within_steps`` for the max clip, its control). The
spiking simulation is run event by event on a few sequences at several ``T`` and
compared with the fake-quantized ANN (logits) and with the closed form of the static
quantizer (levels on the calibration activations).

Deviations from the paper
-------------------------
- Model and data: SmolLM2-135M-Instruct (the one pretrained LLM available offline)
  instead of the paper's LLaMA-class models and benchmarks; perplexity on held-out
  standard-library documentation in short windows (64 tokens at the small tier, to fit
  2 CPU cores) instead of WikiText / zero-shot tasks.
- Scope of spiking: the MLP linears' inputs (``targets="mlp"``, the issue's scope);
  ``targets="all"`` adds the attention projections. RMSNorm, softmax, SiLU, residual
  additions and the attention products stay in floating point; weights stay float.
- The discretization-compatible neuron is our reading: an initial membrane offset of half
  a step, ``b0 = theta / (2T)``, which makes the neuron a round-half-up quantizer.
  Signed activations use a pair of neurons of opposite polarity.
- Calibration: per-tensor MSE clip over every calibration token, read from a streamed
  log-binned histogram (32 bins per octave) of ``|X_j / s_j|``; the candidates are the
  histogram's 90-100th percentiles and every channel's streamed maximum. SmoothQuant
  migration (alpha 0.5) is applied as per-neuron thresholds ``theta s_j``. No
  quantization-aware fine-tuning.
- Latency is counted as ``T`` steps per spiking stage (layer-pipelined windows), end to
  end ``T x 60``; wall time of the CPU simulation is not a claim.
- Uncertainty: a seed draws calibration and evaluation windows; QC-A2S and the max clip
  are swept over ``T`` on every seed (5 at the small tier), the floor and continuous
  arms on seed 0 only (``gap_*_t*`` are seed 0's values, ``gapci_*_t*`` the intervals).
- The smoke tier runs a random 2-layer LLaMA-layout model (``tiny_causal_lm``) on byte
  tokens: only the equivalence and spike checks are meaningful there.

Calibration diagnostic
----------------------
- ``calib_subsample_max_share`` (median over sites of a uniform subsample's largest
  |value| over the site's true largest input) measures how much of the range a
  subsample sees; ``qcsub_gap`` is QC-A2S at the claim's T with its clip searched on
  that subsample, beside ``qc_gap`` (every token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from neurips26.common.data.text import ByteTokenizer, pydoc_topics_text
from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment

from . import (
    QCA2S,
    calibration_stats,
    closed_form_levels,
    convert_continuous_baseline,
    near_tie,
    restore,
    spike_statistics,
    ttfs_encode,
)
from .convert import TARGETS

#: "Within 3% of the float model's perplexity" (the spec's reading of low latency).
WITHIN = 0.03
#: Arms of the T sweep on seed 0.
METHODS = ("qc", "nocalib", "floor", "cont")
#: Arms swept over every T on every seed (each T's gap gets a seed interval).
SEED_SWEEP = ("qc", "nocalib")
#: Arms repeated on every seed at the claim's T: QC-A2S, its two ablations and the
#: calibration diagnostic (QC-A2S with its clip searched on a uniform subsample only).
CLAIM_ARMS = ("qc", "nocalib", "floor", "qcsub")
#: Calibration values per site simulated against the closed form (a uniform subsample).
EQUIV_VALUES = 4096


@dataclass(frozen=True)
class Config:
    seed: int = 0
    model: str = param("smollm2", help="tiny (random LLaMA layout, smoke) or smollm2",
                       choices=("tiny", "smollm2"))  # fmt: skip
    model_path: str = param("", help="a local Hugging Face checkpoint folder (overrides model)")
    targets: str = param("mlp", help="spike the MLP inputs or every block linear",
                         choices=TARGETS)  # fmt: skip
    steps: tuple[int, ...] = param((4, 8, 16, 32, 64, 256, 1024), help="T of the sweep",
                                   min=1, max=65536)  # fmt: skip
    extra_continuous_steps: tuple[int, ...] = param(
        (4096,), help="extra T for the continuous baseline only", min=1, max=65536,
        allow_empty=True)  # fmt: skip
    claim_steps: int = param(16, help="T of the latency and ablation claims", min=1,
                             max=65536)  # fmt: skip
    num_seeds: int = param(5, help="calibration/evaluation draws at claim_steps", min=1,
                           max=100)  # fmt: skip
    num_calib: int = param(8, help="calibration sequences", min=1, max=4096)
    calib_len: int = param(64, help="tokens per calibration sequence", min=2, max=8192)
    num_eval: int = param(6, help="held-out evaluation windows", min=1, max=4096)
    eval_len: int = param(64, help="tokens per evaluation window", min=2, max=8192)
    smooth_alpha: float = param(0.5, help="SmoothQuant migration strength", min=0.0, max=1.0)
    max_samples: int = param(32768, help="calibration values kept per site", min=16,
                             max=10**7)  # fmt: skip
    equiv_steps: tuple[int, ...] = param((4, 16, 64), help="T of the SNN simulation",
                                         min=1, max=65536)  # fmt: skip
    num_equiv: int = param(2, help="sequences simulated as an SNN", min=1, max=64)
    equiv_len: int = param(16, help="tokens per simulated sequence", min=2, max=512)
    text_chars: int = param(60000, help="characters of each half of the text tokenized",
                            min=1000, max=10**7)  # fmt: skip


TIERS = {
    "smoke": Config(model="tiny", steps=(4, 16), extra_continuous_steps=(64,),
                    num_seeds=2, num_calib=4, calib_len=32, num_eval=4, eval_len=32,
                    max_samples=4096, equiv_steps=(1, 4, 16), num_equiv=2, equiv_len=8,
                    text_chars=4000),
    "small": Config(),
    "paper": Config(targets="all", steps=(2, 4, 8, 16, 32, 64, 128, 256, 1024),
                    extra_continuous_steps=(4096,), num_seeds=5, num_calib=64, calib_len=512,
                    num_eval=64, eval_len=512, max_samples=262144,
                    equiv_steps=(4, 16, 64, 256, 1024), num_equiv=8, equiv_len=64,
                    text_chars=400000),
}

METRICS = (
    "float_ppl", "ppl_*_t*", "gap_*_t*",
    "qc_gap", "nocalib_gap", "nocalib_minus_qc", "floor_minus_qc", "cont_gap",
    "calib_subsample_max_share", "qcsub_gap", "gapci_*_t*",
    "qc_within_steps", "nocalib_within_steps",
    "qc_min_steps", "cont_min_steps", "cont_over_qc_steps",
    "qc_latency_steps", "cont_latency_steps", "num_stages",
    "snn_ann_max_abs_diff", "closed_form_mismatch", "closed_form_ties",
    "max_spikes_per_neuron", "spikes_per_neuron", "sops_per_mac",
)  # fmt: skip


def _load(cfg: Config, device: str):
    """The model and a text -> token ids function."""
    from neurips26.common.models.llm import load_lm

    model, tok = load_lm(cfg.model, model_path=cfg.model_path or None, device=device,
                         tiny=dict(seed=0))
    if tok is None:
        return model, ByteTokenizer().encode
    return model, lambda text: np.asarray(tok(text)["input_ids"], dtype=np.int64)


def _texts(cfg: Config, encode):
    """Token streams of the calibration half and the held-out half of the documentation."""
    text = pydoc_topics_text()
    half = len(text) // 2
    return encode(text[:half][: cfg.text_chars]), encode(text[half:][: cfg.text_chars])


def _windows(stream: np.ndarray, num: int, length: int, rng) -> torch.Tensor:
    """``num`` non-overlapping windows of ``length`` tokens at random offsets."""
    slots = len(stream) // length
    if slots < num:
        raise ValueError(f"text: {len(stream)} tokens hold fewer than {num} windows of "
                         f"{length}; raise text_chars")  # fmt: skip
    pick = np.sort(rng.choice(slots, size=num, replace=False))
    return torch.as_tensor(np.stack([stream[i * length : (i + 1) * length] for i in pick]))


@torch.no_grad()
def _window_nll(model, windows: torch.Tensor, device: str, batch: int = 8) -> np.ndarray:
    """Summed next-token NLL of each window (its first token is context only)."""
    out = []
    for i in range(0, len(windows), batch):
        ids = windows[i : i + batch].to(device)
        logits = model(input_ids=ids).logits.float()
        logp = torch.log_softmax(logits[:, :-1], -1).gather(2, ids[:, 1:, None])[..., 0]
        out.append(-logp.sum(1).cpu().double().numpy())
    return np.concatenate(out)


def _convert(model, method: str, stats, steps: int, cfg: Config):
    if method == "cont":
        return convert_continuous_baseline(model, stats, num_steps=steps, targets=cfg.targets)
    clip = {"nocalib": "max", "qcsub": "mse_subsample"}.get(method, "mse")
    est = QCA2S(num_steps=steps, smooth_alpha=cfg.smooth_alpha, targets=cfg.targets,
                clip=clip,
                compatible=method != "floor", max_samples=cfg.max_samples)  # fmt: skip
    return est.fit(model, stats).result_


def _ppl(nll_sum: np.ndarray, tokens: int) -> float:
    return float(math.exp(nll_sum.sum() / tokens))


def _sweep(cfg: Config, s: int):
    """(method, T) pairs evaluated for seed index ``s``."""
    grid = list(dict.fromkeys((*cfg.steps, cfg.claim_steps)))
    swept = METHODS if s == 0 else SEED_SWEEP
    pairs = [(m, t) for m in swept for t in grid]
    if s == 0:
        pairs += [("cont", t) for t in cfg.extra_continuous_steps if t not in grid]
    return pairs + [(m, cfg.claim_steps) for m in CLAIM_ARMS if m not in swept]


def _equivalence(model, stats, windows, cfg: Config) -> dict:
    """SNN simulation against the fake-quantized ANN (logits) and the closed form (levels)."""
    worst, mismatch, ties, total, most = 0.0, 0, 0, 0, 0
    for steps in cfg.equiv_steps:
        for method in ("qc", "cont"):
            res = _convert(model, method, stats, steps, cfg)
            with torch.no_grad():
                res.set_mode("ann")
                ann = model(input_ids=windows).logits
                res.set_mode("snn")
                spike_statistics(model, reset=True)
                snn = model(input_ids=windows).logits
                most = max(most, spike_statistics(model, reset=True).max_spikes_per_neuron)
                res.set_mode("ann")
            worst = max(worst, float((ann.double() - snn.double()).abs().max()))
            for site, st in stats.stats.items():  # the neurons on real activations
                vals, chans = st.values[:EQUIV_VALUES], st.channels[:EQUIV_VALUES]
                th = res.thetas[site]
                th = th[chans] if th.ndim else th
                spikes = ttfs_encode(vals, theta=th, num_steps=steps, compatible=res.compatible)
                level = (torch.where(spikes.times >= 0, steps - spikes.times, 0)
                         * spikes.polarity).numpy()  # fmt: skip
                ref = closed_form_levels(vals, theta=th, num_steps=steps,
                                         compatible=res.compatible)  # fmt: skip
                tie = near_tie(vals, theta=th, num_steps=steps, compatible=res.compatible)
                mismatch += int(((level != ref) & ~tie).sum())
                ties += int(tie.sum())
                total += int((~tie).sum())
    return {"snn_ann_max_abs_diff": worst, "closed_form_mismatch": mismatch / max(total, 1),
            "closed_form_ties": ties, "max_spikes_per_neuron": most}  # fmt: skip


def _subsample_max_share(stats) -> float:
    """Median over sites of the calibration subsample's largest |value| over the site's
    true largest |input| (streamed over every calibration token): below 1 when the
    subsample the clip candidates come from misses the massive activations."""
    shares = [float(st.values.abs().max()) / max(float(st.absmax.max()), 1e-30)
              for st in stats.stats.values()]
    return float(np.median(shares))


def _measure_seed(model, streams, cfg: Config, s: int, device: str) -> list[dict]:
    """Float perplexity and every (method, T) of seed index ``s``'s sweep; at seed 0 also
    the SNN equivalence, the spike statistics and the calibration diagnostic."""
    calib_stream, eval_stream = streams
    rng = np.random.default_rng([cfg.seed, s])
    calib = _windows(calib_stream, cfg.num_calib, cfg.calib_len, rng)
    evalw = _windows(eval_stream, cfg.num_eval, cfg.eval_len, rng)
    tokens = evalw.shape[0] * (evalw.shape[1] - 1)
    restore(model)
    base = _ppl(_window_nll(model, evalw, device), tokens)
    stats = calibration_stats(model, calib, targets=cfg.targets, max_samples=cfg.max_samples,
                              seed=cfg.seed * 1000 + s, smooth_alpha=cfg.smooth_alpha)
    rows = [{"method": "float", "steps": 0, "ppl": base, "gap": 0.0, "latency_steps": 0}]
    spikes = None
    for method, steps in _sweep(cfg, s):
        res = _convert(model, method, stats, steps, cfg)
        spike_statistics(model, reset=True)
        ppl = _ppl(_window_nll(model, evalw, device), tokens)
        if s == 0 and method == "qc" and steps == cfg.claim_steps:
            spikes = spike_statistics(model)
        rows.append({"method": method, "steps": steps, "ppl": ppl, "gap": ppl / base - 1,
                     "latency_steps": res.latency_steps})
    if s == 0:
        eq_rng = np.random.default_rng([cfg.seed, 10**6])
        eq = _windows(eval_stream, cfg.num_equiv, cfg.equiv_len, eq_rng).to(device)
        rows.append({"method": "checks", **_equivalence(model, stats, eq, cfg),
                     "num_stages": res.num_stages,
                     "spikes_per_neuron": spikes.spikes_per_neuron,
                     "sops_per_mac": spikes.sops_per_mac,
                     "calib_subsample_max_share": _subsample_max_share(stats)})
    return rows


def _gap(t, method: str, steps: int):
    """Geometric mean over seeds of ``ppl / float ppl``, minus 1, with its Student-t
    interval on the log scale (a perplexity blow-up is heavy-tailed)."""
    e = t.paired_ratio("ppl", {"method": method, "steps": steps}, {"method": "float"})
    return e.map(lambda x: x - 1.0)


def _within_steps(t, method: str, grid) -> tuple[float, dict]:
    """The smallest T of ``grid`` whose gap interval over seeds (:func:`_gap`) lies within
    :data:`WITHIN` (its upper end), ``inf`` if none; and each T's gap estimate."""
    gaps = {steps: _gap(t, method, steps) for steps in grid}
    ok = [steps for steps, e in gaps.items() if e.hi <= WITHIN]
    return (float(min(ok)) if ok else math.inf), gaps


class QCA2SExperiment(Experiment):
    Config, TIERS, METRICS = Config, TIERS, METRICS
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "ppl_vs_T": "Held-out perplexity against time steps T per spiking stage (seed 0): "
                    "QC-A2S, its two ablations (max clip; floor neuron) and continuous-time "
                    "TTFS conversion, against the float model (the paper's latency "
                    "comparison)."}

    def setup(self, cfg: Config, ctx):
        model, encode = _load(cfg, ctx.device)
        return cfg, model, _texts(cfg, encode)

    def grid(self, cfg: Config):
        return [{"seed": s} for s in range(cfg.num_seeds)]

    def measure(self, unit, state, ctx) -> list[dict]:
        cfg, model, streams = state
        try:
            return _measure_seed(model, streams, cfg, unit["seed"], ctx.device)
        finally:
            restore(model)  # the float model again for the next unit and the caller

    def summarize(self, t, cfg: Config, ctx) -> dict:
        checks = t.where(method="checks").rows[0]
        m: dict = {k: checks[k] for k in (
            "snn_ann_max_abs_diff", "closed_form_mismatch", "closed_form_ties",
            "max_spikes_per_neuron", "num_stages", "spikes_per_neuron", "sops_per_mac",
            "calib_subsample_max_share")}
        seed0 = [r for r in t.where(seed=0) if r["method"] not in ("float", "checks")]
        m["float_ppl"] = t.where(seed=0, method="float").rows[0]["ppl"]
        for r in seed0:
            m[f"ppl_{r['method']}_t{r['steps']}"] = r["ppl"]
            m[f"gap_{r['method']}_t{r['steps']}"] = r["gap"]

        def first_within(method):
            ok = sorted(r["steps"] for r in seed0 if r["method"] == method and r["gap"] <= WITHIN)
            return ok[0] if ok else None

        qc_min, cont_min = first_within("qc"), first_within("cont")
        grid = sorted(set(cfg.steps) | {cfg.claim_steps})
        for meth in SEED_SWEEP:  # each T's gap over every seed, and the first T within
            m[f"{meth}_within_steps"], gaps = _within_steps(t, meth, grid)
            m.update({f"gapci_{meth}_t{k}": e for k, e in gaps.items()})
        why = f"QC-A2S is not within {WITHIN:.0%} at any T of the sweep"
        if qc_min:
            m["qc_min_steps"] = float(qc_min)
            m["cont_min_steps"] = float(cont_min) if cont_min else math.inf
            m["cont_over_qc_steps"] = m["cont_min_steps"] / m["qc_min_steps"]
            m["qc_latency_steps"] = m["qc_min_steps"] * m["num_stages"]
        else:
            m["qc_min_steps"] = m["cont_over_qc_steps"] = m["qc_latency_steps"] = (
                Estimate.missing(why))
            m["cont_min_steps"] = float(cont_min) if cont_min else math.inf
        m["cont_latency_steps"] = m["cont_min_steps"] * m["num_stages"]
        cs = cfg.claim_steps
        m["qc_gap"] = _gap(t, "qc", cs)
        m["nocalib_gap"] = _gap(t, "nocalib", cs)  # the control: the max-clip ablation
        m["qcsub_gap"] = _gap(t, "qcsub", cs)  # the calibration diagnostic (subsample)
        m["nocalib_minus_qc"] = t.paired_diff("gap", {"method": "nocalib", "steps": cs},
                                              {"method": "qc", "steps": cs})
        m["floor_minus_qc"] = t.paired_diff("gap", {"method": "floor", "steps": cs},
                                            {"method": "qc", "steps": cs})
        m["cont_gap"] = next(r["gap"] for r in seed0 if r["method"] == "cont"
                             and r["steps"] == cs)  # fmt: skip
        return m

    def tables(self, t, summary, cfg) -> dict:
        return {"perplexity": [{"seed": r["seed"], "method": r["method"], "T": r["steps"],
                                "ppl": r["ppl"], "gap": r["gap"],
                                "latency_steps": r["latency_steps"]}
                               for r in t if r["method"] != "checks"]}

    def figures(self, t, summary, cfg) -> dict:
        return {"ppl_vs_T": _figure([r for r in t if r["method"] != "checks"])}

    def notes(self, t, summary, cfg) -> tuple[str, ...]:
        return (f"{summary['num_stages']} spiking stages; latency = T x stages",)


def _figure(rows: list) -> bytes:
    fig, (ax,) = new_figure(width=6.5)
    base = next(r["ppl"] for r in rows if r["seed"] == 0 and r["method"] == "float")
    labels = {"qc": "QC-A2S", "nocalib": "QC-A2S, max clip", "floor": "QC-A2S, floor neuron",
              "cont": "continuous-time conversion",
              }  # fmt: skip
    for meth, label in labels.items():
        pts = sorted((r["steps"], r["ppl"]) for r in rows
                     if r["seed"] == 0 and r["method"] == meth)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.axhline(base, color="k", lw=1, label="float")
    ax.axhline(base * (1 + WITHIN), color="k", lw=0.8, ls="--", label="float + 3%")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("time steps T per spiking stage")
    ax.set_ylabel("held-out perplexity")
    ax.legend(fontsize=7)
    return figure_png(fig)


EXPERIMENT = QCA2SExperiment()
run = EXPERIMENT.run
