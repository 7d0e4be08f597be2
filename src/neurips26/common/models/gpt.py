"""A small GPT in the style of nanoGPT: one file, shape comments, a KV cache.

Pre-norm decoder blocks ``x + attn(norm(x))``, ``x + mlp(norm(x))`` (Radford et al. 2019),
with options that the papers need: LayerNorm or RMSNorm, learned positions or rotary
embeddings (RoPE, Su et al. 2021), a GELU or SwiGLU MLP (Shazeer 2020), weight tying, and
an optional additive attention mask for architectures that change who attends to whom.

``model(idx)`` returns logits ``(B, T, V)``; ``model(idx, targets)`` also the mean
cross-entropy; ``model.generate`` decodes with a KV cache whose logits equal the full
forward pass (a test checks it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.validation import check_int


@dataclass(frozen=True)
class GPTConfig:
    """Hyperparameters of :class:`GPT`.

    Parameters
    ----------
    vocab_size : int
        Number of token ids ``V``.
    block_size : int
        Longest context ``T_max`` (positions).
    num_layers, num_heads, dim : int
        Depth ``L``, heads ``H`` and width ``C`` (``C`` divisible by ``H``).
    mlp_ratio : float
        Hidden width of the MLP relative to ``C`` (SwiGLU uses 2/3 of it per branch).
    norm : {"layernorm", "rmsnorm"}
    positions : {"learned", "rope"}
    mlp : {"gelu", "swiglu"}
    dropout : float
    bias : bool
        Biases in the linear layers and LayerNorm.
    tie_weights : bool
        Share the token embedding with the output head.
    """

    vocab_size: int = 256
    block_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    dim: int = 64
    mlp_ratio: float = 4.0
    norm: str = "layernorm"
    positions: str = "learned"
    mlp: str = "gelu"
    dropout: float = 0.0
    bias: bool = False
    tie_weights: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "num_layers", "num_heads", "dim"):
            v = getattr(self, name)
            check_int(v, name, min=1)
        if self.dim % self.num_heads:
            raise ValueError(f"dim: {self.dim} is not divisible by num_heads={self.num_heads}")
        if self.positions == "rope" and (self.dim // self.num_heads) % 2:
            raise ValueError("dim: rotary embeddings need an even head width dim // num_heads")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm: {self.norm!r} is not 'layernorm' or 'rmsnorm'")
        if self.positions not in ("learned", "rope"):
            raise ValueError(f"positions: {self.positions!r} is not 'learned' or 'rope'")
        if self.mlp not in ("gelu", "swiglu"):
            raise ValueError(f"mlp: {self.mlp!r} is not 'gelu' or 'swiglu'")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a value in [0, 1), got {self.dropout!r}")
        if not self.mlp_ratio > 0:
            raise ValueError(f"mlp_ratio: expected a positive number, got {self.mlp_ratio!r}")


class RMSNorm(nn.Module):
    """Root-mean-square norm: ``x / sqrt(mean(x^2) + eps) * g`` (Zhang & Sennrich 2019)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _norm(cfg: GPTConfig) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return RMSNorm(cfg.dim)
    return nn.LayerNorm(cfg.dim, bias=cfg.bias)


def rope_tables(head_dim: int, length: int, base: float = 10000.0, device=None):
    """cos and sin tables ``(length, head_dim / 2)`` of rotary embeddings."""
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(length, device=device).float()
    freqs = torch.outer(t, inv)  # (T, hd/2)
    return freqs.cos(), freqs.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs of channels of ``x`` (B, H, T, hd) by position-dependent angles."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with an optional KV cache and extra mask."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.dim // cfg.num_heads
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=cfg.bias)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=cfg.bias)
        self.dropout = cfg.dropout

    def forward(self, x, *, rope=None, past=None, attn_mask=None):
        """``x`` (B, T, C) -> (B, T, C), and the updated ``(k, v)`` cache.

        ``past`` holds the keys and values of earlier positions ``(B, H, P, hd)``;
        ``attn_mask`` (T, P + T) is added to the scores (``-inf`` blocks) in place of the
        causal mask when given.
        """
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        P = 0 if past is None else past[0].shape[2]
        if rope is not None:
            cos, sin = rope
            q = apply_rope(q, cos[P : P + T], sin[P : P + T])
            k = apply_rope(k, cos[P : P + T], sin[P : P + T])
        if past is not None:
            k = torch.cat((past[0], k), dim=2)  # (B, H, P + T, hd)
            v = torch.cat((past[1], v), dim=2)
        drop = self.dropout if self.training else 0.0
        if attn_mask is None:
            # Causal over the full (P + T) keys: query i (absolute P + i) sees keys <= P + i.
            mask = torch.ones(T, P + T, dtype=torch.bool, device=x.device).tril(diagonal=P)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=drop)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.proj(y), (k, v)


class MLP(nn.Module):
    """The block's feed-forward part: GELU (``W2 gelu(W1 x)``) or SwiGLU."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        hidden = int(cfg.mlp_ratio * cfg.dim)
        self.kind = cfg.mlp
        if cfg.mlp == "swiglu":
            hidden = max(1, int(2 * hidden / 3))
            self.gate = nn.Linear(cfg.dim, hidden, bias=cfg.bias)
        self.up = nn.Linear(cfg.dim, hidden, bias=cfg.bias)
        self.down = nn.Linear(hidden, cfg.dim, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "swiglu":
            h = F.silu(self.gate(x)) * self.up(x)  # SwiGLU: silu(x W_g) * (x W_u)
        else:
            h = F.gelu(self.up(x))
        return self.drop(self.down(h))


class Block(nn.Module):
    """Pre-norm transformer block."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.norm1 = _norm(cfg)
        self.attn = CausalSelfAttention(cfg)
        self.norm2 = _norm(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x, *, rope=None, past=None, attn_mask=None):
        a, cache = self.attn(self.norm1(x), rope=rope, past=past, attn_mask=attn_mask)
        x = x + a
        x = x + self.mlp(self.norm2(x))
        return x, cache


class GPT(nn.Module):
    """A decoder-only transformer language model.

    Parameters
    ----------
    cfg : GPTConfig

    Examples
    --------
    >>> import torch
    >>> from neurips26.common.torch import seeded
    >>> with seeded(0):
    ...     model = GPT(GPTConfig(vocab_size=16, block_size=8, num_layers=1, dim=16))
    >>> idx = torch.zeros(2, 8, dtype=torch.long)
    >>> logits, loss = model(idx, torch.ones(2, 8, dtype=torch.long))
    >>> tuple(logits.shape), loss.ndim
    ((2, 8, 16), 0)
    """

    #: ``model(x, y)`` returns ``(logits, loss)`` (read by ``common.train.default_loss``).
    returns_loss = True

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(f"cfg: expected a GPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.dim) if cfg.positions == "learned" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.norm_f = _norm(cfg)
        self.head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight
        if cfg.positions == "rope":
            cos, sin = rope_tables(cfg.dim // cfg.num_heads, cfg.block_size)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("proj.weight") or name.endswith("down.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.num_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def _check_idx(self, idx: torch.Tensor, offset: int) -> None:
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx: expected a torch.LongTensor, got {type(idx).__name__}")
        if idx.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"idx: expected integer token ids, got dtype {idx.dtype}")
        if idx.ndim != 2 or idx.shape[1] == 0:
            raise ValueError(f"idx: expected shape (B, T) with T >= 1, got {tuple(idx.shape)}")
        if offset + idx.shape[1] > self.cfg.block_size:
            raise ValueError(
                f"idx: {offset + idx.shape[1]} positions exceed block_size={self.cfg.block_size}"
            )
        if idx.min() < 0 or idx.max() >= self.cfg.vocab_size:
            raise ValueError(f"idx: token ids must lie in [0, vocab_size={self.cfg.vocab_size})")

    def embed(self, idx: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Token (and learned position) embeddings ``(B, T, C)`` of positions from ``offset``."""
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            pos = torch.arange(offset, offset + idx.shape[1], device=idx.device)
            x = x + self.pos_emb(pos)
        return self.drop(x)

    def forward(self, idx, targets=None, *, past=None, attn_mask=None, return_cache=False):
        """Logits ``(B, T, V)`` and, with ``targets`` (B, T), the mean cross-entropy.

        Parameters
        ----------
        idx : LongTensor, shape (B, T)
        targets : LongTensor, shape (B, T), optional
            Ids to predict; ``-1`` entries are ignored.
        past : list of (k, v), optional
            The KV cache of earlier positions (from ``return_cache=True``).
        attn_mask : BoolTensor or FloatTensor, shape (T, P + T), optional
            Replaces the causal mask (``True``/0 = may attend).
        return_cache : bool
            Also return the updated cache: ``(logits, loss, cache)``.
        """
        offset = 0 if past is None else past[0][0].shape[2]
        self._check_idx(idx, offset)
        rope = (self.rope_cos, self.rope_sin) if self.cfg.positions == "rope" else None
        x = self.embed(idx, offset)  # (B, T, C)
        cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, rope=rope, past=None if past is None else past[i],
                          attn_mask=attn_mask)  # fmt: skip
            cache.append(kv)
        logits = self.head(self.norm_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            if targets.shape != idx.shape:
                raise ValueError(f"targets: shape {tuple(targets.shape)} != idx {tuple(idx.shape)}")
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)
        if return_cache:
            return logits, loss, cache
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int, *, temperature: float = 1.0,
                 top_k: int | None = None, generator=None, use_cache: bool = True):
        """Extend ``idx`` (B, T) by ``max_new_tokens`` sampled tokens (greedy at temperature 0)."""
        check_int(max_new_tokens, "max_new_tokens", min=0)
        if temperature < 0 or temperature != temperature:
            raise ValueError(f"temperature: must be >= 0, got {temperature}")
        if use_cache and idx.shape[1] + max_new_tokens > self.cfg.block_size:
            raise ValueError("max_new_tokens: prompt + new tokens exceed block_size with a cache")
        past = None
        step_in = idx
        for _ in range(max_new_tokens):
            if use_cache:
                logits, _, past = self(step_in, past=past, return_cache=True)
            else:
                logits, _ = self(idx[:, -self.cfg.block_size :])
            logits = logits[:, -1, :]  # (B, V)
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                probs = F.softmax(logits, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat((idx, nxt), dim=1)
            step_in = nxt
        return idx

    def flops_per_token(self, seq_len: int | None = None) -> float:
        """Training FLOPs per token, ``6 N + 12 L C T`` (Kaplan et al. 2020, PaLM appendix B).

        ``N`` counts the non-embedding parameters; ``T`` defaults to ``block_size``.
        """
        t = self.cfg.block_size if seq_len is None else seq_len
        n = sum(p.numel() for n_, p in self.named_parameters() if "emb" not in n_)
        return 6.0 * n + 12.0 * self.cfg.num_layers * self.cfg.dim * t
