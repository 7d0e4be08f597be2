"""Contrastive activation addition (CAA), the steering hook and the behavioural loss.

A steering vector ``v`` (shape ``(d,)``) is added to the residual stream after decoder
block ``layer`` of a Hugging Face causal LM (LLaMA, Qwen2, Mistral, Gemma layouts, or any
model :func:`neurips26.common.models.llm.decoder_layers` finds). The behavioural loss of
the paper is, in our reading, the mean negative log-probability of the behaviour-matching
answer token over a prompt set,

    L(v) = - (1/B) sum_b log p(y_b | x_b ; h_l <- h_l + v),               # Eq. (1)

whose gradient and Hessian in ``v`` are what :mod:`.hessian` computes.

Token data: every entry point that takes prompts takes id tensors/arrays (with
``attention_mask=``) or a tokenizer's output (a ``BatchEncoding`` or a dict with
``input_ids`` and ``attention_mask``; left-padded, ``tokenizer.padding_side = "left"``),
see :func:`neurips26.common.models.llm.token_inputs`. Architectures: any causal LM whose
decoder blocks :func:`~neurips26.common.models.llm.decoder_layers` finds and whose
block output is the residual stream: LLaMA / Qwen2 / Mistral / Gemma
(``model.layers``) and GPT-2 (``transformer.h``). Vectors follow the model's dtype
(:func:`caa_vector` returns it in the model's floating dtype: bf16 or float64 models
are never handed float32 vectors).

Positions: ``"all"`` adds ``v`` at every position, ``"last"`` at the last position of the
chunk being processed (the answer position of a prompt; the new token at each step of
cached generation), and an integer ``p`` at positions ``p, p+1, ...`` (teacher-forced
replays of a generation steered at ``"last"``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from neurips26.common.models.llm import (
    capture_residual,
    check_attention_mask,
    decoder_layers,
    token_inputs,
)
from neurips26.common.validation import check_array, check_float, check_int

__all__ = [
    "SUPPORTED",
    "SteeringObjective",
    "answer_log_probs",
    "behavioural_loss",
    "caa_vector",
    "check_model",
    "check_positions",
    "model_dtype",
    "steer",
]

MAX_TOKENS = 1 << 22


SUPPORTED = ("LLaMA/Qwen2/Mistral/Gemma (model.layers) and GPT-2 (transformer.h) Hugging Face "
             "causal LMs, or any model with decoder blocks at model.layers, transformer.h or "
             "blocks")


def check_model(model) -> int:
    """The residual width ``d`` of a causal LM with decoder layers; refuses anything else."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module causal LM, got {type(model).__name__}")
    try:
        decoder_layers(model)
    except ValueError as exc:
        raise ValueError(f"{exc}; supported architectures: {SUPPORTED}") from None
    config = getattr(model, "config", None)
    dim = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    if not isinstance(dim, int):
        raise ValueError(f"model: {type(model).__name__} has no config.hidden_size")
    return dim


def _vocab(model) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        raise ValueError(f"model: {type(model).__name__} has no output embeddings (not a causal "
                         f"LM); supported architectures: {SUPPORTED}")  # fmt: skip
    return int(head.weight.shape[0])


def model_dtype(model) -> torch.dtype:
    """The floating dtype of a model's parameters (float32 for a model without any)."""
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def _tokens(data, name: str, vocab: int, attention_mask=None):
    """``(ids, mask)`` of prompts given as ids (+ ``attention_mask``) or a tokenizer output."""
    raw, mask = token_inputs(data, name, attention_mask=attention_mask)
    ids = _check_ids(raw, name, vocab)
    return ids, _check_mask(mask, ids)


def _check_layer(model, layer) -> int:
    n = len(decoder_layers(model))
    return check_int(layer, "layer", min=0, max=n - 1)


def check_positions(positions):
    """``"all"``, ``"last"`` or a non-negative integer start position."""
    if isinstance(positions, str):
        if positions not in ("all", "last"):
            raise ValueError(f"positions must be 'all', 'last' or an int, got {positions!r}")
        return positions
    return check_int(positions, "positions", min=0, max=MAX_TOKENS)


def _check_ids(ids, name: str, vocab: int, *, ndim: int = 2) -> torch.Tensor:
    if ids is None or isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be an integer array, got {type(ids).__name__}")
    if isinstance(ids, torch.Tensor):
        t = ids.detach().cpu()
    else:
        t = torch.as_tensor(check_array(ids, name, dtype=None, finite=False, min_size=0,
                                        max_size=MAX_TOKENS))  # fmt: skip
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    if t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if t.numel() > MAX_TOKENS:
        raise ValueError(f"{name} has {t.numel()} tokens, more than the limit of {MAX_TOKENS}")
    if int(t.min()) < 0 or int(t.max()) >= vocab:
        raise ValueError(f"{name}: token ids must lie in [0, {vocab}), got "
                         f"[{int(t.min())}, {int(t.max())}]")  # fmt: skip
    device = ids.device if isinstance(ids, torch.Tensor) else "cpu"
    return t.long().to(device)


def _check_mask(mask, ids: torch.Tensor, name: str = "attention_mask"):
    m = check_attention_mask(mask, ids, name=name)
    if m is None:
        return None
    if not bool(m[:, -1].all()):
        raise ValueError(f"{name}: the last position of every row must be a real token "
                         "(left-pad the prompts: tokenizer.padding_side = 'left')")  # fmt: skip
    return m.long().to(ids.device)


def _check_vector(v, dim: int, name: str = "v") -> torch.Tensor:
    if v is None or isinstance(v, (str, bytes)):
        raise TypeError(f"{name} must be a real vector of shape ({dim},), got {type(v).__name__}")
    if isinstance(v, torch.Tensor):
        t = v
        if t.dtype.is_complex or t.dtype == torch.bool:
            raise TypeError(f"{name} must be a real vector, got dtype {t.dtype}")
    else:
        t = torch.as_tensor(check_array(v, name, dtype=None, finite=False, min_size=0))
    if tuple(t.shape) != (dim,):
        raise ValueError(f"{name} must have shape ({dim},), got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite")
    if float(t.detach().abs().max()) > 1e6:
        raise ValueError(f"{name} has entries above 1e6 in magnitude")
    return t if t.dtype.is_floating_point else t.double()


def _add(h: torch.Tensor, v: torch.Tensor, positions) -> torch.Tensor:
    v = v.to(device=h.device, dtype=h.dtype)
    if positions == "all":
        return h + v  # (B, T, d)
    if positions == "last":
        start = h.shape[1] - 1
    else:
        start = min(int(positions), h.shape[1])
    mask = torch.zeros(h.shape[1], 1, dtype=h.dtype, device=h.device)
    mask[start:] = 1
    return h + mask * v  # (B, T, d): v only at positions >= start


@contextlib.contextmanager
def steer(model: nn.Module, v, *, layer: int, positions="all",
          alpha: float = 1.0) -> Iterator[None]:  # fmt: skip
    """Add ``alpha * v`` to the residual stream after block ``layer`` while inside.

    Parameters
    ----------
    model : Hugging Face causal LM (or any model with decoder layers)
    v : Tensor or array_like, shape (d,)
        The steering vector. A tensor that requires grad stays in the graph (the
        Hessian code differentiates through the hook).
    layer : int
        Block index in ``[0, n_layer)``; ``v`` is added to that block's output.
    positions : {"all", "last"} or int
        Where to add ``v`` (module docstring).
    alpha : float
        Scale of the added vector.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> ids = torch.tensor([[1, 2, 3]])
    >>> with steer(m, torch.zeros(64), layer=1):
    ...     same = m(input_ids=ids).logits
    >>> bool(torch.equal(same, m(input_ids=ids).logits))
    True
    """
    dim = check_model(model)
    i = _check_layer(model, layer)
    positions = check_positions(positions)
    v = _check_vector(v, dim)
    alpha = check_float(alpha, "alpha", min=-1e6, max=1e6)
    scaled = v * alpha if alpha != 1.0 else v

    def hook(_mod, _inp, out):
        if isinstance(out, tuple):
            return (_add(out[0], scaled, positions), *out[1:])
        return _add(out, scaled, positions)

    handle = decoder_layers(model)[i].register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _logits(model, ids, mask, cache=None):
    kwargs = {"input_ids": ids}
    if mask is not None:
        kwargs["attention_mask"] = mask
    if cache is not None:
        kwargs["cache"] = cache
        kwargs["use_cache"] = True
    out = model(**kwargs)
    return out.logits if hasattr(out, "logits") else out[0]


@torch.no_grad()
def caa_vector(model: nn.Module, pos_ids, neg_ids, *, layer: int, position: int = -1,
               attention_mask=None) -> torch.Tensor:  # fmt: skip
    """The CAA steering vector ``v = mean_i (h_l(x_i^+) - h_l(x_i^-))`` at one position.

    Parameters
    ----------
    model : causal LM
    pos_ids, neg_ids : int array, shape (P, T), or tokenizer outputs
        Contrastive prompts: the same prompt ending in the behaviour-matching answer
        letter (``+``) or the other one (``-``); left-padded alike. A tokenizer output
        (``BatchEncoding``) brings its own attention mask.
    layer : int
        Block whose output residual stream is read.
    position : int
        Token position read (default the last: the answer letter).
    attention_mask : 0/1 array, shape (P, T), optional
        Shared by both batches of ids.

    Returns
    -------
    Tensor, shape (d,)
        In the model's floating dtype (the mean is taken in float64).

    Raises
    ------
    ValueError
        Mismatched shapes, empty batches, ``layer`` out of range, ids outside the vocabulary,
        non-finite activations (naming the layer).

    References
    ----------
    Rimsky et al., "Steering Llama 2 via Contrastive Activation Addition", ACL 2024.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> caa_vector(m, [[5, 6, 65]], [[5, 6, 66]], layer=0).shape
    torch.Size([64])
    """
    check_model(model)
    i = _check_layer(model, layer)
    vocab = _vocab(model)
    pos, pos_mask = _tokens(pos_ids, "pos_ids", vocab)
    neg, neg_mask = _tokens(neg_ids, "neg_ids", vocab)
    if pos.shape != neg.shape:
        raise ValueError(f"pos_ids and neg_ids must have the same shape, got "
                         f"{tuple(pos.shape)} and {tuple(neg.shape)}")  # fmt: skip
    if attention_mask is not None:
        if pos_mask is not None or neg_mask is not None:
            raise ValueError("attention_mask: given twice (as an argument and inside a "
                             "tokenizer output); pass one")  # fmt: skip
        pos_mask = neg_mask = _check_mask(attention_mask, pos)
    t = pos.shape[1]
    position = check_int(position, "position", min=-t, max=t - 1)
    acts = []
    for ids, mask in ((pos, pos_mask), (neg, neg_mask)):
        with capture_residual(model, [i]) as store:
            _logits(model, ids, mask)
        acts.append(store[i][:, position].double())  # (P, d)
    # Eq. (CAA): mean difference, in the model's dtype
    return (acts[0] - acts[1]).mean(0).to(model_dtype(model))


def answer_log_probs(model: nn.Module, prompts, target_ids, v=None, *, layer: int = 0,
                     positions="last", attention_mask=None) -> torch.Tensor:  # fmt: skip
    """``log p(y_b | x_b)`` of the answer token after each prompt, steered by ``v``.

    Parameters
    ----------
    model : causal LM
    prompts : int array, shape (B, T), or a tokenizer output
        Prompts ending where the answer token comes next (left-padded).
    target_ids : int array, shape (B,)
        The behaviour-matching answer token of each prompt.
    v : Tensor, shape (d,), or None
        Steering vector (``None``: unsteered).
    layer, positions : see :func:`steer`
    attention_mask : 0/1 array, shape (B, T), optional

    Returns
    -------
    Tensor, shape (B,)
    """
    return SteeringObjective(model, prompts, target_ids, layer=layer, positions=positions,
                             attention_mask=attention_mask, cache_prefix=False
                             ).log_probs(v)  # fmt: skip


def behavioural_loss(model: nn.Module, prompts, target_ids, v, *, layer: int,
                     positions="last", attention_mask=None) -> torch.Tensor:  # fmt: skip
    """The behavioural loss ``L(v) = -mean_b log p(y_b | x_b; v)`` (Eq. 1), a scalar tensor.

    Differentiable in ``v`` (pass a tensor with ``requires_grad``).

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> loss = behavioural_loss(m, [[5, 6, 40]], [65], torch.zeros(64), layer=1)
    >>> loss.shape, bool(loss > 0)
    (torch.Size([]), True)
    """
    return SteeringObjective(model, prompts, target_ids, layer=layer, positions=positions,
                             attention_mask=attention_mask, cache_prefix=False)(v)  # fmt: skip


class SteeringObjective:
    """The behavioural loss of Eq. (1) as a function of ``v``, for one prompt set.

    With ``positions="last"`` only the last position of each prompt depends on ``v``, so
    the prompts minus their last token are run once (no grad) and their key/value cache
    is reused: each loss, gradient and Hessian-vector product then costs one token per
    prompt. The result equals the uncached loss (a test); ``cache_prefix=False`` turns
    the shortcut off.

    Parameters
    ----------
    model : causal LM (its parameters are not differentiated)
    prompts : int array, shape (B, T), or a tokenizer output
        A ``BatchEncoding`` (or dict with ``input_ids``) brings its attention mask.
    target_ids : int array, shape (B,)
    layer : int
    positions : {"all", "last"} or int
    attention_mask : 0/1 array, shape (B, T), optional
    cache_prefix : bool
        Use the prefix cache when ``positions="last"`` and ``T >= 2``.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> f = SteeringObjective(m, [[5, 6, 40], [7, 8, 40]], [65, 66], layer=1)
    >>> round(float(f(torch.zeros(64))), 4) == round(float(behavioural_loss(
    ...     m, [[5, 6, 40], [7, 8, 40]], [65, 66], torch.zeros(64), layer=1)), 4)
    True
    """

    def __init__(self, model, prompts, target_ids, *, layer: int, positions="last",
                 attention_mask=None, cache_prefix: bool = True):  # fmt: skip
        self.dim = check_model(model)
        self.model = model
        self.layer = _check_layer(model, layer)
        self.positions = check_positions(positions)
        vocab = _vocab(model)
        self.dtype = model_dtype(model)
        self.prompts, self.mask = _tokens(prompts, "prompts", vocab, attention_mask)
        self.targets = _check_ids(target_ids, "target_ids", vocab, ndim=1)
        if len(self.targets) != len(self.prompts):
            raise ValueError(f"target_ids must have one entry per prompt ({len(self.prompts)}), "
                             f"got {len(self.targets)}")  # fmt: skip
        if not isinstance(cache_prefix, bool):
            raise TypeError(f"cache_prefix must be a bool, got {cache_prefix!r}")
        self._prefix = None
        if cache_prefix and self.positions == "last" and self.prompts.shape[1] >= 2:
            with torch.no_grad():
                m = None if self.mask is None else self.mask[:, :-1]
                out = model(input_ids=self.prompts[:, :-1], attention_mask=m, use_cache=True)
            cache = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
            if cache is not None and hasattr(cache, "crop"):
                self._prefix = cache

    @property
    def num_prompts(self) -> int:
        return len(self.prompts)

    def log_probs(self, v=None, others=None) -> torch.Tensor:
        """``log p(y_b | x_b; v)``, shape (B,); ``v=None`` is the unsteered model.

        ``others``: token ids of shape (B, k) whose log-probabilities after each prompt
        are returned too, from the same forward pass (e.g. the other answer letter); the
        result is then ``(B, 1 + k)``, the targets' column first.
        """
        if others is not None:
            others = _check_ids(others, "others", _vocab(self.model)).to(self.targets.device)
            if len(others) != len(self.targets):
                raise ValueError(f"others must have one row per prompt ({len(self.targets)}), "
                                 f"got {len(others)}")  # fmt: skip
        v = torch.zeros(self.dim, dtype=self.dtype) if v is None else _check_vector(v, self.dim)
        with steer(self.model, v, layer=self.layer, positions=self.positions):
            if self._prefix is not None:
                try:
                    logits = _logits(self.model, self.prompts[:, -1:], self.mask, self._prefix)
                finally:
                    self._prefix.crop(-1)  # drop the last token again: the prefix is reused
            else:
                logits = _logits(self.model, self.prompts, self.mask)
        last = logits[:, -1]
        logp = torch.log_softmax(last.to(torch.promote_types(last.dtype, torch.float32)), -1)
        if others is not None:
            return logp.gather(1, torch.cat([self.targets[:, None], others], 1))  # (B, 1 + k)
        return logp.gather(1, self.targets[:, None]).squeeze(1)  # (B,)

    def __call__(self, v) -> torch.Tensor:
        """The scalar loss ``L(v)`` (Eq. 1)."""
        return -self.log_probs(v).mean()
