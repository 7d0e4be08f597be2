"""Second-order pruning (SparseGPT's OBS sweep) and the one-layer entry point.

:func:`sparsegpt_prune` is SparseGPT's algorithm for any positive semi-definite Hessian
``H``: columns are visited left to right; column ``q``'s pruned weights are zeroed and the
error is spread over the remaining columns with the optimal-brain-surgeon update
``delta w = -(w_q / [H_F^-1]_qq) [H_F^-1]_{:, q}``, where ``F`` are the columns not yet
visited. The rows of ``H_F^-1`` come from one Cholesky factor of ``H^-1`` (no re-inversion)
and updates are applied lazily block by block. Whisper is this algorithm with the
difference Hessian of :func:`~neurips26.papers.wisp.pruning.whisper_hessian`.

:func:`prune_linear` prunes one weight matrix from its calibration inputs with any of the
seven methods; it is what :func:`~neurips26.papers.wisp.model.prune_model` calls for every
linear map of a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from neurips26.common.validation import check_choice, check_float, check_int

from .pruning import (
    DIFFERENCE_METHODS,
    METHODS,
    PAIRINGS,
    Pairs,
    _input_hessian,
    _mask,
    _wanda,
    _whisper_hessian,
    _wisp,
    _wisp_act,
    _wisp_plus,
    as_tensor,
    make_pairs,
    parse_sparsity,
)


@dataclass(frozen=True)
class PruneResult:
    """A pruned weight matrix.

    Attributes
    ----------
    weight : torch.Tensor, shape (d_out, d_in)
        The pruned (and, for SparseGPT/Whisper, updated) weight ``W'``.
    mask : torch.BoolTensor, shape (d_out, d_in)
        ``True`` where a weight was pruned (``W'`` is zero there).
    error : float
        ``tr((W' - W) H (W' - W)^T)`` for the Hessian the method minimises (for
        SparseGPT with ``H = X^T X / N``: the mean squared output error on calibration
        data); NaN for update-free methods called without a Hessian.
    """

    weight: torch.Tensor
    mask: torch.Tensor
    error: float

    @property
    def sparsity(self) -> float:
        """The fraction of weights pruned."""
        return float(self.mask.float().mean())


def _quad_error(dW: torch.Tensor, H: torch.Tensor) -> float:
    return float(((dW @ H) * dW).sum())


def _output_error(dW: torch.Tensor, X: torch.Tensor) -> float:
    """``||X dW^T||_F^2 / N`` = ``tr(dW (X^T X / N) dW^T)``."""
    return float((X @ dW.T).square().sum()) / X.shape[0]


def sparsegpt_prune(W, H, *, sparsity=0.5, block_size: int = 128, damp: float = 0.01,
                    mask=None) -> PruneResult:  # fmt: skip
    """SparseGPT: prune ``W`` column by column, reconstructing ``W H W^T`` by OBS updates.

    Parameters
    ----------
    W : tensor, shape (d_out, d_in)
    H : tensor, shape (d_in, d_in)
        Symmetric positive semi-definite Hessian of the layer-wise objective (``X^T X``
        for SparseGPT, the difference Hessian for Whisper); its scale does not matter.
    sparsity : float in [0, 1) or "N:M"
        Unstructured: the lowest OBS saliencies ``w^2 / [H_F^-1]_qq`` across each block
        of columns (all rows together, as the reference code) are pruned; ``"N:M"``: the
        ``M - N`` lowest of each group of ``M`` inputs of each row, chosen when the sweep
        reaches the group.
    block_size : int
        Columns per lazy update block (``M`` must divide it for ``"N:M"``).
    damp : float
        Dampening ``damp * mean(diag H)`` added to the diagonal.
    mask : bool tensor (d_out, d_in), optional
        A fixed mask (``True`` = prune); then ``sparsity`` only names the pattern.

    Returns
    -------
    PruneResult

    Raises
    ------
    ValueError
        If the damped ``H`` is not positive definite (the Cholesky fails).

    References
    ----------
    Frantar & Alistarh, "SparseGPT: Massive Language Models Can Be Accurately Pruned in
    One-Shot", ICML 2023 (Algorithm 1).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> X = torch.randn(64, 8, generator=g, dtype=torch.float64)
    >>> W = torch.randn(4, 8, generator=g, dtype=torch.float64)
    >>> r = sparsegpt_prune(W, X.T @ X, sparsity=0.5)
    >>> r.sparsity, bool((r.weight[r.mask] == 0).all())
    (0.5, True)
    """
    W0 = as_tensor(W, "W", ndim=2)
    if W0.dtype in (torch.float16, torch.bfloat16):
        W0 = W0.float()
    H0 = as_tensor(H, "H", ndim=2).to(device=W0.device, dtype=W0.dtype)
    Wk, out_mask = _obs_sweep(W0, H0, sparsity, block_size, damp, mask)
    return PruneResult(Wk, out_mask, _quad_error(Wk - W0, H0))


def _obs_sweep(W0, H0, sparsity, block_size, damp, mask):
    """SparseGPT's sweep on checked tensors: ``(W', mask)`` (see :func:`sparsegpt_prune`)."""
    d_out, d_in = W0.shape
    if H0.shape != (d_in, d_in):
        raise ValueError(f"H must have shape ({d_in}, {d_in}) to match W, got {tuple(H0.shape)}")
    if float((H0 - H0.T).abs().max()) > 1e-5 * float(H0.abs().max()):
        raise ValueError("H must be symmetric")
    s, nm = parse_sparsity(sparsity)
    block_size = check_int(block_size, "block_size", min=1, max=1 << 20)
    damp = check_float(damp, "damp", min=0.0, max=1e6)
    if nm is not None:
        if d_in % nm[1]:
            raise ValueError(f"sparsity {nm[0]}:{nm[1]}: M = {nm[1]} does not divide d_in = {d_in}")
        if block_size % nm[1]:
            raise ValueError(f"block_size {block_size} must be a multiple of M = {nm[1]}")
    fixed = None
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError("mask must be a bool tensor")
        if mask.shape != W0.shape:
            raise ValueError(f"mask must have shape {tuple(W0.shape)}, got {tuple(mask.shape)}")
        fixed = mask.to(W0.device)
    Wk = W0.clone()
    Hd = H0.clone()
    dead = torch.diag(Hd) == 0
    Hd[dead, dead] = 1.0  # inputs that are always zero: decoupled columns
    Hd += damp * float(torch.diag(Hd).mean()) * torch.eye(d_in, dtype=Hd.dtype, device=Hd.device)
    try:
        L = torch.linalg.cholesky(Hd)
        Hinv = torch.cholesky_inverse(L)
        U = torch.linalg.cholesky(Hinv, upper=True)  # row q: [H_F^-1]_{q,:} / sqrt([H_F^-1]_qq)
    except RuntimeError as exc:  # torch.linalg.LinAlgError
        raise ValueError(f"H is not positive definite after damping ({exc})") from None
    out_mask = torch.zeros(d_out, d_in, dtype=torch.bool, device=W0.device)
    total = s * d_out * d_in
    for i1 in range(0, d_in, block_size):
        i2 = min(i1 + block_size, d_in)
        count = i2 - i1
        W1 = Wk[:, i1:i2].clone()
        Err1 = torch.zeros_like(W1)
        U1 = U[i1:i2, i1:i2]
        diag1 = torch.diag(U1)
        if fixed is not None:
            mask1 = fixed[:, i1:i2].clone()
        elif nm is None:
            # Saliency w^2 / [H_F^-1]_qq over the block; exact cumulative count of zeros.
            k = round(total * i2 / d_in) - round(total * i1 / d_in)
            mask1 = torch.zeros_like(W1, dtype=torch.bool)
            if k:
                sal = (W1.square() / diag1.square()[None, :]).flatten()
                low = torch.topk(sal, k, largest=False, sorted=False).indices
                mask1.view(-1)[low] = True
        else:
            mask1 = torch.zeros_like(W1, dtype=torch.bool)
        for i in range(count):
            if fixed is None and nm is not None and i % nm[1] == 0:
                n, m = nm
                sal = W1[:, i : i + m].square() / diag1[i : i + m].square()[None, :]
                low = torch.argsort(sal, dim=1, stable=True)[:, : m - n]
                mask1[:, i : i + m].scatter_(1, low, True)
            # OBS: the pruned part of column i, (w - q) / sqrt([H_F^-1]_qq), spread over the
            # free columns along row i of the Cholesky factor (column i itself becomes q).
            err = Err1[:, i]
            torch.mul(W1[:, i], mask1[:, i], out=err).div_(diag1[i])
            W1[:, i:].addr_(err, U1[i, i:], alpha=-1.0)
        Wk[:, i1:i2] = W1.masked_fill(mask1, 0.0)  # exact zeros where pruned
        out_mask[:, i1:i2] = mask1
        Wk[:, i2:] -= Err1 @ U[i1:i2, i2:]  # lazy update of the later columns
    return Wk, out_mask


def prune_linear(W, X, *, method: str = "wisp", sparsity=0.5, pairing: str = "knn",
                 pairs: Pairs | None = None, lam: float = 0.05, top_frac: float = 0.1,
                 block_size: int = 128, damp: float = 0.01, seed: int = 0,
                 error: bool = True) -> PruneResult:  # fmt: skip
    """Prune one linear map ``y = W x`` from its calibration inputs.

    Parameters
    ----------
    W : tensor, shape (d_out, d_in)
    X : tensor, shape (N, d_in) or (B, T, d_in)
        Calibration inputs of the layer (``N >= 2`` tokens).
    method : {"magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus", "whisper", "wisp_act"}
    sparsity : float in [0, 1) or "N:M"
    pairing : {"knn", "random", "adjacent"}
        How the difference methods pair tokens (:func:`make_pairs`).
    pairs : Pairs, optional
        Precomputed pairs (then ``pairing`` and ``seed`` are not used).
    lam : float
        Whisper's regulariser ``lam``.
    top_frac : float
        Wisp+'s ``q``.
    block_size, damp : int, float
        SparseGPT/Whisper's sweep settings.
    seed : int
        Seed of the random pairing.
    error : bool
        Compute ``PruneResult.error`` (one more pass over ``X``, as costly as a dense
        forward of the layer); ``False`` leaves it NaN and the method pays only for itself.

    Returns
    -------
    PruneResult
        ``weight`` in ``W``'s dtype (half-precision weights are scored and swept in
        float32); ``error`` is the output error ``tr(dW X^T X dW^T) / N`` on the
        calibration data.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> X, W = torch.randn(32, 8, generator=g), torch.randn(4, 8, generator=g)
    >>> r = prune_linear(W, X, method="whisper", sparsity="2:4")
    >>> int(r.mask.sum())
    16
    """
    W = as_tensor(W, "W", ndim=2)
    dtype = W.dtype
    if dtype in (torch.float16, torch.bfloat16):  # scores and sweeps in float32, W' in dtype
        W = W.float()
    method = check_choice(method, "method", METHODS)
    pairing = check_choice(pairing, "pairing", PAIRINGS)
    if not isinstance(error, bool):
        raise TypeError(f"error must be a bool, got {error!r}")
    X = as_tensor(X, "X", ndim=(2, 3))
    if X.shape[-1] != W.shape[1]:
        raise ValueError(f"X must have {W.shape[1]} features (d_in of W), got {X.shape[-1]}")
    if X.reshape(-1, X.shape[-1]).shape[0] < 2:
        raise ValueError("X: need at least 2 calibration tokens")
    parse_sparsity(sparsity)
    lam = check_float(lam, "lam", min=0.0, max=1e12)
    q = check_float(top_frac, "top_frac", min=0.0, max=1.0, min_inclusive=False)
    X = X.reshape(-1, X.shape[-1]).to(W.dtype)
    if pairs is not None and not isinstance(pairs, Pairs):
        raise TypeError(f"pairs must be a Pairs, got {type(pairs).__name__}")
    if method in ("sparsegpt", "whisper"):
        check_int(block_size, "block_size", min=1, max=1 << 20)
        check_float(damp, "damp", min=0.0, max=1e6)
    if method in DIFFERENCE_METHODS and pairs is None:
        pairs = make_pairs(X, pairing=pairing, seed=seed)
    if pairs is not None and int(pairs.b.max()) >= X.shape[0]:
        raise ValueError(f"pairs: they index token {int(pairs.b.max())}, but X has "
                         f"{X.shape[0]} tokens")  # fmt: skip
    W_new, mask = _prune_checked(W, X, method, sparsity, pairs, lam, q, block_size, damp)
    if W_new is None:
        W_new = W.masked_fill(mask, 0.0)
    err = _output_error(W_new - W, X) if error else float("nan")
    return PruneResult(W_new.to(dtype), mask, err)


def _prune_checked(W, X, method, sparsity, pairs, lam, q, block_size, damp):
    """``(W' or None, mask)`` on checked tensors: ``W`` (d_out, d_in) contiguous, finite and
    bounded, ``X`` (N, d_in) of ``W``'s dtype, ``pairs`` given for a difference method.
    ``W'`` is ``None`` for the update-free methods (``W'`` = ``W`` with the mask zeroed), so
    a caller may zero the mask in place."""
    if method in DIFFERENCE_METHODS:
        dX = X[pairs.a] - X[pairs.b]
        if method != "whisper" and float(dX.abs().max()) == 0:
            raise ValueError("X: every pair of calibration tokens is identical (no differences)")
    if method in ("sparsegpt", "whisper"):
        H = _input_hessian(X) if method == "sparsegpt" else _whisper_hessian(X, dX, lam)
        return _obs_sweep(W, H, sparsity, block_size, damp, None)
    scores = {
        "magnitude": lambda: W.abs(),
        "wanda": lambda: _wanda(W, X),
        "wisp": lambda: _wisp(W, dX),
        "wisp_plus": lambda: _wisp_plus(W, dX, q),
        "wisp_act": lambda: _wisp_act(W, X, dX),
    }[method]()
    return None, _mask(scores, sparsity)
