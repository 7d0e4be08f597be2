"""The bilevel problem, random subspace sketches and the second-order oracles.

A stochastic bilevel problem is

    min_x  Phi(x) = f(x, y*(x)),    y*(x) = argmin_y g(x, y),

with ``g`` strongly convex in ``y``. Its hypergradient is

    grad Phi(x) = grad_x f - J_xy(g) z*,    z* = H_yy(g)^{-1} grad_y f,       # Eq. (1)

where ``H_yy = grad_yy g`` and ``J_xy = grad_xy g`` (a ``d_x x d_y`` matrix). Single-loop
methods (SOBA, MA-SOBA) track ``y ~ y*`` and ``z ~ z*`` with one stochastic step each per
iteration; BROS takes those two steps inside a random subspace redrawn every iteration.

The subspace of a parameter ``W`` of shape ``(m, *rest)`` is spanned by the columns of a
Rademacher sketch ``P = R / sqrt(r)``, ``R in {+-1}^{m x r}``, so ``E[P P^T] = I_m``; the
flat operator ``S`` is block diagonal over the parameters (``P`` acts on the first axis).
Coordinates in the subspace have shape ``(r, *rest)``.

Everything second order is computed by autograd (double backward) on the user's own
losses; no Hessian is ever formed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from neurips26.common.validation import check_bool, check_callable, check_float, check_int

__all__ = [
    "BilevelProblem",
    "SubspaceParam",
    "cross_term",
    "draw_subspace",
    "hessian_action",
    "rademacher_sketch",
    "single_probe_expectation",
    "squared_norm",
]

Params = dict[str, torch.Tensor]
Sketch = dict[str, torch.Tensor | None]

#: Largest number of elements a sketch may have (guards ``dim * rank``).
MAX_SKETCH_ELEMENTS = 10**8


def check_tensor(value, name: str, *, ndim: int | None = None) -> torch.Tensor:
    """A finite floating-point, non-empty torch tensor (``ndim`` checked when given)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype, got {value.dtype}")
    if value.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(value.shape)}")
    if not _all_finite(value):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    return value


def _all_finite(t: torch.Tensor) -> bool:
    """Whether every entry is finite, without a full-size temporary in the usual case: a
    NaN or inf makes the sum non-finite; only a non-finite sum is checked entry by entry
    (the sum of finite entries may overflow)."""
    with torch.no_grad():
        return bool(torch.isfinite(t.sum())) or bool(torch.isfinite(t).all())


def _first_non_finite(named) -> str | None:
    """The name of the first tensor of ``named`` (pairs ``(name, tensor)``) that holds NaN
    or inf, else None: one stacked test of the tensors' sums in the usual all-finite case,
    each tensor on its own only when that test fails."""
    named = list(named)
    with torch.no_grad():
        sums = torch.stack([t.sum().to(torch.float64) for _, t in named])
        if bool(torch.isfinite(sums).all()):
            return None
    for name, t in named:
        if not _all_finite(t):
            return name
    return None


def check_params(value, name: str, like: Mapping[str, torch.Tensor] | None = None) -> Params:
    """A non-empty mapping of names to finite float tensors (shapes and dtypes of ``like``
    if given)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of names to tensors, got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError(f"{name} must hold at least one tensor")
    out = {}
    for key, t in value.items():
        out[key] = check_tensor(t, f"{name}[{key!r}]")
    if like is not None:
        if set(out) != set(like):
            raise ValueError(f"{name} must have the keys {sorted(like)}, got {sorted(out)}")
        for key in like:
            if out[key].shape != like[key].shape:
                raise ValueError(
                    f"{name}[{key!r}] must have shape {tuple(like[key].shape)}, "
                    f"got {tuple(out[key].shape)}"
                )
            if out[key].dtype != like[key].dtype:
                raise TypeError(f"{name}[{key!r}] must have dtype {like[key].dtype} (the "
                                f"problem's), got {out[key].dtype}")
    return out


def check_loss(value, name: str, step: int | None = None) -> torch.Tensor:
    """A finite scalar tensor returned by a user loss (the message names the iteration)."""
    where = "" if step is None else f" at iteration {step}"
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must return a torch.Tensor{where}, got {type(value).__name__}")
    if value.numel() != 1:
        raise ValueError(f"{name} must return a scalar{where}, got shape {tuple(value.shape)}")
    if not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{name} returned a non-finite value{where}: {float(value.detach()):g}")
    return value.reshape(())


@dataclass(frozen=True)
class BilevelProblem:
    """A bilevel problem given by the user's two losses and a starting point.

    Parameters
    ----------
    upper_loss : callable
        ``f(x, y, batch) -> scalar tensor``, the upper (outer) objective.
    lower_loss : callable
        ``g(x, y, batch) -> scalar tensor``, the lower (inner) objective, strongly convex
        in ``y`` for the theory (not checked).
    x0 : torch.Tensor, any shape
        The upper variable's start (float, finite).
    y0 : dict of str to torch.Tensor
        The lower variable's start, e.g. ``dict(model.named_parameters())`` detached; use
        :func:`torch.func.functional_call` inside the losses to run a module on it.

    Examples
    --------
    A quadratic lower level ``g = ||y - x||^2 / 2`` and upper ``f = ||y - 1||^2 / 2``,
    so ``y*(x) = x`` and ``Phi(x) = ||x - 1||^2 / 2``:

    >>> import torch
    >>> prob = BilevelProblem(
    ...     upper_loss=lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
    ...     lower_loss=lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum(),
    ...     x0=torch.zeros(3), y0={"w": torch.zeros(3)})
    >>> hv = hessian_action(prob, prob.x0, prob.y0, {"w": torch.ones(3)}, None)
    >>> hv["w"].tolist()  # H_yy = I
    [1.0, 1.0, 1.0]
    >>> cross_term(prob, prob.x0, prob.y0, {"w": torch.ones(3)}, None).tolist()  # J_xy = -I
    [-1.0, -1.0, -1.0]
    """

    upper_loss: Callable
    lower_loss: Callable
    x0: torch.Tensor
    y0: Mapping[str, torch.Tensor]

    def __post_init__(self) -> None:
        check_callable(self.upper_loss, "upper_loss")
        check_callable(self.lower_loss, "lower_loss")
        check_tensor(self.x0, "x0")
        y0 = check_params(self.y0, "y0")
        object.__setattr__(self, "x0", self.x0.detach())
        object.__setattr__(self, "y0", {k: v.detach() for k, v in y0.items()})


def rademacher_sketch(dim: int, rank: int, *, generator: torch.Generator,
                      dtype: torch.dtype = torch.float32) -> torch.Tensor:  # fmt: skip
    """A Rademacher sketch ``P = R / sqrt(r)`` with ``E[P P^T] = I``.

    Parameters
    ----------
    dim : int
        ``m``, the dimension of the space sketched.
    rank : int
        ``r``, the subspace dimension, ``1 <= r``.
    generator : torch.Generator
        The only source of randomness.
    dtype : torch.dtype
        A floating dtype.

    Returns
    -------
    torch.Tensor, shape (dim, rank)
        Entries ``+-1/sqrt(r)``.

    Examples
    --------
    >>> import torch
    >>> p = rademacher_sketch(4, 2, generator=torch.Generator().manual_seed(0))
    >>> tuple(p.shape)
    (4, 2)
    >>> bool(torch.allclose(p.abs(), torch.full((4, 2), 2 ** -0.5)))
    True
    """
    dim = check_int(dim, "dim", min=1)
    rank = check_int(rank, "rank", min=1)
    if dim * rank > MAX_SKETCH_ELEMENTS:
        raise ValueError(f"dim * rank must be <= {MAX_SKETCH_ELEMENTS}, got {dim * rank}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    bits = torch.randint(0, 2, (dim, rank), generator=generator, device=generator.device)
    return bits.to(dtype).mul_(2.0).sub_(1.0).div_(math.sqrt(rank))  # (2 b - 1) / sqrt(r)


def check_rank_fraction(value) -> float:
    return check_float(value, "rank_fraction", min=0.0, max=1.0, min_inclusive=False)


def draw_subspace(y: Mapping[str, torch.Tensor], rank_fraction: float = 0.125, *,
                  generator: torch.Generator, sketch_vectors: bool = False) -> Sketch:  # fmt: skip
    """One block-diagonal sketch ``S`` over the lower variable.

    Parameters
    ----------
    y : dict of str to torch.Tensor
        The lower variable; each tensor of shape ``(m, *rest)`` gets ``P`` of shape
        ``(m, r)``, ``r = ceil(rank_fraction * m)``, acting on its first axis.
    rank_fraction : float in (0, 1]
        ``r / m``.
    generator : torch.Generator
    sketch_vectors : bool
        Sketch 1-D tensors too (default: biases and other vectors stay full, ``None``).
        A matrix whose sketch ``P`` would hold as many numbers as itself (``r >= n``)
        stays full as well.

    Returns
    -------
    dict of str to (torch.Tensor or None)
        ``None`` marks a tensor updated in full (the identity block).

    Examples
    --------
    >>> import torch
    >>> s = draw_subspace({"W": torch.zeros(16, 32), "b": torch.zeros(16)}, 0.25,
    ...                   generator=torch.Generator().manual_seed(0))
    >>> tuple(s["W"].shape), s["b"] is None
    ((16, 4), True)
    """
    y = check_params(y, "y")
    rank_fraction = check_rank_fraction(rank_fraction)
    sketch_vectors = check_bool(sketch_vectors, "sketch_vectors")
    out: Sketch = {}
    for name, t in y.items():
        m = t.shape[0] if t.ndim else 1
        r = max(1, math.ceil(rank_fraction * m - 1e-9))
        wanted = t.ndim >= 2 or (t.ndim == 1 and sketch_vectors)
        # A sketch at least as large as its tensor saves nothing: keep the tensor full.
        if wanted and (t.ndim == 1 or m * r < t.numel()):
            out[name] = rademacher_sketch(m, r, generator=generator, dtype=t.dtype)
        else:
            out[name] = None
    return out


def lift(p: torch.Tensor | None, u: torch.Tensor) -> torch.Tensor:
    """``P u`` along the first axis: ``(r, *rest) -> (m, *rest)`` (identity for ``None``)."""
    if p is None:
        return u
    return (p @ u.reshape(u.shape[0], -1)).reshape(p.shape[0], *u.shape[1:])


def project(p: torch.Tensor | None, v: torch.Tensor) -> torch.Tensor:
    """``P^T v`` along the first axis: ``(m, *rest) -> (r, *rest)``."""
    if p is None:
        return v
    return (p.T @ v.reshape(v.shape[0], -1)).reshape(p.shape[1], *v.shape[1:])


# --- the low-rank reparametrisation (the full gradient of a sketched tensor is never formed) --


_LINEAR = torch.nn.functional.linear
_MATMULS = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__)


class SubspaceParam(torch.Tensor):
    """``W + sum_i P_i U_i`` held as its factors: a tensor that is ``W`` (a view, no copy)
    for every reading of its values, while its gradient flows to the small ``U_i`` only.

    Linear maps are evaluated factor by factor, ``F.linear(a, W + P U) = a W^T + (a U^T) P^T``
    and ``A @ (W + P U) = A W + (A P) U`` (``(W + P U) @ B = W B + P (U B)``), so the
    gradient reaching ``U`` (shape ``(r, *rest)``) is formed directly, never the
    ``(m, *rest)`` gradient of ``W``. Any other operation (an elementwise power, a sum, a
    convolution) sees the materialised tensor ``W + sum_i P_i U_i``: the same values and
    derivatives, without the saving. :func:`squared_norm` keeps a weight decay low rank.

    Build it with :meth:`wrap`; ``W`` is detached (no gradient flows to it).
    """

    @staticmethod
    def __new__(cls, base: torch.Tensor, factors: tuple):
        obj = torch.Tensor._make_subclass(cls, base, False)
        obj._base_tensor = base
        obj._factors = factors
        return obj

    def __init__(self, base, factors) -> None:  # attributes are set in __new__
        pass

    @classmethod
    def wrap(cls, base: torch.Tensor, factors) -> torch.Tensor:
        """``base + sum_i P_i U_i`` for the pairs ``(P_i, U_i)`` of ``factors`` (``P_i`` of
        shape ``(m, r_i)``, ``U_i`` of shape ``(r_i, *rest)``); ``base`` of shape
        ``(m, *rest)``."""
        return cls(base.detach(), tuple(factors))

    def materialize(self) -> torch.Tensor:
        """The dense ``W + sum_i P_i U_i`` (differentiable in every ``U_i``)."""
        out = self._base_tensor
        for p, u in self._factors:
            out = out + lift(p, u)
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _LINEAR:
            out = _factored_linear(*args, **kwargs)
            if out is not None:
                return out
        elif func in _MATMULS and len(args) == 2 and not kwargs:
            out = _factored_matmul(*args)
            if out is not None:
                return out
        if _is_metadata(func):
            # shape, dtype, device, requires_grad, ...: read off W, no materialisation
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        args, kwargs = torch.utils._pytree.tree_map(_dense, (args, kwargs))
        return func(*args, **kwargs)


_METADATA = {torch.Tensor.size, torch.Tensor.dim, torch.Tensor.numel, torch.Tensor.element_size,
             torch.Tensor.is_floating_point, torch.Tensor.__len__, torch.Tensor.__repr__,
             torch.Tensor.__format__, torch.Tensor.__hash__, torch.Tensor.data_ptr,
             torch.Tensor.untyped_storage, torch.Tensor.stride, torch.Tensor.is_contiguous,
             torch.Tensor.__reduce_ex__}  # fmt: skip


def _is_metadata(func) -> bool:
    if getattr(func, "__name__", "") == "__get__":  # a property: all but the views read W
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        return prop not in ("T", "mT", "H", "mH", "data", "real", "imag")
    return func in _METADATA


def _dense(v):
    return v.materialize() if isinstance(v, SubspaceParam) else v


def _factored_linear(input, weight, bias=None):
    if isinstance(input, SubspaceParam) or not isinstance(weight, SubspaceParam):
        return None
    bias = _dense(bias)
    out = _LINEAR(input, weight._base_tensor, bias)
    for p, u in weight._factors:
        if u.ndim != 2:
            return None
        au = _LINEAR(input, u)  # (a U^T) P^T
        out = out + (au if p is None else _LINEAR(au, p))
    return out


def _factored_matmul(a, b):
    if isinstance(b, SubspaceParam) and not isinstance(a, SubspaceParam) and a.ndim >= 1:
        out = torch.matmul(a, b._base_tensor)  # A W + sum (A P) U
        for p, u in b._factors:
            out = out + torch.matmul(a if p is None else torch.matmul(a, p), u)
        return out
    if isinstance(a, SubspaceParam) and not isinstance(b, SubspaceParam) and a.ndim == 2:
        out = torch.matmul(a._base_tensor, b)  # W B + sum P (U B)
        for p, u in a._factors:
            ub = torch.matmul(u, b)
            out = out + (ub if p is None else torch.matmul(p, ub))
        return out
    return None


def squared_norm(t: torch.Tensor) -> torch.Tensor:
    """``||t||^2`` (a scalar tensor); for a :class:`SubspaceParam` ``W + P U`` it is
    ``||W||^2 + 2 <P^T W, U> + ||P U||^2``, whose gradient in ``U`` is formed at the
    subspace's size.

    Parameters
    ----------
    t : torch.Tensor, any shape

    Returns
    -------
    torch.Tensor, shape ()

    Raises
    ------
    TypeError
        ``t`` is not a tensor.
    ValueError
        ``t`` is not floating point or holds NaN or inf.

    Examples
    --------
    >>> import torch
    >>> float(squared_norm(torch.tensor([3.0, 4.0])))
    25.0
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    base = t._base_tensor if isinstance(t, SubspaceParam) else t
    if not base.is_floating_point() or not _all_finite(base.detach()):
        raise ValueError("t must be a finite floating-point tensor")
    return _squared_norm(t)


def _squared_norm(t: torch.Tensor) -> torch.Tensor:
    """:func:`squared_norm` without its checks, for losses whose tensors the step has
    already checked (the iterate is checked finite after every step)."""
    if not isinstance(t, SubspaceParam):
        return t.pow(2).sum()
    w = t._base_tensor
    out = torch.linalg.vector_norm(w) ** 2  # a constant: W is detached
    for p, u in t._factors:
        out = out + 2 * (project(p, w) * u).sum()
    for p, u in t._factors:  # ||sum_i P_i U_i||^2 = sum_ij <U_i, P_i^T P_j U_j>
        for q, v in t._factors:
            out = out + (u * _gram_apply(p, q, v)).sum()
    return out


def _gram_apply(p, q, v):
    """``P^T Q V`` with ``None`` the identity, never lifting ``V`` when both are sketches."""
    if p is None:
        return lift(q, v)
    if q is None:
        return project(p, v)
    return ((p.T @ q) @ v.reshape(v.shape[0], -1)).reshape(p.shape[1], *v.shape[1:])


class _Subspace(torch.autograd.Function):
    """``y + P_s u + P_t w`` evaluated at ``u = w = 0``: a view of ``y`` (no copy).

    Its backward maps the gradient ``G`` of the full tensor to ``(P_s^T G, P_t^T G)``; it
    is linear and made of differentiable ops, so double backward gives ``P_s^T H P_t``.
    Returning a view keeps the saved activations of the user's graph aliased to ``y``.
    """

    @staticmethod
    def forward(ctx, y, u, w, p_s, p_t):
        ctx.save_for_backward(p_s, p_t)
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        p_s, p_t = ctx.saved_tensors
        return None, _proj_or_none(p_s, grad), _proj_or_none(p_t, grad), None, None


def _proj_or_none(p: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    if p.numel() == 0:  # identity block: the coordinate is the full tensor
        return g
    return project(p, g)


def _coords(p: torch.Tensor | None, t: torch.Tensor) -> torch.Tensor:
    """A zero coordinate tensor of the subspace of ``t`` (full shape for ``None``)."""
    shape = t.shape if p is None else (p.shape[1], *t.shape[1:])
    return torch.zeros(shape, dtype=t.dtype, device=t.device, requires_grad=True)


def _embed(y: Params, s: Sketch, t: Sketch, factored: bool = True):
    """Reparametrise ``y`` by coordinates in two subspaces; returns (y_eff, u, w).

    ``factored``: ``y + P_s u + P_t w`` as a :class:`SubspaceParam` (the gradients of
    ``u`` and ``w`` are formed at their own size); otherwise the projecting
    autograd function (the full gradient is formed, then projected: the reference).
    """
    u, w, y_eff = {}, {}, {}
    for name, val in y.items():
        empty = torch.empty(0, device=val.device)
        u[name] = _coords(s[name], val)
        w[name] = _coords(t[name], val)
        if factored:
            if s[name] is None and t[name] is None:
                y_eff[name] = val.detach() + u[name] + w[name]
            else:
                y_eff[name] = SubspaceParam.wrap(val, ((s[name], u[name]), (t[name], w[name])))
            continue
        ps = empty if s[name] is None else s[name]
        pt = empty if t[name] is None else t[name]
        y_eff[name] = _Subspace.apply(val.detach(), u[name], w[name], ps, pt)
    return y_eff, u, w


_NO_Y = "lower_loss does not depend on y (its gradient with respect to y is None)"


def _grads(out: torch.Tensor, inputs: list[torch.Tensor], *, create_graph: bool = False,
           need: int = 0) -> list[torch.Tensor]:  # fmt: skip
    """``autograd.grad`` with zeros for unused inputs (and for a constant ``out``).

    ``need``: ``out`` must reach at least one of the first ``need`` inputs (the lower
    loss's y), else ValueError; autograd's own unused-input report answers it, so the
    check costs no walk of the graph."""
    if not out.requires_grad:
        gs = (None,) * len(inputs)
    else:
        gs = torch.autograd.grad(out, inputs, create_graph=create_graph, allow_unused=True)
    if need and all(g is None for g in gs[:need]):
        raise ValueError(_NO_Y)
    return [torch.zeros_like(i) if g is None else g for g, i in zip(gs, inputs, strict=True)]


def grad_y(loss_fn: Callable, x: torch.Tensor, y: Params, batch, s: Sketch | None, *,
           name: str, step: int | None = None, with_x: bool = False,
           with_y: bool = True, factored: bool = True):  # fmt: skip
    """``S^T grad_y loss`` (subspace coordinates) and, if asked, ``grad_x loss``.

    ``s=None`` is the full space. ``factored``: through :class:`SubspaceParam` (else the
    projecting reference). Returns ``(dict, grad_x or None, loss value)``.
    """
    xg = x.detach().requires_grad_(with_x)
    if s is None:
        leaves = {k: v.detach().requires_grad_(True) for k, v in y.items()}
        y_eff = leaves
    else:
        y_eff, leaves = _embed_one(y, s, factored)
    loss = check_loss(loss_fn(xg, y_eff, batch), name, step)
    lower = name == "lower_loss"
    if not with_y:
        if lower and not _depends(loss, list(leaves.values())):
            raise ValueError(_NO_Y)
        gx = _grads(loss, [xg])[0] if with_x else None
        return {}, gx, float(loss.detach())
    gs = _grads(loss, list(leaves.values()) + ([xg] if with_x else []),
                need=len(leaves) if lower else 0)
    gy = dict(zip(leaves, gs[: len(leaves)], strict=True))
    gx = gs[-1] if with_x else None
    return gy, gx, float(loss.detach())


def _depends(loss: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
    """Whether autograd can reach any of ``inputs`` from ``loss`` (without computing)."""
    if not loss.requires_grad or loss.grad_fn is None:
        return False
    targets = {id(i) for i in inputs}
    seen, stack = set(), [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None and id(var) in targets:
            return True
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return False


class _SubspaceOne(torch.autograd.Function):
    """``y + P u`` at ``u = 0``: a view of ``y`` whose backward is ``P^T G``."""

    @staticmethod
    def forward(ctx, y, u, p):
        ctx.save_for_backward(p)
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return None, _proj_or_none(p, grad), None


def _embed_one(y: Params, s: Sketch, factored: bool = True):
    y_eff, u = {}, {}
    for name, val in y.items():
        if s[name] is None:
            u[name] = val.detach().requires_grad_(True)
            y_eff[name] = u[name]
        else:
            u[name] = _coords(s[name], val)
            if factored:
                y_eff[name] = SubspaceParam.wrap(val, ((s[name], u[name]),))
            else:
                y_eff[name] = _SubspaceOne.apply(val.detach(), u[name], s[name])
    return y_eff, u


def second_order(problem: BilevelProblem, x: torch.Tensor, y: Params, z: Params, batch,
                 s: Sketch | None, t: Sketch | None, *, with_cross: bool = True,
                 step: int | None = None, factored: bool = True):  # fmt: skip
    """``S^T H T T^T z`` (S-coordinates) and ``J_xy T T^T z`` from one double backward.

    ``s=t=None`` is the exact pair ``(H z, J_xy z)``.
    """
    xg = x.detach().requires_grad_(with_cross)
    if s is None and t is None:
        leaves = {k: v.detach().requires_grad_(True) for k, v in y.items()}
        g = check_loss(problem.lower_loss(xg, leaves, batch), "lower_loss", step)
        gy = _grads(g, list(leaves.values()), create_graph=True, need=len(leaves))
        inner = sum((a * z[k]).sum() for a, k in zip(gy, leaves, strict=True))  # <grad_y g, z>
        outs = _grads(inner, list(leaves.values()) + ([xg] if with_cross else []))
        hz = dict(zip(leaves, outs[: len(leaves)], strict=True))
        return hz, (outs[-1] if with_cross else None)
    s = s if s is not None else {k: None for k in y}
    t = t if t is not None else {k: None for k in y}
    y_eff, u, w = _embed(y, s, t, factored)
    g = check_loss(problem.lower_loss(xg, y_eff, batch), "lower_loss", step)
    gw = _grads(g, list(w.values()), create_graph=True, need=len(w))  # T^T grad_y g, (r, ...)
    tz = {k: project(t[k], z[k]) for k in y}  # T^T z
    inner = sum((a * tz[k]).sum() for a, k in zip(gw, w, strict=True))  # <T^T grad_y g, T^T z>
    outs = _grads(inner, list(u.values()) + ([xg] if with_cross else []))
    shz = dict(zip(u, outs[: len(u)], strict=True))  # S^T H T T^T z
    return shz, (outs[-1] if with_cross else None)


def hessian_action(problem: BilevelProblem, x: torch.Tensor, y: Mapping[str, torch.Tensor],
                   v: Mapping[str, torch.Tensor], batch, *, sketch_s: Sketch | None = None,
                   sketch_t: Sketch | None = None) -> Params:  # fmt: skip
    """The lower Hessian's action ``H_yy v``, exact or through two sketches.

    Parameters
    ----------
    problem : BilevelProblem
    x : torch.Tensor, shape of ``problem.x0``
    y, v : dict of str to torch.Tensor, shapes of ``problem.y0``
    batch : object
        Passed to ``lower_loss``.
    sketch_s, sketch_t : dict from :func:`draw_subspace`, optional
        ``S`` and ``T``. Both ``None``: the exact ``H v``. Otherwise the estimate
        ``S S^T H T T^T v`` (a ``None`` sketch is the identity); with independent ``S``
        and ``T`` it is unbiased (the bi-probe correction), with ``T = S`` its mean is
        biased (:func:`single_probe_expectation`).

    Returns
    -------
    dict of str to torch.Tensor
        Full-size, the shapes of ``y``.

    Raises
    ------
    ValueError
        Non-finite or wrongly shaped input; a non-scalar or non-finite loss; a lower loss
        that does not depend on ``y``.
    """
    x, y, v = _check_point(problem, x, y, v=v, need_v=True)
    s_, t_ = _check_sketch(sketch_s, y, "sketch_s"), _check_sketch(sketch_t, y, "sketch_t")
    out, _ = second_order(problem, x, y, v, batch, s_, t_, with_cross=False)
    if s_ is None:
        return out
    return {k: lift(s_[k], out[k]).detach() for k in y}


def cross_term(problem: BilevelProblem, x: torch.Tensor, y: Mapping[str, torch.Tensor],
               v: Mapping[str, torch.Tensor], batch, *,
               sketch_t: Sketch | None = None) -> torch.Tensor:  # fmt: skip
    """The cross term ``J_xy v = grad_x <grad_y g(x, y), v>``, exact or through ``T``.

    With a sketch, ``grad_x <T^T grad_y g, T^T v>`` (``= J_xy T T^T v``, unbiased).

    Returns
    -------
    torch.Tensor, shape of ``x``
    """
    x, y, v = _check_point(problem, x, y, v=v, need_v=True)
    t_ = _check_sketch(sketch_t, y, "sketch_t")
    s_ = None if t_ is None else {k: None for k in y}
    _, jz = second_order(problem, x, y, v, batch, s_, t_, with_cross=True)
    return jz.detach()


def single_probe_expectation(hessian: torch.Tensor, rank: int) -> torch.Tensor:
    """``E[P P^T H P P^T] = H + (tr(H) I + H - 2 diag(H)) / r`` for one Rademacher probe.

    Parameters
    ----------
    hessian : torch.Tensor, shape (m, m)
        Symmetric ``H``.
    rank : int
        ``r``.

    Returns
    -------
    torch.Tensor, shape (m, m)

    Examples
    --------
    >>> import torch
    >>> single_probe_expectation(torch.eye(2), 1).tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    """
    h = check_tensor(hessian, "hessian", ndim=2)
    if h.shape[0] != h.shape[1]:
        raise ValueError(f"hessian must be square, got shape {tuple(h.shape)}")
    r = check_int(rank, "rank", min=1, max=MAX_SKETCH_ELEMENTS)
    eye = torch.eye(h.shape[0], dtype=h.dtype)
    return h + (torch.trace(h) * eye + h - 2 * torch.diag(torch.diagonal(h))) / r


def _check_point(problem, x, y, *, v=None, need_v: bool = False):
    if not isinstance(problem, BilevelProblem):
        raise TypeError(f"problem must be a BilevelProblem, got {type(problem).__name__}")
    x = check_tensor(x, "x")
    if x.shape != problem.x0.shape:
        raise ValueError(f"x must have shape {tuple(problem.x0.shape)}, got {tuple(x.shape)}")
    if x.dtype != problem.x0.dtype:
        raise TypeError(f"x must have the dtype of problem.x0 ({problem.x0.dtype}), got "
                        f"{x.dtype}")
    y = check_params(y, "y", like=problem.y0)
    if v is None and not need_v:
        return x, y
    return x, y, check_params(v, "v", like=problem.y0)


def _check_sketch(sketch, y: Params, name: str) -> Sketch | None:
    if sketch is None:
        return None
    if not isinstance(sketch, Mapping) or set(sketch) != set(y):
        raise ValueError(f"{name} must map every key of y to a (m, r) tensor or None")
    for key, p in sketch.items():
        if p is None:
            continue
        check_tensor(p, f"{name}[{key!r}]", ndim=2)
        if p.shape[0] != y[key].shape[0]:
            raise ValueError(f"{name}[{key!r}] must have {y[key].shape[0]} rows, "
                             f"got {p.shape[0]}")
    return dict(sketch)
