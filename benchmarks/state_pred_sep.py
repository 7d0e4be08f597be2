"""State-prediction separation: training throughput and FLOPs of the separated model vs standard.

Run: ``python benchmarks/state_pred_sep.py [--tier small|paper] [--device cpu|cuda]``.
Prints, in one run and for each model size, training tokens per second of the standard
GPT, the separated model and the pause control (interleaved in rounds, so machine load
hits all three alike), their ratios to the standard model, the analytic training FLOPs
per token and their ratio (checked against ``FlopCounterMode``), and the per-token
latency of KV-cache decoding. Clock numbers are only meaningful as ratios within a run.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from neurips26.common.models import GPT, GPTConfig
from neurips26.common.torch import get_device, seeded
from neurips26.papers.state_pred_sep import SPSTransformer, forward_flops

ARMS = ("standard", "separated", "pause")


def _build(arm: str, cfg: GPTConfig, device) -> torch.nn.Module:
    with seeded(0):
        model = GPT(cfg) if arm == "standard" else SPSTransformer(cfg, mode=arm)
    return model.to(device)


def _train_steps(model, opt, idx, steps: int) -> float:
    if idx.is_cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = model(idx, idx)[1]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if idx.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def _decode_latency(model, prompt, new: int) -> float:
    t0 = time.perf_counter()
    model.generate(prompt, max_new_tokens=new, top_k=1)
    return (time.perf_counter() - t0) / new


def _measured_flops(model, idx) -> int:
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model(idx, idx)[1].backward()
    model.zero_grad(set_to_none=True)
    return fc.get_total_flops()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="small", choices=("small", "paper"))
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    dev = get_device(args.device)
    sizes = [(2, 64)] if args.tier == "small" else [(2, 64), (4, 128), (6, 256), (8, 384)]
    block, batch, steps = (64, 16, 10) if args.tier == "small" else (128, 64, 20)
    print(f"{'size':>8} {'arm':>10} {'tok/s':>10} {'x std':>7} {'FLOP/tok':>11} {'x std':>7} "
          f"{'measured ok':>11} {'ms/token (decode)':>18}")
    for layers, dim in sizes:
        cfg = GPTConfig(block_size=block, num_layers=layers, num_heads=4, dim=dim)
        idx = torch.randint(0, 256, (batch, block), generator=torch.Generator().manual_seed(0))
        idx = idx.to(dev)
        models = {arm: _build(arm, cfg, dev) for arm in ARMS}
        opts = {arm: torch.optim.AdamW(m.parameters(), lr=1e-3) for arm, m in models.items()}
        seconds = dict.fromkeys(ARMS, 0.0)
        for arm in ARMS:  # warm-up
            _train_steps(models[arm], opts[arm], idx, 2)
        for _ in range(args.rounds):
            for arm in ARMS:
                seconds[arm] += _train_steps(models[arm], opts[arm], idx, steps)
        tokens = args.rounds * steps * batch * block
        tps = {arm: tokens / seconds[arm] for arm in ARMS}
        flops = {arm: forward_flops(cfg, mode=arm).training_per_token for arm in ARMS}
        ok = {arm: _measured_flops(models[arm], idx[:2]) == 2 * block * flops[arm] for arm in ARMS}
        prompt = idx[:1, : block // 2]
        lat = {}
        for arm in ARMS:
            models[arm].eval()
            lat[arm] = _decode_latency(models[arm], prompt, block - block // 2) * 1e3
        for arm in ARMS:
            print(f"{layers}x{dim:<5} {arm:>10} {tps[arm]:10.0f} {tps[arm] / tps['standard']:7.2f} "
                  f"{flops[arm]:11.3g} {flops[arm] / flops['standard']:7.2f} {ok[arm]!s:>11} "
                  f"{lat[arm]:12.2f} ({lat[arm] / lat['standard']:.2f}x)")
    print("\nratios (x std) are separated or pause over standard, measured in this one run; "
          "FLOPs are analytic and 'measured ok' says FlopCounterMode agrees exactly.")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
