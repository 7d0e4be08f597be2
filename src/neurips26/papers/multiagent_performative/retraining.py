"""Repeated retraining of interacting performative learners, and what theory predicts for it.

Every round each agent refits on the data its current deployment (and everyone else's)
induced: exact repeated risk minimisation (``rrm``), its damped version ``θ <- (1 - η) θ +
η BR(θ)`` (``damped``) or one gradient step on the current risk (``gd``); finite-sample
variants fit on ``num_samples`` fresh draws per agent and round. The trace records the
distance to the stable point, the Perron-weighted max-norm of the per-agent errors (which
the theorem bounds by ``ρ(Γ)^t`` times its start), the per-round excess loss
``Σ_i R_i(θ_i; D_i(θ)) - min_u R_i(u; D_i(θ))`` and its running sum. Under sampling noise the
stationary mean excess of a linear learner is computed in closed form from a discrete
Lyapunov equation, so the simulated noise floor has a predicted value beside it.

Deviations from the paper
-------------------------
- The excess-loss definition (gap to each agent's best response under the current
  distribution, minimised over all of R^d) is inferred; it is nonnegative and zero exactly
  at stable points. With decision balls the learners are projected but the excess is still
  measured against the unconstrained minimiser, so an agent pinned to the boundary keeps
  paying ``(γ_i / 2)(||BR_i|| - B)²`` per round.
- The local learners of the lower bound are the three listed above (the paper's class of
  "every local-information learner" cannot be enumerated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, stats
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_array, check_choice, check_float, check_int

from .game import QuadraticPerformativeGame, _project, project_to_ball
from .reflexivity import spectral_radius, spectral_threshold

__all__ = [
    "LEARNERS",
    "LinearFit",
    "MultiAgentRetraining",
    "RetrainingTrace",
    "fitted_rate",
    "linear_growth",
    "perron_start",
    "repeated_retraining",
    "stationary_excess",
]

#: Local-information learners.
LEARNERS = ("rrm", "damped", "gd")


@dataclass(frozen=True)
class RetrainingTrace:
    """The history of one run of repeated retraining (rounds 0..T).

    Attributes
    ----------
    thetas : ndarray, shape (T + 1, n, d)
        Deployed parameters θ^t.
    distance : ndarray, shape (T + 1,)
        ``||θ^t - θ_PS||`` (NaN when ``I - M`` is singular).
    weighted_distance : ndarray, shape (T + 1,)
        ``max_i ||θ_i^t - θ_PS,i|| / v_i`` with v the Perron vector of Γ.
    excess_loss : ndarray, shape (T + 1,)
        ``Σ_i (γ_i / 2) ||θ_i^t - BR_i(θ^t)||²``.
    cumulative_excess : ndarray, shape (T + 1,)
        Running sum of ``excess_loss``.
    rate : float
        Fitted geometric rate of ``distance`` (:func:`fitted_rate`).
    converged : bool
        ``distance[-1] <= tol * max(1, distance[0])`` and not diverged.
    diverged : bool
        The run stopped early because ``||θ||`` exceeded 1e12 (arrays are then shorter).
    theta_star : ndarray, shape (n, d) or None
        The (possibly unstable) fixed point ``θ_PS``.
    learner : str
        Which learner produced the trace.
    """

    thetas: np.ndarray
    distance: np.ndarray
    weighted_distance: np.ndarray
    excess_loss: np.ndarray
    cumulative_excess: np.ndarray
    rate: float
    converged: bool
    diverged: bool
    theta_star: np.ndarray | None
    learner: str


@dataclass(frozen=True)
class LinearFit:
    """Least-squares line ``y ≈ intercept + slope t`` and its R².

    Attributes
    ----------
    slope : float
        Growth per round, ``s``.
    intercept : float
        Value of the line at ``t = 0``.
    r2 : float
        Coefficient of determination of the fit (0 for a constant series).
    """

    slope: float
    intercept: float
    r2: float


def fitted_rate(distance, *, floor: float = 1e-10) -> float:
    """Geometric rate ``exp(slope)`` of a log-linear fit of ``distance`` against t.

    Parameters
    ----------
    distance : array_like, shape (T + 1,)
        ``||θ^t - θ_PS||``.
    floor : float
        The fit uses the leading rounds whose distance exceeds ``floor * distance[0]``
        (later rounds are at the floating-point floor).

    Returns
    -------
    float
        The fitted rate; 0.0 if the distance drops below the floor after one round; NaN if
        the distance starts at 0 (no rate is defined).

    Raises
    ------
    TypeError
        ``distance`` not numeric, ``floor`` not a real number.
    ValueError
        ``distance`` not 1-D, shorter than 2 rounds, negative, NaN or inf (a norm series);
        ``floor`` negative or not finite.

    Examples
    --------
    >>> round(fitted_rate(0.7 ** np.arange(30)), 12)
    0.7
    """
    d = check_array(distance, "distance", ndim=1, min_size=2, min=0)
    floor = check_float(floor, "floor", min=0)
    if d[0] <= 0:
        return float("nan")
    above = d > floor * d[0]
    k = int(np.argmin(above)) if not above.all() else d.size  # length of the leading run
    if k < 2:
        return 0.0
    t = np.arange(k)
    slope = np.polyfit(t, np.log(d[:k]), 1)[0]
    return float(np.exp(slope))


def linear_growth(values, *, start: int = 0) -> LinearFit:
    """Fit ``values[t] ≈ a + s t`` over ``t >= start`` (e.g. cumulative excess, last half).

    Parameters
    ----------
    values : array_like, shape (T,)
        A finite series, e.g. the cumulative excess loss ``Σ_{s<=t} (L(θ^s) - L(θ_PS))``.
    start : int
        First index used in the fit (the line is fitted over ``t = start, ..., T - 1``).

    Returns
    -------
    LinearFit
        Slope, intercept and R² of the least-squares line; R² is 0 for a constant series.

    Examples
    --------
    >>> fit = linear_growth(2.0 + 0.5 * np.arange(10))
    >>> round(fit.slope, 12), round(fit.r2, 12)
    (0.5, 1.0)
    """
    y_all = np.asarray(values, dtype=float)
    if y_all.ndim != 1:
        raise ValueError(f"values must be 1-dimensional, got shape {y_all.shape}")
    y = y_all[start:]
    if not np.all(np.isfinite(y)):
        raise ValueError("values contain NaN or infinite entries; cannot fit a line")
    if y.size < 3:
        raise ValueError(f"need at least 3 values after start={start}, got {y.size}")
    t = np.arange(start, start + y.size, dtype=float)
    if np.ptp(y) == 0:
        return LinearFit(slope=0.0, intercept=float(y[0]), r2=0.0)
    res = stats.linregress(t, y)
    return LinearFit(
        slope=float(res.slope), intercept=float(res.intercept), r2=float(res.rvalue**2)
    )


def _step_sizes(game: QuadraticPerformativeGame, learner: str, lr: float) -> np.ndarray:
    """Per-agent relaxation η_i of a learner: θ_i <- θ_i + η_i (BR_i - θ_i), (n,)."""
    if learner == "rrm":
        return np.ones(game.num_agents)
    if learner == "damped":
        return np.full(game.num_agents, lr)
    return lr * game.gamma  # gd: θ - lr ∇ = θ - lr γ (θ - BR)


def _check_learner(learner: str, lr: float) -> None:
    check_choice(learner, "learner", LEARNERS)
    if learner == "damped":  # a convex combination
        check_float(lr, "lr", min=0, max=1, min_inclusive=False)
    else:
        check_float(lr, "lr", min=0, min_inclusive=False)


def _check_positive_int(value, name: str, *, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    return check_int(value, name, min=1)


def perron_start(game: QuadraticPerformativeGame, *, offset: float = 0.5) -> np.ndarray:
    """A start displaced from ``θ_PS`` along the Perron direction of Γ, (n, d).

    ``θ^0 = θ_PS + offset * B * (v / max v) ⊗ (1_d / sqrt(d))`` with B the radius (1 if None),
    projected onto the decision balls: the agent with the largest Perron weight starts at
    distance ``offset * B`` from its stable parameters.

    Parameters
    ----------
    game : QuadraticPerformativeGame
        The game; its Γ gives the Perron direction and ``game.radius`` the scale B.
    offset : float
        Displacement in units of B (positive).

    Returns
    -------
    numpy.ndarray, shape (n, d)
        The start ``θ^0``.
    """
    if not (np.isfinite(offset) and offset > 0):
        raise ValueError(f"offset must be positive, got {offset}")
    B = 1.0 if game.radius is None else game.radius
    v = spectral_threshold(game.reflexivity()).perron_vector  # (n,), max 1
    direction = np.outer(v, np.ones(game.dim) / np.sqrt(game.dim))  # (n, d)
    theta_star = game.equilibrium(allow_unstable=True)
    return project_to_ball(theta_star + offset * B * direction, game.radius)


def repeated_retraining(
    game: QuadraticPerformativeGame,
    *,
    max_iter: int = 200,
    learner: str = "rrm",
    lr: float = 0.1,
    num_samples: int | None = None,
    theta0=None,
    tol: float = 1e-8,
    seed: int = 0,
) -> RetrainingTrace:
    """Run repeated retraining for ``max_iter`` rounds and record the trace.

    Parameters
    ----------
    game : QuadraticPerformativeGame
        The instance (its ``radius`` constrains every learner by projection).
    max_iter : int
        Horizon T.
    learner : {"rrm", "damped", "gd"}
        ``rrm``: ``θ <- P(BR(θ))`` (repeated risk minimisation); ``damped``:
        ``θ <- (1 - lr) θ + lr P(BR(θ))``; ``gd``: ``θ <- P(θ - lr ∇_θ R(θ; D(θ)))``.
    lr : float
        Damping η (``damped``, in (0, 1]) or gradient step size (``gd``); unused by ``rrm``.
    num_samples : int, optional
        Fit on that many fresh samples per agent and round (empirical risk); None: exact.
    theta0 : array_like, shape (n, d), optional
        Initial deployment; default zeros.
    tol : float
        Relative distance below which the run counts as converged.
    seed : int
        Randomness of the samples.

    Returns
    -------
    RetrainingTrace

    References
    ----------
    Perdomo et al. (2020), Performative prediction, Thm 3.5 (n = 1: rate ε β / γ).

    Examples
    --------
    >>> from neurips26.papers.multiagent_performative import make_game
    >>> tr = repeated_retraining(make_game(graph="ring", num_agents=3, target_rho=0.5))
    >>> bool(tr.converged), bool(tr.rate <= 0.5 + 1e-9)  # geometric, at rate <= ρ(Γ)
    (True, True)
    """
    if not isinstance(game, QuadraticPerformativeGame):
        raise TypeError(f"game must be a QuadraticPerformativeGame, got {type(game).__name__}")
    _check_positive_int(max_iter, "max_iter")
    _check_positive_int(num_samples, "num_samples", allow_none=True)
    _check_learner(learner, lr)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be positive, got {tol}")
    n, d = game.num_agents, game.dim
    th = np.zeros((n, d)) if theta0 is None else game._check_theta(theta0, "theta0").copy()
    th = project_to_ball(th, game.radius)
    M, b = game.retraining_map()  # (nd, nd), (nd,)
    try:
        theta_star = game.equilibrium(allow_unstable=True)
    except ValueError:
        theta_star = None
    v = spectral_threshold(game.reflexivity()).perron_vector  # (n,)
    eta = _step_sizes(game, learner, lr)[:, None]  # (n, 1)
    k = (game.beta / game.gamma)[:, None]  # (n, 1)
    half_gamma = 0.5 * game.gamma  # (n,)
    rng = np.random.default_rng(seed)
    blow_up = 1e12 * (1.0 + (0.0 if theta_star is None else np.linalg.norm(theta_star)))

    thetas, excess = [], []
    diverged = False
    for t in range(max_iter + 1):
        br = (b + M @ th.reshape(n * d)).reshape(n, d)  # Eq. BR_i = (β_i/γ_i)(μ_i + Σ_j E_ij θ_j)
        thetas.append(th)
        excess.append(float(np.sum(half_gamma * np.sum((th - br) ** 2, axis=1))))
        if t == max_iter:
            break
        if num_samples is not None:
            # empirical best response: (β_i/γ_i) z̄_i with z̄_i the mean of N fresh draws
            g = rng.standard_normal((n, num_samples, d)).mean(axis=1)  # (n, d)
            br = br + k * game.noise * g
        if learner == "rrm":
            new = _project(br, game.radius)
        elif learner == "damped":
            new = (1 - eta) * th + eta * _project(br, game.radius)
        else:  # gd: θ - lr (γ θ - β z̄) = θ - lr γ (θ - BR)
            new = _project(th - eta * (th - br), game.radius)
        th = new
        if not np.all(np.isfinite(th)) or np.linalg.norm(th) > blow_up:
            diverged = True
            break

    thetas_arr = np.stack(thetas)  # (T + 1, n, d)
    excess_arr = np.array(excess)  # (T + 1,)
    if theta_star is None:
        dist = np.full(len(thetas), np.nan)
        wdist = np.full(len(thetas), np.nan)
    else:
        err = np.linalg.norm(thetas_arr - theta_star[None], axis=2)  # (T + 1, n)
        dist = np.linalg.norm(err, axis=1)
        wdist = np.max(err / v[None, :], axis=1)
    converged = bool(
        not diverged and theta_star is not None and dist[-1] <= tol * max(1.0, dist[0])
    )
    return RetrainingTrace(
        thetas=thetas_arr,
        distance=dist,
        weighted_distance=wdist,
        excess_loss=excess_arr,
        cumulative_excess=np.cumsum(excess_arr),
        rate=fitted_rate(dist) if theta_star is not None else float("nan"),
        converged=converged,
        diverged=diverged,
        theta_star=theta_star,
        learner=learner,
    )


def stationary_excess(
    game: QuadraticPerformativeGame,
    *,
    num_samples: int,
    learner: str = "rrm",
    lr: float = 0.1,
) -> float:
    """Predicted mean per-round excess loss of finite-sample retraining in steady state.

    With ``e^t = θ^t - θ_PS`` a linear learner follows ``e^{t+1} = A e^t + ξ^t`` with
    ``A = I - H + H M`` (H = diag of per-agent relaxations η_i: 1 for ``rrm``, lr for
    ``damped``, lr γ_i for ``gd``) and ``ξ_i ~ N(0, (η_i β_i s / (γ_i sqrt(N)))² I)``. The
    stationary covariance solves ``Σ = A Σ Aᵀ + Q`` and the excess ``Σ_i (γ_i/2)
    ||((I - M) e)_i||²`` has mean ``Σ_i (γ_i / 2) tr[((I - M) Σ (I - M)ᵀ)_ii]``. The decision
    balls are ignored (valid while they are inactive).

    Parameters
    ----------
    game : QuadraticPerformativeGame
    num_samples : int
        N, samples per agent and round.
    learner : {"rrm", "damped", "gd"}
    lr : float

    Returns
    -------
    float
        The predicted stationary mean of the per-round excess loss.

    Raises
    ------
    ValueError
        If the learner's linear map is not stable (ρ(A) >= 1).
    """
    if not isinstance(game, QuadraticPerformativeGame):
        raise TypeError(f"game must be a QuadraticPerformativeGame, got {type(game).__name__}")
    _check_positive_int(num_samples, "num_samples")
    _check_learner(learner, lr)
    n, d = game.num_agents, game.dim
    M, _ = game.retraining_map()
    h = np.repeat(_step_sizes(game, learner, lr), d)  # (nd,)
    A = np.eye(n * d) - h[:, None] * (np.eye(n * d) - M)  # (nd, nd)
    rho = spectral_radius(A)
    if rho >= 1:
        raise ValueError(f"the learner's map has spectral radius {rho:.4g} >= 1: no steady state")
    sd = np.repeat(game.beta / game.gamma, d) * h * game.noise / np.sqrt(num_samples)  # (nd,)
    Sigma = linalg.solve_discrete_lyapunov(A, np.diag(sd**2))  # Σ = A Σ Aᵀ + Q
    R = np.eye(n * d) - M
    C = R @ Sigma @ R.T  # covariance of θ - BR(θ), (nd, nd)
    return float(np.sum(np.repeat(0.5 * game.gamma, d) * np.diag(C)))


class MultiAgentRetraining(BaseEstimator):
    """Estimator-style wrapper: fit repeated retraining to a game and keep the trace.

    Parameters
    ----------
    learner : {"rrm", "damped", "gd"}
    max_iter : int
        Horizon T.
    lr : float
        Damping or step size.
    num_samples : int, optional
        Samples per agent and round (None: exact population retraining).
    seed : int

    Attributes
    ----------
    trace_ : RetrainingTrace
    threshold_ : Threshold
        ``spectral_threshold(game.reflexivity())``.
    theta_ : ndarray, shape (n, d)
        The last deployment.

    Examples
    --------
    >>> from neurips26.papers.multiagent_performative import make_game
    >>> est = MultiAgentRetraining(max_iter=100).fit(make_game(graph="dag", target_scalar=3.0))
    >>> est.threshold_.rho, est.threshold_.scalar_constant, est.trace_.converged
    (0.0, 3.0, True)
    """

    def __init__(
        self,
        *,
        learner: str = "rrm",
        max_iter: int = 200,
        lr: float = 0.1,
        num_samples: int | None = None,
        seed: int = 0,
    ) -> None:
        self.learner = learner
        self.max_iter = max_iter
        self.lr = lr
        self.num_samples = num_samples
        self.seed = seed

    def fit(self, game: QuadraticPerformativeGame, theta0=None) -> MultiAgentRetraining:
        """Run retraining on ``game`` from ``theta0``; returns self."""
        self.threshold_ = spectral_threshold(game.reflexivity())
        self.trace_ = repeated_retraining(
            game,
            max_iter=self.max_iter,
            learner=self.learner,
            lr=self.lr,
            num_samples=self.num_samples,
            theta0=theta0,
            seed=self.seed,
        )
        self.theta_ = self.trace_.thetas[-1]
        return self
