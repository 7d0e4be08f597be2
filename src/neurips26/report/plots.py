"""Report-level plots (the experiments make their own figures)."""

from __future__ import annotations

from neurips26.registry import VERDICTS

COLORS = {
    "reproduced": "#2e7d32",
    "not reproduced": "#c62828",
    "not evidence": "#e65100",
    "inconclusive": "#f9a825",
    "not run": "#9e9e9e",
}


def verdict_summary_png(views) -> bytes:
    """Stacked bars: the paper-claim verdicts of each paper's shown run (checks left out)."""
    from neurips26.common.plotting import figure_png, new_figure

    fig, (ax,) = new_figure(width=max(6.0, 0.6 * len(views) + 3.5), height=3.6)
    slugs = [v.paper.slug for v in views]
    bottom = [0] * len(views)
    for verdict in VERDICTS:
        counts = [v.verdict_counts().get(verdict, 0) for v in views]
        ax.bar(slugs, counts, bottom=bottom, color=COLORS[verdict], label=verdict)
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    ax.set_ylabel("paper claims")
    ax.set_title("Paper-claim verdicts per paper (the run shown: small tier where run)")
    ax.tick_params(axis="x", rotation=45)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return figure_png(fig)
