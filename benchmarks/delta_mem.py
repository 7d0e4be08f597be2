"""delta-Mem's footprint and overhead next to LoRA and memory tokens, measured in one run.

The paper claims compactness (an 8 x 8 state), not speed. For the adapted top layers of a
model this prints, per method: the memory state carried between windows (floats and bytes
per sequence), the trainable parameters, and the wall time per token of one window through
the adapted layers, as a ratio to the frozen layers measured here (same inputs, same
process). With ``--model smollm2`` the real SmolLM2-135M is used (cached load), else a
tiny random LLaMA-layout model.

    python benchmarks/delta_mem.py [--model tiny|smollm2] [--layers 2] [--tokens 64]
"""

from __future__ import annotations

import argparse
import time

import torch

from neurips26.common.models.llm import decoder_layers, load_smollm2, tiny_causal_lm
from neurips26.papers.delta_mem import (
    DeltaMemConfig,
    DeltaMemReader,
    EpisodeRunner,
    LoRAReader,
    MemoryTokensReader,
    WordTokenizer,
    lora_rank_for,
    reset_delta_mem,
    write_mask,
)


def _time_all(fns: dict, repeats: int) -> dict:
    """Best-of-``repeats`` wall time of each function, the methods interleaved."""
    for fn in fns.values():
        fn()  # warm-up
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            tic = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - tic)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.model == "smollm2":
        model, tok = load_smollm2()

        def encode(s):
            return tok(s, add_special_tokens=False).input_ids
    else:
        model = tiny_causal_lm(seed=0, hidden_size=128, num_layers=4, num_heads=4,
                               num_kv_heads=2, intermediate_size=256)  # fmt: skip
        encode = WordTokenizer().encode
    n = len(decoder_layers(model))
    runner = EpisodeRunner(model, encode, start=n - args.layers, window=max(64, args.tokens))
    dim = runner.layers[0].self_attn.q_proj.in_features
    h = torch.randn(args.batch, args.tokens, dim, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(args.batch, args.tokens)
    dm = DeltaMemReader(runner, DeltaMemConfig())
    lora = LoRAReader(runner, lora_rank_for(dm.num_trainable(), runner))
    rmt = MemoryTokensReader(runner, 4)

    @torch.no_grad()
    def frozen():
        runner.run_top(h)

    @torch.no_grad()
    def delta():
        reset_delta_mem(dm.top)
        with write_mask(dm.top, mask):
            runner.run_top(h, dm.top)

    @torch.no_grad()
    def with_lora():
        runner.run_top(h, lora.top)

    @torch.no_grad()
    def memory_tokens():
        runner.run_top(torch.cat([rmt.init.expand(args.batch, -1, -1), h], dim=1))

    t = _time_all({"frozen": frozen, "delta": delta, "lora": with_lora,
                   "rmt": memory_tokens}, args.repeats)  # fmt: skip
    base = t["frozen"]
    per_token = args.batch * args.tokens
    rows = [
        ("frozen", 0, 0, base),
        ("delta-Mem", dm.num_trainable(), args.layers * 8 * 8, t["delta"]),
        ("LoRA", lora.num_trainable(), 0, t["lora"]),
        ("memory tokens", rmt.num_trainable(), 4 * dim, t["rmt"]),
    ]
    print(f"{args.model}: top {args.layers} of {n} layers, {args.batch} x {args.tokens} tokens")
    print(f"{'method':<14} {'trainable':>10} {'state floats':>13} {'state bytes':>12} "
          f"{'us/token':>9} {'x frozen':>9}")
    for name, params, floats, t in rows:
        print(f"{name:<14} {params:>10} {floats:>13} {4 * floats:>12} "
              f"{1e6 * t / per_token:>9.1f} {t / base:>9.2f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
