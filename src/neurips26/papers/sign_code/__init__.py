"""Sign codes: classification from the binary pattern of neuron signs.

Every hidden unit's output splits into a sign and a magnitude; the signs of all units form
the network's sign code. This package reads sign codes from any network whose
nonlinearities are activation modules, classifies by Hamming kNN on them, replaces
magnitudes by noise or flips signs inside the forward pass, measures same-class code
overlap, trains with an overlap-disrupting regulariser, and splits logit margins into a
sign part and a magnitude remainder.
"""

from .codes import (
    OverlapStats,
    SignCodeKNN,
    hamming_distances,
    hamming_knn,
    select_sites,
    sign_code,
    sign_overlap,
)
from .interventions import FlipRecord, calibrate_magnitudes, flip_signs, randomize_magnitudes
from .margin import MarginParts, margin_decomposition
from .networks import (
    ACTIVATIONS,
    SIGN_PRESERVING,
    SignMLP,
    SignResNet,
    activation_sites,
    is_sign_preserving,
    make_mlp,
    make_resnet,
)
from .training import same_class_soft_overlap, train_classifier

__all__ = [
    "ACTIVATIONS",
    "SIGN_PRESERVING",
    "FlipRecord",
    "MarginParts",
    "OverlapStats",
    "SignCodeKNN",
    "SignMLP",
    "SignResNet",
    "activation_sites",
    "calibrate_magnitudes",
    "flip_signs",
    "hamming_distances",
    "hamming_knn",
    "is_sign_preserving",
    "make_mlp",
    "make_resnet",
    "margin_decomposition",
    "randomize_magnitudes",
    "same_class_soft_overlap",
    "select_sites",
    "sign_code",
    "sign_overlap",
    "train_classifier",
]
