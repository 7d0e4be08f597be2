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
standard baseline is the common small GPT (:class:`neurips26.common.models.GPT`), and
:class:`SPSTransformer` is built from that GPT's own modules (embeddings, blocks, final
norm, tied head) plus ``e_rho``: the two models differ only in the steps they run.

Deviations from the paper
-------------------------
- The prediction embedding ``e_rho`` (one learned vector) and the sharing of position
  embedding ``i`` between ``x_i`` and ``rho_i`` are inferred from the paper's figure.
  Whether ``rho_i`` also embeds the token ``x_i`` is not said: ``rho_input="learned"``
  (default) gives it ``e_rho + p_i`` only, ``rho_input="token"`` gives it
  ``wte(x_i) + e_rho + p_i`` (the other reading).
- The two streams share all weights by default; ``separate_weights=True`` gives the
  prediction steps their own MLPs (an ablation we inferred, not the paper's setting).
- Pre-LN nanoGPT blocks (learned positions, GELU MLP of width ``4 dim``, tied head) at
  sub-million-parameter scale, trained on bytes, stand in for the paper's 125M-1.6B
  models trained on web text. Rotary positions are not supported (the interleaved steps
  share a position, which the common rotary cache does not express).

References
----------
Monea, Godey, Brantley, Artzi. State-prediction separation in Transformers. arXiv
2607.01218 (NeurIPS 2026). Goyal et al., Think before you speak: training language
models with pause tokens, ICLR 2024.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.models import GPT, GPTConfig

from ._checks import (
    check_device,
    check_int,
    check_mode,
    check_positive_float,
    check_targets,
    check_tokens,
)

#: The two interleaved models; the standard model is the common GPT.
SPS_MODES = ("separated", "pause")
#: The two readings of the prediction step's input: ``e_rho + p_i`` alone, or with the
#: token's embedding ``wte(x_i)`` added.
RHO_INPUTS = ("learned", "token")


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
    device : str or torch.device

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
    check_int("seq_len", seq_len, minimum=1, maximum=16_384)  # a (2T)^2 mask: 1 GiB at most
    check_mode(mode)
    device = check_device(device)
    if mode == "standard":
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    n = 2 * seq_len
    causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    if mode == "pause":
        return causal
    is_rho = (torch.arange(n, device=device) % 2) == 1
    # keys that are state steps x_j with j <= i(q), i.e. key step <= query step ...
    mask = causal & ~is_rho[None, :]
    # ... and each prediction step sees itself (and no other prediction step)
    return mask | torch.diag(is_rho)


class KVCache:
    """Per-layer keys and values of the cached steps, ``(B, H, S, C / H)`` each.

    The separated model caches only state steps (``S`` = tokens seen); the pause model
    caches state and prediction steps (``S`` = 2 x tokens seen).
    """

    def __init__(self, num_layers: int) -> None:
        self.kv: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * num_layers
        self.num_tokens = 0
        #: ``wte`` of the last token (B, C), read by the next prediction step when the
        #: model's ``rho_input`` is ``"token"``.
        self.last_token_emb: torch.Tensor | None = None


class SPSTransformer(nn.Module):
    """State-prediction separated Transformer (``mode="separated"``) or pause control.

    Parameters
    ----------
    cfg : GPTConfig
        Sizes of the common GPT whose modules the model runs (learned positions).
    mode : {"separated", "pause"}
        The paper's mask, or the causal mask over the ``2T`` steps (the pause control).
    separate_weights : bool
        Give the prediction steps their own MLPs (an ablation; default shared).
    rho_input : {"learned", "token"}
        The prediction step's input: ``e_rho + p_i`` (default), or ``wte(x_i) + e_rho +
        p_i`` (the other reading of the paper).

    Attributes
    ----------
    gpt : GPT
        Embeddings, blocks, final norm and tied head (the standard model's modules).
    rho_emb : nn.Parameter
        ``(C,)`` the prediction embedding ``e_rho``.
    rho_mlps : nn.ModuleList or None
        The prediction steps' MLPs when ``separate_weights``.

    Examples
    --------
    >>> from neurips26.common.torch import seeded
    >>> with seeded(0):
    ...     model = SPSTransformer(GPTConfig(block_size=16, num_layers=2, dim=32))
    >>> idx = torch.randint(0, 256, (3, 16), generator=torch.Generator().manual_seed(0))
    >>> logits, loss = model(idx, idx)
    >>> tuple(logits.shape), round(loss.item(), 1)
    ((3, 16, 256), 5.6)
    """

    #: ``model(x, y)`` returns ``(logits, loss)``, as the common GPT (read by common.train).
    returns_loss = True

    def __init__(self, cfg: GPTConfig, *, mode: str = "separated",
                 separate_weights: bool = False, rho_input: str = "learned") -> None:  # fmt: skip
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
        if cfg.positions != "learned":
            raise ValueError(
                f"cfg.positions must be 'learned' (x_i and rho_i share position i), "
                f"got {cfg.positions!r}"
            )
        check_mode(mode, SPS_MODES)
        if not isinstance(separate_weights, bool):
            raise TypeError(f"separate_weights must be a bool, got {separate_weights!r}")
        if rho_input not in RHO_INPUTS:
            raise ValueError(f"rho_input must be one of {RHO_INPUTS}, got {rho_input!r}")
        self.cfg, self.mode, self.separate_weights = cfg, mode, separate_weights
        self.rho_input = rho_input
        self.gpt = GPT(cfg)
        self.rho_emb = nn.Parameter(torch.empty(cfg.dim))
        nn.init.normal_(self.rho_emb, mean=0.0, std=0.02)
        self.rho_mlps = (
            nn.ModuleList(copy.deepcopy(b.mlp) for b in self.gpt.blocks)
            if separate_weights else None
        )  # fmt: skip
        # the mask of a shorter input is the leading sub-matrix: built once, sliced per call
        self.register_buffer("mask", separation_mask(cfg.block_size, mode=mode), persistent=False)

    @classmethod
    def from_gpt(cls, gpt: GPT, *, mode: str = "separated",
                 rho_input: str = "learned") -> SPSTransformer:
        """A model whose shared modules are copies of ``gpt``'s (``e_rho`` freshly drawn)."""
        if not isinstance(gpt, GPT):
            raise TypeError(f"gpt must be a common GPT, got {type(gpt).__name__}")
        model = cls(gpt.cfg, mode=mode, rho_input=rho_input)
        model.gpt.load_state_dict(gpt.state_dict())
        return model

    @property
    def blocks(self) -> nn.ModuleList:
        """The ``num_layers`` blocks, shared by both streams."""
        return self.gpt.blocks

    # ------------------------------------------------------------------ one block

    def _block(self, layer: int, h: torch.Tensor, stream: str, past=None, attn_mask=None):
        """Block ``layer`` on steps ``h`` (B, S, C) of ``stream`` ("both", "x" or "rho")."""
        block = self.gpt.blocks[layer]
        if self.rho_mlps is None:
            return block(h, past=past, attn_mask=attn_mask)
        # the common pre-norm block, with the rho steps routed through their own MLP
        a, kv = block.attn(block.norm1(h), past=past, attn_mask=attn_mask)
        h = h + a
        z = block.norm2(h)
        if stream == "x":
            return h + block.mlp(z), kv
        if stream == "rho":
            return h + self.rho_mlps[layer](z), kv
        b, s, c = z.shape
        pair = z.view(b, s // 2, 2, c)  # (B, T, 2, C): [x_i, rho_i]
        out = torch.stack([block.mlp(pair[:, :, 0]), self.rho_mlps[layer](pair[:, :, 1])], 2)
        return h + out.view(b, s, c), kv

    # ------------------------------------------------------------------ full pass

    def _check_idx(self, idx: torch.Tensor, name: str = "idx") -> torch.Tensor:
        return check_tokens(name, idx, vocab_size=self.cfg.vocab_size,
                            block_size=self.cfg.block_size)  # fmt: skip

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """Interleaved input embeddings ``(B, 2T, C)``: ``[wte(x_i) + p_i, e_rho + p_i]``
        (``wte(x_i)`` added to the prediction step too when ``rho_input="token"``)."""
        b, t = idx.shape
        pos = self.gpt.pos_emb(torch.arange(t, device=idx.device))  # (T, C)
        wte = self.gpt.tok_emb(idx)  # (B, T, C)
        tok = wte + pos
        rho = (self.rho_emb + pos).expand(b, t, -1)  # (B, T, C)
        if self.rho_input == "token":
            rho = rho + wte
        return self.gpt.drop(torch.stack([tok, rho], dim=2).reshape(b, 2 * t, -1))

    def hidden_states(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """Residual stream entering each block and leaving the last: ``L + 1`` of ``(B, 2T, C)``.

        Steps ``0::2`` are the state stream, steps ``1::2`` the prediction stream.
        """
        idx = self._check_idx(idx)
        t = idx.shape[1]
        mask = self.mask[: 2 * t, : 2 * t]
        h = self.embed(idx)
        states = [h]
        for layer in range(self.cfg.num_layers):
            h, _ = self._block(layer, h, "both", attn_mask=mask)
            states.append(h)
        return states

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """Logits ``(..., V)`` of prediction-step states ``(..., C)``."""
        return self.gpt.head(self.gpt.norm_f(h))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Next-token logits at the prediction steps and, with targets, the loss.

        Parameters
        ----------
        idx : torch.Tensor
            ``(B, T)`` integer token ids, ``T <= block_size``.
        targets : torch.Tensor, optional
            ``(B, T)`` the next tokens ``x_{i+1}`` (``-1`` ignored).

        Returns
        -------
        logits : torch.Tensor
            ``(B, T, V)``, read out at the prediction steps ``rho_i`` only.
        loss : torch.Tensor or None
            Mean cross-entropy in nats (None without targets).
        """
        h = self.hidden_states(idx)[-1]  # (B, 2T, C)
        logits = self.head(h[:, 1::2])  # (B, T, V): state steps carry no loss
        loss = None
        if targets is not None:
            targets = check_targets(targets, idx, vocab_size=self.cfg.vocab_size)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)
        return logits, loss

    # ------------------------------------------------------------- cached decoding

    def _run_cached(self, h: torch.Tensor, stream: str, cache: KVCache, keep: bool, mask=None):
        for layer in range(self.cfg.num_layers):
            h, kv = self._block(layer, h, stream, past=cache.kv[layer], attn_mask=mask)
            if keep:
                cache.kv[layer] = kv
        return h

    def _rho_step(self, cache: KVCache, batch: int) -> torch.Tensor:
        """Prediction step of the last cached token: reads the cache and itself."""
        pos = self.gpt.pos_emb.weight[cache.num_tokens - 1]
        h = (self.rho_emb + pos).expand(batch, 1, -1)  # (B, 1, C)
        if self.rho_input == "token":
            h = h + cache.last_token_emb[:, None]
        keep = self.mode == "pause"  # the separated model never caches a prediction step
        return self.head(self._run_cached(h, "rho", cache, keep)[:, 0])  # (B, V)

    @torch.no_grad()
    def prefill(self, idx: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
        """Run a prompt ``(B, T)``; return the last logits ``(B, V)`` and the filled cache."""
        idx = self._check_idx(idx)
        b, t = idx.shape
        cache = KVCache(self.cfg.num_layers)
        cache.last_token_emb = self.gpt.tok_emb(idx[:, -1])  # (B, C)
        if self.mode == "separated":
            # the state stream never reads rho: a causal decoder over x alone
            self._run_cached(self.gpt.embed(idx), "x", cache, keep=True)
            cache.num_tokens = t
            return self._rho_step(cache, b), cache
        h = self._run_cached(self.embed(idx), "both", cache, True, self.mask[: 2 * t, : 2 * t])
        cache.num_tokens = t
        return self.head(h[:, -1]), cache

    @torch.no_grad()
    def step(self, token: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Feed one token per sequence ``(B,)``: one state step, then one prediction step.

        The state step's keys and values are appended to ``cache``; the separated
        model's prediction step is dropped once it has produced the logits ``(B, V)``.
        """
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        if cache.num_tokens >= self.cfg.block_size:
            raise ValueError(f"cache: already holds block_size={self.cfg.block_size} tokens")
        if not isinstance(token, torch.Tensor) or token.ndim != 1:
            raise ValueError("token must be a 1-D tensor of one id per sequence")
        token = check_tokens("token", token[:, None], vocab_size=self.cfg.vocab_size,
                             block_size=1)  # fmt: skip
        pos = self.gpt.pos_emb.weight[cache.num_tokens]
        emb = self.gpt.tok_emb(token)  # (B, 1, C)
        cache.last_token_emb = emb[:, 0]  # (B, C)
        self._run_cached(emb + pos, "x", cache, keep=True)
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
        """Sample a continuation; ``top_k=1`` decodes greedily.

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
            Decode with the KV cache (two block steps per token) or recompute the full
            forward pass per token; both give the same tokens.

        Returns
        -------
        torch.Tensor
            ``(B, T + max_new_tokens)``.
        """
        idx = self._check_idx(idx)
        check_int("max_new_tokens", max_new_tokens, minimum=0)
        temperature = check_positive_float("temperature", temperature)
        if top_k is not None:
            check_int("top_k", top_k, minimum=1)
        if idx.shape[1] + max_new_tokens > self.cfg.block_size:
            raise ValueError(
                f"max_new_tokens: prompt length {idx.shape[1]} + {max_new_tokens} exceeds "
                f"block_size={self.cfg.block_size}"
            )
        gen = torch.Generator(device=idx.device).manual_seed(int(seed))
        was_training = self.training
        self.eval()
        out, logits, cache = idx, None, None
        for n in range(max_new_tokens):
            if not use_cache:
                logits = self(out)[0][:, -1]
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
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)
