"""Training runs for ADIS-Law: one base run, checkpoints, and injection branches.

A WSD schedule holds its peak learning rate through the stable phase, so the stable
phases of budgets ``S < 2S < 4S`` are prefixes of one another: one base run through the
longest stable phase, checkpointed at each budget's annealing start, serves them all.
From each checkpoint the base anneal (no domain data) runs to the budget's end and is
checkpointed at every injection start ``s_inj(lambda)``; every policy then branches from
the checkpoint at its own ``s_inj`` (the steps before it are the base anneal's). The
checkpoints hold the model and the AdamW state, so a branch continues the base run
exactly (a test checks that a branch with ``r = 0`` on the base schedule reproduces it).

The batch of step ``i`` is drawn from a generator seeded by ``(seed, i)``: every policy
sees the same general-domain windows at the same step, and a domain share ``r`` replaces
the first ``round(r B)`` of them with domain windows (common random numbers, so policy
differences are not sampling noise).

The model is :class:`neurips26.common.models.GPT`; the loop is
:func:`neurips26.common.train.train`, given our AdamW (restored from a checkpoint) and the
schedule as a per-step multiplier.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.data import ByteTokenizer, stdlib_source_text
from neurips26.common.data import train_val_split as _split
from neurips26.common.models import GPT, GPTConfig
from neurips26.common.torch import get_device, num_parameters, seeded
from neurips26.common.train import evaluate, train

from ._checks import check_int, check_real
from .law import Trajectory
from .schedule import InjectionPolicy, Schedule, wsd_schedule

__all__ = [
    "Checkpoint",
    "InjectionCorpora",
    "TrainSpec",
    "base_runs",
    "load_corpora",
    "mixed_batch",
    "run_injection",
]


@dataclass(frozen=True)
class InjectionCorpora:
    """Byte-token streams of the general and the target domain, each split in two.

    Attributes
    ----------
    general_train, general_val : ndarray of int64
        General domain: the standard library's Python sources (code).
    target_train, target_val : ndarray of int64
        Target domain: ``pydoc_data.topics`` (English prose about Python).
    """

    general_train: np.ndarray
    general_val: np.ndarray
    target_train: np.ndarray
    target_val: np.ndarray


def _split_topics(val_fraction: float) -> tuple[str, str]:
    """``pydoc_data.topics`` cut by topic: the last topics (sorted keys) are held out.

    Several topics repeat passages of others (the mapping-type methods, for instance); a
    held-out topic sharing a paragraph of 80+ characters with the training topics goes
    back to training, so no held-out passage is ever trained on.
    """
    from pydoc_data.topics import topics

    keys = sorted(topics)
    texts = [topics[k].strip() for k in keys]
    total = sum(len(t) for t in texts)
    n_val, acc = 0, 0
    while acc < val_fraction * total and n_val < len(keys) - 1:
        n_val += 1
        acc += len(texts[-n_val])
    train = texts[: len(keys) - n_val]
    val = []
    for text in texts[len(keys) - n_val:]:
        train_text = "\n\n".join(train)
        paras = [p for p in text.split("\n\n") if len(p.strip()) >= 80]
        (train if any(p in train_text for p in paras) else val).append(text)
    return "\n\n".join(train), "\n\n".join(val)


def load_corpora(*, general_chars: int = 2_000_000, val_fraction: float = 0.1) -> InjectionCorpora:
    """The two real domains that ship with Python, byte-tokenised, with held-out parts.

    General: the standard library's sources in sorted path order, the last
    ``val_fraction`` held out (different files but for the one at the cut). Target:
    ``pydoc_data.topics``, split by topic (:func:`_split_topics`).
    """
    general_chars = check_int("general_chars", general_chars, min_value=10_000)
    val_fraction = check_real("val_fraction", val_fraction, low=0.0, high=0.5, low_open=True)
    tok = ByteTokenizer()
    gen = _split(tok.encode(stdlib_source_text(general_chars)), 256, val_fraction=val_fraction)
    t_train, t_val = _split_topics(val_fraction)
    return InjectionCorpora(gen.train, gen.val, tok.encode(t_train), tok.encode(t_val))


@dataclass(frozen=True)
class TrainSpec:
    """How every run is trained and evaluated.

    Attributes
    ----------
    batch_size, block_size : int
        ``B`` sequences of ``T`` tokens per step.
    peak_lr : float
        ``eta_0`` of the base schedule.
    weight_decay : float
        AdamW's.
    warmup_frac, anneal_frac, min_lr_ratio, rewarm_frac : float
        The WSD schedule (:func:`wsd_schedule`).
    eval_every : int
        Validation losses are logged after steps ``eval_every - 1, 2 eval_every - 1, ...``
        and after the last step.
    eval_windows : int
        Held-out windows per domain in each evaluation (fixed, the first ones).
    seed : int
    device : str
    """

    batch_size: int = 16
    block_size: int = 64
    peak_lr: float = 3e-3
    weight_decay: float = 0.0
    warmup_frac: float = 0.02
    anneal_frac: float = 0.2
    min_lr_ratio: float = 0.1
    rewarm_frac: float = 0.02
    eval_every: int = 10
    eval_windows: int = 16
    seed: int = 0
    device: str = "cpu"

    def schedule(self, total_steps: int, policy: InjectionPolicy | None = None) -> Schedule:
        """The WSD schedule of a budget (and policy)."""
        return wsd_schedule(total_steps, peak_lr=self.peak_lr, warmup_frac=self.warmup_frac,
                            anneal_frac=self.anneal_frac, min_lr_ratio=self.min_lr_ratio,
                            policy=policy, rewarm_frac=self.rewarm_frac)

    def logged(self, start: int, stop: int) -> list[int]:
        """Steps in ``[start, stop)`` after which the losses are logged."""
        e = self.eval_every
        steps = [s for s in range(start, stop) if s % e == e - 1]
        if stop - 1 >= start and (not steps or steps[-1] != stop - 1):
            steps.append(stop - 1)
        return steps


@dataclass(frozen=True)
class Checkpoint:
    """Model and optimiser state after ``step`` steps (``step`` = next step to run)."""

    step: int
    model_state: dict
    optim_state: dict


def mixed_batch(corpora: InjectionCorpora, step: int, mix_ratio: float, *, batch_size: int,
                block_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of step ``step``: ``round(r B)`` domain windows, the rest general.

    Returns
    -------
    x, y : torch.LongTensor, shape (B, T)
        Rows ``0..round(r B) - 1`` are target-domain windows.
    """
    check_int("step", step, min_value=0)
    mix_ratio = check_real("mix_ratio", mix_ratio, low=0.0, high=1.0)
    check_int("batch_size", batch_size, min_value=1)
    check_int("block_size", block_size, min_value=1)
    gen = torch.Generator().manual_seed((int(seed) * 1_000_003 + step) % 2**63)
    n_dom = round(mix_ratio * batch_size)
    offs = torch.arange(block_size)
    g_data = torch.as_tensor(corpora.general_train)
    t_data = torch.as_tensor(corpora.target_train)
    g_start = torch.randint(len(g_data) - block_size - 1, (batch_size,), generator=gen)
    t_start = torch.randint(len(t_data) - block_size - 1, (batch_size,), generator=gen)
    gx = g_data[g_start[:, None] + offs]
    gy = g_data[g_start[:, None] + offs + 1]
    if n_dom:
        gx[:n_dom] = t_data[t_start[:n_dom, None] + offs]
        gy[:n_dom] = t_data[t_start[:n_dom, None] + offs + 1]
    return gx, gy


class _Runner:
    """Shared state of one model size: corpora, eval windows, the model and optimiser."""

    def __init__(self, model_cfg: GPTConfig, corpora: InjectionCorpora, spec: TrainSpec):
        if not isinstance(model_cfg, GPTConfig):
            raise TypeError(f"model_cfg must be a GPTConfig, got {type(model_cfg).__name__}")
        if not isinstance(corpora, InjectionCorpora):
            raise TypeError(f"corpora must be InjectionCorpora, got {type(corpora).__name__}")
        if not isinstance(spec, TrainSpec):
            raise TypeError(f"spec must be a TrainSpec, got {type(spec).__name__}")
        self.cfg, self.corpora, self.spec = model_cfg, corpora, spec
        self.dev = get_device(spec.device)
        t = spec.block_size
        self.val = {}
        for name, data in (("general", corpora.general_val), ("target", corpora.target_val)):
            data = torch.as_tensor(data)
            n = min(spec.eval_windows, (len(data) - 1) // t)
            x = data[: n * t].view(n, t)
            y = data[1 : n * t + 1].view(n, t)
            self.val[name] = [(x.to(self.dev), y.to(self.dev))]

    def fresh(self) -> tuple[GPT, torch.optim.Optimizer]:
        with seeded(self.spec.seed):
            model = GPT(self.cfg)
        model.to(self.dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1.0, weight_decay=self.spec.weight_decay)
        return model, opt

    def restore(self, ckpt: Checkpoint) -> tuple[GPT, torch.optim.Optimizer]:
        model, opt = self.fresh()
        model.load_state_dict(ckpt.model_state)
        # load_state_dict keeps same-device tensors by reference: copy, or training the
        # branch would write into the checkpoint's AdamW moments
        opt.load_state_dict(copy.deepcopy(ckpt.optim_state))
        return model, opt

    @staticmethod
    def snapshot(step: int, model: GPT, opt: torch.optim.Optimizer) -> Checkpoint:
        return Checkpoint(step, copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()))

    def losses(self, model: GPT) -> tuple[float, float]:
        out = tuple(evaluate(model, self.val[k], device=self.spec.device)
                    for k in ("general", "target"))
        model.train()
        return out  # type: ignore[return-value]

    def segment(self, model, opt, schedule: Schedule, start: int, stop: int,
                log: list, snapshots: Sequence[int] = ()) -> dict[int, Checkpoint]:
        """Train steps ``start..stop-1`` of ``schedule``; log; snapshot before given steps."""
        spec, ckpts = self.spec, {}
        logged = set(spec.logged(start, stop))
        want = set(snapshots)
        if start in want:
            ckpts[start] = self.snapshot(start, model, opt)
        if stop <= start:
            return ckpts
        for g in opt.param_groups:
            g["lr"] = 1.0  # the schedule multiplier is then the absolute learning rate

        def batches():
            for s in range(start, stop):
                yield mixed_batch(self.corpora, s, float(schedule.mix[s]),
                                  batch_size=spec.batch_size, block_size=spec.block_size,
                                  seed=spec.seed)

        def callback(k, _loss, m):
            s = start + k
            if s in logged:
                log.append((s, *self.losses(m)))
            if s + 1 in want:
                ckpts[s + 1] = self.snapshot(s + 1, m, opt)
            return False

        train(model, batches(), max_iter=stop - start, lr=1.0, seed=spec.seed,
              device=spec.device, optimizer=opt, lr_schedule=lambda k: schedule.lrs[start + k],
              callback=callback, progress=False)
        return ckpts


def _trajectory(schedule: Schedule, log: list, name: str, num_params: float) -> Trajectory:
    arr = np.array(log, dtype=float).reshape(-1, 3)
    return Trajectory.from_schedule(schedule, arr[:, 0].astype(int), arr[:, 1], arr[:, 2],
                                    name=name, num_params=num_params)


@dataclass(frozen=True)
class BaseRuns:
    """The base run of one model size.

    Attributes
    ----------
    trajectories : dict of int to Trajectory
        Budget ``S`` -> the base trajectory (no domain data) logged from step 0 to ``S``.
    checkpoints : dict of (int, int) to Checkpoint
        ``(S, s)`` -> the state before step ``s`` of budget ``S``'s base anneal
        (``s`` = the annealing start or an injection start).
    num_params : int
        Non-embedding parameters of the model.
    """

    trajectories: dict
    checkpoints: dict
    num_params: int


def base_runs(model_cfg: GPTConfig, corpora: InjectionCorpora, spec: TrainSpec, *,
              budgets: Sequence[int], fractions: Sequence[float]) -> BaseRuns:
    """One base run through the longest stable phase, then each budget's base anneal.

    Parameters
    ----------
    model_cfg : GPTConfig
    corpora : InjectionCorpora
    spec : TrainSpec
    budgets : sequence of int
        Total steps ``S`` of each budget.
    fractions : sequence of float
        The ``lambda`` values whose injection starts get checkpoints.
    """
    runner = _Runner(model_cfg, corpora, spec)
    budgets = sorted({check_int("budgets", b, min_value=1) for b in budgets})
    if not budgets:
        raise ValueError("budgets must hold at least one budget")
    fractions = [InjectionPolicy(f, 0.0, spec.peak_lr).fraction for f in fractions]
    scheds = {b: spec.schedule(b) for b in budgets}
    starts = {b: scheds[b].anneal_start for b in budgets}
    stable_log: list = []
    model, opt = runner.fresh()
    # The stable phases are nested: run the longest once, snapshot at each anneal start.
    longest = scheds[budgets[-1]]
    stable_ckpts = runner.segment(model, opt, longest, 0, starts[budgets[-1]], stable_log,
                                  snapshots=list(starts.values()))
    trajs, ckpts = {}, {}
    n_params = num_parameters(model) - model.tok_emb.weight.numel() - (
        model.pos_emb.weight.numel() if model.pos_emb is not None else 0)
    for b in budgets:
        sch = scheds[b]
        inj = sorted({spec.schedule(b, InjectionPolicy(f, 0.0, spec.peak_lr)).injection_start
                      for f in fractions})
        model, opt = runner.restore(stable_ckpts[starts[b]])
        log = [row for row in stable_log if row[0] < starts[b]]
        got = runner.segment(model, opt, sch, starts[b], b, log, snapshots=inj)
        got[starts[b]] = stable_ckpts[starts[b]]
        for s, c in got.items():
            ckpts[(b, s)] = c
        trajs[b] = _trajectory(sch, log, f"base S={b}", float(n_params))
    return BaseRuns(trajs, ckpts, int(n_params))


def continue_base(model_cfg: GPTConfig, corpora: InjectionCorpora, *, total_steps: int,
                  start: int, base: BaseRuns, spec: TrainSpec) -> Trajectory:
    """Continue budget ``total_steps``'s base anneal from its checkpoint before ``start``.

    Under the ``spec`` that trained ``base`` this reproduces the base run after ``start``;
    under another ``spec.seed`` its batches are drawn afresh, a replicate of the base run
    after ``start``. With :func:`run_injection` under the same other seed it gives a
    replicate of a branch's deviation from the base run (the noise ceiling of a law fitted
    to one seed's deviations).

    Returns
    -------
    Trajectory
        The base schedule, logged from ``start`` to ``total_steps``.
    """
    if not isinstance(base, BaseRuns):
        raise TypeError(f"base must be BaseRuns, got {type(base).__name__}")
    runner = _Runner(model_cfg, corpora, spec)
    key = (check_int("total_steps", total_steps, min_value=1), check_int("start", start,
                                                                         min_value=0))
    if key not in base.checkpoints:
        raise ValueError(f"base has no checkpoint at step {start} of budget {total_steps}")
    sch = spec.schedule(total_steps)
    model, opt = runner.restore(base.checkpoints[key])
    log: list = []
    runner.segment(model, opt, sch, start, total_steps, log)
    return _trajectory(sch, log, f"base S={total_steps} from {start}", float(base.num_params))


def run_injection(model_cfg: GPTConfig, corpora: InjectionCorpora, policy: InjectionPolicy, *,
                  total_steps: int, base: BaseRuns, spec: TrainSpec) -> Trajectory:
    """Branch one injection policy from the base run's checkpoint at its injection start.

    Returns
    -------
    Trajectory
        The policy's full schedule, logged from the injection start to ``total_steps``.
    """
    if not isinstance(policy, InjectionPolicy):
        raise TypeError(f"policy must be an InjectionPolicy, got {type(policy).__name__}")
    if not isinstance(base, BaseRuns):
        raise TypeError(f"base must be BaseRuns, got {type(base).__name__}")
    runner = _Runner(model_cfg, corpora, spec)
    sch = spec.schedule(total_steps, policy)
    key = (total_steps, sch.injection_start)
    if key not in base.checkpoints:
        raise ValueError(f"base has no checkpoint at step {key[1]} of budget {total_steps}; "
                         "pass the policy's fraction to base_runs")
    model, opt = runner.restore(base.checkpoints[key])
    log: list = []
    runner.segment(model, opt, sch, sch.injection_start, total_steps, log)
    name = f"S={total_steps} lam={policy.fraction:g} r={policy.mix_ratio:g} eta={policy.peak_lr:g}"
    return _trajectory(sch, log, name, float(base.num_params))
