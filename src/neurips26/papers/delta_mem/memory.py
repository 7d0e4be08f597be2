"""The delta-rule memory: an r x r state per attention layer and its low-rank corrections.

For a frozen causal LM, every wrapped self-attention layer keeps a state ``S`` in
``R^{r x r}`` (8 x 8 by default). At each token ``t`` with attention input ``h_t`` in
``R^D`` the layer

1. projects ``q_t = W_q^m h_t``, ``k_t = W_k^m h_t``, ``v_t = W_v^m h_t`` (``R^r``; ``q``
   and ``k`` become ``normalize(tanh(.))`` with ``normalize_qk``) and a rank-wise write
   gate ``beta_t = sigmoid(W_beta h_t + b_beta)`` (``W_beta = 0``, ``b_beta = -1.5`` at
   init), keep gate ``lambda_t = 1 - beta_t``;
2. reads before it writes: ``r_t = S_{t-1} q_t``;
3. writes with the delta rule, the gates acting on the rows of ``S``:
   ``S_t = lambda_t * S_{t-1} - beta_t * (S_{t-1} k_t) k_t^T + beta_t * v_t k_t^T``;
4. adds ``(alpha / r) U_x r_t`` to the q, k, v projections (before RoPE) and to the
   attention output (after ``o_proj``). Every ``U_x`` starts at zero, so at init the
   wrapped model is the backbone exactly.

The state persists across forward calls (segments, episodes) until :func:`reset_delta_mem`.

References
----------
delta-Mem (arXiv 2605.12357, declare-lab/delta-Mem); the delta rule of fast-weight
programmers (Schlag et al., 2021) and DeltaNet (Yang et al., 2024).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

HEADS = ("q", "k", "v", "o")
STATE_UPDATES = ("standard", "no_lambda")
#: Largest state rank accepted (the state is r x r per sequence and layer).
MAX_RANK = 1024
#: Largest (batch x tokens) a scan accepts.
MAX_SCAN_TOKENS = 1 << 24


@dataclass(frozen=True)
class DeltaMemConfig:
    """Hyper-parameters of the memory (defaults: the reference's).

    Parameters
    ----------
    rank : int
        ``r``: the state is ``r x r`` and every correction has rank ``r``.
    alpha : float
        Scale of the corrections, applied as ``alpha / r``.
    beta_bias_init : float
        ``b_beta`` at init (``sigmoid(-1.5)`` is about 0.18).
    normalize_qk : bool
        ``q, k = normalize(tanh(.))`` (L2 over ``r``).
    heads : tuple of {"q", "k", "v", "o"}
        Which projections receive a correction (the reference config: all four; its
        released adapter: q and o).
    state_update : {"standard", "no_lambda"}
        ``"standard"``: keep gate ``1 - beta``; ``"no_lambda"``: keep gate 1 (the classic
        delta rule without decay).

    Examples
    --------
    >>> DeltaMemConfig(heads=("q", "o")).heads
    ('q', 'o')
    >>> DeltaMemConfig(rank=0)
    Traceback (most recent call last):
    ...
    ValueError: rank must lie in [1, 1024], got 0
    """

    rank: int = 8
    alpha: float = 16.0
    beta_bias_init: float = -1.5
    normalize_qk: bool = True
    heads: tuple[str, ...] = HEADS
    state_update: str = "standard"

    def __post_init__(self) -> None:
        check_int(self.rank, "rank", min=1, max=MAX_RANK)
        check_float(self.alpha, "alpha", min=0.0, max=1e6)
        check_float(self.beta_bias_init, "beta_bias_init", min=-50.0, max=50.0)
        check_bool(self.normalize_qk, "normalize_qk")
        if not isinstance(self.heads, tuple | list) or not self.heads:
            raise ValueError(f"heads: expected a non-empty tuple of {HEADS}, got {self.heads!r}")
        for h in self.heads:
            check_choice(h, "heads", HEADS)
        if len(set(self.heads)) != len(self.heads):
            raise ValueError(f"heads: repeated entries in {self.heads!r}")
        object.__setattr__(self, "heads", tuple(h for h in HEADS if h in self.heads))
        check_choice(self.state_update, "state_update", STATE_UPDATES)


def _check_out_dims(out_dims, config: DeltaMemConfig) -> None:
    if not isinstance(out_dims, dict):
        raise TypeError(f"out_dims: expected a dict, got {type(out_dims).__name__}")
    if set(out_dims) != set(config.heads):
        got = sorted(map(str, out_dims))
        raise ValueError(f"out_dims: expected keys {config.heads}, got {got}")
    for h in config.heads:
        check_int(out_dims[h], "out_dims", min=1, max=1 << 20)


def _check_tensor(x, name: str, ndim: int, *, finite: bool = True) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    if x.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: must not be empty, got shape {tuple(x.shape)}")
    if finite and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name}: contains NaN or inf")
    return x


def delta_rule_scan(state: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    beta: torch.Tensor, *, keep: torch.Tensor | None = None,
                    mask: torch.Tensor | None = None,
                    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Read-before-write delta-rule scan over a sequence (token-level writes).

    Parameters
    ----------
    state : Tensor, shape (B, r, r)
        ``S_0``, the state before the first token.
    q, k, v : Tensor, shape (B, T, r)
        Read queries ``q_t``, write keys ``k_t`` and values ``v_t``.
    beta : Tensor, shape (B, T, r)
        Write gates ``beta_t`` (in [0, 1] for a contraction; not enforced), one per row.
    keep : Tensor, shape (B, T, r), optional
        Keep gates ``lambda_t``; default ``1 - beta`` (the coupled gate).
    mask : Tensor, shape (B, T), optional
        1 (or True) where a token writes; a masked token (0) leaves the state unchanged
        (its read is still taken).

    Returns
    -------
    new_state : Tensor, shape (B, r, r)
        ``S_T``.
    reads : Tensor, shape (B, T, r)
        ``r_t = S_{t-1} q_t``.

    Examples
    --------
    With keep 1 and beta 1, a unit key's write is read back exactly:

    >>> k = torch.tensor([[[1.0, 0.0]]]); v = torch.tensor([[[0.3, -2.0]]])
    >>> S, _ = delta_rule_scan(torch.zeros(1, 2, 2), k, k, v, torch.ones(1, 1, 2),
    ...                        keep=torch.ones(1, 1, 2))
    >>> (S @ k[0, 0]).tolist()
    [[0.30000001192092896, -2.0]]
    """
    state = _check_tensor(state, "state", 3)
    B, r, r2 = state.shape
    if r != r2:
        raise ValueError(f"state: expected shape (B, r, r), got {tuple(state.shape)}")
    q = _check_tensor(q, "q", 3)
    if q.shape[0] != B or q.shape[2] != r:
        raise ValueError(f"q: expected shape ({B}, T, {r}), got {tuple(q.shape)}")
    T = q.shape[1]
    if B * T > MAX_SCAN_TOKENS:
        raise ValueError(f"q: {B * T} tokens, more than the limit of {MAX_SCAN_TOKENS}")
    for name, x in (("k", k), ("v", v), ("beta", beta)):
        _check_tensor(x, name, 3)
        if x.shape != q.shape:
            raise ValueError(f"{name}: expected shape {tuple(q.shape)}, got {tuple(x.shape)}")
    if keep is not None:
        _check_tensor(keep, "keep", 3)
        if keep.shape != q.shape:
            raise ValueError(f"keep: expected shape {tuple(q.shape)}, got {tuple(keep.shape)}")
    for name, x in (("q", q), ("k", k), ("v", v), ("beta", beta), ("keep", keep)):
        if x is not None and (x.dtype != state.dtype or x.device != state.device):
            raise TypeError(f"{name}: expected {state.dtype} on {state.device} like state, got "
                            f"{x.dtype} on {x.device}")
    if keep is None:
        keep = 1.0 - beta
    if mask is not None:
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"mask: expected a torch.Tensor, got {type(mask).__name__}")
        if tuple(mask.shape) != (B, T):
            raise ValueError(f"mask: expected shape ({B}, {T}), got {tuple(mask.shape)}")
        mask = mask.to(state.dtype)
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("mask: entries must be 0 or 1")
    reads = []
    S = state
    for t in range(T):
        qt, kt, vt = q[:, t], k[:, t], v[:, t]  # (B, r)
        reads.append(torch.einsum("bij,bj->bi", S, qt))  # Eq. (read): r_t = S_{t-1} q_t
        Sk = torch.einsum("bij,bj->bi", S, kt)  # (B, r): S_{t-1} k_t
        bt = beta[:, t, :, None]  # (B, r, 1): the gates act on rows
        # Eq. (update): S_t = lambda_t * S - beta_t * (S k_t) k_t^T + beta_t * v_t k_t^T
        new = keep[:, t, :, None] * S + bt * (vt - Sk)[:, :, None] * kt[:, None, :]
        if mask is not None:
            m = mask[:, t, None, None]
            new = m * new + (1.0 - m) * S
        S = new
    return S, torch.stack(reads, dim=1)


class DeltaMemory(nn.Module):
    """The trainable part of delta-Mem for one layer: projections, gates and corrections.

    Parameters
    ----------
    dim : int
        ``D``, the width of the attention input ``h_t``.
    out_dims : dict of str to int
        Output width of each corrected projection (``{"q": 576, "k": 192, ...}``).
    config : DeltaMemConfig
    generator : torch.Generator, optional
        Draws the initial ``W_q^m, W_k^m, W_v^m`` (normal, std ``D^-1/2``).

    Examples
    --------
    >>> mem = DeltaMemory(16, {"q": 16, "o": 16}, DeltaMemConfig(rank=4, heads=("q", "o")))
    >>> q, k, v, beta = mem.project(torch.randn(2, 3, 16))
    >>> q.shape, float(beta[0, 0, 0].detach())  # doctest: +ELLIPSIS
    (torch.Size([2, 3, 4]), 0.182...)
    """

    def __init__(self, dim: int, out_dims: dict[str, int], config: DeltaMemConfig, *,
                 generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(config, DeltaMemConfig):
            raise TypeError(f"config: expected a DeltaMemConfig, got {type(config).__name__}")
        dim = check_int(dim, "dim", min=1, max=1 << 20)
        _check_out_dims(out_dims, config)
        r = config.rank
        self.config = config
        self.dim = dim
        self.qkv = nn.Parameter(torch.empty(3, r, dim))  # W_q^m, W_k^m, W_v^m
        nn.init.normal_(self.qkv, std=dim**-0.5, generator=generator)
        self.beta_weight = nn.Parameter(torch.zeros(r, dim))  # W_beta = 0
        self.beta_bias = nn.Parameter(torch.full((r,), float(config.beta_bias_init)))
        self.up = nn.ParameterDict({
            h: nn.Parameter(torch.zeros(out_dims[h], r))
            for h in config.heads
        })  # fmt: skip  # U_x, zero at init

    def project(self, h: torch.Tensor):
        """``(q, k, v, beta)``, each ``(B, T, r)``, from attention inputs ``h`` ``(B, T, D)``."""
        h = _check_tensor(h, "h", 3)
        if h.shape[-1] != self.dim:
            raise ValueError(f"h: expected last dimension {self.dim}, got {h.shape[-1]}")
        q, k, v = torch.einsum("btd,crd->cbtr", h, self.qkv)  # (3, B, T, r)
        if self.config.normalize_qk:
            q = nn.functional.normalize(torch.tanh(q), dim=-1)
            k = nn.functional.normalize(torch.tanh(k), dim=-1)
        beta = torch.sigmoid(h @ self.beta_weight.T + self.beta_bias)  # (B, T, r)
        return q, k, v, beta

    def keep_gate(self, beta: torch.Tensor) -> torch.Tensor:
        """``lambda_t``: ``1 - beta_t`` ("standard") or ones ("no_lambda")."""
        return 1.0 - beta if self.config.state_update == "standard" else torch.ones_like(beta)

    def corrections(self, reads: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{x: (alpha / r) U_x r_t}`` for each corrected head, each ``(B, T, out_x)``."""
        scale = self.config.alpha / self.config.rank
        return {h: scale * reads @ u.T for h, u in self.up.items()}


#: The attention layouts delta-Mem wraps (named in its errors).
SUPPORTED = ("LLaMA / Qwen2 / Mistral / Gemma-style attention with separate q_proj, k_proj, "
             "v_proj and o_proj nn.Linear maps (GPT-2's fused c_attn Conv1D is not supported: "
             "the memory corrects q, k and v separately)")


def _attention_parts(attn: nn.Module) -> dict[str, nn.Linear]:
    parts = {h: getattr(attn, f"{h}_proj", None) for h in HEADS}
    if any(not isinstance(p, nn.Linear) for p in parts.values()):
        raise ValueError(
            f"attn: {type(attn).__name__} has no q_proj/k_proj/v_proj/o_proj linears; "
            f"supported: {SUPPORTED}"
        )
    return parts  # type: ignore[return-value]


class DeltaMemAttention(nn.Module):
    """A frozen causal self-attention module with a delta-rule memory beside it.

    Called with the wrapped module's arguments (the attention input as ``hidden_states``
    or the first positional argument, shape ``(B, T, D)``); returns what it returns, with
    the corrections added. Holds ``state`` (``(B, r, r)``, ``None`` until the first call).

    Parameters
    ----------
    attn : nn.Module
        A Hugging Face-style attention block with ``q_proj``, ``k_proj``, ``v_proj``,
        ``o_proj`` linears (LLaMA, Qwen2, Mistral, Gemma layouts).
    config : DeltaMemConfig
    name : str
        Shown in errors (``"model.layers.29.self_attn"``).
    generator : torch.Generator, optional
    """

    def __init__(self, attn: nn.Module, config: DeltaMemConfig, *, name: str = "attention",
                 generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(attn, nn.Module):
            raise TypeError(f"attn: expected a torch.nn.Module, got {type(attn).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str, got {type(name).__name__}")
        if not isinstance(config, DeltaMemConfig):
            raise TypeError(f"config: expected a DeltaMemConfig, got {type(config).__name__}")
        parts = _attention_parts(attn)
        dim = parts["q"].in_features
        out = {"q": parts["q"].out_features, "k": parts["k"].out_features,
               "v": parts["v"].out_features, "o": parts["o"].out_features}  # fmt: skip
        self.inner = attn
        self.memory = DeltaMemory(dim, {h: out[h] for h in config.heads}, config,
                                  generator=generator)  # fmt: skip
        self.name = name
        self.state: torch.Tensor | None = None
        self.write_mask: torch.Tensor | None = None  # (B, T), set by write_mask()
        # the memory follows the wrapped model: its device and its floating dtype (a bf16 or
        # float64 backbone would otherwise meet float32 parameters on its first forward)
        ref = parts["q"].weight
        self.memory.to(device=ref.device, dtype=ref.dtype)

    def reset_state(self) -> None:
        """Forget everything: the next call starts from ``S = 0``."""
        self.state = None

    def detach_state(self) -> None:
        """Cut the gradient history of the state (truncated backpropagation in time)."""
        if self.state is not None:
            self.state = self.state.detach()

    def forward(self, *args, **kwargs):
        h = kwargs.get("hidden_states", args[0] if args else None)
        if not isinstance(h, torch.Tensor) or h.dim() != 3:
            shape = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
            raise ValueError(f"hidden_states: expected (B, T, D) at {self.name}, got {shape}")
        if h.shape[-1] != self.memory.dim:
            raise ValueError(f"hidden_states: expected width {self.memory.dim} at {self.name}, "
                             f"got {h.shape[-1]}")  # fmt: skip
        if h.numel() == 0:
            raise ValueError(f"hidden_states: empty (shape {tuple(h.shape)}) at {self.name}")
        weight = next(self.memory.parameters(), None)
        if weight is not None and (h.dtype != weight.dtype or h.device != weight.device):
            raise TypeError(f"hidden_states: expected {weight.dtype} on {weight.device} (the "
                            f"model's) at {self.name}, got {h.dtype} on {h.device}")
        if not bool(torch.isfinite(h).all()):
            raise ValueError(f"hidden_states: non-finite activations entering {self.name}")
        B = h.shape[0]
        r = self.memory.config.rank
        if self.state is None:
            state = h.new_zeros(B, r, r)
        elif self.state.shape[0] != B:
            raise ValueError(
                f"hidden_states: batch size {B} differs from the state's "
                f"{self.state.shape[0]} at {self.name}; call reset_delta_mem(model) first"
            )
        elif not bool(torch.isfinite(self.state).all()):
            raise ValueError(f"state: non-finite delta-Mem state at {self.name}")
        else:
            state = self.state
        q, k, v, beta = self.memory.project(h)
        mask = self.write_mask
        if mask is not None and tuple(mask.shape) != (B, h.shape[1]):
            raise ValueError(f"mask: expected shape ({B}, {h.shape[1]}) at {self.name}, "
                             f"got {tuple(mask.shape)}")
        new_state, reads = delta_rule_scan(state, q, k, v, beta,
                                           keep=self.memory.keep_gate(beta), mask=mask)
        if not bool(torch.isfinite(new_state).all()):
            raise ValueError(f"state: non-finite delta-Mem state at {self.name}")
        self.state = new_state
        delta = self.memory.corrections(reads)  # each (B, T, out)
        parts = _attention_parts(self.inner)
        handles = [
            parts[x].register_forward_hook(lambda _m, _i, o, d=delta[x]: o + d)
            for x in ("q", "k", "v") if x in delta
        ]  # fmt: skip
        try:
            out = self.inner(*args, **kwargs)
        finally:
            for hd in handles:
                hd.remove()
        if "o" in delta:
            if isinstance(out, tuple):
                return (out[0] + delta["o"], *out[1:])
            return out + delta["o"]
        return out


def _default_target(name: str, module: nn.Module) -> bool:
    return name.endswith("self_attn")


def attach_delta_mem(model: nn.Module, config: DeltaMemConfig | None = None, *,
                     target: Callable[[str, nn.Module], bool] | None = None,
                     layers=None, seed: int = 0) -> list[str]:  # fmt: skip
    """Wrap a model's self-attention modules with delta-Mem, in place; freeze the backbone.

    Parameters
    ----------
    model : nn.Module
        A causal LM (any Hugging Face LLaMA / Qwen2 / Mistral / Gemma layout).
    config : DeltaMemConfig, optional
    target : callable (name, module) -> bool, optional
        Which modules to wrap (default: names ending in ``self_attn``).
    layers : sequence of int, optional
        Only these decoder layers (e.g. the top ones; negative indices count from the end).
    seed : int
        Seed of the initial memory projections.

    Returns
    -------
    list of str
        The wrapped modules' names.

    Raises
    ------
    ValueError
        No supported attention module matched, or one is wrapped already.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0, num_layers=2)
    >>> attach_delta_mem(m, DeltaMemConfig(), layers=[-1])
    ['model.layers.1.self_attn']
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    config = DeltaMemConfig() if config is None else config
    if not isinstance(config, DeltaMemConfig):
        raise TypeError(f"config: expected a DeltaMemConfig, got {type(config).__name__}")
    if target is not None and not callable(target):
        raise TypeError(f"target: expected a callable, got {type(target).__name__}")
    seed = check_seed(seed)
    target = target or _default_target
    if any(isinstance(m, DeltaMemAttention) for m in model.modules()):
        raise ValueError("model: already has delta-Mem attached; call detach_delta_mem first")
    chosen = [(n, m) for n, m in model.named_modules() if n and target(n, m)]
    if layers is not None:
        if isinstance(layers, str | bytes) or not hasattr(layers, "__iter__"):
            raise TypeError(f"layers: expected a sequence of int, got {type(layers).__name__}")
        ids = [check_int(i, "layers") for i in layers]
        n = len(chosen)
        if not ids or any(not -n <= i < n for i in ids):
            raise ValueError(f"layers: {ids} out of range for {n} attention modules")
        keep = {i % n for i in ids}
        chosen = [c for j, c in enumerate(chosen) if j in keep]
    supported = []
    for name, mod in chosen:
        try:
            _attention_parts(mod)
        except ValueError:
            continue
        supported.append((name, mod))
    if not supported:
        raise ValueError(
            f"model: {type(model).__name__} has no supported attention modules under a "
            f"matching name (default: names ending in self_attn); supported: {SUPPORTED}"
        )
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    for name, mod in supported:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, DeltaMemAttention(mod, config, name=name, generator=gen))
    return [n for n, _ in supported]


def delta_mem_modules(model: nn.Module) -> list[DeltaMemAttention]:
    """The :class:`DeltaMemAttention` wrappers of a model, in module order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    return [m for m in model.modules() if isinstance(m, DeltaMemAttention)]


def _require_modules(model) -> list[DeltaMemAttention]:
    mods = delta_mem_modules(model)
    if not mods:
        raise ValueError("model: has no delta-Mem attached (call attach_delta_mem first)")
    return mods


def reset_delta_mem(model: nn.Module) -> None:
    """Clear the state of every wrapped layer (a new dialogue, or a new batch size)."""
    for m in _require_modules(model):
        m.reset_state()


def detach_delta_mem_state(model: nn.Module) -> None:
    """Truncate backpropagation through time: cut every state's gradient history."""
    for m in _require_modules(model):
        m.detach_state()


def _check_write_mask(mask) -> torch.Tensor:
    """A finite 0/1 ``(B, T)`` tensor from a tensor, an array or a tokenizer's output."""
    if isinstance(mask, Mapping):  # a BatchEncoding: its padding mask
        if mask.get("attention_mask") is None:
            raise ValueError("mask: the tokenizer output holds no 'attention_mask' (tokenize "
                             "with padding=True, or pass the (B, T) 0/1 mask itself)")
        mask = mask["attention_mask"]
    if isinstance(mask, (list, tuple, np.ndarray)):
        try:
            mask = torch.as_tensor(np.asarray(mask))
        except (ValueError, TypeError):
            raise TypeError("mask: expected a (B, T) 0/1 tensor, array or tokenizer output") \
                from None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask: expected a torch.Tensor, array or tokenizer output, got "
                        f"{type(mask).__name__}")  # fmt: skip
    if mask.dtype.is_complex:
        raise TypeError(f"mask: expected real 0/1 entries, got {mask.dtype}")
    if mask.dim() != 2:
        raise ValueError(f"mask: expected a (B, T) tensor, got shape {tuple(mask.shape)}")
    if mask.numel() == 0:
        raise ValueError(f"mask: must not be empty, got shape {tuple(mask.shape)}")
    if not bool(((mask == 0) | (mask == 1)).all()):  # NaN and inf fail both
        raise ValueError("mask: entries must be 0 or 1 (no NaN, inf or fractions)")
    return mask


@contextlib.contextmanager
def write_mask(model: nn.Module, mask) -> Iterator[None]:
    """Within the block, only tokens where ``mask`` (``(B, T)``, 0/1) is 1 write the state.

    Right-padded batches pass their padding mask so padding never writes. ``mask`` may be
    a tensor or array, or a tokenizer's output (a ``BatchEncoding`` / dict whose
    ``attention_mask`` is used): ``with write_mask(model, batch): model(**batch)``.

    Raises
    ------
    ValueError
        A mask that is not 2-D, empty, or holds anything but 0 and 1 (NaN included).
    """
    mods = _require_modules(model)
    mask = _check_write_mask(mask)
    for m in mods:
        m.write_mask = mask
    try:
        yield
    finally:
        for m in mods:
            m.write_mask = None


def delta_mem_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable memory parameters (``W^m``, ``W_beta``, ``b_beta``, ``U_*``)."""
    return [p for m in _require_modules(model) for p in m.memory.parameters()]


def detach_delta_mem(model: nn.Module) -> list[str]:
    """Put the original attention modules back (the memory is dropped); returns their names."""
    _require_modules(model)
    names = []
    for name, mod in list(model.named_modules()):
        if isinstance(mod, DeltaMemAttention):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, mod.inner)
            names.append(name)
    if not names:
        raise ValueError("model: has no delta-Mem attached")
    return names


def state_floats(model: nn.Module) -> list[int]:
    """Floats of memory state per wrapped layer and sequence (``r^2`` each)."""
    return [m.memory.config.rank**2 for m in _require_modules(model)]


def num_memory_parameters(dim: int, out_dims: dict[str, int], config: DeltaMemConfig) -> int:
    """Trainable parameters of one layer's memory: ``4 r D + r + r * sum(out)`` (closed form).

    >>> num_memory_parameters(576, {"q": 576, "k": 192, "v": 192, "o": 576}, DeltaMemConfig())
    30728
    """
    dim = check_int(dim, "dim", min=1, max=1 << 30)
    if not isinstance(config, DeltaMemConfig):
        raise TypeError(f"config: expected a DeltaMemConfig, got {type(config).__name__}")
    _check_out_dims(out_dims, config)
    r = config.rank
    outs = [out_dims[h] for h in config.heads]
    return 4 * r * dim + r + r * int(math.fsum(outs))
