"""asvq: oracles for the quantizers (brute force, autograd, vector-quantize-pytorch),
the usage / perplexity metrics, the tokenizers and the speech loader."""

from __future__ import annotations

import io
import math
import wave

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.common.data import DataNotInstalledError
from neurips26.papers.asvq import (
    ASVQ,
    EMAVQ,
    SCALES,
    SPEECH_DIR,
    SimVQ,
    VanillaVQ,
    VQAutoencoder,
    VQOutput,
    codebook_perplexity,
    codebook_usage,
    count_loss_spikes,
    evaluate_vqae,
    load_speech_clips,
    log_spectrogram,
    nearest_code,
    read_wav,
    rotate_to,
    train_vqae,
)

vqp = pytest.importorskip("vector_quantize_pytorch")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _inv_softplus(x):
    x = torch.as_tensor(x, dtype=torch.float32)
    return x + torch.log(-torch.expm1(-x))


# --- assignment -----------------------------------------------------------------------


@pytest.mark.parametrize("n,k,d", [(1, 2, 1), (37, 50, 8), (300, 1000, 3)])
def test_nearest_code_equals_brute_force(n, k, d):
    g = _gen(n)
    z, c = torch.randn(n, d, generator=g), torch.randn(k, d, generator=g)
    brute = ((z[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)  # (N, K, d) materialised
    assert torch.equal(nearest_code(z, c), brute)


def test_nearest_code_ties_go_to_the_lowest_index():
    c = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    z = torch.tensor([[0.9, 0.0], [0.1, 0.0], [0.5, 0.0]])
    # [0.5, 0] is equidistant from codes 0, 1, 2, 3: the lowest index wins.
    assert nearest_code(z, c).tolist() == [0, 1, 0]


def test_nearest_code_is_chunked_beyond_one_chunk():
    g = _gen(1)
    z, c = torch.randn(9000, 4, generator=g), torch.randn(17, 4, generator=g)
    assert torch.equal(nearest_code(z, c), torch.cdist(z, c).argmin(1))


# --- gradients ------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: ASVQ(6, 40), lambda: SimVQ(6, 40),
                                  lambda: VanillaVQ(6, 40), lambda: EMAVQ(6, 40)])
def test_straight_through_has_identity_jacobian(make):
    vq = make()
    if isinstance(vq, EMAVQ):
        vq.eval()  # in training it moves its codes after the assignment
    z = torch.randn(3, 5, 6, generator=_gen()).requires_grad_(True)
    out = vq(z)
    g = torch.randn(out.quantized.shape, generator=_gen(2))
    (grad,) = torch.autograd.grad((out.quantized * g).sum(), z)
    assert torch.allclose(grad, g, atol=1e-6)
    # and the forward value is the selected code
    assert torch.allclose(out.quantized, vq.codebook[out.indices].detach(), atol=1e-6)


@pytest.mark.parametrize("scale", ["affine", "diag", "per_code"])
def test_decoupled_learning(scale):
    """The codebook term reaches only the codebook's parameters, the commitment term only z."""
    enc = nn.Linear(5, 4)
    x = torch.randn(2, 9, 5, generator=_gen())
    grads = {}
    for beta in (0.0, 1.0):
        vq = ASVQ(4, 30, scale=scale, commitment_weight=beta, seed=1)
        z = enc(x)
        loss = vq(z).loss
        enc.zero_grad()
        params = [p for p in vq.parameters()]
        gp = torch.autograd.grad(loss, params + list(enc.parameters()), allow_unused=True)
        grads[beta] = gp
    n = len(list(ASVQ(4, 30, scale=scale).parameters()))
    # beta = 0: the encoder gets nothing
    assert all(g is None or float(g.abs().max()) == 0.0 for g in grads[0.0][n:])
    # the commitment term adds nothing to the codebook parameters' gradients
    for g0, g1 in zip(grads[0.0][:n], grads[1.0][:n], strict=True):
        assert torch.allclose(g0, g1, atol=1e-7)
        assert float(g0.abs().max()) > 0  # the codebook term does reach them
    # and the encoder's gradient at beta = 1 is nonzero
    assert any(g is not None and float(g.abs().max()) > 0 for g in grads[1.0][n:])


def test_rotation_trick_matches_the_library():
    from vector_quantize_pytorch.vector_quantize_pytorch import rotate_to as lib_rotate

    g = _gen(3)
    z1 = torch.randn(50, 7, generator=g).requires_grad_(True)
    z2 = z1.detach().clone().requires_grad_(True)
    q = torch.randn(50, 7, generator=g)
    ours, lib = rotate_to(z1, q), lib_rotate(z2, q)
    assert torch.allclose(ours, q, atol=1e-5)  # value: the code
    assert torch.allclose(ours, lib, atol=1e-5)
    w = torch.randn(50, 7, generator=g)
    (ga,) = torch.autograd.grad((ours * w).sum(), z1)
    (gb,) = torch.autograd.grad((lib * w).sum(), z2)
    assert torch.allclose(ga, gb, atol=1e-5)
    assert not torch.allclose(ga, w, atol=1e-3)  # not the straight-through gradient


# --- ASVQ special cases and cross-checks ----------------------------------------------


def test_asvq_with_unit_scales_equals_vanilla_vq_on_the_same_codebook():
    k, d = 64, 5
    codes = torch.randn(k, d, generator=_gen(4))
    asvq = ASVQ(d, k, seed=9)
    with torch.no_grad():
        asvq.frozen_codebook.copy_(codes)
        asvq.mu.zero_()
        asvq.rho.copy_(_inv_softplus(torch.ones(d)))
    van = VanillaVQ(d, k)
    with torch.no_grad():
        van.embed.copy_(codes)
    z = torch.randn(4, 20, d, generator=_gen(5))
    a, v = asvq(z), van(z)
    assert torch.equal(a.indices, v.indices)
    assert torch.allclose(a.quantized, v.quantized, atol=1e-6)
    assert torch.allclose(a.loss, v.loss, atol=1e-6)


class _Diag(nn.Module):
    def __init__(self, sigma):
        super().__init__()
        self.sigma = nn.Parameter(sigma.clone())

    def forward(self, b):
        return b * self.sigma


def test_asvq_diag_equals_library_simvq_with_a_diagonal_transform():
    k, d = 128, 8
    ours = ASVQ(d, k, scale="diag", seed=2)
    with torch.no_grad():
        ours.rho.copy_(_inv_softplus(torch.linspace(0.5, 2.0, d)))
    lib = vqp.SimVQ(dim=d, codebook_size=k, codebook_transform=_Diag(ours.sigma.detach()),
                    rotation_trick=False, input_to_quantize_commit_loss_weight=0.25,
                    commitment_weight=1.0)  # fmt: skip
    with torch.no_grad():
        lib.frozen_codebook.copy_(ours.frozen_codebook)
    z = torch.randn(3, 30, d, generator=_gen(6))
    za, zb = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    qa, ia, la = ours(za)
    qb, ib, lb = lib(zb)
    assert torch.equal(ia, ib)
    assert torch.allclose(qa, qb, atol=1e-6) and torch.allclose(la, lb, atol=1e-6)
    (qa.sum() + la).backward()
    (qb.sum() + lb).backward()
    assert torch.allclose(za.grad, zb.grad, atol=1e-6)
    # d/d sigma through softplus: chain rule sigmoid(rho)
    g_sigma = ours.rho.grad / torch.sigmoid(ours.rho.detach())
    assert torch.allclose(g_sigma, lib.code_transform.sigma.grad, atol=1e-5)


@pytest.mark.parametrize("rotation", [False, True])
def test_simvq_equals_the_library(rotation):
    k, d = 256, 16
    ours = SimVQ(d, k, rotation_trick=rotation, seed=3)
    lib = vqp.SimVQ(dim=d, codebook_size=k, rotation_trick=rotation,
                    input_to_quantize_commit_loss_weight=0.25, commitment_weight=1.0)
    with torch.no_grad():
        lib.frozen_codebook.copy_(ours.frozen_codebook)
        lib.code_transform.weight.copy_(ours.code_transform.weight)
    z = torch.randn(2, 3, 4, d, generator=_gen(7))  # (B, H, W, d): any leading shape
    za, zb = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    a, b = ours(za), lib(zb)
    assert torch.equal(a.indices, b[1])
    assert torch.allclose(a.quantized, b[0], atol=1e-5)
    assert torch.allclose(a.loss, b[2], atol=1e-6)
    w = torch.randn(z.shape, generator=_gen(8))
    ((a.quantized * w).sum() + a.loss).backward()
    ((b[0] * w).sum() + b[2]).backward()
    assert torch.allclose(za.grad, zb.grad, atol=1e-5)
    assert torch.allclose(ours.code_transform.weight.grad, lib.code_transform.weight.grad,
                          atol=1e-5)  # fmt: skip


@pytest.mark.parametrize("channel_first", [False, True])
def test_get_codes_from_indices_equals_the_library(channel_first):
    ours = ASVQ(8, 32, seed=1, channel_first=channel_first)
    lib = vqp.VectorQuantize(dim=8, codebook_size=32, channel_last=not channel_first)
    with torch.no_grad():
        lib._codebook.embed.copy_(ours.codebook.detach()[None])
    idx = torch.randint(0, 32, (2, 5), generator=_gen(9))
    codes = ours.get_codes_from_indices(idx)
    assert torch.allclose(codes, lib.get_codes_from_indices(idx))
    assert torch.equal(codes, ours.indices_to_codes(idx))
    assert torch.equal(ours.get_output_from_indices(idx), codes)
    with pytest.raises(ValueError, match="indices"):
        ours.get_codes_from_indices(torch.tensor([32]))


def test_frozen_basis_has_entries_of_variance_one_over_d():
    vq = ASVQ(32, 8192, seed=0)
    b = vq.frozen_codebook
    assert abs(float(b.var()) * 32 - 1.0) < 0.02 and abs(float(b.mean())) < 0.01
    assert not b.requires_grad and "frozen_codebook" in dict(vq.named_buffers())


def test_parameter_counts():
    d, k = 12, 100
    assert ASVQ(d, k).num_extra_parameters == 2 * d
    assert ASVQ(d, k, scale="diag").num_extra_parameters == d
    assert ASVQ(d, k, scale="per_code").num_extra_parameters == 2 * d + k
    assert ASVQ(d, k, scale="ema_stats").num_extra_parameters == 0
    assert SimVQ(d, k).num_extra_parameters == d * d
    assert VanillaVQ(d, k).num_extra_parameters == d * k
    assert EMAVQ(d, k).num_extra_parameters == 0


def test_codebook_formula_per_variant():
    d, k = 4, 10
    for scale in SCALES:
        vq = ASVQ(d, k, scale=scale, seed=1)
        with torch.no_grad():
            for p in vq.parameters():
                p.copy_(torch.linspace(-0.5, 0.7, p.numel()).reshape(p.shape))
        b = vq.frozen_codebook
        if scale == "affine":
            want = vq.mu + torch.nn.functional.softplus(vq.rho) * b
        elif scale == "diag":
            want = torch.nn.functional.softplus(vq.rho) * b
        elif scale == "per_code":
            want = vq.mu + vq.gain[:, None] * torch.nn.functional.softplus(vq.rho) * b
        else:
            want = vq.running_mean + vq.running_std * math.sqrt(d) * b
        assert torch.allclose(vq.codebook, want, atol=1e-6), scale


def test_data_init_matches_the_latent_statistics():
    vq = ASVQ(6, 4096, data_init=True, seed=0).train()
    z = 3.0 + 0.5 * torch.randn(8, 200, 6, generator=_gen(9))
    vq(z)
    c = vq.codebook.detach()
    flat = z.reshape(-1, 6)
    assert torch.allclose(c.mean(0), flat.mean(0), atol=0.05)
    assert torch.allclose(c.std(0), flat.std(0), rtol=0.1)
    before = c.clone()
    vq(z + 10)  # only the first batch initialises
    assert torch.equal(vq.codebook.detach(), before)


def test_ema_stats_tracks_the_latent_and_learns_nothing():
    vq = ASVQ(3, 64, scale="ema_stats", ema_decay=0.0).train()
    z = 2.0 + torch.randn(4, 50, 3, generator=_gen(10))
    vq(z)
    flat = z.reshape(-1, 3)
    assert torch.allclose(vq.running_mean, flat.mean(0), atol=1e-5)
    assert torch.allclose(vq.running_std, flat.std(0, unbiased=False), atol=1e-5)
    vq.eval()
    vq(z + 100.0)  # eval mode: statistics frozen
    assert torch.allclose(vq.running_mean, flat.mean(0), atol=1e-5)


def test_ema_vq_step_is_a_kmeans_step_and_expires_dead_codes():
    vq = EMAVQ(2, 8, decay=0.0, dead_code_threshold=0.5, seed=0).train()
    z = torch.randn(1, 40, 2, generator=_gen(11))
    vq(z)  # init from the batch
    codes = vq.codebook.clone()
    idx = nearest_code(z.reshape(-1, 2), codes)
    out = vq(z)
    assert torch.equal(out.indices.reshape(-1), idx)
    for k in range(8):
        sel = z.reshape(-1, 2)[idx == k]
        if len(sel):  # decay 0: a used code moves to the mean of its vectors
            assert torch.allclose(vq.codebook[k], sel.mean(0), atol=1e-3)
        else:  # an unused code is replaced by a vector of the batch
            assert (vq.codebook[k] - z.reshape(-1, 2)).abs().sum(1).min() < 1e-6


def test_channel_first_equals_channel_last():
    a = ASVQ(5, 32, channel_first=True, seed=4)
    b = ASVQ(5, 32, seed=4)
    z = torch.randn(2, 5, 3, 4, generator=_gen(12))  # (B, d, H, W)
    qa, ia, la = a(z)
    qb, ib, lb = b(z.movedim(1, -1))
    assert torch.equal(ia, ib) and ia.shape == (2, 3, 4)
    assert torch.allclose(qa, qb.movedim(-1, 1)) and torch.allclose(la, lb)
    assert torch.allclose(a.indices_to_codes(ia), qa.detach())


def test_output_is_a_named_triple():
    out = ASVQ(4, 8)(torch.randn(2, 3, 4, generator=_gen()))
    assert isinstance(out, VQOutput) and len(out) == 3
    q, i, loss = out
    assert q is out.quantized and i.dtype == torch.int64 and loss.ndim == 0


def test_asvq_avoids_collapse_that_vanilla_suffers():
    """Fitting codes to a fixed Gaussian cloud: vanilla's far-away codes stay dead."""
    g = _gen(13)
    x = torch.randn(2000, 4, generator=g) * 2 + 1
    out = {}
    for name, vq in (("asvq", ASVQ(4, 256, seed=0)), ("vanilla", VanillaVQ(4, 256, seed=0))):
        opt = torch.optim.Adam(vq.parameters(), lr=1e-2)
        vq.train()
        for _ in range(100):
            opt.zero_grad()
            vq(x[None]).loss.backward()
            opt.step()
        out[name] = codebook_usage(vq(x[None]).indices, 256)
    assert out["asvq"] > 5 * out["vanilla"]


# --- usage and perplexity -------------------------------------------------------------


def test_usage_and_perplexity_by_hand():
    assert codebook_usage(np.arange(8), 8) == 1.0
    assert codebook_usage(torch.tensor([[1, 1], [1, 3]]), 8) == 0.25
    assert codebook_perplexity(np.arange(8), 8) == pytest.approx(8.0)
    assert codebook_perplexity([5] * 9, 8) == pytest.approx(1.0)
    # p = (1/2, 1/4, 1/4): H = 1.5 ln 2, perplexity 2^1.5
    assert codebook_perplexity([0, 0, 1, 2], 4) == pytest.approx(2**1.5)


def test_usage_refuses_an_empty_eval_set_and_out_of_range_codes():
    with pytest.raises(ValueError, match="indices"):
        codebook_usage(np.array([], dtype=int), 4)
    with pytest.raises(ValueError, match="indices"):
        codebook_perplexity([0, 4], 4)
    with pytest.raises(TypeError, match="indices"):
        codebook_usage([0.5, 1.0], 4)


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,arg", [
    ({"codebook_size": 1}, "codebook_size"),
    ({"codebook_size": 0}, "codebook_size"),
    ({"scale": "cubic"}, "scale"),
    ({"commitment_weight": -0.1}, "commitment_weight"),
    ({"dim": 0}, "dim"),
    ({"ema_decay": 1.0}, "ema_decay"),
    ({"seed": -1}, "seed"),
])  # fmt: skip
def test_asvq_refuses_bad_arguments(kwargs, arg):
    base = {"dim": 4, "codebook_size": 16}
    with pytest.raises((ValueError, TypeError), match=arg):
        ASVQ(**{**base, **kwargs})


@pytest.mark.parametrize("cls", [ASVQ, SimVQ, VanillaVQ, EMAVQ])
def test_quantizers_refuse_bad_z(cls):
    vq = cls(4, 16)
    for z in (torch.randn(2, 3, 5), torch.full((2, 3, 4), float("nan")),
              torch.zeros(0, 3, 4), torch.ones(2, 3, 4, dtype=torch.int64), np.ones((2, 3, 4)),
              torch.full((1, 2, 4), 1e20)):  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=r"\bz\b"):
            vq(z)
    vq_cf = cls(4, 16, channel_first=True)
    with pytest.raises(ValueError, match="channel_first"):
        vq_cf(torch.randn(3, 4))  # wrong rank
    with pytest.raises(ValueError, match="channels"):
        vq_cf(torch.randn(2, 3, 5, 5))


# --- tokenizers -----------------------------------------------------------------------


def test_autoencoder_shapes_and_swapping_in_the_library_quantizer():
    img = VQAutoencoder(1, quantizer=ASVQ(8, 32), dim=8, hidden=8, kind="image")
    out = img(torch.rand(3, 1, 16, 16, generator=_gen()))
    assert out.recon.shape == (3, 1, 16, 16) and out.indices.shape == (3, 4, 4)
    aud = VQAutoencoder(1, quantizer=SimVQ(8, 32), dim=8, hidden=8, kind="audio")
    out = aud(torch.randn(2, 1, 2048, generator=_gen()))
    assert out.recon.shape == (2, 1, 2048) and out.indices.shape == (2, 32)
    lib = VQAutoencoder(1, quantizer=vqp.SimVQ(dim=8, codebook_size=32), dim=8, hidden=8)
    assert lib(torch.rand(2, 1, 8, 8)).recon.shape == (2, 1, 8, 8)
    with pytest.raises(ValueError, match="dim"):
        VQAutoencoder(1, quantizer=ASVQ(4, 32), dim=8)
    with pytest.raises(ValueError, match=r"\bx\b"):
        img(torch.rand(2, 1, 10, 10))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_ema_codebook_keeps_its_dtype_on_inputs_of_another(dtype):
    vq = EMAVQ(4, 8).train()
    z = torch.randn(3, 5, 4, generator=_gen())
    out = vq(z.to(dtype))  # raised index_add_'s dtype error
    assert out.quantized.dtype == torch.promote_types(dtype, torch.float32)
    assert out.indices.shape == (3, 5)
    assert vq.embed.dtype == vq.embed_sum.dtype == vq.cluster_size.dtype == torch.float32
    ref = EMAVQ(4, 8).train()
    ref(z.to(dtype).float())
    assert torch.allclose(vq.embed, ref.embed)  # the same EMA update as on float32 input


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_autoencoder_refuses_an_input_of_another_dtype_by_name(dtype):
    ae = VQAutoencoder(1, quantizer=ASVQ(8, 32), dim=8, hidden=8)
    with pytest.raises(TypeError, match=rf"^x has dtype {dtype} but the autoencoder's weights"):
        ae(torch.rand(2, 1, 8, 8).to(dtype))
    assert ae.double()(torch.rand(2, 1, 8, 8, dtype=torch.float64)).recon.dtype == torch.float64


@pytest.mark.parametrize("quantizer", [nn.Linear(8, 8), nn.Identity(), nn.Conv1d(8, 8, 1)])
def test_autoencoder_refuses_a_module_that_is_not_a_quantizer(quantizer):
    with pytest.raises(TypeError, match=r"^quantizer must be a vector quantizer.*got "
                                        + type(quantizer).__name__):
        VQAutoencoder(1, quantizer=quantizer, dim=8, hidden=8)


def test_training_lowers_the_loss_and_evaluation_is_consistent():
    x = np.random.default_rng(0).random((64, 1, 8, 8)).astype(np.float32) * 0.2
    x[:, :, 2:6, 2:6] += 0.8
    ae = VQAutoencoder(1, quantizer=ASVQ(8, 64, seed=0), dim=8, hidden=16, seed=0)
    before = evaluate_vqae(ae, x).recon_mse
    res = train_vqae(ae, x, max_iter=60, batch_size=16, lr=3e-3, seed=0)
    ev = evaluate_vqae(ae, x)
    assert res.losses.shape == res.recon_mse.shape == (60,)
    assert ev.recon_mse < before and ev.psnr == pytest.approx(-10 * math.log10(ev.recon_mse))
    assert ev.usage == codebook_usage(ev.indices, 64) and ev.indices.shape == (64, 2, 2)
    # same seed, same training
    ae2 = VQAutoencoder(1, quantizer=ASVQ(8, 64, seed=0), dim=8, hidden=16, seed=0)
    res2 = train_vqae(ae2, x, max_iter=60, batch_size=16, lr=3e-3, seed=0)
    assert np.array_equal(res.losses, res2.losses)


def test_count_loss_spikes_by_hand():
    assert count_loss_spikes([1.0] * 10, window=3) == 0
    assert count_loss_spikes([1, 1, 1, 2.5, 1, 1, 3.0], window=3) == 2
    assert count_loss_spikes([1, 1, 1, 2.0], window=3) == 0  # strictly above 2x
    with pytest.raises(ValueError, match="factor"):
        count_loss_spikes([1.0, 2.0], factor=1.0)


# --- speech ---------------------------------------------------------------------------


def _wav_bytes(samples, rate=8000):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, "<i2").tobytes())
    return buf.getvalue()


def test_speech_loader_on_written_files(tmp_path):
    rng = np.random.default_rng(0)
    for i in range(5):
        (tmp_path / f"f{i}.wav").write_bytes(_wav_bytes(rng.integers(-9000, 9000, 300)))
    sp = load_speech_clips(128, folder=tmp_path, min_rms=0.0)
    assert sp.sample_rate == 8000 and sp.x_train.shape == (8, 1, 128)  # 4 files x 2 clips
    assert sp.x_test.shape == (2, 1, 128)  # the fifth file
    x, _ = read_wav(tmp_path / "f4.wav")
    assert np.allclose(sp.x_test[:, 0].ravel(), x[:256])
    with pytest.raises(DataNotInstalledError, match="asterisk"):
        load_speech_clips(folder=tmp_path / "missing")


@pytest.mark.skipif(not SPEECH_DIR.is_dir(), reason="asterisk-core-sounds-en-wav not installed")
def test_real_speech_clips():
    sp = load_speech_clips(2048, max_clips=200, seed=0)
    assert sp.sample_rate == 8000 and sp.x_train.shape == (200, 1, 2048)
    assert len(sp.x_test) == 50 and np.abs(sp.x_train).max() <= 1.0
    assert np.sqrt((sp.x_train**2).mean(axis=(1, 2))).min() >= 0.02  # silence dropped
    assert np.array_equal(load_speech_clips(2048, max_clips=200, seed=0).x_train, sp.x_train)


def test_log_spectrogram_puts_a_tone_in_its_bin():
    t = np.arange(1024) / 8000
    tones = np.stack([np.sin(2 * np.pi * f * t) for f in (500.0, 2000.0)])[:, None] * 0.5
    spec = log_spectrogram(tones, frame=64)
    assert spec.shape == (2, 1, 32, 16) and spec.dtype == np.float32
    assert 0 <= spec.min() and spec.max() <= 1
    # bin b holds b * 8000 / 64 Hz: 500 Hz -> 4, 2000 Hz -> 16, in every frame
    assert (spec[0, 0].argmax(0) == 4).all() and (spec[1, 0].argmax(0) == 16).all()
    # the magnitude maps through log10 linearly: |rfft| of the windowed frame by hand
    frame = tones[0, 0, :64] * np.hanning(64)
    mag = np.abs(np.fft.rfft(frame))[4]
    want = (np.log10(mag + 1e-4) + 4) / (1.5 + 4)
    assert spec[0, 0, 4, 0] == pytest.approx(min(want, 1.0), rel=1e-5)
    silence = log_spectrogram(np.zeros((1, 1, 128)), frame=64)
    assert np.all(silence == 0)
    with pytest.raises(ValueError, match="clips"):
        log_spectrogram(np.zeros((1, 1, 100)), frame=64)


def test_train_vqae_callback_sees_every_step_and_can_stop():
    from neurips26.papers.asvq.autoencoder import VQAutoencoder, train_vqae

    x = np.random.default_rng(0).random((16, 1, 8, 8)).astype(np.float32)
    seen = []

    def cb(step, model):
        seen.append((step, isinstance(model, VQAutoencoder)))
        return step == 3  # stop after the fourth step

    ae = VQAutoencoder(1, quantizer=ASVQ(8, 16), dim=8, hidden=8)
    res = train_vqae(ae, x, max_iter=10, batch_size=4, callback=cb)
    assert seen == [(i, True) for i in range(4)] and len(res.losses) == 4
    with pytest.raises(TypeError, match="callback"):
        train_vqae(ae, x, max_iter=2, batch_size=4, callback=3)
