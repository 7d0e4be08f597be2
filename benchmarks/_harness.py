"""What every benchmark shares: pinned threads and CPU time beside wall time.

Each ``benchmarks/<slug>.py`` ends with ``run_pinned(main)``: BLAS, OpenMP and torch run on
``NEURIPS26_BENCH_THREADS`` threads (default 1; a benchmark may pin its own parts more
tightly), so a result does not depend on how many cores the machine lends, and the last
line gives the wall time and the CPU time of the process and of its children (a load on the
machine stretches the first, hardly the second).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable

from neurips26.common.threads import limit_threads


def run_pinned(main: Callable[[], object]) -> object:
    """Run ``main`` with pinned threads and print its wall and CPU seconds."""
    threads = int(os.environ.get("NEURIPS26_BENCH_THREADS", "1"))
    t0, c0 = time.perf_counter(), time.process_time()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with limit_threads(threads):
        out = main()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    print(
        f"\nbenchmark: {threads} thread(s) pinned (BLAS, OpenMP, torch); wall "
        f"{time.perf_counter() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s in this "
        f"process and {child_cpu:.1f} s in its children"
    )
    return out
