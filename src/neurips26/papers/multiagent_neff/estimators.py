"""Effective-team-size estimators on answer logs (answer diversity, correctness redundancy).

The paper measures ``N_eff`` at two levels. At the answer level a team that always
agrees is worth one agent and a team whose ``N`` answers all differ is worth ``N``; we
operationalise this as the Hill number (effective number of distinct answers) of the
team's answers per question, averaged over questions. At the correctness level a team
whose agents fail on the same questions is redundant; we use Kish's design effect with the
mean pairwise correlation of the agents' correctness indicators across questions, or a
variance estimator when repeated runs of the same team exist.

Deviations from the paper
-------------------------
- Both operationalisations are inferred from the abstract (the paper's exact estimators
  are not given there): Hill number of order 1 (``exp`` of the plug-in entropy) for
  answers; Kish with the mean off-diagonal Pearson correlation for correctness.
- With repeated runs the Kish estimator averages the mean pairwise correlation over runs
  before applying Kish's formula (less noisy than averaging ``N_eff``).
- The variance estimator uses unbiased (``ddof=1``) variances so that independent agents
  give ``N`` in expectation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from neurips26.common.frames import warn_if_transposed
from neurips26.common.validation import check_array, check_float

__all__ = [
    "answer_neff",
    "answer_neff_per_question",
    "correctness_neff",
    "hill_numbers",
    "mean_pairwise_correlation",
]


def _as_logs(x, name: str) -> np.ndarray:
    """Validate an answer/correctness log as (R, Q, N); accept (Q, N)."""
    if isinstance(x, pd.DataFrame):
        x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} is ragged: every question needs one entry per agent") from err
    if arr.dtype == object and arr.ndim == 1 and arr.size and isinstance(arr[0], (list, tuple)):
        raise ValueError(f"{name} is ragged: every question needs one entry per agent")
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(
            f"{name} must have shape (num_questions, num_agents) or "
            f"(num_runs, num_questions, num_agents), got shape {arr.shape}"
        )
    _, q, n = arr.shape
    if arr.shape[0] == 0 or q == 0 or n == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if q < 2:
        raise ValueError(f"{name} needs at least 2 questions, got {q}")
    # Questions are rows and agents columns; far more agents than questions means the
    # log was most likely passed agents-first.
    warn_if_transposed((q, n), name, rows="questions", cols="agents", long_axis="rows",
                       stacklevel=4)  # fmt: skip
    if pd.isna(arr).any():
        raise ValueError(f"{name} contains missing values (NaN/None); drop or impute them first")
    return arr


def hill_numbers(answers, *, order: float = 1.0) -> np.ndarray:
    """Hill number (effective number of distinct answers) of each row of answers.

    Parameters
    ----------
    answers : array_like, shape (Q, N)
        One row per question, one column per agent; any hashable labels.
    order : float
        Hill order ``q >= 0``: 0 counts distinct answers, 1 is ``exp`` of the Shannon
        entropy, 2 the inverse Simpson index. Finite (NaN and inf are refused); a huge
        order, where ``p^q`` underflows, is computed in log form (tending to ``1 / max p``).

    Returns
    -------
    ndarray, shape (Q,), or Series for a DataFrame
        ``(sum_a p_a^q)^(1 / (1 - q))`` with ``p`` the empirical answer shares; between 1
        (unanimity) and ``N`` (all distinct).

    References
    ----------
    Hill, M. O. (1973). Diversity and evenness: a unifying notation. Ecology 54(2).

    Examples
    --------
    >>> hill_numbers([["a", "a", "b", "c"], ["x", "x", "x", "x"]], order=0).tolist()
    [3.0, 1.0]

    A DataFrame (questions as the index, agents as columns) gives a Series on its index:

    >>> df = pd.DataFrame({"ann": ["a", "x"], "bob": ["b", "x"]}, index=["q1", "q2"])
    >>> hill_numbers(df, order=0)
    q1    2.0
    q2    1.0
    Name: hill_number, dtype: float64
    """
    arr = np.asarray(answers)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"answers must be a non-empty (Q, N) array, got shape {arr.shape}")
    order = check_float(order, "order", min=0)
    return _labelled(_hill_rows(arr, order), answers, "hill_number")


def _labelled(values: np.ndarray, source, name: str):
    """``values`` (one per row of ``source``) as a Series on a DataFrame's index."""
    if isinstance(source, pd.DataFrame):
        return pd.Series(values, index=source.index, name=name)
    return values


def _hill_rows(arr: np.ndarray, order: float) -> np.ndarray:
    """Hill number of each row of a validated (Q, N) array."""
    q, n = arr.shape
    codes, uniques = pd.factorize(arr.ravel())  # (Q*N,), NaN -> -1
    if np.any(codes < 0):
        raise ValueError("answers contain missing values (NaN/None)")
    k = len(uniques)
    flat = np.repeat(np.arange(q), n) * k + codes
    counts = np.bincount(flat, minlength=q * k).reshape(q, k)  # (Q, K)
    p = counts / n  # (Q, K) empirical answer shares
    with np.errstate(divide="ignore", invalid="ignore"):
        if order == 1.0:
            logp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)
            return np.exp(-np.sum(p * logp, axis=1))  # exp(H)
        if order == 0.0:
            return (counts > 0).sum(axis=1).astype(float)
        s = np.sum(np.where(p > 0, p, 0.0) ** order, axis=1)  # (Q,)
        out = s ** (1.0 / (1.0 - order))
        bad = ~np.isfinite(out) | (s == 0)  # p^q underflowed (a huge order)
        if np.any(bad):  # log form: log s = m + log sum exp(q log p - m), m = q log max p
            logp = np.where(p[bad] > 0, np.log(np.where(p[bad] > 0, p[bad], 1.0)), -np.inf)
            m = order * logp.max(axis=1, keepdims=True)  # (Qb, 1)
            log_s = m[:, 0] + np.log(np.sum(np.exp(order * logp - m), axis=1))
            out[bad] = np.exp(log_s / (1.0 - order))
        return out


def answer_neff_per_question(answers, *, order: float = 1.0) -> np.ndarray:
    """Answer-level ``N_eff`` of each question, averaged over runs.

    Parameters
    ----------
    answers : array_like, shape (Q, N) or (R, Q, N)
        Final answers of a team of ``N`` agents on ``Q`` questions (``R`` runs).
    order : float
        Hill order (see :func:`hill_numbers`).

    Returns
    -------
    ndarray, shape (Q,)
        Hill number of each question's answers, mean over runs; a Series on the index
        when ``answers`` is a (Q, N) DataFrame.
    """
    arr = _as_logs(answers, "answers")
    r, q, n = arr.shape
    h = hill_numbers(arr.reshape(r * q, n), order=order).reshape(r, q)  # (R, Q)
    return _labelled(h.mean(axis=0), answers, "answer_neff")


def answer_neff(answers, *, order: float = 1.0) -> float:
    """Answer-level effective team size: mean Hill number of the team's answers.

    Parameters
    ----------
    answers : array_like, shape (Q, N) or (R, Q, N)
        Final answers (any labels) of ``N`` agents on ``Q >= 2`` questions, optionally
        over ``R`` repeated runs.
    order : float
        Hill order ``q`` (default 1: ``exp`` of the Shannon entropy).

    Returns
    -------
    float
        ``N_eff`` in ``[1, N]``: 1 for unanimity on every question, ``N`` when all
        answers differ.

    References
    ----------
    Bertalanic and Fortuna, arXiv 2606.02646 (answer-diversity level); Hill (1973).

    Examples
    --------
    >>> round(answer_neff([[0, 1, 2], [3, 4, 5]]), 12)
    3.0
    >>> answer_neff([[7, 7, 7], [1, 1, 1]])
    1.0
    """
    return float(answer_neff_per_question(answers, order=order).mean())


def mean_pairwise_correlation(x, weights=None) -> np.ndarray:
    """Mean off-diagonal Pearson correlation of the columns of ``x``.

    Parameters
    ----------
    x : array_like, shape (Q, N)
        ``N >= 2`` variables (agents) observed on ``Q`` questions.
    weights : array_like, shape (B, Q), optional
        Non-negative row weights (bootstrap counts); one result per weight row.

    Returns
    -------
    ndarray, shape () or (B,)
        ``rho_bar = (Var(sum_i z_i) - N) / (N (N - 1))`` with ``z_i`` the standardised
        columns, equal to the mean of ``numpy.corrcoef(x.T)`` off the diagonal. NaN
        where a column is constant under a weight row.
    """
    xx = check_array(x, "x", ndim=2, finite=False, min_size=0)
    q, n = xx.shape
    w = np.ones((1, q)) if weights is None else np.asarray(weights, dtype=float)
    tot = w.sum(axis=1, keepdims=True)  # (B, 1)
    m1 = (w @ xx) / tot  # (B, N) weighted means
    m2 = (w @ xx**2) / tot  # (B, N)
    var = m2 - m1**2  # (B, N)
    bad = np.any(var <= 1e-12 * np.maximum(1.0, m2), axis=1)  # constant column
    sd = np.sqrt(np.where(var > 0, var, 1.0))
    z = xx @ (1.0 / sd).T  # (Q, B): sum_i x_qi / sd_i
    zm = np.sum(w.T * z, axis=0) / tot[:, 0]  # (B,)
    zvar = np.sum(w.T * (z - zm) ** 2, axis=0) / tot[:, 0]  # (B,) Var(sum_i z_i)
    rho = (zvar - n) / (n * (n - 1))
    rho = np.where(bad, np.nan, rho)
    return rho[0] if weights is None else rho


def correctness_neff(correct, *, method: str = "kish") -> float:
    """Correctness-level effective team size (redundancy of the agents' errors).

    Parameters
    ----------
    correct : array_like, shape (Q, N) or (R, Q, N)
        0/1 (or bool) correctness of ``N`` agents on ``Q >= 2`` questions, over ``R``
        runs of the same team.
    method : {"kish", "variance"}
        ``"kish"``: ``N / (1 + (N - 1) rho_bar)`` with ``rho_bar`` the mean pairwise
        correlation of correctness across questions (averaged over runs).
        ``"variance"``: needs ``R >= 2`` runs; ``mean_q p_q (1 - p_q) /
        mean_q Var_runs(team mean correctness)`` (within-question redundancy).

    Returns
    -------
    float
        ``N_eff``; ``N`` for independent agents, ``N / (1 + (N - 1) rho)`` for
        equicorrelated ones, 1 for a team of clones.

    Raises
    ------
    ValueError
        On non-binary values, NaN, fewer than 2 questions, a constant agent column
        (its correlation is undefined) or an unknown method.

    References
    ----------
    Kish (1965), Survey Sampling; Bertalanic and Fortuna, arXiv 2606.02646.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> shared = rng.random((4000, 1)) < 0.5
    >>> clones = np.repeat(shared, 3, axis=1)
    >>> correctness_neff(clones)
    1.0
    """
    if method not in ("kish", "variance"):
        raise ValueError(f"unknown method {method!r}; use 'kish' or 'variance'")
    arr = _as_logs(correct, "correct")
    if arr.dtype == bool:
        arr = arr.astype(float)
    try:
        arr = arr.astype(float)
    except (TypeError, ValueError) as err:
        raise TypeError("correct must hold 0/1 or boolean values") from err
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError("correct must hold only 0/1 (or boolean) values")
    r, _, n = arr.shape
    if n == 1:
        return 1.0
    if method == "kish":
        rhos = np.array([mean_pairwise_correlation(arr[i]) for i in range(r)])  # (R,)
        if np.any(np.isnan(rhos)):
            const = np.where((arr.min(axis=1) == arr.max(axis=1)).any(axis=0))[0]
            raise ValueError(
                f"agent column(s) {const.tolist()} are constant (always right or always "
                "wrong), so their correlation is undefined; drop them or use more questions"
            )
        return float(n / (1.0 + (n - 1.0) * rhos.mean()))  # Kish's design effect
    if r < 2:
        raise ValueError("method='variance' needs repeated runs: correct of shape (R>=2, Q, N)")
    p = arr.mean(axis=(0, 2))  # (Q,) per-question accuracy
    num = p * (1 - p) * (r * n) / (r * n - 1)  # (Q,) unbiased Bernoulli variance
    den = arr.mean(axis=2).var(axis=0, ddof=1)  # (Q,) Var over runs of the team mean
    if den.mean() <= 0:
        raise ValueError("team mean correctness never varies across runs; N_eff is undefined")
    return float(num.mean() / den.mean())
