"""Report-level plots (the experiments make their own figures)."""

from __future__ import annotations

import math

from neurips26.registry import VERDICTS

COLORS = {
    "reproduced": "#2e7d32",
    "not reproduced": "#c62828",
    "not evidence": "#e65100",
    "inconclusive": "#f9a825",
    "not run": "#9e9e9e",
}


def verdict_summary_png(views) -> bytes:
    """Horizontal stacked bars, one row per paper: the paper-claim verdicts of each
    paper's shown run (checks left out). Its height grows with the papers, so the chart
    stays legible at the page's width."""
    from neurips26.common.plotting import figure_png, new_figure

    fig, (ax,) = new_figure(width=8.0, height=1.6 + 0.26 * len(views))
    slugs = [v.paper.slug for v in views][::-1]
    ordered = views[::-1]
    left = [0] * len(views)
    for verdict in VERDICTS:
        counts = [v.verdict_counts().get(verdict, 0) for v in ordered]
        ax.barh(slugs, counts, left=left, color=COLORS[verdict], label=verdict, height=0.7)
        left = [a + c for a, c in zip(left, counts, strict=True)]
    ax.set_xlabel("paper claims")
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(-0.6, len(views) - 0.4)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(VERDICTS),
              frameon=False)
    return figure_png(fig)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _margins(comparison: str, target: float, tol: float, value, lo, hi):
    """How far ``value`` and ``[lo, hi]`` lie on the passing side of a claim's test
    (positive passes, negative fails, zero is the threshold): ``(m, m_lo, m_hi)``, with
    ``m_lo``/``m_hi`` ``None`` where the interval is unknown."""
    if comparison in ("==", "abs<="):
        centre = target if comparison == "==" else 0.0
        width = tol if comparison == "==" else target + tol
        m = width - abs(value - centre)
        if lo is None:
            return m, None, None
        far = max(abs(lo - centre), abs(hi - centre))
        near = 0.0 if lo <= centre <= hi else min(abs(lo - centre), abs(hi - centre))
        return m, width - far, width - near
    sign = 1.0 if comparison in (">=", ">") else -1.0
    edge = target - tol if sign > 0 else target + tol
    m = sign * (value - edge)
    if lo is None:
        return m, None, None
    ends = sorted((sign * (lo - edge), sign * (hi - edge)))
    return m, ends[0], ends[1]


def _interval_of(value, interval, half):
    iv = interval or {}
    lo, hi = iv.get("lo"), iv.get("hi")
    if _finite(lo) and _finite(hi):
        return lo, hi
    if _finite(half) and half:
        return value - half, value + half
    return None, None


def claims_png(claims) -> bytes | None:
    """A forest plot of a run's claims, one row each: how far our value (filled, with its
    interval) and the control's (hollow, with its interval) lie on the passing side of
    the claim's test, each row scaled to its own largest distance, so the dashed line at
    zero is every claim's threshold and right of it passes. The numbers are printed beside
    each row. ``None`` when no claim of the run has a finite value."""
    from neurips26.common.plotting import figure_png, new_figure

    rows = [c for c in claims if _finite(c.measured)]
    if not rows:
        return None
    height = 0.42 * len(rows) + 1.1
    fig, (ax,) = new_figure(width=10.0, height=height)
    fig.subplots_adjust(left=0.3, right=0.58, bottom=0.5 / height, top=1 - 0.45 / height)
    labels = []
    for k, c in enumerate(rows):
        y = len(rows) - 1 - k
        tol = c.tolerance or 0.0
        lo, hi = _interval_of(c.measured, c.interval, c.uncertainty)
        m, mlo, mhi = _margins(c.comparison, c.target, tol, c.measured, lo, hi)
        pts = [m] + [x for x in (mlo, mhi) if x is not None]
        ctrl = c.control or {}
        cv = ctrl.get("value")
        cm = None
        if _finite(cv):
            clo, chi = _interval_of(cv, ctrl.get("interval"), None)
            cm, cmlo, cmhi = _margins(c.comparison, c.target, tol, cv, clo, chi)
            pts += [cm] + [x for x in (cmlo, cmhi) if x is not None]
        scale = max(abs(x) for x in pts if math.isfinite(x)) if any(
            math.isfinite(x) for x in pts) else 1.0
        scale = scale or 1.0

        def norm(x, scale=scale):
            return max(-1.05, min(1.05, x / scale)) if x is not None else None

        err = None
        if mlo is not None:
            err = [[norm(m) - norm(mlo)], [norm(mhi) - norm(m)]]
        ax.errorbar([norm(m)], [y], xerr=err, fmt="o", color=COLORS.get(c.verdict, "k"),
                    capsize=3)
        if cm is not None:
            cerr = None
            if cmlo is not None:
                cerr = [[norm(cm) - norm(cmlo)], [norm(cmhi) - norm(cm)]]
            ax.errorbar([norm(cm)], [y - 0.25], xerr=cerr, fmt="o", mfc="white", color="#555",
                        capsize=2, markersize=4)
        text = f"{c.metric} = {_num(c.measured)}"
        if lo is not None:
            text += f" [{_num(lo)}, {_num(hi)}]"
        text += f"; test {c.comparison} {_num(c.target)}"
        if cm is not None:
            text += f"; control {_num(cv)}"
        ax.text(1.03, y, text, fontsize=7, va="center", ha="left",
                transform=ax.get_yaxis_transform())
        labels.append((y, c.id))
    ax.axvline(0.0, color="#1565c0", linestyle="--", linewidth=1)
    ax.set_yticks([y for y, _ in labels], [t for _, t in labels], fontsize=8)
    ax.set_xlim(-1.1, 1.1)
    ax.set_xticks([-1, 0, 1], ["fails", "threshold", "passes"], fontsize=8)
    ax.set_ylim(-0.8, len(rows) - 0.4)
    ax.set_title("Each claim's distance from its threshold (each row on its own scale): "
                 "ours filled, control hollow", fontsize=8)
    return figure_png(fig, layout=False)


def _num(x) -> str:
    from neurips26.report.pages import fmt

    return fmt(float(x))
