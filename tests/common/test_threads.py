"""The shared thread limit sets BLAS and torch, and restores both."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from neurips26.common.threads import limit_threads, single_threaded


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    """Two BLAS and torch threads for the test (the suite's xdist workers run one each, under
    which a limit of one would hold whatever limit_threads did)."""
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threadpool_limits(limits=2):
            yield
    finally:
        torch.set_num_threads(old)


def test_limit_threads_sets_and_restores(two_threads):
    before_torch = torch.get_num_threads()
    before_blas = _blas_threads()
    assert before_torch == 2  # BLAS pools loaded under OMP_NUM_THREADS=1 stay at one
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert all(n == 1 for n in _blas_threads())
    assert torch.get_num_threads() == before_torch
    assert _blas_threads() == before_blas


def test_single_threaded_decorator(two_threads):
    @single_threaded
    def inner():
        return torch.get_num_threads()

    assert inner() == 1


def test_limit_threads_sets_blas_in_a_fresh_process():
    """BLAS loaded without a thread setting (as a user's process loads it) starts with
    every core, drops to one inside limit_threads and gets its pools back after."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    code = (
        "import numpy, json\n"
        "from threadpoolctl import threadpool_info\n"
        "from neurips26.common.threads import limit_threads\n"
        "def blas():\n"
        "    return [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']\n"
        "before = blas()\n"
        "with limit_threads(1):\n"
        "    inside = blas()\n"
        "print(json.dumps([before, inside, blas()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    before, inside, after = json.loads(out)
    assert before, "numpy loaded no BLAS pool"
    if max(before) < 2:
        pytest.skip("one core: BLAS starts with one thread, so the limit is not visible")
    assert inside == [1] * len(before)
    assert after == before


@pytest.mark.parametrize(("n", "exc"), [(0, ValueError), (1.0, TypeError), (True, TypeError)])
def test_limit_threads_refuses(n, exc):
    with pytest.raises(exc, match="n must"), limit_threads(n):
        pass
