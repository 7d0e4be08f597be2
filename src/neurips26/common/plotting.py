"""Figures for the report: matplotlib on the Agg backend, returned as PNG bytes."""

from __future__ import annotations

import io
import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["figure_png", "new_figure", "plt", "tidy"]


def new_figure(ncols: int = 1, *, width: float = 5.0, height: float = 3.6):
    """A figure with ``ncols`` axes side by side; returns ``(fig, axes)``."""
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def _legend_covers_data(ax, legend, renderer) -> bool:
    """Whether ``legend`` (inside ``ax``) hides a bar, a marker or a line vertex."""
    box = legend.get_window_extent(renderer)
    for patch in ax.patches:
        if patch.get_visible() and patch.get_window_extent(renderer).overlaps(box):
            return True
    for line in ax.lines:
        xy = line.get_xydata()
        if not len(xy):
            continue
        pts = ax.transData.transform(xy)
        inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1)
                  & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1))
        if inside.any():
            return True
    for coll in ax.collections:
        offsets = coll.get_offsets()
        if len(offsets):
            pts = coll.get_offset_transform().transform(offsets)
            inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1)
                      & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1))
            if inside.any():
                return True
    return False


def tidy(fig) -> None:
    """Make a figure legible before it is saved: x tick labels that overlap are turned
    30 degrees, and a legend inside its axes that hides data moves to the right of the
    axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
        if any(a.x1 > b.x0 + 1 for a, b in itertools.pairwise(boxes)):
            for t in labels:
                if not t.get_rotation():
                    t.set_rotation(30)
                    t.set_horizontalalignment("right")
        legend = ax.get_legend()
        if legend is None or legend.get_bbox_to_anchor() is not ax.bbox:
            continue  # no legend, or one already placed by hand
        if _legend_covers_data(ax, legend, renderer):
            texts = [t.get_text() for t in legend.get_texts()]
            ax.legend(legend.legend_handles, texts, loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), frameon=False,
                      fontsize=legend.get_texts()[0].get_fontsize() if texts else None)


def figure_png(fig, *, dpi: int = 110, layout: bool = True) -> bytes:
    """Render ``fig`` to PNG bytes and close it; ``layout=False`` keeps the figure's own
    layout (no :func:`tidy`, no tight layout: one draw instead of four)."""
    buf = io.BytesIO()
    if layout:
        tidy(fig)
        fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight" if layout else None)
    plt.close(fig)
    return buf.getvalue()
