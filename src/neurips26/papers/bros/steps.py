"""One iteration of each single-loop method: MA-SOBA (and SOBA), BROS, first order.

At iteration ``k`` with independent minibatches ``xi`` (upper), ``phi`` (lower) and
``psi`` (second order), every method reads ``(x, y, z, h)`` and writes the next state:

MA-SOBA (Chen, Xu & Zhang 2023), exact Hessian-vector products::

    y+ = y - beta grad_y g(x, y; phi)                                   # Eq. (2)
    z+ = z - gamma (H_yy(x, y; psi) z - grad_y f(x, y; xi))             # Eq. (3)
    h+ = (1 - theta) h + theta (grad_x f(x, y; xi) - J_xy(x, y; psi) z)  # Eq. (4)
    x+ = x - alpha h+                                                   # Eq. (5)

SOBA is MA-SOBA with ``theta = 1``. BROS replaces Eq. (2)-(4) by their subspace
versions with a fresh sketch ``S`` (and an independent probe ``T``) every iteration::

    y+ = y - beta S S^T grad_y g                                        # Eq. (6)
    z+ = z - gamma S (S^T H T T^T z - S^T grad_y f)                     # Eq. (7)
    h+ = (1 - theta) h + theta (grad_x f - J_xy T T^T z)                # Eq. (8)

so every gradient buffer is ``(r, *rest)`` per weight matrix. With ``probes=1``
(``T = S``) Eq. (7) is the uncorrected, biased single-probe variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from neurips26.common.validation import check_bool, check_choice, check_float, check_int

from .bilevel import (
    BilevelProblem,
    Params,
    _first_non_finite,
    check_params,
    check_rank_fraction,
    check_tensor,
    draw_subspace,
    grad_y,
    second_order,
)

__all__ = [
    "BilevelState",
    "StepStats",
    "bros_step",
    "first_order_step",
    "init_state",
    "ma_soba_step",
]


@dataclass(frozen=True)
class StepStats:
    """What one iteration measured on the side (for histories and memory accounting).

    Attributes
    ----------
    upper_loss, lower_loss : float
        ``f(x, y; xi)`` and ``g(x, y; phi)`` at the iterate read by the step.
    grad_buffer_bytes : int
        Bytes of every gradient and Hessian-action buffer the step produced (held until
        the update).
    sketch_bytes : int
        Bytes of the sketches ``S`` and ``T`` (0 for exact methods).
    """

    upper_loss: float = float("nan")
    lower_loss: float = float("nan")
    grad_buffer_bytes: int = 0
    sketch_bytes: int = 0


@dataclass(frozen=True)
class BilevelState:
    """The iterate of a single-loop bilevel method.

    Attributes
    ----------
    x : torch.Tensor
        The upper variable.
    y : dict of str to torch.Tensor
        The lower variable (``y ~ y*(x)``).
    z : dict of str to torch.Tensor
        The auxiliary variable (``z ~ H_yy^{-1} grad_y f``).
    h : torch.Tensor
        The moving-average hypergradient estimate (shape of ``x``).
    step : int
        Iterations taken.
    stats : StepStats
        The last iteration's side measurements.
    """

    x: torch.Tensor
    y: Params
    z: Params
    h: torch.Tensor
    step: int = 0
    stats: StepStats = field(default_factory=StepStats)

    def tensors(self) -> list[torch.Tensor]:
        """Every state tensor (for memory accounting)."""
        return [self.x, self.h, *self.y.values(), *self.z.values()]

    def _signature(self) -> tuple:
        """The identity and in-place version of each state tensor: equal to the signature
        recorded when a step checked this state finite only if none was replaced or
        modified in place since."""
        return tuple((id(t), t._version) for t in (self.x, *self.y.values(),
                                                     *self.z.values()))


def init_state(problem: BilevelProblem) -> BilevelState:
    """The start ``(x0, y0, z = 0, h = 0)`` of every method.

    Examples
    --------
    >>> import torch
    >>> prob = BilevelProblem(lambda x, y, b: (y["w"] ** 2).sum(),
    ...                       lambda x, y, b: ((y["w"] - x) ** 2).sum(),
    ...                       torch.zeros(2), {"w": torch.ones(2)})
    >>> init_state(prob).z["w"].tolist()
    [0.0, 0.0]
    """
    if not isinstance(problem, BilevelProblem):
        raise TypeError(f"problem must be a BilevelProblem, got {type(problem).__name__}")
    y = {k: v.clone() for k, v in problem.y0.items()}
    return BilevelState(problem.x0.clone(), y, {k: torch.zeros_like(v) for k, v in y.items()},
                        torch.zeros_like(problem.x0))  # fmt: skip


def _nbytes(ts) -> int:
    return int(sum(t.numel() * t.element_size() for t in ts if t is not None))


def check_lr(value, name: str) -> float:
    return check_float(value, name, min=0.0, min_inclusive=False, max=1e6)


def check_theta(value) -> float:
    return check_float(value, "theta", min=0.0, max=1.0, min_inclusive=False)


def _check(state, problem, batches):
    if not isinstance(problem, BilevelProblem):
        raise TypeError(f"problem must be a BilevelProblem, got {type(problem).__name__}")
    if not isinstance(state, BilevelState):
        raise TypeError(f"state must be a BilevelState, got {type(state).__name__}")
    # a state returned by a step was checked finite there: skip the finiteness pass over
    # its tensors when none has been replaced or modified in place since
    checked = getattr(state, "_checked", None) == state._signature()
    _check_state_tensor(state.x, "state.x", checked)
    if state.x.shape != problem.x0.shape:
        raise ValueError(f"state.x must have shape {tuple(problem.x0.shape)}")
    for name, params in (("state.y", state.y), ("state.z", state.z)):
        if checked:
            _check_like(params, name, problem.y0)
        else:
            check_params(params, name, like=problem.y0)
    if not isinstance(batches, tuple | list) or len(batches) != 3:
        raise ValueError("batches must be a triple (upper batch xi, lower batch phi, "
                         "second-order batch psi)")
    return tuple(batches)


def _check_state_tensor(t, name: str, checked: bool) -> None:
    if checked:
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            check_tensor(t, name)  # raises the usual message
    else:
        check_tensor(t, name)


def _check_like(params, name: str, like) -> None:
    """``check_params(params, name, like=like)`` less the finiteness pass (for a state a
    step has checked finite)."""
    if not isinstance(params, dict) or set(params) != set(like):
        check_params(params, name, like=like)  # raises the usual message
        return
    for key, t in params.items():
        if (not isinstance(t, torch.Tensor) or not t.is_floating_point()
                or t.shape != like[key].shape or t.dtype != like[key].dtype):
            check_params(params, name, like=like)  # raises the usual message
            return


def _finish(state, problem, x, y, z, h, stats) -> BilevelState:
    step = state.step + 1
    bad = _first_non_finite((("x", x), ("h", h), *y.items(), *z.items()))
    if bad is not None:
        raise ValueError(f"the iterate diverged at iteration {step} ({bad} is not finite); "
                         "lower the step sizes (lr_x, lr_y, lr_z)")
    out = BilevelState(x, y, z, h, step, stats)
    object.__setattr__(out, "_checked", out._signature())
    return out


@torch.no_grad()
def _update(t, d, lr):
    return t - lr * d


@torch.no_grad()
def _lift_update(t, p, u, lr):
    """``t - lr P u`` in one fused product (no ``(m, *rest)`` temporary besides the result)."""
    if p is None:
        return t - lr * u
    out = torch.addmm(t.reshape(t.shape[0], -1), p, u.reshape(u.shape[0], -1), alpha=-lr)
    return out.reshape(t.shape)


def ma_soba_step(state: BilevelState, problem: BilevelProblem, batches, *, lr_x: float = 1e-2,
                 lr_y: float = 1e-1, lr_z: float = 1e-1,
                 theta: float = 0.1) -> BilevelState:  # fmt: skip
    """One MA-SOBA iteration with exact Hessian-vector products (SOBA: ``theta=1``).

    Parameters
    ----------
    state : BilevelState
    problem : BilevelProblem
    batches : tuple (xi, phi, psi)
        Minibatches for the upper gradients, the lower gradient and the second-order
        terms (any objects the losses accept; ``None`` for deterministic losses).
    lr_x, lr_y, lr_z : float > 0
        ``alpha``, ``beta``, ``gamma``.
    theta : float in (0, 1]
        The moving-average weight.

    Returns
    -------
    BilevelState
    """
    xi, phi, psi = _check(state, problem, batches)
    lr_x, lr_y, lr_z = check_lr(lr_x, "lr_x"), check_lr(lr_y, "lr_y"), check_lr(lr_z, "lr_z")
    theta = check_theta(theta)
    k = state.step + 1
    gyf, gxf, fval = grad_y(problem.upper_loss, state.x, state.y, xi, None,
                            name="upper_loss", step=k, with_x=True)  # fmt: skip
    gyg, _, gval = grad_y(problem.lower_loss, state.x, state.y, phi, None,
                          name="lower_loss", step=k)  # fmt: skip
    hz, jz = second_order(problem, state.x, state.y, state.z, psi, None, None, step=k)
    y = {n: _update(state.y[n], gyg[n], lr_y) for n in state.y}  # Eq. (2)
    z = {n: _update(state.z[n], hz[n] - gyf[n], lr_z) for n in state.z}  # Eq. (3)
    h = (1 - theta) * state.h + theta * (gxf - jz)  # Eq. (4)
    x = _update(state.x, h, lr_x)  # Eq. (5)
    grad_bytes = _nbytes([gxf, jz, *gyf.values(), *gyg.values(), *hz.values()])
    return _finish(state, problem, x, y, z, h, StepStats(fval, gval, grad_bytes, 0))


def bros_step(state: BilevelState, problem: BilevelProblem, batches, *, lr_x: float = 1e-2,
              lr_y: float = 1e-1, lr_z: float = 1e-1, theta: float = 0.1,
              rank_fraction: float = 0.125, probes: int = 2, generator: torch.Generator,
              sketch: str = "rademacher", sketch_vectors: bool = False,
              subspace: str = "factor") -> BilevelState:  # fmt: skip
    """One BROS iteration: lower and auxiliary steps in a fresh random subspace.

    Parameters
    ----------
    state, problem, batches, lr_x, lr_y, lr_z, theta
        As :func:`ma_soba_step`.
    rank_fraction : float in (0, 1]
        ``r / m`` of every sketched tensor.
    probes : {1, 2}
        2: an independent probe ``T`` (the unbiased bi-probe correction); 1: ``T = S``
        (the uncorrected single-probe variant).
    generator : torch.Generator
        Draws ``S`` and ``T``.
    sketch : {"rademacher", "identity"}
        "identity" replaces both sketches by the identity (then the step equals MA-SOBA's,
        a test oracle).
    sketch_vectors : bool
        Also sketch 1-D tensors (biases stay full by default).
    subspace : {"factor", "project"}
        How the subspace coordinates enter the losses. "factor": every sketched tensor is
        the low-rank reparametrisation ``W + P U`` (:class:`SubspaceParam`), linear maps
        are evaluated factor by factor and the gradient of ``U`` is formed at its own
        size ``(r, *rest)``: the full ``(m, *rest)`` gradient never exists. "project":
        the gradient of the full tensor is formed, then projected (the reference; the
        same iterate up to floating-point rounding).

    Returns
    -------
    BilevelState
    """
    xi, phi, psi = _check(state, problem, batches)
    lr_x, lr_y, lr_z = check_lr(lr_x, "lr_x"), check_lr(lr_y, "lr_y"), check_lr(lr_z, "lr_z")
    theta = check_theta(theta)
    rank_fraction = check_rank_fraction(rank_fraction)
    probes = check_int(probes, "probes", min=1, max=2)
    sketch = check_choice(sketch, "sketch", ("rademacher", "identity"))
    sketch_vectors = check_bool(sketch_vectors, "sketch_vectors")
    fac = check_choice(subspace, "subspace", ("factor", "project")) == "factor"
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if sketch == "identity":
        s = t = None
    else:
        s = draw_subspace(state.y, rank_fraction, generator=generator,
                          sketch_vectors=sketch_vectors)  # fmt: skip
        t = s if probes == 1 else draw_subspace(state.y, rank_fraction, generator=generator,
                                                sketch_vectors=sketch_vectors)  # fmt: skip
    k = state.step + 1
    sgf, gxf, fval = grad_y(problem.upper_loss, state.x, state.y, xi, s, name="upper_loss",
                            step=k, with_x=True, factored=fac)  # S^T grad_y f  # fmt: skip
    sgg, _, gval = grad_y(problem.lower_loss, state.x, state.y, phi, s, name="lower_loss",
                          step=k, factored=fac)  # S^T grad_y g  # fmt: skip
    shz, jz = second_order(problem, state.x, state.y, state.z, psi, s, t, step=k,
                           factored=fac)  # fmt: skip
    ps = s if s is not None else {n: None for n in state.y}
    y = {n: _lift_update(state.y[n], ps[n], sgg[n], lr_y) for n in state.y}  # Eq. (6)
    z = {n: _lift_update(state.z[n], ps[n], shz[n] - sgf[n], lr_z) for n in state.z}  # Eq. (7)
    h = (1 - theta) * state.h + theta * (gxf - jz)  # Eq. (8)
    x = _update(state.x, h, lr_x)  # Eq. (5)
    grad_bytes = _nbytes([gxf, jz, *sgf.values(), *sgg.values(), *shz.values()])
    sk = [] if s is None else [*s.values()] + ([] if probes == 1 else [*t.values()])
    return _finish(state, problem, x, y, z, h, StepStats(fval, gval, grad_bytes, _nbytes(sk)))


def first_order_step(state: BilevelState, problem: BilevelProblem, batches, *,
                     lr_x: float = 1e-2, lr_y: float = 1e-1,
                     theta: float = 0.1) -> BilevelState:  # fmt: skip
    """One iteration of the first-order surrogate: the Hessian term is dropped (``z = 0``).

    ``h+ = (1 - theta) h + theta grad_x f``; ``y`` as in MA-SOBA. Cheap, but its fixed
    points are not stationary for ``Phi`` whenever ``f`` depends on ``y``.
    """
    xi, phi, _ = _check(state, problem, batches)
    lr_x, lr_y = check_lr(lr_x, "lr_x"), check_lr(lr_y, "lr_y")
    theta = check_theta(theta)
    k = state.step + 1
    _, gxf, fval = grad_y(problem.upper_loss, state.x, state.y, xi, None,
                          name="upper_loss", step=k, with_x=True, with_y=False)  # fmt: skip
    gyg, _, gval = grad_y(problem.lower_loss, state.x, state.y, phi, None,
                          name="lower_loss", step=k)  # fmt: skip
    y = {n: _update(state.y[n], gyg[n], lr_y) for n in state.y}
    h = (1 - theta) * state.h + theta * gxf
    x = _update(state.x, h, lr_x)
    grad_bytes = _nbytes([gxf, *gyg.values()])
    return _finish(state, problem, x, y, state.z, h, StepStats(fval, gval, grad_bytes, 0))
