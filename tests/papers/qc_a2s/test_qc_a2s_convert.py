"""qc_a2s: conversion of tiny Hugging Face causal LMs (LLaMA, Qwen2, Mistral, Gemma layouts)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.qc_a2s import (
    QCA2S,
    TTFSLinear,
    calibration_stats,
    convert_continuous_baseline,
    convert_qc_a2s,
    find_sites,
    restore,
    set_mode,
    smooth_scales,
    spike_statistics,
    ttfs_layers,
    ttfs_quantize,
)

G = torch.Generator().manual_seed(0)
IDS = torch.randint(256, (3, 12), generator=G)


def _logits(model, ids=IDS):
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gemma"])
@pytest.mark.parametrize("targets", ["mlp", "all"])
def test_snn_simulation_equals_fake_quantized_ann_bit_for_bit(arch, targets):
    lm = tiny_causal_lm(arch, seed=1, num_layers=2, hidden_size=32, intermediate_size=64)
    stats = calibration_stats(lm, IDS, targets=targets, max_samples=2048)
    for steps, convert in ((1, convert_qc_a2s), (7, convert_qc_a2s), (16, convert_qc_a2s),
                           (64, convert_continuous_baseline)):  # fmt: skip
        res = convert(lm, stats, num_steps=steps, targets=targets)
        res.set_mode("ann")
        ann = _logits(lm)
        res.set_mode("snn")
        snn = _logits(lm)
        assert torch.equal(ann, snn), (arch, targets, steps)
        assert spike_statistics(lm, reset=True).max_spikes_per_neuron == 1
    stats64 = calibration_stats(lm.double(), IDS, targets=targets, max_samples=2048)
    res = convert_qc_a2s(lm, stats64, num_steps=5, targets=targets)
    res.set_mode("ann")
    ann = _logits(lm)
    res.set_mode("snn")
    assert torch.equal(ann, _logits(lm)) and ann.dtype == torch.float64


def test_sites_and_latency():
    lm = tiny_causal_lm("llama", seed=0, num_layers=3)
    sites = find_sites(lm)
    assert list(sites) == [f"layers.{i}.{k}" for i in range(3) for k in ("mlp.in", "mlp.down")]
    assert sites["layers.0.mlp.in"] == ("model.layers.0.mlp.gate_proj",
                                        "model.layers.0.mlp.up_proj")  # fmt: skip
    res = convert_qc_a2s(lm, IDS, num_steps=8, targets="all")
    assert res.num_stages == 12 and res.latency_steps == 96
    assert len(ttfs_layers(lm)) == 3 * 7  # q, k, v, o, gate, up, down
    assert set(res.thetas) == set(find_sites(lm, "all"))


def test_float_mode_and_restore_give_the_float_model_back():
    lm = tiny_causal_lm("qwen2", seed=2)
    ref = _logits(lm)
    convert_qc_a2s(lm, IDS, num_steps=4)
    assert not torch.equal(_logits(lm), ref)  # quantization changes the logits
    set_mode(lm, "float")
    assert torch.equal(_logits(lm), ref)
    restore(lm)
    assert not ttfs_layers(lm) and torch.equal(_logits(lm), ref)


def test_large_T_converges_to_the_float_model():
    lm = tiny_causal_lm("llama", seed=3)
    ref = _logits(lm)
    errs = []
    for steps in (4, 64, 4096):
        convert_qc_a2s(lm, IDS, num_steps=steps, clip="max")  # no clipping error
        errs.append(float((_logits(lm) - ref).abs().max()))
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3 * errs[0] + 1e-4


def test_smoothing_is_a_per_neuron_threshold():
    # Migrating s into the weights, W (s * q_theta(x / s)), equals thresholds theta * s_j.
    lm = tiny_causal_lm("llama", seed=4)
    stats = calibration_stats(lm, IDS)
    res = convert_qc_a2s(lm, stats, num_steps=8, smooth_alpha=0.5)
    site = "layers.0.mlp.down"
    s = smooth_scales(stats.stats[site], 0.5)
    layer = lm.get_submodule("model.layers.0.mlp.down_proj")
    x = torch.randn(5, layer.linear.in_features, generator=G, dtype=torch.float64) * 0.3
    theta = float((res.thetas[site] / s).mean())
    assert torch.allclose(res.thetas[site], theta * s.to(res.thetas[site].dtype))
    migrated = s.double() * ttfs_quantize(x / s.double(), theta=theta, num_steps=8)
    direct = ttfs_quantize(x, theta=theta * s.double(), num_steps=8)
    assert torch.allclose(migrated, direct, atol=1e-12)
    # SmoothQuant's scales, by hand
    st = stats.stats[site]
    assert torch.allclose(s, st.absmax.clamp(min=1e-5) ** 0.5
                          / st.weight_absmax.clamp(min=1e-5) ** 0.5)  # fmt: skip


def test_calibration_statistics_match_a_direct_capture():
    lm = tiny_causal_lm("mistral", seed=5)
    seen = {}
    h = lm.model.layers[1].mlp.down_proj.register_forward_pre_hook(
        lambda m, a: seen.__setitem__("x", a[0].detach()))
    _logits(lm)
    h.remove()
    stats = calibration_stats(lm, IDS, batch_size=2, max_samples=500, seed=3)
    st = stats.stats["layers.1.mlp.down"]
    assert torch.equal(st.absmax, seen["x"].reshape(-1, seen["x"].shape[-1]).abs().amax(0))
    assert len(st.values) == len(st.channels) and 400 <= len(st.values) <= 600
    flat = seen["x"].reshape(-1, seen["x"].shape[-1])
    assert all(bool((flat[:, c] == v).any()) for v, c in zip(st.values[:50], st.channels[:50],
                                                             strict=True))  # fmt: skip
    w = torch.maximum(lm.model.layers[1].mlp.down_proj.weight.abs().amax(0), torch.zeros(1))
    assert torch.equal(st.weight_absmax, w)
    again = calibration_stats(lm, IDS, batch_size=2, max_samples=500, seed=3)
    assert torch.equal(again.stats["layers.1.mlp.down"].values, st.values)
    # on a converted model the statistics are still the float model's
    convert_qc_a2s(lm, stats, num_steps=2)
    conv = calibration_stats(lm, IDS, batch_size=2, max_samples=500, seed=3)
    assert torch.equal(conv.stats["layers.1.mlp.down"].absmax, st.absmax)


def test_continuous_baseline_clips_at_the_max_with_the_floor_neuron():
    lm = tiny_causal_lm("llama", seed=6)
    stats = calibration_stats(lm, IDS)
    res = convert_continuous_baseline(lm, stats, num_steps=32)
    assert not res.compatible and res.smooth_alpha is None and res.clip == "max"
    for site, st in stats.stats.items():
        assert float(res.thetas[site]) == pytest.approx(float(st.absmax.max()))
    qc = convert_qc_a2s(lm, stats, num_steps=32)
    assert qc.compatible and qc.thetas["layers.0.mlp.in"].shape == (64,)


def _plant(lm, value, where=(1, 5, 7)):
    """A forward pre-hook writing one massive activation into the input of layer 0's
    down_proj (sequence, token, channel ``where``)."""
    b, t, c = where

    def hook(_mod, args):
        x = args[0].clone()
        if x.shape[0] > b:
            x[b, t, c] = value
        return (x,)

    return lm.model.layers[0].mlp.down_proj.register_forward_pre_hook(hook)


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_the_clip_sees_a_planted_massive_activation_the_subsample_misses(alpha):
    """One value of 400 among ~1e-2-scale activations: its squared error if clipped
    outweighs every other value's rounding error, so the MSE-best clip over every token
    keeps it. A uniform subsample of 32 values misses it (asserted), and so does any
    clip whose candidates come from that subsample (``mse_subsample``): this test fails
    for candidates read from the subsample."""
    lm = tiny_causal_lm("llama", seed=6)
    h = _plant(lm, 400.0)
    stats = calibration_stats(lm, IDS, max_samples=32, smooth_alpha=alpha)
    site, ch = "layers.0.mlp.down", 7
    st = stats.stats[site]
    assert float(st.absmax[ch]) == 400.0  # the streamed maximum sees it
    assert float(st.values.abs().max()) < 40.0  # the subsample does not
    full = convert_qc_a2s(copy.deepcopy(lm), stats, num_steps=16, smooth_alpha=alpha)
    sub = convert_qc_a2s(copy.deepcopy(lm), stats, num_steps=16, smooth_alpha=alpha,
                         clip="mse_subsample")
    h.remove()
    th_full, th_sub = full.thetas[site], sub.thetas[site]
    pick = (lambda th: float(th)) if alpha is None else (lambda th: float(th[ch]))
    assert pick(th_full) >= 400.0 * (1 - 1e-6)
    assert pick(th_sub) < 40.0
    # the histograms hold every real token's value, in both domains
    n = stats.num_tokens * st.absmax.numel()
    assert float(st.hist[0, :, 0].sum()) == n and float(st.hist[1, :, 0].sum()) == n


def _histogram(x, top, bpo=32, octaves=32):
    """The (2, 3, K + 1) histogram calibration_stats streams, built directly from ``x``."""
    nbin = bpo * octaves
    mag = x.abs().double()
    idx = torch.floor(-torch.log2(mag / top) * bpo).nan_to_num(nbin, nbin, 0)
    idx = idx.clamp(0, nbin).long() + (x > 0).long() * (nbin + 1)
    out = torch.stack([torch.bincount(idx, weights=w, minlength=2 * (nbin + 1))
                       for w in (None, mag, mag * mag)]).double()  # fmt: skip
    return out.reshape(3, 2, nbin + 1).transpose(0, 1)


@pytest.mark.parametrize("T", [4, 16, 256])
@pytest.mark.parametrize("compatible", [True, False])
def test_histogram_clip_matches_the_exact_mse_search(T, compatible):
    """On heavy-tailed values, the clip read from the histogram has an exact quantization
    MSE within 2% of the best percentile clip searched on the values themselves."""
    from neurips26.papers.qc_a2s import calibrate_theta, histogram_theta

    g = torch.Generator().manual_seed(T)
    x = torch.randn(40000, generator=g, dtype=torch.float64) ** 3
    top = float(x.abs().max())
    th_h = histogram_theta(_histogram(x, top), top, num_steps=T, compatible=compatible)
    th_x = calibrate_theta(x, num_steps=T, compatible=compatible)

    def mse(th):
        return float(((ttfs_quantize(x, theta=th, num_steps=T, compatible=compatible)
                       - x) ** 2).mean())  # fmt: skip

    assert mse(th_h) <= mse(th_x) * 1.02
    # a lone massive value the percentiles do not reach: extra candidates bring it in
    y = torch.cat([x, torch.tensor([1e4], dtype=torch.float64)])
    th = histogram_theta(_histogram(y, 1e4), 1e4, num_steps=T, compatible=compatible,
                         percentiles=[50.0])  # fmt: skip
    assert th == pytest.approx(1e4)


def test_histogram_theta_refuses_bad_input():
    from neurips26.papers.qc_a2s import histogram_theta

    h = torch.zeros(2, 3, 9, dtype=torch.float64)
    with pytest.raises(ValueError, match="hist"):
        histogram_theta(h, 1.0, num_steps=4)  # no value
    with pytest.raises(ValueError, match="hist"):
        histogram_theta(torch.zeros(3, 9), 1.0, num_steps=4)
    h[1, :, 0] = 1.0
    with pytest.raises(ValueError, match="top"):
        histogram_theta(h, 0.0, num_steps=4)
    with pytest.raises(ValueError, match="smooth_alpha"):
        lm = tiny_causal_lm("llama", seed=1)
        convert_qc_a2s(lm, calibration_stats(lm, IDS), smooth_alpha=0.3)


def test_spike_counts_against_an_independent_count():
    lm = tiny_causal_lm("llama", seed=7)
    res = convert_qc_a2s(lm, IDS, num_steps=8)
    spike_statistics(lm, reset=True)
    inputs = {}
    hooks = [m.register_forward_pre_hook(lambda m, a, n=n: inputs.__setitem__(n, a[0]))
             for n, m in lm.named_modules() if isinstance(m, TTFSLinear)]  # fmt: skip
    res.set_mode("snn")
    _logits(lm)
    for h in hooks:
        h.remove()
    stats = spike_statistics(lm)
    spikes = sops = neurons = 0
    for name, x in inputs.items():
        m = lm.get_submodule(name)
        fired = int((ttfs_quantize(x, theta=m.theta, num_steps=8) != 0).sum())
        sops += fired * m.linear.out_features
        if m.count_spikes:  # gate and up share their input neurons
            spikes, neurons = spikes + fired, neurons + x.numel()
    assert (stats.num_spikes, stats.synaptic_ops, stats.num_neurons) == (spikes, sops, neurons)
    assert neurons == IDS.numel() * 2 * (64 + 128)  # 2 layers x (hidden + intermediate)
    assert 0 < stats.spikes_per_neuron <= 1 and 0 < stats.sops_per_mac <= 1
    assert spike_statistics(lm, reset=True).num_spikes == spikes
    assert spike_statistics(lm).num_spikes == 0


def test_estimator_follows_scikit_learn_conventions():
    from sklearn.base import clone

    est = QCA2S(num_steps=4, smooth_alpha=None)
    assert clone(est).get_params() == est.get_params()
    lm = tiny_causal_lm("gemma", seed=8)
    est.fit(lm, IDS)
    assert est.model_ is lm and est.latency_steps_ == 4 * 4
    assert all(t.ndim == 0 for t in est.thetas_.values())  # no smoothing: one theta per site


def test_bad_models_and_activations_are_named():
    with pytest.raises(ValueError, match="model"):
        convert_qc_a2s(nn.Sequential(nn.Linear(3, 3)), IDS)
    lm = tiny_causal_lm("llama", seed=9)
    broken = copy.deepcopy(lm)
    with torch.no_grad():
        broken.model.layers[1].mlp.up_proj.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"layers\.1\.mlp\.down"):
        calibration_stats(broken, IDS)
    res = convert_qc_a2s(lm, IDS, num_steps=4)
    res.set_mode("snn")
    layer = lm.get_submodule("model.layers.0.mlp.down_proj")
    with pytest.raises(ValueError, match=r"activations x of layers\.0\.mlp\.down"):
        layer(torch.full((1, 128), float("inf")))
    with pytest.raises(ValueError, match="calib"):
        convert_qc_a2s(lm, [[1, 2, 3], [4, 5]], num_steps=4)
    with pytest.raises(ValueError, match="calib"):
        convert_qc_a2s(lm, torch.zeros(0, 4, dtype=torch.long), num_steps=4)
    with pytest.raises(TypeError, match="calib"):
        convert_qc_a2s(lm, torch.full((2, 4), float("nan")), num_steps=4)
    with pytest.raises(ValueError, match="smooth_alpha"):
        convert_qc_a2s(lm, IDS, smooth_alpha=1.5)
    with pytest.raises(ValueError, match="num_steps"):
        convert_qc_a2s(lm, IDS, num_steps=0)
