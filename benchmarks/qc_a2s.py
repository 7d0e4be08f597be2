"""QC-A2S against continuous-time TTFS conversion: perplexity gap per T, and latency at equal gap.

In one process, torch pinned to one thread: loads a model (the smoke tier's tiny random
LLaMA layout, or SmolLM2), calibrates once (two streamed passes), and sweeps T for
QC-A2S (MSE clip over every calibration token, the default), QC-A2S with its clip
searched on a uniform subsample (the earlier reading), the max-clip ablation and the
continuous-time baseline. Prints, per method and T, the held-out perplexity, its gap to
the float model, the end-to-end latency (T x spiking stages), spikes per neuron and
synaptic operations per dense MAC. Then, for every T of QC-A2S, the smallest T at which
each other method reaches QC-A2S's gap there and the ratio of the two (latency at equal
gap; ``> x`` when the other method never reaches it on the grid), and the smallest T
within 3% of the float perplexity per method. Each phase prints its wall and CPU
seconds; the last line gives the totals. Time steps are exact counts; the wall and CPU
times are this machine's.

    python benchmarks/qc_a2s.py [--model tiny|smollm2] [--steps 4,8,16,...]
                                [--eval-windows 6] [--eval-len 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from neurips26.papers.qc_a2s import (
    calibration_stats,
    convert_continuous_baseline,
    convert_qc_a2s,
    restore,
    spike_statistics,
)
from neurips26.papers.qc_a2s.experiment import (
    TIERS,
    WITHIN,
    _load,
    _texts,
    _window_nll,
    _windows,
)


class _Clock:
    """Wall and CPU seconds of the phase since the last ``lap``."""

    def __init__(self) -> None:
        self.w, self.c = time.perf_counter(), time.process_time()

    def lap(self, what: str) -> None:
        w, c = time.perf_counter(), time.process_time()
        print(f"  [{what}: wall {w - self.w:.1f} s, CPU {c - self.c:.1f} s]")
        self.w, self.c = w, c


def _equal_gap_steps(gaps: dict[int, float], target: float) -> int | None:
    """The smallest T of ``gaps`` (T -> gap) whose gap is at most ``target``."""
    ok = [t for t, g in sorted(gaps.items()) if g <= target]
    return ok[0] if ok else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--steps", default="4,8,16,32,64,256,1024,4096")
    parser.add_argument("--eval-windows", type=int, default=6)
    parser.add_argument("--eval-len", type=int, default=64)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    clock = _Clock()
    cfg = TIERS["small" if args.model == "smollm2" else "smoke"]
    steps = sorted({int(s) for s in args.steps.split(",")})
    model, encode = _load(cfg, "cpu")
    calib_stream, eval_stream = _texts(cfg, encode)
    rng = np.random.default_rng(0)
    calib = _windows(calib_stream, cfg.num_calib, cfg.calib_len, rng)
    evalw = _windows(eval_stream, args.eval_windows, args.eval_len, rng)
    tokens = evalw.shape[0] * (evalw.shape[1] - 1)
    base = float(np.exp(_window_nll(model, evalw, "cpu").sum() / tokens))
    clock.lap("load and float perplexity")
    stats = calibration_stats(model, calib, max_samples=cfg.max_samples,
                              smooth_alpha=cfg.smooth_alpha)  # fmt: skip
    clock.lap(f"calibration ({stats.num_tokens} tokens, two streamed passes)")
    a = cfg.smooth_alpha
    makers = {
        "QC-A2S": lambda t: convert_qc_a2s(model, stats, num_steps=t, smooth_alpha=a),
        "QC-A2S/sub": lambda t: convert_qc_a2s(model, stats, num_steps=t, smooth_alpha=a,
                                               clip="mse_subsample"),
        "max clip": lambda t: convert_qc_a2s(model, stats, num_steps=t, smooth_alpha=a,
                                             clip="max"),
        "continuous": lambda t: convert_continuous_baseline(model, stats, num_steps=t),
    }  # fmt: skip
    print(f"float perplexity {base:.3f} on {tokens} held-out tokens")
    print(f"{'method':<11} {'T':>5} {'latency':>8} {'ppl':>10} {'gap':>10} {'spk/neuron':>10} "
          f"{'SOP/MAC':>8}")  # fmt: skip
    gaps: dict[str, dict[int, float]] = {name: {} for name in makers}
    for name, make in makers.items():
        for t in steps:
            res = make(t)
            spike_statistics(model, reset=True)
            ppl = float(np.exp(_window_nll(model, evalw, "cpu").sum() / tokens))
            sp = spike_statistics(model, reset=True)
            gaps[name][t] = ppl / base - 1
            print(f"{name:<11} {t:>5} {res.latency_steps:>8} {ppl:>10.3f} "
                  f"{gaps[name][t]:>+10.2%} {sp.spikes_per_neuron:>10.3f} "
                  f"{sp.sops_per_mac:>8.3f}")  # fmt: skip
        clock.lap(f"{name} sweep")
    restore(model)
    print("\nlatency at equal gap: for each T of QC-A2S, the smallest T at which each other "
          "method's gap is at most QC-A2S's there, and the ratio")  # fmt: skip
    others = [n for n in makers if n != "QC-A2S"]
    print(f"{'T':>5} {'QC-A2S gap':>11} " + " ".join(f"{n + ' T (x)':>20}" for n in others))
    for t in steps:
        g = gaps["QC-A2S"][t]
        cells = []
        for n in others:
            m = _equal_gap_steps(gaps[n], g)
            cells.append(f"{m} ({m / t:.3g}x)" if m else f"none (> {steps[-1] / t:.3g}x)")
        print(f"{t:>5} {g:>+11.2%} " + " ".join(f"{c:>20}" for c in cells))
    for name in makers:
        t = _equal_gap_steps(gaps[name], WITHIN)
        print(f"{name}: smallest T within {WITHIN:.0%}: {t if t else f'none up to {steps[-1]}'}")
    first_qc = _equal_gap_steps(gaps["QC-A2S"], WITHIN)
    first_cont = _equal_gap_steps(gaps["continuous"], WITHIN)
    if first_qc:
        ratio = (f"{first_cont / first_qc:.3g}x" if first_cont
                 else f"> {steps[-1] / first_qc:.3g}x")  # fmt: skip
        print(f"time steps to {WITHIN:.0%}, continuous / QC-A2S: {ratio}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
