"""Shared real photos, their views, and the pretrained EfficientNet-lite0 backbone."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from neurips26.common.data import SKIMAGE_PHOTOS, load_photos, photo_views

has_effnet = importlib.util.find_spec("efficientnet_lite_pytorch") is not None


def test_photo_views_shapes_and_bad_input():
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, size=(40, 50, 3), dtype=np.uint8) for _ in range(2)]
    views, labels = photo_views(imgs, 3, size=16, rng=rng)
    assert views.shape == (6, 16, 16, 3) and views.dtype == np.uint8
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]
    again, _ = photo_views(imgs, 3, size=16, rng=np.random.default_rng(0))
    first, _ = photo_views(imgs, 3, size=16, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(again, first)
    with pytest.raises(ValueError, match=r"images\[0\] must have shape"):
        photo_views([np.zeros((4, 4))], 1, rng=rng)
    with pytest.raises(ValueError, match="min_scale must"):
        photo_views(imgs, 1, min_scale=2.0, rng=rng)
    with pytest.raises(ValueError, match="num_views must lie in"):
        photo_views(imgs, 0, rng=rng)
    with pytest.raises(ValueError, match="images must hold"):
        photo_views([], 1, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        photo_views(imgs, 1, rng=0)


def test_load_photos_real_skimage_and_bad_input():
    images, names = load_photos(num_skimage=3, imagenet=False)
    assert names == [f"skimage_{n}" for n in SKIMAGE_PHOTOS[:3]]
    assert all(im.ndim == 3 and im.shape[2] == 3 and im.dtype == np.uint8 for im in images)
    with pytest.raises(ValueError, match="num_skimage"):
        load_photos(num_skimage=len(SKIMAGE_PHOTOS) + 1)
    with pytest.raises(TypeError, match="imagenet"):
        load_photos(imagenet=1)


@pytest.mark.skipif(not has_effnet, reason="efficientnet-lite-pytorch not installed")
def test_efficientnet_lite0_classifies_a_real_photo_and_pools_features(capsys):
    import torch

    from neurips26.common.models import (
        efficientnet_features,
        efficientnet_preprocess,
        load_efficientnet_lite0,
    )

    model = load_efficientnet_lite0()
    assert capsys.readouterr().out == ""  # stdout stays the caller's
    assert not any(p.requires_grad for p in model.parameters())
    images, labels = load_photos(num_skimage=0)
    from PIL import Image

    x = np.stack([np.asarray(Image.fromarray(im).resize((224, 224))) for im in images[:4]])
    with torch.no_grad():
        pred = model(efficientnet_preprocess(x)).argmax(1).numpy()
    # foolbox's ImageNet samples are labelled; a pretrained network gets most of them right
    label_of = [int(n.rsplit("_", 1)[1]) for n in labels[:4]]
    assert (pred == np.array(label_of)).sum() >= 3
    F = efficientnet_features(model, np.zeros((2, 32, 32, 3), dtype=np.uint8))
    assert F.shape == (2, 1280) and np.all(np.isfinite(F))
    with pytest.raises(ValueError, match="images must have shape"):
        efficientnet_features(model, np.zeros((2, 32, 32)))
    with pytest.raises(TypeError, match="model"):
        efficientnet_features(torch.nn.Linear(2, 2), np.zeros((1, 8, 8, 3)))
    with pytest.raises(ValueError, match="images must be finite"):
        efficientnet_preprocess(np.full((1, 4, 4, 3), np.nan))
