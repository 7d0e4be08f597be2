"""A user's velocity network by its call signature (torchcfm's ``model(t, x)`` or a plain
``model(x, t)``), not only networks with a ``dim`` attribute."""

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.papers.discriminator_rl import (
    VelocityAdapter,
    VelocityMLP,
    drl_round,
    flow_matching_loss,
    sample,
    train_flow_matching,
)


class TimeFirst(nn.Module):
    """torchcfm / torchdyn style: ``forward(t, x)``, no ``dim`` attribute."""

    def __init__(self, d=2):
        super().__init__()
        self.lin = nn.Linear(d + 1, d)

    def forward(self, t, x):
        return self.lin(torch.cat([x, t.reshape(-1, 1).expand(len(x), 1)], dim=1))


class XFirst(TimeFirst):
    def forward(self, x, t):  # the same network, arguments the other way round
        return super().forward(t, x)


def test_both_orders_give_the_same_loss_as_the_same_network_called_directly():
    torch.manual_seed(0)
    a = TimeFirst()
    b = XFirst()
    b.load_state_dict(a.state_dict())
    x0, x1, t = torch.randn(8, 2), torch.randn(8, 2), torch.rand(8)
    xt = (1 - t[:, None]) * x0 + t[:, None] * x1
    direct = ((a(t, xt) - (x1 - x0)) ** 2).mean()
    assert torch.allclose(flow_matching_loss(a, x0, x1, t), direct)
    assert torch.allclose(flow_matching_loss(b, x0, x1, t), direct)


def test_training_a_time_first_network_updates_it_in_place():
    net = TimeFirst()
    before = net.lin.weight.detach().clone()
    data = np.random.default_rng(0).normal(size=(64, 2))
    train_flow_matching(net, data, max_iter=3, batch_size=16)
    assert not torch.equal(before, net.lin.weight)


def test_sampling_needs_the_dimension_and_says_how_to_give_it():
    with pytest.raises(TypeError, match="VelocityAdapter"):
        sample(TimeFirst(), num_samples=4, num_steps=2)
    s = sample(VelocityAdapter(TimeFirst(), dim=2), num_samples=4, num_steps=2)
    assert s.x.shape == (4, 2)


def test_a_drl_round_runs_on_a_torchcfm_style_network():
    data = np.random.default_rng(1).normal(size=(64, 2))
    res = drl_round(VelocityAdapter(TimeFirst(), dim=2), data, num_samples=32,
                    steps_per_round=1, num_steps=2, disc_kw={"max_iter": 5, "hidden": 8})
    assert 0 < res.ess <= 32


def test_our_own_model_is_left_unwrapped_and_bad_arguments_are_named():
    net = VelocityMLP(dim=2, hidden=8)
    assert VelocityAdapter(net).dim == 2 and VelocityAdapter(net).signature == "x_t"
    with pytest.raises(TypeError, match="model"):
        VelocityAdapter(lambda x, t: x)
    with pytest.raises(ValueError, match="signature"):
        VelocityAdapter(TimeFirst(), signature="xt")
    with pytest.raises(ValueError, match="dim"):
        VelocityAdapter(TimeFirst(), dim=0)
    with pytest.raises(TypeError, match="torchcfm"):
        flow_matching_loss("net", torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2))
