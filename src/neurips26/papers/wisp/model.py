"""Pruning a whole causal LM with the layer-by-layer sequential protocol.

As in Wanda's and SparseGPT's reference code, a model is pruned one decoder block at a
time: the block's calibration inputs are the outputs of the blocks before it *after* they
were pruned; every linear map of the block (``self_attn.{q,k,v,o}_proj`` and
``mlp.{gate,up,down}_proj``, the LLaMA / Qwen2 / Mistral / Gemma layout) is pruned from
the inputs it receives in the dense block; then the pruned block is run again to give the
next block's inputs.

:func:`capture_block_inputs` runs the dense model once and keeps the hidden states
entering a chosen block (and every block's call arguments: rotary embeddings, masks).
When only blocks from ``start`` on are pruned, the part of the model before ``start`` is
identical for every method, so one capture serves all of them: :func:`prune_model` and
:func:`block_perplexity` start from it and run only the blocks from ``start`` on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.models.llm import decoder_layers
from neurips26.common.validation import check_choice, check_float, check_int

from .obs import prune_linear
from .pruning import DIFFERENCE_METHODS, METHODS, PAIRINGS, Pairs, make_pairs, parse_sparsity

#: Projection name -> attribute path inside a decoder block.
PROJECTIONS = {
    "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
    "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}  # fmt: skip
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


def block_linears(block: nn.Module, names: Sequence[str] = tuple(PROJECTIONS), *,
                  where: str = "block") -> dict[str, nn.Linear]:  # fmt: skip
    """The named linear maps of a decoder block, e.g. ``{"gate": mlp.gate_proj, ...}``.

    Raises ``ValueError`` naming the block (``where``) and the missing sub-module.
    """
    out = {}
    for name in names:
        if name not in PROJECTIONS:
            raise ValueError(f"names: unknown projection {name!r}; expected some of "
                             f"{tuple(PROJECTIONS)}")  # fmt: skip
        lin = _get(block, PROJECTIONS[name])
        if not isinstance(lin, nn.Linear):
            raise ValueError(f"model: {where} has no {PROJECTIONS[name]} linear")
        out[name] = lin
    return out


def _token_ids(ids, name: str, vocab: int | None) -> torch.Tensor:
    if isinstance(ids, torch.Tensor):
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"{name} must be integer token ids, got {ids.dtype}")
        t = ids.long()
    else:
        arr = np.asarray(ids) if not isinstance(ids, (str, bytes)) else None
        if arr is None or arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer array of token ids")
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
    """

    start: int
    hidden: torch.Tensor
    kwargs: dict
    ids: torch.Tensor


class _Stop(Exception):
    pass


@torch.no_grad()
def capture_block_inputs(model, ids, *, start: int = 0, name: str = "ids") -> BlockInputs:
    """Run the dense model once on ``ids`` (B, T) and keep what enters block ``start``.

    ``name`` is the argument named in error messages about ``ids``.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> cap = capture_block_inputs(m, torch.zeros(2, 8, dtype=torch.long), start=1)
    >>> tuple(cap.hidden.shape), sorted(cap.kwargs)
    ((2, 8, 64), [1])
    """
    blocks = _check_model(model)
    ids = _token_ids(ids, name, _vocab(model))
    start = check_int(start, "start", min=0, max=len(blocks) - 1)
    hidden: dict = {}
    kwargs: dict = {}

    def pre(mod, args, kw, i):
        h = args[0] if args else kw["hidden_states"]
        if i == start:
            hidden["h"] = h.detach().clone()
        kwargs[i] = {k: v for k, v in kw.items() if k not in ("hidden_states",)}
        for k in ("cache", "past_key_values", "past_key_value"):
            if k in kw:
                kwargs[i][k] = None
        if "use_cache" in kw:
            kwargs[i]["use_cache"] = False
        if i == len(blocks) - 1:
            raise _Stop

    handles = [blocks[i].register_forward_pre_hook(lambda m, a, k, i=i: pre(m, a, k, i),
                                                   with_kwargs=True)
               for i in range(start, len(blocks))]  # fmt: skip
    try:
        model(input_ids=ids.to(_device(model)), use_cache=False)
    except _Stop:
        pass
    finally:
        for h in handles:
            h.remove()
    if not torch.isfinite(hidden["h"]).all():
        raise ValueError(f"activations: non-finite hidden states entering layer {start}")
    return BlockInputs(start, hidden["h"], kwargs, ids)


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
    norm = _get(model, "model.norm")
    head = model.get_output_embeddings()
    if norm is None or head is None:
        raise ValueError("model: no model.norm / output embeddings (not a HF causal LM)")
    logits = head(norm(h)).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    tgt = inputs.ids[:, 1:].to(logp.device)
    nll = -logp.gather(2, tgt[..., None]).squeeze(-1)
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
        ``||(W' - W) X^T||_F / ||W X^T||_F`` on the block's calibration inputs.
    diff_error : float
        ``||(W' - W) Delta X^T||_F / ||W Delta X^T||_F`` on kNN pairs of those inputs
        (output-difference preservation).
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
    """

    method: str
    sparsity: str
    layers: tuple
    wall_seconds: float

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


@torch.no_grad()
def prune_model(model, calib, *, method: str = "wisp", sparsity=0.5, pairing: str = "knn",
                lam: float = 0.05, top_frac: float = 0.1,
                projections: Sequence[str] = tuple(PROJECTIONS),
                difference_layers: Sequence[str] = tuple(PROJECTIONS),
                layers: Sequence[int] | None = None, block_size: int = 128,
                damp: float = 0.01, seed: int = 0) -> PrunedModelReport:  # fmt: skip
    """Prune a causal LM in place, block by block (the sequential protocol).

    Parameters
    ----------
    model : transformers causal LM
        LLaMA / Qwen2 / Mistral / Gemma layout (``model.layers[i].self_attn.q_proj`` ...).
    calib : LongTensor (B, T) or BlockInputs
        Calibration token ids, or :func:`capture_block_inputs` of them (to reuse one
        pass over the unpruned blocks for many methods).
    method : {"magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus", "whisper", "wisp_act"}
    sparsity : float in [0, 1) or "N:M"
    pairing, lam, top_frac : see :func:`~neurips26.papers.wisp.obs.prune_linear`
    projections : sequence of str
        Which linear maps of each block to prune (default all seven).
    difference_layers : sequence of str
        Where a difference method uses its own criterion; elsewhere its baseline (Wanda
        for Wisp/Wisp+, SparseGPT for Whisper). The paper's ablation: ``("gate", "up")``.
    layers : sequence of int, optional
        Blocks to prune (default: every block from the capture's start).
    block_size, damp : SparseGPT/Whisper's sweep settings.
    seed : int
        Seed of the random pairing.

    Returns
    -------
    PrunedModelReport

    Raises
    ------
    ValueError
        A model without the expected linears, NaN/inf activations (the layer is named),
        a Hessian that is singular after damping (the layer is named).

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
    check_float(lam, "lam", min=0.0, max=1e12)
    check_float(top_frac, "top_frac", min=0.0, max=1.0, min_inclusive=False)
    check_int(seed, "seed", min=0, max=2**63 - 1)
    for arg, names in (("projections", projections), ("difference_layers", difference_layers)):
        if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{arg} must be a sequence of projection names")
        bad = [n for n in names if n not in PROJECTIONS]
        if bad:
            raise ValueError(f"{arg}: unknown {bad}; expected some of {tuple(PROJECTIONS)}")
    if not projections:
        raise ValueError("projections must name at least one linear map")
    if isinstance(calib, BlockInputs):
        inputs = calib
    elif isinstance(calib, (torch.Tensor, np.ndarray, list)):
        if layers is not None and not isinstance(layers, (tuple, list, range)):
            raise TypeError("layers must be a sequence of block indices")
        first = 0 if not layers else min(check_int(i, "layers", min=0, max=len(blocks) - 1)
                                         for i in layers)  # fmt: skip
        inputs = capture_block_inputs(model, calib, start=first, name="calib")
    else:
        raise TypeError(f"calib must be token ids or a BlockInputs, got {type(calib).__name__}")
    if layers is None:
        todo = set(range(inputs.start, len(blocks)))
    else:
        todo = {check_int(i, "layers", min=inputs.start, max=len(blocks) - 1) for i in layers}
        if not todo:
            raise ValueError("layers must name at least one block")
    for i in todo:  # refuse a model without the linears before touching anything
        block_linears(blocks[i], projections, where=f"layer {i}")
    t0 = time.perf_counter()
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
            pairs_of: dict[int, Pairs] = {}
            for name, lin in lins.items():
                X = seen[name].reshape(-1, lin.in_features)
                if not torch.isfinite(X).all():
                    raise ValueError(f"activations: non-finite inputs to layer {i} {name}_proj")
                key = X.data_ptr()
                if key not in pairs_of:
                    pairs_of[key] = make_pairs(X, pairing=pairing, seed=seed)
                use = method
                if method in DIFFERENCE_METHODS and name not in difference_layers:
                    use = BASELINE[method]
                W = lin.weight.data
                try:
                    res = prune_linear(W, X, method=use, sparsity=sparsity, pairs=pairs_of[key],
                                       lam=lam, top_frac=top_frac, block_size=block_size,
                                       damp=damp)  # fmt: skip
                except ValueError as exc:
                    raise ValueError(f"layer {i} {name}_proj: {exc}") from None
                dW = res.weight.to(W.dtype) - W
                knn = pairs_of[key]
                dX = knn.differences(X) if pairing == "knn" else make_pairs(X).differences(X)
                reports.append(LayerReport(i, name, use, res.sparsity, _rel(dW, W, X),
                                           _rel(dW, W, dX)))  # fmt: skip
                lin.weight.data.copy_(res.weight.to(W.dtype))
        h = _run_block(blocks[i], h, kw)  # the pruned block feeds the next one
        if not torch.isfinite(h).all():
            raise ValueError(f"activations: non-finite hidden states after layer {i}")
    return PrunedModelReport(method, str(sparsity), tuple(reports), time.perf_counter() - t0)
