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


def forward_flops(
    mode: str, *, seq_len: int, n_layer: int, dim: int, vocab_size: int
) -> FlopCount:
    """Analytic matmul FLOPs of one forward pass over a length-``seq_len`` sequence.

    Parameters
    ----------
    mode : str
        ``"standard"`` (``T`` steps, head at every step), ``"separated"`` or ``"pause"``
        (``2T`` steps, head at the ``T`` prediction steps).
    seq_len : int
        Tokens ``T``.
    n_layer, dim, vocab_size : int
        ``L``, ``d`` and ``V`` (MLP width ``4 d``).

    Returns
    -------
    FlopCount

    Examples
    --------
    >>> std = forward_flops("standard", seq_len=64, n_layer=2, dim=64, vocab_size=256)
    >>> sep = forward_flops("separated", seq_len=64, n_layer=2, dim=64, vocab_size=256)
    >>> std.forward, round(sep.forward / std.forward, 3)
    (9437184, 2.111)
    """
    check_mode(mode)
    for name, value in (("seq_len", seq_len), ("n_layer", n_layer), ("dim", dim),
                        ("vocab_size", vocab_size)):
        check_int(name, value, minimum=1)
    steps = seq_len if mode == "standard" else 2 * seq_len  # S
    d, layers = dim, n_layer
    return FlopCount(
        mode=mode,
        seq_len=seq_len,
        qkv=layers * 2 * steps * d * 3 * d,
        attn_proj=layers * 2 * steps * d * d,
        attn_scores=layers * 2 * steps * steps * d,  # dense Q K^T over all heads
        attn_values=layers * 2 * steps * steps * d,
        mlp=layers * 2 * 2 * steps * d * 4 * d,
        head=2 * seq_len * d * vocab_size,  # R = T read-out positions in every mode
    )


def flop_ratio(*, seq_len: int, n_layer: int, dim: int, vocab_size: int) -> float:
    """Training FLOPs per token of the separated model over the standard model's.

    Examples
    --------
    >>> round(flop_ratio(seq_len=64, n_layer=2, dim=64, vocab_size=256), 3)
    2.111
    """
    kw = {"seq_len": seq_len, "n_layer": n_layer, "dim": dim, "vocab_size": vocab_size}
    return forward_flops("separated", **kw).training / forward_flops("standard", **kw).training
