"""Pruning wall time of Wisp, Wisp+ and Whisper relative to Wanda and SparseGPT.

In one process: loads SmolLM2-135M (or the tiny random LLaMA with ``--model tiny``),
captures the calibration inputs of the top ``--layers`` blocks once, then prunes those
blocks with every method at ``--sparsity`` and times each ``prune_model`` call (the
sequential protocol: the blocks' forward passes, kNN pairing, scores or OBS sweeps).
Prints each method's time and its ratio to Wanda and to SparseGPT (machine-independent
only as ratios), and the held-out perplexity of each pruned model, so the table doubles
as a perplexity-vs-method row at that sparsity (``--sparsity`` may be given repeatedly).

    python benchmarks/wisp.py [--model smollm2|tiny] [--layers 6] [--sparsity 0.5 ...]
                              [--repeats 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from neurips26.common.models.llm import decoder_layers
from neurips26.papers.wisp import METHODS, block_perplexity, capture_block_inputs, prune_model
from neurips26.papers.wisp.experiment import TIERS, _calib_ids, _load, _texts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "tiny"), default="smollm2")
    parser.add_argument("--layers", type=int, default=4, help="top blocks pruned")
    parser.add_argument("--sparsity", action="append", help="e.g. 0.5, 0.7, 2:4")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TIERS["small"] if args.model == "smollm2" else TIERS["smoke"]
    model, tok = _load(cfg)
    n = len(decoder_layers(model))
    start = max(0, n - args.layers)
    pool, held = _texts(tok, cfg)
    cap = capture_block_inputs(model, _calib_ids(pool, cfg, 0), start=start)
    ids = torch.from_numpy(held[: cfg.num_eval * cfg.eval_len].reshape(cfg.num_eval, -1))
    ev = capture_block_inputs(model, ids, start=start)
    dense = {k: v.clone() for k, v in model.state_dict().items()}
    print(f"{n - start} of {n} blocks, {cap.hidden.shape[0]} x {cap.hidden.shape[1]} "
          f"calibration tokens; dense perplexity {block_perplexity(model, ev):.3f}")
    for sp in args.sparsity or ["0.5"]:
        times, ppl = {}, {}
        for meth in METHODS:
            best = float("inf")
            for _ in range(args.repeats):
                model.load_state_dict(dense)
                t0 = time.perf_counter()
                prune_model(model, cap, method=meth, sparsity=sp)
                best = min(best, time.perf_counter() - t0)
            times[meth], ppl[meth] = best, block_perplexity(model, ev)
        model.load_state_dict(dense)
        print(f"\nsparsity {sp}")
        print(f"{'method':>10} {'seconds':>8} {'/wanda':>7} {'/sparsegpt':>10} {'ppl':>9}")
        for meth in METHODS:
            print(f"{meth:>10} {times[meth]:8.2f} {times[meth] / times['wanda']:7.2f} "
                  f"{times[meth] / times['sparsegpt']:10.2f} {ppl[meth]:9.3f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
