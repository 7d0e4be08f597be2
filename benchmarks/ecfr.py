"""ECFR's head versus the baselines: parameters and FLOPs per image, counted in one run.

FLOPs are counted with ``torch.utils.flop_counter.FlopCounterMode`` on one image's feature
maps (the paper's 44.63 M params / 15.77 GFLOPs include its pretrained backbones, which we
cannot build; here every method sees the same frozen features, so the heads are what
differ). The feature encoders are counted too (shared by every method), PatchCore's cost
is its brute-force kNN search against a memory bank of the given size, and wall-clock
scoring time per image on CPU is printed for information. Ratios are printed against ECFR.

    python benchmarks/ecfr.py [--dim 64] [--num-blocks 2] [--grid 16] [--channels 128]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from neurips26.papers.ecfr import ECFR, CFMPair, ConvEncoder


def _count(module, *inputs) -> tuple[int, int, float]:
    module.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        module(*inputs)
    with torch.no_grad():
        t = time.perf_counter()
        for _ in range(5):
            module(*inputs)
        sec = (time.perf_counter() - t) / 5
    return sum(p.numel() for p in module.parameters()), int(fc.get_total_flops()), sec


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--num-blocks", type=int, default=2)
    parser.add_argument("--grid", type=int, default=16)
    parser.add_argument("--channels", type=int, default=128, help="feature channels per modality")
    parser.add_argument("--cfm-hidden", type=int, default=256)
    parser.add_argument("--bank", type=int, default=2048, help="PatchCore bank per class")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    c, g = args.channels, args.grid
    x = (torch.randn(1, c, g, g), torch.randn(1, c, g, g))
    heads = {
        "ECFR (gated)": ECFR(c, c, dim=args.dim, num_blocks=args.num_blocks),
        "same-modality": ECFR(c, c, dim=args.dim, num_blocks=args.num_blocks, cross_mode="same"),
        "ECFR w/o AFIR": ECFR(c, c, dim=args.dim, num_blocks=args.num_blocks, use_afir=False),
        "ECFR w/o HAC": ECFR(c, c, dim=args.dim, num_blocks=args.num_blocks, use_hac=False),
        "CFM": CFMPair(c, c, hidden=args.cfm_hidden),
    }
    rows = {name: _count(m, *x) for name, m in heads.items()}
    enc = ConvEncoder(3, width=c // 2)
    enc_p, enc_f, enc_t = _count(enc, torch.randn(1, 3, 4 * g, 4 * g))
    base_p, base_f, _ = rows["ECFR (gated)"]
    print(f"features: {c}+{c} channels on a {g}x{g} grid (image {4 * g}x{4 * g})")
    print(f"{'method':<16}{'params':>12}{'MFLOPs':>10}{'ms/img':>9}{'params/ECFR':>13}"
          f"{'FLOPs/ECFR':>12}")  # fmt: skip
    for name, (p, f, t) in rows.items():
        print(f"{name:<16}{p:>12,}{f / 1e6:>10.2f}{1e3 * t:>9.2f}{p / base_p:>13.2f}"
              f"{f / base_f:>12.2f}")  # fmt: skip
    knn = 2 * args.bank * 2 * c * g * g
    print(f"{'PatchCore kNN':<16}{args.bank * 2 * c:>12,}{knn / 1e6:>10.2f}{'':>9}"
          f"{args.bank * 2 * c / base_p:>13.2f}{knn / base_f:>12.2f}  (bank floats, search)")
    print(f"{'encoder (each)':<16}{enc_p:>12,}{enc_f / 1e6:>10.2f}{1e3 * enc_t:>9.2f}  "
          "(shared by every method)")
    print("paper (with backbones): ECFR 44.63 M params, 15.77 GFLOPs")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
