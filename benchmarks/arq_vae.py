"""ARQ-VAE storage against baselines at matched bytes: bytes, error and (optionally) F1@50.

In one process: procedural TAS videos, one ARQ-VAE trained on the training features, and
for each budget (a fraction of the float32 training set, all-in) the adaptive memory
(fine-tuned decoder), fixed-depth RVQ, PCA + uint8, temporal subsampling and k-means.
Prints, per method, the all-in and codes-only bytes, the compression ratio against
float32, the relative reconstruction error and its ratio to ARQ-VAE's; with
``--segment`` also MS-TCN's F1@50 and Edit on the original test features. Encode and
decode times per 1,000 frames are measured here (CPU).

    python benchmarks/arq_vae.py [--tier smoke|small] [--segment]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("smoke", "small"), default="smoke")
    parser.add_argument("--segment", action="store_true", help="also train MS-TCN per memory")
    args = parser.parse_args(argv)
    os.environ["NEURIPS26_NO_CACHE"] = "1"
    import torch

    from neurips26.papers.arq_vae import (
        ARQVAE,
        MSTCN,
        adaptive_truncate,
        finetune_decoder,
        fixed_depth_memory,
        kmeans_memory,
        make_procedural_videos,
        model_nbytes,
        pca_uint8_memory,
        segmentation_metrics,
        subsample_memory,
        train_arqvae,
        train_mstcn,
    )
    from neurips26.papers.arq_vae.experiment import TIERS
    from neurips26.papers.arq_vae.memory import HEADER_BYTES  # fmt: skip

    torch.set_num_threads(1)
    cfg = TIERS[args.tier]
    ds = make_procedural_videos(num_videos=cfg.num_videos, num_actions=cfg.num_actions,
                                dim=cfg.dim, mean_length=cfg.mean_length, noise=cfg.noise,
                                confusion=cfg.confusion, seed=cfg.seed)
    n_tr = cfg.num_videos - cfg.num_test
    tr, te = ds.subset(range(n_tr)), ds.subset(range(n_tr, cfg.num_videos))
    vids = list(tr.features)
    X = np.concatenate(vids)
    f32 = X.size * 4
    model = ARQVAE(cfg.dim, latent_dim=cfg.latent_dim, num_levels=cfg.num_levels,
                   codebook_size=cfg.codebook_size, hidden=cfg.hidden, seed=cfg.seed)
    train_arqvae(model, vids, max_iter=cfg.train_iter, lr=cfg.train_lr,
                 batch_size=cfg.train_batch, seed=cfg.seed)
    model.eval()
    x0 = torch.as_tensor(vids[0])[None]
    tic = time.perf_counter()
    with torch.no_grad():
        codes = model.encode(x0)
    enc = (time.perf_counter() - tic) * 1000 / len(vids[0]) * 1000
    tic = time.perf_counter()
    with torch.no_grad():
        model.decode(codes, torch.full(codes.shape[:2], model.num_levels))
    dec = (time.perf_counter() - tic) * 1000 / len(vids[0]) * 1000
    print(f"float32 training features: {f32} bytes; model (decoder + codebooks) "
          f"{model_nbytes(model)} bytes")
    print(f"encode {enc:.1f} ms / 1k frames, decode {dec:.1f} ms / 1k frames (CPU, 1 thread)")

    def rel_err(feats):
        xh = np.concatenate(feats)
        return float(np.mean(((X - xh) ** 2).sum(1) / (X ** 2).sum(1)))

    def seg(feats):
        if not args.segment:
            return float("nan"), float("nan")
        net = MSTCN(cfg.dim, ds.num_actions, num_stages=cfg.mstcn_stages,
                    num_layers=cfg.mstcn_layers, channels=cfg.mstcn_channels, seed=cfg.seed)
        train_mstcn(net, feats, list(tr.labels), max_iter=cfg.mstcn_iter,
                    window=cfg.mstcn_window, seed=cfg.seed)
        s = segmentation_metrics(net.predict(list(te.features)), list(te.labels))
        return s.f1_at(0.5), s.edit

    L, cb = model.num_levels, 1 if cfg.codebook_size <= 256 else 2
    for frac in sorted(cfg.budgets, reverse=True):
        budget = int(f32 * frac)
        print(f"\nbudget 1/{round(1 / frac)} of float32 = {budget} bytes (all-in)")
        rows = []
        try:
            mem = adaptive_truncate(model, vids, budget_bytes=budget)
        except ValueError as exc:
            print(f"  arq: {exc}")
            continue
        tuned = finetune_decoder(model, mem, vids, max_iter=cfg.finetune_iter,
                                 lr=cfg.finetune_lr, seed=cfg.seed)
        feats = mem.reconstruct(tuned)
        rows.append(("arq", mem.nbytes(include_model=True, model=model),
                     mem.nbytes(include_model=False), rel_err(feats), *seg(feats)))
        fixed = [d for d in range(1, L + 1) if HEADER_BYTES + 4 * len(vids) + 1
                 + cb * d * len(X) + model_nbytes(model) <= budget]
        if fixed:
            fm = fixed_depth_memory(model, vids, max(fixed))
            ftuned = finetune_decoder(model, fm, vids, max_iter=cfg.finetune_iter,
                                      lr=cfg.finetune_lr, seed=cfg.seed)
            feats = fm.reconstruct(ftuned)
            rows.append((f"fixed(l={max(fixed)})", fm.nbytes(include_model=True, model=model),
                         fm.nbytes(include_model=False), rel_err(feats), *seg(feats)))
        for name, fn in (("pca_uint8", pca_uint8_memory), ("subsample", subsample_memory),
                         ("kmeans", kmeans_memory)):
            try:
                b = fn(vids, budget)
            except ValueError as exc:
                print(f"  {name}: {exc}")
                continue
            rows.append((f"{name}({b.setting})", b.nbytes, b.codes_nbytes, rel_err(b.features),
                         *seg(b.features)))
        base = rows[0][3]
        print(f"  {'method':16s} {'all-in B':>10s} {'codes B':>10s} {'x float32':>10s} "
              f"{'rel err':>8s} {'err/arq':>8s} {'F1@50':>6s} {'Edit':>6s}")
        for name, allin, codes_b, err, f1, edit in rows:
            print(f"  {name:16s} {allin:10d} {codes_b:10d} {f32 / allin:10.1f} {err:8.4f} "
                  f"{err / base:8.3f} {f1:6.1f} {edit:6.1f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
