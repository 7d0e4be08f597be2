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

import functools
import itertools
from math import comb

import numpy as np
from scipy import sparse

from .basis import Exponent, MonomialBasis

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
    """Moment maps under ``x = mu + s * z`` over a downward-closed exponent list ``E``.

    ``to_z`` / ``to_x`` return the (sparse, triangular) matrices; ``z_apply`` /
    ``x_apply`` apply them to a vector without building a matrix, optionally for a
    subset of output rows only (:meth:`rows`, compiled once per subset).
    """

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
        self.rows, self.cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        self.binom = np.asarray(binom)
        n = len(self.E[0]) if self.E else 0
        self.n = n
        self._diff_e = np.asarray(diff, dtype=np.int64).reshape(-1, n)  # (K, n)
        self._alpha = np.asarray(self.E, dtype=np.int64).reshape(-1, n)  # (|E|, n)
        self.maxdeg = int(self._alpha.max()) if self._alpha.size else 0
        self.shape = (len(self.E), len(self.E))
        self._full = _AffineEntries(self, np.arange(len(self.rows)), self.rows, len(self.E))
        self._csr = sparse.csr_matrix(
            (np.ones(len(self.rows)), (self.rows, self.cols)), shape=self.shape)
        # the CSR data order of the (row, col) entries (no duplicates: E has no repeats)
        self._order = np.lexsort((self.cols, self.rows))
        self._subsets: dict = {}

    def _table(self, v: np.ndarray) -> np.ndarray:
        """``v_i^k`` for ``k = 0..maxdeg``, flattened (n * (maxdeg + 1),) plus a 1 slot."""
        v = np.asarray(v, dtype=float)
        m1 = self.maxdeg + 1
        out = np.empty(len(v) * m1 + 1)
        out[-1] = 1.0
        t = out[:-1].reshape(len(v), m1)
        t[:, 0] = 1.0
        for k in range(1, m1):
            t[:, k] = t[:, k - 1] * v
        return out

    def _matrix(self, vals: np.ndarray) -> sparse.csr_matrix:
        out = self._csr.copy()
        out.data = vals[self._order]
        return out

    def to_z(self, mu: np.ndarray, s: np.ndarray) -> sparse.csr_matrix:
        """``m_z = T m_x``: ``E[z^a] = sum_b C(a, b) (-mu)^(a-b) E[x^b] / s^a``."""
        return self._matrix(self._full.vals_z(mu, s))

    def to_x(self, mu: np.ndarray, s: np.ndarray) -> sparse.csr_matrix:
        """``m_x = T m_z``: ``E[x^a] = sum_b C(a, b) mu^(a-b) s^b E[z^b]``."""
        return self._matrix(self._full.vals_x(mu, s))

    def rows_subset(self, rows) -> _AffineEntries:
        """The maps restricted to output rows ``rows`` (positions in ``E``), cached."""
        key = tuple(int(r) for r in rows)
        if key not in self._subsets:
            pos = np.full(len(self.E), -1, dtype=np.int64)
            pos[np.asarray(key, dtype=np.int64)] = np.arange(len(key))
            sel = np.flatnonzero(pos[self.rows] >= 0)
            self._subsets[key] = _AffineEntries(self, sel, pos[self.rows[sel]], len(key))
        return self._subsets[key]

    def z_apply(self, mu, s, v: np.ndarray) -> np.ndarray:
        """``to_z(mu, s) @ v`` without forming the matrix."""
        return self._full.z_apply(mu, s, v)

    def x_apply(self, mu, s, v: np.ndarray) -> np.ndarray:
        """``to_x(mu, s) @ v`` without forming the matrix."""
        return self._full.x_apply(mu, s, v)


class _AffineEntries:
    """A subset of the entries of an :class:`_Affine` map (rows renumbered to ``out``)."""

    def __init__(self, aff: _Affine, sel: np.ndarray, out: np.ndarray, size: int) -> None:
        self.aff = aff
        self.out = np.asarray(out, dtype=np.int64)
        self.cols = aff.cols[sel]
        self.binom = aff.binom[sel]
        self.size = int(size)
        m1 = aff.maxdeg + 1
        one = aff.n * m1  # the 1 slot of the flattened power table
        # power-table gathers: only the coordinates with a nonzero exponent enter a product
        self._diff = _power_index(aff._diff_e[sel], m1, one)
        self._arow = _power_index(aff._alpha[aff.rows[sel]], m1, one)
        self._acol = _power_index(aff._alpha[self.cols], m1, one)

    def vals_z(self, mu, s) -> np.ndarray:
        vals = self.binom * _prod_gather(self.aff._table(-np.asarray(mu, float)), self._diff)
        if not np.all(np.asarray(s) == 1.0):  # unit scales (central moments): s^a = 1
            vals /= _prod_gather(self.aff._table(s), self._arow)
        return vals

    def vals_x(self, mu, s) -> np.ndarray:
        vals = self.binom * _prod_gather(self.aff._table(np.asarray(mu, float)), self._diff)
        if not np.all(np.asarray(s) == 1.0):
            vals *= _prod_gather(self.aff._table(s), self._acol)
        return vals

    def z_apply(self, mu, s, v: np.ndarray) -> np.ndarray:
        """Rows of ``to_z(mu, s) @ v``."""
        return np.bincount(self.out, weights=self.vals_z(mu, s) * v[self.cols],
                           minlength=self.size)

    def x_apply(self, mu, s, v: np.ndarray) -> np.ndarray:
        """Rows of ``to_x(mu, s) @ v``."""
        return np.bincount(self.out, weights=self.vals_x(mu, s) * v[self.cols],
                           minlength=self.size)


def _prod_gather(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``prod_j table[idx[:, j]]`` (a column loop: ``idx`` has a few columns, many rows)."""
    out = table[idx[:, 0]]
    for j in range(1, idx.shape[1]):
        out *= table[idx[:, j]]
    return out


def _power_index(e: np.ndarray, m1: int, one: int) -> np.ndarray:
    """Indices (K, w) into a flattened power table: ``prod_i v_i^(e_ri)`` per row ``r``.

    Only the coordinates with a nonzero exponent enter (ascending); shorter rows are
    padded with the table's 1 slot.
    """
    K = len(e)
    nz = e > 0
    w = max(1, int(nz.sum(axis=1).max())) if K else 1
    out = np.full((K, w), one, dtype=np.int64)
    r, i = np.nonzero(e)
    slot = np.cumsum(nz, axis=1)[r, i] - 1  # position of (r, i) among row r's nonzeros
    out[r, slot] = i * m1 + e[r, i]
    return out


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
        from .skf import ClosureError, _ClosurePlan, _Isserlis

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
                    isserlis=_Isserlis(plan.unknown, len(blk)),
                    unknown_glob=[
                        tuple(u[blk.index(i)] if i in blk else 0 for i in range(n))
                        for u in plan.unknown
                    ],
                )
            )
        # array layout of a solve: full = (known moments, block 0's unknowns, block 1's, ...)
        # (later entries win, as in a dict filled in that order)
        pos = {a: j for j, a in enumerate(self.known)}
        off = len(self.known)
        for info in self.plans:
            if info is not None:
                for j, u in enumerate(info["unknown_glob"]):
                    pos[u] = off + j
                off += len(info["unknown_glob"])
        self.c_idx = np.array([[self.kidx[tuple(int(k == i) + int(k == j) for k in range(n))]
                                for j in range(n)] for i in range(n)], dtype=np.int64)
        self.cg = None
        mpos = {a: j for j, a in enumerate(self.multi)}
        if self.multi:
            self.cg = _cond_gauss_plan((tuple(tuple(b) for b in self.blocks), tuple(self.multi),
                                        tuple(self.primary[a] for a in self.multi), int(n)))
            self.cg_vidx = np.array([pos[e] for e in self.cg.vneed], dtype=np.int64)
        is_multi = np.array([a in mpos for a in self.wanted], dtype=bool)
        self.w_single = np.flatnonzero(~is_multi)
        self.w_single_src = np.array([pos[a] for a in self.wanted if a not in mpos],
                                     dtype=np.int64)
        self.w_multi = np.flatnonzero(is_multi)
        self.w_multi_src = np.array([mpos[a] for a in self.wanted if a in mpos], dtype=np.int64)

    def solve(self, theta_z: np.ndarray, mz: np.ndarray, *, ridge: float) -> np.ndarray:
        """Standardised moments of ``wanted`` (len(wanted),)."""
        from .skf import ClosureError

        C = mz[self.c_idx]  # (n, n) second standardised moments
        parts = [np.asarray(mz, dtype=float)]
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
                u0 = info["isserlis"](Cb) / sc  # Isserlis moments of N(0, C_bb)
                Us, sv, Vt = np.linalg.svd(Bs, full_matrices=False)
                keep = sv > ridge * sv[0]
                res = rhs - Bs @ u0
                sol = u0 + Vt[keep].T @ ((Us[:, keep].T @ res) / sv[keep])
            else:
                sol, _, rank, _ = np.linalg.lstsq(Bs, rhs, rcond=None)
                if rank < len(plan.wanted):
                    raise ClosureError("block Stein closure is rank deficient")
            parts.append(sol * sc)
        full = np.concatenate(parts)
        out = np.empty(len(self.wanted))
        out[self.w_single] = full[self.w_single_src]
        if self.cg is not None:  # conditional-Gaussian closure of multi-block moments
            out[self.w_multi] = self.cg.evaluate(full[self.cg_vidx], C)[self.w_multi_src]
        return out


def conditional_gaussian(values: dict, C: np.ndarray, blocks, multi, primary, n: int) -> None:
    """Fill ``values[a]`` for moments ``a`` spanning several blocks (centred coordinates).

    The primary block ``p = primary[a]`` is kept as is and the other coordinates are
    ``z_o = K z_p + eps``, ``K = C_op C_pp^-1``, ``eps ~ N(0, C_oo - K C_po)``
    independent of ``z_p`` (exact for a Gaussian). ``values`` holds centred moments
    keyed by full exponents; ``C`` is the covariance in the same coordinates. The
    expansion of each moment into products of ``K``, ``Se`` and primary-block moments
    is compiled once per moment set (:class:`_CondGaussPlan`); a call is then a few
    small solves and one vectorised gather-product-sum.
    """
    if not multi:
        return
    key = (tuple(tuple(b) for b in blocks), tuple(multi),
           tuple(primary[a] for a in multi), int(n))
    plan = _cond_gauss_plan(key)
    out = plan(values, C)
    for a, v in zip(multi, out, strict=True):
        values[a] = float(v)


@functools.lru_cache(maxsize=32)
def _cond_gauss_plan(key):
    blocks, multi, prim, n = key
    return _CondGaussPlan([list(b) for b in blocks], list(multi), prim, n)


class _CondGaussPlan:
    """Compiled conditional-Gaussian expansion (see :func:`conditional_gaussian`)."""

    def __init__(self, blocks, multi, prim, n: int) -> None:
        # factor pool: per primary block p, K_p = C_{., p} C_pp^-1 (n, |p|) and the
        # conditional covariance S_p = C - K_p C_{p, .} (n, n), both for all coordinates;
        # a moment's factors index the rows/columns of its other coordinates
        self.offsets = {}
        pool_size = 0
        for p in sorted(set(prim)):
            self.offsets[p] = pool_size
            pool_size += n * len(blocks[p]) + n * n
        terms = []  # (row, coef, factor indices, value exponent)
        vneed: dict = {}
        for row, (a, p) in enumerate(zip(multi, prim, strict=True)):
            blk = blocks[p]
            oth = tuple(i for i in range(n) if a[i] and i not in blk)
            no, nb = len(oth), len(blk)
            offK = self.offsets[p]
            offS = offK + n * nb
            memo: dict = {}

            def F(beta, gamma, memo=memo, no=no, nb=nb, offK=offK, offS=offS, oth=oth):
                # E[z_o^beta z_p^gamma] as [(coef, factors, gamma')]
                k2 = (beta, gamma)
                if k2 in memo:
                    return memo[k2]
                if sum(beta) == 0:
                    res = [(1.0, (), gamma)]
                else:
                    o = next(j for j in range(no) if beta[j])
                    bp = list(beta)
                    bp[o] -= 1
                    bp = tuple(bp)
                    res = []
                    for c in range(nb):
                        gg = list(gamma)
                        gg[c] += 1
                        f = offK + oth[o] * nb + c  # K[o, c]
                        res += [(cf, (f, *fs), gm) for cf, fs, gm in F(bp, tuple(gg))]
                    for o2 in range(no):
                        if bp[o2]:
                            b2 = list(bp)
                            b2[o2] -= 1
                            f = offS + oth[o] * n + oth[o2]  # Se[o, o2]
                            res += [(cf * bp[o2], (f, *fs), gm)
                                    for cf, fs, gm in F(tuple(b2), gamma)]
                memo[k2] = res
                return res

            for cf, fs, gm in F(tuple(a[i] for i in oth), tuple(a[i] for i in blk)):
                e = [0] * n
                for j, i in enumerate(blk):
                    e[i] = gm[j]
                e = tuple(e)
                if e not in vneed:
                    vneed[e] = len(vneed)
                terms.append((row, cf, fs, vneed[e]))
        self.blocks = blocks
        self.pool_size = pool_size
        width = max(1, max(len(fs) for _, _, fs, _ in terms))
        fac = np.full((len(terms), width), pool_size, dtype=np.int64)  # pad: the 1.0 slot
        for t, (_, _, fs, _) in enumerate(terms):
            fac[t, : len(fs)] = fs
        self.fac = fac
        self.rows = np.array([t[0] for t in terms], dtype=np.int64)
        self.coef = np.array([t[1] for t in terms])
        self.vidx = np.array([t[3] for t in terms], dtype=np.int64)
        self.vneed = tuple(vneed)
        self.num = len(multi)

    def __call__(self, values: dict, C: np.ndarray) -> np.ndarray:
        v = np.array([values[e] for e in self.vneed])
        return self.evaluate(v, C)

    def evaluate(self, v: np.ndarray, C: np.ndarray) -> np.ndarray:
        """The multi-block moments from the needed primary-block moments ``v`` (vneed)."""
        pool = np.empty(self.pool_size + 1)
        pool[-1] = 1.0
        n = C.shape[0]
        for p, off in self.offsets.items():
            blk = self.blocks[p]
            Cp = C[:, blk]  # (n, |p|)
            K = np.linalg.solve(C[np.ix_(blk, blk)], Cp.T).T  # (n, |p|): E[z | z_p] = K z_p
            Se = C - K @ Cp.T  # (n, n)
            pool[off: off + K.size] = K.ravel()
            pool[off + K.size: off + K.size + n * n] = Se.ravel()
        res = self.coef * _prod_gather(pool, self.fac) * v[self.vidx]
        return np.bincount(self.rows, weights=res, minlength=self.num)


class Standardiser:
    """Raw <-> standardised moments and natural parameters over ``S`` plus ``extra``."""

    def __init__(self, basis: MonomialBasis, S, extra=()) -> None:
        self.n = basis.dim
        self.E = tuple(S) + tuple(extra)
        self.nS = len(S)
        self.aff = _Affine(self.E)
        idx = {a: j for j, a in enumerate(self.E)}
        self.bidx = np.array([idx[a] for a in basis.exponents])
        # T_z restricted to the basis rows and columns (theta_to_x)
        self._basis_entries = self.aff.rows_subset(self.bidx)
        colpos = np.full(len(self.E), -1, dtype=np.int64)
        colpos[self.bidx] = np.arange(len(self.bidx))
        self._bcol = colpos[self._basis_entries.cols]
        self._bkeep = self._bcol >= 0
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
        """Raw natural parameters: ``T_z[basis, basis]^T theta_z`` (the affine change)."""
        sub = self._basis_entries
        vals = sub.vals_z(mu, s)[self._bkeep]
        return np.bincount(self._bcol[self._bkeep], weights=vals * theta_z[sub.out[self._bkeep]],
                           minlength=len(self.bidx))
