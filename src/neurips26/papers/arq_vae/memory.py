"""The stored feature memory: per-frame adaptive truncation, byte accounting, fine-tuning.

Per frame t the model gives the relative prefix errors e_l(t), l = 1..L. The memory keeps
the prefix length

    l*(t) = argmin_l [ e_l(t) + lambda * l * b ]                          # Eq. (1)

(b the bytes per code), a Lagrangian rate-distortion choice; lambda is either given, or
found by bisection so that the stored bytes meet a budget, or replaced by a tolerance
(the smallest l with e_l(t) <= tau). The decoder is then fine-tuned on the truncated
codes that are actually kept, and the original features can be deleted.

The serialized memory (:meth:`FeatureMemory.to_bytes`) is a 21-byte header, each video's
frame count (uint32), the lengths packed two per byte (l - 1 in 4 bits; one byte when
every frame keeps the same depth), the kept codes (uint8 for K <= 256, else uint16) and,
all-in, a 12-byte model header with the decoder's parameters and the first L codebooks
in float32. :meth:`FeatureMemory.nbytes` computes the same size from the counts.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.validation import check_array, check_float, check_int, check_seed

from .model import ARQVAE, MAX_LEVELS, _check_videos, _fused_adamw

MAGIC = b"ARQ1"
HEADER_BYTES = 21  # magic, num_videos, num_frames, num_levels, codebook_size (uint32), flags
MODEL_HEADER_BYTES = 12  # dim, latent_dim, hidden (uint32)


def code_bytes(codebook_size: int) -> int:
    """Bytes per stored code: 1 for K <= 256, 2 for K <= 65,536.

    >>> code_bytes(256), code_bytes(257)
    (1, 2)
    """
    k = check_int(codebook_size, "codebook_size", min=1)
    if k > 65_536:
        raise ValueError(f"codebook_size {k} exceeds 65536: a code would overflow uint16")
    return 1 if k <= 256 else 2


def _model_tensors(model: ARQVAE) -> list[torch.Tensor]:
    """What decoding needs, in serialization order: decoder parameters, then codebooks."""
    return [p.detach() for p in model.decoder.parameters()] + [model.quantizer.codebooks]


def model_nbytes(model: ARQVAE) -> int:
    """Bytes of the decoder and codebooks stored in float32, plus their 12-byte header."""
    if not isinstance(model, ARQVAE):
        raise TypeError(f"model must be an ARQVAE, got {type(model).__name__}")
    return MODEL_HEADER_BYTES + 4 * sum(t.numel() for t in _model_tensors(model))


@dataclass(frozen=True)
class FeatureMemory:
    """A label-free compact memory of frame features.

    Attributes
    ----------
    codes : ndarray (sum of lengths,), uint8 or uint16
        The kept codes, frame after frame (frame t contributes its first l*(t) codes).
    lengths : ndarray (N,), uint8
        l*(t) in [1, L] for every stored frame.
    video_offsets : ndarray (V + 1,), int64
        Frame offsets of the videos (video v holds frames offsets[v] to offsets[v+1]).
    codebook_size : int
    num_levels : int
    """

    codes: np.ndarray
    lengths: np.ndarray
    video_offsets: np.ndarray
    codebook_size: int
    num_levels: int

    def __post_init__(self):
        L = check_int(self.num_levels, "num_levels", min=1, max=MAX_LEVELS)
        cb = code_bytes(self.codebook_size)
        lengths = check_array(self.lengths, "lengths", ndim=1, dtype=None, min=1)
        if lengths.max() > L:
            raise ValueError(f"lengths must lie in [1, num_levels = {L}], got up to "
                             f"{lengths.max():g}")
        offsets = check_array(self.video_offsets, "video_offsets", ndim=1, dtype=None,
                              min_size=2, min=0)
        if offsets[0] != 0 or offsets[-1] != len(lengths) or np.any(np.diff(offsets) < 1):
            raise ValueError("video_offsets must rise from 0 to len(lengths), each video "
                             "holding at least one frame")
        codes = check_array(self.codes, "codes", ndim=1, dtype=None, min=0)
        if len(codes) and codes.max() >= self.codebook_size:
            raise ValueError(f"codes must be below codebook_size = {self.codebook_size}, got "
                             f"{codes.max():g}")
        if len(codes) != int(lengths.astype(np.int64).sum()):
            raise ValueError(f"codes holds {len(codes)} entries, the lengths ask for "
                             f"{int(lengths.sum())}")
        object.__setattr__(self, "codes", codes.astype(np.uint8 if cb == 1 else np.uint16))
        object.__setattr__(self, "lengths", lengths.astype(np.uint8))
        object.__setattr__(self, "video_offsets", offsets.astype(np.int64))

    @property
    def num_videos(self) -> int:
        return len(self.video_offsets) - 1

    @property
    def num_frames(self) -> int:
        return len(self.lengths)

    @property
    def uniform(self) -> bool:
        """Every frame keeps the same depth (the lengths are stored as one byte)."""
        return bool(np.all(self.lengths == self.lengths[0]))

    def nbytes(self, *, include_model: bool, model: ARQVAE | None = None) -> int:
        """Stored size in bytes: codes only, or all-in (with the decoder and codebooks).

        Equals ``len(self.to_bytes(model if include_model else None))``.
        """
        if not isinstance(include_model, bool):
            raise TypeError("include_model must be a bool")
        size = (HEADER_BYTES + 4 * self.num_videos
                + (1 if self.uniform else (self.num_frames + 1) // 2)
                + code_bytes(self.codebook_size) * len(self.codes))
        if include_model:
            if model is None:
                raise ValueError("model is required with include_model=True")
            self._check_model(model)
            size += model_nbytes(model)
        return int(size)

    def _check_model(self, model) -> None:
        if not isinstance(model, ARQVAE):
            raise TypeError(f"model must be an ARQVAE, got {type(model).__name__}")
        if model.num_levels != self.num_levels or model.codebook_size != self.codebook_size:
            raise ValueError(f"model has L={model.num_levels}, K={model.codebook_size}; the "
                             f"memory L={self.num_levels}, K={self.codebook_size}")

    def to_bytes(self, model: ARQVAE | None = None) -> bytes:
        """The serialized memory (all-in when ``model`` is given); see the module docstring."""
        parts = [MAGIC, struct.pack("<4IB", self.num_videos, self.num_frames, self.num_levels,
                                    self.codebook_size, int(self.uniform))]
        parts.append(np.diff(self.video_offsets).astype("<u4").tobytes())
        if self.uniform:
            parts.append(bytes([int(self.lengths[0]) - 1]))
        else:
            nib = (self.lengths - 1).astype(np.uint8)
            if len(nib) % 2:
                nib = np.r_[nib, np.uint8(0)]
            parts.append((nib[0::2] | (nib[1::2] << 4)).astype(np.uint8).tobytes())
        parts.append(self.codes.astype("<u1" if self.codes.dtype == np.uint8 else "<u2")
                     .tobytes())
        if model is not None:
            self._check_model(model)
            parts.append(struct.pack("<3I", model.dim, model.latent_dim, model.hidden))
            parts += [t.cpu().to(torch.float32).numpy().astype("<f4").tobytes()
                      for t in _model_tensors(model)]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> FeatureMemory:
        """Read the codes-only part of :meth:`to_bytes` back (a model section is ignored)."""
        if not isinstance(data, (bytes, bytearray)) or bytes(data[:4]) != MAGIC:
            raise ValueError("data is not a serialized FeatureMemory")
        try:
            V, N, L, K, uniform = struct.unpack("<4IB", data[4:HEADER_BYTES])
            pos = HEADER_BYTES
            counts = np.frombuffer(data, "<u4", V, pos).astype(np.int64)
            pos += 4 * V
            offsets = np.r_[0, np.cumsum(counts)]
            cb = code_bytes(K)
            if uniform:
                lengths = np.full(N, int(data[pos]) + 1, np.uint8)
                pos += 1
            else:
                packed = np.frombuffer(data, np.uint8, (N + 1) // 2, pos)
                nib = np.stack([packed & 15, packed >> 4], 1).reshape(-1)[:N]
                lengths = (nib + 1).astype(np.uint8)
                pos += (N + 1) // 2
            total = int(lengths.astype(np.int64).sum())
            codes = np.frombuffer(data, "<u1" if cb == 1 else "<u2", total, pos)
            return cls(codes.copy(), lengths, offsets, K, L)
        except (struct.error, ValueError, IndexError) as exc:
            raise ValueError(f"data is truncated or corrupt ({exc})") from None

    def padded_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Codes as an (N, L) int64 array (-1 beyond each length) and lengths (N,)."""
        N, L = self.num_frames, self.num_levels
        out = np.full((N, L), -1, np.int64)
        mask = np.arange(L)[None] < self.lengths[:, None].astype(np.int64)
        out[mask] = self.codes  # row-major order matches frame after frame
        return out, self.lengths.astype(np.int64)

    def reconstruct(self, model: ARQVAE) -> list[np.ndarray]:
        """x_hat_t = G(sum_{l <= l*(t)} c_l) of every stored frame, split by video."""
        self._check_model(model)
        codes, lengths = self.padded_codes()
        with torch.no_grad():
            x = model.decode(torch.as_tensor(codes), torch.as_tensor(lengths)).numpy()
        return [x[a:b] for a, b in zip(self.video_offsets[:-1], self.video_offsets[1:],
                                       strict=True)]


def truncation_lengths(errors, lam: float, *, bytes_per_code: int = 1) -> np.ndarray:
    """Eq. (1): l*(t) = argmin_l e_l(t) + lambda l b, for every frame (first minimum on ties).

    Parameters
    ----------
    errors : ndarray (N, L)
        e_l(t), any real values (non-monotone allowed).
    lam : float
        lambda >= 0.
    bytes_per_code : int
        b.

    Returns
    -------
    ndarray (N,), int64 in [1, L]

    Examples
    --------
    >>> truncation_lengths([[0.5, 0.2, 0.19], [0.1, 0.3, 0.0]], 0.02).tolist()
    [2, 3]
    """
    e = check_array(errors, "errors", ndim=2)
    lam = check_float(lam, "lam", min=0, max=1e12)
    b = check_int(bytes_per_code, "bytes_per_code", min=1, max=8)
    L = e.shape[1]
    cost = e + lam * b * np.arange(1, L + 1)[None]  # Eq. (1)
    return cost.argmin(1).astype(np.int64) + 1


def tolerance_lengths(errors, tol: float) -> np.ndarray:
    """The smallest l with e_l(t) <= tau (L when no prefix reaches tau).

    >>> tolerance_lengths([[0.5, 0.2, 0.1], [0.9, 0.8, 0.7]], 0.25).tolist()
    [2, 3]
    """
    e = check_array(errors, "errors", ndim=2)
    tol = check_float(tol, "tol", min=0, max=1e12)
    ok = e <= tol
    return np.where(ok.any(1), ok.argmax(1) + 1, e.shape[1]).astype(np.int64)


def _memory(codes_nl: np.ndarray, lengths: np.ndarray, offsets, K: int, L: int):
    mask = np.arange(L)[None] < lengths[:, None]
    return FeatureMemory(codes_nl[mask], lengths, offsets, K, L)


def _encode_all(model: ARQVAE, videos) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes (N, L), prefix errors (N, L) and video offsets of every video."""
    codes, errs = [], []
    model.eval()
    with torch.no_grad():
        for v in videos:
            x = torch.as_tensor(v)[None]
            codes.append(model.encode(x)[0].numpy())
            errs.append(model.prefix_errors(x)[0].double().numpy())
    offsets = np.r_[0, np.cumsum([len(v) for v in videos])].astype(np.int64)
    return np.concatenate(codes), np.concatenate(errs), offsets


def adaptive_truncate(model: ARQVAE, videos, *, budget_bytes: int | None = None,
                      lam: float | None = None, tol: float | None = None,
                      include_model: bool = True) -> FeatureMemory:
    """Encode unlabelled videos and keep, per frame, the residual prefix of Eq. (1).

    Parameters
    ----------
    model : ARQVAE
        A trained model.
    videos : list of ndarray (T_i, D)
    budget_bytes : int, optional
        B: the stored size must not exceed it. lambda is found by bisection; then frames
        are deepened one at a time, best error drop per byte first, while the budget
        allows, so the memory ends within one frame's worth of bytes (L codes) of B
        (unless every frame keeps the same depth and the packed lengths, N / 2 bytes,
        do not fit: then the lengths stay one byte).
    lam : float, optional
        lambda of Eq. (1), used as given.
    tol : float, optional
        tau: keep the shortest prefix with e_l(t) <= tau.
    include_model : bool
        Whether ``budget_bytes`` counts the decoder and codebooks (all-in, default).

    Exactly one of ``budget_bytes``, ``lam`` and ``tol`` is given.

    Returns
    -------
    FeatureMemory

    Raises
    ------
    ValueError
        For zero or several criteria, or an infeasible budget (below the memory with one
        code per frame, model included when ``include_model``).

    Examples
    --------
    >>> m = ARQVAE(8, latent_dim=4, num_levels=3, codebook_size=16, hidden=0).eval()
    >>> v = [np.random.default_rng(0).normal(size=(12, 8))]
    >>> mem = adaptive_truncate(m, v, lam=0.0)
    >>> mem.num_frames, int(mem.lengths.max()) <= 3
    (12, True)
    """
    if not isinstance(model, ARQVAE):
        raise TypeError(f"model must be an ARQVAE, got {type(model).__name__}")
    given = [n for n, v in (("budget_bytes", budget_bytes), ("lam", lam), ("tol", tol))
             if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of budget_bytes, lam and tol; got "
                         f"{given or 'none'}")
    if not isinstance(include_model, bool):
        raise TypeError("include_model must be a bool")
    videos = _check_videos(videos, dim=model.dim, min_length=model.temporal_kernel)
    L, K = model.num_levels, model.codebook_size
    b = code_bytes(K)
    codes, errs, offsets = _encode_all(model, videos)
    if lam is not None:
        return _memory(codes, truncation_lengths(errs, lam, bytes_per_code=b), offsets, K, L)
    if tol is not None:
        return _memory(codes, tolerance_lengths(errs, tol), offsets, K, L)
    budget = check_int(budget_bytes, "budget_bytes", min=1, max=2**62)
    N, V = len(errs), len(videos)
    fixed = HEADER_BYTES + 4 * V + (model_nbytes(model) if include_model else 0)

    def size(lengths):
        uniform = bool(np.all(lengths == lengths[0]))
        return fixed + (1 if uniform else (N + 1) // 2) + b * int(lengths.sum())

    ones = np.ones(N, np.int64)
    if size(ones) > budget:
        what = "all-in (decoder and codebooks included)" if include_model else "codes only"
        raise ValueError(f"budget_bytes {budget} is infeasible: one code per frame already "
                         f"takes {size(ones)} bytes {what}")
    full = truncation_lengths(errs, 0.0, bytes_per_code=b)
    if size(full) <= budget:
        return _memory(codes, full, offsets, K, L)
    lo, hi = 0.0, 1.0  # size(lo) > budget >= size(hi)
    while size(truncation_lengths(errs, hi, bytes_per_code=b)) > budget:
        hi *= 4.0
        if hi > 1e12:
            break
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if size(truncation_lengths(errs, mid, bytes_per_code=b)) > budget:
            lo = mid
        else:
            hi = mid
    lengths = truncation_lengths(errs, hi, bytes_per_code=b)
    if size(lengths) > budget:  # the Lagrangian cannot reach it (ties): fall back to l = 1
        lengths = ones.copy()
    lengths = _fill(errs, lengths, budget - size(lengths), b)
    return _memory(codes, lengths, offsets, K, L)


def _fill(errs: np.ndarray, lengths: np.ndarray, spare: int, b: int) -> np.ndarray:
    """Deepen frames greedily (largest error drop per byte first) within ``spare`` bytes.

    Passes repeat until no frame has an affordable deeper prefix with a lower error, so
    the leftover is below one frame's worth of bytes (L codes) unless no frame can improve.
    """
    N, L = errs.shape
    lengths = lengths.copy()
    if bool(np.all(lengths == lengths[0])):  # breaking uniformity costs the packed lengths
        spare -= (N + 1) // 2 - 1
    rows = np.arange(N)
    while spare > 0:
        cur = errs[rows, lengths - 1]
        best_gain, best_l = np.zeros(N), lengths.copy()
        for cand in range(2, L + 1):
            extra = cand - lengths
            gain = np.where(extra > 0, (cur - errs[:, cand - 1]) / np.maximum(extra * b, 1),
                            0.0)
            better = gain > best_gain
            best_gain[better], best_l[better] = gain[better], cand
        moved = False
        for t in np.argsort(-best_gain, kind="stable"):
            if best_gain[t] <= 0 or spare <= 0:
                break
            cost = b * int(best_l[t] - lengths[t])
            if cost <= spare:
                lengths[t] = best_l[t]
                spare -= cost
                moved = True
        if not moved:
            break
    return lengths


def fixed_depth_memory(model: ARQVAE, videos, depth: int) -> FeatureMemory:
    """The fixed-depth RVQ baseline: every frame keeps ``depth`` levels.

    >>> m = ARQVAE(8, latent_dim=4, num_levels=3, codebook_size=16, hidden=0).eval()
    >>> fixed_depth_memory(m, [np.zeros((5, 8))], 2).lengths.tolist()
    [2, 2, 2, 2, 2]
    """
    if not isinstance(model, ARQVAE):
        raise TypeError(f"model must be an ARQVAE, got {type(model).__name__}")
    depth = check_int(depth, "depth", min=1, max=model.num_levels)
    videos = _check_videos(videos, dim=model.dim, min_length=model.temporal_kernel)
    codes, _, offsets = _encode_all(model, videos)
    lengths = np.full(len(codes), depth, np.int64)
    return _memory(codes, lengths, offsets, model.codebook_size, model.num_levels)


def memory_errors(model: ARQVAE, memory: FeatureMemory, videos) -> float:
    """Mean relative error ||x - x_hat||^2 / ||x||^2 of the memory's reconstructions."""
    if not isinstance(memory, FeatureMemory):
        raise TypeError(f"memory must be a FeatureMemory, got {type(memory).__name__}")
    memory._check_model(model)
    videos = _check_videos(videos, dim=model.dim)
    rec = memory.reconstruct(model)
    if [len(v) for v in videos] != [len(r) for r in rec]:
        raise ValueError("videos do not match the memory's frame counts")
    x, xh = np.concatenate(videos), np.concatenate(rec)
    return float(np.mean(((x - xh) ** 2).sum(1) / np.maximum((x ** 2).sum(1), 1e-12)))


def finetune_decoder(model: ARQVAE, memory: FeatureMemory, videos, *, max_iter: int = 300,
                     lr: float = 3e-4, batch_size: int = 512, seed: int = 0,
                     device: str = "cpu") -> ARQVAE:
    """Fine-tune a copy of the decoder G on the codes the memory keeps.

    The encoder, the codebooks and the stored codes are frozen; G is trained on pairs
    (truncated code sum sum_{l <= l*(t)} c_l, original x_t) of the retained frames. The
    original features can be deleted afterwards.

    Parameters
    ----------
    model : ARQVAE
    memory : FeatureMemory
        From :func:`adaptive_truncate` (or :func:`fixed_depth_memory`) on ``videos``.
    videos : list of ndarray (T_i, D)
        The original features of the stored frames.
    max_iter, lr, batch_size, seed
    device : {"cpu", "cuda"}
        Where to train (the returned model is on the CPU).

    Returns
    -------
    ARQVAE
        A new model; ``model`` is left unchanged.

    Examples
    --------
    >>> m = ARQVAE(8, latent_dim=4, num_levels=2, codebook_size=8, hidden=0).eval()
    >>> v = [np.random.default_rng(0).normal(size=(10, 8))]
    >>> m2 = finetune_decoder(m, fixed_depth_memory(m, v, 1), v, max_iter=2)
    >>> m2 is m
    False
    """
    from neurips26.common.torch import make_generator
    from neurips26.common.train import array_batches, train

    if not isinstance(memory, FeatureMemory):
        raise TypeError(f"memory must be a FeatureMemory, got {type(memory).__name__}")
    memory._check_model(model)
    videos = _check_videos(videos, dim=model.dim)
    if [len(v) for v in videos] != list(np.diff(memory.video_offsets)):
        raise ValueError("videos do not match the memory's frame counts")
    max_iter = check_int(max_iter, "max_iter", min=1, max=10_000_000)
    lr = check_float(lr, "lr", min=0, min_inclusive=False, max=10.0)
    batch_size = check_int(batch_size, "batch_size", min=1, max=10_000_000)
    seed = check_seed(seed)
    tuned = copy.deepcopy(model).eval()
    for p in tuned.parameters():
        p.requires_grad_(False)
    for p in tuned.decoder.parameters():
        p.requires_grad_(True)
    codes, lengths = memory.padded_codes()
    with torch.no_grad():
        q = tuned.quantizer.lookup(torch.as_tensor(codes), torch.as_tensor(lengths))
    x = torch.as_tensor(np.concatenate(videos))
    batches = array_batches(q, x, batch_size=min(batch_size, len(x)),
                            generator=make_generator(seed))

    def loss(m, batch):
        qb, xb = batch
        return ((m(qb) - xb) ** 2).mean()

    train(tuned.decoder, batches, max_iter=max_iter, lr=lr, seed=seed, loss_fn=loss,
          optimizer=_fused_adamw(tuned.decoder, lr), device=device, desc="arq_vae fine-tune")
    tuned.cpu()
    for p in tuned.parameters():
        p.requires_grad_(True)
    return tuned.eval()
