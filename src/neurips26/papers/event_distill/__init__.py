"""Distilling an event-camera teacher into an RGB student to probe its inductive bias.

Events are simulated from images seen through a saccade with an ESIM-style simulator
(per-pixel contrast thresholds, refractory period, noise); a CNN teacher learns from event
frames; Hinton distillation moves its decisions into an RGB student of the same
architecture; a probe suite (shape bias on cue-conflict images, colour invariance,
band-limited noise, blur, patch shuffling, first-layer filters, a downstream linear
probe) measures what the student now relies on.
"""

from .distill import (
    AUGMENTATIONS,
    DistillResult,
    EventDistiller,
    SobelInput,
    distill,
    kd_loss,
    make_cnn,
    predict_logits,
    train_classifier,
)
from .events import (
    LUMA,
    EventStream,
    esim,
    event_frames,
    event_histogram,
    luminance,
    normalize_frames,
    pixel_thresholds,
    saccade_frames,
    saccade_path,
    simulate_events,
    time_surface,
    voxel_grid,
)
from .probes import (
    BANDS,
    ProbeReport,
    accuracy_on,
    add_band_noise,
    band_noise,
    channel_permute,
    elastic_warp,
    extract_features,
    filter_chroma,
    filter_freq_centroid,
    gaussian_blur,
    grayscale,
    hue_rotate,
    linear_probe_transfer,
    patch_shuffle,
    probe_suite,
    radial_frequency,
    shape_bias,
)
from .scenes import (
    ALL_SHAPES,
    DOWNSTREAM_SHAPES,
    SHAPES,
    SPLITS,
    TEXTURES,
    ShapeTextureData,
    make_dataset,
    render_scene,
    shape_mask,
    texture_pattern,
)

__all__ = [
    "ALL_SHAPES", "AUGMENTATIONS", "BANDS", "DOWNSTREAM_SHAPES", "LUMA", "SHAPES", "SPLITS",
    "TEXTURES", "DistillResult", "EventDistiller", "EventStream", "ProbeReport",
    "ShapeTextureData", "SobelInput", "accuracy_on", "add_band_noise", "band_noise",
    "channel_permute", "distill", "elastic_warp", "esim", "event_frames", "event_histogram",
    "extract_features", "filter_chroma", "filter_freq_centroid", "gaussian_blur",
    "grayscale", "hue_rotate", "kd_loss", "linear_probe_transfer", "luminance",
    "make_cnn", "make_dataset", "normalize_frames", "patch_shuffle", "pixel_thresholds",
    "predict_logits", "probe_suite", "radial_frequency", "render_scene", "saccade_frames",
    "saccade_path", "shape_bias", "shape_mask", "simulate_events", "texture_pattern",
    "time_surface", "train_classifier", "voxel_grid",
]  # fmt: skip
