"""Benchmark: conversion throughput of sfd_edgar vs the baselines on the real 10-K and 10-Q.

Each converter turns Apple's 10-K (1.9 MB) and 10-Q (1.1 MB) from decoded HTML into
Markdown; we report filings per second and MB/s (best of ``--repeats``, wall and CPU time),
interleaving the converters so load drifts hit all of them, and the ratio of each
baseline's time to ours, measured in the same run. A ratio above 1 means we are faster.

Usage::

    python benchmarks/sfd_edgar.py [--repeats 3] [--files Apple.10-K Apple.10-Q]
"""

from __future__ import annotations

import argparse
import sys
import time

from neurips26.papers.sfd_edgar import html_to_mmd
from neurips26.papers.sfd_edgar.baselines import available_baselines, run_baseline
from neurips26.papers.sfd_edgar.experiment import load_filing


def _time(fn, docs) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    for d in docs:
        fn(d)
    return time.perf_counter() - w, time.process_time() - c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--files", nargs="+", default=["Apple.10-K", "Apple.10-Q"])
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")
    docs = [load_filing(f) for f in a.files]
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    convs = {"ours (sfd_edgar)": lambda h: html_to_mmd(h).markdown}
    for b in available_baselines():
        convs[b] = lambda h, b=b: run_baseline(b, h)
    for fn in convs.values():  # warm-up (imports, caches)
        fn(docs[0][:20000])
    best = {k: (float("inf"), float("inf")) for k in convs}
    for _ in range(a.repeats):
        for k, fn in convs.items():
            best[k] = min(best[k], _time(fn, docs))
    ours_w, ours_c = best["ours (sfd_edgar)"]
    print(f"{len(docs)} filings, {mb:.2f} MB, best of {a.repeats}")
    print(f"{'converter':<20}{'filings/s':>10}{'MB/s':>8}{'wall/ours':>11}{'cpu/ours':>10}")
    for k, (w, c) in best.items():
        print(f"{k:<20}{len(docs) / w:>10.2f}{mb / w:>8.2f}{w / ours_w:>11.2f}"
              f"{(c / ours_c if ours_c > 0 else float('nan')):>10.2f}")
    return 0


if __name__ == "__main__":
    from _harness import run_pinned

    sys.exit(run_pinned(main))
