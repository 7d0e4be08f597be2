"""Scaling curves ``N -> N_eff(N)`` from answer logs, and the law fitted to them.

The paper's unit of analysis is a curve: the same configuration run at team sizes
``N = 1 .. 30``, ``N_eff`` measured at each size and the law ``R(N) = N_eff / N`` fitted
to the curve. This module turns answer logs (arrays per team size, or a long table of
question, team size, agent, answer, correctness) into such a curve with bootstrap
replicates over questions, fits the law, and wraps the pipeline in a small
scikit-learn-style estimator, :class:`EffectiveTeamSize`.

Deviations from the paper
-------------------------
- Bootstrap replicates resample questions jointly across team sizes when every team size
  saw the same number of questions (the same question set), else independently per size;
  with repeated runs they also resample runs, independently per team size (the agents'
  own randomness, which a question bootstrap alone would miss). With a single run per
  team size the CIs ignore that source and are too narrow.
- ``simulate_scaling`` caps ``peers`` at ``N - 1`` for small teams (a team of one has no
  peers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_choice

from .estimators import _as_logs, correctness_neff, hill_numbers
from .estimators import mean_pairwise_correlation as _mpc
from .law import NeffFit, fit_neff_law
from .simulator import Task, TeamRun, simulate_team

__all__ = [
    "LEVELS",
    "EffectiveTeamSize",
    "ScalingCurve",
    "logs_from_table",
    "neff_curve",
    "scaling_curve",
    "simulate_scaling",
]

#: Levels at which ``N_eff`` is measured.
LEVELS = ("answer", "correctness")


@dataclass(frozen=True)
class ScalingCurve:
    """``N_eff`` over team sizes with bootstrap replicates and the fitted law.

    Attributes
    ----------
    N : ndarray, shape (G,)
        Team sizes.
    neff : ndarray, shape (G,)
        Measured ``N_eff(N)``.
    ratio : ndarray, shape (G,)
        ``R(N) = N_eff / N``.
    replicates : ndarray, shape (B, G)
        Bootstrap replicates of ``ratio`` (questions resampled).
    fit : NeffFit or None
        The law fitted to the curve (None when ``fit=False``).
    level : str
        ``"answer"`` or ``"correctness"``.
    """

    N: np.ndarray
    neff: np.ndarray
    ratio: np.ndarray
    replicates: np.ndarray
    fit: NeffFit | None
    level: str


def _check_level(level: str) -> str:
    return check_choice(level, "level", LEVELS)


def neff_curve(
    logs_by_N: Mapping,
    *,
    level: str = "answer",
    order: float = 1.0,
    method: str = "kish",
    num_bootstrap: int = 200,
    fit: bool = True,
    ci: float = 0.95,
    seed: int = 0,
) -> ScalingCurve:
    """Measure ``N_eff`` at each team size and fit the law.

    Parameters
    ----------
    logs_by_N : mapping of int to array_like
        Team size ``N`` to the team's log of shape (Q, N) or (R, Q, N): answers for
        ``level="answer"``, 0/1 correctness for ``level="correctness"``.
    level : {"answer", "correctness"}
        Which ``N_eff`` (see :func:`answer_neff`, :func:`correctness_neff`).
    order : float
        Hill order for the answer level.
    method : {"kish", "variance"}
        Correctness estimator.
    num_bootstrap : int
        Bootstrap replicates ``B`` (questions resampled jointly across sizes, runs
        resampled per size; 0: the law's CI comes from a residual bootstrap instead).
    fit : bool
        Fit the law (needs at least 3 team sizes).
    ci : float
        Confidence level of the fit.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    ScalingCurve

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> logs = {n: rng.integers(0, 50, size=(40, n)) for n in (1, 2, 4, 8)}
    >>> curve = neff_curve(logs, num_bootstrap=20)
    >>> curve.ratio.round(2).tolist()[:2]
    [1.0, 1.0]
    """
    _check_level(level)
    if not isinstance(logs_by_N, Mapping) or len(logs_by_N) == 0:
        raise TypeError("logs_by_N must be a non-empty mapping {team size N: (Q, N) array}")
    sizes = sorted(logs_by_N)
    arrays = {}
    for n in sizes:
        arr = _as_logs(logs_by_N[n], f"logs for N={n}")
        if arr.shape[2] != n:
            raise ValueError(f"logs for N={n} have {arr.shape[2]} agent columns, expected {n}")
        arrays[n] = arr
    qs = {a.shape[1] for a in arrays.values()}
    rng = np.random.default_rng(seed)
    shared = len(qs) == 1

    def draw(q: int) -> np.ndarray:  # (B, q) multinomial resampling counts
        return rng.multinomial(q, np.full(q, 1.0 / q), size=num_bootstrap).astype(float)

    w_shared = draw(qs.pop()) if shared and num_bootstrap > 0 else None
    neff = np.empty(len(sizes))
    reps = np.empty((num_bootstrap, len(sizes)))
    for g, n in enumerate(sizes):
        arr = arrays[n]
        w = w_shared if shared else (draw(arr.shape[1]) if num_bootstrap > 0 else None)
        nr = arr.shape[0]
        # runs resampled independently per team size: the agents' own randomness
        v = draw(nr) if (w is not None and nr >= 2) else np.ones((max(num_bootstrap, 1), nr))
        if level == "answer":
            h = hill_numbers(arr.reshape(nr * arr.shape[1], n), order=order).reshape(nr, -1)
            neff[g] = h.mean()  # (R, Q) -> mean over runs and questions
            if w is not None:
                # sum_rq v_br h_rq w_bq: the (B, R) @ (R, Q) product through BLAS
                reps[:, g] = np.einsum("bq,bq->b", v @ h, w) / (v.sum(1) * w.sum(1))  # (B,)
        else:
            neff[g] = correctness_neff(arr, method=method)
            if w is None:
                continue
            x = arr.astype(float)
            if n == 1:
                reps[:, g] = 1.0
            elif method == "kish":
                rho_rb = np.stack([_mpc(x[i], w) for i in range(nr)])  # (R, B)
                rho = np.sum(v.T * rho_rb, axis=0) / v.sum(axis=1)  # (B,)
                reps[:, g] = n / (1.0 + (n - 1.0) * rho)
            else:
                r = x.shape[0]
                p = x.mean(axis=(0, 2))
                num = p * (1 - p) * (r * n) / (r * n - 1)  # (Q,)
                den = x.mean(axis=2).var(axis=0, ddof=1)  # (Q,)
                reps[:, g] = (w @ num) / (w @ den)
    n_arr = np.array(sizes, dtype=float)
    ratio = neff / n_arr
    reps = reps / n_arr
    law = None
    if fit:
        law = fit_neff_law(
            n_arr, ratio, replicates=reps if num_bootstrap > 0 else None, ci=ci, seed=seed
        )
    return ScalingCurve(N=n_arr, neff=neff, ratio=ratio, replicates=reps, fit=law, level=level)


def simulate_scaling(
    task: Task,
    *,
    N_grid=(1, 2, 3, 4, 5, 8, 12, 20, 30),
    peers: int | None = None,
    seed: int = 0,
    **sim,
) -> dict[int, TeamRun]:
    """Simulate one configuration at every team size of ``N_grid``.

    Parameters
    ----------
    task : Task
        The shared question set.
    N_grid : sequence of int, shape (G,)
        Strictly increasing team sizes.
    peers : int, optional
        Peers per round (capped at ``N - 1``; None: dense).
    seed : int
        Base seed; team size ``N`` uses ``seed * 1000 + N``.
    **sim
        Further keywords of :func:`simulate_team` (condition, families, rounds,
        influence, sharpen, agent_concentration, num_runs).

    Returns
    -------
    dict of int to TeamRun
    """
    grid = [int(n) for n in N_grid]
    if len(grid) == 0 or any(n < 1 for n in grid) or any(np.diff(grid) <= 0):
        raise ValueError(f"N_grid must be strictly increasing positive integers, got {N_grid}")
    return {
        n: simulate_team(
            task,
            num_agents=n,
            peers=None if peers is None else min(peers, n - 1),
            seed=seed * 1000 + n,
            **sim,
        )
        for n in grid
    }


def scaling_curve(
    condition: str = "self_consistency",
    *,
    task: Task,
    N_grid=(1, 2, 3, 4, 5, 8, 12, 20, 30),
    level: str = "answer",
    order: float = 1.0,
    num_bootstrap: int = 200,
    seed: int = 0,
    **sim,
) -> ScalingCurve:
    """Simulate a configuration over ``N_grid`` and fit the law at one level.

    Parameters
    ----------
    condition : str
        See :func:`simulate_team`.
    task : Task
        The question set.
    N_grid : sequence of int
        Team sizes.
    level : {"answer", "correctness"}
        Level of ``N_eff``.
    order : float
        Hill order (answer level).
    num_bootstrap : int
        Question-bootstrap replicates.
    seed : int
        Seed.
    **sim
        Keywords of :func:`simulate_team`.

    Returns
    -------
    ScalingCurve

    Examples
    --------
    >>> from neurips26.papers.multiagent_neff import make_task
    >>> t = make_task(num_questions=50, num_answers=40, seed=0)
    >>> c = scaling_curve("debate", task=t, N_grid=(1, 2, 4, 8), num_bootstrap=10)
    >>> c.fit.regime in ("hard_ceiling", "sublinear", "linear", "indeterminate")
    True
    """
    _check_level(level)
    runs = simulate_scaling(task, N_grid=N_grid, condition=condition, seed=seed, **sim)
    key = "answers" if level == "answer" else "correct"
    return neff_curve(
        {n: getattr(run, key) for n, run in runs.items()},
        level=level,
        order=order,
        num_bootstrap=num_bootstrap,
        seed=seed,
    )


def logs_from_table(
    table: pd.DataFrame,
    *,
    value: str = "answer",
    question: str = "question",
    team_size: str = "N",
    agent: str = "agent",
    run: str | None = None,
) -> dict[int, np.ndarray]:
    """Turn a long answer-log table into ``{N: array (R, Q, N)}``.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per (run,) team size, question and agent.
    value : str
        Column to collect (``"answer"`` or ``"correct"``).
    question, team_size, agent : str
        Column names.
    run : str, optional
        Column of repeated runs (default: a single run).

    Returns
    -------
    dict of int to ndarray, shape (R, Q, N)

    Raises
    ------
    ValueError
        Missing columns, a team whose agent count differs from its ``N``, a question
        without an answer from every agent (ragged logs) or duplicated rows.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    cols = [question, team_size, agent, value] + ([run] if run else [])
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks column(s) {missing}; it has {list(table.columns)}")
    if table.empty:
        raise ValueError("table is empty")
    out = {}
    for n, sub in table.groupby(team_size, sort=True):
        idx = [run, question] if run else [question]
        if sub.duplicated([*idx, agent]).any():
            raise ValueError(f"team size {n}: duplicated (question, agent) rows")
        wide = sub.pivot_table(
            index=idx, columns=agent, values=value, aggfunc="first", dropna=False
        )
        if wide.shape[1] != n:
            raise ValueError(f"team size {n} has {wide.shape[1]} distinct agents, expected {n}")
        if wide.isna().any().any():
            raise ValueError(
                f"team size {n}: some questions lack an answer from every agent (ragged logs)"
            )
        arr = wide.to_numpy()
        if run:
            nr = sub[run].nunique()
            if arr.shape[0] % nr:
                raise ValueError(f"team size {n}: runs do not cover the same questions")
            arr = arr.reshape(nr, -1, int(n))
        else:
            arr = arr[None]
        out[int(n)] = arr
    return out


class EffectiveTeamSize(BaseEstimator):
    """Estimator of the effective-team-size law from answer logs.

    Parameters
    ----------
    level : {"answer", "correctness"}
        Level of ``N_eff``.
    order : float
        Hill order (answer level).
    method : {"kish", "variance"}
        Correctness estimator.
    num_bootstrap : int
        Question-bootstrap replicates for the CIs.
    seed : int
        Bootstrap seed.

    Attributes
    ----------
    curve_ : ScalingCurve
    fit_ : NeffFit
    c_, beta_ : float
    regime_ : str
    converged_ : bool

    Examples
    --------
    >>> from neurips26.papers.multiagent_neff import make_task, simulate_scaling
    >>> runs = simulate_scaling(make_task(num_questions=40, seed=0), N_grid=(1, 2, 4, 8))
    >>> est = EffectiveTeamSize(num_bootstrap=10).fit({n: r.answers for n, r in runs.items()})
    >>> est.regime_ in ("hard_ceiling", "sublinear", "linear", "indeterminate")
    True
    """

    def __init__(
        self,
        *,
        level: str = "answer",
        order: float = 1.0,
        method: str = "kish",
        num_bootstrap: int = 200,
        seed: int = 0,
    ) -> None:
        self.level = level
        self.order = order
        self.method = method
        self.num_bootstrap = num_bootstrap
        self.seed = seed

    def fit(self, logs, **table_columns) -> EffectiveTeamSize:
        """Fit on ``{N: (Q, N) or (R, Q, N) array}`` or a long DataFrame.

        Parameters
        ----------
        logs : mapping or pandas.DataFrame
            Answer logs; a DataFrame goes through :func:`logs_from_table` with
            ``value="answer"`` or ``"correct"`` by level.
        **table_columns
            Column names for :func:`logs_from_table` (question, team_size, agent, run).

        Returns
        -------
        self
        """
        _check_level(self.level)
        if isinstance(logs, pd.DataFrame):
            value = "answer" if self.level == "answer" else "correct"
            logs = logs_from_table(logs, value=table_columns.pop("value", value), **table_columns)
        self.curve_ = neff_curve(
            logs,
            level=self.level,
            order=self.order,
            method=self.method,
            num_bootstrap=self.num_bootstrap,
            seed=self.seed,
        )
        self.fit_ = self.curve_.fit
        self.c_ = self.fit_.c
        self.beta_ = self.fit_.beta
        self.regime_ = self.fit_.regime
        self.converged_ = self.fit_.converged
        return self

    def predict(self, N) -> np.ndarray:
        """Predicted ``N_eff(N)``, shape (G,)."""
        if not hasattr(self, "fit_"):
            raise RuntimeError("call fit() before predict()")
        return self.fit_.predict(N)
