"""Pruning a whole causal LM with the layer-by-layer sequential protocol.

As in Wanda's and SparseGPT's reference code, a model is pruned one decoder block at a
time: the block's calibration inputs are the outputs of the blocks before it *after* they
were pruned; every linear map of the block (``self_attn.{q,k,v,o}_proj`` and
``mlp.{gate,up,down}_proj``, the LLaMA / Qwen2 / Mistral / Gemma layout; or GPT-2's
``attn.c_attn``, ``attn.c_proj``, ``mlp.c_fc``, ``mlp.c_proj``, whose ``Conv1D`` weights
are stored transposed, ``(d_in, d_out)``) is pruned from the inputs it receives in the
dense block; then the pruned block is run again to give the next block's inputs.

Calibration tokens come as id tensors or as a tokenizer's output (a ``BatchEncoding``, or
``input_ids=`` with ``attention_mask=``); padded positions (mask 0) are run through the
model but never enter a score, a pairing, a Hessian or a perplexity.

Cost: a baseline pays only for itself. The kNN pairing (``O(N^2 d)``) runs only for the
difference methods, and the diagnostics of :class:`LayerReport` (reconstruction and
output-difference errors, which need a kNN pairing of every layer's inputs) only with
``diagnostics=True``; their time is kept out of ``wall_seconds``.

:func:`capture_block_inputs` runs the dense model once and keeps the hidden states
entering a chosen block (and every block's call arguments: rotary embeddings, masks).
When only blocks from ``start`` on are pruned, the part of the model before ``start`` is
identical for every method, so one capture serves all of them: :func:`prune_model` and
:func:`block_perplexity` start from it and run only the blocks from ``start`` on.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.models.llm import (
    TOKEN_LAYOUTS,
    check_attention_mask,
    decoder_layers,
    token_inputs,
)
from neurips26.common.validation import check_choice, check_float, check_int

from .obs import _prune_checked
from .pruning import (
    DIFFERENCE_METHODS,
    MAX_ABS,
    METHODS,
    PAIRINGS,
    Pairs,
    make_pairs,
    parse_sparsity,
)

#: Projection name -> attribute path inside a decoder block.
PROJECTIONS = {
    "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
    "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}  # fmt: skip
#: GPT-2's maps (``Conv1D`` layers: weight ``(d_in, d_out)``, pruned as its transpose);
#: ``"qkv"`` is the fused query/key/value projection.
GPT2_PROJECTIONS = {
    "qkv": "attn.c_attn", "o": "attn.c_proj", "up": "mlp.c_fc", "down": "mlp.c_proj",
}  # fmt: skip
#: Every projection name that some supported layout has.
ALL_PROJECTIONS = (*PROJECTIONS, "qkv")
ATTENTION = ("q", "k", "v", "o")
MLP = ("gate", "up", "down")
#: The baseline a difference method falls back to outside ``difference_layers``.
BASELINE = {"wisp": "wanda", "wisp_plus": "wanda", "whisper": "sparsegpt", "wisp_act": "wanda"}


def _get(module: nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def _is_conv1d(module) -> bool:
    """A transformers ``Conv1D`` (GPT-2): ``y = x W + b`` with ``W`` of shape (d_in, d_out)."""
    w = getattr(module, "weight", None)
    return (type(module).__name__ == "Conv1D" and isinstance(w, torch.Tensor) and w.ndim == 2
            and getattr(module, "nf", None) == w.shape[1])  # fmt: skip


def _is_map(module) -> bool:
    return isinstance(module, nn.Linear) or _is_conv1d(module)


def block_layout(block: nn.Module) -> dict[str, str]:
    """The projection-name -> attribute-path map of a decoder block's layout.

    :data:`PROJECTIONS` for the LLaMA / Qwen2 / Mistral / Gemma layout,
    :data:`GPT2_PROJECTIONS` for GPT-2 (``Conv1D`` maps); an empty dict otherwise.
    """
    if _is_conv1d(_get(block, "attn.c_attn")) and _is_conv1d(_get(block, "mlp.c_fc")):
        return dict(GPT2_PROJECTIONS)
    return dict(PROJECTIONS)


def _layout_name(layout: dict) -> str:
    return "GPT-2" if "qkv" in layout else "LLaMA/Qwen2/Mistral/Gemma"


SUPPORTED = ("LLaMA/Qwen2/Mistral/Gemma (self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj "
             "nn.Linear) and GPT-2 (attn.c_attn/c_proj, mlp.c_fc/c_proj Conv1D)")


def block_linears(block: nn.Module, names: Sequence[str] | None = None, *,
                  where: str = "block") -> dict[str, nn.Module]:  # fmt: skip
    """The named linear maps of a decoder block, e.g. ``{"gate": mlp.gate_proj, ...}``.

    ``names`` defaults to every map of the block's layout (:func:`block_layout`); GPT-2's
    maps are ``Conv1D`` modules (their weight is the transpose of ``W``). Raises
    ``ValueError`` naming the block (``where``), the missing sub-module and the supported
    architectures.
    """
    layout = block_layout(block)
    if names is None:
        names = tuple(layout)
    out = {}
    for name in names:
        if name not in ALL_PROJECTIONS:
            raise ValueError(f"names: unknown projection {name!r}; expected some of "
                             f"{ALL_PROJECTIONS}")  # fmt: skip
        if name not in layout:
            raise ValueError(f"projections: {where} has the {_layout_name(layout)} layout, "
                             f"which has no {name!r} map; its maps are {tuple(layout)}")
        lin = _get(block, layout[name])
        if not _is_map(lin):
            raise ValueError(f"model: {where} has no {layout[name]} linear; supported "
                             f"architectures: {SUPPORTED}")  # fmt: skip
        out[name] = lin
    return out


def map_weight(module: nn.Module) -> torch.Tensor:
    """The weight ``W`` (d_out, d_in) of ``y = W x``: ``weight`` of an ``nn.Linear``, the
    transposed view of a ``Conv1D``'s (writes through it change the module)."""
    return module.weight.data.T if _is_conv1d(module) else module.weight.data


def _in_features(module: nn.Module) -> int:
    return module.weight.shape[0] if _is_conv1d(module) else module.in_features


def _token_ids(ids, name: str, vocab: int | None) -> torch.Tensor:
    if isinstance(ids, torch.Tensor):
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise TypeError(f"{name} must be integer token ids, got {ids.dtype}")
        t = ids.long()
    else:
        try:
            arr = np.asarray(ids) if not isinstance(ids, (str, bytes)) else None
        except ValueError:  # ragged nested lists
            arr = None
        if arr is None or arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer array of token ids of one length "
                            f"(pad them); supported layouts: {'; '.join(TOKEN_LAYOUTS)}")
        t = torch.from_numpy(arr.astype(np.int64))
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 2:
        raise ValueError(f"{name} must have shape (B, T) with T >= 2, got {tuple(t.shape)}")
    if int(t.min()) < 0 or (vocab is not None and int(t.max()) >= vocab):
        raise ValueError(f"{name} holds ids outside [0, {vocab})")
    return t


def _check_model(model) -> nn.ModuleList:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return decoder_layers(model)


def _vocab(model) -> int | None:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return getattr(head, "out_features", None)


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _final_norm(model):
    return _get(model, "model.norm") or _get(model, "transformer.ln_f")


@dataclass(frozen=True)
class BlockInputs:
    """The dense model's hidden states entering block ``start``, and each block's call
    arguments (rotary embeddings, attention masks) for the same token batch.

    Attributes
    ----------
    start : int
        First block that may be pruned (blocks before it are never touched).
    hidden : torch.Tensor, shape (B, T, d)
    kwargs : dict of int to dict
        Keyword arguments of block ``l >= start``.
    ids : torch.LongTensor, shape (B, T)
        The token ids (targets for :func:`block_perplexity`).
    mask : torch.BoolTensor, shape (B, T), or None
        The attention mask (``False`` at padding); padded positions are left out of the
        calibration statistics and the perplexity.
    """

    start: int
    hidden: torch.Tensor
    kwargs: dict
    ids: torch.Tensor
    mask: torch.Tensor | None = None


class _Stop(Exception):
    pass


@torch.no_grad()
def capture_block_inputs(model, ids, *, start: int = 0, name: str = "ids",
                         attention_mask=None) -> BlockInputs:  # fmt: skip
    """Run the dense model once on ``ids`` (B, T) and keep what enters block ``start``.

    Parameters
    ----------
    model : transformers causal LM
    ids : LongTensor (B, T), array, or a tokenizer's output
        Token ids, or a ``BatchEncoding`` / dict with ``input_ids`` (and
        ``attention_mask``).
    start : int
        First block kept.
    name : str
        The argument named in error messages about ``ids``.
    attention_mask : 0/1 array (B, T), optional
        For padded id tensors (a tokenizer output brings its own).

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> cap = capture_block_inputs(m, torch.zeros(2, 8, dtype=torch.long), start=1)
    >>> tuple(cap.hidden.shape), sorted(cap.kwargs)
    ((2, 8, 64), [1])
    """
    blocks = _check_model(model)
    raw, raw_mask = token_inputs(ids, name, attention_mask=attention_mask)
    ids = _token_ids(raw, name, _vocab(model))
    mask = check_attention_mask(raw_mask, ids, min_real=2)
    start = check_int(start, "start", min=0, max=len(blocks) - 1)
    hidden: dict = {}
    kwargs: dict = {}

    def pre(mod, args, kw, i):
        h = args[0] if args else kw["hidden_states"]
        if i == start:
            hidden["h"] = h.detach().clone()
        kwargs[i] = {k: v for k, v in kw.items() if k not in ("hidden_states",)}
        if len(args) > 1:  # GPT-2 passes (cache, mask, encoder states) by position
            names = list(inspect.signature(mod.forward).parameters)[1:len(args)]
            kwargs[i].update(zip(names, args[1:], strict=False))
        for k in ("cache", "past_key_values", "past_key_value", "layer_past"):
            if k in kwargs[i]:
                kwargs[i][k] = None
        if "use_cache" in kw:
            kwargs[i]["use_cache"] = False
        if i == len(blocks) - 1:
            raise _Stop

    handles = [blocks[i].register_forward_pre_hook(lambda m, a, k, i=i: pre(m, a, k, i),
                                                   with_kwargs=True)
               for i in range(start, len(blocks))]  # fmt: skip
    call = {"input_ids": ids.to(_device(model)), "use_cache": False}
    if mask is not None:
        call["attention_mask"] = mask.long().to(_device(model))
    try:
        model(**call)
    except _Stop:
        pass
    finally:
        for h in handles:
            h.remove()
    if not torch.isfinite(hidden["h"]).all():
        raise ValueError(f"activations: non-finite hidden states entering layer {start}")
    return BlockInputs(start, hidden["h"], kwargs, ids, mask)


def _run_block(block, h, kw):
    out = block(h, **kw)
    return out[0] if isinstance(out, tuple) else out


def _check_inputs(inputs) -> BlockInputs:
    if not isinstance(inputs, BlockInputs):
        raise TypeError(f"inputs must be a BlockInputs, got {type(inputs).__name__}")
    return inputs


@torch.no_grad()
def block_perplexity(model, inputs: BlockInputs) -> float:
    """Perplexity of ``inputs.ids`` (each row a window) from block ``inputs.start`` on.

    Equals the full model's perplexity of the same windows while blocks before
    ``inputs.start`` are unchanged: the blocks from ``start``, the final norm and the
    output head are run on the captured hidden states (Gemma-style final logit
    soft-capping is applied when the config has it).

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    >>> 200 < block_perplexity(m, capture_block_inputs(m, ids, start=1)) < 320
    True
    """
    blocks = _check_model(model)
    inputs = _check_inputs(inputs)
    h = inputs.hidden
    for i in range(inputs.start, len(blocks)):
        h = _run_block(blocks[i], h, inputs.kwargs[i])
    norm = _final_norm(model)
    head = model.get_output_embeddings()
    if norm is None or head is None:
        raise ValueError("model: no model.norm / transformer.ln_f / output embeddings (not a "
                         f"HF causal LM); supported architectures: {SUPPORTED}")  # fmt: skip
    logits = head(norm(h)).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    tgt = inputs.ids[:, 1:].to(logp.device)
    nll = -logp.gather(2, tgt[..., None]).squeeze(-1)
    if inputs.mask is not None:  # a target is scored when it and its context token are real
        keep = (inputs.mask[:, 1:] & inputs.mask[:, :-1]).to(nll.device)
        if not bool(keep.any()):
            raise ValueError("inputs: no scored token (every target is padding)")
        nll = nll[keep]
    if not torch.isfinite(nll).all():
        raise ValueError("model: non-finite log-probabilities")
    return float(torch.exp(nll.mean()))


@dataclass(frozen=True)
class LayerReport:
    """One pruned linear map.

    Attributes
    ----------
    layer : int
    projection : str
        ``"q"``, ..., ``"down"``.
    method : str
        The method used there (a baseline outside ``difference_layers``).
    sparsity : float
        Achieved fraction of zeros.
    recon_error : float
        ``||(W' - W) X^T||_F / ||W X^T||_F`` on the block's calibration inputs (NaN
        unless :func:`prune_model` ran with ``diagnostics=True``).
    diff_error : float
        ``||(W' - W) Delta X^T||_F / ||W Delta X^T||_F`` on kNN pairs of those inputs
        (output-difference preservation; NaN without ``diagnostics``).
    """

    layer: int
    projection: str
    method: str
    sparsity: float
    recon_error: float
    diff_error: float


@dataclass(frozen=True)
class PrunedModelReport:
    """What :func:`prune_model` did.

    Attributes
    ----------
    method : str
    sparsity : str
        The sparsity as given (``"0.5"``, ``"2:4"``).
    layers : tuple of LayerReport
    wall_seconds : float
        Time of the pruning itself (block passes, pairing where the method uses it,
        scores or OBS sweeps), without the diagnostics.
    diagnostic_seconds : float
        Time of the optional diagnostics (0 without them).
    """

    method: str
    sparsity: str
    layers: tuple
    wall_seconds: float
    diagnostic_seconds: float = 0.0

    @property
    def mean_sparsity(self) -> float:
        """Achieved sparsity of the pruned linear maps (weighted by size is not needed:
        every entry is a map's own fraction, averaged)."""
        return float(np.mean([r.sparsity for r in self.layers]))

    def mean(self, field: str, projections: Sequence[str] = tuple(PROJECTIONS)) -> float:
        """Mean of a :class:`LayerReport` field over the given projections."""
        return float(np.mean([getattr(r, field) for r in self.layers
                              if r.projection in projections]))  # fmt: skip


def _rel(dW, W, X) -> float:
    den = float((X @ W.T).norm())
    return float((X @ dW.T).norm()) / den if den > 0 else 0.0


def _check_finite(t: torch.Tensor, what: str) -> None:
    """One pass, no copy: NaN/inf or entries above ``MAX_ABS`` raise ``ValueError``."""
    top = float(torch.linalg.vector_norm(t, float("inf")))  # NaN propagates
    if not math.isfinite(top):
        raise ValueError(f"{what}: non-finite values")
    if top > MAX_ABS:
        raise ValueError(f"{what}: entries above {MAX_ABS:g} in magnitude")


def _names(arg: str, names, default) -> tuple:
    if names is None:
        return default
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{arg} must be a sequence of projection names")
    bad = [n for n in names if n not in ALL_PROJECTIONS]
    if bad:
        raise ValueError(f"{arg}: unknown {bad}; expected some of {ALL_PROJECTIONS}")
    return tuple(names)


@torch.no_grad()
def prune_model(model, calib=None, *, method: str = "wisp", sparsity=0.5, pairing: str = "knn",
                lam: float = 0.05, top_frac: float = 0.1,
                projections: Sequence[str] | None = None,
                difference_layers: Sequence[str] | None = None,
                layers: Sequence[int] | None = None, block_size: int = 128,
                damp: float = 0.01, seed: int = 0, diagnostics: bool = False,
                input_ids=None, attention_mask=None) -> PrunedModelReport:  # fmt: skip
    """Prune a causal LM in place, block by block (the sequential protocol).

    Parameters
    ----------
    model : transformers causal LM
        LLaMA / Qwen2 / Mistral / Gemma layout (``model.layers[i].self_attn.q_proj`` ...)
        or GPT-2 (``transformer.h[i].attn.c_attn`` ... ``Conv1D``).
    calib : LongTensor (B, T), array, tokenizer output, or BlockInputs
        Calibration token ids, a tokenizer's output (``BatchEncoding`` or a dict with
        ``input_ids`` and ``attention_mask``), or :func:`capture_block_inputs` of them
        (to reuse one pass over the unpruned blocks for many methods).
    method : {"magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus", "whisper", "wisp_act"}
    sparsity : float in [0, 1) or "N:M"
    pairing, lam, top_frac : see :func:`~neurips26.papers.wisp.obs.prune_linear`
    projections : sequence of str, optional
        Which linear maps of each block to prune (default every map of the layout:
        ``q, k, v, o, gate, up, down``, or GPT-2's ``qkv, o, up, down``).
    difference_layers : sequence of str, optional
        Where a difference method uses its own criterion (default everywhere); elsewhere
        its baseline (Wanda for Wisp/Wisp+, SparseGPT for Whisper). The paper's ablation:
        ``("gate", "up")``.
    layers : sequence of int, optional
        Blocks to prune (default: every block from the capture's start).
    block_size, damp : SparseGPT/Whisper's sweep settings.
    seed : int
        Seed of the random pairing.
    diagnostics : bool
        Fill each :class:`LayerReport`'s ``recon_error`` and ``diff_error`` (a kNN pairing
        and two output passes per map, for every method); off, they are NaN and a
        baseline pays only its own cost. The mask and weights do not depend on it.
    input_ids, attention_mask : optional
        The Hugging Face keyword form of ``calib`` (``prune_model(m, **batch)``).

    Returns
    -------
    PrunedModelReport

    Raises
    ------
    ValueError
        A model without the expected linears (naming the supported architectures),
        NaN/inf activations (the layer is named), a Hessian that is singular after
        damping (the layer is named).

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    >>> rep = prune_model(m, ids, method="wisp", sparsity=0.5)
    >>> len(rep.layers), rep.mean_sparsity
    (14, 0.5)
    """
    blocks = _check_model(model)
    method = check_choice(method, "method", METHODS)
    pairing = check_choice(pairing, "pairing", PAIRINGS)
    parse_sparsity(sparsity)
    lam = check_float(lam, "lam", min=0.0, max=1e12)
    top_frac = check_float(top_frac, "top_frac", min=0.0, max=1.0, min_inclusive=False)
    check_int(seed, "seed", min=0, max=2**63 - 1)
    block_size = check_int(block_size, "block_size", min=1, max=1 << 20)
    damp = check_float(damp, "damp", min=0.0, max=1e6)
    if not isinstance(diagnostics, (bool, np.bool_)):
        raise TypeError(f"diagnostics must be a bool, got {diagnostics!r}")
    projections = _names("projections", projections, None)
    difference_layers = _names("difference_layers", difference_layers, None)
    if projections is not None and not projections:
        raise ValueError("projections must name at least one linear map")
    if input_ids is not None:
        if calib is not None:
            raise ValueError("calib and input_ids: pass the calibration tokens once")
        calib = {"input_ids": input_ids}
        if attention_mask is not None:
            calib["attention_mask"] = attention_mask
            attention_mask = None
    if calib is None:
        raise TypeError("calib: calibration tokens are required (ids, a tokenizer output, or "
                        "input_ids=)")  # fmt: skip
    if isinstance(calib, BlockInputs):
        if attention_mask is not None:
            raise ValueError("attention_mask: a BlockInputs carries its own mask")
        inputs = calib
    else:
        if layers is not None and not isinstance(layers, (tuple, list, range)):
            raise TypeError("layers must be a sequence of block indices")
        first = 0 if not layers else min(check_int(i, "layers", min=0, max=len(blocks) - 1)
                                         for i in layers)  # fmt: skip
        inputs = capture_block_inputs(model, calib, start=first, name="calib",
                                      attention_mask=attention_mask)  # fmt: skip
    if layers is None:
        todo = set(range(inputs.start, len(blocks)))
    else:
        todo = {check_int(i, "layers", min=inputs.start, max=len(blocks) - 1) for i in layers}
        if not todo:
            raise ValueError("layers must name at least one block")
    for i in todo:  # refuse a model without the linears before touching anything
        block_linears(blocks[i], projections, where=f"layer {i}")
    keep = None if inputs.mask is None else inputs.mask.reshape(-1).to(inputs.hidden.device)
    t0 = time.perf_counter()
    spent = 0.0  # seconds of diagnostics, kept out of wall_seconds
    reports = []
    h = inputs.hidden
    for i in range(inputs.start, max(todo) + 1):
        kw = inputs.kwargs[i]
        if i in todo:
            lins = block_linears(blocks[i], projections, where=f"layer {i}")
            seen: dict[str, torch.Tensor] = {}
            hooks = [lin.register_forward_hook(
                lambda mod, a, out, name=name, seen=seen: seen.__setitem__(name, a[0].detach()))
                for name, lin in lins.items()]  # fmt: skip
            try:
                _run_block(blocks[i], h, kw)  # the dense block: every map's inputs
            finally:
                for hk in hooks:
                    hk.remove()
            pairs_of: dict[int, Pairs] = {}  # the method's pairs, one set per shared input
            knn_of: dict[int, Pairs] = {}  # the diagnostics' kNN pairs
            inputs_of: dict[int, torch.Tensor] = {}  # each shared input checked once
            for name, lin in lins.items():
                key = seen[name].data_ptr()
                if key not in inputs_of:
                    X = seen[name].reshape(-1, _in_features(lin))
                    if keep is not None:
                        X = X[keep]
                    _check_finite(X, f"activations: inputs to layer {i} {name} map")
                    inputs_of[key] = X
                X = inputs_of[key]
                use = method
                if method in DIFFERENCE_METHODS and (difference_layers is not None
                                                     and name not in difference_layers):
                    use = BASELINE[method]
                pairs = None
                if use in DIFFERENCE_METHODS:  # only the difference methods pair tokens
                    if key not in pairs_of:
                        pairs_of[key] = make_pairs(X, pairing=pairing, seed=seed)
                    pairs = pairs_of[key]
                W = map_weight(lin)  # (d_out, d_in); a Conv1D's transposed view
                _check_finite(W, f"weights: layer {i} {name} map")
                half = W.dtype in (torch.float16, torch.bfloat16)
                Wc = W.float() if half else W.contiguous()  # scored and swept in float32
                Xc = X.to(Wc.dtype)
                old = W.clone() if diagnostics else None
                try:
                    new, mask = _prune_checked(Wc, Xc, use, sparsity, pairs, lam, top_frac,
                                               block_size, damp)  # fmt: skip
                except ValueError as exc:
                    raise ValueError(f"layer {i} {name} map: {exc}") from None
                if new is None:
                    W.masked_fill_(mask, 0.0)  # in place, through a Conv1D's view too
                else:
                    W.copy_(new.to(W.dtype))
                rec = dif = math.nan
                if diagnostics:
                    t1 = time.perf_counter()
                    if key not in knn_of:
                        knn_of[key] = (pairs if pairing == "knn" and pairs is not None
                                       else make_pairs(X))  # fmt: skip
                    Wd = old.to(X.dtype)
                    dW = W.to(X.dtype) - Wd
                    rec, dif = _rel(dW, Wd, X), _rel(dW, Wd, knn_of[key].differences(X))
                    spent += time.perf_counter() - t1
                reports.append(LayerReport(i, name, use, int(mask.sum()) / mask.numel(), rec,
                                           dif))  # fmt: skip
        h = _run_block(blocks[i], h, kw)  # the pruned block feeds the next one
        if not torch.isfinite(h).all():
            raise ValueError(f"activations: non-finite hidden states after layer {i}")
    return PrunedModelReport(method, str(sparsity), tuple(reports),
                             time.perf_counter() - t0 - spent, spent)  # fmt: skip
