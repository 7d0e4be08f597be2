"""qc_a2s: discrete TTFS neurons against the closed form of a static quantizer.

Oracles: Eq. (3)/(4) evaluated independently in float64 numpy on a dense grid; a
pure-Python per-neuron membrane loop; the error bounds of the two roundings (hypothesis);
Max's (1960) optimal uniform quantizer steps for a Gaussian, recomputed here by numerical
integration with scipy.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from neurips26.papers.qc_a2s import (
    SpikeTrain,
    calibrate_theta,
    closed_form_levels,
    near_tie,
    ttfs_decode,
    ttfs_encode,
    ttfs_levels,
    ttfs_quantize,
)

GRID = np.linspace(-3.0, 3.0, 24001)  # includes negatives and values beyond the clip


@pytest.mark.parametrize("num_steps", [1, 2, 3, 4, 7, 16, 64, 1024])
@pytest.mark.parametrize("compatible", [True, False])
def test_closed_form_on_a_dense_grid(num_steps, compatible):
    theta = 1.7
    x = torch.as_tensor(GRID)
    ties = near_tie(GRID, theta=theta, num_steps=num_steps, compatible=compatible, tol=1e-9)
    # Eq. (4): round half up, or Eq. (3): floor, of u = T|x|/theta, clipped to [0, T]
    u = num_steps * np.abs(GRID) / theta
    q = np.clip(np.floor(u + 0.5) if compatible else np.floor(u), 0, num_steps)
    expected = np.sign(GRID) * q * theta / num_steps
    spikes = ttfs_encode(x, theta=theta, num_steps=num_steps, compatible=compatible)
    got = ttfs_decode(spikes).numpy()
    assert np.array_equal(got[~ties], expected[~ties])
    assert ties.sum() < 0.01 * GRID.size  # the excluded ties are few
    levels = closed_form_levels(GRID, theta=theta, num_steps=num_steps, compatible=compatible)
    assert np.array_equal(levels[~ties], (np.sign(GRID) * q)[~ties])


def test_naive_neuron_is_biased_down_by_half_a_step():
    x = torch.rand(200000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    theta, T = 1.0, 8
    floor = ttfs_quantize(x, theta=theta, num_steps=T, compatible=False, signed=False)
    comp = ttfs_quantize(x, theta=theta, num_steps=T, compatible=True, signed=False)
    whole = x < theta - theta / T  # whole floor cells [k, k + 1) theta / T
    assert abs(float((x - floor)[whole].mean()) - theta / (2 * T)) < 1e-3
    whole = (x >= theta / (2 * T)) & (x < theta - theta / (2 * T))  # whole rounding cells
    assert abs(float((x - comp)[whole].mean())) < 1e-3


@settings(max_examples=40, deadline=None)
@given(x=st.lists(st.floats(-10, 10), min_size=1, max_size=40),
       theta=st.floats(0.05, 8.0), num_steps=st.integers(1, 64))
def test_error_bounds(x, theta, num_steps):
    xt = torch.tensor(x, dtype=torch.float64)
    inside = xt.abs() <= theta
    step = theta / num_steps
    comp = ttfs_quantize(xt, theta=theta, num_steps=num_steps)
    assert bool(((xt - comp).abs()[inside] <= step / 2 + 1e-12).all())  # round half up
    floor = ttfs_quantize(xt, theta=theta, num_steps=num_steps, compatible=False)
    assert bool(((xt - floor).abs()[inside] < step + 1e-12).all())  # floor: < one step
    assert bool((comp.abs() <= theta * (1 + 1e-12)).all())  # clipped
    # the ANN quantizer is the decoded SNN, bit for bit
    assert torch.equal(comp, ttfs_decode(ttfs_encode(xt, theta=theta, num_steps=num_steps)))


def _membrane_loop(x: float, theta: float, T: int, compatible: bool):
    """One neuron, pure Python: V(k) = x + k theta/T + b0; first k with V >= theta."""
    b0 = theta / (2 * T) if compatible else 0.0
    for k in range(T):
        if x + k * theta / T + b0 >= theta:
            return k
    return -1


@pytest.mark.parametrize("compatible", [True, False])
def test_vectorized_neurons_equal_a_per_neuron_membrane_loop(compatible):
    rng = np.random.default_rng(3)
    x = rng.normal(size=400) * 1.5
    theta, T = 1.3, 12
    spikes = ttfs_encode(torch.as_tensor(x), theta=theta, num_steps=T, compatible=compatible)
    for xi, t, p in zip(x, spikes.times.tolist(), spikes.polarity.tolist(), strict=True):
        kp = _membrane_loop(xi, theta, T, compatible)
        kn = _membrane_loop(-xi, theta, T, compatible)
        assert kp == -1 or kn == -1  # at most one of the pair fires
        assert (t, p) == ((kp, 1) if kp >= 0 else (kn, -1) if kn >= 0 else (-1, 0))


def test_one_spike_per_signed_neuron_and_polarity():
    x = torch.linspace(-2, 2, 4001)
    s = ttfs_encode(x, theta=1.0, num_steps=16)
    assert int(s.counts.max()) == 1
    assert bool((s.polarity[x < 0] <= 0).all()) and bool((s.polarity[x > 0] >= 0).all())
    assert s.num_spikes == int((s.times >= 0).sum())
    unsigned = ttfs_encode(x, theta=1.0, num_steps=16, signed=False)
    assert bool((unsigned.times[x < 0] == -1).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("compatible", [True, False])
def test_snn_equals_ann_bit_for_bit_with_per_channel_thresholds(dtype, compatible):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(64, 48, generator=g) * 3).to(dtype)
    theta = (torch.rand(48, generator=g) + 0.2).to(dtype)
    for T in (1, 5, 16, 333):
        ann = ttfs_quantize(x, theta=theta, num_steps=T, compatible=compatible)
        snn = ttfs_decode(ttfs_encode(x, theta=theta, num_steps=T, compatible=compatible))
        assert ann.dtype == dtype and torch.equal(ann, snn)
        lv = ttfs_levels(x, theta=theta, num_steps=T, compatible=compatible)
        assert torch.equal(lv.to(dtype) * (theta / T), ann)


def test_exact_ties_follow_the_neuron():
    # x = (k + 1/2) theta / T exactly: round half up puts it on level k + 1.
    T, theta = 4, 1.0
    x = torch.tensor([0.125, 0.375, -0.375, 0.0, 1.0, 5.0], dtype=torch.float64)
    assert ttfs_levels(x, theta=theta, num_steps=T).tolist() == [1, 2, -2, 0, 4, 4]
    assert ttfs_levels(x, theta=theta, num_steps=T, compatible=False).tolist() == [0, 1, -1, 0,
                                                                                  4, 4]


def _max_mse(theta, T):
    """E (x - Q(x))^2 of the signed compatible quantizer for x ~ N(0, 1), by quadrature."""
    d, total = theta / T, 0.0
    for k in range(T + 1):
        lo, hi = max(0.0, (k - 0.5) * d), ((k + 0.5) * d if k < T else np.inf)
        total += integrate.quad(lambda x, k=k: (x - k * d) ** 2 * 2 * stats.norm.pdf(x),
                                lo, hi)[0]  # fmt: skip
    return total


@pytest.mark.parametrize("T", [1, 2, 4])
def test_mse_clip_matches_the_optimal_gaussian_quantizer(T):
    # Max (1960): optimal uniform steps 1.224 (3 levels), 0.8430 (5), 0.5338 (9) for N(0,1).
    best = optimize.minimize_scalar(lambda t: _max_mse(t, T), bounds=(0.1, 6),
                                    method="bounded").x  # fmt: skip
    assert abs(best / T - {1: 1.224, 2: 0.8430, 4: 0.5338}[T]) < 2e-3
    x = torch.randn(200000, generator=torch.Generator().manual_seed(T), dtype=torch.float64)
    theta = calibrate_theta(x, num_steps=T, percentiles=np.linspace(60, 99.5, 80))
    assert abs(theta / best - 1) < 0.03


def test_mse_clip_beats_max_and_is_the_grid_optimum():
    x = torch.randn(50000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    p = np.linspace(90, 100, 41)
    for T in (2, 4, 8, 16):
        theta = calibrate_theta(x, num_steps=T, percentiles=p)
        top = calibrate_theta(x, num_steps=T, method="max")
        assert top == float(x.abs().max())

        def mse(c, T=T):
            return float(((x - ttfs_quantize(x, theta=c, num_steps=T)) ** 2).mean())

        assert mse(theta) < mse(top)
        # brute force over the same candidates, with numpy's closed form
        a = x.numpy()
        errs = []
        for c in np.unique(np.percentile(np.abs(a), p)):
            q = np.sign(a) * np.clip(np.floor(T * np.abs(a) / c + 0.5), 0, T) * c / T
            errs.append((((a - q) ** 2).mean(), c))
        assert theta == pytest.approx(min(errs)[1], rel=1e-12)


def test_decode_refuses_bad_spike_trains():
    s = ttfs_encode(torch.tensor([0.5]), theta=1.0, num_steps=4)
    bad = SpikeTrain(times=torch.tensor([7]), polarity=s.polarity, counts=s.counts,
                     num_steps=4, theta=s.theta)  # fmt: skip
    with pytest.raises(ValueError, match="spikes"):
        ttfs_decode(bad)
    with pytest.raises(TypeError, match="spikes"):
        ttfs_decode("abc")


@pytest.mark.parametrize("bad", [float("nan"), 0.0, -1.0, float("inf")])
def test_theta_refused(bad):
    with pytest.raises(ValueError, match="theta"):
        ttfs_quantize(torch.ones(3), theta=bad, num_steps=4)


def test_inputs_refused():
    with pytest.raises(ValueError, match="x"):
        ttfs_encode(torch.tensor([1.0, float("inf")]), theta=1.0, num_steps=4)
    with pytest.raises(ValueError, match="num_steps"):
        ttfs_quantize(torch.ones(3), theta=1.0, num_steps=0)
    with pytest.raises(ValueError, match="theta"):
        ttfs_quantize(torch.ones(3, 4), theta=torch.ones(3), num_steps=4)
    with pytest.raises(ValueError, match="samples"):
        calibrate_theta(torch.zeros(10), num_steps=4)
    with pytest.raises(ValueError, match="samples"):
        calibrate_theta(torch.tensor([]), num_steps=4)
