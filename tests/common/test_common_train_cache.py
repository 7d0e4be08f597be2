"""The training loop (determinism, learning, bad input) and the model cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurips26.common.cache import cache_dir, cache_key, cached_arrays, cached_module
from neurips26.common.models import MLPClassifier
from neurips26.common.torch import make_generator, seeded
from neurips26.common.train import accuracy, array_batches, cosine_schedule, train


def _task(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(256, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    return x, y


def _fit(seed=0, max_iter=150):
    x, y = _task()
    with seeded(seed):
        net = MLPClassifier(2, (16,), 2)
    batches = array_batches(x, y, batch_size=32, generator=make_generator(seed))
    res = train(net, batches, max_iter=max_iter, lr=1e-2, seed=seed,
                lr_schedule=cosine_schedule(max_iter, warmup=10))  # fmt: skip
    return net, res, x, y


def test_train_learns_and_is_deterministic():
    net, res, x, y = _fit()
    assert res.num_steps == 150 and res.final_loss < res.losses[0] / 3
    assert accuracy(net, x, y) > 0.95
    _, res2, _, _ = _fit()
    assert res.losses == res2.losses


def test_callback_stops_and_bad_input():
    x, y = _task()
    net = MLPClassifier(2, (4,), 2)
    batches = array_batches(x, y, batch_size=8, generator=make_generator(0))
    res = train(net, batches, max_iter=50, callback=lambda step, loss, m: step == 4)
    assert res.num_steps == 5 and res.stopped_early
    with pytest.raises(ValueError, match="max_iter"):
        train(net, batches, max_iter=0)
    with pytest.raises(ValueError, match="lr"):
        train(net, batches, max_iter=1, lr=0.0)
    with pytest.raises(ValueError, match="lr"):
        train(net, batches, max_iter=1, lr=float("nan"))
    bad = iter([(torch.full((4, 2), float("nan")), torch.zeros(4, dtype=torch.long))])
    with pytest.raises(ValueError, match="non-finite"):
        train(net, bad, max_iter=1)
    with pytest.raises(ValueError, match="batch_size"):
        next(array_batches(x, y, batch_size=10**6, generator=make_generator(0)))
    with pytest.raises(ValueError, match="lengths"):
        next(array_batches(x, y[:3], batch_size=2, generator=make_generator(0)))


def test_cache_is_isolated_hits_and_keys_change():
    assert "neurips26-test-cache" in str(cache_dir())
    calls = []

    def compute():
        calls.append(1)
        return {"a": np.arange(3)}

    key = cache_key("arrays", {"n": 3}, 0, modules=("neurips26.common",))
    a, hit = cached_arrays("arrays", key, compute)
    b, hit2 = cached_arrays("arrays", key, compute)
    assert not hit and hit2 and len(calls) == 1 and np.array_equal(a["a"], b["a"])
    assert cache_key("arrays", {"n": 4}, 0) != cache_key("arrays", {"n": 3}, 0)
    assert cache_key("arrays", {"n": 3}, 1) != cache_key("arrays", {"n": 3}, 0)

    def build():
        with seeded(0):
            return MLPClassifier(2, (4,), 2)

    def fit(m):
        with torch.no_grad():
            m.head.bias.fill_(7.0)

    _, hit = cached_module("mlp", "k1", build, fit)
    m2, hit2 = cached_module("mlp", "k1", build, lambda m: pytest.fail("retrained"))
    assert not hit and hit2 and float(m2.head.bias[0]) == 7.0


def test_cache_disabled(monkeypatch):
    monkeypatch.setenv("NEURIPS26_NO_CACHE", "1")
    n = []
    for _ in range(2):
        cached_arrays("off", "k", lambda: n.append(1) or {"a": np.zeros(1)})
    assert len(n) == 2


def test_cache_reads_carry_what_the_entries_cost():
    """A read adds the CPU seconds its entry took to compute (nested reads included in the
    outer entry's cost); an entry without a recorded cost is counted as unrecorded."""
    from neurips26.common.cache import _cost_path, _path, cache_reads, reset_cache_reads

    def busy():
        x = 0.0
        for i in range(300_000):
            x += i * 1e-9
        return {"a": np.array([x])}

    reset_cache_reads()
    cached_arrays("costed", "inner", busy)
    assert cache_reads() == {"hits": 0, "cpu_seconds": 0.0, "unrecorded": 0}
    cached_arrays("costed", "inner", busy)
    first = cache_reads()
    assert first["hits"] == 1 and first["cpu_seconds"] > 0 and first["unrecorded"] == 0

    def outer():  # reads the inner entry: its cost counts in the outer entry's
        return cached_arrays("costed", "inner", busy)[0]

    reset_cache_reads()
    cached_arrays("costed", "outer", outer)
    reset_cache_reads()
    cached_arrays("costed", "outer", outer)
    assert cache_reads()["cpu_seconds"] >= first["cpu_seconds"]

    _cost_path(_path("costed", "inner", ".npz")).unlink()
    reset_cache_reads()
    cached_arrays("costed", "inner", busy)
    assert cache_reads() == {"hits": 1, "cpu_seconds": 0.0, "unrecorded": 1}
