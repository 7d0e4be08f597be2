"""The shared thread limit sets BLAS and torch, and restores both."""

from __future__ import annotations

import pytest
import torch
from threadpoolctl import threadpool_info

from neurips26.common.threads import limit_threads, single_threaded


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_limit_threads_sets_and_restores():
    before_torch = torch.get_num_threads()
    before_blas = _blas_threads()
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert all(n == 1 for n in _blas_threads())
    assert torch.get_num_threads() == before_torch
    assert _blas_threads() == before_blas


def test_single_threaded_decorator():
    @single_threaded
    def inner():
        return torch.get_num_threads()

    assert inner() == 1


@pytest.mark.parametrize(("n", "exc"), [(0, ValueError), (1.0, TypeError), (True, TypeError)])
def test_limit_threads_refuses(n, exc):
    with pytest.raises(exc, match="n must"), limit_threads(n):
        pass
