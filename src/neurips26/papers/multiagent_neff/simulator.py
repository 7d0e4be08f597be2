"""A stochastic multi-agent answer simulator standing in for LLM agent teams.

The paper runs teams of 1 to 30 LLM agents (self-consistency, self-correction, debate,
a random-noise placebo, heterogeneous and sparsely connected teams). Offline we simulate
them. Each model family has, per question, an answer prior shared by all its agents (the
source of redundancy: agents of one family share its blind spots); families draw their
question difficulty and their wrong-answer profile independently of each other. An agent's
own evidence is the family prior perturbed by idiosyncratic Dirichlet noise. In each round
every agent announces an answer sampled from its belief; then it updates its belief as a
Bayesian (log-linear, softmax) combination of its own evidence and the answers its peers
announced, each peer's answer counting as a likelihood factor ``exp(w)`` for that answer,
and re-evaluates (sharpens) the result:

``log b' = gamma * (log b + w * n_peers) + const``    (Eq. S1)

with ``n_peers`` the count of each answer among the ``k`` peers seen this round. For
small ``w`` the expected change of ``log b`` over ``tau`` rounds is ``w * k * tau`` times
the peers' mean answer distribution, so peer count and rounds enter through ``k * tau``
(the paper's mean-field statement). Were the peers' answers drawn from a fixed
distribution, Eq. (S1) would depend on the total peer counts only and the statement would
be exact at any ``w``; in the simulator peers re-announce after every update, and that
feedback breaks it at second order in ``w`` (what the collapse claim tests). Every peer
counts as independent evidence (a naive Bayesian), so dense influence grows with N - 1.

The placebo is content-free: instead of peers' answers the agent receives a noise
message, a centred Gaussian perturbation of its log-belief of fixed scale ``sigma`` that
does not depend on the team size and names no answer.

Deviations from the paper
-------------------------
- Substitute: the whole simulator replaces real LLM agents (grade C). Its design is
  inferred: a logistic difficulty model for the correct-answer mass with a per-family
  difficulty draw (``shared_difficulty`` of its variance common to all families),
  Dirichlet wrong-answer profiles drawn per family, Dirichlet agent noise, the log-linear
  update Eq. (S1) and a Gaussian log-belief placebo.
- Heterogeneous teams draw each agent's family at random (per run) rather than
  round-robin, so the share of same-family pairs does not depend on ``N``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

__all__ = ["CONDITIONS", "Task", "TeamRun", "debate_update", "make_task", "simulate_team"]

#: Interaction protocols of :func:`simulate_team`.
CONDITIONS = ("self_consistency", "self_correction", "debate", "placebo")

_FLOOR = 1e-9

#: Largest per-peer influence ``w`` (log-likelihood ratio of one peer answer) accepted.
MAX_INFLUENCE = 5.0


@dataclass(frozen=True)
class Task:
    """A simulated question set answered by ``F`` model families.

    Attributes
    ----------
    priors : ndarray, shape (F, Q, A)
        ``pi_{f,q}``: each family's answer distribution on each question.
    correct_answer : ndarray, shape (Q,)
        Index of the correct answer of each question.
    """

    priors: np.ndarray
    correct_answer: np.ndarray

    @property
    def num_families(self) -> int:
        return int(self.priors.shape[0])

    @property
    def num_questions(self) -> int:
        return int(self.priors.shape[1])

    @property
    def num_answers(self) -> int:
        return int(self.priors.shape[2])


def make_task(
    *,
    num_questions: int = 200,
    num_answers: int = 4,
    num_families: int = 3,
    accuracy: float = 0.6,
    difficulty_spread: float = 1.5,
    shared_difficulty: float = 0.0,
    distractor_concentration: float = 0.5,
    seed: int = 0,
) -> Task:
    """Draw a question set and each family's answer priors.

    Parameters
    ----------
    num_questions : int
        ``Q >= 2``.
    num_answers : int
        ``A >= 2`` (4 for multiple choice, 40 for free form).
    num_families : int
        ``F >= 1`` model families.
    accuracy : float
        Correct-answer mass of a question of average difficulty, in (0, 1).
    difficulty_spread : float
        Std ``s`` of a family's question difficulty on the logit scale (``>= 0``).
    shared_difficulty : float
        Share ``rho_d`` in [0, 1] of the difficulty variance common to all families:
        family ``f`` sees ``logit(p_{f,q}) = logit(accuracy) + s (sqrt(rho_d) z_q +
        sqrt(1 - rho_d) e_{f,q})``. 0 (default): families find independent questions
        hard; 1: one difficulty for all.
    distractor_concentration : float
        Dirichlet concentration of each family's wrong-answer profile, drawn
        independently per family (small: a few dominant wrong answers; ``> 0``).
    seed : int
        Seed.

    Returns
    -------
    Task
        ``priors`` (F, Q, A) and ``correct_answer`` (Q,).

    Examples
    --------
    >>> make_task(num_questions=5, num_answers=4, seed=0).priors.shape
    (3, 5, 4)
    """
    for name, val, lo in (
        ("num_questions", num_questions, 2),
        ("num_answers", num_answers, 2),
        ("num_families", num_families, 1),
    ):
        if isinstance(val, bool) or int(val) != val or val < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {val}")
    if not 0 < accuracy < 1:
        raise ValueError(f"accuracy must be in (0, 1), got {accuracy}")
    if not 0 <= difficulty_spread < np.inf:
        raise ValueError(f"difficulty_spread must be finite and >= 0, got {difficulty_spread}")
    if not 0 <= shared_difficulty <= 1:
        raise ValueError(f"shared_difficulty must be in [0, 1], got {shared_difficulty}")
    if not 0 < distractor_concentration < np.inf:
        raise ValueError(f"distractor_concentration must be > 0, got {distractor_concentration}")
    rng = np.random.default_rng(seed)
    f, q, a = int(num_families), int(num_questions), int(num_answers)
    z = rng.standard_normal(q)  # (Q,) difficulty common to all families
    e = rng.standard_normal((f, q))  # (F, Q) each family's own difficulty
    d = np.sqrt(shared_difficulty) * z + np.sqrt(1.0 - shared_difficulty) * e  # (F, Q)
    p = expit(logit(accuracy) + difficulty_spread * d)  # (F, Q) correct-answer mass
    wrong = rng.dirichlet(np.full(a - 1, distractor_concentration), size=(f, q))  # (F, Q, A-1)
    correct = rng.integers(0, a, size=q)  # (Q,)
    priors = np.zeros((f, q, a))
    rows = np.arange(q)
    wrong_idx = (correct[:, None] + 1 + np.arange(a - 1)) % a  # (Q, A-1)
    priors[:, rows, correct] = p
    priors[:, rows[:, None], wrong_idx] = (1 - p)[..., None] * wrong  # per-family errors
    return Task(priors=priors, correct_answer=correct)


@dataclass(frozen=True)
class TeamRun:
    """Simulated answers of one team.

    Attributes
    ----------
    answers : ndarray, shape (R, Q, N)
        Final answer index of each agent, per run and question.
    correct : ndarray, shape (R, Q, N)
        Boolean correctness of the final answers.
    accuracy_by_run : ndarray, shape (R, T + 1)
        Mean agent accuracy of each run after each round (round 0: initial answers;
        ``T = 0`` for self-consistency).
    """

    answers: np.ndarray
    correct: np.ndarray
    accuracy_by_run: np.ndarray

    @property
    def accuracy_by_round(self) -> np.ndarray:
        """Mean agent accuracy after each round over all runs, shape (T + 1,)."""
        return self.accuracy_by_run.mean(axis=0)


def _normalise_log(lb: np.ndarray) -> np.ndarray:
    lb = lb - lb.max(axis=-1, keepdims=True)
    b = np.exp(lb)
    return b / b.sum(axis=-1, keepdims=True)


def debate_update(beliefs, peer_counts, *, influence: float, sharpen: float) -> np.ndarray:
    """One round of peer influence (Bayesian, log-linear) then re-evaluation, Eq. (S1).

    Parameters
    ----------
    beliefs : array_like, shape (..., A)
        Current beliefs ``b`` (rows sum to 1, entries >= 0).
    peer_counts : array_like, shape (..., A)
        How many of the peers seen this round gave each answer (zeros: no peers). Any
        real-valued log-evidence (e.g. the placebo's noise with ``influence=1``) is
        accepted. Beliefs are floored at 1e-9 before the logarithm, so an answer with no
        own mass can still be adopted from peers.
    influence : float
        ``w >= 0``, the log-likelihood ratio one peer answer carries.
    sharpen : float
        ``gamma > 0``, the re-evaluation exponent (1: none).

    Returns
    -------
    ndarray, shape (..., A)
        ``normalise((b * exp(w * counts))^gamma)``.

    Examples
    --------
    >>> debate_update([0.5, 0.5], [2, 0], influence=np.log(3) / 2, sharpen=1.0).round(6).tolist()
    [0.75, 0.25]
    """
    b = np.asarray(beliefs, dtype=float)
    lb = np.log(np.maximum(b, _FLOOR))  # an answer without own mass can still be adopted
    lb = sharpen * (lb + influence * np.asarray(peer_counts, dtype=float))  # Eq. (S1)
    return _normalise_log(lb)


def _sample(rng: np.random.Generator, beliefs: np.ndarray) -> np.ndarray:
    cum = np.cumsum(beliefs, axis=-1)  # (..., A)
    u = rng.random((*beliefs.shape[:-1], 1)) * cum[..., -1:]
    return np.minimum((cum < u).sum(axis=-1), beliefs.shape[-1] - 1)  # (...)


def _peer_counts(rng, ans: np.ndarray, k: int, a: int) -> np.ndarray:
    """Counts (R, Q, N, A) of the answers of ``k`` distinct random peers of each agent."""
    r, q, n = ans.shape
    eye = np.eye(a)
    if k == n - 1:  # dense: everyone else's answer
        onehot = eye[ans]  # (R, Q, N, A)
        return onehot.sum(axis=2, keepdims=True) - onehot
    keys = rng.random((r, q, n, n))
    keys[..., np.arange(n), np.arange(n)] = 2.0  # never oneself
    idx = np.argpartition(keys, k - 1, axis=-1)[..., :k]  # (R, Q, N, k)
    peer_ans = np.take_along_axis(np.broadcast_to(ans[:, :, None, :], (r, q, n, n)), idx, axis=-1)
    base = np.arange(r * q * n)[:, None] * a
    flat = np.bincount((base + peer_ans.reshape(-1, k)).ravel(), minlength=r * q * n * a)
    return flat.reshape(r, q, n, a).astype(float)


def simulate_team(
    task: Task,
    *,
    num_agents: int,
    condition: str = "self_consistency",
    families: int = 1,
    peers: int | None = None,
    rounds: int = 3,
    influence: float = 0.5,
    sharpen: float = 1.5,
    placebo_noise: float | None = None,
    agent_concentration: float = 10.0,
    num_runs: int = 1,
    seed: int = 0,
) -> TeamRun:
    """Simulate a team of ``N`` agents answering every question of ``task``.

    Parameters
    ----------
    task : Task
        Question set and family priors (:func:`make_task`).
    num_agents : int
        Team size ``N >= 1``.
    condition : {"self_consistency", "self_correction", "debate", "placebo"}
        Independent samples; ``rounds`` of re-evaluation; re-evaluation plus the answers
        of ``peers`` random peers per round, Eq. (S1); re-evaluation plus a content-free
        noise message per round.
    families : int
        Families the team draws from (1: homogeneous, family 0). Each agent's family is
        drawn uniformly at random per run, so any two agents share a family with
        probability ``1 / families`` whatever the team size.
    peers : int, optional
        ``k`` peers seen per round (default ``N - 1``: dense); ``0 <= k <= N - 1``.
    rounds : int
        ``tau >= 1`` interaction rounds (unused for self-consistency).
    influence : float
        ``w`` in [0, 5]: the log-likelihood ratio one peer answer carries.
    sharpen : float
        ``gamma > 0`` (1 disables re-evaluation).
    placebo_noise : float, optional
        ``sigma`` in [0, 5]: std of the placebo's Gaussian log-belief noise per answer and
        round (independent of ``N``; it names no answer). Default ``w / sqrt(A)``: the
        noise message has the expected squared size (after centring) of one peer answer's
        log-evidence ``w * onehot``, pointing in a random direction.
    agent_concentration : float
        Dirichlet concentration of an agent's belief around its family prior (``> 0``;
        large: agents share the prior exactly).
    num_runs : int
        Independent repetitions ``R`` of the team.
    seed : int
        Seed of the agents' randomness (the task has its own). Own evidence and answer
        sampling use one stream, peer choice and placebo noise another, so conditions run
        with the same seed share their agents' initial beliefs and sampling draws (common
        random numbers for paired comparisons).

    Returns
    -------
    TeamRun
        ``answers`` and ``correct`` of shape (R, Q, N), ``accuracy_by_run`` (R, T + 1)
        and its mean ``accuracy_by_round`` (T + 1,).

    Examples
    --------
    >>> task = make_task(num_questions=20, seed=0)
    >>> run = simulate_team(task, num_agents=5, condition="debate", seed=1)
    >>> run.answers.shape, run.accuracy_by_round.shape
    ((1, 20, 5), (4,))
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see make_task), got {type(task).__name__}")
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; valid: {', '.join(CONDITIONS)}")
    if int(num_agents) != num_agents or num_agents < 1:
        raise ValueError(f"num_agents must be an integer >= 1, got {num_agents}")
    if int(families) != families or not 1 <= families <= task.num_families:
        raise ValueError(
            f"families must be in [1, {task.num_families}] for this task, got {families}"
        )
    n = int(num_agents)
    k = n - 1 if peers is None else peers
    if int(k) != k or not 0 <= k <= n - 1:
        raise ValueError(f"peers must be an integer in [0, N-1] = [0, {n - 1}], got {peers}")
    k = int(k)
    if int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds}")
    if not 0 <= influence <= MAX_INFLUENCE:
        raise ValueError(f"influence must be in [0, {MAX_INFLUENCE}], got {influence}")
    if not sharpen > 0 or not np.isfinite(sharpen):
        raise ValueError(f"sharpen must be a finite number > 0, got {sharpen}")
    if placebo_noise is None:
        placebo_noise = influence / np.sqrt(task.num_answers)
    if not 0 <= placebo_noise <= MAX_INFLUENCE:
        raise ValueError(f"placebo_noise must be in [0, {MAX_INFLUENCE}], got {placebo_noise}")
    if not 0 < agent_concentration < np.inf:
        raise ValueError(f"agent_concentration must be finite and > 0, got {agent_concentration}")
    if int(num_runs) != num_runs or num_runs < 1:
        raise ValueError(f"num_runs must be an integer >= 1, got {num_runs}")

    rng = np.random.default_rng(seed)  # own evidence and answer sampling
    msg_rng = np.random.default_rng([seed, 1])  # who reads whom, placebo noise
    r, q, a = int(num_runs), task.num_questions, task.num_answers
    if families == 1:
        prior = np.transpose(task.priors[:1], (1, 0, 2))[None]  # (1, Q, 1, A)
    else:  # each agent's model family, drawn per run
        fam = rng.integers(0, families, size=(r, n))  # (R, N)
        prior = np.transpose(task.priors[fam], (0, 2, 1, 3))  # (R, Q, N, A)
    alpha = agent_concentration * prior + 1e-6
    g = rng.gamma(np.broadcast_to(alpha, (r, q, n, a)))  # (R, Q, N, A) Dirichlet draws
    b = g / g.sum(axis=-1, keepdims=True)  # own evidence
    ans = _sample(rng, b)  # (R, Q, N) announced answers, round 0
    truth = task.correct_answer[None, :, None]  # (1, Q, 1)
    acc = [(ans == truth).mean(axis=(1, 2))]  # (R,) per round
    if condition != "self_consistency":
        for _ in range(int(rounds)):
            if condition == "debate" and k > 0:
                b = debate_update(
                    b, _peer_counts(msg_rng, ans, k, a), influence=influence, sharpen=sharpen
                )
            elif condition == "placebo":
                noise = placebo_noise * msg_rng.standard_normal(b.shape)  # (R, Q, N, A), no answers
                b = debate_update(b, noise, influence=1.0, sharpen=sharpen)
            else:  # self-correction (or debate without peers): re-evaluation only
                b = debate_update(b, 0.0, influence=0.0, sharpen=sharpen)
            ans = _sample(rng, b)
            acc.append((ans == truth).mean(axis=(1, 2)))
    return TeamRun(
        answers=ans,
        correct=np.broadcast_to(ans == truth, ans.shape).copy(),
        accuracy_by_run=np.stack(acc, axis=1),
    )
