"""Fitting the random-feature student and sweeping it over parameters and data.

The readout is the min-norm least-squares solution (ridge -> 0+). For sparse inputs only the
``s`` coordinates seen in training enter the features, ``Phi = X_s F_s'``; when ``s`` is
below ``min(T, P)`` we solve the equivalent ``s``-dimensional problem exactly
(``F_s = Q R``, ``theta = Q z``, ``z = argmin-norm ||X_s R' z - y||``), which is what makes
the sparse grids cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from .model import (
    SparseFeatureModel,
    _check_activation,
    _check_array,
    _check_int,
    _check_model,
    _check_rng,
    activation_probs,
    population_loss,
    random_features,
    sample_inputs,
    sample_teacher,
)
from .theory import expected_unseen_mass


def _check_grid(name: str, grid) -> np.ndarray:
    arr = np.asarray(grid)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence, got shape {arr.shape}")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if np.any(arr < 1):
        raise ValueError(f"{name} must hold values >= 1, got {arr.tolist()}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {arr.tolist()}")
    return arr.astype(int)


def _check_ridge(ridge) -> float:
    ridge = float(ridge)
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    return ridge


def _lstsq(a: np.ndarray, y: np.ndarray, ridge: float) -> tuple[np.ndarray, int]:
    """Min-norm (ridge = 0) or ridge solution of ``min ||a x - y||^2 / T + ridge ||x||^2``."""
    if ridge == 0.0:
        x, _, rank, _ = np.linalg.lstsq(a, y, rcond=None)
        return x, int(rank)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    shrink = s / (s**2 + a.shape[0] * ridge)  # ridge in the (1/T) normalisation
    rank = int(np.sum(s > s[0] * max(a.shape) * np.finfo(float).eps)) if s.size else 0
    return vt.T @ (shrink * (u.T @ y)), rank


def min_norm_readout(features, targets, *, ridge: float = 0.0) -> np.ndarray:
    """The min-norm least-squares (or ridge) readout ``theta``.

    Parameters
    ----------
    features : array_like, shape (T, P)
        ``Phi``.
    targets : array_like, shape (T,)
        ``y``.
    ridge : float
        ``lambda >= 0`` in ``||Phi theta - y||^2 / T + lambda ||theta||^2``; 0 gives the
        min-norm solution (``Phi^+ y``).

    Returns
    -------
    theta : ndarray, shape (P,)

    Examples
    --------
    >>> np.round(min_norm_readout([[1.0, 1.0]], [2.0]), 12).tolist()
    [1.0, 1.0]
    """
    phi = _check_array("features", features, ndim=2)
    y = _check_array("targets", targets, ndim=1)
    if phi.shape[0] != y.shape[0]:
        raise ValueError(f"features {phi.shape} and targets {y.shape} disagree on T")
    return _lstsq(phi, y, _check_ridge(ridge))[0]


def _solve_linear(xs, fs, y, ridge):
    """Readout for linear features restricted to the seen coordinates.

    xs (T, s), fs (P, s), y (T,). Returns theta (P,), rank of Phi, train MSE.
    """
    t, s = xs.shape
    p = fs.shape[0]
    if s < min(t, p):
        q, r = np.linalg.qr(fs)  # (P, s), (s, s): F_s = Q R
        m = xs @ r.T  # (T, s): Phi = M Q'
        z, rank = _lstsq(m, y, ridge)  # ||theta|| = ||z||
        theta = q @ z  # (P,)
        resid = m @ z - y
    else:
        phi = xs @ fs.T  # (T, P)
        theta, rank = _lstsq(phi, y, ridge)
        resid = phi @ theta - y
    return theta, rank, float(np.mean(resid**2))


def _data_rank(xs: np.ndarray) -> int:
    """Numerical rank of the training inputs restricted to the seen coordinates (T, s)."""
    t, s = xs.shape
    if min(t, s) == 0:
        return 0
    if min(t, s) <= 256:
        return int(np.linalg.matrix_rank(xs))
    small = xs @ xs.T if t <= s else xs.T @ xs  # Gram of the smaller side
    ev = np.linalg.eigvalsh(small)
    return int(np.sum(ev > ev[-1] * max(t, s) * np.finfo(float).eps))


#: Cholesky factors whose squared diagonal ratio falls below this are treated as singular.
CHOL_RATIO = 1e-11


def _well_conditioned(chol: np.ndarray) -> bool:
    d = np.abs(np.diag(chol))
    return bool(d.size and d.min() > 0 and (d.min() / d.max()) ** 2 > CHOL_RATIO)


def _cholesky_or_none(gram: np.ndarray):
    try:
        chol = np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        return None
    return chol if _well_conditioned(chol) else None


#: Away from the interpolation threshold (P <= T/2 or P >= 2T) full-rank designs are solved
#: through Cholesky factors of the Gram matrix; near it, by SVD least squares.
GRAM_MARGIN = 2.0


def _solve_full_rank(phi_all, y, p_grid, ridge):
    """Readouts for every nested P when Phi (T, Pmax) has full rank min(T, P) for each P.

    Yields (i, theta, rank, train_mse). Underparameterised P share one Cholesky factor of
    Phi'Phi (leading blocks factor leading blocks); overparameterised P use
    theta = Phi'(Phi Phi')^-1 y with Phi Phi' accumulated over nested P.
    """
    t = phi_all.shape[0]
    under = [i for i, p in enumerate(p_grid) if p * GRAM_MARGIN <= t]
    over = [i for i, p in enumerate(p_grid) if p >= GRAM_MARGIN * t]
    near = [i for i in range(len(p_grid)) if i not in under and i not in over]
    if ridge > 0:  # ridge: plain SVD everywhere
        under, over, near = [], [], list(range(len(p_grid)))
    if under:
        pu = int(p_grid[under[-1]])
        phi_u = phi_all[:, :pu]  # (T, Pu)
        chol = _cholesky_or_none(phi_u.T @ phi_u)  # (Pu, Pu) lower
        if chol is None:
            near = under + near
        else:
            z = solve_triangular(chol, phi_u.T @ y, lower=True)  # L^-1 Phi'y
            for i in under:
                p = int(p_grid[i])
                if not _well_conditioned(chol[:p, :p]):
                    near.append(i)
                    continue
                theta = solve_triangular(chol[:p, :p].T, z[:p], lower=False)  # normal eqs
                yield i, theta, p, float(np.mean((phi_all[:, :p] @ theta - y) ** 2))
    if over:
        gram = np.zeros((t, t))
        done = 0
        for i in over:
            p = int(p_grid[i])
            block = phi_all[:, done:p]
            gram += block @ block.T  # Phi_P Phi_P' accumulated over nested P
            done = p
            chol = _cholesky_or_none(gram)
            if chol is None:  # rank-deficient design: fall back to SVD least squares
                near.append(i)
                continue
            a = cho_solve((chol, True), y)  # (Phi Phi')^-1 y
            theta = phi_all[:, :p].T @ a  # min-norm interpolant
            yield i, theta, t, float(np.mean((phi_all[:, :p] @ theta - y) ** 2))
    for i in near:
        phi = phi_all[:, : int(p_grid[i])]
        theta, rank = _lstsq(phi, y, ridge)
        yield i, theta, rank, float(np.mean((phi @ theta - y) ** 2))


@dataclass(frozen=True)
class FitResult:
    """One fitted student.

    Attributes
    ----------
    test_loss : float
        Population loss (exact for linear features, Monte Carlo for ReLU).
    train_loss : float
        Mean squared training residual.
    rank : int
        Rank of the training feature matrix ``Phi`` (T, P).
    data_rank : int
        ``r_T = rank(X_train)``: the interpolation threshold in ``P``.
    seen_coords : int
        Coordinates active at least once in training.
    unseen_mass : float
        ``sum_{i unseen} w_i^2 p_i``: loss no student can remove (on average over signs).
    """

    test_loss: float
    train_loss: float
    rank: int
    data_rank: int
    seen_coords: int
    unseen_mass: float


@dataclass(frozen=True)
class ScalingGrid:
    """Losses over a grid of parameters ``P`` and samples ``T`` (``S`` seeds).

    Attributes
    ----------
    num_params : ndarray, shape (nP,)
    num_samples : ndarray, shape (nT,)
    loss : ndarray, shape (S, nP, nT)
        Test (population) loss.
    train_loss : ndarray, shape (S, nP, nT)
    rank : ndarray, shape (S, nP, nT)
        Rank of ``Phi``.
    data_rank : ndarray, shape (S, nT)
        ``r_T = rank(X_train)``.
    seen_coords : ndarray, shape (S, nT)
    unseen_mass : ndarray, shape (S, nT)
    """

    num_params: np.ndarray
    num_samples: np.ndarray
    loss: np.ndarray
    train_loss: np.ndarray
    rank: np.ndarray
    data_rank: np.ndarray
    seen_coords: np.ndarray
    unseen_mass: np.ndarray

    @property
    def mean_loss(self) -> np.ndarray:
        """Loss averaged over seeds, shape (nP, nT)."""
        return self.loss.mean(axis=0)


def _one_seed(model, p_grid, t_grid, activation, ridge, num_test, rng):
    """All (P, T) fits for one teacher, one nested feature map and one nested data set."""
    probs = activation_probs(model)  # (D,)
    w = sample_teacher(model, rng=rng)  # (D,)
    fmap = random_features(model, int(p_grid[-1]), activation=activation, rng=rng)
    x = sample_inputs(model, int(t_grid[-1]), rng=rng)  # (Tmax, D)
    y = x @ w  # (Tmax,) teacher
    if model.noise > 0:
        y = y + model.noise * rng.standard_normal(y.shape)
    n_p, n_t = p_grid.size, t_grid.size
    loss = np.empty((n_p, n_t))
    train = np.empty((n_p, n_t))
    rank = np.empty((n_p, n_t), dtype=int)
    data_rank = np.empty(n_t, dtype=int)
    seen_n = np.empty(n_t, dtype=int)
    unseen = np.empty(n_t)
    if activation == "relu":
        x_test = sample_inputs(model, num_test, rng=rng)  # (N, D)
        y_test = x_test @ w  # (N,)
        phi_test = fmap(x_test)  # (N, Pmax)
    phi_max = None  # linear features of all Tmax inputs, computed on first use
    for j, t in enumerate(t_grid):
        xt, yt = x[:t], y[:t]  # nested data: the first T inputs
        seen = np.flatnonzero(np.any(xt != 0.0, axis=0))
        xs = xt[:, seen]  # (T, s)
        seen_n[j] = seen.size
        data_rank[j] = _data_rank(xs)
        mask = np.ones(model.dim, dtype=bool)
        mask[seen] = False
        unseen[j] = float(np.sum(w[mask] ** 2 * probs[mask]))
        if activation == "linear":
            fs_all = fmap.weights[:, seen] if seen.size < model.dim else fmap.weights  # (Pmax, s)
            if data_rank[j] == t and seen.size >= t:  # full-rank design (dense control)
                if not model.dense:  # sparse: only the s seen columns enter
                    phi_all = xs @ fs_all.T  # (T, Pmax)
                else:  # dense: every T shares the rows of one product (nested data)
                    if phi_max is None:
                        phi_max = x @ fmap.weights.T  # (Tmax, Pmax)
                    phi_all = phi_max[:t]  # (T, Pmax) = X_T F'
                for i, theta, r, tr in _solve_full_rank(phi_all, yt, p_grid, ridge):
                    rank[i, j], train[i, j] = r, tr
                    loss[i, j] = population_loss(probs, w, fmap.weights[: p_grid[i]].T @ theta)
            else:  # rank-deficient sparse design: exact SVD least squares, reduced to s dims
                for i, p in enumerate(p_grid):
                    theta, rank[i, j], train[i, j] = _solve_linear(xs, fs_all[:p], yt, ridge)
                    w_hat = fmap.weights[:p].T @ theta  # (D,) = F' theta
                    loss[i, j] = population_loss(probs, w, w_hat)
        else:
            if phi_max is None:  # features act row by row: nested T share rows
                phi_max = fmap(x)  # (Tmax, Pmax)
            phi_all = phi_max[:t]  # (T, Pmax)
            for i, theta, r, tr in _solve_full_rank(phi_all, yt, p_grid, ridge):
                rank[i, j], train[i, j] = r, tr
                loss[i, j] = float(np.mean((phi_test[:, : p_grid[i]] @ theta - y_test) ** 2))
    return loss, train, rank, data_rank, seen_n, unseen


def fit_random_features(
    model: SparseFeatureModel,
    *,
    num_params: int,
    num_samples: int,
    activation: str = "linear",
    ridge: float = 0.0,
    num_test: int = 20000,
    rng,
) -> FitResult:
    """Draw a teacher, features and ``T`` training inputs; fit the readout; measure the loss.

    Parameters
    ----------
    model : SparseFeatureModel
        Data model (sparse or dense control).
    num_params : int
        ``P`` (<= ``D`` for linear features).
    num_samples : int
        ``T``.
    activation : {"linear", "relu"}
        ``phi(x) = F x`` or ``relu(F x + c)``.
    ridge : float
        ``lambda >= 0``; 0 is the min-norm solution.
    num_test : int
        Monte Carlo test inputs for ReLU features (linear features use the exact loss).
    rng : numpy.random.Generator

    Returns
    -------
    FitResult

    Examples
    --------
    >>> r = fit_random_features(SparseFeatureModel(dim=64), num_params=32, num_samples=16,
    ...                         rng=np.random.default_rng(0))
    >>> r.test_loss >= 0 and r.seen_coords <= 64
    True
    """
    model = _check_model(model)
    activation = _check_activation(activation)
    p = _check_int("num_params", num_params, minimum=1)
    t = _check_int("num_samples", num_samples, minimum=1)
    num_test = _check_int("num_test", num_test, minimum=1)
    ridge = _check_ridge(ridge)
    rng = _check_rng(rng)
    if activation == "linear" and p > model.dim:
        random_features(model, p, activation=activation, rng=rng)  # raises with the message
    out = _one_seed(model, np.array([p]), np.array([t]), activation, ridge, num_test, rng)
    loss, train, rank, data_rank, seen, unseen = out
    return FitResult(
        test_loss=float(loss[0, 0]),
        train_loss=float(train[0, 0]),
        rank=int(rank[0, 0]),
        data_rank=int(data_rank[0]),
        seen_coords=int(seen[0]),
        unseen_mass=float(unseen[0]),
    )


def scaling_grid(
    model: SparseFeatureModel,
    *,
    num_params_grid,
    num_samples_grid,
    num_seeds: int = 10,
    activation: str = "linear",
    ridge: float = 0.0,
    num_test: int = 20000,
    seed: int = 0,
) -> ScalingGrid:
    """Loss of the random-feature student over a ``P x T`` grid, for several seeds.

    Within a seed the teacher is fixed, features are nested (the first ``P`` rows of one
    ``F``) and data are nested (the first ``T`` inputs of one draw), so curves are smooth
    in both directions; seeds are independent.

    Parameters
    ----------
    model : SparseFeatureModel
    num_params_grid : sequence of int, shape (nP,)
        Strictly increasing ``P`` values.
    num_samples_grid : sequence of int, shape (nT,)
        Strictly increasing ``T`` values.
    num_seeds : int
        ``S``.
    activation : {"linear", "relu"}
    ridge : float
        ``lambda >= 0``.
    num_test : int
        Monte Carlo test inputs (ReLU only).
    seed : int
        Seed ``s`` uses ``np.random.default_rng([seed, s])``.

    Returns
    -------
    ScalingGrid

    Examples
    --------
    >>> g = scaling_grid(SparseFeatureModel(dim=64), num_params_grid=[4, 16, 64],
    ...                  num_samples_grid=[8, 32], num_seeds=2)
    >>> g.loss.shape
    (2, 3, 2)
    """
    model = _check_model(model)
    activation = _check_activation(activation)
    p_grid = _check_grid("num_params_grid", num_params_grid)
    t_grid = _check_grid("num_samples_grid", num_samples_grid)
    num_seeds = _check_int("num_seeds", num_seeds, minimum=1)
    num_test = _check_int("num_test", num_test, minimum=1)
    ridge = _check_ridge(ridge)
    seed = _check_int("seed", seed, minimum=0)
    if activation == "linear" and p_grid[-1] > model.dim:
        raise ValueError(
            f"num_params_grid reaches {p_grid[-1]} > dim={model.dim} with linear features: "
            "the student would be plain linear regression on x; keep P <= dim"
        )
    outs = [
        _one_seed(
            model, p_grid, t_grid, activation, ridge, num_test, np.random.default_rng([seed, s])
        )
        for s in range(num_seeds)
    ]
    loss, train, rank, data_rank, seen, unseen = (np.stack(a) for a in zip(*outs, strict=True))
    return ScalingGrid(
        num_params=p_grid,
        num_samples=t_grid,
        loss=loss,
        train_loss=train,
        rank=rank,
        data_rank=data_rank,
        seen_coords=seen,
        unseen_mass=unseen,
    )


def infinite_data_loss(
    model: SparseFeatureModel, *, num_params_grid, num_seeds: int = 10, seed: int = 0
) -> np.ndarray:
    """Exact ``T -> infinity`` loss of the best readout on ``P`` linear random features.

    ``L(P) = w' Sigma w - b_P' A_P^-1 b_P`` with ``A = F Sigma F'``, ``b = F Sigma w``
    (``Sigma = diag(p)``). The leading blocks of the Cholesky factor of ``A`` are the
    factors of the leading blocks, so one triangular solve gives every nested ``P``:
    ``b_P' A_P^-1 b_P = sum_{j <= P} z_j^2`` with ``z = L^-1 b``. Sparse and dense models
    share this curve (only the covariance enters).

    Parameters
    ----------
    model : SparseFeatureModel
    num_params_grid : sequence of int, shape (nP,)
        Strictly increasing, at most ``D``.
    num_seeds : int
        ``S`` independent (teacher, features) draws.
    seed : int

    Returns
    -------
    loss : ndarray, shape (S, nP)
    """
    model = _check_model(model)
    p_grid = _check_grid("num_params_grid", num_params_grid)
    if p_grid[-1] > model.dim:
        raise ValueError(f"num_params_grid reaches {p_grid[-1]} > dim={model.dim}")
    num_seeds = _check_int("num_seeds", num_seeds, minimum=1)
    seed = _check_int("seed", seed, minimum=0)
    probs = activation_probs(model)
    out = np.empty((num_seeds, p_grid.size))
    for s in range(num_seeds):
        rng = np.random.default_rng([seed, s])
        w = sample_teacher(model, rng=rng)
        f = random_features(model, int(p_grid[-1]), rng=rng).weights  # (Pmax, D)
        g = f * np.sqrt(probs)  # (Pmax, D): F Sigma^1/2
        a = g @ g.T  # (Pmax, Pmax): F Sigma F' (symmetric product)
        b = f @ (probs * w)  # (Pmax,): F Sigma w
        chol = np.linalg.cholesky(a)
        z = solve_triangular(chol, b, lower=True)  # L^-1 b
        explained = np.cumsum(z**2)  # (Pmax,)
        out[s] = np.sum(probs * w**2) - explained[p_grid - 1]
    return np.maximum(out, 0.0)


def unseen_mass_curve(model: SparseFeatureModel, num_samples_grid) -> np.ndarray:
    """``E[U(T)]`` over a grid (teacher averaged), shape (nT,); see ``expected_unseen_mass``."""
    model = _check_model(model)
    t_grid = _check_grid("num_samples_grid", num_samples_grid)
    if model.dense:  # every coordinate is active in every input
        return np.zeros(t_grid.size)
    return np.atleast_1d(expected_unseen_mass(activation_probs(model), None, t_grid))
