"""Steppers in torch's optimizer idiom: one iteration per ``step(batch)`` call.

:class:`BROSOptimizer`, :class:`MASOBAOptimizer` (SOBA with ``theta=1``) and
:class:`FirstOrderBilevelOptimizer` hold the iterate ``(x, y, z, h)`` of one single-loop
method and take one iteration of :func:`~.steps.bros_step`, :func:`~.steps.ma_soba_step`
or :func:`~.steps.first_order_step` per :meth:`~BilevelOptimizer.step`, so they fit in a
user's own training loop (logging, early stopping, checkpointing, a learning-rate
schedule through ``hyperparameters``). The estimators' ``fit`` runs the same objects, so
both paths share one update.

Unlike :class:`torch.optim.Optimizer`, a step does not read ``.grad``: the method needs
gradients in a random subspace and Hessian actions, which it takes itself from the two
losses by autograd. Given tensors ``x`` and ``y`` (e.g. a module's parameters) are updated
in place, like an optimizer's parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from neurips26.common.torch import make_generator
from neurips26.common.validation import check_bool, check_int, check_seed

from .bilevel import BilevelProblem, check_params, check_rank_fraction, check_tensor
from .memory import MemoryReport, measured_step
from .steps import (
    BilevelState,
    StepStats,
    bros_step,
    check_lr,
    check_theta,
    first_order_step,
    init_state,
    ma_soba_step,
)

__all__ = ["BROSOptimizer", "BilevelOptimizer", "FirstOrderBilevelOptimizer", "MASOBAOptimizer"]

_NO_BATCH = (None, None, None)


def _as_params(y, name: str) -> dict[str, torch.Tensor]:
    if isinstance(y, torch.nn.Module):
        y = {n: p for n, p in y.named_parameters() if p.requires_grad}
        if not y:
            raise ValueError(f"{name} must have at least one parameter requiring grad")
    elif not isinstance(y, Mapping):
        raise TypeError(f"{name} must be a mapping of names to tensors or an nn.Module, got "
                        f"{type(y).__name__}")  # fmt: skip
    return dict(check_params(y, name))


class BilevelOptimizer:
    """The shared stepper; subclasses set ``_step_fn`` and their hyperparameters.

    Parameters
    ----------
    problem : BilevelProblem or (callable, callable)
        The problem, or the pair ``(upper_loss, lower_loss)`` of ``f(x, y, batch)`` and
        ``g(x, y, batch)`` (then ``x`` and ``y`` are required).
    x : torch.Tensor, optional
        The upper variable, updated in place. Default: a copy of ``problem.x0``.
    y : dict of str to torch.Tensor or torch.nn.Module, optional
        The lower variable, updated in place (a module: its parameters that require
        grad, by name, as the losses receive them). Default: a copy of ``problem.y0``.
    """

    _step_fn: Callable = None  # type: ignore[assignment]

    def _setup(self, problem, x, y, hyperparameters: dict) -> None:
        if isinstance(problem, BilevelProblem):
            if x is not None:
                x = check_tensor(x, "x")
                if x.shape != problem.x0.shape or x.dtype != problem.x0.dtype:
                    raise ValueError(f"x must have the shape {tuple(problem.x0.shape)} and dtype "
                                     f"{problem.x0.dtype} of problem.x0, got "
                                     f"{tuple(x.shape)} {x.dtype}")  # fmt: skip
            if y is not None:
                y = _as_params(y, "y")
                check_params(y, "y", like=problem.y0)
        elif isinstance(problem, tuple | list) and len(problem) == 2:
            if x is None or y is None:
                raise TypeError("x and y are required when problem is a pair "
                                "(upper_loss, lower_loss)")  # fmt: skip
            y = _as_params(y, "y")
            problem = BilevelProblem(problem[0], problem[1], check_tensor(x, "x"), y)
        else:
            raise TypeError("problem must be a BilevelProblem or a pair (upper_loss, lower_loss), "
                            f"got {type(problem).__name__}")  # fmt: skip
        state = init_state(problem)
        devices = {state.x.device, *(t.device for t in state.y.values())}
        if len(devices) > 1:
            raise ValueError(f"x and y must be on one device, got {sorted(map(str, devices))}")
        self.problem = problem
        self.hyperparameters = hyperparameters
        # Given tensors are the targets of the in-place updates; otherwise the stepper
        # owns its iterate (the copies init_state made).
        self._x_target = x
        self._y_target = y
        self._state = state
        #: Counted bytes of the first step (``None`` before it).
        self.memory: MemoryReport | None = None

    def _extra_kwargs(self) -> dict:
        return {}

    @property
    def device(self) -> torch.device:
        """The device of the iterate (sketches are drawn there)."""
        return self._state.x.device

    @property
    def x(self) -> torch.Tensor:
        """The upper variable (the given tensor when one was given)."""
        return self._state.x if self._x_target is None else self._x_target

    @property
    def y(self) -> dict[str, torch.Tensor]:
        """The lower variable by name (the given tensors when given)."""
        return dict(self._state.y if self._y_target is None else self._y_target)

    @property
    def z(self) -> dict[str, torch.Tensor]:
        """The auxiliary variable ``z ~ H_yy^{-1} grad_y f`` by name."""
        return dict(self._state.z)

    @property
    def h(self) -> torch.Tensor:
        """The moving-average hypergradient estimate (shape of ``x``)."""
        return self._state.h

    @property
    def n_iter(self) -> int:
        """Steps taken."""
        return self._state.step

    @property
    def state(self) -> BilevelState:
        """The current iterate as a :class:`~.steps.BilevelState` (its own tensors)."""
        s = self._current()
        if self._x_target is None and self._y_target is None:
            return s
        return BilevelState(s.x.clone(), {k: v.clone() for k, v in s.y.items()}, s.z, s.h,
                            s.step, s.stats)  # fmt: skip

    def _current(self) -> BilevelState:
        s = self._state
        x = s.x if self._x_target is None else self._x_target.detach()
        y = s.y if self._y_target is None else {k: v.detach() for k, v in self._y_target.items()}
        return BilevelState(x, y, s.z, s.h, s.step, s.stats)

    def step(self, batch=None) -> StepStats:
        """Take one iteration.

        Parameters
        ----------
        batch : tuple (xi, phi, psi) or None
            The upper, lower and second-order minibatches (any objects the losses take);
            ``None``: ``(None, None, None)`` for deterministic losses.

        Returns
        -------
        StepStats
            The losses at the iterate read and the step's buffer bytes.

        Raises
        ------
        ValueError
            A batch that is not a triple, a loss that is not a finite scalar or a
            diverging iterate (the iterate is then left as it was).
        """
        batches = _NO_BATCH if batch is None else batch
        if not isinstance(batches, tuple | list) or len(batches) != 3:
            raise ValueError("batch must be a triple (upper batch xi, lower batch phi, "
                             "second-order batch psi) or None")  # fmt: skip
        fn = type(self)._step_fn
        kwargs = {**self.hyperparameters, **self._extra_kwargs()}
        state = self._current()
        if self.memory is None:
            new, self.memory = measured_step(fn, state, self.problem, batches, **kwargs)
        else:
            new = fn(state, self.problem, batches, **kwargs)
        with torch.no_grad():
            if self._x_target is not None:
                self._x_target.copy_(new.x)
            if self._y_target is not None:
                for k, t in self._y_target.items():
                    t.copy_(new.y[k])
        self._state = new
        return new.stats

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear ``.grad`` of the given ``x`` and ``y`` (``step`` itself never reads it).

        For loops written for :class:`torch.optim.Optimizer`; a no-op on an owned iterate.
        """
        set_to_none = check_bool(set_to_none, "set_to_none")
        targets = ([] if self._x_target is None else [self._x_target]) + (
            [] if self._y_target is None else list(self._y_target.values()))
        for t in targets:
            if t.grad is None:
                continue
            if set_to_none:
                t.grad = None
            else:
                t.grad.detach_().zero_()

    def state_dict(self) -> dict:
        """Everything to resume: ``x``, ``y``, ``z``, ``h``, the step count, the sketch
        generator's state and the hyperparameters (copies)."""
        s = self._current()
        gen = getattr(self, "generator", None)
        return {"x": s.x.clone(), "y": {k: v.clone() for k, v in s.y.items()},
                "z": {k: v.clone() for k, v in s.z.items()}, "h": s.h.clone(), "step": s.step,
                "generator": None if gen is None else gen.get_state(),
                "hyperparameters": dict(self.hyperparameters)}  # fmt: skip

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Restore :meth:`state_dict`'s output (tensors cast to this stepper's dtypes and
        device; the given ``x`` and ``y`` are overwritten in place)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}")
        want = {"x", "y", "z", "h", "step", "generator", "hyperparameters"}
        if set(state_dict) != want:
            raise ValueError(f"state_dict must have the keys {sorted(want)}, "
                             f"got {sorted(state_dict)}")  # fmt: skip
        cur = self._current()
        x = check_tensor(state_dict["x"], "state_dict['x']")
        if x.shape != cur.x.shape:
            raise ValueError(f"state_dict['x'] must have shape {tuple(cur.x.shape)}")
        h = check_tensor(state_dict["h"], "state_dict['h']")
        if h.shape != cur.x.shape:
            raise ValueError(f"state_dict['h'] must have shape {tuple(cur.x.shape)}")
        ys = {}
        for part in ("y", "z"):
            d = state_dict[part]
            if not isinstance(d, Mapping) or set(d) != set(cur.y):
                raise ValueError(f"state_dict[{part!r}] must have the keys {sorted(cur.y)}")
            for k, v in d.items():
                check_tensor(v, f"state_dict[{part!r}][{k!r}]")
                if v.shape != cur.y[k].shape:
                    raise ValueError(f"state_dict[{part!r}][{k!r}] must have shape "
                                     f"{tuple(cur.y[k].shape)}")  # fmt: skip
            ys[part] = {k: d[k].detach().to(cur.y[k]).clone() for k in cur.y}
        step = check_int(state_dict["step"], "state_dict['step']", min=0)
        hp = state_dict["hyperparameters"]
        if not isinstance(hp, Mapping) or set(hp) != set(self.hyperparameters):
            raise ValueError(f"state_dict['hyperparameters'] must have the keys "
                             f"{sorted(self.hyperparameters)}")  # fmt: skip
        hp = self._check_hyperparameters(dict(hp))
        gen, gen_state = getattr(self, "generator", None), state_dict["generator"]
        if (gen is None) != (gen_state is None):
            raise ValueError("state_dict['generator'] must be None exactly when this method "
                             "draws no sketches")  # fmt: skip
        if gen is not None:
            if not isinstance(gen_state, torch.Tensor) or gen_state.dtype != torch.uint8:
                raise TypeError("state_dict['generator'] must be a uint8 tensor "
                                "(torch.Generator.get_state())")  # fmt: skip
            gen.set_state(gen_state.cpu())
        xs = x.detach().to(cur.x).clone()
        self.hyperparameters = hp
        self._state = BilevelState(xs, ys["y"], ys["z"], h.detach().to(cur.h).clone(), step)
        with torch.no_grad():
            if self._x_target is not None:
                self._x_target.copy_(xs)
            if self._y_target is not None:
                for k, t in self._y_target.items():
                    t.copy_(ys["y"][k])

    def _check_hyperparameters(self, hp: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v!r}" for k, v in self.hyperparameters.items())
        return f"{type(self).__name__}({hp}, n_iter={self.n_iter})"


class MASOBAOptimizer(BilevelOptimizer):
    """MA-SOBA (SOBA with ``theta=1``) one iteration per :meth:`step`.

    Parameters
    ----------
    problem, x, y
        As :class:`BilevelOptimizer`.
    lr_x, lr_y, lr_z : float > 0
    theta : float in (0, 1]
    """

    _step_fn = staticmethod(ma_soba_step)

    def __init__(self, problem, x: torch.Tensor | None = None, y=None, *, lr_x: float = 1e-2,
                 lr_y: float = 1e-1, lr_z: float = 1e-1, theta: float = 0.1) -> None:  # fmt: skip
        hp = self._check_hyperparameters({"lr_x": lr_x, "lr_y": lr_y, "lr_z": lr_z,
                                          "theta": theta})  # fmt: skip
        self._setup(problem, x, y, hp)

    def _check_hyperparameters(self, hp: dict) -> dict:
        return {"lr_x": check_lr(hp["lr_x"], "lr_x"), "lr_y": check_lr(hp["lr_y"], "lr_y"),
                "lr_z": check_lr(hp["lr_z"], "lr_z"),
                "theta": check_theta(hp["theta"])}  # fmt: skip


class FirstOrderBilevelOptimizer(BilevelOptimizer):
    """The first-order surrogate (Hessian term dropped) one iteration per :meth:`step`."""

    _step_fn = staticmethod(first_order_step)

    def __init__(self, problem, x: torch.Tensor | None = None, y=None, *, lr_x: float = 1e-2,
                 lr_y: float = 1e-1, theta: float = 0.1) -> None:  # fmt: skip
        hp = self._check_hyperparameters({"lr_x": lr_x, "lr_y": lr_y, "theta": theta})
        self._setup(problem, x, y, hp)

    def _check_hyperparameters(self, hp: dict) -> dict:
        return {"lr_x": check_lr(hp["lr_x"], "lr_x"), "lr_y": check_lr(hp["lr_y"], "lr_y"),
                "theta": check_theta(hp["theta"])}  # fmt: skip


class BROSOptimizer(BilevelOptimizer):
    """BROS in torch's optimizer idiom: one iteration per :meth:`step`.

    Each :meth:`step` takes the lower step and the auxiliary step in a fresh random
    subspace and the outer hypergradient step (:func:`~.steps.bros_step`, the update
    :class:`~.estimators.BROS` ``fit`` runs: the same seed gives the same iterates).

    Parameters
    ----------
    problem : BilevelProblem or (callable, callable)
        The problem, or ``(upper_loss, lower_loss)``: ``f(x, y, batch)`` and
        ``g(x, y, batch)`` returning scalar tensors, ``y`` a dict of tensors.
    x : torch.Tensor, optional
        The upper variable, updated in place (required with a pair of losses; default: a
        copy of ``problem.x0``).
    y : dict of str to torch.Tensor or torch.nn.Module, optional
        The lower variable, updated in place; a module gives its parameters that
        require grad, by name (run it inside the losses with
        :func:`torch.func.functional_call`). Required with a pair of losses; default: a
        copy of ``problem.y0``.
    lr_x, lr_y, lr_z : float > 0
        ``alpha``, ``beta``, ``gamma`` (read at every step from ``hyperparameters``, so a
        schedule may change them).
    theta : float in (0, 1]
        Moving-average weight.
    rank_fraction : float in (0, 1]
        ``r / m`` of every sketched tensor.
    probes : {1, 2}
        2: the Rademacher bi-probe correction; 1: the uncorrected variant.
    sketch_vectors : bool
        Also sketch 1-D tensors.
    seed : int
        Seeds the sketches' generator, made on the device of ``x`` and ``y``.

    Attributes
    ----------
    x, y, z, h : the iterate (``x`` and ``y`` are the given tensors when given)
    n_iter : int
    memory : MemoryReport or None
        Counted bytes of the first step.
    hyperparameters : dict
    generator : torch.Generator

    Notes
    -----
    The iterate keeps the dtype and device of ``x`` and ``y`` (all on one device).
    ``step`` never reads ``.grad``; :meth:`zero_grad` is there for loops written for
    :class:`torch.optim.Optimizer`.

    Examples
    --------
    A user's plain loop on ``g = ||y - x||^2 / 2``, ``f = ||y - 1||^2 / 2``
    (``Phi(x) = ||x - 1||^2 / 2``), updating the user's own tensors:

    >>> import torch
    >>> x, y = torch.zeros(8), {"w": torch.zeros(8)}
    >>> opt = BROSOptimizer((lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
    ...                      lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum()), x, y,
    ...                     lr_x=0.05, lr_y=0.3, lr_z=0.1, theta=0.2, rank_fraction=0.5,
    ...                     sketch_vectors=True, seed=0)
    >>> for it in range(800):
    ...     stats = opt.step(None)  # a minibatch triple (xi, phi, psi) when stochastic
    >>> bool((x - 1).abs().max() < 0.1), opt.n_iter
    (True, 800)
    >>> ckpt = opt.state_dict()  # resume later with opt.load_state_dict(ckpt)
    """

    _step_fn = staticmethod(bros_step)

    def __init__(self, problem, x: torch.Tensor | None = None, y=None, *, lr_x: float = 1e-2,
                 lr_y: float = 1e-1, lr_z: float = 1e-1, theta: float = 0.1,
                 rank_fraction: float = 0.125, probes: int = 2, sketch_vectors: bool = False,
                 seed: int = 0) -> None:  # fmt: skip
        hp = self._check_hyperparameters({
            "lr_x": lr_x, "lr_y": lr_y, "lr_z": lr_z, "theta": theta,
            "rank_fraction": rank_fraction, "probes": probes, "sketch_vectors": sketch_vectors})
        seed = check_seed(seed)
        self._setup(problem, x, y, hp)
        self.generator = make_generator(seed, self.device)

    def _check_hyperparameters(self, hp: dict) -> dict:
        return {"lr_x": check_lr(hp["lr_x"], "lr_x"), "lr_y": check_lr(hp["lr_y"], "lr_y"),
                "lr_z": check_lr(hp["lr_z"], "lr_z"), "theta": check_theta(hp["theta"]),
                "rank_fraction": check_rank_fraction(hp["rank_fraction"]),
                "probes": check_int(hp["probes"], "probes", min=1, max=2),
                "sketch_vectors": check_bool(hp["sketch_vectors"], "sketch_vectors")}  # fmt: skip

    def _extra_kwargs(self) -> dict:
        return {"generator": self.generator}
