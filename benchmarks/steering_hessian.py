"""Cost of the steering Hessian: HVPs, Lanczos and the dense Hessian against CAA itself.

In one process, on a tiny random LLaMA (or SmolLM2 with ``--smollm2``): the CAA vector,
one gradient, Lanczos with ``m`` HVPs and (tiny model only) the dense Hessian, each timed
here, printed with its count of HVPs and as a multiple of the CAA step's wall time (only
the ratios are comparable across machines). Also the prompt-prefix cache against the full
forward pass for ``positions="last"``.

    python benchmarks/steering_hessian.py [--smollm2] [--steps 20] [--layer 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.common.data.text import ByteTokenizer
from neurips26.common.models.llm import load_smollm2, tiny_causal_lm
from neurips26.papers.steering_hessian import (
    SteeringObjective,
    caa_vector,
    make_contrastive_set,
    steering_hessian,
)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", action="store_true", help="SmolLM2-135M instead of tiny")
    parser.add_argument("--steps", type=int, default=20, help="Lanczos steps")
    parser.add_argument("--layer", type=int, default=None)
    args = parser.parse_args(argv)
    if args.smollm2:
        model, tok = load_smollm2(attn_implementation="eager")
        encode, pad, layer = (lambda t: tok(t, add_special_tokens=False).input_ids,
                              tok.pad_token_id or 0, args.layer or 15)  # fmt: skip
    else:
        model = tiny_causal_lm(seed=0, hidden_size=64, num_layers=4)
        bt = ByteTokenizer()
        encode, pad, layer = (lambda t: [int(i) for i in bt.encode(t)], 0,
                              args.layer if args.layer is not None else 1)  # fmt: skip
    model.requires_grad_(False)
    data = make_contrastive_set("sentiment", encode, num_items=24,
                                rng=np.random.default_rng(0), pad_id=pad)  # fmt: skip
    caa, hess = data.subset(np.arange(16)), data.subset(np.arange(16, 24))
    v, t_caa = _timed(lambda: caa_vector(model, caa.pos_ids, caa.neg_ids, layer=layer,
                                         attention_mask=caa.pair_mask))  # fmt: skip
    rows = [("CAA vector (16 pairs)", 0, t_caa)]
    for cached in (True, False):
        f = SteeringObjective(model, hess.prompts, hess.targets, layer=layer,
                              attention_mask=hess.mask, cache_prefix=cached)  # fmt: skip
        name = "prefix cache" if cached else "full forward"
        H, t = _timed(lambda f=f: steering_hessian(f, v, method="lanczos",
                                                   num_steps=args.steps))  # fmt: skip
        rows.append((f"Lanczos, {name}", H.num_hvp, t))
        if not args.smollm2 and cached:
            D, t = _timed(lambda f=f: steering_hessian(f, v, method="dense"))
            rows.append(("dense Hessian, prefix cache", D.num_hvp, t))
            top = np.abs(H.eigvals[:4] - D.eigvals[:4]) / np.abs(D.eigvals[:4])
            print(f"Lanczos top-4 eigenvalues vs dense: max relative error {top.max():.2e}")
    print(f"{'step':34s} {'HVPs':>6s} {'seconds':>9s} {'x CAA':>8s}")
    for name, n, t in rows:
        print(f"{name:34s} {n:6d} {t:9.3f} {t / t_caa:8.2f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
