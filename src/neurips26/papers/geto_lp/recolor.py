"""Colour transfer through a transport plan by quota allocation.

Given the plan ``pi`` from a barycenter palette ``nu`` (rows) to an image's palette
``mu`` (columns), the pixels of each image colour bin ``y`` are split among barycenter
bins ``x`` in proportion to ``pi(x, y)``; integer quotas come from largest-remainder
rounding, so the recoloured histogram equals ``nu`` up to rounding.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["quota_recolor"]


def quota_recolor(
    pixel_bins: np.ndarray, plan: sp.spmatrix, *, rng: np.random.Generator,
) -> np.ndarray:
    """Reassign every pixel to a barycenter colour bin following ``plan``.

    Parameters
    ----------
    pixel_bins : ndarray of int, shape (P,)
        The colour bin ``y`` of every pixel (flat grid index).
    plan : sparse matrix, shape (N, N)
        ``pi(x, y)``: mass sent from barycenter bin ``x`` to image bin ``y``; its column
        sums should be the image's histogram ``mu(y) = count_y / P``.
    rng : numpy.random.Generator
        Decides which pixels of a bin go to which target.

    Returns
    -------
    ndarray of int, shape (P,)
        The new bin of every pixel; ``bincount / P`` matches ``pi``'s row sums up to
        rounding (at most one pixel per nonzero of ``pi``).

    Examples
    --------
    >>> plan = sp.csr_matrix(np.array([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.5, 0.0]]))
    >>> quota_recolor(np.array([0, 0, 1, 1]), plan, rng=np.random.default_rng(0)).tolist()
    [0, 0, 2, 2]
    """
    pixel_bins = np.asarray(pixel_bins)
    if pixel_bins.ndim != 1 or not np.issubdtype(pixel_bins.dtype, np.integer):
        raise ValueError("pixel_bins must be a 1-D integer array")
    pi = sp.csc_matrix(plan)  # columns = image bins y
    if pi.shape[0] != pi.shape[1] or (pixel_bins.size and pixel_bins.max() >= pi.shape[1]):
        raise ValueError(f"plan of shape {pi.shape} does not cover the pixel bins")
    out = np.empty_like(pixel_bins)
    order = np.argsort(pixel_bins, kind="stable")  # pixels grouped by bin
    counts = np.bincount(pixel_bins, minlength=pi.shape[1])
    starts = np.concatenate(([0], np.cumsum(counts)))
    for y in np.flatnonzero(counts):
        members = order[starts[y] : starts[y + 1]]
        col = slice(pi.indptr[y], pi.indptr[y + 1])
        targets, mass = pi.indices[col], pi.data[col]
        if mass.sum() <= 0:
            raise ValueError(f"image bin {y} has pixels but no mass in the plan")
        exact = counts[y] * mass / mass.sum()  # fractional quotas, sum = count_y
        quota = np.floor(exact).astype(np.int64)
        short = counts[y] - quota.sum()  # largest-remainder rounding
        quota[np.argsort(-(exact - quota), kind="stable")[:short]] += 1
        out[rng.permutation(members)] = np.repeat(targets, quota)
    return out
