"""A stochastic multi-agent answer simulator standing in for LLM agent teams.

The paper runs teams of 1 to 30 LLM agents (self-consistency, self-correction, debate,
a random-noise placebo, heterogeneous and sparsely connected teams). Offline we simulate
them: each model family has, per question, an answer prior shared by all its agents
(the source of redundancy), each agent perturbs it with idiosyncratic Dirichlet noise,
answers by sampling, and in later rounds re-evaluates (sharpens its belief) and, in
debate, adds a fixed mass per peer answer it sees (opinion dynamics).

Deviations from the paper
-------------------------
- Substitute: the whole simulator replaces real LLM agents (grade C). Its design is
  inferred: a logistic difficulty model for the correct-answer mass (shared question
  difficulty plus family-specific deviation), Dirichlet distractor profiles per family,
  Dirichlet agent noise, re-evaluation ``b <- normalise(b^gamma)`` and additive peer
  influence ``b <- normalise(b + w * sum_j onehot(a_j))`` (the form under which the
  mean-field ``k * tau`` statement holds).
- The placebo replaces each peer answer by a uniformly random answer.
- Heterogeneous teams assign agents to families round-robin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

__all__ = ["CONDITIONS", "Task", "TeamRun", "debate_update", "make_task", "simulate_team"]

#: Interaction protocols of :func:`simulate_team`.
CONDITIONS = ("self_consistency", "self_correction", "debate", "placebo")


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
    family_spread: float = 0.5,
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
        ``F >= 1`` model families with independent distractor profiles.
    accuracy : float
        Correct-answer mass of a question of average difficulty, in (0, 1).
    difficulty_spread : float
        Std of the shared question difficulty on the logit scale (``>= 0``).
    family_spread : float
        Std of the family-specific deviation on the logit scale (``>= 0``).
    distractor_concentration : float
        Dirichlet concentration of the wrong-answer profile (small: a few dominant
        wrong answers; ``> 0``).
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
        if int(val) != val or val < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {val}")
    if not 0 < accuracy < 1:
        raise ValueError(f"accuracy must be in (0, 1), got {accuracy}")
    if difficulty_spread < 0 or family_spread < 0:
        raise ValueError("difficulty_spread and family_spread must be >= 0")
    if distractor_concentration <= 0:
        raise ValueError(f"distractor_concentration must be > 0, got {distractor_concentration}")
    rng = np.random.default_rng(seed)
    f, q, a = num_families, num_questions, num_answers
    z = rng.standard_normal(q)  # (Q,) shared difficulty
    e = rng.standard_normal((f, q))  # (F, Q) family deviation
    p = expit(logit(accuracy) + difficulty_spread * z + family_spread * e)  # (F, Q)
    wrong = rng.dirichlet(np.full(a - 1, distractor_concentration), size=(f, q))  # (F, Q, A-1)
    correct = rng.integers(0, a, size=q)  # (Q,)
    priors = np.zeros((f, q, a))
    rows = np.arange(q)
    wrong_idx = (correct[:, None] + 1 + np.arange(a - 1)) % a  # (Q, A-1)
    priors[:, rows, correct] = p  # correct-answer mass
    priors[:, rows[:, None], wrong_idx] = (1 - p)[..., None] * wrong  # distractors
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
    accuracy_by_round : ndarray, shape (T + 1,)
        Mean agent accuracy after each round (round 0: initial answers; ``T = 0`` for
        self-consistency).
    """

    answers: np.ndarray
    correct: np.ndarray
    accuracy_by_round: np.ndarray


def debate_update(beliefs, peer_counts, *, influence: float, sharpen: float) -> np.ndarray:
    """One round of peer influence then re-evaluation.

    Parameters
    ----------
    beliefs : array_like, shape (..., A)
        Current beliefs ``b`` (rows sum to 1).
    peer_counts : array_like, shape (..., A)
        How many of the peers seen this round gave each answer (zeros: no peers).
    influence : float
        ``w`` in [0, 1], the mass added per peer answer.
    sharpen : float
        ``gamma > 0``, the re-evaluation exponent (1: none).

    Returns
    -------
    ndarray, shape (..., A)
        ``normalise(normalise(b + w * counts)^gamma)``.

    Examples
    --------
    >>> debate_update([0.5, 0.5], [2, 0], influence=0.5, sharpen=1.0).tolist()
    [0.75, 0.25]
    """
    b = np.asarray(beliefs, dtype=float) + influence * np.asarray(peer_counts, dtype=float)
    b = b / b.sum(axis=-1, keepdims=True)  # peer influence
    if sharpen != 1.0:
        b = b**sharpen  # re-evaluation
        b = b / b.sum(axis=-1, keepdims=True)
    return b


def _sample(rng: np.random.Generator, beliefs: np.ndarray) -> np.ndarray:
    cum = np.cumsum(beliefs, axis=-1)  # (..., A)
    u = rng.random((*beliefs.shape[:-1], 1)) * cum[..., -1:]
    return np.minimum((cum < u).sum(axis=-1), beliefs.shape[-1] - 1)  # (...)


def simulate_team(
    task: Task,
    *,
    num_agents: int,
    condition: str = "self_consistency",
    families: int = 1,
    peers: int | None = None,
    rounds: int = 3,
    influence: float = 0.1,
    sharpen: float = 1.5,
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
        Independent samples; ``rounds`` of re-evaluation; re-evaluation plus influence of
        ``peers`` random peers per round; the same with uniformly random peer answers.
    families : int
        Families in the team (agents assigned round-robin; 1: homogeneous).
    peers : int, optional
        ``k`` peers seen per round (default ``N - 1``: dense); ``0 <= k <= N - 1``.
    rounds : int
        ``tau >= 1`` interaction rounds (unused for self-consistency).
    influence : float
        ``w`` in [0, 1].
    sharpen : float
        ``gamma > 0`` (1 disables re-evaluation).
    agent_concentration : float
        Dirichlet concentration of an agent's belief around its family prior (``> 0``;
        large: agents share the prior exactly).
    num_runs : int
        Independent repetitions ``R`` of the team.
    seed : int
        Seed of the agents' randomness (the task has its own).

    Returns
    -------
    TeamRun
        ``answers`` and ``correct`` of shape (R, Q, N) and ``accuracy_by_round``.

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
    if int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds}")
    if not 0 <= influence <= 1:
        raise ValueError(f"influence must be in [0, 1], got {influence}")
    if not sharpen > 0 or not np.isfinite(sharpen):
        raise ValueError(f"sharpen must be a finite number > 0, got {sharpen}")
    if not agent_concentration > 0:
        raise ValueError(f"agent_concentration must be > 0, got {agent_concentration}")
    if int(num_runs) != num_runs or num_runs < 1:
        raise ValueError(f"num_runs must be an integer >= 1, got {num_runs}")

    rng = np.random.default_rng(seed)
    r, q, a = int(num_runs), task.num_questions, task.num_answers
    fam = np.arange(n) % families  # (N,)
    prior = np.transpose(task.priors[fam], (1, 0, 2))  # (Q, N, A)
    alpha = agent_concentration * prior[None] + 1e-6  # (1, Q, N, A)
    g = rng.gamma(np.broadcast_to(alpha, (r, q, n, a)))  # (R, Q, N, A) Dirichlet draws
    b = g / g.sum(axis=-1, keepdims=True)
    ans = _sample(rng, b)  # (R, Q, N)
    truth = task.correct_answer[None, :, None]  # (1, Q, 1)
    acc = [float((ans == truth).mean())]
    if condition != "self_consistency":
        eye = np.eye(a)
        for _ in range(int(rounds)):
            if condition == "self_correction" or k == 0:
                counts = np.zeros_like(b)
            elif condition == "placebo":
                counts = rng.multinomial(k, np.full(a, 1.0 / a), size=(r, q, n)).astype(float)
            elif k == n - 1:  # dense: everyone else's answer
                onehot = eye[ans]  # (R, Q, N, A)
                counts = onehot.sum(axis=2, keepdims=True) - onehot
            else:  # k random distinct peers per agent and question
                keys = rng.random((r, q, n, n))
                keys[..., np.arange(n), np.arange(n)] = 2.0  # never oneself
                idx = np.argpartition(keys, k - 1, axis=-1)[..., :k]  # (R, Q, N, k)
                peer_ans = np.take_along_axis(
                    np.broadcast_to(ans[:, :, None, :], (r, q, n, n)), idx, axis=-1
                )
                base = np.arange(r * q * n)[:, None] * a
                counts = (
                    np.bincount((base + peer_ans.reshape(-1, k)).ravel(), minlength=r * q * n * a)
                    .reshape(r, q, n, a)
                    .astype(float)
                )
            b = debate_update(b, counts, influence=influence, sharpen=sharpen)
            ans = _sample(rng, b)
            acc.append(float((ans == truth).mean()))
    return TeamRun(
        answers=ans,
        correct=np.broadcast_to(ans == truth, ans.shape).copy(),
        accuracy_by_round=np.array(acc),
    )
