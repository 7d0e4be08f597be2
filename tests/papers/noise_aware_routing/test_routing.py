"""Routing: round trip, complement, inverse permutation, TREAD-reference equivalence,
noise groups and their boundaries."""

from __future__ import annotations

import math

import pytest
import torch

from neurips26.papers.noise_aware_routing import (
    expected_ratio,
    noise_aware_ratios,
    noise_groups,
    num_kept,
    random_permutations,
    route_end,
    route_start,
)


def _x(b=5, n=16, c=3, seed=0):
    return torch.randn(b, n, c, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.5, 0.75, 0.9])
def test_round_trip_with_identity_span_is_exact(ratio):
    x = _x()
    xr, info = route_start(x, ratio, generator=torch.Generator().manual_seed(1))
    assert xr.shape == (5, num_kept(16, ratio), 3)
    assert torch.equal(route_end(xr, info, x), x)


def test_kept_and_bypassing_tokens_are_complements_and_restore_inverts():
    x = _x()
    _, info = route_start(x, 0.5, generator=torch.Generator().manual_seed(2))
    for b in range(5):
        kept, bypass = set(info.ids_keep[b].tolist()), set(info.ids_bypass[b].tolist())
        assert not kept & bypass and kept | bypass == set(range(16))
    assert torch.equal(info.ids_shuffle.gather(1, info.ids_restore), torch.arange(16).expand(5, 16))
    assert torch.equal(info.ids_restore.gather(1, info.ids_shuffle), torch.arange(16).expand(5, 16))


def _reference_router(x, ratio, ids_shuffle, span):
    """A direct gather / scatter of TREAD's router, written independently (loops)."""
    b, n, _ = x.shape
    k = math.ceil(round((1 - ratio) * n, 9))
    out = x.clone()
    for i in range(b):
        keep = ids_shuffle[i, :k]
        routed = torch.stack([x[i, j] for j in keep.tolist()])  # (K, C)
        routed = span(routed)
        for slot, j in enumerate(keep.tolist()):
            out[i, j] = routed[slot]
    return out


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.75])
def test_equals_reference_gather_scatter_bitwise(ratio):
    x = _x(4, 12, 2, seed=3)
    perm = random_permutations(4, 12, generator=torch.Generator().manual_seed(4))
    span = lambda t: torch.sin(t) * 3 + 1  # noqa: E731 - elementwise: same bits either way
    xr, info = route_start(x, ratio, ids_shuffle=perm)
    ours = route_end(span(xr), info, x)
    assert torch.equal(ours, _reference_router(x, ratio, perm, span))
    # bypassing tokens are untouched, routed ones changed
    moved = (ours != x).any(-1)
    assert moved.sum(1).tolist() == [info.num_keep] * 4


def test_num_kept_is_ceil():
    assert [num_kept(64, r) for r in (0.0, 0.25, 0.5, 0.75)] == [64, 48, 32, 16]
    assert num_kept(10, 0.55) == 5 and num_kept(10, 0.99) == 1


def test_noise_groups_boundaries():
    # T = 999: T/3 = 333 and 2T/3 = 666 exactly; a timestep on a boundary goes up.
    t = torch.tensor([0, 332, 333, 334, 665, 666, 998])
    assert noise_groups(t, num_timesteps=999).tolist() == [0, 0, 1, 1, 1, 2, 2]
    # T = 1000: thresholds ceil(333.33) = 334 and ceil(666.67) = 667.
    t = torch.tensor([333, 334, 666, 667])
    assert noise_groups(t, num_timesteps=1000).tolist() == [0, 1, 1, 2]
    assert noise_aware_ratios(torch.tensor([0, 500, 999])).tolist() == [0.25, 0.5, 0.75]
    rev = noise_aware_ratios(torch.tensor([0, 500, 999]), ratios=(0.75, 0.5, 0.25))
    assert rev.tolist() == [0.75, 0.5, 0.25]


def test_mean_ratio_on_uniform_t_matches_tread():
    assert expected_ratio(num_timesteps=999) == pytest.approx(0.5, abs=1e-12)
    assert expected_ratio(num_timesteps=1000) == pytest.approx(0.5, abs=1e-3)
    t = torch.randint(0, 1000, (200_000,), generator=torch.Generator().manual_seed(0))
    assert float(noise_aware_ratios(t).mean()) == pytest.approx(0.5, abs=5e-3)


@pytest.mark.parametrize("kw, word", [
    ({"boundaries": (0.6, 0.3)}, "boundaries"),
    ({"boundaries": (0.0, 0.5)}, "boundaries"),
    ({"boundaries": (0.5, 1.0)}, "boundaries"),
    ({"ratios": (0.2, 0.5, 1.0)}, "ratios"),
    ({"ratios": (0.2, -0.1, 0.5)}, "ratios"),
    ({"ratios": (0.2, 0.5)}, "ratios"),
])  # fmt: skip
def test_bad_groups_are_refused(kw, word):
    with pytest.raises(ValueError, match=word):
        noise_aware_ratios(torch.tensor([1, 2]), **kw)


def test_bad_route_inputs():
    x = _x()
    with pytest.raises(ValueError, match="ratio"):
        route_start(x, 1.0)
    with pytest.raises(ValueError, match="x"):
        route_start(torch.full((2, 3, 4), float("nan")), 0.5)
    with pytest.raises(ValueError, match="t"):
        noise_aware_ratios(torch.tensor([0, 1000]))
    with pytest.raises(ValueError, match="t"):
        noise_aware_ratios(torch.tensor([-1, 3]))
    with pytest.raises(ValueError, match="ids_shuffle"):
        route_start(x, 0.5, ids_shuffle=torch.zeros(5, 16, dtype=torch.long))
    xr, info = route_start(x, 0.5)
    with pytest.raises(ValueError, match="x_routed"):
        route_end(xr[:, :3], info, x)
