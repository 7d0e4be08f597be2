"""Models shared by the deep-learning papers.

Names are imported on first use (PEP 562), so ``import neurips26.common.models.sentence``
or reading :data:`MINILM_PACKAGE` does not import torch; ``GPT`` and the other torch
modules import it when first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_WHERE = {
    "GPT": "gpt",
    "GPTConfig": "gpt",
    "RMSNorm": "gpt",
    "MLPClassifier": "small",
    "SmallCNN": "small",
    "EFFICIENTNET_LITE0_DIM": "vision",
    "efficientnet_features": "vision",
    "efficientnet_preprocess": "vision",
    "load_efficientnet_lite0": "vision",
    "MINILM_DIM": "sentence",
    "MINILM_PACKAGE": "sentence",
    "encode_sentences": "sentence",
    "load_minilm": "sentence",
    "minilm_available": "sentence",
}

__all__ = [
    "EFFICIENTNET_LITE0_DIM",
    "GPT",
    "MINILM_DIM",
    "MINILM_PACKAGE",
    "GPTConfig",
    "MLPClassifier",
    "RMSNorm",
    "SmallCNN",
    "efficientnet_features",
    "efficientnet_preprocess",
    "encode_sentences",
    "load_efficientnet_lite0",
    "load_minilm",
    "minilm_available",
]

if TYPE_CHECKING:  # pragma: no cover
    from neurips26.common.models.gpt import GPT, GPTConfig, RMSNorm
    from neurips26.common.models.sentence import (
        MINILM_DIM,
        MINILM_PACKAGE,
        encode_sentences,
        load_minilm,
        minilm_available,
    )
    from neurips26.common.models.small import MLPClassifier, SmallCNN
    from neurips26.common.models.vision import (
        EFFICIENTNET_LITE0_DIM,
        efficientnet_features,
        efficientnet_preprocess,
        load_efficientnet_lite0,
    )


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'neurips26.common.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"neurips26.common.models.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
