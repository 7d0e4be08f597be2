"""ECFR: unified multi-class RGB+depth anomaly detection by cross-modal feature
reconstruction (AFIR gating, HAC blocks), with the same-modality, CFM and PatchCore
baselines, the procedural "MVTec-3D-lite" data and the AUROC/AUPRO metrics.

Each modality's frozen features are rebuilt from the *other* modality's stream; anomalies
visible in one modality only (a stain, a dent) cannot be copied across, so the
reconstruction fails where the normal RGB-depth relation breaks ("identical shortcut"
suppressed). See :mod:`.model` for the head and :mod:`.detector` for the estimators.

Deviations from the paper
-------------------------
- AFIR and HAC internals are inferred from their names (CBAM-style cross-modal gating;
  depthwise convolution in parallel with window self-attention).
- Frozen features: the experiment takes RGB features from the ImageNet-pretrained
  EfficientNet-lite0 and depth features from a small in-repo convolutional encoder trained
  as a denoising autoencoder on normal depth maps (the estimator's default trains such an
  encoder for RGB too), not the paper's large RGB and point-cloud backbones; depth is a
  2.5D map.
- Data: procedural RGB+depth objects (MVTec 3D-AD and Eyecandies are not available
  offline), plus scikit-image's real Middlebury motorcycle stereo pair as a test of depth
  handling and hole filling.
"""

from .data import (
    ANOMALY_TYPES,
    CLASSES,
    AD3DDataset,
    RGBDScene,
    Sample,
    fill_depth_holes,
    load_stereo_rgbd,
    make_synthetic_3dad,
    render_object,
    scene_patches,
    value_noise,
)
from .detector import (
    AnomalyOutput,
    CFMDetector,
    CFMPair,
    ECFRDetector,
    PatchCoreDetector,
    anomaly_maps,
    combine_maps,
    gaussian_blur,
    greedy_coreset,
)
from .features import RGB_BACKBONES, ConvEncoder, Features, RGBDFeatureExtractor, check_rgbd
from .metrics import aupro, image_auroc, pixel_auroc
from .model import (
    AFIR,
    CROSS_MODES,
    ECFR,
    HAC,
    ConvBlock,
    Reconstruction,
    WindowAttention,
    cosine_distance,
    reconstruction_loss,
)

__all__ = [
    "AFIR",
    "ANOMALY_TYPES",
    "CLASSES",
    "CROSS_MODES",
    "ECFR",
    "HAC",
    "RGB_BACKBONES",
    "AD3DDataset",
    "AnomalyOutput",
    "CFMDetector",
    "CFMPair",
    "ConvBlock",
    "ConvEncoder",
    "ECFRDetector",
    "Features",
    "PatchCoreDetector",
    "RGBDFeatureExtractor",
    "RGBDScene",
    "Reconstruction",
    "Sample",
    "WindowAttention",
    "anomaly_maps",
    "aupro",
    "check_rgbd",
    "combine_maps",
    "cosine_distance",
    "fill_depth_holes",
    "gaussian_blur",
    "greedy_coreset",
    "image_auroc",
    "load_stereo_rgbd",
    "make_synthetic_3dad",
    "pixel_auroc",
    "reconstruction_loss",
    "render_object",
    "scene_patches",
    "value_noise",
]
