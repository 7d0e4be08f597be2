"""The reflexivity matrix Γ and its spectral threshold ρ(Γ) = 1.

When several performative learners retrain on data that each other's deployments shift,
the per-agent errors of repeated retraining obey ``e^{t+1} <= Γ e^t`` entrywise, where
``Γ_ij = ε_ij β_i / γ_i`` records how far agent j's deployment can move agent i's best
response (ε_ij: agent i's distribution sensitivity to agent j, β_i: the Lipschitz constant
of i's loss gradient in the data, γ_i: i's strong convexity). Perron-Frobenius gives a
positive vector ``v`` with ``Γ v <= ρ(Γ) v``, so the weighted max-norm ``max_i e_i / v_i``
contracts at rate ρ(Γ): the threshold is the spectral radius, not the scalar constant
``max_i Σ_j Γ_ij`` that earlier analyses use. With n = 1, Γ = ε β / γ is Perdomo et al.'s
single-agent contraction constant.

Deviations from the paper
-------------------------
- The exact entries of Γ are inferred from the abstract ("defined from per-agent gradient
  sensitivities and curvature parameters") as the natural generalisation of ε β / γ.
- For a reducible Γ (e.g. a DAG) the Perron vector is taken from ``Γ + δ 11ᵀ`` with a
  small δ; the contraction constant reported is then the Collatz-Wielandt bound
  ``max_i (Γ_δ v)_i / v_i``, which is at least ρ(Γ).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from neurips26.common.validation import check_array, check_float

__all__ = [
    "Threshold",
    "reflexivity_matrix",
    "scalar_constant",
    "spectral_radius",
    "spectral_threshold",
    "weighted_max_norm",
]


def _finite_array(x, name: str, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}") from exc
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); need at least one agent")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _check_gamma_matrix(Gamma) -> np.ndarray:
    G = _finite_array(Gamma, "Gamma", 2)
    if G.shape[0] != G.shape[1]:
        raise ValueError(f"Gamma must be square (n, n), got shape {G.shape}")
    if np.any(G < 0):
        raise ValueError("Gamma must be entrywise nonnegative (a reflexivity matrix)")
    return G


def reflexivity_matrix(eps, beta, gamma) -> np.ndarray:
    """The reflexivity matrix ``Γ_ij = ε_ij β_i / γ_i``.

    Parameters
    ----------
    eps : array_like, shape (n, n)
        Sensitivities ε_ij >= 0: ``W1(D_i(θ), D_i(θ')) <= Σ_j ε_ij ||θ_j - θ_j'||``.
    beta : array_like, shape (n,)
        β_i > 0, Lipschitz constant of agent i's loss gradient in the data z.
    gamma : array_like, shape (n,)
        γ_i > 0, strong convexity of agent i's loss in its parameters θ_i.

    Returns
    -------
    ndarray, shape (n, n)
        Γ, nonnegative.

    References
    ----------
    Perdomo, Zrnic, Mendler-Dünner, Hardt (2020), Performative prediction, Thm 3.5
    (the n = 1 constant ε β / γ).

    Examples
    --------
    >>> reflexivity_matrix([[0.5]], [2.0], [4.0])
    array([[0.25]])
    """
    E = _finite_array(eps, "eps", 2)
    b = _finite_array(beta, "beta", 1)
    g = _finite_array(gamma, "gamma", 1)
    n = b.shape[0]
    if E.shape != (n, n):
        raise ValueError(f"eps must have shape (n, n) = ({n}, {n}) to match beta, got {E.shape}")
    if g.shape != (n,):
        raise ValueError(f"gamma must have shape ({n},) to match beta, got {g.shape}")
    if np.any(E < 0):
        raise ValueError("eps (distribution sensitivities) must be nonnegative")
    if np.any(b <= 0):
        raise ValueError("beta (gradient Lipschitz constants) must be positive")
    if np.any(g <= 0):
        raise ValueError("gamma (strong convexity constants) must be positive")
    return E * (b / g)[:, None]  # Γ_ij = ε_ij β_i / γ_i, (n, n)


def _positive(u: np.ndarray) -> np.ndarray:
    """``|u|`` scaled to max 1, zeros lifted to ``1e-12`` (a positive test vector)."""
    v = np.abs(u)
    if not np.all(v > 0):  # reducible with δ = 0 asked for: fall back to a positive v
        v = np.maximum(v, 1e-12 * v.max())
    return v / v.max()


def spectral_radius(A) -> float:
    """``ρ(A) = max |eigvals(A)|`` of a square matrix.

    Parameters
    ----------
    A : array_like, shape (n, n)
        A finite square matrix (e.g. the reflexivity matrix Γ).

    Returns
    -------
    float
        The spectral radius ρ(A).

    Examples
    --------
    >>> spectral_radius([[0.0, 2.0], [0.5, 0.0]])
    1.0
    """
    A = _finite_array(A, "A", 2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    return float(np.max(np.abs(np.linalg.eigvals(A))))


def scalar_constant(Gamma) -> float:
    """The scalar contraction constant of earlier analyses, ``max_i Σ_j Γ_ij`` (∞-norm).

    It bounds ρ(Γ) from above, and can exceed 1 while ρ(Γ) < 1 (on a DAG ρ(Γ) = 0).

    Parameters
    ----------
    Gamma : array_like, shape (n, n)
        Entrywise nonnegative reflexivity matrix Γ.

    Returns
    -------
    float
        ``max_i Σ_j Γ_ij``.

    Examples
    --------
    >>> scalar_constant([[0.0, 3.0], [0.0, 0.0]])  # a DAG: ρ(Γ) = 0 but the constant is 3
    3.0
    """
    G = _check_gamma_matrix(Gamma)
    return float(np.max(G.sum(axis=1)))


def weighted_max_norm(errors, v) -> float:
    """The Perron-weighted max-norm ``||e||_v = max_i |e_i| / v_i``.

    Parameters
    ----------
    errors : array_like, shape (n,)
        Per-agent error norms ``e_i = ||θ_i - θ_i^*||``.
    v : array_like, shape (n,)
        Positive weights (a Perron vector).

    Returns
    -------
    float
        ``max_i |e_i| / v_i``.

    Raises
    ------
    TypeError
        Non-numeric ``errors`` or ``v``.
    ValueError
        Empty, NaN or inf entries, shapes that differ, a weight ``<= 0``.
    """
    e = np.abs(check_array(errors, "errors"))
    w = check_array(v, "v")
    if e.shape != w.shape:
        raise ValueError(f"errors {e.shape} and weights v {w.shape} must have the same shape")
    if np.any(w <= 0):
        raise ValueError("weights v must be positive")
    return float(np.max(e / w))


@dataclass(frozen=True)
class Threshold:
    """Spectral stability certificate of a reflexivity matrix.

    Attributes
    ----------
    rho : float
        Spectral radius ρ(Γ): the predicted geometric rate; the threshold is ρ(Γ) = 1.
    perron_vector : ndarray, shape (n,)
        Positive Perron vector v (of Γ, or of ``Γ + δ 11ᵀ`` when Γ is reducible), max 1.
    contraction : float
        ``max_i (Γ_δ v)_i / v_i`` >= ρ(Γ): a rigorous rate for ``||·||_v``.
    scalar_constant : float
        ``max_i Σ_j Γ_ij``, the scalar constant of earlier analyses.
    irreducible : bool
        Whether the support graph of Γ is strongly connected.
    stable : bool
        ``rho < 1``: the network is subcritical.
    scalar_stable : bool
        ``scalar_constant < 1``: what the scalar analysis would certify.
    """

    rho: float
    perron_vector: np.ndarray
    contraction: float
    scalar_constant: float
    irreducible: bool
    stable: bool
    scalar_stable: bool


def spectral_threshold(Gamma, *, regularization: float | None = None) -> Threshold:
    """Spectral radius, Perron vector and scalar constant of a reflexivity matrix.

    Parameters
    ----------
    Gamma : array_like, shape (n, n)
        Nonnegative reflexivity matrix Γ.
    regularization : float, optional
        δ >= 0 added to every entry before taking the Perron vector. Default: 0 when Γ is
        irreducible, else ``1e-9 * max(1, max Γ)``. A δ so large that ``Γ + δ 11ᵀ``
        overflows is refused (``ValueError``).

    Returns
    -------
    Threshold

    References
    ----------
    Horn and Johnson, Matrix Analysis, Ch. 8 (Perron-Frobenius, Collatz-Wielandt).

    Examples
    --------
    >>> th = spectral_threshold([[0.0, 3.0], [0.0, 0.0]])  # a DAG: nilpotent
    >>> th.rho, th.scalar_constant, th.stable
    (0.0, 3.0, True)
    """
    G = _check_gamma_matrix(Gamma)
    n = G.shape[0]
    support = nx.from_numpy_array((G > 0).astype(int), create_using=nx.DiGraph)
    irreducible = bool(nx.is_strongly_connected(support))
    # Frobenius normal form: the spectrum of Γ is the union of the spectra of its strongly
    # connected blocks, so a DAG's zero spectrum is exact rather than eig's O(eps^(1/n)).
    rho = 0.0
    for comp in nx.strongly_connected_components(support):
        idx = np.array(sorted(comp))
        rho = max(rho, spectral_radius(G[np.ix_(idx, idx)]))
    if regularization is None:
        delta = 0.0 if irreducible and np.any(G > 0) else 1e-9 * max(1.0, float(G.max()))
    else:
        delta = check_float(regularization, "regularization", min=0)
    Gd = G + delta  # Γ_δ = Γ + δ 11ᵀ, (n, n)
    if n == 1:
        v = np.ones(1)
    else:
        w, V = np.linalg.eig(Gd)
        k = int(np.argmax(w.real))  # the Perron root is real and has the largest real part
        v = _positive(V[:, k].real)
        c_eig = float(np.max(Gd @ v / v))
        rho_d = float(w[k].real)
        if c_eig > rho_d * (1 + 1e-9) + 1e-12:
            # eig balances the matrix first, and entries many orders of magnitude apart (a
            # 1e-94 link) can then give a wrong eigenvector; the null vector of Γ_δ - ρ I
            # from the SVD (backward stable, no balancing) is the Perron vector again.
            _, _, Vt = np.linalg.svd(Gd - rho_d * np.eye(n))
            v_svd = _positive(Vt[-1])
            if float(np.max(Gd @ v_svd / v_svd)) < c_eig:
                v = v_svd
    with np.errstate(over="ignore", invalid="ignore"):
        contraction = float(np.max(Gd @ v / v))  # Collatz-Wielandt: Γ_δ v <= c v
    if not (np.isfinite(contraction) and np.all(np.isfinite(v))):
        what = "regularization" if regularization is not None else "Gamma"
        raise ValueError(
            f"{what} is too large: the Perron vector of Gamma + delta 11^T overflows "
            f"(max Gamma = {float(G.max()):g}, delta = {delta:g})"
        )
    return Threshold(
        rho=float(rho),
        perron_vector=v,
        contraction=contraction,
        scalar_constant=float(np.max(G.sum(axis=1))),
        irreducible=irreducible,
        stable=bool(rho < 1.0),
        scalar_stable=bool(np.max(G.sum(axis=1)) < 1.0),
    )
