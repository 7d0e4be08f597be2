"""Vector quantizers: ASVQ (adaptive scales over a frozen random codebook) and baselines.

Every quantizer here is an ``nn.Module`` with the call convention of
``vector-quantize-pytorch``: ``quantized, indices, loss = vq(z)`` for ``z`` of shape
``(B, N, d)``, or ``(B, d, *spatial)`` with ``channel_first=True``, so one can be swapped
for another (or for the library's) inside a model. The result is a :class:`VQOutput`, a
named tuple, so it unpacks like the library's tuple and also reads by name.

- :class:`ASVQ` (ours, inferred from the abstract): the codes are a frozen Gaussian basis
  ``B`` (K x d, entries N(0, 1/d)) with learned scales: ``c_k = mu + sigma * b_k``
  (``scale="affine"``, 2d parameters), ``sigma * b_k`` (``"diag"``, d), ``mu + a_k sigma * b_k``
  (``"per_code"``, 2d + K) or an EMA standardisation of the latent with no parameters
  (``"ema_stats"``).
- :class:`SimVQ` (Zhu et al. 2024): ``C = B W`` with a learned d x d map ``W``.
- :class:`VanillaVQ` (van den Oord et al. 2017): a learned codebook.
- :class:`EMAVQ`: k-means-style EMA codebook updates with dead-code expiry
  (Razavi et al. 2019; Dhariwal et al. 2020).

All share the assignment ``argmin_k ||z - c_k||^2`` (computed as
``||z||^2 - 2 z c^T + ||c||^2``, in chunks, never materialising (N, K, d)), the loss
``||sg(z) - c||^2 + beta ||z - sg(c)||^2`` (the codebook term trains the codebook's
parameters only, the commitment term the encoder only: the "decoupled" learning), and the
straight-through estimator ``z + sg(c - z)`` or, optionally, the rotation trick
(Fifty et al. 2024).

References
----------
van den Oord, Vinyals, Kavukcuoglu. Neural discrete representation learning. NeurIPS 2017.
Zhu, Li, Wang. Addressing representation collapse in vector quantized models with one
linear layer (SimVQ). arXiv:2411.02038, 2024.
Fifty et al. Restructuring vector quantization with the rotation trick. arXiv:2410.06424.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.common.validation import check_bool, check_choice, check_float, check_int

__all__ = [
    "ASVQ",
    "EMAVQ",
    "SCALES",
    "SimVQ",
    "VQOutput",
    "VanillaVQ",
    "codebook_perplexity",
    "codebook_usage",
    "nearest_code",
    "rotate_to",
]

#: ASVQ's scale modes.
SCALES = ("affine", "diag", "per_code", "ema_stats")

#: Largest codebook accepted (the distance matrix of a batch is chunked, but K x d is kept).
MAX_CODEBOOK_SIZE = 2**20
#: Largest code dimension accepted.
MAX_DIM = 2**14
#: Largest magnitude of an input entry (squared distances stay far below float32's max).
MAX_ABS = 1e12
#: Rows of the distance matrix computed at once (bounds memory at ~ CHUNK x K floats).
_CHUNK = 4096


class VQOutput(NamedTuple):
    """What a quantizer returns; unpacks as ``quantized, indices, loss``.

    Attributes
    ----------
    quantized : Tensor, the shape of the input z
        The selected codes (with the straight-through or rotation-trick gradient to z).
    indices : Tensor of int64, shape (B, *N)
        The code index k of every vector.
    loss : Tensor, scalar
        ``||sg(z) - c||^2 + beta ||z - sg(c)||^2`` (means over elements).
    """

    quantized: Tensor
    indices: Tensor
    loss: Tensor


def _check_tensor(z, name: str, *, ndim=None, dim: int | None = None) -> Tensor:
    if not isinstance(z, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(z).__name__}")
    if not z.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {z.dtype}")
    if ndim is not None and z.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise ValueError(f"{name} must be a {want} tensor, got shape {tuple(z.shape)}")
    if z.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(z.shape)}")
    if dim is not None and z.shape[-1] != dim:
        raise ValueError(f"{name} must have last dimension {dim}, got shape {tuple(z.shape)}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError(f"{name} must be finite; it contains NaN or inf")
    if float(z.detach().abs().max()) > MAX_ABS:
        raise ValueError(f"{name} has entries above {MAX_ABS:g} in magnitude (squared "
                         "distances would overflow)")  # fmt: skip
    return z


@torch.no_grad()
def nearest_code(z: Tensor, codebook: Tensor) -> Tensor:
    """Index of the nearest code of every row: ``argmin_k ||z_i - c_k||^2``.

    Computed as ``||z||^2 - 2 z c^T + ||c||^2`` in chunks of rows, never materialising the
    (N, K, d) difference tensor. Ties go to the lowest index.

    Parameters
    ----------
    z : Tensor, shape (N, d)
        Vectors to quantize.
    codebook : Tensor, shape (K, d)
        The codes c_k.

    Returns
    -------
    Tensor of int64, shape (N,)

    Raises
    ------
    ValueError, TypeError
        For non-tensors, wrong ranks, mismatched d, empty or non-finite input.

    Examples
    --------
    >>> c = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    >>> nearest_code(torch.tensor([[0.9, 0.8], [0.1, -0.2]]), c).tolist()
    [1, 0]
    """
    codebook = _check_tensor(codebook, "codebook", ndim=(2,))
    z = _check_tensor(z, "z", ndim=(2,), dim=codebook.shape[1])
    c = codebook.to(z.dtype)
    c2 = (c * c).sum(1)  # (K,)
    out = []
    for start in range(0, len(z), _CHUNK):
        zc = z[start : start + _CHUNK]  # (n, d)
        # ||z||^2 is constant in k, so argmin_k of -2 z c^T + ||c||^2 is the same argmin.
        d2 = torch.addmm(c2[None, :], zc, c.T, alpha=-2.0)  # (n, K): ||c||^2 - 2 z c^T
        # min(dim).indices is argmin (first index on ties) and several times faster on
        # CPU in torch's kernels.
        out.append(d2.min(dim=1).indices)
    return torch.cat(out)


def rotate_to(z: Tensor, q: Tensor) -> Tensor:
    """The rotation trick: ``sg(|q| / |z|) sg(R) z``, equal to ``q`` in value.

    R is the Householder-style rotation taking ``z / |z|`` to ``q / |q|`` (Fifty et al.,
    Sec. 4.2): ``R e = e - 2 w w^T e + 2 q_hat u^T e`` with ``u = z / |z|``,
    ``q_hat = q / |q|``, ``w = (u + q_hat) / |u + q_hat|``, all held constant, so the
    gradient reaching ``z`` is the upstream gradient rotated by ``R^T`` and rescaled.

    Parameters
    ----------
    z : Tensor, shape (..., d)
        Encoder outputs.
    q : Tensor, shape (..., d)
        Their codes.

    Returns
    -------
    Tensor, shape (..., d)

    Examples
    --------
    >>> z, q = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0]])
    >>> rotate_to(z, q).round(decimals=5).tolist()
    [[0.0, 2.0]]
    """
    z = _check_tensor(z, "z")
    q = _check_tensor(q, "q")
    if q.shape != z.shape:
        raise ValueError(f"q must have the shape of z {tuple(z.shape)}, got {tuple(q.shape)}")
    eps = 1e-6
    nz = z.norm(dim=-1, keepdim=True)
    nq = q.norm(dim=-1, keepdim=True)
    u = (z / nz.clamp(min=eps)).detach()
    qh = (q / nq.clamp(min=eps)).detach()
    w = F.normalize(u + qh, dim=-1, eps=eps).detach()
    e = z
    rotated = e - 2 * (e * w).sum(-1, keepdim=True) * w + 2 * (e * u).sum(-1, keepdim=True) * qh
    return rotated * (nq / nz.clamp(min=eps)).detach()


def _check_indices(indices, codebook_size) -> np.ndarray:
    codebook_size = check_int(codebook_size, "codebook_size", min=1, max=MAX_CODEBOOK_SIZE)
    if isinstance(indices, Tensor):
        indices = indices.detach().cpu().numpy()
    if indices is None or isinstance(indices, (str, bytes)):
        raise TypeError(f"indices must be an integer array, got {type(indices).__name__}")
    arr = np.asarray(indices)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"indices must be an integer array, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError("indices must not be empty (an empty eval set has no usage)")
    if arr.min() < 0 or arr.max() >= codebook_size:
        raise ValueError(
            f"indices must lie in [0, codebook_size={codebook_size}), got values in "
            f"[{arr.min()}, {arr.max()}]"
        )
    return arr.ravel()


def codebook_usage(indices, codebook_size: int) -> float:
    """Fraction of the K codes used at least once by ``indices`` (an eval set's codes).

    Parameters
    ----------
    indices : array_like or Tensor of int
        Code indices, any shape, values in [0, K).
    codebook_size : int
        K.

    Returns
    -------
    float in (0, 1]

    Examples
    --------
    >>> codebook_usage([0, 0, 3], 4)
    0.5
    """
    arr = _check_indices(indices, codebook_size)
    return float(np.unique(arr).size / codebook_size)


def codebook_perplexity(indices, codebook_size: int) -> float:
    """``exp(H(p))`` of the code histogram p: K for uniform use, 1 for a single code.

    Parameters
    ----------
    indices : array_like or Tensor of int
        Code indices, any shape, values in [0, K).
    codebook_size : int
        K.

    Returns
    -------
    float in [1, K]

    Examples
    --------
    >>> round(codebook_perplexity([0, 1, 2, 3], 4), 6)
    4.0
    >>> codebook_perplexity([2, 2, 2], 4)
    1.0
    """
    arr = _check_indices(indices, codebook_size)
    p = np.bincount(arr, minlength=int(codebook_size)) / arr.size
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


class _Quantizer(nn.Module):
    """Shared parts: layout, assignment, the decoupled loss, the gradient estimator."""

    def __init__(self, dim, codebook_size, *, commitment_weight, rotation_trick,
                 channel_first) -> None:  # fmt: skip
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=MAX_DIM)
        self.codebook_size = check_int(codebook_size, "codebook_size", min=2,
                                       max=MAX_CODEBOOK_SIZE)  # fmt: skip
        self.commitment_weight = check_float(commitment_weight, "commitment_weight", min=0.0,
                                             max=1e6)  # fmt: skip
        self.rotation_trick = check_bool(rotation_trick, "rotation_trick")
        self.channel_first = check_bool(channel_first, "channel_first")

    @property
    def codebook(self) -> Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def num_extra_parameters(self) -> int:
        """Learned parameters of the quantizer (the codebook's reparameterization)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _flatten(self, z):
        z = _check_tensor(z, "z")
        if self.channel_first:
            if z.ndim < 3:
                raise ValueError(
                    f"z must be (B, d, *spatial) with channel_first=True (3-D or more), "
                    f"got shape {tuple(z.shape)}"
                )
            if z.shape[1] != self.dim:
                raise ValueError(f"z must have {self.dim} channels (dim), got shape "
                                 f"{tuple(z.shape)}")  # fmt: skip
            z = z.movedim(1, -1)
        elif z.ndim < 2:
            raise ValueError(f"z must be (B, N, d) or (B, d), got shape {tuple(z.shape)}")
        elif z.shape[-1] != self.dim:
            raise ValueError(f"z must have last dimension {self.dim} (dim), got shape "
                             f"{tuple(z.shape)}")  # fmt: skip
        return z

    def _before_assign(self, flat: Tensor) -> None:
        """Hook for data-dependent initialisation and EMA statistics (training only)."""

    def _codebook_loss(self, flat, q, idx) -> Tensor:
        return F.mse_loss(q, flat.detach())  # ||sg(z) - c||^2

    def forward(self, z: Tensor) -> VQOutput:
        """Quantize ``z``.

        Parameters
        ----------
        z : Tensor, shape (B, N, d), or (B, d, *spatial) with ``channel_first=True``

        Returns
        -------
        VQOutput
            ``(quantized, indices, loss)``: ``quantized`` has the shape of ``z``,
            ``indices`` the shape of ``z`` without the code dimension.
        """
        zl = self._flatten(z)  # (B, *N, d)
        lead = zl.shape[:-1]
        flat = zl.reshape(-1, self.dim)  # (M, d)
        if self.training:
            self._before_assign(flat.detach())
        codebook = self.codebook  # (K, d)
        idx = nearest_code(flat.detach(), codebook.detach())  # (M,)
        q = codebook[idx]  # (M, d)
        # Decoupled loss: the codebook term moves only the codebook's parameters, the
        # commitment term (beta) only the encoder.
        loss = self._codebook_loss(flat, q, idx) + self.commitment_weight * F.mse_loss(
            flat, q.detach()
        )
        if self.rotation_trick:
            out = rotate_to(flat, q.detach())
        else:
            out = flat + (q - flat).detach()  # straight-through: d out / d z = I
        out = out.reshape(*lead, self.dim)
        if self.channel_first:
            out = out.movedim(-1, 1)
        return VQOutput(out, idx.reshape(lead), loss)

    @torch.no_grad()
    def indices_to_codes(self, indices: Tensor) -> Tensor:
        """The codes of ``indices`` (B, *N): shape (B, *N, d), or channel-first."""
        if not isinstance(indices, Tensor) or indices.dtype not in (torch.int64, torch.int32):
            raise TypeError("indices must be an integer torch.Tensor")
        if indices.numel() == 0:
            raise ValueError("indices must not be empty")
        if int(indices.min()) < 0 or int(indices.max()) >= self.codebook_size:
            raise ValueError(f"indices must lie in [0, {self.codebook_size})")
        out = self.codebook[indices.long()]
        return out.movedim(-1, 1) if self.channel_first else out

    def get_codes_from_indices(self, indices: Tensor) -> Tensor:
        """:meth:`indices_to_codes` under the name ``vector-quantize-pytorch`` uses, so a
        decoder written for its ``VectorQuantize`` reads our codes unchanged (shape
        ``(B, *N, d)``, or ``(B, d, *N)`` with ``channel_first=True``)."""
        return self.indices_to_codes(indices)

    def get_output_from_indices(self, indices: Tensor) -> Tensor:
        """The quantized output of ``indices``: the codes (no output projection here), as
        ``vector-quantize-pytorch``'s method of that name returns."""
        return self.indices_to_codes(indices)


def _frozen_basis(codebook_size: int, dim: int, seed: int) -> Tensor:
    gen = torch.Generator().manual_seed(int(seed) % 2**63)
    return torch.randn(codebook_size, dim, generator=gen) / math.sqrt(dim)  # N(0, 1/d)


class ASVQ(_Quantizer):
    """Adaptive-Scale Vector Quantization: frozen random directions, learned scales.

    The codebook is a frozen Gaussian basis ``B`` (K x d, entries N(0, 1/d)) under a
    lightweight learned reparameterization (our reading of the abstract)::

        affine    c_k = mu + sigma * b_k                      2d parameters
        diag      c_k = sigma * b_k                            d parameters
        per_code  c_k = mu + a_k * sigma * b_k                 2d + K parameters
        ema_stats c_k = m + s * b_k, (m, s) EMA mean/std of z  no parameters

    with ``sigma = softplus(rho) > 0``. Every code moves when ``mu`` or ``sigma`` moves, so
    no code is left behind as in a learned codebook (the collapse that SimVQ's d x d map
    also prevents, with d^2 parameters). Without data, ``mu = 0`` and ``sigma = 1``. With
    ``data_init``, the first training batch sets ``mu`` to the latent's mean and ``sigma``
    so that the codes' per-dimension spread equals the latent's (``sigma = sqrt(d) *
    std(z)``, as ``b_k`` has entries of variance 1/d). It is off by default: on the first
    batch of an untrained encoder the latent's spread is tiny, ``softplus`` is flat there,
    and the scales stay stuck near it while the encoder grows (the codebook shrinks into
    one point; see the experiment's notes).

    Parameters
    ----------
    dim : int
        Code dimension d.
    codebook_size : int
        K >= 2.
    scale : {"affine", "diag", "per_code", "ema_stats"}
        The reparameterization (default ``"affine"``).
    commitment_weight : float
        beta of the commitment term ``beta ||z - sg(c)||^2`` (default 0.25).
    rotation_trick : bool
        Use the rotation trick instead of the straight-through estimator (default False).
    data_init : bool
        Initialise ``mu, sigma`` from the first training batch (default False).
    channel_first : bool
        Inputs are ``(B, d, *spatial)`` (default False: ``(B, N, d)``).
    ema_decay : float
        Decay of the running statistics of ``scale="ema_stats"`` (default 0.99).
    seed : int
        Seed of the frozen basis B.

    Raises
    ------
    ValueError, TypeError
        For ``codebook_size < 2``, an unknown ``scale``, ``commitment_weight < 0`` and
        other bad arguments; at call time for non-finite z, wrong rank or d.

    Examples
    --------
    >>> vq = ASVQ(dim=8, codebook_size=64, seed=0)
    >>> z = torch.randn(2, 10, 8)
    >>> quantized, indices, loss = vq(z)
    >>> quantized.shape, indices.shape, vq.num_extra_parameters
    (torch.Size([2, 10, 8]), torch.Size([2, 10]), 16)
    """

    def __init__(self, dim: int, codebook_size: int, *, scale: str = "affine",
                 commitment_weight: float = 0.25, rotation_trick: bool = False,
                 data_init: bool = False, channel_first: bool = False,
                 ema_decay: float = 0.99, seed: int = 0) -> None:  # fmt: skip
        super().__init__(dim, codebook_size, commitment_weight=commitment_weight,
                         rotation_trick=rotation_trick, channel_first=channel_first)  # fmt: skip
        self.scale = check_choice(scale, "scale", SCALES)
        self.data_init = check_bool(data_init, "data_init")
        self.ema_decay = check_float(ema_decay, "ema_decay", min=0.0, max=1.0,
                                     max_inclusive=False)  # fmt: skip
        seed = check_int(seed, "seed", min=0)
        d, k = self.dim, self.codebook_size
        self.register_buffer("frozen_codebook", _frozen_basis(k, d, seed))  # B (K, d)
        self.register_buffer("initialized", torch.tensor(not self.data_init))
        # sigma = softplus(rho) = 1 at initialisation without data.
        rho0 = torch.full((d,), math.log(math.e - 1.0))
        if self.scale == "ema_stats":
            self.register_buffer("running_mean", torch.zeros(d))
            self.register_buffer("running_std", torch.ones(d))
        else:
            self.rho = nn.Parameter(rho0)
            if self.scale != "diag":
                self.mu = nn.Parameter(torch.zeros(d))
            if self.scale == "per_code":
                self.gain = nn.Parameter(torch.ones(k))  # a_k

    @property
    def sigma(self) -> Tensor:
        """The per-dimension scales sigma (d,)."""
        if self.scale == "ema_stats":
            return self.running_std * math.sqrt(self.dim)
        return F.softplus(self.rho)

    @property
    def shift(self) -> Tensor:
        """The per-dimension offset mu (d,): zero for ``scale="diag"``."""
        if self.scale == "ema_stats":
            return self.running_mean
        if self.scale == "diag":
            return torch.zeros_like(self.rho)
        return self.mu

    @property
    def codebook(self) -> Tensor:
        """The effective codes c_k, shape (K, d)."""
        b = self.frozen_codebook  # (K, d)
        if self.scale == "per_code":
            b = self.gain[:, None] * b  # a_k b_k
        return self.shift + self.sigma * b  # c_k = mu + sigma * b_k

    @torch.no_grad()
    def _before_assign(self, flat: Tensor) -> None:
        mean = flat.mean(0)
        std = flat.std(0, unbiased=False) if len(flat) > 1 else flat.abs().mean(0)
        if self.scale == "ema_stats":
            if not bool(self.initialized):
                self.running_mean.copy_(mean)
                self.running_std.copy_(std.clamp(min=1e-5))
                self.initialized.fill_(True)
            else:
                a = self.ema_decay
                self.running_mean.mul_(a).add_((1 - a) * mean)
                self.running_std.mul_(a).add_((1 - a) * std.clamp(min=1e-5))
            return
        if bool(self.initialized):
            return
        if self.scale == "diag":  # no offset: match the root mean square instead
            std = flat.pow(2).mean(0).sqrt()
        else:
            self.mu.copy_(mean)
        target = (std * math.sqrt(self.dim)).clamp(min=1e-4)
        self.rho.copy_(target + torch.log(-torch.expm1(-target)))  # softplus^{-1}
        self.initialized.fill_(True)


class SimVQ(_Quantizer):
    """SimVQ: a frozen random codebook under one learned linear map, ``C = B W^T``.

    ``B`` (K x d) has entries N(0, 1/d) as in ``vector-quantize-pytorch``'s ``SimVQ``, and
    ``W`` is a bias-free ``nn.Linear(d, d)`` (d^2 parameters), or any module passed as
    ``codebook_transform``. Same call convention and loss as the library's SimVQ: its
    ``input_to_quantize_commit_loss_weight`` is our ``commitment_weight`` and its
    ``commitment_weight`` (a global factor) is 1.

    Parameters
    ----------
    dim : int
        d.
    codebook_size : int
        K >= 2.
    codebook_transform : nn.Module, optional
        Maps B (K, d) to the codes (K, d); default a bias-free linear layer seeded by
        ``seed``.
    commitment_weight : float
        beta (default 0.25).
    rotation_trick : bool
        Rotation trick instead of straight-through (default False; the library's is True).
    channel_first : bool
        Inputs are ``(B, d, *spatial)``.
    seed : int
        Seed of B and of the default W.

    Examples
    --------
    >>> vq = SimVQ(dim=8, codebook_size=64)
    >>> vq(torch.randn(2, 5, 8)).indices.shape, vq.num_extra_parameters
    (torch.Size([2, 5]), 64)
    """

    def __init__(self, dim: int, codebook_size: int, *, codebook_transform: nn.Module | None = None,
                 commitment_weight: float = 0.25, rotation_trick: bool = False,
                 channel_first: bool = False, seed: int = 0) -> None:  # fmt: skip
        super().__init__(dim, codebook_size, commitment_weight=commitment_weight,
                         rotation_trick=rotation_trick, channel_first=channel_first)  # fmt: skip
        seed = check_int(seed, "seed", min=0)
        self.register_buffer("frozen_codebook", _frozen_basis(self.codebook_size, self.dim, seed))
        if codebook_transform is None:
            gen = torch.Generator().manual_seed(seed % 2**63 + 1)
            codebook_transform = nn.Linear(self.dim, self.dim, bias=False)
            bound = 1.0 / math.sqrt(self.dim)  # nn.Linear's default range, seeded
            with torch.no_grad():
                codebook_transform.weight.uniform_(-bound, bound, generator=gen)
        elif not isinstance(codebook_transform, nn.Module):
            raise TypeError(f"codebook_transform must be an nn.Module, got "
                            f"{type(codebook_transform).__name__}")  # fmt: skip
        self.code_transform = codebook_transform

    @property
    def codebook(self) -> Tensor:
        """The codes ``W(B)``, shape (K, d)."""
        return self.code_transform(self.frozen_codebook)


class VanillaVQ(_Quantizer):
    """VQ-VAE's quantizer: a learned codebook, codebook loss plus commitment.

    The codebook is initialised uniform in ``[-1/K, 1/K]`` (VQ-VAE / VQGAN's
    ``nn.Embedding`` init), the setting in which large codebooks collapse.

    Parameters
    ----------
    dim, codebook_size : int
        d and K >= 2.
    commitment_weight : float
        beta (default 0.25).
    rotation_trick, channel_first : bool
        As for :class:`ASVQ`.
    seed : int
        Seed of the initial codebook.

    Examples
    --------
    >>> vq = VanillaVQ(dim=4, codebook_size=16)
    >>> vq.num_extra_parameters
    64
    """

    def __init__(self, dim: int, codebook_size: int, *, commitment_weight: float = 0.25,
                 rotation_trick: bool = False, channel_first: bool = False,
                 seed: int = 0) -> None:  # fmt: skip
        super().__init__(dim, codebook_size, commitment_weight=commitment_weight,
                         rotation_trick=rotation_trick, channel_first=channel_first)  # fmt: skip
        seed = check_int(seed, "seed", min=0)
        gen = torch.Generator().manual_seed(seed % 2**63)
        k = self.codebook_size
        init = (torch.rand(k, self.dim, generator=gen) * 2 - 1) / k
        self.embed = nn.Parameter(init)

    @property
    def codebook(self) -> Tensor:
        """The learned codes, shape (K, d)."""
        return self.embed


class EMAVQ(_Quantizer):
    """VQ with exponential-moving-average codebook updates and dead-code expiry.

    Each training step moves a code to the EMA of the vectors assigned to it (the
    codebook has no gradient; the loss is the commitment term only), initialises the codes
    from the first batch, and replaces every code whose EMA count falls below
    ``dead_code_threshold`` by a random vector of the batch (as
    ``vector-quantize-pytorch``'s ``threshold_ema_dead_code``).

    Parameters
    ----------
    dim, codebook_size : int
        d and K >= 2.
    decay : float
        EMA decay in [0, 1) (default 0.99).
    dead_code_threshold : float
        EMA count below which a code is replaced (default 1.0; 0 turns expiry off).
    commitment_weight : float
        beta (default 0.25).
    rotation_trick, channel_first : bool
        As for :class:`ASVQ`.
    seed : int
        Seed of the initial codes and of the replacement draws.

    Examples
    --------
    >>> vq = EMAVQ(dim=4, codebook_size=16)
    >>> _ = vq(torch.randn(3, 7, 4)); vq.num_extra_parameters
    0
    """

    def __init__(self, dim: int, codebook_size: int, *, decay: float = 0.99,
                 dead_code_threshold: float = 1.0, commitment_weight: float = 0.25,
                 rotation_trick: bool = False, channel_first: bool = False,
                 seed: int = 0) -> None:  # fmt: skip
        super().__init__(dim, codebook_size, commitment_weight=commitment_weight,
                         rotation_trick=rotation_trick, channel_first=channel_first)  # fmt: skip
        self.decay = check_float(decay, "decay", min=0.0, max=1.0, max_inclusive=False)
        self.dead_code_threshold = check_float(dead_code_threshold, "dead_code_threshold",
                                               min=0.0, max=1e9)  # fmt: skip
        seed = check_int(seed, "seed", min=0)
        self._gen = torch.Generator().manual_seed(seed % 2**63)
        k, d = self.codebook_size, self.dim
        self.register_buffer("embed", torch.randn(k, d, generator=self._gen) / math.sqrt(d))
        self.register_buffer("cluster_size", torch.ones(k))
        self.register_buffer("embed_sum", self.embed.clone())
        self.register_buffer("initialized", torch.tensor(False))

    @property
    def codebook(self) -> Tensor:
        """The EMA codes, shape (K, d)."""
        return self.embed

    def _sample(self, flat: Tensor, n: int) -> Tensor:
        pick = torch.randint(len(flat), (n,), generator=self._gen)
        return flat[pick]

    @torch.no_grad()
    def _before_assign(self, flat: Tensor) -> None:
        if not bool(self.initialized):  # data init: codes drawn from the first batch
            self.embed.copy_(self._sample(flat, self.codebook_size))
            self.embed_sum.copy_(self.embed)
            self.cluster_size.fill_(1.0)
            self.initialized.fill_(True)

    def _codebook_loss(self, flat, q, idx) -> Tensor:
        if self.training:
            with torch.no_grad():
                a = self.decay
                x = flat.detach().to(self.embed_sum.dtype)  # the state keeps its own dtype
                counts = torch.bincount(idx, minlength=self.codebook_size).to(x.dtype)  # (K,)
                sums = torch.zeros_like(self.embed_sum).index_add_(0, idx, x)  # (K, d)
                self.cluster_size.mul_(a).add_((1 - a) * counts)
                self.embed_sum.mul_(a).add_((1 - a) * sums)
                n = self.cluster_size.sum()
                smoothed = (self.cluster_size + 1e-5) / (n + self.codebook_size * 1e-5) * n
                self.embed.copy_(self.embed_sum / smoothed[:, None])
                dead = self.cluster_size < self.dead_code_threshold
                num_dead = int(dead.sum())
                if num_dead:
                    fresh = self._sample(x, num_dead)
                    self.embed[dead] = fresh
                    self.embed_sum[dead] = fresh * self.dead_code_threshold
                    self.cluster_size[dead] = self.dead_code_threshold
        return flat.new_zeros(())  # the codebook has no gradient
