"""Bad input raises a clear error naming the argument, in every public function."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.common.data import TokenSplit
from neurips26.common.models import GPTConfig
from neurips26.common.torch import seeded
from neurips26.papers.state_pred_sep import (
    SPSTransformer,
    flop_ratio,
    forward_flops,
    gradient_sources,
    separation_mask,
    train_lm,
    val_nll,
)
from neurips26.papers.state_pred_sep.experiment import TIERS, run

CFG = GPTConfig(block_size=8, num_layers=1, num_heads=2, dim=16)


@pytest.fixture(scope="module")
def model():
    with seeded(0):
        return SPSTransformer(CFG).eval()


def _idx(t=8):
    return torch.zeros(2, t, dtype=torch.long)


def test_constructor(model):
    with pytest.raises(ValueError, match="mode"):
        SPSTransformer(CFG, mode="standard")
    with pytest.raises(ValueError, match="mode"):
        SPSTransformer(CFG, mode="bogus")
    with pytest.raises(TypeError, match="cfg"):
        SPSTransformer({"dim": 16})
    with pytest.raises(ValueError, match="positions"):
        SPSTransformer(GPTConfig(block_size=8, num_layers=1, dim=16, positions="rope"))
    with pytest.raises(TypeError, match="separate_weights"):
        SPSTransformer(CFG, separate_weights="yes")
    with pytest.raises(ValueError, match="dim"):
        GPTConfig(dim=30, num_heads=4)


def test_forward_inputs(model):
    with pytest.raises(ValueError, match=r"idx.*block_size"):
        model(_idx(9))
    with pytest.raises(TypeError, match=r"idx.*integer"):
        model(torch.full((2, 8), float("nan")))
    with pytest.raises(TypeError, match=r"idx.*integer"):
        model(torch.zeros(2, 8))
    with pytest.raises(ValueError, match=r"idx.*vocab_size"):
        model(torch.full((2, 8), 256))
    with pytest.raises(ValueError, match=r"idx.*vocab_size"):
        model(torch.full((2, 8), -1))
    with pytest.raises(ValueError, match=r"idx.*shape"):
        model(torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"idx.*non-empty"):
        model(torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="idx"):
        model([[1, 2]])
    with pytest.raises(ValueError, match=r"targets.*shape"):
        model(_idx(), _idx(7))
    with pytest.raises(TypeError, match=r"targets.*integer"):
        model(_idx(), torch.zeros(2, 8))


def test_generate_and_step_inputs(model):
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(_idx(4), max_new_tokens=-1)
    with pytest.raises(ValueError, match=r"max_new_tokens.*block_size"):
        model.generate(_idx(4), max_new_tokens=5)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(_idx(4), max_new_tokens=2, temperature=0.0)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(_idx(4), max_new_tokens=2, temperature=float("nan"))
    with pytest.raises(ValueError, match="top_k"):
        model.generate(_idx(4), max_new_tokens=2, top_k=0)
    _, cache = model.prefill(_idx(8))
    with pytest.raises(ValueError, match=r"cache.*block_size"):
        model.step(torch.zeros(2, dtype=torch.long), cache)
    with pytest.raises(TypeError, match="cache"):
        model.step(torch.zeros(2, dtype=torch.long), None)
    _, cache = model.prefill(_idx(2))
    with pytest.raises(ValueError, match="token"):
        model.step(torch.zeros(2, 1, dtype=torch.long), cache)
    with pytest.raises(ValueError, match=r"token.*vocab_size"):
        model.step(torch.full((2,), 300), cache)


def test_mask_and_flops_inputs():
    with pytest.raises(ValueError, match="seq_len"):
        separation_mask(0)
    with pytest.raises(ValueError, match="mode"):
        separation_mask(3, mode="sideways")
    with pytest.raises(ValueError, match=r"seq_len.*block_size"):
        forward_flops(CFG, mode="separated", seq_len=9)
    with pytest.raises(ValueError, match="mode"):
        forward_flops(CFG, mode="causal")
    with pytest.raises(TypeError, match="cfg"):
        forward_flops({"dim": 3}, mode="standard")
    with pytest.raises(TypeError, match="seq_len"):
        flop_ratio(CFG, seq_len=2.5)


def test_gradient_sources_inputs(model):
    with pytest.raises(TypeError, match="model"):
        gradient_sources(torch.nn.Linear(2, 2), _idx(), _idx())
    with pytest.raises(ValueError, match=r"targets.*shape"):
        gradient_sources(model, _idx(), _idx(4))
    with pytest.raises(ValueError, match=r"idx.*block_size"):
        gradient_sources(model, _idx(9), _idx(9))


def _split(n=400):
    tokens = np.arange(n) % 256
    return TokenSplit(tokens[: n - 40], tokens[n - 40 :], 256)


def test_train_lm_inputs(model):
    with pytest.raises(ValueError, match="max_iter"):
        train_lm(model, _split(), max_iter=0)
    with pytest.raises(ValueError, match="lr"):
        train_lm(model, _split(), max_iter=2, lr=float("nan"))
    with pytest.raises(ValueError, match="lr"):
        train_lm(model, _split(), max_iter=2, lr=-1.0)
    with pytest.raises(ValueError, match="warmup"):
        train_lm(model, _split(), max_iter=2, warmup=3)
    with pytest.raises(ValueError, match=r"data.*block_size"):
        train_lm(model, _split(20), max_iter=2, warmup=0)
    with pytest.raises(TypeError, match="data"):
        train_lm(model, np.arange(100), max_iter=2)
    with pytest.raises(TypeError, match="model"):
        train_lm(torch.nn.Linear(2, 2), _split(), max_iter=2)
    with pytest.raises(ValueError, match="batch_size"):
        val_nll(model, np.arange(100) % 256, batch_size=0)


def test_experiment_config_inputs():
    import dataclasses

    with pytest.raises(ValueError, match="layers"):
        run(dataclasses.replace(TIERS["smoke"], layers=(1, 2)))
    with pytest.raises(ValueError, match="num_heads"):
        run(dataclasses.replace(TIERS["smoke"], dims=(18,)))
    with pytest.raises(ValueError, match="max_iter"):
        run(dataclasses.replace(TIERS["smoke"], max_iter=0))
    with pytest.raises(ValueError, match="lr"):
        run(dataclasses.replace(TIERS["smoke"], lr=float("nan")))


@settings(max_examples=25, deadline=None)
@given(t=st.integers(1, 8), lo=st.integers(-5, 300))
def test_any_token_stream_is_accepted_or_refused_clearly(model, t, lo):
    idx = torch.full((1, t), lo)
    if 0 <= lo < 256:
        assert model(idx)[0].shape == (1, t, 256)
    else:
        with pytest.raises(ValueError, match="idx"):
            model(idx)
