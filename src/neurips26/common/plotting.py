"""Figures for the report: matplotlib on the Agg backend, returned as PNG bytes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["figure_png", "new_figure", "plt"]


def new_figure(ncols: int = 1, *, width: float = 5.0, height: float = 3.6):
    """A figure with ``ncols`` axes side by side; returns ``(fig, axes)``."""
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def figure_png(fig, *, dpi: int = 110) -> bytes:
    """Render ``fig`` to PNG bytes and close it."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
