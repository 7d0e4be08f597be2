"""Moments of ``p ∝ exp(theta . T(x))`` from Stein's identity alone (no partition function).

For a score ``s_i(z) = d_i log p(z)`` that is a polynomial, Stein's identity
``E[d_i g] + E[g s_i] = 0`` for every test monomial ``g`` is a linear recurrence on the
moments ``E[z^alpha]``. Together with ``E[1] = 1`` it leaves a few low-order moments
free: besides the moments of ``p`` the recurrence has other solutions (``exp(theta . T)``
integrated along complex contours). The moments of ``p`` are the solution that grows
slowest with the degree, which Miller's backward-recurrence idea finds: unknown moments
up to a truncation degree ``K``, moments above ``K`` set to zero in every equation
that would need them, and the (overdetermined) system solved by least squares with
``E[1] = 1`` as a heavily weighted row. In 1-D and with equations up to degree
``K`` this is Miller's algorithm; the error falls quickly with ``K`` when the
Gaussian part of ``theta`` dominates (it does after a Bayes update with a sharp
likelihood); the solver is only used in standardised coordinates where the moments are
O(1)-to-Gamma(k/4) sized.

This is the posterior-moment step of the Score Kalman Filter (see ``skf.update``);
everything is one dense least-squares solve per coordinate block.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from math import comb

import numpy as np
import scipy.linalg

from neurips26.common.validation import check_int, check_size

from .basis import Exponent, monomials_up_to

__all__ = ["Poly", "compose_affine", "stein_moments"]

Poly = dict[Exponent, float]
#: Most entries (rows x unknowns) of the dense Stein system :func:`stein_moments` solves.
MAX_STEIN_ENTRIES = 10**8
WEIGHT_M0 = 1e6  # weight of the normalisation row E[1] = 1


def _gauss_size(a: Exponent) -> float:
    """sqrt(E[z^(2a)]) for z ~ N(0, I): the natural size of a standardised moment."""
    v = 1.0
    for k in a:
        for j in range(1, 2 * k, 2):
            v *= j
    return float(np.sqrt(v))


def compose_affine(p: Mapping, mu: np.ndarray, s: np.ndarray) -> Poly:
    """``q(z) = p(mu + s * z)`` for a polynomial ``p`` (dict exponent -> coefficient)."""
    out: Poly = {}
    mu = np.asarray(mu, dtype=float)
    s = np.asarray(s, dtype=float)
    for a, c in p.items():
        # prod_i (mu_i + s_i z_i)^a_i = sum_b prod_i C(a_i, b_i) mu_i^(a_i-b_i) s_i^b_i z^b
        terms: list[tuple[tuple, float]] = [((), c)]
        for i, ai in enumerate(a):
            new = []
            for b, coef in terms:
                for bi in range(ai + 1):
                    w = comb(ai, bi) * mu[i] ** (ai - bi) * s[i] ** bi
                    if w != 0.0:
                        new.append(((*b, bi), coef * w))
            terms = new
        for b, coef in terms:
            out[b] = out.get(b, 0.0) + coef
    return out


def stein_moments(
    scores: Sequence[Mapping], *, degree: int, truncation: int = 24,
    require_normalisable: bool = True,
) -> dict[Exponent, float]:
    """Moments of the density whose score is the polynomial field ``scores``.

    Solves ``E[d_i g] + E[g s_i] = 0`` for every monomial ``g`` of degree
    ``< truncation`` and every coordinate ``i``, plus ``E[1] = 1``, over the unknown
    moments of degree ``<= truncation`` (moments of higher degree set to zero), by
    least squares on Gaussian-scaled unknowns and unit-norm rows.

    Parameters
    ----------
    scores : sequence of dict, length d
        ``s_i(z) = d_i log p(z)`` as ``{exponent: coefficient}`` (exponents of length
        ``d``); the density must be integrable (leading form negative definite) and is
        best given in standardised coordinates (``E[z] ~ 0``, ``E[z^2] ~ 1``). A field
        along which the density does not decay is refused (``ValueError``).
    degree : int
        Return all moments of degree ``<= degree``.
    truncation : int
        Truncation degree ``K`` (``> degree``); accuracy improves with ``K``. A system of
        more than :data:`MAX_STEIN_ENTRIES` dense entries is refused (``ValueError``).
    require_normalisable : bool
        Refuse a field whose density does not decay in some direction (default). The
        filter passes ``False`` for beliefs it has checked to fall over their bulk
        (2 to 8 standard deviations): the truncated solution is then the moments of
        the density restricted to the region inside its first barrier (for example
        ``s(z) = -z + 0.004 z^3``, a tiny positive quartic, gives the moments of
        ``exp(-z^2/2 + 0.001 z^4)`` on ``|z| < 15.8``).

    Returns
    -------
    dict
        ``{alpha: E[z^alpha]}`` for ``|alpha| <= degree`` (the constant included).

    Examples
    --------
    >>> m = stein_moments([{(1,): -1.0}], degree=4)  # N(0, 1): s(z) = -z
    >>> round(m[(2,)], 10), round(m[(4,)], 10)
    (1.0, 3.0)
    """
    d = len(scores)
    if d < 1:
        raise ValueError("scores needs at least one component")
    degree = check_int(degree, "degree", min=0)
    truncation = check_int(truncation, "truncation", min=1)
    if degree < 0 or truncation <= degree:
        raise ValueError(f"need 0 <= degree < truncation, got {degree}, {truncation}")
    if truncation > MAX_STEIN_ENTRIES:  # the count below is at least truncation + 1
        entries = float(truncation + 1)
    else:
        entries = (d * comb(d + truncation - 1, d) + 1) * comb(d + truncation, d)
    check_size(entries, "truncation", limit=MAX_STEIN_ENTRIES,
               what=f"entries of the dense Stein system in {d} variables")
    for k, s in enumerate(scores):
        for a, c in s.items():
            if len(a) != d:
                raise ValueError(f"scores[{k}] has exponent {a}; expected length {d}")
            if not np.isfinite(c):
                raise ValueError(f"scores[{k}] has a non-finite coefficient")
    if require_normalisable:
        _check_integrable(scores, d)
    r = max((sum(a) for sc in scores for a in sc), default=0)
    full = tuple(sorted(monomials_up_to(d, r)))  # one cached plan per (d, K, r)
    plan = _plan(d, int(truncation), (full,) * d)
    coef = np.concatenate([[1.0], [sc.get(a, 0.0) for sc in scores for a in full]])
    vals = plan["base"] * coef[plan["src"]] * plan["scale"]
    B = np.bincount(plan["flat"], weights=vals,  # duplicates summed in order, as add.at
                    minlength=plan["shape"][0] * plan["shape"][1]).reshape(plan["shape"])
    rn = np.linalg.norm(B, axis=1)
    rn[rn == 0] = 1.0
    B /= rn[:, None]  # unit-norm rows; unknowns in units of their N(0, 1) size
    r = plan["shape"][0] - 1
    B[r, 0] = WEIGHT_M0  # E[1] = 1
    rhs = np.zeros(r + 1)
    rhs[r] = WEIGHT_M0
    if not np.all(np.isfinite(B)):
        raise ValueError("the Stein system has non-finite entries (score coefficients too large)")
    # Householder QR (fixed cost); fall back to SVD least squares if R is near singular
    # Q is applied as Householder reflectors (LAPACK ormqr), never formed: half the cost
    (qr, tau), _ = scipy.linalg.qr(B, mode="raw", check_finite=False)
    k = B.shape[1]
    dg = np.abs(np.diag(qr[:k, :k]))
    if dg.min() > 1e-13 * dg.max():
        (ormqr,) = scipy.linalg.get_lapack_funcs(("ormqr",), (qr,))
        _, work, _ = ormqr("L", "T", qr, tau, rhs[:, None], lwork=-1)
        qtb, _, info = ormqr("L", "T", qr, tau, rhs[:, None], lwork=int(work[0].real))
        if info != 0:  # pragma: no cover - LAPACK argument error
            raise RuntimeError(f"LAPACK ormqr failed (info {info})")
        sol = scipy.linalg.solve_triangular(qr[:k, :k], qtb[:k, 0], check_finite=False)
    else:
        sol = np.linalg.lstsq(B, rhs, rcond=None)[0]
    sol *= plan["colscale"]
    sol /= sol[0]
    return {a: float(sol[j]) for j, a in enumerate(plan["exps"]) if sum(a) <= degree}


def _check_integrable(scores: Sequence[Mapping], d: int) -> None:
    """Refuse a score field whose density cannot be normalised (a necessary check).

    Along a direction ``u``, ``d/dt log p(t u) = u . s(t u)``; its leading term in ``t`` must
    be negative for ``p`` to decay. We check the ``2 d`` coordinate directions and 64 fixed
    random ones, so ``exp(+z^2 / 2)`` (score ``+z``) or a constant score is refused.
    """
    dirs = np.vstack([np.eye(d), -np.eye(d), np.random.default_rng(0).standard_normal((64, d))])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    by_degree: dict[int, np.ndarray] = {}
    for i, sc in enumerate(scores):
        for a, c in sc.items():
            k = sum(a)
            term = c * np.prod(dirs ** np.asarray(a)[None, :], axis=1) * dirs[:, i]
            by_degree[k] = by_degree.get(k, 0.0) + term
    lead = np.zeros(len(dirs))
    done = np.zeros(len(dirs), dtype=bool)
    scale = max((abs(c) for sc in scores for c in sc.values()), default=1.0)
    for k in sorted(by_degree, reverse=True):
        v = by_degree[k]
        new = ~done & (np.abs(v) > 1e-12 * scale)
        lead[new] = v[new]
        done |= new
    if not np.all(done & (lead < 0)):
        j = int(np.argmax(~(done & (lead < 0))))
        raise ValueError(
            "scores: the density exp(int s) is not normalisable (it does not decay along "
            f"direction {np.round(dirs[j], 3).tolist()}); the leading term of u . s(t u) must "
            "be negative in every direction"
        )


@functools.lru_cache(maxsize=64)
def _plan(d: int, K: int, support: tuple) -> dict:
    """Sparsity pattern of the truncated Stein system for a score support (cached).

    ``support[i]`` lists the exponents of ``s_i`` (sorted); entry values are
    ``base * coef[src]`` with ``coef = (1, coefficients of s_0, s_1, ...)``.
    """
    cols = monomials_up_to(d, K)
    cols.sort(key=lambda a: (sum(a), a))
    cidx = {a: j for j, a in enumerate(cols)}
    scale = np.array([_gauss_size(a) for a in cols])
    offs = np.cumsum([0] + [len(s) for s in support])
    rows, cc, base, src = [], [], [], []
    r = 0
    for g in cols:
        if sum(g) >= K:
            continue
        for i in range(d):
            start = len(rows)
            if g[i] > 0:  # E[d_i g] = g_i E[z^(g - e_i)]
                e = list(g)
                e[i] -= 1
                rows.append(r)
                cc.append(cidx[tuple(e)])
                base.append(float(g[i]))
                src.append(0)
            for t, a in enumerate(support[i]):  # E[g s_i] = sum_a c_a E[z^(g + a)]
                j = cidx.get(tuple(x + y for x, y in zip(g, a, strict=True)))
                if j is not None:  # degree > K: truncated to zero (Miller)
                    rows.append(r)
                    cc.append(j)
                    base.append(1.0)
                    src.append(1 + offs[i] + t)
            if len(rows) > start:
                r += 1
    cc_arr = np.asarray(cc, dtype=int)
    return dict(
        rows=np.asarray(rows, dtype=int),
        cols=cc_arr,
        base=np.asarray(base),
        src=np.asarray(src, dtype=int),
        scale=scale[cc_arr],
        colscale=scale,
        shape=(r + 1, len(cols)),
        flat=np.asarray(rows, dtype=np.int64) * len(cols) + cc_arr,
        exps=tuple(cols),
    )
