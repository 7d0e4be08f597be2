"""Standardised, block-wise Stein closure with a Gaussian ridge (the filter's closure).

The filter's moment vectors are raw moments ``E[x^alpha]``. Solving Stein systems on
raw moments is badly conditioned as soon as a belief is narrow or far from the origin,
and the equations that fix the top moments divide by the top-degree natural
parameters, which are near zero for a near-Gaussian belief. This module therefore:

1. standardises ``z = (x - mu) / s`` (mean and standard deviation from the moments;
   moments and natural parameters map exactly between ``x`` and ``z`` through the
   triangular binomial maps of :class:`_Affine`);
2. splits the coordinates into blocks, the connected components of the coordinates
   linked by basis monomials of degree >= 3 (one block for :func:`full_basis`, one
   per oscillator for :func:`oscillator_basis`);
3. recovers single-block moments from the Stein equations of that block, where the
   cross-block quadratic natural parameters ``theta_ik z_i z_k`` enter through the
   linear regression ``E[z_k g(z_b)] = K_k E[z_b g(z_b)]``,
   ``K = C_{k,b} C_{bb}^{-1}`` (exact for a Gaussian and whenever ``z_k`` is linear in
   the block plus independent noise);
4. solves each block system by least squares with a ridge of weight ``ridge`` toward
   the Gaussian (Isserlis) moments of ``N(0, C_bb)``: directions that the Stein
   equations fix firmly are unaffected, directions they barely fix (top-degree
   coefficients ~ 0) fall back to the Gaussian closure instead of being amplified;
5. closes moments that span several blocks by a conditional-Gaussian rule: the block
   with the largest degree is kept non-Gaussian and the other coordinates are
   ``z_o = K z_p + eps``, ``eps ~ N(0, C_oo - K C_po)`` independent of it. This
   reproduces Isserlis' moments exactly for a Gaussian belief.
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
from scipy import sparse

from .basis import Exponent, MonomialBasis, gaussian_moments

Z_TOL = 1e-12


def _down(a: Exponent):
    return itertools.product(*[range(k + 1) for k in a])


def downward_closure(exps) -> set[Exponent]:
    out: set[Exponent] = set()
    for a in exps:
        if a not in out:
            out.update(_down(a))
    return out


class _Affine:
    """Moment maps under ``x = mu + s * z`` over a downward-closed exponent list ``E``."""

    def __init__(self, E) -> None:
        self.E = tuple(E)
        idx = {a: j for j, a in enumerate(self.E)}
        rows, cols, binom, diff = [], [], [], []
        for r, a in enumerate(self.E):
            for b in _down(a):
                rows.append(r)
                cols.append(idx[b])  # KeyError: E not downward closed
                binom.append(float(np.prod([comb(x, y) for x, y in zip(a, b, strict=True)])))
                diff.append(tuple(x - y for x, y in zip(a, b, strict=True)))
        self.rows, self.cols = np.asarray(rows), np.asarray(cols)
        self.binom = np.asarray(binom)
        self.diff = np.asarray(diff, dtype=float)  # (K, n)
        self.alpha = np.asarray(self.E, dtype=float)  # (|E|, n)
        self.shape = (len(self.E), len(self.E))

    def to_z(self, mu: np.ndarray, s: np.ndarray) -> sparse.csr_matrix:
        """``m_z = T m_x``: ``E[z^a] = sum_b C(a, b) (-mu)^(a-b) E[x^b] / s^a``."""
        vals = self.binom * np.prod((-mu) ** self.diff, axis=1)
        vals /= np.prod(s ** self.alpha[self.rows], axis=1)
        return sparse.csr_matrix((vals, (self.rows, self.cols)), shape=self.shape)

    def to_x(self, mu: np.ndarray, s: np.ndarray) -> sparse.csr_matrix:
        """``m_x = T m_z``: ``E[x^a] = sum_b C(a, b) mu^(a-b) s^b E[z^b]``."""
        vals = self.binom * np.prod(mu**self.diff, axis=1)
        vals *= np.prod(s ** self.alpha[self.cols], axis=1)
        return sparse.csr_matrix((vals, (self.rows, self.cols)), shape=self.shape)


def coordinate_blocks(basis: MonomialBasis) -> list[list[int]]:
    """Connected components of coordinates linked by basis monomials of degree >= 3."""
    n = basis.dim
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a in basis.exponents:
        if sum(a) >= 3:
            nz = [i for i in range(n) if a[i]]
            for j in nz[1:]:
                parent[find(j)] = find(nz[0])
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values())


def _std_normal_scale(a: Exponent) -> float:
    """sqrt(E[z^(2a)]) for z ~ N(0, I): the natural size of a standardised moment."""
    v = 1.0
    for k in a:
        for j in range(1, 2 * k, 2):
            v *= j
    return float(np.sqrt(v))


class BlockClosure:
    """Standardised moments of ``wanted`` from known moments ``S`` and ``theta_z``.

    Everything here is in standardised coordinates ``z``. ``known`` must contain the
    constant and every second moment.
    """

    def __init__(self, basis: MonomialBasis, known, wanted) -> None:
        from .skf import ClosureError, _ClosurePlan

        n = basis.dim
        self.n = n
        self.known = tuple(known)
        self.kidx = {a: j for j, a in enumerate(self.known)}
        self.wanted = tuple(wanted)
        known_set = set(self.known)
        self.blocks = coordinate_blocks(basis)
        block_of = {i: b for b, blk in enumerate(self.blocks) for i in blk}
        self.block_of = block_of

        def touched(a):
            return sorted({block_of[i] for i in range(n) if a[i]})

        single: list[set] = [set() for _ in self.blocks]
        self.multi = []
        for a in self.wanted:
            bs = touched(a)
            if len(bs) == 1:
                single[bs[0]].add(a)
            else:
                self.multi.append(a)
        # primary block per multi-block moment and the block moments its rule reads
        self.primary = {}
        for a in self.multi:
            bs = touched(a)
            degs = [sum(a[i] for i in self.blocks[b]) for b in bs]
            p = bs[int(np.argmax(degs))]
            self.primary[a] = p
            blk = self.blocks[p]
            base = [a[i] for i in blk]
            extra = sum(a) - sum(base)
            for d in range(extra + 1):
                for c in itertools.combinations_with_replacement(range(len(blk)), d):
                    g = list(base)
                    for j in c:
                        g[j] += 1
                    e = [0] * n
                    for j, i in enumerate(blk):
                        e[i] = g[j]
                    e = tuple(e)
                    if e not in known_set:
                        single[p].add(e)
        # per-block Stein plans in local coordinates
        self.plans = []
        for b, blk in enumerate(self.blocks):
            if not single[b]:
                self.plans.append(None)
                continue

            def loc(a, blk=blk):
                return tuple(a[i] for i in blk)

            local_exps = [loc(a) for a in basis.exponents if touched(a) == [b]]
            lb = MonomialBasis(local_exps)
            lknown = [a for a in self.known if all(a[i] == 0 for i in range(n) if i not in blk)]
            lwanted = sorted(single[b], key=lambda a: (sum(a), a))
            try:
                plan = _ClosurePlan(lb, [loc(a) for a in lknown], [loc(a) for a in lwanted])
            except ClosureError:
                raise
            # cross quadratic terms theta_ik z_i z_k with i in the block, k outside
            bpos = {i: j for j, i in enumerate(blk)}
            mloc = [m for m, a in enumerate(basis.exponents) if touched(a) == [b]]
            cross = []
            for m, a in enumerate(basis.exponents):
                nz = [i for i in range(n) if a[i]]
                if sum(a) == 2 and len(nz) == 2 and len(touched(a)) == 2:
                    i, k = (nz[0], nz[1]) if nz[0] in bpos else (nz[1], nz[0])
                    if i in bpos:
                        cross.append((m, bpos[i], k))
            # entries (row, col, i_local, c_local): equation (g, i) gains W[i, c] E[z_c g]
            extra = []
            for r, (g, i) in enumerate(plan.equations):
                for c in range(len(blk)):
                    e = list(g)
                    e[c] += 1
                    extra.append((r, plan.colindex[tuple(e)], i, c))
            extra = np.asarray(extra, dtype=int).reshape(-1, 4)
            self.plans.append(
                dict(
                    plan=plan,
                    blk=blk,
                    mloc=np.asarray(mloc, dtype=int),
                    cross=cross,
                    extra=extra,
                    kglob=np.asarray([self.kidx[a] for a in lknown], dtype=int),
                    wanted=lwanted,
                    uscale=np.array([_std_normal_scale(plan_u) for plan_u in plan.unknown]),
                    unknown_glob=[
                        tuple(u[blk.index(i)] if i in blk else 0 for i in range(n))
                        for u in plan.unknown
                    ],
                )
            )

    def solve(self, theta_z: np.ndarray, mz: np.ndarray, *, ridge: float) -> np.ndarray:
        """Standardised moments of ``wanted`` (len(wanted),)."""
        from .skf import ClosureError

        n = self.n
        C = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                e = [0] * n
                e[i] += 1
                e[j] += 1
                C[i, j] = mz[self.kidx[tuple(e)]]
        values: dict[Exponent, float] = {a: float(v) for a, v in zip(self.known, mz, strict=True)}
        for info in self.plans:
            if info is None:
                continue
            plan, blk = info["plan"], info["blk"]
            Bfull = plan.system.matrix(theta_z[info["mloc"]])
            if info["cross"]:
                others = sorted({k for _, _, k in info["cross"]})
                Cbb = C[np.ix_(blk, blk)]
                K = np.linalg.solve(Cbb, C[np.ix_(blk, others)]).T  # (|others|, |b|)
                W = np.zeros((len(blk), len(blk)))
                for m, i, k in info["cross"]:
                    W[i] += theta_z[m] * K[others.index(k)]
                r, col, i, c = info["extra"].T
                np.add.at(Bfull, (r, col), W[i, c])
            B = Bfull[:, plan.ucols]
            rhs = -(Bfull[:, plan.kcols] @ mz[info["kglob"]])
            sc = info["uscale"]
            Bs = B * sc  # unknowns in units of their N(0, 1) size
            rn = np.linalg.norm(Bs, axis=1)
            rn[rn == 0] = 1.0
            Bs, rhs = Bs / rn[:, None], rhs / rn
            if ridge > 0:
                # truncated SVD around the Gaussian closure: singular directions below
                # ridge * s_max keep their Isserlis value instead of being amplified
                Cb = C[np.ix_(blk, blk)]
                ref = gaussian_moments(np.zeros(len(blk)), Cb, plan.unknown)
                u0 = np.array([ref[u] for u in plan.unknown]) / sc
                Us, sv, Vt = np.linalg.svd(Bs, full_matrices=False)
                keep = sv > ridge * sv[0]
                res = rhs - Bs @ u0
                sol = u0 + Vt[keep].T @ ((Us[:, keep].T @ res) / sv[keep])
            else:
                sol, _, rank, _ = np.linalg.lstsq(Bs, rhs, rcond=None)
                if rank < len(plan.wanted):
                    raise ClosureError("block Stein closure is rank deficient")
            sol = sol * sc
            for u, v in zip(info["unknown_glob"], sol, strict=True):
                values[u] = float(v)
        if self.multi:
            self._multi(values, C)
        return np.array([values[a] for a in self.wanted])

    def _multi(self, values: dict, C: np.ndarray) -> None:
        """Conditional-Gaussian closure of moments spanning several blocks."""
        conditional_gaussian(values, C, self.blocks, self.multi, self.primary, self.n)


def conditional_gaussian(values: dict, C: np.ndarray, blocks, multi, primary, n: int) -> None:
    """Fill ``values[a]`` for moments ``a`` spanning several blocks (centred coordinates).

    The primary block ``p = primary[a]`` is kept as is and the other coordinates are
    ``z_o = K z_p + eps``, ``K = C_op C_pp^-1``, ``eps ~ N(0, C_oo - K C_po)``
    independent of ``z_p`` (exact for a Gaussian). ``values`` holds centred moments
    keyed by full exponents; ``C`` is the covariance in the same coordinates.
    """
    cache: dict = {}
    for a in multi:
        p = primary[a]
        blk = blocks[p]
        oth = [i for i in range(n) if a[i] and i not in blk]
        key = (p, tuple(oth))
        if key not in cache:
            Cpp = C[np.ix_(blk, blk)]
            Cop = C[np.ix_(oth, blk)]
            K = np.linalg.solve(Cpp, Cop.T).T  # (|o|, |p|)
            Se = C[np.ix_(oth, oth)] - K @ Cop.T
            cache[key] = (K, Se, {})
        K, Se, memo = cache[key]

        def F(beta, gamma, K=K, Se=Se, memo=memo, blk=blk):
            # E[z_o^beta z_p^gamma] with z_o = K z_p + eps
            key2 = (beta, gamma)
            if key2 in memo:
                return memo[key2]
            if sum(beta) == 0:
                e = [0] * n
                for j, i in enumerate(blk):
                    e[i] = gamma[j]
                v = values[tuple(e)]
            else:
                o = next(j for j in range(len(beta)) if beta[j])
                bp = list(beta)
                bp[o] -= 1
                bp = tuple(bp)
                v = 0.0
                for c in range(len(blk)):
                    if K[o, c] != 0.0:
                        g = list(gamma)
                        g[c] += 1
                        v += K[o, c] * F(bp, tuple(g))
                for o2 in range(len(bp)):
                    if bp[o2] and Se[o, o2] != 0.0:
                        b2 = list(bp)
                        b2[o2] -= 1
                        v += Se[o, o2] * bp[o2] * F(tuple(b2), gamma)
            memo[key2] = v
            return v

        values[a] = F(tuple(a[i] for i in oth), tuple(a[i] for i in blk))


class Standardiser:
    """Raw <-> standardised moments and natural parameters over ``S`` plus ``extra``."""

    def __init__(self, basis: MonomialBasis, S, extra=()) -> None:
        self.n = basis.dim
        self.E = tuple(S) + tuple(extra)
        self.nS = len(S)
        self.aff = _Affine(self.E)
        idx = {a: j for j, a in enumerate(self.E)}
        self.bidx = np.array([idx[a] for a in basis.exponents])
        n = self.n
        self.mu_idx = [idx[tuple(int(k == i) for k in range(n))] for i in range(n)]
        self.m2_idx = [idx[tuple(2 * int(k == i) for k in range(n))] for i in range(n)]

    def moments(self, mS: np.ndarray):
        """``(mu, s, T_z)`` for raw moments ``mS`` over ``S``."""
        mu = mS[self.mu_idx]
        var = mS[self.m2_idx] - mu**2
        if not np.all(var > 0) or not np.all(np.isfinite(var)):
            return None
        s = np.sqrt(var)
        return mu, s

    def theta_to_x(self, theta_z, mu, s):
        Tz = self.aff.to_z(mu, s)[self.bidx][:, self.bidx]
        return Tz.T @ theta_z
