"""The trainer: batch mixing, held-out text, checkpoint branching, determinism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from neurips26.common.models import GPTConfig
from neurips26.papers.adis_law import InjectionPolicy, Trajectory
from neurips26.papers.adis_law.training import (
    BaseRuns,
    TrainSpec,
    _Runner,
    base_runs,
    continue_base,
    load_corpora,
    mixed_batch,
    run_injection,
)

CFG = GPTConfig(vocab_size=256, block_size=16, num_layers=1, num_heads=2, dim=8)
SPEC = TrainSpec(batch_size=4, block_size=16, eval_every=5, eval_windows=4)


@pytest.fixture(scope="module")
def corpora():
    return load_corpora(general_chars=50_000)


@pytest.fixture(scope="module")
def base(corpora):
    return base_runs(CFG, corpora, SPEC, budgets=[50, 100], fractions=[0.5, 1.0])


def _windows(stream, t):
    return {bytes(stream[i:i + t].astype(np.uint8)) for i in range(0, len(stream) - t, 7)}


def test_domain_rows_per_batch_are_exact(corpora):
    tgt = _windows(corpora.target_train, 16)
    gen = _windows(corpora.general_train, 16)
    for r in (0.0, 0.1, 0.3, 0.5, 0.6, 1.0):
        x, y = mixed_batch(corpora, 3, r, batch_size=10, block_size=16, seed=0)
        assert x.shape == y.shape == (10, 16)
        assert torch.equal(x[:, 1:], y[:, :-1])
        n_dom = round(r * 10)
        # every row is a window of its own stream: domain rows first
        t_stream = bytes(corpora.target_train.astype(np.uint8))
        g_stream = bytes(corpora.general_train.astype(np.uint8))
        for i, row in enumerate(x.numpy().astype(np.uint8)):
            assert bytes(row) in (t_stream if i < n_dom else g_stream)
    assert tgt and gen


def test_general_rows_are_shared_across_policies(corpora):
    x0, _ = mixed_batch(corpora, 7, 0.0, batch_size=8, block_size=16, seed=1)
    x1, _ = mixed_batch(corpora, 7, 0.5, batch_size=8, block_size=16, seed=1)
    assert torch.equal(x0[4:], x1[4:]) and not torch.equal(x0[:4], x1[:4])


def test_no_validation_text_in_training(corpora):
    for train, val in ((corpora.general_train, corpora.general_val),
                       (corpora.target_train, corpora.target_val)):
        tr = bytes(train.astype(np.uint8))
        va = val.astype(np.uint8)
        probes = [bytes(va[i:i + 200]) for i in range(500, len(va) - 200, max(1, len(va) // 9))]
        assert probes and not any(p in tr for p in probes)


def test_base_runs_and_branching(corpora, base):
    assert isinstance(base, BaseRuns)
    assert sorted(base.checkpoints) == [(50, 40), (50, 45), (100, 80), (100, 90)]
    t50 = base.trajectories[50]
    assert isinstance(t50, Trajectory) and t50.steps[-1] == 49 and np.all(t50.mix == 0)
    # the shared stable phase: budget 100's base run equals budget 50's before step 40
    t100 = base.trajectories[100]
    k = np.searchsorted(t100.steps, 40)
    np.testing.assert_array_equal(t100.loss_target[:k], t50.loss_target[:k])
    # resuming from a checkpoint continues the base run exactly (model + AdamW state)
    runner = _Runner(CFG, corpora, SPEC)
    model, opt = runner.restore(base.checkpoints[(100, 80)])
    log = []
    runner.segment(model, opt, SPEC.schedule(100), 80, 100, log)
    logged = np.array(log)
    np.testing.assert_array_equal(logged[:, 0], t100.steps[-len(log):])
    np.testing.assert_allclose(logged[:, 2], t100.loss_target[-len(log):], rtol=0, atol=0)


def test_continue_base_reproduces_the_base_run_and_replicates_under_another_seed(corpora, base):
    t100 = base.trajectories[100]
    same = continue_base(CFG, corpora, total_steps=100, start=90, base=base, spec=SPEC)
    k = np.searchsorted(t100.steps, 90)
    np.testing.assert_array_equal(same.steps, t100.steps[k:])
    np.testing.assert_array_equal(same.loss_general, t100.loss_general[k:])
    other = dataclasses.replace(SPEC, seed=SPEC.seed + 1)
    rep = continue_base(CFG, corpora, total_steps=100, start=90, base=base, spec=other)
    np.testing.assert_array_equal(rep.steps, same.steps)
    # the checkpoint's state, other batches: a different but nearby trajectory
    assert not np.array_equal(rep.loss_general, same.loss_general)
    np.testing.assert_allclose(rep.loss_general, same.loss_general, rtol=0.1)
    with pytest.raises(ValueError, match="no checkpoint"):
        continue_base(CFG, corpora, total_steps=100, start=85, base=base, spec=SPEC)
    with pytest.raises(TypeError, match="base"):
        continue_base(CFG, corpora, total_steps=100, start=90, base={}, spec=SPEC)
    with pytest.raises(ValueError, match="start"):
        continue_base(CFG, corpora, total_steps=100, start=-1, base=base, spec=SPEC)
    with pytest.raises(TypeError, match="total_steps"):
        continue_base(CFG, corpora, total_steps=100.0, start=90, base=base, spec=SPEC)


def test_injection_is_deterministic_and_moves_the_target_loss(corpora, base):
    pol = InjectionPolicy(1.0, 1.0, 0.3 * SPEC.peak_lr)
    a = run_injection(CFG, corpora, pol, total_steps=100, base=base, spec=SPEC)
    b = run_injection(CFG, corpora, pol, total_steps=100, base=base, spec=SPEC)
    np.testing.assert_array_equal(a.loss_target, b.loss_target)
    assert a.steps[0] >= 80 and a.policy == pol
    assert a.loss_target[-1] < base.trajectories[100].loss_target[-1]
    with pytest.raises(ValueError, match="no checkpoint"):
        run_injection(CFG, corpora, InjectionPolicy(0.25, 0.5, 1e-3), total_steps=100,
                      base=base, spec=SPEC)
    with pytest.raises(TypeError, match="policy"):
        run_injection(CFG, corpora, (1.0, 0.5, 1e-3), total_steps=100, base=base, spec=SPEC)


def test_trainer_bad_input(corpora):
    with pytest.raises(ValueError, match="mix_ratio"):
        mixed_batch(corpora, 0, 1.5, batch_size=4, block_size=8, seed=0)
    with pytest.raises(ValueError, match="step"):
        mixed_batch(corpora, -1, 0.5, batch_size=4, block_size=8, seed=0)
    with pytest.raises(ValueError, match="general_chars"):
        load_corpora(general_chars=10)
    with pytest.raises(ValueError, match="budgets"):
        base_runs(CFG, corpora, SPEC, budgets=[], fractions=[1.0])
    with pytest.raises(ValueError, match="fraction"):
        base_runs(CFG, corpora, SPEC, budgets=[50], fractions=[0.0])
    with pytest.raises(TypeError, match="model_cfg"):
        base_runs("gpt", corpora, SPEC, budgets=[50], fractions=[1.0])
