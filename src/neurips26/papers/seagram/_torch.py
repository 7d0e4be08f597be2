"""A tiny local stand-in for ``common/torch.py`` until it lands in main (then replaced)."""

from __future__ import annotations

import torch


def generator_from_seed(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed``."""
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    return gen
