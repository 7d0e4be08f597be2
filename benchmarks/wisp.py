"""Pruning wall time of Wisp, Wisp+ and Whisper relative to Wanda and SparseGPT.

In one process: loads SmolLM2-135M (or the tiny random LLaMA with ``--model tiny``),
captures the calibration inputs of the top ``--layers`` blocks once, then prunes those
blocks with every method at ``--sparsity`` and times each ``prune_model`` call (the
sequential protocol: the blocks' forward passes, then what the method itself needs: the
kNN pairing only for the difference methods, scores or OBS sweeps; the diagnostics are
off, so a baseline pays only its own cost). Prints each method's wall and CPU time and
its CPU-time ratio to Wanda and to SparseGPT (machine-independent only as ratios; CPU
time on one pinned thread, so another process's load does not enter them), and the
held-out perplexity of each pruned model, so the table doubles as a perplexity-vs-method
row at that sparsity (``--sparsity`` may be given repeatedly).

A stand-alone lean Wanda (:func:`lean_wanda`: hooks, ``|W| ||X_j||``, top-k; nothing
else) is timed beside it, and its weights are checked bit for bit against
``prune_model(method="wanda")``: the row ``lean_wanda`` shows what the library's
validation and bookkeeping cost a baseline.

    python benchmarks/wisp.py [--model smollm2|tiny] [--layers 6] [--sparsity 0.5 ...]
                              [--repeats 1] [--num-calib 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from neurips26.common.models.llm import decoder_layers
from neurips26.papers.wisp import (
    METHODS,
    block_linears,
    block_perplexity,
    capture_block_inputs,
    prune_model,
)
from neurips26.papers.wisp.experiment import TIERS, _calib_ids, _load, _texts


@torch.no_grad()
def lean_wanda(model, cap, sparsity: float) -> None:
    """Wanda with the sequential protocol and nothing else (float sparsity only)."""
    blocks = decoder_layers(model)
    h = cap.hidden
    for i in range(cap.start, len(blocks)):
        blk, seen = blocks[i], {}
        maps = block_linears(blk)
        hooks = [mod.register_forward_hook(
            lambda mod, a, o, n=n, seen=seen: seen.__setitem__(n, a[0]))
            for n, mod in maps.items()]  # fmt: skip
        blk(h, **cap.kwargs[i])
        for hk in hooks:
            hk.remove()
        for n, mod in maps.items():
            X = seen[n].reshape(-1, mod.in_features)
            S = mod.weight.abs() * X.norm(dim=0)[None]
            k = int(sparsity * mod.in_features + 1e-9)
            low = torch.topk(S, k, dim=1, largest=False, sorted=False).indices
            mod.weight.scatter_(1, low, 0.0)
        out = blk(h, **cap.kwargs[i])
        h = out[0] if isinstance(out, tuple) else out


def _timed(fn) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "tiny"), default="smollm2")
    parser.add_argument("--layers", type=int, default=4, help="top blocks pruned")
    parser.add_argument("--sparsity", action="append", help="e.g. 0.5, 0.7, 2:4")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--num-calib", type=int, default=None,
                        help="calibration windows (default: the tier's)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TIERS["small"] if args.model == "smollm2" else TIERS["smoke"]
    if args.num_calib:
        cfg = dataclasses.replace(cfg, num_calib=args.num_calib)
    model, tok = _load(cfg, "cpu")
    n = len(decoder_layers(model))
    start = max(0, n - args.layers)
    pool, held = _texts(tok, cfg)
    cap = capture_block_inputs(model, _calib_ids(pool, cfg, 0, "cpu"), start=start)
    ids = torch.from_numpy(held[: cfg.num_eval * cfg.eval_len].reshape(cfg.num_eval, -1))
    ev = capture_block_inputs(model, ids, start=start)
    dense = {k: v.clone() for k, v in model.state_dict().items()}
    print(f"{n - start} of {n} blocks, {cap.hidden.shape[0]} x {cap.hidden.shape[1]} "
          f"calibration tokens; dense perplexity {block_perplexity(model, ev):.3f}")
    for sp in args.sparsity or ["0.5"]:
        times, cpu, ppl = {}, {}, {}
        rows = list(METHODS) + (["lean_wanda"] if ":" not in sp else [])
        for meth in rows:
            best = (float("inf"), float("inf"))
            for _ in range(args.repeats):
                model.load_state_dict(dense)
                def run(meth=meth, sp=sp):
                    if meth == "lean_wanda":
                        return lean_wanda(model, cap, float(sp))
                    return prune_model(model, cap, method=meth, sparsity=sp)

                best = min(best, _timed(run))
            times[meth], cpu[meth] = best
            ppl[meth] = block_perplexity(model, ev)
            if meth == "wanda":
                wanda_weights = {k: v.clone() for k, v in model.state_dict().items()}
            if meth == "lean_wanda":
                same = all(torch.equal(v, wanda_weights[k])
                           for k, v in model.state_dict().items())  # fmt: skip
        model.load_state_dict(dense)
        print(f"\nsparsity {sp}")
        print(f"{'method':>10} {'wall s':>8} {'cpu s':>8} {'/wanda':>7} {'/sparsegpt':>10} "
              f"{'ppl':>9}")
        for meth in rows:
            print(f"{meth:>10} {times[meth]:8.2f} {cpu[meth]:8.2f} "
                  f"{cpu[meth] / cpu['wanda']:7.2f} "
                  f"{cpu[meth] / cpu['sparsegpt']:10.2f} {ppl[meth]:9.3f}")
        if "lean_wanda" in rows:
            print(f"prune_model(wanda) / lean Wanda: {cpu['wanda'] / cpu['lean_wanda']:.2f}x "
                  f"CPU; weights bit-identical: {same}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
