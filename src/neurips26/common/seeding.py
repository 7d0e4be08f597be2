"""Seeding: one ``seed`` makes a run reproducible on the same machine."""

from __future__ import annotations

import random

import numpy as np


def make_rng(seed: int) -> np.random.Generator:
    """A NumPy generator for ``seed`` (PCG64)."""
    return np.random.default_rng(seed)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's legacy and (if imported) torch's global generators."""
    import sys

    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - for third-party code that uses it
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)
