"""BETA: black-box test-time adaptation through a local white-box steering model.

A classifier reachable only through an API (probabilities out, nothing else) is adapted
to a shifted test stream with one API call per sample: a small local steering model and
an input prompt are trained on the harmonized (product-of-experts) prediction, with
confidence filtering and consistency over augmented views. Baselines: no adaptation,
post-hoc EM, zeroth-order (SPSA) prompt tuning, TENT. ImageNet-C-style corruptions in
numpy give the shifted streams.
"""

from .blackbox import BlackBoxAPI, BlackBoxServer, HTTPBlackBox, check_probabilities
from .corruptions import CORRUPTIONS, corrupt, disk_kernel
from .tta import (
    BETA,
    TENT,
    NoAdaptation,
    PosthocEM,
    TTAOutput,
    TTAResult,
    ZOOPrompt,
    confidence_filter,
    entropy,
    harmonize,
    make_stream,
    norm_layers,
    shift_views,
    spsa_gradient,
)

__all__ = [
    "BETA",
    "CORRUPTIONS",
    "TENT",
    "BlackBoxAPI",
    "BlackBoxServer",
    "HTTPBlackBox",
    "NoAdaptation",
    "PosthocEM",
    "TTAOutput",
    "TTAResult",
    "ZOOPrompt",
    "check_probabilities",
    "confidence_filter",
    "corrupt",
    "disk_kernel",
    "entropy",
    "harmonize",
    "make_stream",
    "norm_layers",
    "shift_views",
    "spsa_gradient",
]
