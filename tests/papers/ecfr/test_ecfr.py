"""ecfr: metric oracles (scikit-learn, a per-threshold AUPRO), module invariants,
cross-modal isolation by autograd, the data generator's construction, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from neurips26.papers.ecfr import (
    AFIR,
    ANOMALY_TYPES,
    CLASSES,
    ECFR,
    HAC,
    CFMDetector,
    CFMPair,
    ECFRDetector,
    Features,
    PatchCoreDetector,
    RGBDFeatureExtractor,
    anomaly_maps,
    aupro,
    check_rgbd,
    combine_maps,
    fill_depth_holes,
    image_auroc,
    load_stereo_rgbd,
    make_synthetic_3dad,
    pixel_auroc,
    render_object,
    scene_patches,
)
from neurips26.papers.ecfr.experiment import TIERS, aupro_reference, run


def _aupro_straightforward(maps, masks, fpr_limit=0.3):
    """An independent AUPRO: a dense grid of thresholds, regions by scipy, np.interp."""
    from scipy import ndimage

    regions = []
    for i in range(len(masks)):
        lab, n = ndimage.label(masks[i])
        regions += [(i, lab == r) for r in range(1, n + 1)]
    ts = np.concatenate([[np.inf], np.sort(np.unique(maps))[::-1]])
    fprs, pros = [], []
    for t in ts:
        pred = maps >= t
        fprs.append((pred & ~masks).sum() / (~masks).sum())
        pros.append(np.mean([(pred[i] & r).sum() / r.sum() for i, r in regions]))
    fprs, pros = np.array(fprs), np.array(pros)
    grid = np.linspace(0, fpr_limit, 20001)
    return float(np.trapezoid(np.interp(grid, fprs, pros), grid) / fpr_limit)


# ------------------------------------------------------------------ metric oracles


def test_auroc_equals_sklearn_with_ties():
    rng = np.random.default_rng(0)
    s = np.round(rng.random(200), 1)  # many ties
    y = rng.integers(0, 2, 200)
    assert image_auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    maps = np.round(rng.random((3, 8, 8)), 2)
    masks = rng.random((3, 8, 8)) < 0.2
    assert pixel_auroc(maps, masks) == pytest.approx(roc_auc_score(masks.ravel(), maps.ravel()),
                                                     abs=1e-12)  # fmt: skip


def test_aupro_known_values():
    masks = np.zeros((1, 4, 4), bool)
    masks[0, 0, :2] = True
    assert aupro(masks.astype(float), masks) == pytest.approx(1.0)
    # A constant map: one threshold, curve (0,0)-(1,1); area to 0.3 is 0.045 -> 0.15.
    assert aupro(np.ones((1, 4, 4)), masks) == pytest.approx(0.15)
    # Two regions, one detected before any false positive, one never above normals.
    masks2 = np.zeros((1, 4, 4), bool)
    masks2[0, 0, 0] = masks2[0, 3, 3] = True
    m = np.zeros((1, 4, 4))
    m[0, 0, 0] = 1.0  # region 1 on top; region 2 tied with the 14 normal pixels
    # PRO jumps to 1/2 at FPR 0, then the tie: (0, .5) -> (1, 1); at 0.3: 0.65.
    assert aupro(m, masks2) == pytest.approx((0.5 + 0.65) / 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aupro_equals_independent_implementations(seed):
    rng = np.random.default_rng(seed)
    masks = np.zeros((3, 10, 10), bool)
    masks[0, 2:5, 2:5] = True
    masks[1, 6:9, 1:3] = True
    masks[1, 0, 8:] = True
    maps = np.round(rng.random((3, 10, 10)) + masks * rng.random(), 2)
    ours = aupro(maps, masks)
    assert ours == pytest.approx(_aupro_straightforward(maps, masks), abs=1e-6)
    assert ours == pytest.approx(aupro_reference(maps, masks), abs=1e-12)


def test_metrics_refuse_bad_input():
    with pytest.raises(ValueError, match="labels"):
        image_auroc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="masks"):
        pixel_auroc(np.zeros((1, 4, 4)), np.zeros((1, 4, 5), bool))
    with pytest.raises(ValueError, match="fpr_limit"):
        aupro(np.zeros((1, 4, 4)), np.eye(4, dtype=bool)[None], fpr_limit=0)


# --------------------------------------------------------------- module invariants


def test_afir_other_stream_zeroed_is_finite():
    torch.manual_seed(0)
    afir = AFIR(8)
    xr = torch.randn(2, 8, 5, 5)
    for out in (afir(xr, torch.zeros_like(xr)), afir(torch.zeros_like(xr), xr)):
        assert all(torch.isfinite(t).all() for t in out)


@pytest.mark.parametrize("size", [8, 6])  # 6: padded up to the window
def test_hac_constant_in_constant_out(size):
    torch.manual_seed(0)
    hac = HAC(8, num_heads=2, window_size=4)
    x = torch.randn(1, 8, 1, 1).expand(1, 8, size, size).contiguous()
    y = hac(x)
    assert torch.allclose(y, y[:, :, :1, :1].expand_as(y), atol=1e-6)


def _grad(model, which):
    fr = torch.randn(2, 5, 8, 8, requires_grad=True)
    fd = torch.randn(2, 6, 8, 8, requires_grad=True)
    r = model(fr, fd)
    out, inp = (r.rgb_hat, fr) if which == "rgb" else (r.depth_hat, fd)
    g = torch.autograd.grad(out.sum(), inp, allow_unused=True)[0]
    return 0.0 if g is None else float(g.abs().max())


def test_strict_mode_isolates_modalities():
    torch.manual_seed(0)
    m = ECFR(5, 6, dim=8, num_blocks=1, cross_mode="strict", num_heads=2)
    assert _grad(m, "rgb") == 0.0 and _grad(m, "depth") == 0.0


def test_gated_mode_leaks_only_through_the_gates():
    torch.manual_seed(0)
    m = ECFR(5, 6, dim=8, num_blocks=1, cross_mode="gated", num_heads=2)
    assert _grad(m, "rgb") > 0 and _grad(m, "depth") > 0
    # Remove the gates' cross-modal inputs (AFIR with cross=False): the path vanishes.
    fwd = m.afir.forward
    m.afir.forward = lambda a, b, cross=True: fwd(a, b, cross=False)
    assert _grad(m, "rgb") == 0.0 and _grad(m, "depth") == 0.0


def test_same_and_fused_modes_see_their_own_modality():
    torch.manual_seed(0)
    for mode in ("same", "fused"):
        m = ECFR(5, 6, dim=8, num_blocks=1, cross_mode=mode, num_heads=2)
        assert _grad(m, "rgb") > 1e-4


def test_ablations_build_and_run():
    for kw in ({"use_afir": False}, {"use_hac": False}):
        m = ECFR(5, 6, dim=8, num_blocks=2, num_heads=2, **kw)
        r = m(torch.randn(1, 5, 8, 8), torch.randn(1, 6, 8, 8))
        assert r.rgb_hat.shape == (1, 5, 8, 8)


def test_flop_counts_match_closed_form():
    from torch.utils.flop_counter import FlopCounterMode

    m = CFMPair(5, 6, hidden=7)
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        m(torch.zeros(1, 5, 4, 4), torch.zeros(1, 6, 4, 4))
    macs = (5 * 7 + 7 * 7 + 7 * 6 + 6 * 7 + 7 * 7 + 7 * 5) * 16
    assert fc.get_total_flops() == 2 * macs


# ----------------------------------------------------------------- data generator


def test_masks_non_empty_exactly_for_anomalies():
    ds = make_synthetic_3dad(num_classes=5, num_train_per_class=1, num_test_per_class=10,
                             image_size=32, seed=3)  # fmt: skip
    assert ((ds.mask_test.sum((1, 2)) > 0) == (ds.label_test == 1)).all()
    assert set(ds.type_test[ds.label_test == 1]) == set(ANOMALY_TYPES)


@pytest.mark.parametrize("name", CLASSES)
def test_stain_keeps_depth_and_dent_keeps_albedo(name):
    base = render_object(name, None, image_size=32, seed=5)
    stain = render_object(name, "stain", image_size=32, seed=5)
    dent = render_object(name, "dent", image_size=32, seed=5)
    assert np.array_equal(stain.depth, base.depth)
    assert not np.array_equal(stain.albedo, base.albedo)
    assert np.array_equal(dent.albedo, base.albedo)
    assert not np.array_equal(dent.depth, base.depth)


def test_same_seed_same_data():
    a = make_synthetic_3dad(num_classes=2, num_train_per_class=2, num_test_per_class=2,
                            image_size=16, seed=1)  # fmt: skip
    b = make_synthetic_3dad(num_classes=2, num_train_per_class=2, num_test_per_class=2,
                            image_size=16, seed=1)  # fmt: skip
    assert np.array_equal(a.rgb_test, b.rgb_test) and np.array_equal(a.depth_train, b.depth_train)


def test_real_scene_holes_refused_then_filled():
    scene = load_stereo_rgbd()
    assert 0 < scene.hole_fraction < 0.5 and np.isnan(scene.depth).any()
    filled = fill_depth_holes(scene.depth, max_fraction=0.9)
    assert np.isfinite(filled).all()
    valid = ~np.isnan(scene.depth)
    assert np.array_equal(filled[valid], scene.depth[valid])
    rgb, depth = scene_patches(scene, num_patches=2, patch_size=32, fill_holes=False, seed=0)
    depth[:, 0, 0] = np.nan
    with pytest.raises(ValueError, match="fill_holes"):
        check_rgbd(rgb, depth)
    _, d = check_rgbd(rgb, depth, fill_holes=True)
    assert np.isfinite(d).all()


# ---------------------------------------------------------------------- detectors


def _tiny():
    return make_synthetic_3dad(num_classes=2, num_train_per_class=6, num_test_per_class=4,
                               image_size=32, seed=0)  # fmt: skip


def test_trivial_anomalies_are_perfectly_detected():
    ds = _tiny()
    fx = RGBDFeatureExtractor(width=8, max_iter=30, seed=0)
    det = ECFRDetector(extractor=fx, dim=8, num_blocks=1, max_iter=40, batch_size=4).fit(
        ds.rgb_train, ds.depth_train)
    rgb, depth = ds.rgb_train[:6].copy(), ds.depth_train[:6].copy()
    yy, xx = np.mgrid[0:32, 0:32]
    blob = np.exp(-((yy - 16) ** 2 + (xx - 16) ** 2) / 18.0)
    rgb[3:] = np.clip(rgb[3:] + 0.9 * blob[..., None] * np.array([1, -1, 1]), 0, 1)
    depth[3:] = depth[3:] - 30.0 * blob
    out = det.score(rgb, depth)
    assert image_auroc(out.image_score, [0, 0, 0, 1, 1, 1]) == 1.0


def test_detectors_api_and_clone():
    ds = _tiny()
    fx = RGBDFeatureExtractor(width=4, max_iter=3).fit(ds.rgb_train, ds.depth_train)
    ftr, fte = fx.transform(ds.rgb_train, ds.depth_train), fx.transform(ds.rgb_test,
                                                                        ds.depth_test)
    for det in (ECFRDetector(dim=8, num_blocks=1, max_iter=3), CFMDetector(dim=8, max_iter=3)):
        out = det.fit_features(ftr).score_features(fte, image_size=32)
        assert out.pixel_map.shape == (8, 32, 32) and out.image_score.shape == (8,)
        assert out.rgb_map.shape == (8, 8, 8)
        assert clone(det).get_params()["dim"] == 8
    pc = PatchCoreDetector(coreset_fraction=1.0).fit_features(ftr, ds.class_train)
    own = pc.score_features(ftr, ds.class_train, image_size=32)
    assert np.allclose(own.rgb_map, 0.0, atol=1e-6)  # every training patch is in the bank
    with pytest.raises(ValueError, match="class_id"):
        pc.score_features(fte, np.full(8, 7), image_size=32)
    top = ECFRDetector(dim=8, num_blocks=1, max_iter=3, image_score="top1").fit_features(ftr)
    assert np.isfinite(top.score_features(fte, image_size=32).image_score).all()


def test_anomaly_maps_is_the_sum_of_cosine_distances():
    torch.manual_seed(0)
    m = ECFR(5, 6, dim=8, num_blocks=1, num_heads=2).eval()
    fr, fd = torch.randn(2, 5, 4, 4), torch.randn(2, 6, 4, 4)
    out = anomaly_maps(m, fr, fd, image_size=4, sigma=0.0)
    r = m(fr, fd)
    cos_r = torch.nn.functional.cosine_similarity(r.rgb_hat, fr, dim=1)
    cos_d = torch.nn.functional.cosine_similarity(r.depth_hat, fd, dim=1)
    expect = (2 - cos_r - cos_d).detach().numpy()
    assert np.allclose(out.pixel_map, expect, atol=1e-5)
    assert np.allclose(out.image_score, expect.reshape(2, -1).max(1), atol=1e-5)


def test_efficientnet_backbone_features():
    pytest.importorskip("efficientnet_lite_pytorch")
    ds = _tiny()
    fx = RGBDFeatureExtractor(width=4, max_iter=2, rgb_backbone="efficientnet")
    f = fx.fit(ds.rgb_train[:4], ds.depth_train[:4]).transform(ds.rgb_test[:2], ds.depth_test[:2])
    assert tuple(f.rgb.shape) == (2, 64, 8, 8) and torch.isfinite(f.rgb).all()


# --------------------------------------------------------------------- bad input


def test_mismatched_rgb_and_depth_are_refused():
    rgb = np.zeros((2, 32, 32, 3))
    with pytest.raises(ValueError, match="depth"):
        check_rgbd(rgb, np.zeros((2, 32, 28)))
    with pytest.raises(ValueError, match="depth"):
        check_rgbd(rgb, np.zeros((3, 32, 32)))
    with pytest.raises(ValueError, match="depth"):
        check_rgbd(rgb, np.full((2, 32, 32), np.inf))
    with pytest.raises(ValueError, match="rgb"):
        check_rgbd(np.zeros((2, 32, 32, 4)), np.zeros((2, 32, 32)))
    with pytest.raises(ValueError, match="rgb"):
        check_rgbd(np.full((2, 32, 32, 3), 2.0), np.zeros((2, 32, 32)))


def test_bad_feature_maps_are_refused():
    m = ECFR(5, 6, dim=8, num_blocks=1, num_heads=2)
    with pytest.raises(ValueError, match="f_rgb and f_depth"):
        m(torch.zeros(1, 5, 4, 4), torch.zeros(1, 6, 4, 5))
    with pytest.raises(ValueError, match="f_rgb and f_depth"):
        m(torch.zeros(2, 5, 4, 4), torch.zeros(1, 6, 4, 4))
    with pytest.raises(ValueError, match="f_depth"):
        m(torch.zeros(1, 5, 4, 4), torch.zeros(1, 7, 4, 4))
    with pytest.raises(ValueError, match="f_rgb"):
        m(torch.full((1, 5, 4, 4), float("nan")), torch.zeros(1, 6, 4, 4))
    with pytest.raises(ValueError, match="sigma"):
        combine_maps(torch.zeros(1, 4, 4), torch.zeros(1, 4, 4), image_size=8, sigma=-1)
    with pytest.raises(ValueError, match="sigma"):
        ECFRDetector(sigma=-1.0).fit_features(Features(torch.zeros(2, 5, 4, 4),
                                                       torch.zeros(2, 6, 4, 4)))
    with pytest.raises(ValueError, match="num_heads"):
        HAC(6, num_heads=4)
    with pytest.raises(ValueError, match="cross_mode"):
        ECFR(5, 6, cross_mode="x")


def test_smoke_run_declares_its_metrics():
    from neurips26.papers.ecfr.experiment import METRICS

    res = run(TIERS["smoke"])
    m = res.metrics
    assert set(m) <= set(METRICS)
    assert m["check_strict_grad_max"] == 0.0
    assert m["check_real_scene_ok"] == 1.0
    # every paper claim's control is measured, with a bootstrap interval over test images
    from neurips26.papers.ecfr.paper import PAPER

    for c in PAPER.claims:
        if c.control:
            assert np.isfinite(m[c.control]), c.control
            iv = res.intervals[c.control]
            assert "bootstrap over images" in iv["method"] and iv["lo"] <= m[c.control] <= iv["hi"]
    # the pixel gains: the value on full maps, the interval from the 4x-subsampled maps
    assert m["p_auroc_gain_vs_same"] == m["p_auroc_ecfr"] - m["p_auroc_same"]
    assert m["fused_p_auroc_gain_vs_same"] == m["p_auroc_fused"] - m["p_auroc_same"]
    assert {r["method"] for r in res.tables["methods"]} >= {"ecfr", "same", "fused", "cfm"}


def test_detector_refuses_holes_unless_asked_to_fill():
    ds = _tiny()
    depth = ds.depth_train.copy()
    depth[:, 3:6, 3:6] = np.nan
    fx = RGBDFeatureExtractor(width=4, max_iter=2)
    with pytest.raises(ValueError, match=r"depth.*fill_holes"):
        ECFRDetector(extractor=fx, dim=8, num_blocks=1, max_iter=2).fit(ds.rgb_train, depth)
    det = ECFRDetector(extractor=RGBDFeatureExtractor(width=4, max_iter=2), dim=8,
                       num_blocks=1, max_iter=2, fill_holes=True).fit(ds.rgb_train, depth)
    assert np.isfinite(det.score(ds.rgb_train, depth).pixel_map).all()
