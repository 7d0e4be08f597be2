"""Small VQ-VAE tokenizers for images and 8 kHz audio, their training and evaluation.

:class:`VQAutoencoder` puts any quantizer with the ``quantized, indices, loss = vq(z)``
convention (ours or ``vector-quantize-pytorch``'s) between a convolutional encoder and
decoder: 2-D convolutions with total stride 4 for images (28x28 -> 7x7 tokens), 1-D
convolutions with total stride 64 for audio (2,048 samples -> 32 tokens).
:func:`train_vqae` trains one with the reconstruction MSE plus the quantizer's loss and
counts loss spikes; :func:`evaluate_vqae` measures held-out reconstruction and the
codebook's usage and perplexity.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.common.torch import get_device, make_generator
from neurips26.common.train import array_batches, train
from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

from .quantize import codebook_perplexity, codebook_usage

__all__ = [
    "KINDS",
    "AEOutput",
    "EvalResult",
    "TrainResult",
    "VQAutoencoder",
    "count_loss_spikes",
    "evaluate_vqae",
    "train_vqae",
]

KINDS = ("image", "audio")
#: Largest magnitude of an input sample accepted.
MAX_INPUT = 1e6
#: Downsampling of the encoders (input length or side per token).
STRIDE = {"image": 4, "audio": 64}


@dataclass(frozen=True)
class AEOutput:
    """A forward pass: ``recon`` (shape of x), ``indices`` (B, H/4, W/4) or (B, L/64),
    ``vq_loss`` (the quantizer's loss)."""

    recon: Tensor
    indices: Tensor
    vq_loss: Tensor


def _encoder(kind, c, h, d):
    if kind == "image":  # (B, c, H, W) -> (B, d, H/4, W/4)
        return nn.Sequential(
            nn.Conv2d(c, h, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(h, h, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(h, h, 3, 1, 1), nn.ReLU(),
            nn.Conv2d(h, d, 1),
        )  # fmt: skip
    return nn.Sequential(  # (B, c, L) -> (B, d, L/64)
        nn.Conv1d(c, h, 8, 4, 2), nn.ReLU(),
        nn.Conv1d(h, h, 8, 4, 2), nn.ReLU(),
        nn.Conv1d(h, h, 8, 4, 2), nn.ReLU(),
        nn.Conv1d(h, d, 1),
    )  # fmt: skip


def _decoder(kind, c, h, d):
    if kind == "image":
        return nn.Sequential(
            nn.Conv2d(d, h, 3, 1, 1), nn.ReLU(),
            nn.ConvTranspose2d(h, h, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(h, c, 4, 2, 1),
        )  # fmt: skip
    return nn.Sequential(
        nn.Conv1d(d, h, 3, 1, 1), nn.ReLU(),
        nn.ConvTranspose1d(h, h, 8, 4, 2), nn.ReLU(),
        nn.ConvTranspose1d(h, h, 8, 4, 2), nn.ReLU(),
        nn.ConvTranspose1d(h, c, 8, 4, 2),
    )  # fmt: skip


class VQAutoencoder(nn.Module):
    """A VQ-VAE tokenizer: conv encoder, a swappable quantizer, conv decoder.

    Parameters
    ----------
    in_channels : int
        Channels of the input (1 for grey images and mono audio).
    quantizer : nn.Module
        Any module with an int ``codebook_size`` and ``quantized, indices, loss =
        quantizer(z)`` for z (B, N, d) (ours or ``vector-quantize-pytorch``'s with
        ``channel_first=False``); another module is refused with a ``TypeError``.
    dim : int
        Code dimension d (must equal the quantizer's).
    hidden : int
        Width of the convolutions.
    kind : {"image", "audio"}
        2-D (stride 4; H and W divisible by 4) or 1-D (stride 64; length divisible by 64).
    seed : int
        Seed of the convolution weights.

    Examples
    --------
    >>> from neurips26.papers.asvq import ASVQ
    >>> ae = VQAutoencoder(1, quantizer=ASVQ(16, 32), dim=16, hidden=8)
    >>> out = ae(torch.rand(2, 1, 16, 16))
    >>> out.recon.shape, out.indices.shape
    (torch.Size([2, 1, 16, 16]), torch.Size([2, 4, 4]))
    """

    def __init__(self, in_channels: int, *, quantizer: nn.Module, dim: int = 32,
                 hidden: int = 64, kind: str = "image", seed: int = 0) -> None:  # fmt: skip
        super().__init__()
        self.in_channels = check_int(in_channels, "in_channels", min=1, max=64)
        self.dim = check_int(dim, "dim", min=1, max=4096)
        self.hidden = check_int(hidden, "hidden", min=1, max=4096)
        self.kind = check_choice(kind, "kind", KINDS)
        seed = check_seed(seed)
        if not isinstance(quantizer, nn.Module) or not isinstance(
                getattr(quantizer, "codebook_size", None), int):
            raise TypeError(
                "quantizer must be a vector quantizer: an nn.Module with an int "
                "codebook_size whose forward returns (quantized, indices, loss), such as "
                "ASVQ, SimVQ, VanillaVQ, EMAVQ or vector_quantize_pytorch's VectorQuantize; "
                f"got {type(quantizer).__name__}")  # fmt: skip
        if getattr(quantizer, "channel_first", False):
            raise ValueError("quantizer must take (B, N, d) inputs (channel_first=False)")
        qdim = getattr(quantizer, "dim", None)
        if isinstance(qdim, int) and qdim != self.dim:
            raise ValueError(f"dim {self.dim} differs from the quantizer's dim {qdim}")
        state = torch.random.get_rng_state()
        torch.manual_seed(seed % 2**63)
        try:
            self.encoder = _encoder(self.kind, self.in_channels, self.hidden, self.dim)
            self.decoder = _decoder(self.kind, self.in_channels, self.hidden, self.dim)
        finally:
            torch.random.set_rng_state(state)
        self.quantizer = quantizer

    def _check_input(self, x) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
        wdtype = next(self.encoder.parameters()).dtype
        if x.dtype != wdtype:
            raise TypeError(f"x has dtype {x.dtype} but the autoencoder's weights are {wdtype}; "
                            f"pass x.to({wdtype}) or convert the model with .to({x.dtype})")
        rank = 4 if self.kind == "image" else 3
        if x.ndim != rank or x.shape[1] != self.in_channels:
            raise ValueError(f"x must have shape (B, {self.in_channels}, "
                             f"{'H, W' if rank == 4 else 'L'}), got {tuple(x.shape)}")  # fmt: skip
        s = STRIDE[self.kind]
        if x.numel() == 0 or any(n % s or n == 0 for n in x.shape[2:]):
            raise ValueError(f"x: spatial sizes must be positive multiples of {s}, got "
                             f"{tuple(x.shape)}")  # fmt: skip
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x must be finite; it contains NaN or inf")
        if float(x.detach().abs().max()) > MAX_INPUT:
            raise ValueError(f"x has entries above {MAX_INPUT:g} in magnitude (images are "
                             "in [0, 1], audio in [-1, 1])")  # fmt: skip
        return x

    def encode(self, x: Tensor) -> Tensor:
        """Encoder output z, shape (B, N, d) with N tokens."""
        z = self.encoder(self._check_input(x))  # (B, d, *S)
        return z.flatten(2).transpose(1, 2)  # (B, N, d)

    def forward(self, x: Tensor) -> AEOutput:
        """Encode, quantize and decode ``x`` (B, C, H, W) or (B, C, L)."""
        z = self.encoder(self._check_input(x))  # (B, d, *S)
        spatial = z.shape[2:]
        q, idx, loss = self.quantizer(z.flatten(2).transpose(1, 2))  # (B, N, d)
        q = q.transpose(1, 2).reshape(z.shape)  # (B, d, *S)
        return AEOutput(self.decoder(q), idx.reshape(len(x), *spatial), loss)


@dataclass(frozen=True)
class TrainResult:
    """The history of :func:`train_vqae`.

    Attributes
    ----------
    losses : ndarray, shape (T,)
        Total loss per step (reconstruction MSE + quantizer loss).
    recon_mse : ndarray, shape (T,)
        Training reconstruction MSE per step.
    loss_spikes : int
        Steps whose loss exceeds ``spike_factor`` times the median of the previous
        ``spike_window`` steps (:func:`count_loss_spikes`).
    sec_per_step : float
        Wall seconds per step (machine-dependent).
    """

    losses: np.ndarray
    recon_mse: np.ndarray
    loss_spikes: int
    sec_per_step: float


@dataclass(frozen=True)
class EvalResult:
    """Held-out quality of a tokenizer (:func:`evaluate_vqae`).

    Attributes
    ----------
    recon_mse : float
        Mean squared reconstruction error.
    psnr : float
        ``10 log10(1 / recon_mse)`` (peak 1: images in [0, 1], audio in [-1, 1]).
    usage : float
        Fraction of the K codes used on the set.
    perplexity : float
        exp(entropy) of the code histogram on the set.
    indices : ndarray of int64, shape (N, *tokens)
        The codes of every example.
    """

    recon_mse: float
    psnr: float
    usage: float
    perplexity: float
    indices: np.ndarray


def count_loss_spikes(losses, *, window: int = 50, factor: float = 2.0) -> int:
    """Steps t whose loss exceeds ``factor`` times the median of steps [t - window, t).

    Parameters
    ----------
    losses : array_like, shape (T,)
        A loss curve (finite).
    window : int
        Length of the trailing median; the first ``window`` steps are never counted.
    factor : float
        Threshold ratio (> 1; default 2).

    Returns
    -------
    int

    Examples
    --------
    >>> count_loss_spikes([1.0] * 10 + [5.0] + [1.0] * 5, window=5)
    1
    """
    x = check_array(losses, "losses", ndim=1)
    window = check_int(window, "window", min=1, max=10**6)
    factor = check_float(factor, "factor", min=1.0, max=1e6, min_inclusive=False)
    count = 0
    for t in range(window, len(x)):
        if x[t] > factor * np.median(x[t - window : t]):
            count += 1
    return count


def _check_data(data, name, kind) -> np.ndarray:
    rank = 4 if kind == "image" else 3
    arr = check_array(data, name, ndim=rank, dtype=np.float32, max_size=2 * 10**8,
                      min=-MAX_INPUT, max=MAX_INPUT)
    s = STRIDE[kind]
    if any(n % s for n in arr.shape[2:]):
        raise ValueError(f"{name}: spatial sizes must be multiples of {s}, got {arr.shape}")
    return arr


def train_vqae(model: VQAutoencoder, data, *, max_iter: int, lr: float = 1e-3,
               batch_size: int = 64, seed: int = 0, device: str = "cpu",
               spike_window: int = 50, callback=None) -> TrainResult:  # fmt: skip
    """Train ``model`` in place on ``data`` with Adam: ``MSE(x_hat, x) + vq loss``.

    Parameters
    ----------
    model : VQAutoencoder
    data : ndarray, shape (N, C, H, W) or (N, C, L)
        Training examples (images in [0, 1], audio in [-1, 1]).
    max_iter : int
        Steps.
    lr : float
        Adam's step (constant).
    batch_size : int
        Examples per step (at most N).
    seed : int
        Seeds the batch order.
    device : {"cpu", "cuda"}
    spike_window : int
        Window of :func:`count_loss_spikes`.
    callback : callable, optional
        ``(step, model) -> stop?`` after each step (0-based); returning True stops
        training there (e.g. a held-out evaluation every few hundred steps).

    Returns
    -------
    TrainResult

    Examples
    --------
    >>> from neurips26.papers.asvq import ASVQ
    >>> ae = VQAutoencoder(1, quantizer=ASVQ(8, 16), dim=8, hidden=8)
    >>> res = train_vqae(ae, np.random.default_rng(0).random((32, 1, 8, 8)), max_iter=3,
    ...                  batch_size=8)
    >>> res.losses.shape
    (3,)
    """
    if not isinstance(model, VQAutoencoder):
        raise TypeError(f"model must be a VQAutoencoder, got {type(model).__name__}")
    x = _check_data(data, "data", model.kind)
    max_iter = check_int(max_iter, "max_iter", min=1, max=10**7)
    lr = check_float(lr, "lr", min=0.0, max=10.0, min_inclusive=False)
    batch_size = check_int(batch_size, "batch_size", min=1, max=len(x))
    seed = check_seed(seed)
    spike_window = check_int(spike_window, "spike_window", min=1, max=10**6)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    dev = get_device(device)
    recon: list[float] = []

    def loss_fn(m, batch):
        xb = batch[0]
        out = m(xb)
        mse = F.mse_loss(out.recon, xb)
        recon.append(float(mse.detach()))
        return mse + out.vq_loss

    batches = array_batches(x, batch_size=batch_size, generator=make_generator(seed),
                            device=dev)  # fmt: skip
    t0 = time.perf_counter()
    res = train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=str(dev),
                betas=(0.9, 0.99), loss_fn=loss_fn, desc="asvq tokenizer",
                callback=None if callback is None
                else (lambda step, _loss, m: bool(callback(step, m))))  # fmt: skip
    sec = (time.perf_counter() - t0) / max(1, res.num_steps)
    losses = np.asarray(res.losses, dtype=float)
    return TrainResult(losses, np.asarray(recon[: len(losses)], dtype=float),
                       count_loss_spikes(losses, window=spike_window) if len(losses) else 0,
                       sec)  # fmt: skip


@torch.no_grad()
def evaluate_vqae(model: VQAutoencoder, data, *, batch_size: int = 256,
                  device: str = "cpu") -> EvalResult:  # fmt: skip
    """Held-out reconstruction MSE / PSNR and codebook usage / perplexity of ``model``.

    Parameters
    ----------
    model : VQAutoencoder
        Its quantizer must have an integer ``codebook_size``.
    data : ndarray, shape (N, C, H, W) or (N, C, L)
        An eval set (non-empty).
    batch_size : int
    device : {"cpu", "cuda"}

    Returns
    -------
    EvalResult

    Examples
    --------
    >>> from neurips26.papers.asvq import ASVQ
    >>> ae = VQAutoencoder(1, quantizer=ASVQ(8, 16), dim=8, hidden=8)
    >>> ev = evaluate_vqae(ae, np.zeros((4, 1, 8, 8)))
    >>> ev.indices.shape, 0 < ev.usage <= 1
    ((4, 2, 2), True)
    """
    if not isinstance(model, VQAutoencoder):
        raise TypeError(f"model must be a VQAutoencoder, got {type(model).__name__}")
    x = _check_data(data, "data", model.kind)
    batch_size = check_int(batch_size, "batch_size", min=1, max=10**6)
    k = getattr(model.quantizer, "codebook_size", None)
    if not isinstance(k, int):
        raise TypeError("model: its quantizer has no integer codebook_size")
    dev = get_device(device)
    model.to(dev).eval()
    sse, idx = 0.0, []
    for start in range(0, len(x), batch_size):
        xb = torch.as_tensor(x[start : start + batch_size], device=dev)
        out = model(xb)
        sse += float(((out.recon - xb) ** 2).sum())
        idx.append(out.indices.cpu().numpy())
    mse = sse / x.size
    indices = np.concatenate(idx).astype(np.int64)
    psnr = 10 * math.log10(1.0 / mse) if mse > 0 else math.inf
    return EvalResult(mse, psnr, codebook_usage(indices, k), codebook_perplexity(indices, k),
                      indices)  # fmt: skip
