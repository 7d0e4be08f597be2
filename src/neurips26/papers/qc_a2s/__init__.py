"""QC-A2S: low-latency time-to-first-spike language models from static quantization.

Discrete TTFS neurons (:mod:`.ttfs`) are static quantizers in disguise: a neuron whose
membrane ramps by ``theta / T`` per step and starts half a step up
(``b0 = theta / (2T)``) transmits exactly the round-half-up quantization of its input with
``T + 1`` levels and clip ``theta``. QC-A2S (:mod:`.convert`) therefore converts a
pretrained LLM into a temporal-coding SNN with a static-quantization recipe (calibrated
clips, SmoothQuant-style migration as per-neuron thresholds), at latencies of a few steps
per layer instead of the thousands that continuous-time TTFS conversion needs.
"""

from .convert import (
    QCA2S,
    CalibrationStats,
    ConversionResult,
    SiteStats,
    SpikeStats,
    TTFSLinear,
    calibration_stats,
    convert_continuous_baseline,
    convert_qc_a2s,
    find_sites,
    histogram_theta,
    restore,
    set_mode,
    smooth_scales,
    spike_statistics,
    ttfs_layers,
)
from .ttfs import (
    MAX_STEPS,
    SpikeTrain,
    calibrate_theta,
    closed_form_levels,
    near_tie,
    ttfs_decode,
    ttfs_encode,
    ttfs_levels,
    ttfs_quantize,
)

__all__ = [
    "MAX_STEPS",
    "QCA2S",
    "CalibrationStats",
    "ConversionResult",
    "SiteStats",
    "SpikeStats",
    "SpikeTrain",
    "TTFSLinear",
    "calibrate_theta",
    "calibration_stats",
    "closed_form_levels",
    "convert_continuous_baseline",
    "convert_qc_a2s",
    "find_sites",
    "histogram_theta",
    "near_tie",
    "restore",
    "set_mode",
    "smooth_scales",
    "spike_statistics",
    "ttfs_decode",
    "ttfs_encode",
    "ttfs_layers",
    "ttfs_levels",
    "ttfs_quantize",
]
