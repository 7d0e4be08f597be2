"""QC-A2S against continuous-time TTFS conversion: time steps to the float model's quality.

In one process: loads a model (the smoke tier's tiny random LLaMA layout, or SmolLM2),
calibrates once, and sweeps T for QC-A2S and the continuous-time baseline. Prints, per
method and T, the held-out perplexity and its gap to the float model, the end-to-end
latency (T x spiking stages), spikes per neuron and synaptic operations per dense MAC;
then the smallest T within 3% for each method and their ratio (time steps are exact
counts), and the wall time of the step-by-step SNN simulation against the fake-quantized
ANN on one short sequence at those T (measured here: only the ratio is comparable).

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--steps", default="4,8,16,32,64,256,1024,4096")
    parser.add_argument("--eval-windows", type=int, default=6)
    parser.add_argument("--eval-len", type=int, default=64)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TIERS["small" if args.model == "smollm2" else "smoke"]
    steps = [int(s) for s in args.steps.split(",")]
    model, encode = _load(cfg)
    calib_stream, eval_stream = _texts(cfg, encode)
    rng = np.random.default_rng(0)
    calib = _windows(calib_stream, cfg.num_calib, cfg.calib_len, rng)
    evalw = _windows(eval_stream, args.eval_windows, args.eval_len, rng)
    tokens = evalw.shape[0] * (evalw.shape[1] - 1)
    base = float(np.exp(_window_nll(model, evalw, "cpu").sum() / tokens))
    stats = calibration_stats(model, calib, max_samples=cfg.max_samples)
    makers = {"QC-A2S": lambda t: convert_qc_a2s(model, stats, num_steps=t),
              "continuous": lambda t: convert_continuous_baseline(model, stats, num_steps=t)}
    print(f"float perplexity {base:.3f} on {tokens} held-out tokens")
    print(f"{'method':<11} {'T':>5} {'latency':>8} {'ppl':>9} {'gap':>8} {'spk/neuron':>10} "
          f"{'SOP/MAC':>8}")  # fmt: skip
    first = {}
    for name, make in makers.items():
        for t in steps:
            res = make(t)
            spike_statistics(model, reset=True)
            ppl = float(np.exp(_window_nll(model, evalw, "cpu").sum() / tokens))
            sp = spike_statistics(model, reset=True)
            gap = ppl / base - 1
            if gap <= WITHIN and name not in first:
                first[name] = t
            print(f"{name:<11} {t:>5} {res.latency_steps:>8} {ppl:>9.3f} {gap:>+8.2%} "
                  f"{sp.spikes_per_neuron:>10.3f} {sp.sops_per_mac:>8.3f}")  # fmt: skip
    for name in makers:
        t = first.get(name)
        print(f"{name}: smallest T within {WITHIN:.0%}: {t if t else f'none up to {steps[-1]}'}")
    if "QC-A2S" in first:
        c = first.get("continuous")
        ratio = f"{c / first['QC-A2S']:.0f}x" if c else f"> {steps[-1] / first['QC-A2S']:.0f}x"
        print(f"time steps needed, continuous / QC-A2S: {ratio}")
    seq = evalw[:1, :16]
    for name, t in first.items():
        res = makers[name](t)
        walls = {}
        for mode in ("ann", "snn"):
            res.set_mode(mode)
            t0 = time.perf_counter()
            with torch.no_grad():
                model(input_ids=seq)
            walls[mode] = time.perf_counter() - t0
        ratio = walls["snn"] / walls["ann"]
        print(f"{name} at T={t}: SNN simulation {walls['snn']:.2f} s, fake-quantized ANN "
              f"{walls['ann']:.2f} s ({ratio:.0f}x) for 16 tokens")  # fmt: skip
    restore(model)


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
