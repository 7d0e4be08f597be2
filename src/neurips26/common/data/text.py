"""Real English and Python text that ships with the standard library, as token streams.

- :func:`pydoc_topics_text`: the help topics of ``pydoc_data.topics`` (about 465k
  characters of English prose about Python), joined in sorted key order.
- :func:`stdlib_source_text`: the standard library's own ``.py`` sources (real code),
  concatenated in sorted path order, up to a character budget.

Both are deterministic for a given Python version. :class:`ByteTokenizer` maps text to
UTF-8 bytes (vocabulary 256); :func:`train_val_split` cuts a token stream into a training
and a held-out part; :func:`random_batches` samples ``(x, y)`` next-token windows from a
``torch.Generator``.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from neurips26.common.validation import check_int


@lru_cache(maxsize=1)
def pydoc_topics_text() -> str:
    """The text of every ``pydoc_data.topics`` entry, in sorted key order.

    Examples
    --------
    >>> text = pydoc_topics_text()
    >>> len(text) > 100_000
    True
    """
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k].strip() for k in sorted(topics))


@lru_cache(maxsize=4)
def stdlib_source_text(max_chars: int = 2_000_000, *, skip_tests: bool = True) -> str:
    """The standard library's Python sources, concatenated in sorted path order.

    Parameters
    ----------
    max_chars : int
        Stop after this many characters (the whole library is tens of MB).
    skip_tests : bool
        Leave out ``test``/``tests`` packages and ``idlelib`` (mostly boilerplate).
    """
    check_int(max_chars, "max_chars", min=1)
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if "site-packages" in rel:
            continue
        if skip_tests and any(p in ("test", "tests", "idlelib", "lib2to3") for p in rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        total += len(text)
        if total >= max_chars:
            break
    return "\n".join(parts)[:max_chars]


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, lossless on any text.

    Examples
    --------
    >>> tok = ByteTokenizer()
    >>> ids = tok.encode("héllo")
    >>> ids.dtype, len(ids), tok.decode(ids)
    (dtype('int64'), 6, 'héllo')
    """

    vocab_size = 256

    def encode(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    def decode(self, ids) -> str:
        arr = np.asarray(ids)
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ValueError("ids: byte tokens must lie in [0, 255]")
        return arr.astype(np.uint8).tobytes().decode("utf-8", errors="replace")


class CharTokenizer:
    """Characters of a fixed alphabet as tokens (built from a reference text).

    Characters outside the alphabet map to the token of ``unknown`` (which is added to
    the alphabet).
    """

    def __init__(self, text: str, unknown: str = "\ufffd") -> None:
        if not isinstance(text, str) or not text:
            raise ValueError("text: expected a non-empty str to build the alphabet from")
        chars = sorted(set(text) | {unknown})
        self.chars = tuple(chars)
        self.unknown = unknown
        self._index = {c: i for i, c in enumerate(chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        unk = self._index[self.unknown]
        return np.fromiter((self._index.get(c, unk) for c in text), dtype=np.int64,
                           count=len(text))  # fmt: skip

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in np.asarray(ids).ravel())


@dataclass(frozen=True)
class TokenSplit:
    """A token stream cut into a training part and a held-out part (never overlapping)."""

    train: np.ndarray
    val: np.ndarray
    vocab_size: int


def train_val_split(tokens, vocab_size: int, *, val_fraction: float = 0.1) -> TokenSplit:
    """The first ``1 - val_fraction`` of the stream for training, the rest held out.

    A contiguous cut (not a shuffle) so held-out text is never seen in training windows.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.ndim != 1 or tokens.size < 2:
        raise ValueError(f"tokens: expected a 1-D stream of at least 2 tokens, got {tokens.shape}")
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction: expected a value in (0, 1), got {val_fraction!r}")
    if tokens.min() < 0 or tokens.max() >= vocab_size:
        raise ValueError(f"tokens: ids must lie in [0, vocab_size={vocab_size})")
    cut = round(len(tokens) * (1.0 - val_fraction))
    return TokenSplit(tokens[:cut], tokens[cut:], int(vocab_size))


def random_batches(tokens, *, batch_size: int, block_size: int, generator, device="cpu"):
    """An endless iterator of ``(x, y)`` windows, ``y`` shifted by one token.

    Parameters
    ----------
    tokens : array-like of int, shape (L,)
    batch_size, block_size : int
        ``x`` and ``y`` have shape ``(batch_size, block_size)``.
    generator : torch.Generator
        The only source of randomness (window offsets).

    Yields
    ------
    x, y : torch.LongTensor, shape (B, T)
    """
    import torch

    data = torch.as_tensor(np.asarray(tokens, dtype=np.int64))
    if data.ndim != 1:
        raise ValueError(f"tokens: expected a 1-D stream, got shape {tuple(data.shape)}")
    for name, v in (("batch_size", batch_size), ("block_size", block_size)):
        check_int(v, name, min=1)
    if len(data) <= block_size:
        raise ValueError(f"tokens: the stream ({len(data)}) must be longer than block_size")
    offsets = torch.arange(block_size)
    while True:
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
        idx = starts[:, None] + offsets  # (B, T)
        yield data[idx].to(device), data[idx + 1].to(device)


def sequential_windows(tokens, *, block_size: int, max_windows: int | None = None):
    """Non-overlapping ``(x, y)`` windows covering the stream in order (for evaluation).

    Returns
    -------
    x, y : torch.LongTensor, shape (W, block_size)
    """
    import torch

    data = torch.as_tensor(np.asarray(tokens, dtype=np.int64))
    check_int(block_size, "block_size", min=1)
    n = (len(data) - 1) // block_size
    if max_windows is not None:
        n = min(n, int(max_windows))
    if n < 1:
        raise ValueError(f"tokens: {len(data)} tokens hold no window of {block_size} + 1")
    x = data[: n * block_size].view(n, block_size)
    y = data[1 : n * block_size + 1].view(n, block_size)
    return x, y
