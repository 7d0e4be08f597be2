"""Reference sample complexities (inferred from the abstract, for plots and claim 2).

The abstract states non-asymptotic upper bounds with matching lower bounds but not their
form. We use the three costs our procedure pays (see :mod:`.localize`):

- ``asymptotic = sum_k 2 sigma^2 / Delta_k^2 log(1 / delta)``: verifying each change point
  at confidence ``delta``; the only term left as ``delta -> 0`` (Lazzaro and Pike-Burke);
- ``localization = sum_k sigma^2 / Delta_k^2 * ceil(log2(1 / (2 eta)))``: noisy binary
  search at constant confidence (one constant-cost test per halving);
- ``position = (2^(j* + 1) - 2^j0) sigma^2 / Delta_min^2`` with
  ``j* = max(j0, ceil(log2(1 / s_min)))``: a dyadic sweep of all levels down to the one
  whose spacing ``2^(-j*)`` separates the closest pair (``s_min``), ``2^j`` points at
  level ``j`` each sampled ``sigma^2 / Delta_min^2`` times;

and ``total`` is their sum. Constants (and logarithmic factors in the detection union
bound) are not the paper's, so only ratios across instances are meaningful.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bounds import _check_delta, _check_sigma
from .environment import StepFunction
from .localize import _check_eta

__all__ = ["Complexity", "reference_complexity"]


@dataclass(frozen=True)
class Complexity:
    """Reference sample counts of an instance (see the module docstring).

    Attributes
    ----------
    asymptotic : float
        ``sum_k 2 sigma^2 / Delta_k^2 log(1 / delta)``.
    localization : float
        ``sum_k sigma^2 / Delta_k^2 ceil(log2(1 / (2 eta)))``.
    position_term : float
        ``(2^(j* + 1) - 2^j0) sigma^2 / Delta_min^2``.
    total : float
        Sum of the three.
    level : int
        ``j*``.
    """

    asymptotic: float
    localization: float
    position_term: float
    total: float
    level: int


def reference_complexity(
    f: StepFunction, *, eta: float, delta: float, sigma: float = 1.0
) -> Complexity:
    """Reference complexity of localising the change points of ``f``.

    Parameters
    ----------
    f : StepFunction
        The instance (change points ``x_k``, jumps ``Delta_k``).
    eta : float
        Precision ``eta`` in (0, 0.5).
    delta : float
        Error level ``delta`` in (0, 1).
    sigma : float, default 1.0
        Noise parameter ``sigma``.

    Returns
    -------
    Complexity

    Examples
    --------
    >>> f = StepFunction([0.3, 0.7], [0.0, 1.0, 0.0])
    >>> c = reference_complexity(f, eta=0.01, delta=0.1)
    >>> round(c.asymptotic, 3), c.localization, c.level
    (9.21, 12.0, 2)
    """
    if not isinstance(f, StepFunction):
        raise TypeError(f"f must be a StepFunction, got {type(f).__name__}")
    eta = _check_eta(eta)
    delta = _check_delta(delta)
    sigma = _check_sigma(sigma)
    inv = sigma**2 / f.jumps**2  # (N,) sigma^2 / Delta_k^2
    asym = float(np.sum(2 * inv) * math.log(1 / delta))
    L = max(1, math.ceil(math.log2(1 / (2 * eta))))
    loc = float(np.sum(inv) * L)
    N = f.num_change_points
    j0 = max(1, math.ceil(math.log2(N)))
    j_star = j0 if N < 2 else max(j0, math.ceil(math.log2(1 / f.min_spacing)))
    pos = float((2 ** (j_star + 1) - 2**j0) * inv.max())
    return Complexity(
        asymptotic=asym,
        localization=loc,
        position_term=pos,
        total=asym + loc + pos,
        level=j_star,
    )
