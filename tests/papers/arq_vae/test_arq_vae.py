"""arq_vae: oracles for the quantizer, prefix decoding, truncation, bytes and TAS metrics."""

from __future__ import annotations

import functools
import itertools
import os

import numpy as np
import pytest
import torch

from neurips26.papers.arq_vae import (
    ARQVAE,
    MSTCN,
    FeatureMemory,
    adaptive_truncate,
    code_bytes,
    finetune_decoder,
    fixed_depth_memory,
    hungarian_relabel,
    kmeans_memory,
    make_procedural_videos,
    memory_errors,
    mode_filter,
    model_nbytes,
    pca_uint8_memory,
    photo_pan_frames,
    segmentation_metrics,
    subsample_memory,
    tolerance_lengths,
    train_arqvae,
    train_mstcn,
    truncation_lengths,
)


@pytest.fixture(scope="module")
def data():
    return make_procedural_videos(num_videos=6, num_actions=6, dim=16, mean_length=80, seed=3)


@pytest.fixture(scope="module")
def trained(data):
    m = ARQVAE(16, latent_dim=6, num_levels=4, codebook_size=32, hidden=24, seed=1)
    train_arqvae(m, list(data.features), max_iter=60, lr=3e-3, batch_size=8, seed=1)
    return m.eval()


# ---------------------------------------------------------------- quantizer and decoding
def test_residual_quantizer_matches_vector_quantize_pytorch(trained, data):
    """Our assignments and prefix sums equal ResidualVQ's with the same codebooks."""
    vqp = pytest.importorskip("vector_quantize_pytorch")
    q = trained.quantizer
    rvq = vqp.ResidualVQ(dim=q.dim, num_quantizers=q.num_levels, codebook_size=q.codebook_size,
                         quantize_dropout=True, kmeans_init=False).eval()
    with torch.no_grad():
        for lvl, layer in enumerate(rvq.layers):
            layer._codebook.embed.copy_(q.codebooks[lvl][None])
        x = torch.as_tensor(data.features[0])[None]
        z = trained.embed(x)  # (1, T, d)
        _, idx, _ = rvq(z)
        ours = trained.encode(x)
        assert torch.equal(idx, ours)
        lengths = torch.randint(1, q.num_levels + 1, ours.shape[:2], generator=torch.Generator()
                                .manual_seed(0))
        dropped = torch.where(torch.arange(q.num_levels) < lengths[..., None], ours, -1)
        theirs = rvq.get_output_from_indices(dropped)
        mine = q.lookup(ours, lengths)
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5)


def test_prefix_decoding_equals_sum_of_first_codes(trained, data):
    x = torch.as_tensor(data.features[1])[None]
    with torch.no_grad():
        codes = trained.encode(x)
        L = trained.num_levels
        full = trained.decode(codes, torch.full(codes.shape[:2], L))
        q, _ = trained.quantizer(trained.embed(x)[0])
        torch.testing.assert_close(full[0], trained.decoder(q), atol=1e-6, rtol=0)
        for lvl in range(1, L + 1):
            manual = sum(trained.quantizer.codebooks[j][codes[0, :, j]] for j in range(lvl))
            dec = trained.decode(codes, torch.full(codes.shape[:2], lvl))[0]
            torch.testing.assert_close(dec, trained.decoder(manual), atol=1e-6, rtol=0)


@pytest.mark.parametrize("dropout", [False, True])
def test_training_step_decodes_the_codes_it_chose(data, dropout):
    """The training step's reconstruction and commitment term use the code vectors chosen
    for the batch, not the codebooks after the EMA update and dead-code restarts that the
    same step applies in place (they move: the test checks that they did)."""
    m = ARQVAE(16, latent_dim=6, num_levels=4, codebook_size=8, hidden=24,
               quantize_dropout=dropout, seed=2)
    x = torch.as_tensor(np.stack([data.features[0][:30], data.features[1][:30]]))
    m.train()
    m(x)  # the first step initialises the codebooks from the data
    before = m.quantizer.codebooks.clone()
    out = m(x)
    after = m.quantizer.codebooks
    L = m.num_levels
    codes = out.codes.reshape(-1, L)
    depth = out.depth.reshape(-1)
    keep = (torch.arange(L) < depth[:, None]).to(before.dtype)[..., None]
    with torch.no_grad():
        chosen = (before[torch.arange(L), codes] * keep).sum(1)
        moved = (after[torch.arange(L), codes] * keep).sum(1)
        assert not torch.allclose(chosen, moved)  # the step did move the codes it chose
        z = m.embed(x).reshape(-1, m.latent_dim)
        expect = m.decoder(z + (chosen - z)).reshape(out.recon.shape)
        commit = m.commitment * ((z - chosen) ** 2).sum(1).mean() / m.latent_dim
    torch.testing.assert_close(out.recon, expect, rtol=0, atol=1e-5)
    torch.testing.assert_close(out.commit_loss, commit, rtol=1e-6, atol=1e-7)
    # the codes are the nearest under the codebooks the step started from
    with torch.no_grad():
        m.quantizer.codebooks.copy_(before)
        ref, _ = m.quantizer.quantize(z)
    assert torch.equal(ref, codes)


def test_prefix_errors_by_hand(trained, data):
    x = torch.as_tensor(data.features[2])[None]
    e = trained.prefix_errors(x)[0].numpy()
    codes = trained.encode(x)
    xn = x[0].numpy()
    for lvl in range(1, trained.num_levels + 1):
        xh = trained.decode(codes, torch.full(codes.shape[:2], lvl))[0].detach().numpy()
        want = ((xn - xh) ** 2).sum(1) / (xn ** 2).sum(1)
        np.testing.assert_allclose(e[:, lvl - 1], want, rtol=1e-4, atol=1e-6)


def test_training_lowers_the_loss_and_every_prefix_decodes(data):
    m = ARQVAE(16, latent_dim=6, num_levels=4, codebook_size=32, hidden=24, seed=0)
    r = train_arqvae(m, list(data.features), max_iter=60, lr=3e-3, batch_size=8, seed=0)
    assert np.mean(r.losses[-10:]) < np.mean(r.losses[:5])
    e = m.prefix_errors(torch.as_tensor(data.features[0])[None])[0].mean(0).numpy()
    assert e[-1] < e[0]  # deeper prefixes reconstruct better on average


def test_same_seed_same_model(data):
    def fit():
        m = ARQVAE(16, latent_dim=4, num_levels=2, codebook_size=8, hidden=8, seed=5)
        train_arqvae(m, list(data.features), max_iter=5, seed=5)
        return m.quantizer.codebooks.clone()
    assert torch.equal(fit(), fit())
    a, b = (ARQVAE(16, latent_dim=4, num_levels=2, codebook_size=8, seed=3) for _ in range(2))
    for (k, v), w in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(v, w), k  # construction is a function of the seed alone


# ---------------------------------------------------------------- truncation
def _brute(errors, lam, b):
    return np.array([min(range(1, len(e) + 1), key=lambda l, e=e: (e[l - 1] + lam * l * b, l))
                     for e in errors])


@pytest.mark.parametrize("lam", [0.0, 1e-3, 0.02, 0.3, 5.0])
def test_truncation_is_the_brute_force_argmin(lam):
    rng = np.random.default_rng(0)
    errs = rng.random((300, 6))  # non-monotone in l
    for b in (1, 2):
        np.testing.assert_array_equal(truncation_lengths(errs, lam, bytes_per_code=b),
                                      _brute(errs, lam, b))


def test_truncation_on_model_errors_is_the_argmin(trained, data):
    mem = adaptive_truncate(trained, list(data.features), lam=0.01)
    errs = np.concatenate([trained.prefix_errors(torch.as_tensor(v)[None])[0].double().numpy()
                           for v in data.features])
    np.testing.assert_array_equal(mem.lengths, _brute(errs, 0.01, 1))


def test_tolerance_mode_is_the_smallest_prefix_under_tau():
    e = np.array([[0.5, 0.3, 0.1], [0.2, 0.5, 0.1], [0.9, 0.8, 0.7]])
    assert tolerance_lengths(e, 0.25).tolist() == [3, 1, 3]
    assert tolerance_lengths(e, 0.35).tolist() == [2, 1, 3]


def test_budget_is_met_within_one_frame_and_never_exceeded(trained, data):
    vids = list(data.features)
    L, b = trained.num_levels, code_bytes(trained.codebook_size)
    low = adaptive_truncate(trained, vids, lam=1e9).nbytes(include_model=True, model=trained)
    high = adaptive_truncate(trained, vids, lam=0.0).nbytes(include_model=True, model=trained)
    packed = low + (sum(len(v) for v in vids) + 1) // 2 + L * b  # room to pack the lengths
    for budget in np.linspace(packed, high - 1, 7).astype(int):
        mem = adaptive_truncate(trained, vids, budget_bytes=int(budget))
        size = mem.nbytes(include_model=True, model=trained)
        assert size <= budget
        assert budget - size < L * b
    for budget in (low, low + 3):  # uniform depth 1: the packed lengths do not fit
        mem = adaptive_truncate(trained, vids, budget_bytes=int(budget))
        assert mem.uniform and mem.nbytes(include_model=True, model=trained) <= budget
    codes_only = adaptive_truncate(trained, vids, budget_bytes=3000, include_model=False)
    assert codes_only.nbytes(include_model=False) <= 3000


def test_infeasible_budget_is_refused(trained, data):
    with pytest.raises(ValueError, match=r"budget_bytes.*infeasible"):
        adaptive_truncate(trained, list(data.features), budget_bytes=model_nbytes(trained))


def test_exactly_one_criterion(trained, data):
    with pytest.raises(ValueError, match="exactly one"):
        adaptive_truncate(trained, list(data.features), lam=0.1, tol=0.2)
    with pytest.raises(ValueError, match="exactly one"):
        adaptive_truncate(trained, list(data.features))


def test_round_trip_in_tolerance_mode(data):
    """K large, L = 8: every reconstructed frame is within its tolerance."""
    m = ARQVAE(16, latent_dim=16, num_levels=8, codebook_size=256, hidden=0,
               temporal_kernel=1, seed=2)
    vids = list(data.features[:3])
    train_arqvae(m, vids, max_iter=80, lr=3e-3, batch_size=8, seed=2)
    errs = np.concatenate([m.prefix_errors(torch.as_tensor(v)[None])[0].numpy() for v in vids])
    tol = float(np.quantile(errs[:, -1], 0.5))
    mem = adaptive_truncate(m, vids, tol=tol)
    x, xh = np.concatenate(vids), np.concatenate(mem.reconstruct(m))
    per_frame = ((x - xh) ** 2).sum(1) / (x ** 2).sum(1)
    reach = errs.min(1) <= tol
    assert reach.sum() > 0
    assert np.all(per_frame[errs[:, -1] <= tol] <= tol * (1 + 1e-4) + 1e-7)
    assert mem.lengths.mean() < 8


# ---------------------------------------------------------------- byte accounting
def test_nbytes_equals_the_serialized_size(trained, data, tmp_path):
    for mem in (adaptive_truncate(trained, list(data.features), lam=0.01),
                fixed_depth_memory(trained, list(data.features), 2)):
        for model in (None, trained):
            blob = mem.to_bytes(model)
            path = tmp_path / "memory.bin"
            path.write_bytes(blob)
            assert os.path.getsize(path) == mem.nbytes(include_model=model is not None,
                                                       model=model)
        back = FeatureMemory.from_bytes(mem.to_bytes())
        np.testing.assert_array_equal(back.codes, mem.codes)
        np.testing.assert_array_equal(back.lengths, mem.lengths)
        np.testing.assert_array_equal(back.video_offsets, mem.video_offsets)


def test_nbytes_by_hand():
    mem = FeatureMemory(np.array([1, 2, 3, 4, 5, 6], np.uint8), np.array([1, 2, 3]),
                        np.array([0, 2, 3]), 256, 4)
    # header 21 + 2 videos x 4 + ceil(3 / 2) packed lengths + 6 codes
    assert mem.nbytes(include_model=False) == 21 + 8 + 2 + 6
    wide = FeatureMemory(np.array([300, 2]), np.array([1, 1]), np.array([0, 2]), 1000, 2)
    assert wide.nbytes(include_model=False) == 21 + 4 + 1 + 2 * 2  # uniform: one byte
    m = ARQVAE(4, latent_dim=2, num_levels=4, codebook_size=256, hidden=3)
    decoder = 2 * 3 + 3 + 3 * 4 + 4
    assert model_nbytes(m) == 12 + 4 * (decoder + 4 * 256 * 2)


def test_model_state_dict_bytes_cover_the_counted_tensors(trained):
    sd = {k: v for k, v in trained.state_dict().items()
          if k.startswith("decoder.") or k == "quantizer.codebooks"}
    assert model_nbytes(trained) == 12 + sum(v.numel() * v.element_size() for v in sd.values())


# ---------------------------------------------------------------- fine-tuning, label-free
def test_finetune_lowers_error_on_retained_codes_and_keeps_the_model(trained, data):
    vids = list(data.features)
    mem = adaptive_truncate(trained, vids, lam=0.05)
    before = {k: v.clone() for k, v in trained.state_dict().items()}
    tuned = finetune_decoder(trained, mem, vids, max_iter=150, lr=3e-3, seed=0)
    assert memory_errors(tuned, mem, vids) < memory_errors(trained, mem, vids)
    for k, v in trained.state_dict().items():
        assert torch.equal(v, before[k])
    assert torch.equal(tuned.quantizer.codebooks, trained.quantizer.codebooks)
    for a, b in zip(tuned.encoder.parameters(), trained.encoder.parameters(), strict=True):
        assert torch.equal(a, b)


def test_memory_never_reads_labels(data):
    """Poisoned labels (all -1) give an identical memory: the path sees features only."""
    poisoned = type(data)(data.features, tuple(np.full(len(y), -1) for y in data.labels),
                          data.activities, data.num_actions)

    def build(ds):
        m = ARQVAE(ds.dim, latent_dim=4, num_levels=3, codebook_size=16, hidden=8, seed=0)
        train_arqvae(m, list(ds.features), max_iter=10, seed=0)
        return adaptive_truncate(m, list(ds.features), budget_bytes=20_000)

    a, b = build(data), build(poisoned)
    assert a.to_bytes() == b.to_bytes()


# ---------------------------------------------------------------- segmentation metrics
def test_metrics_hand_computed_example_one():
    gt = np.array([0, 0, 0, 1, 1, 1, 2, 2])  # AAABBBCC
    pred = np.array([0, 0, 1, 1, 1, 1, 2, 2])  # AABBBBCC
    s = segmentation_metrics(pred, gt, overlaps=(0.1, 0.25, 0.5, 0.75))
    assert s.accuracy == pytest.approx(87.5)
    assert s.edit == pytest.approx(100.0)
    assert s.f1_at(0.5) == pytest.approx(100.0)
    # IoUs are 2/3, 3/4, 1: at 0.75 A fails: tp 2, fp 1, fn 1
    assert s.f1_at(0.75) == pytest.approx(200 / 3)


def test_metrics_hand_computed_example_two():
    gt = np.array([0, 0, 0, 0, 1, 1, 1, 1])  # AAAABBBB
    pred = np.array([0, 0, 1, 0, 0, 1, 1, 1])  # AABAABBB
    s = segmentation_metrics(pred, gt)
    assert s.accuracy == pytest.approx(75.0)
    assert s.edit == pytest.approx(50.0)  # ABAB vs AB: 2 edits over 4
    # tp: A[0,2) (IoU 1/2), B[5,8) (3/4); fp: B[2,3), A[3,5) (gt A already used)
    assert s.f1_at(0.5) == pytest.approx(200 * 0.5 * 1.0 / 1.5)
    assert s.f1_at(0.1) == pytest.approx(200 * 0.5 * 1.0 / 1.5)


def test_metrics_with_background():
    gt = np.array([9, 9, 0, 0, 9, 1, 1])
    pred = np.array([9, 0, 0, 0, 9, 1, 1])
    s = segmentation_metrics(pred, gt, background=9)
    assert s.edit == 100.0 and s.f1_at(0.5) == 100.0


def _oracle(preds, gts, k):
    """Independent: segments by groupby, IoU over frame sets, recursive edit distance."""
    def segs(y):
        out, t = [], 0
        for lab, grp in itertools.groupby(y.tolist()):
            n = len(list(grp))
            out.append((lab, set(range(t, t + n))))
            t += n
        return out

    def lev(a, b):
        @functools.lru_cache(None)
        def d(i, j):
            if i == 0 or j == 0:
                return i + j
            return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
        return d(len(a), len(b))

    tp = fp = fn = 0
    edits = []
    for p, g in zip(preds, gts, strict=True):
        ps, gs = segs(p), segs(g)
        edits.append(100 * (1 - lev(tuple(s[0] for s in ps), tuple(s[0] for s in gs))
                            / max(len(ps), len(gs))))
        hit = [False] * len(gs)
        for lab, fr in ps:
            ious = [len(fr & gf) / len(fr | gf) if gl == lab else 0.0 for gl, gf in gs]
            j = int(np.argmax(ious))
            if ious[j] >= k and not hit[j]:
                hit[j], tp = True, tp + 1
            else:
                fp += 1
        fn += hit.count(False)
    p = tp / (tp + fp) if tp + fp else 0
    r = tp / (tp + fn) if tp + fn else 0
    return float(np.mean(edits)), (0.0 if p + r == 0 else 200 * p * r / (p + r))


def test_metrics_match_an_independent_implementation():
    rng = np.random.default_rng(0)
    for _ in range(25):
        gts = [np.repeat(rng.integers(0, 4, 6), rng.integers(1, 6, 6)) for _ in range(3)]
        preds = [np.where(rng.random(len(g)) < 0.2, rng.integers(0, 4, len(g)), g) for g in gts]
        for k in (0.1, 0.25, 0.5):
            s = segmentation_metrics(preds, gts, overlaps=(k,))
            edit, f1 = _oracle(preds, gts, k)
            assert s.edit == pytest.approx(edit)
            assert s.f1_at(k) == pytest.approx(f1)


def test_mode_filter_and_hungarian():
    assert mode_filter(np.array([1, 1, 0, 1, 1]), 3).tolist() == [1, 1, 1, 1, 1]
    out = hungarian_relabel([np.array([2, 2, 0, 0])], [np.array([0, 0, 1, 1])])
    assert out[0].tolist() == [0, 0, 1, 1]


def test_mstcn_learns_a_simple_segmentation():
    rng = np.random.default_rng(0)
    y = [np.repeat(rng.integers(0, 3, 5), 12) for _ in range(6)]
    x = [np.eye(3)[v] * 2 + 0.3 * rng.normal(size=(len(v), 3)) for v in y]
    net = MSTCN(3, 3, num_stages=2, num_layers=3, channels=16, seed=0)
    r = train_mstcn(net, x, y, max_iter=80, lr=1e-2, window=40, seed=0)
    assert r.losses[-1] < r.losses[0]
    assert segmentation_metrics(net.predict(x), y).accuracy > 90


def test_mstcn_stops_at_a_heldout_plateau_and_keeps_its_best_weights():
    """With held-out videos, training stops before the cap once the held-out loss stops
    improving, and the model holds the weights of the lowest held-out loss."""
    from neurips26.papers.arq_vae.segmentation import _heldout_loss

    rng = np.random.default_rng(1)
    y = [np.repeat(rng.integers(0, 3, 5), 12) for _ in range(8)]
    x = [np.eye(3)[v] * 2 + 0.3 * rng.normal(size=(len(v), 3)) for v in y]
    net = MSTCN(3, 3, num_stages=1, num_layers=2, channels=8, seed=0)
    r = train_mstcn(net, x[:6], y[:6], max_iter=5000, lr=1e-2, window=40, seed=0,
                    val_videos=x[6:], val_labels=y[6:], eval_every=10, patience=3)
    assert r.plateau and r.num_steps < 5000
    assert r.val_steps == tuple(range(10, r.num_steps + 1, 10))
    best = int(np.argmin(r.val_losses))
    assert r.best_step == r.val_steps[best]
    # the three evaluations after the best did not improve by 1%
    assert all(v >= 0.99 * min(r.val_losses[:i + 1]) for i, v in
               enumerate(r.val_losses) if i > len(r.val_losses) - 4)
    vx = [torch.as_tensor(v, dtype=torch.float32) for v in x[6:]]
    vy = [torch.as_tensor(v) for v in y[6:]]
    assert abs(_heldout_loss(net, vx, vy, 0.15, "cpu") - r.val_losses[best]) < 1e-5
    # without held-out videos it runs to the cap
    r2 = train_mstcn(MSTCN(3, 3, num_stages=1, num_layers=2, channels=8), x, y, max_iter=7)
    assert r2.num_steps == 7 and not r2.plateau and r2.val_losses == ()


def test_mstcn_heldout_arguments_are_checked():
    net = MSTCN(3, 3, num_stages=1, num_layers=1, channels=4)
    x, y = [np.zeros((10, 3))], [np.zeros(10, int)]
    with pytest.raises(ValueError, match="val_labels"):
        train_mstcn(net, x, y, max_iter=1, val_videos=x)
    with pytest.raises(ValueError, match="val_labels"):
        train_mstcn(net, x, y, max_iter=1, val_videos=x, val_labels=[np.zeros(9, int)])
    with pytest.raises(ValueError, match="val_videos"):
        train_mstcn(net, x, y, max_iter=1, val_videos=[np.zeros((10, 4))], val_labels=y)


# ---------------------------------------------------------------- baselines and data
def test_baselines_respect_the_budget_and_improve_with_bytes(data):
    vids = list(data.features)
    X = np.concatenate(vids)
    f32 = X.size * 4
    for fn in (pca_uint8_memory, subsample_memory, kmeans_memory):
        errs = []
        for frac in (1 / 4, 1 / 16):
            b = fn(vids, int(f32 * frac))
            assert b.nbytes <= int(f32 * frac)
            assert [len(f) for f in b.features] == [len(v) for v in vids]
            errs.append(float(((np.concatenate(b.features) - X) ** 2).mean()))
        assert errs[0] <= errs[1] + 1e-9


def test_subsample_repeats_frames_exactly():
    v = [np.arange(10.0).reshape(5, 2)]
    b = subsample_memory(v, 21 + 4 + 4 * 2 * 3)
    assert b.setting == 2
    np.testing.assert_array_equal(b.features[0], v[0][[0, 0, 2, 2, 4]])


def test_procedural_videos_are_seeded_and_sized():
    a = make_procedural_videos(num_videos=4, dim=8, mean_length=120, seed=1)
    b = make_procedural_videos(num_videos=4, dim=8, mean_length=120, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a.features, b.features, strict=True))
    assert 40 < np.mean([len(f) for f in a.features]) < 300
    assert all(len(f) == len(y) for f, y in zip(a.features, a.labels, strict=True))


def test_photo_pans_are_real_frame_sequences():
    photos = [np.random.default_rng(i).integers(0, 255, (60, 80, 3), dtype=np.uint8)
              for i in range(3)]
    f, y = photo_pan_frames(photos, num_videos=2, num_segments=2, frames_per_segment=4,
                            size=16, rng=np.random.default_rng(0))
    assert [v.shape for v in f] == [(8, 16, 16, 3)] * 2
    assert all(len(set(v[:4].tolist())) == 1 for v in y)


def test_readme_example_runs(monkeypatch):
    """The README's usage example runs as written."""
    import pathlib
    import re

    import neurips26.papers.arq_vae as pkg

    monkeypatch.setenv("NEURIPS26_NO_CACHE", "1")
    text = (pathlib.Path(pkg.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
