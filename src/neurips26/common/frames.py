"""Orientation checks for labelled tables: warn when a table looks transposed.

Papers that score *models* on *items* (benchmark questions, test images, debate questions)
take a 2-D table with one axis per kind. Passing it the wrong way round raises nothing (a
matrix is a matrix) and silently answers a different question, so the functions that take
such a table call :func:`warn_if_transposed` on it.

Only a shape can be checked, and in these fields the "normal" shape is lopsided: a
benchmark has many more items than models (``K >> N`` is the regime λ6★ is built for), but
``K < N`` is valid too (MMLU's 57 subjects under 98 leaderboard models). The rule therefore
fires only on a clear imbalance the *wrong* way: the axis that should be the long one is
shorter than the other by ``ratio`` (10 by default) and the other holds at least
``min_size`` entries (50). A table of 41,871 models × 12 items warns; 98 × 57 does not.

Where tall tables are a regime of their own, a function does not call it: Guttman's λ6
was built for persons × items tables with far more persons than items, so lambda6_star's
functions accept any orientation silently.

The warning is an :class:`OrientationWarning` (a :class:`UserWarning`), so a user who
truly has such a table silences it with :func:`warnings.filterwarnings` by category.

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warn_if_transposed((5000, 12), "scores", rows="models", cols="items")
True
>>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
scores has 5000 models (rows) and 12 items (columns): tables like this usually have far
more items than models, so it may be transposed; pass scores.T if its rows are items
(silence with warnings.filterwarnings('ignore', category=OrientationWarning))
>>> warn_if_transposed((98, 57), "scores", rows="models", cols="items")  # no warning
False
"""

from __future__ import annotations

import warnings

from neurips26.common.validation import check_float, check_int

__all__ = ["OrientationWarning", "warn_if_transposed"]


class OrientationWarning(UserWarning):
    """A table's shape suggests its rows and columns are swapped."""


def warn_if_transposed(
    shape: tuple[int, ...],
    name: str,
    *,
    rows: str,
    cols: str,
    long_axis: str = "cols",
    ratio: float = 10.0,
    min_size: int = 50,
    stacklevel: int = 3,
) -> bool:
    """Warn when a 2-D table's shape suggests it was passed transposed.

    Parameters
    ----------
    shape : tuple of int, length 2
        ``(num_rows, num_cols)`` of the table as passed.
    name : str
        The argument's name, used in the message (``"scores"``, ``"Y"``).
    rows, cols : str
        What the rows and the columns are expected to hold (``"models"``, ``"items"``).
    long_axis : {"cols", "rows"}
        The axis that is normally the longer one.
    ratio : float, >= 1
        How many times longer the normally short axis must be before the table is
        reported.
    min_size : int, >= 1
        The normally short axis must also hold at least this many entries.
    stacklevel : int
        Passed to :func:`warnings.warn` (3 points at the caller of a public function that
        calls this helper directly).

    Returns
    -------
    bool
        Whether a warning was issued.
    """
    if len(shape) != 2:
        raise ValueError(f"shape must have length 2, got {shape!r}")
    n_rows, n_cols = (check_int(s, "shape", min=0) for s in shape)
    if long_axis not in ("cols", "rows"):
        raise ValueError(f"long_axis must be 'cols' or 'rows', got {long_axis!r}")
    ratio = check_float(ratio, "ratio", min=1.0)
    min_size = check_int(min_size, "min_size", min=1)
    short, long_ = (n_rows, n_cols) if long_axis == "cols" else (n_cols, n_rows)
    if short < min_size or short < ratio * long_:
        return False
    usual_long, usual_short = (cols, rows) if long_axis == "cols" else (rows, cols)
    warnings.warn(
        f"{name} has {n_rows} {rows} (rows) and {n_cols} {cols} (columns): tables like this "
        f"usually have far more {usual_long} than {usual_short}, so it may be transposed; "
        f"pass {name}.T if its rows are {cols} (silence with warnings.filterwarnings('ignore', "
        "category=OrientationWarning))",
        OrientationWarning,
        stacklevel=stacklevel,
    )
    return True
