"""route_span: the per-ratio sub-batching outside MiniDiT, on a user's own blocks."""

import pytest
import torch
from torch import nn

from neurips26.papers.noise_aware_routing import MiniDiT, random_permutations, route_span


class Block(nn.Module):
    """A user's block taking (x, cond): a token-wise map, so routing is exact."""

    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x, cond):
        return x + torch.tanh(self.lin(x)) * cond[:, None, None]


def test_unrouted_and_zero_ratio_spans_equal_the_plain_loop():
    torch.manual_seed(0)
    blocks = nn.ModuleList([Block(), Block()])
    x, cond = torch.randn(3, 5, 4), torch.rand(3)
    plain = x
    for blk in blocks:
        plain = blk(plain, cond)
    assert torch.allclose(route_span(blocks, x, None, cond), plain)
    assert torch.allclose(route_span(blocks, x, torch.zeros(3), cond), plain)


def test_each_sample_routes_its_own_share_and_bypassing_tokens_keep_their_value():
    torch.manual_seed(1)
    blocks = [Block()]
    x, cond = torch.randn(4, 8, 4), torch.ones(4)
    ratios = torch.tensor([0.0, 0.5, 0.75, 0.5])
    ids = random_permutations(4, 8, generator=torch.Generator().manual_seed(0))
    out = route_span(blocks, x, ratios, cond, ids_shuffle=ids)
    full = blocks[0](x, cond)
    for i, r in enumerate(ratios.tolist()):
        keep = ids[i, : 8 - int(r * 8)]
        moved = torch.zeros(8, dtype=torch.bool)
        moved[keep] = True
        assert torch.allclose(out[i, moved], full[i, moved])  # token-wise block: exact
        assert torch.equal(out[i, ~moved], x[i, ~moved])


def test_minidit_run_span_is_route_span_on_its_blocks():
    torch.manual_seed(2)
    net = MiniDiT(image_size=8, patch_size=2, in_channels=1, dim=16, depth=4, num_heads=2,
                  route_start=1, route_end=2)
    h, c = torch.randn(3, 16, 16), torch.randn(3, 16)
    ratios = torch.tensor([0.5, 0.0, 0.5])
    ids = random_permutations(3, 16, generator=torch.Generator().manual_seed(3))
    ours = net.run_span(h, c, ratios, ids_shuffle=ids)
    theirs = route_span(net.blocks[1:3], h, ratios, c, ids_shuffle=ids)
    assert torch.equal(ours, theirs)


def test_bad_arguments_are_named():
    x = torch.zeros(2, 4, 3)
    with pytest.raises(TypeError, match="blocks"):
        route_span(42, x, None)
    with pytest.raises(ValueError, match="per_sample"):
        route_span([lambda x, c: x], x, None, torch.zeros(3))
    with pytest.raises(ValueError, match="ratios"):
        route_span([lambda x: x], x, torch.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="ratios"):
        route_span([lambda x: x], x, torch.tensor([0.5]))
