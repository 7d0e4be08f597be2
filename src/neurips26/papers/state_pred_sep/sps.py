"""The state-prediction separated Transformer (and the pause-token control).

A standard decoder uses the hidden state at position ``i`` for two jobs at once: it
predicts token ``i + 1`` and it is the memory that every later position reads through
attention. The paper's *state-prediction separation hypothesis* is that giving the two
jobs to separate computation streams improves language modelling. For an input
``x_1..x_T`` the separated model processes ``2T`` steps

    [x_1, rho_1, x_2, rho_2, ..., x_T, rho_T]

where the *state step* ``x_i`` embeds token ``x_i`` and is attended by the future but
carries no loss, and the *prediction step* ``rho_i`` (a learned prediction embedding
``e_rho``) reads the state steps ``x_{<=i}`` and itself, produces the distribution of
``x_{i+1}``, and is read by no other step (the mask of :func:`separation_mask`).

The *pause* control (``mode="pause"``, after the pause-token literature) has the same
``2T`` interleaving, embeddings, parameters and FLOPs but a plain causal mask over the
``2T`` steps, so later steps may read the prediction steps: only the mask differs. The
standard baseline is the common small GPT (:class:`neurips26.common.models.gpt.GPT`).

Deviations from the paper
-------------------------
- The prediction embedding ``e_rho`` (one learned vector) and the sharing of position
  embedding ``i`` between ``x_i`` and ``rho_i`` are inferred from the paper's figure.
- The two streams share all weights by default; ``separate_weights=True`` gives the
  prediction steps their own MLPs (an ablation we inferred, not the paper's setting).
- Pre-LN nanoGPT blocks (learned positions, GELU MLP of width ``4 dim``, tied head) at
  sub-million-parameter scale, trained on bytes, stand in for the paper's 125M-1.6B
  models trained on web text.

References
----------
Monea, Godey, Brantley, Artzi. State-prediction separation in Transformers. arXiv
2607.01218 (NeurIPS 2026). Goyal et al., Think before you speak: training language
models with pause tokens, ICLR 2024.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import check_int, check_mode, check_positive_float, check_targets, check_tokens

#: The two interleaved models; the standard model is the common GPT.
SPS_MODES = ("separated", "pause")


@dataclass(frozen=True)
class SPSConfig:
    """Shape of a :class:`SPSTransformer`.

    Parameters
    ----------
    vocab_size : int
        Number of token ids ``V`` (256 for bytes).
    block_size : int
        Longest input ``T`` (in tokens; the model runs ``2T`` steps).
    n_layer, n_head, dim : int
        Depth, attention heads and width ``d`` (``dim % n_head == 0``).
    dropout : float
        Dropout on attention weights and residual branches (0 in the paper's setting).
    mode : str
        ``"separated"`` (the paper's mask) or ``"pause"`` (causal over the ``2T`` steps).
    separate_weights : bool
        Give the prediction steps their own MLPs (an ablation; default shared).
    bias : bool
        Biases in the linear layers and layer norms (nanoGPT's default).
    """

    vocab_size: int = 256
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    dim: int = 128
    dropout: float = 0.0
    mode: str = "separated"
    separate_weights: bool = False
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "dim"):
            check_int(name, getattr(self, name), minimum=1)
        if self.dim % self.n_head:
            raise ValueError(f"dim={self.dim} must be divisible by n_head={self.n_head}")
        if not (isinstance(self.dropout, (int, float)) and 0.0 <= self.dropout < 1.0):
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        check_mode(self.mode, SPS_MODES + ("standard",))
        if self.mode == "standard":
            raise ValueError(
                "mode 'standard' is the common GPT (neurips26.common.models.gpt); "
                f"SPSTransformer takes mode in {SPS_MODES}"
            )


def separation_mask(
    seq_len: int, *, mode: str = "separated", device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Boolean attention mask (True = may attend) over the interleaved steps.

    Step ``2i`` is the state step ``x_i`` and step ``2i + 1`` the prediction step
    ``rho_i`` (0-based token index ``i``).

    Parameters
    ----------
    seq_len : int
        Number of tokens ``T``.
    mode : str
        ``"separated"``: ``x_i`` sees ``x_{j<=i}``; ``rho_i`` sees ``x_{j<=i}`` and
        itself; no step sees another's ``rho``. ``"pause"``: causal over the ``2T``
        steps. ``"standard"``: causal over ``T`` steps.

    Returns
    -------
    torch.Tensor
        ``(2T, 2T)`` bool (``(T, T)`` for ``"standard"``); rows are queries.

    Examples
    --------
    >>> separation_mask(2).int()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 0, 1, 0],
            [1, 0, 1, 1]], dtype=torch.int32)
    """
    check_int("seq_len", seq_len, minimum=1)
    check_mode(mode)
    if mode == "standard":
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    n = 2 * seq_len
    causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    if mode == "pause":
        return causal
    step = torch.arange(n, device=device)
    is_rho = (step % 2) == 1
    # keys that are state steps x_j with j <= i(q), i.e. key step <= query step
    mask = causal & ~is_rho[None, :]
    # each prediction step also sees itself (and no other prediction step)
    return mask | torch.diag(is_rho)


@dataclass(frozen=True)
class LMOutput:
    """Output of a language-model forward pass.

    Attributes
    ----------
    logits : torch.Tensor
        ``(B, T, V)`` next-token logits (taken at the prediction steps ``rho_i``).
    loss : torch.Tensor or None
        Mean cross-entropy in nats against ``targets`` (None without targets).
    """

    logits: torch.Tensor
    loss: torch.Tensor | None


class KVCache:
    """Per-layer keys and values of the cached steps, ``(B, H, S, d / H)`` each.

    The separated model caches only state steps (``S = `` tokens seen); the pause model
    caches state and prediction steps (``S = 2 ×`` tokens seen).
    """

    def __init__(self, n_layer: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * n_layer
        self.values: list[torch.Tensor | None] = [None] * n_layer
        self.num_tokens = 0

    def past(self, layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        k = self.keys[layer]
        return None if k is None else (k, self.values[layer])  # type: ignore[return-value]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)


class _Attention(nn.Module):
    def __init__(self, cfg: SPSConfig) -> None:
        super().__init__()
        self.n_head, self.dim = cfg.n_head, cfg.dim
        self.c_attn = nn.Linear(cfg.dim, 3 * cfg.dim, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.dim, cfg.dim, bias=cfg.bias)
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(
        self,
        h: torch.Tensor,
        mask: torch.Tensor | None,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, s, d = h.shape  # (B, S, D)
        q, k, v = self.c_attn(h).split(self.dim, dim=2)
        q, k, v = (t.view(b, s, self.n_head, d // self.n_head).transpose(1, 2) for t in (q, k, v))
        new_k, new_v = k, v  # (B, H, S, hd): what a cache appends
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        # softmax(q k^T / sqrt(hd) + bias(mask)) v
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0
        )
        y = y.transpose(1, 2).contiguous().view(b, s, d)
        return self.resid_dropout(self.c_proj(y)), new_k, new_v


class _MLP(nn.Module):
    def __init__(self, cfg: SPSConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.dim, 4 * cfg.dim, bias=cfg.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.dim, cfg.dim, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(h))))


class _Block(nn.Module):
    """Pre-LN block; ``stream`` says which steps ``h`` holds (``"both"`` = interleaved)."""

    def __init__(self, cfg: SPSConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.dim, bias=cfg.bias)
        self.attn = _Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.dim, bias=cfg.bias)
        self.mlp = _MLP(cfg)
        self.mlp_rho = _MLP(cfg) if cfg.separate_weights else None

    def _mlp(self, h: torch.Tensor, stream: str) -> torch.Tensor:
        if self.mlp_rho is None or stream == "x":
            return self.mlp(h)
        if stream == "rho":
            return self.mlp_rho(h)
        b, s, d = h.shape
        pair = h.view(b, s // 2, 2, d)  # (B, T, 2, D): [x_i, rho_i]
        return torch.stack([self.mlp(pair[:, :, 0]), self.mlp_rho(pair[:, :, 1])], 2).view(b, s, d)

    def forward(self, h, mask, stream="both", past=None):
        a, k, v = self.attn(self.ln_1(h), mask, past)
        h = h + a
        h = h + self._mlp(self.ln_2(h), stream)
        return h, k, v


class SPSTransformer(nn.Module):
    """State-prediction separated Transformer (``mode="separated"``) or pause control.

    Parameters
    ----------
    config : SPSConfig
        Sizes, mode and the weight-sharing choice.

    Attributes
    ----------
    rho_emb : nn.Parameter
        ``(D,)`` the prediction embedding ``e_rho``.

    Examples
    --------
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = SPSTransformer(SPSConfig(block_size=16, n_layer=2, n_head=2, dim=32))
    >>> idx = torch.randint(0, 256, (3, 16))
    >>> out = model(idx, targets=idx)
    >>> tuple(out.logits.shape), bool(abs(out.loss.item() - math.log(256)) < 0.5)
    ((3, 16, 256), True)
    """

    def __init__(self, config: SPSConfig) -> None:
        super().__init__()
        if not isinstance(config, SPSConfig):
            raise TypeError(f"config must be an SPSConfig, got {type(config).__name__}")
        self.config = config
        self.transformer = nn.ModuleDict(
            {
                "wte": nn.Embedding(config.vocab_size, config.dim),
                "wpe": nn.Embedding(config.block_size, config.dim),
                "drop": nn.Dropout(config.dropout),
                "h": nn.ModuleList(_Block(config) for _ in range(config.n_layer)),
                "ln_f": nn.LayerNorm(config.dim, bias=config.bias),
            }
        )
        self.rho_emb = nn.Parameter(torch.zeros(config.dim))
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied head
        self.apply(self._init_weights)
        nn.init.normal_(self.rho_emb, mean=0.0, std=0.02)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        mask = separation_mask(config.block_size, mode=config.mode)
        # the mask of a shorter input is the leading sub-matrix: built once, sliced per call
        self.register_buffer("mask", mask, persistent=False)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    @property
    def blocks(self) -> nn.ModuleList:
        """The ``n_layer`` blocks (shared by both streams)."""
        return self.transformer.h

    def num_params(self) -> int:
        """Number of distinct parameters (the tied head counted once)."""
        return sum(p.numel() for p in self.parameters())

    # ------------------------------------------------------------------ full pass

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """Interleaved input embeddings ``(B, 2T, D)``: ``[wte(x_i) + p_i, e_rho + p_i]``."""
        b, t = idx.shape
        pos = self.transformer.wpe(torch.arange(t, device=idx.device))  # (T, D)
        tok = self.transformer.wte(idx) + pos  # (B, T, D)
        rho = (self.rho_emb + pos).expand(b, t, -1)  # (B, T, D)
        h = torch.stack([tok, rho], dim=2).reshape(b, 2 * t, -1)  # (B, 2T, D)
        return self.transformer.drop(h)

    def hidden_states(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """Residual stream before each block and after the last, ``n_layer + 1`` of ``(B, 2T, D)``.

        Steps ``0::2`` are the state stream ``x``, steps ``1::2`` the prediction stream.
        """
        cfg = self.config
        idx = check_tokens("idx", idx, vocab_size=cfg.vocab_size, block_size=cfg.block_size)
        t = idx.shape[1]
        mask = self.mask[: 2 * t, : 2 * t]
        h = self.embed(idx)
        states = [h]
        for block in self.blocks:
            h, _, _ = block(h, mask)
            states.append(h)
        return states

    def head(self, h_rho: torch.Tensor) -> torch.Tensor:
        """Logits ``(..., V)`` from prediction-step states ``(..., D)``."""
        return self.lm_head(self.transformer.ln_f(h_rho))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """Next-token logits at the prediction steps and, with targets, the loss.

        Parameters
        ----------
        idx : torch.Tensor
            ``(B, T)`` integer token ids, ``T <= block_size``.
        targets : torch.Tensor, optional
            ``(B, T)`` the next tokens ``x_{i+1}`` (``-1`` ignored).

        Returns
        -------
        LMOutput
            ``logits`` ``(B, T, V)`` and ``loss`` (mean cross-entropy in nats, or None).
        """
        h = self.hidden_states(idx)[-1]  # (B, 2T, D)
        logits = self.head(h[:, 1::2])  # (B, T, V): only rho steps are read out
        loss = None
        if targets is not None:
            targets = check_targets(targets, idx, vocab_size=self.config.vocab_size)
            # loss at the prediction steps only; state steps carry none
            loss = F.cross_entropy(
                logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1
            )
        return LMOutput(logits=logits, loss=loss)

    # ------------------------------------------------------------- cached decoding

    def _steps(self, h: torch.Tensor, mask, stream: str, cache: KVCache, append: bool):
        for layer, block in enumerate(self.blocks):
            h, k, v = block(h, mask, stream, cache.past(layer))
            if append:
                cache.append(layer, k, v)
        return h

    def _rho_step(self, cache: KVCache, batch: int) -> torch.Tensor:
        """Prediction step of the last cached token: reads the cache and itself."""
        pos = self.transformer.wpe.weight[cache.num_tokens - 1]
        h = (self.rho_emb + pos).expand(batch, 1, -1)
        append = self.config.mode == "pause"  # the separated model never caches rho
        h = self._steps(h, None, "rho", cache, append)
        return self.head(h[:, 0])  # (B, V)

    @torch.no_grad()
    def prefill(self, idx: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
        """Run a prompt ``(B, T)``; return the last logits ``(B, V)`` and the filled cache."""
        cfg = self.config
        idx = check_tokens("idx", idx, vocab_size=cfg.vocab_size, block_size=cfg.block_size)
        b, t = idx.shape
        cache = KVCache(cfg.n_layer)
        if cfg.mode == "separated":
            # the state stream never reads rho: it is a causal decoder over x alone
            pos = self.transformer.wpe(torch.arange(t, device=idx.device))
            h = self.transformer.wte(idx) + pos
            mask = separation_mask(t, mode="standard", device=idx.device)
            self._steps(h, mask, "x", cache, append=True)
            cache.num_tokens = t
            return self._rho_step(cache, b), cache
        # pause: every step is cached, the last rho included
        h = self._steps(self.embed(idx), self.mask[: 2 * t, : 2 * t], "both", cache, True)
        cache.num_tokens = t
        return self.head(h[:, -1]), cache

    @torch.no_grad()
    def step(self, token: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Feed one token per sequence ``(B,)``: one state step, one prediction step.

        The state step's keys and values are appended to ``cache``; the separated
        model's prediction step is discarded after producing the logits ``(B, V)``.
        """
        cfg = self.config
        if cache.num_tokens >= cfg.block_size:
            raise ValueError(f"cache already holds block_size={cfg.block_size} tokens")
        token = check_tokens(
            "token", token.reshape(-1, 1), vocab_size=cfg.vocab_size, block_size=1
        )
        pos = self.transformer.wpe.weight[cache.num_tokens]
        h = self.transformer.wte(token) + pos  # (B, 1, D)
        self._steps(h, None, "x", cache, append=True)
        cache.num_tokens += 1
        return self._rho_step(cache, token.shape[0])

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int = 0,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Sample a continuation; ``top_k=1`` is greedy decoding.

        Parameters
        ----------
        idx : torch.Tensor
            ``(B, T)`` prompt.
        max_new_tokens : int
            Tokens to add; ``T + max_new_tokens <= block_size``.
        temperature : float
            Softmax temperature (> 0).
        top_k : int, optional
            Sample among the ``k`` most likely tokens only.
        seed : int
            Seed of the sampling generator.
        use_cache : bool
            Decode with the KV cache (about two block steps per token) or recompute the
            full forward pass per token; both give the same tokens.

        Returns
        -------
        torch.Tensor
            ``(B, T + max_new_tokens)``.
        """
        cfg = self.config
        idx = check_tokens("idx", idx, vocab_size=cfg.vocab_size, block_size=cfg.block_size)
        check_int("max_new_tokens", max_new_tokens, minimum=0)
        temperature = check_positive_float("temperature", temperature)
        if top_k is not None:
            check_int("top_k", top_k, minimum=1)
        if idx.shape[1] + max_new_tokens > cfg.block_size:
            raise ValueError(
                f"prompt length {idx.shape[1]} + max_new_tokens={max_new_tokens} exceeds "
                f"block_size={cfg.block_size}"
            )
        gen = torch.Generator(device=idx.device).manual_seed(seed)
        was_training = self.training
        self.eval()
        out = idx
        logits = cache = None
        for n in range(max_new_tokens):
            if not use_cache:
                logits = self(out).logits[:, -1]
            elif cache is None:
                logits, cache = self.prefill(out)
            nxt = _sample(logits, temperature, top_k, gen)  # (B, 1)
            out = torch.cat([out, nxt], dim=1)
            if use_cache and n + 1 < max_new_tokens:
                logits = self.step(nxt[:, 0], cache)
        self.train(was_training)
        return out


def _sample(logits: torch.Tensor, temperature: float, top_k: int | None, gen) -> torch.Tensor:
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=gen)
