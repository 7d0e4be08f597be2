"""The ARQ-VAE model: an encoder, a residual vector quantizer and a frame-wise decoder.

Level l of the residual quantizer quantizes the residual r_{l-1} = z - sum_{j<l} c_j with
its own codebook of K entries; the prefix-l reconstruction of a frame is
x_hat^(l) = G(sum_{j<=l} c_j). Training draws a prefix depth per frame at random
(quantize dropout), so every prefix decodes well; codebooks follow exponential moving
averages of their assigned residuals, with dead-code expiry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.torch import make_generator
from neurips26.common.validation import check_bool, check_float, check_int, check_seed

#: Largest codebook a stored code can index (uint16).
MAX_CODEBOOK_SIZE = 65_536
#: Most levels (lengths are stored in 4 bits as l - 1).
MAX_LEVELS = 16


def _check_videos(videos, name: str = "videos", *, dim: int | None = None,
                  min_length: int = 1) -> list[np.ndarray]:
    """A non-empty list of finite float arrays (T_i, D) with one D."""
    if isinstance(videos, np.ndarray) and videos.ndim == 2:
        videos = [videos]
    if isinstance(videos, (str, bytes)) or not hasattr(videos, "__len__"):
        raise TypeError(f"{name} must be a list of (T, D) arrays, got {type(videos).__name__}")
    if len(videos) == 0:
        raise ValueError(f"{name} must hold at least one video")
    out = []
    for i, v in enumerate(videos):
        if v is None or isinstance(v, (str, bytes)):
            raise TypeError(f"{name}[{i}] must be a (T, D) array, got {type(v).__name__}")
        a = np.asarray(v)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{name}[{i}] must be numeric, got dtype {a.dtype}")
        if a.ndim != 2:
            raise ValueError(f"{name}[{i}] must have shape (T, D), got {a.shape}")
        if len(a) < min_length:
            raise ValueError(f"{name}[{i}] has {len(a)} frames, fewer than {min_length} "
                             "(the temporal kernel)")
        if a.shape[1] == 0:
            raise ValueError(f"{name}[{i}] has no feature dimensions")
        if dim is not None and a.shape[1] != dim:
            raise ValueError(f"{name}[{i}] has feature dim {a.shape[1]}, expected {dim}")
        dim = a.shape[1]
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"{name}[{i}] must be finite; it contains NaN or inf")
        if a.size and np.abs(a).max() > 1e15:
            raise ValueError(f"{name}[{i}] has values beyond 1e15")
        out.append(a.astype(np.float32))
    return out


class ResidualQuantizer(nn.Module):
    """Residual vector quantization with EMA codebooks and dead-code expiry.

    Parameters
    ----------
    dim : int
        Latent dimension d.
    num_levels : int
        Levels L (1 to 16).
    codebook_size : int
        Entries K per level (1 to 65,536).
    decay : float
        EMA decay of the codebooks.
    dead_threshold : float
        A code whose EMA count falls below this is replaced by a residual of the batch.
    seed : int
        Seed of the placeholder codebooks (the first training batch replaces them).

    Examples
    --------
    >>> rq = ResidualQuantizer(4, num_levels=3, codebook_size=8).eval()
    >>> q, codes = rq(torch.randn(5, 4))
    >>> q.shape, codes.shape
    (torch.Size([5, 4]), torch.Size([5, 3]))
    """

    def __init__(self, dim: int, *, num_levels: int = 8, codebook_size: int = 256,
                 decay: float = 0.99, dead_threshold: float = 1.0, seed: int = 0):
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=65_536)
        self.num_levels = check_int(num_levels, "num_levels", min=1, max=MAX_LEVELS)
        self.codebook_size = check_int(codebook_size, "codebook_size", min=1,
                                       max=MAX_CODEBOOK_SIZE)
        self.decay = check_float(decay, "decay", min=0, max=1, max_inclusive=False)
        self.dead_threshold = check_float(dead_threshold, "dead_threshold", min=0, max=1e9)
        L, K = self.num_levels, self.codebook_size
        gen = torch.Generator().manual_seed(check_seed(seed))
        self.register_buffer("codebooks", torch.randn(L, K, dim, generator=gen) * 0.1)
        self.register_buffer("cluster_size", torch.ones(L, K))
        self.register_buffer("embed_sum", self.codebooks.clone())
        self.register_buffer("initted", torch.zeros((), dtype=torch.bool))

    @torch.no_grad()
    def _init(self, z: torch.Tensor, generator) -> None:
        """Data-dependent start: each level's codebook is drawn from its residuals."""
        r = z.clone()
        for lvl in range(self.num_levels):
            idx = torch.randint(len(r), (self.codebook_size,), generator=generator)
            self.codebooks[lvl] = r[idx.to(r.device)] + 1e-3 * torch.randn(
                self.codebook_size, self.dim, generator=generator).to(r.device)
            self.embed_sum[lvl] = self.codebooks[lvl]
            r = r - self.codebooks[lvl][self._nearest(r, lvl)]
        self.cluster_size.fill_(1.0)
        self.initted.fill_(True)

    def _nearest(self, r: torch.Tensor, lvl: int) -> torch.Tensor:
        """argmin_k ||r - e_k||^2 for level ``lvl``; ``r`` (N, d) -> (N,)."""
        e = self.codebooks[lvl]  # (K, d)
        d2 = (r * r).sum(1, keepdim=True) - 2 * r @ e.T + (e * e).sum(1)[None]
        return d2.min(1).indices  # argmin (first index on ties), faster on CPU

    def quantize(self, z: torch.Tensor):
        """Codes and per-level quantized vectors of ``z`` (N, d).

        Returns
        -------
        codes : LongTensor (N, L)
        parts : Tensor (N, L, d)
            c_l, the code vector chosen at level l (no gradient).
        """
        r = z.detach()
        codes, parts = [], []
        for lvl in range(self.num_levels):
            k = self._nearest(r, lvl)
            c = self.codebooks[lvl][k]
            codes.append(k)
            parts.append(c)
            r = r - c  # the residual r_l = r_{l-1} - c_l
        return torch.stack(codes, 1), torch.stack(parts, 1)

    @torch.no_grad()
    def _ema_update(self, z: torch.Tensor, codes: torch.Tensor, parts: torch.Tensor,
                    generator) -> None:
        r = z.detach()
        K = self.codebook_size
        for lvl in range(self.num_levels):
            k = codes[:, lvl]
            counts = torch.bincount(k, minlength=K).to(r.dtype)  # (K,)
            sums = torch.zeros(K, self.dim, dtype=r.dtype, device=r.device).index_add_(0, k, r)
            self.cluster_size[lvl].mul_(self.decay).add_(counts, alpha=1 - self.decay)
            self.embed_sum[lvl].mul_(self.decay).add_(sums, alpha=1 - self.decay)
            n = self.cluster_size[lvl].sum()
            size = (self.cluster_size[lvl] + 1e-5) / (n + K * 1e-5) * n  # Laplace smoothing
            self.codebooks[lvl].copy_(self.embed_sum[lvl] / size[:, None])
            dead = self.cluster_size[lvl] < self.dead_threshold
            if dead.any():  # expire dead codes: restart them at residuals of this batch
                idx = torch.randint(len(r), (int(dead.sum()),), generator=generator).to(r.device)
                self.codebooks[lvl][dead] = r[idx]
                self.embed_sum[lvl][dead] = r[idx]
                self.cluster_size[lvl][dead] = 1.0
            r = r - parts[:, lvl]

    def step(self, z: torch.Tensor, *, generator=None):
        """Quantize ``z`` (N, d) and, in training mode, update the codebooks.

        Returns the codes and the code vectors chosen *before* the EMA update and the
        dead-code restarts (which move the codebooks in place), so a training step
        decodes exactly the codes it chose, as ``vector_quantize_pytorch``'s
        ``ResidualVQ`` does.

        Returns
        -------
        codes : LongTensor (N, L)
        parts : Tensor (N, L, d)
        """
        if self.training:
            gen = generator if generator is not None else make_generator(0)
            if not bool(self.initted):
                self._init(z.detach(), gen)
            codes, parts = self.quantize(z)
            self._ema_update(z, codes, parts, gen)
        else:
            codes, parts = self.quantize(z)
        return codes, parts

    def forward(self, z: torch.Tensor, *, generator=None):
        """Quantize ``z`` (N, d): the full-depth quantized latent (straight-through) and codes.

        In training mode the codebooks are updated by EMA (initialised from the first
        batch); the latent is built from the code vectors chosen before the update.
        """
        codes, parts = self.step(z, generator=generator)
        q = parts.sum(1)
        return z + (q - z).detach(), codes

    def lookup(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """sum_{l < length} c_l(code_l): the prefix latent of every frame.

        ``codes`` (..., L) long (entries beyond the length are ignored and may be -1),
        ``lengths`` (...) in [0, L]; returns (..., d).
        """
        L = self.num_levels
        keep = torch.arange(L, device=codes.device) < lengths[..., None]  # (..., L)
        safe = torch.where(keep, codes, torch.zeros_like(codes))
        vecs = self.codebooks[torch.arange(L, device=codes.device), safe]  # (..., L, d)
        return (vecs * keep[..., None]).sum(-2)


@dataclass(frozen=True)
class ARQVAEOutput:
    """One training forward: reconstruction, codes and the loss terms."""

    recon: torch.Tensor       # (B, T, D) at the sampled prefix depth
    codes: torch.Tensor       # (B, T, L)
    depth: torch.Tensor       # (B, T) sampled prefix lengths
    recon_loss: torch.Tensor
    commit_loss: torch.Tensor

    @property
    def loss(self) -> torch.Tensor:
        return self.recon_loss + self.commit_loss


class ARQVAE(nn.Module):
    """Residual-quantized autoencoder over frame features with prefix decoding.

    Parameters
    ----------
    dim : int
        Feature dimension D of x_t.
    latent_dim : int
        Latent dimension d of z_t = E(x)_t.
    num_levels : int
        Residual levels L (1 to 16; a stored length takes 4 bits).
    codebook_size : int
        K codes per level (1 to 65,536; a code takes 1 byte for K <= 256, else 2).
    hidden : int
        Hidden width of the encoder and of the decoder G (0: both linear).
    temporal_kernel : int
        Kernel of the encoder's first (temporal) 1-D convolution, odd; 1 = frame-wise.
    quantize_dropout : bool
        Train with a random prefix depth per frame.
    commitment : float
        Weight beta of the commitment loss ||z - sg(q)||^2.
    seed : int
        Initialisation seed.

    Examples
    --------
    >>> m = ARQVAE(8, latent_dim=4, num_levels=3, codebook_size=16, hidden=16).eval()
    >>> x = torch.randn(2, 10, 8)
    >>> codes = m.encode(x)
    >>> codes.shape, m.decode(codes, torch.full((2, 10), 3)).shape
    (torch.Size([2, 10, 3]), torch.Size([2, 10, 8]))
    """

    def __init__(self, dim: int, *, latent_dim: int = 64, num_levels: int = 8,
                 codebook_size: int = 256, hidden: int = 256, temporal_kernel: int = 3,
                 quantize_dropout: bool = True, commitment: float = 0.25, seed: int = 0):
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=65_536)
        self.latent_dim = check_int(latent_dim, "latent_dim", min=1, max=65_536)
        self.hidden = check_int(hidden, "hidden", min=0, max=65_536)
        self.temporal_kernel = check_int(temporal_kernel, "temporal_kernel", min=1, max=63)
        if self.temporal_kernel % 2 == 0:
            raise ValueError(f"temporal_kernel must be odd, got {temporal_kernel}")
        self.quantize_dropout = check_bool(quantize_dropout, "quantize_dropout")
        self.commitment = check_float(commitment, "commitment", min=0, max=1e3)
        gen = torch.Generator().manual_seed(check_int(seed, "seed", min=0, max=2**63 - 1))
        self.quantizer = ResidualQuantizer(self.latent_dim, num_levels=num_levels,
                                           codebook_size=codebook_size, seed=seed)
        h, k = self.hidden, self.temporal_kernel
        if h:
            self.encoder = nn.Sequential(nn.Conv1d(self.dim, h, k, padding=k // 2), nn.GELU(),
                                         nn.Conv1d(h, self.latent_dim, 1))
            self.decoder = nn.Sequential(nn.Linear(self.latent_dim, h), nn.GELU(),
                                         nn.Linear(h, self.dim))
        else:
            self.encoder = nn.Conv1d(self.dim, self.latent_dim, k, padding=k // 2)
            self.decoder = nn.Linear(self.latent_dim, self.dim)
        for p in self.parameters():  # initialisation as a function of the seed
            if p.ndim > 1:
                nn.init.kaiming_uniform_(p, a=5 ** 0.5, generator=gen)
            else:
                nn.init.uniform_(p, -0.01, 0.01, generator=gen)
        self._gen = gen

    @property
    def num_levels(self) -> int:
        return self.quantizer.num_levels

    @property
    def codebook_size(self) -> int:
        return self.quantizer.codebook_size

    def _check_x(self, x) -> torch.Tensor:
        if not torch.is_tensor(x):
            raise TypeError(f"x must be a torch.Tensor (B, T, D), got {type(x).__name__}")
        if x.ndim != 3 or x.shape[2] != self.dim:
            raise ValueError(f"x must have shape (B, T, {self.dim}), got {tuple(x.shape)}")
        if x.shape[0] == 0 or x.shape[1] < self.temporal_kernel:
            raise ValueError(f"x needs B >= 1 and T >= temporal_kernel = "
                             f"{self.temporal_kernel}, got {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("x must be finite; it contains NaN or inf")
        return x.to(self.decoder_dtype)

    @property
    def decoder_dtype(self) -> torch.dtype:
        return next(self.decoder.parameters()).dtype

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """z = E(x): (B, T, D) -> (B, T, d)."""
        x = self._check_x(x)
        return self.encoder(x.transpose(1, 2)).transpose(1, 2)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Codes of every level: (B, T, D) -> (B, T, L) long."""
        z = self.embed(x)
        B, T, d = z.shape
        with torch.no_grad():
            codes, _ = self.quantizer.quantize(z.reshape(B * T, d))
        return codes.reshape(B, T, -1)

    def _check_codes(self, codes, lengths):
        if not torch.is_tensor(codes) or codes.dtype not in (torch.int64, torch.int32):
            raise TypeError("codes must be an integer torch.Tensor (..., L)")
        if not torch.is_tensor(lengths) or lengths.dtype.is_floating_point:
            raise TypeError("lengths must be an integer torch.Tensor (...)")
        if codes.numel() == 0:
            raise ValueError(f"codes must not be empty, got shape {tuple(codes.shape)}")
        if codes.ndim < 1 or codes.shape[-1] != self.num_levels:
            raise ValueError(f"codes must have a last axis of L = {self.num_levels}, got "
                             f"{tuple(codes.shape)}")
        if tuple(lengths.shape) != tuple(codes.shape[:-1]):
            raise ValueError(f"lengths must have shape {tuple(codes.shape[:-1])}, got "
                             f"{tuple(lengths.shape)}")
        if lengths.numel() and (lengths.min() < 1 or lengths.max() > self.num_levels):
            raise ValueError(f"lengths must lie in [1, {self.num_levels}]")
        keep = torch.arange(self.num_levels, device=codes.device) < lengths[..., None]
        if codes.numel() and ((codes[keep] < 0).any() or
                              (codes[keep] >= self.codebook_size).any()):
            raise ValueError(f"codes must lie in [0, {self.codebook_size}) within each length")
        return codes.long(), lengths.long()

    def decode(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """x_hat = G(sum_{l <= length} c_l): codes (..., L), lengths (...) -> (..., D)."""
        codes, lengths = self._check_codes(codes, lengths)
        return self.decoder(self.quantizer.lookup(codes, lengths))

    def prefix_errors(self, x: torch.Tensor) -> torch.Tensor:
        """e_l(t) = ||x_t - x_hat_t^(l)||^2 / ||x_t||^2 for l = 1..L: (B, T, D) -> (B, T, L)."""
        x = self._check_x(x)
        with torch.no_grad():
            codes = self.encode(x)
            _B, _T, L = codes.shape
            parts = self.quantizer.codebooks[torch.arange(L, device=x.device), codes]
            xhat = self.decoder(parts.cumsum(2))  # (B, T, L, D): every prefix at once
            num = ((xhat - x[:, :, None]) ** 2).sum(-1)
            den = (x ** 2).sum(-1, keepdim=True).clamp_min(1e-12)
        return num / den

    def forward(self, x: torch.Tensor) -> ARQVAEOutput:
        """Training forward with quantize dropout (a random prefix depth per frame)."""
        z = self.embed(x)
        B, T, d = z.shape
        flat = z.reshape(B * T, d)
        # The code vectors chosen for this batch, taken before the EMA update and the
        # dead-code restarts move the codebooks: the step decodes the codes it chose.
        codes, parts = self.quantizer.step(flat, generator=self._gen)  # (BT, L), (BT, L, d)
        L = self.num_levels
        dev = flat.device
        if self.quantize_dropout and self.training:
            depth = torch.randint(1, L + 1, (B * T,), generator=self._gen).to(dev)
        else:
            depth = torch.full((B * T,), L, device=dev)
        keep = (torch.arange(L, device=dev) < depth[:, None]).to(parts.dtype)
        q = (parts * keep[..., None]).sum(1)  # prefix latent sum_{l<=depth} c_l
        q_st = flat + (q - flat).detach()  # straight-through estimator
        recon = self.decoder(q_st).reshape(B, T, -1)
        # Commitment: the encoder output stays near the quantized latent of its depth.
        commit = self.commitment * ((flat - q.detach()) ** 2).sum(1).mean() / d
        rec = ((recon - x) ** 2).mean()
        return ARQVAEOutput(recon, codes.reshape(B, T, L), depth.reshape(B, T), rec, commit)


def _fused_adamw(model: nn.Module, lr: float) -> torch.optim.AdamW:
    """The shared loop's optimizer (AdamW, no weight decay) on torch's fused kernel: the
    same update up to float rounding, one pass per parameter instead of one per
    operation (several times faster per step on the CPU for these small networks)."""
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr,
                             weight_decay=0.0, fused=True)


def _window_batches(videos, *, window: int, batch_size: int, generator):
    """Random windows (batch_size, window, D) drawn from the videos, forever."""
    lens = np.array([len(v) for v in videos])
    tensors = [torch.as_tensor(v) for v in videos]
    w = int(min(window, lens.min()))
    while True:
        vid = torch.randint(len(videos), (batch_size,), generator=generator).tolist()
        out = []
        for i in vid:
            s = int(torch.randint(0, int(lens[i]) - w + 1, (1,), generator=generator))
            out.append(tensors[i][s:s + w])
        yield (torch.stack(out),)


def train_arqvae(model: ARQVAE, videos, *, max_iter: int = 2000, lr: float = 1e-3,
                 window: int = 64, batch_size: int = 16, seed: int = 0,
                 device: str = "cpu"):
    """Train ``model`` in place on unlabelled videos (labels are never read).

    Parameters
    ----------
    model : ARQVAE
    videos : list of ndarray (T_i, D)
        Frame features; each video at least ``model.temporal_kernel`` frames.
    max_iter : int
        Adam steps on random windows.
    lr : float
    window, batch_size : int
        Windows of ``window`` frames (clipped to the shortest video), ``batch_size`` a step.
    seed : int
    device : {"cpu", "cuda"}
        Where to train; the model is moved back to the CPU afterwards.

    Returns
    -------
    neurips26.common.train.TrainResult

    Examples
    --------
    >>> m = ARQVAE(8, latent_dim=4, num_levels=2, codebook_size=8, hidden=16)
    >>> r = train_arqvae(m, [np.random.default_rng(0).normal(size=(20, 8))], max_iter=3)
    >>> r.num_steps
    3
    """
    from neurips26.common.train import train

    if not isinstance(model, ARQVAE):
        raise TypeError(f"model must be an ARQVAE, got {type(model).__name__}")
    videos = _check_videos(videos, dim=model.dim, min_length=model.temporal_kernel)
    max_iter = check_int(max_iter, "max_iter", min=1, max=10_000_000)
    lr = check_float(lr, "lr", min=0, min_inclusive=False, max=10.0)
    window = check_int(window, "window", min=1, max=100_000)
    batch_size = check_int(batch_size, "batch_size", min=1, max=100_000)
    gen = make_generator(check_seed(seed))
    model._gen.manual_seed(seed)
    batches = _window_batches(videos, window=max(window, model.temporal_kernel),
                              batch_size=batch_size, generator=gen)
    result = train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=device,
                   optimizer=_fused_adamw(model, lr), loss_fn=lambda m, b: m(b[0]).loss,
                   desc="arq_vae")
    model.cpu()
    return result
