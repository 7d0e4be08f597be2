"""Analytic FLOP counts of the standard, separated and pause Transformers.

We count the matrix multiplications the models execute, at two FLOPs per
multiply-add (the convention of ``torch.utils.flop_counter.FlopCounterMode``); layer
norms, GELU, softmax, biases and embedding look-ups are left out (a few percent at
these widths, and not counted by the measured count either). Attention is counted
dense: scaled-dot-product attention computes every query-key pair and masks the
scores afterwards, so the mask saves no work. A backward pass costs two forward
passes, so one training step costs three.

For ``S`` steps (``S = T`` standard, ``S = 2T`` interleaved), width ``d``, ``L`` layers,
vocabulary ``V`` and ``R`` read-out positions (``R = T`` in every mode: the separated and
pause models read out only the prediction steps), one forward pass costs

    L (6 S d^2 + 2 S d^2 + 16 S d^2 + 4 S^2 d) + 2 R d V.

Interleaving doubles the linear terms and quadruples the attention term; the head is
unchanged, so the separated model costs a little more than 2x the standard one.

To measure the count with ``FlopCounterMode`` on CPU, run under
``torch.nn.attention.sdpa_kernel(SDPBackend.MATH)``: the math backend decomposes
attention into counted ``bmm`` calls, while the fused CPU kernel is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from neurips26.common.models import GPTConfig

from ._checks import check_int, check_mode


@dataclass(frozen=True)
class FlopCount:
    """FLOPs of one forward pass over one sequence of ``seq_len`` tokens, by term.

    Attributes
    ----------
    mode : str
        ``"standard"``, ``"separated"`` or ``"pause"``.
    seq_len : int
        Tokens ``T`` per sequence.
    qkv, attn_proj, attn_scores, attn_values, mlp, head : int
        FLOPs of the query/key/value projection, the attention output projection,
        ``Q K^T``, ``softmax(.) V``, the two MLP matrices and the output head.
    """

    mode: str
    seq_len: int
    qkv: int
    attn_proj: int
    attn_scores: int
    attn_values: int
    mlp: int
    head: int

    @property
    def forward(self) -> int:
        """FLOPs of one forward pass over the sequence."""
        return (
            self.qkv + self.attn_proj + self.attn_scores + self.attn_values + self.mlp + self.head
        )

    @property
    def training(self) -> int:
        """FLOPs of one forward and backward pass over the sequence (``3 x forward``)."""
        return 3 * self.forward

    @property
    def forward_per_token(self) -> float:
        return self.forward / self.seq_len

    @property
    def training_per_token(self) -> float:
        """Training FLOPs per input token: the unit of the equal-FLOPs comparison."""
        return self.training / self.seq_len


def forward_flops(cfg: GPTConfig, *, mode: str, seq_len: int | None = None) -> FlopCount:
    """Analytic matmul FLOPs of one forward pass over a length-``seq_len`` sequence.

    Parameters
    ----------
    cfg : GPTConfig
        ``L = num_layers``, ``d = dim``, ``V = vocab_size`` and the MLP (width
        ``h = mlp_ratio d``; GELU has two ``d x h`` matrices, SwiGLU three of width
        ``2h/3``).
    mode : str
        ``"standard"`` (``T`` steps, head at every step), ``"separated"`` or ``"pause"``
        (``2T`` steps, head at the ``T`` prediction steps).
    seq_len : int, optional
        Tokens ``T`` (default ``cfg.block_size``).

    Returns
    -------
    FlopCount

    Examples
    --------
    >>> cfg = GPTConfig(block_size=64, num_layers=2, dim=64)
    >>> std = forward_flops(cfg, mode="standard")
    >>> sep = forward_flops(cfg, mode="separated")
    >>> std.forward, round(sep.forward / std.forward, 3)
    (16777216, 2.125)
    """
    if not isinstance(cfg, GPTConfig):
        raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    check_mode(mode)
    seq_len = cfg.block_size if seq_len is None else seq_len
    check_int("seq_len", seq_len, minimum=1)
    if seq_len > cfg.block_size:
        raise ValueError(f"seq_len={seq_len} exceeds the context block_size={cfg.block_size}")
    steps = seq_len if mode == "standard" else 2 * seq_len  # S
    d, layers = cfg.dim, cfg.num_layers
    hidden = int(cfg.mlp_ratio * d)
    mlp_mats = 2
    if cfg.mlp == "swiglu":
        hidden, mlp_mats = max(1, int(2 * hidden / 3)), 3
    return FlopCount(
        mode=mode,
        seq_len=seq_len,
        qkv=layers * 2 * steps * d * 3 * d,
        attn_proj=layers * 2 * steps * d * d,
        attn_scores=layers * 2 * steps * steps * d,  # dense Q K^T over all heads
        attn_values=layers * 2 * steps * steps * d,
        mlp=layers * mlp_mats * 2 * steps * d * hidden,
        head=2 * seq_len * d * cfg.vocab_size,  # R = T read-out positions in every mode
    )


def flop_ratio(cfg: GPTConfig, *, seq_len: int | None = None, mode: str = "separated") -> float:
    """Training FLOPs per token of the ``mode`` model over the standard model's.

    Examples
    --------
    >>> round(flop_ratio(GPTConfig(block_size=64, num_layers=2, dim=64)), 3)
    2.125
    """
    sep = forward_flops(cfg, mode=mode, seq_len=seq_len)
    return sep.training / forward_flops(cfg, mode="standard", seq_len=seq_len).training
