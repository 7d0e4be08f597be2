"""Sign codes, Hamming k-nearest neighbours on them, and same-class code overlap.

The sign code of an input ``x`` is ``c(x) = concat_l sign(z_l(x))`` over the
pre-activations ``z_l`` of the chosen activation sites (all units; for convolutions every
channel x position), with ``sign(0) := +1``, stored as int8 in {-1, +1}. For +/-1 codes of
length ``D`` the Hamming distance is a matrix product: ``H(a, b) = (D - a . b) / 2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data
from torch import nn

from neurips26.common.validation import check_int

from .networks import activation_sites

MAX_CODE_BYTES = 8 * 2**30  # refuse code matrices above 8 GB


def _as_inputs(x, name: str = "x") -> torch.Tensor:
    if isinstance(x, np.ndarray):
        if not np.issubdtype(x.dtype, np.number):
            raise TypeError(f"{name}: expected a numeric array, got dtype {x.dtype}")
        x = torch.as_tensor(x, dtype=torch.float32)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a tensor or array, got {type(x).__name__}")
    if x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty batch (B, ...), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.float()
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    return x


def select_sites(model: nn.Module, layers: str | Sequence[int] = "all") -> list[nn.Module]:
    """The activation modules named by ``layers``: ``"all"``, ``"last"`` or site indices."""
    sites = [m for _, m in activation_sites(model)]
    if isinstance(layers, str):
        if layers == "all":
            return sites
        if layers == "last":
            return sites[-1:]
        raise ValueError(f"layers: expected 'all', 'last' or site indices, got {layers!r}")
    idx = [int(i) for i in layers]
    if not idx:
        raise ValueError("layers: the list of site indices is empty")
    bad = [i for i in idx if not -len(sites) <= i < len(sites)]
    if bad:
        raise ValueError(f"layers: site indices {bad} out of range for {len(sites)} sites")
    return [sites[i] for i in idx]


def _sign(z: torch.Tensor) -> torch.Tensor:
    """``sign(z)`` with ``sign(0) = +1``, as int8."""
    return torch.where(z >= 0, 1, -1).to(torch.int8)


@torch.no_grad()
def sign_code(model: nn.Module, x, *, layers: str | Sequence[int] = "all",
              batch_size: int = 512) -> torch.Tensor:  # fmt: skip
    """The sign code ``c(x)`` of every input.

    Parameters
    ----------
    model : nn.Module
        Any network whose nonlinearities are activation modules (see
        :func:`~neurips26.papers.sign_code.networks.activation_sites`).
    x : tensor or array, shape (B, ...)
    layers : "all", "last" or sequence of int
        Which activation sites to read.
    batch_size : int

    Returns
    -------
    torch.Tensor, shape (B, D), int8 in {-1, +1}
        ``D`` is the total number of units of the chosen sites.

    Examples
    --------
    >>> from neurips26.papers.sign_code import make_mlp
    >>> net = make_mlp(dim_in=4, width=8, num_classes=3, depth=2)
    >>> c = sign_code(net, torch.randn(5, 4))
    >>> c.shape, c.dtype, sorted(c.unique().tolist())
    (torch.Size([5, 16]), torch.int8, [-1, 1])
    """
    x = _as_inputs(x)
    check_int(batch_size, "batch_size", min=1)
    sites = select_sites(model, layers)
    was_training = model.training
    model.eval()
    chunks: list[torch.Tensor] = []
    captured: list[torch.Tensor] = []
    handles = [s.register_forward_hook(lambda m, inp, out: captured.append(_sign(inp[0])
                                                                           .flatten(1)))
               for s in sites]  # fmt: skip
    device = next(model.parameters()).device
    try:
        for start in range(0, len(x), batch_size):
            captured.clear()
            model(x[start : start + batch_size].to(device))
            chunks.append(torch.cat(captured, dim=1).cpu())
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    codes = torch.cat(chunks, dim=0)
    if codes.numel() > MAX_CODE_BYTES:
        raise ValueError(f"x: the codes would take {codes.numel() / 2**30:.1f} GB (limit 8 GB)")
    return codes


def _as_codes(c, name: str) -> torch.Tensor:
    if not isinstance(c, torch.Tensor):
        arr = np.asarray(c)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name}: expected a numeric (N, D) code matrix, got dtype {arr.dtype}")
        c = torch.as_tensor(arr)
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty (N, D) code matrix, got {tuple(c.shape)}")
    if c.is_floating_point() and not torch.isfinite(c).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    if not bool(((c == 1) | (c == -1)).all()):
        raise ValueError(f"{name}: codes must hold only -1 and +1")
    return c


def hamming_distances(a, b) -> torch.Tensor:
    """All Hamming distances ``(N_a, N_b)`` between two sets of +/-1 codes (as int64).

    ``H(a, b) = (D - a . b) / 2``; exact for codes up to 2^24 units (float32 products).
    """
    a, b = _as_codes(a, "a"), _as_codes(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"b: codes of length {b.shape[1]} differ from a's {a.shape[1]}")
    dot = a.float() @ b.float().T  # (N_a, N_b)
    return ((a.shape[1] - dot) / 2).round().long()


def hamming_knn(train_codes, train_y, query_codes, *, k: int = 5,
                batch_size: int = 1024) -> np.ndarray:  # fmt: skip
    """k-nearest-neighbour majority vote in Hamming distance on sign codes.

    Parameters
    ----------
    train_codes : (N, D) +/-1 codes, the memory
    train_y : (N,) labels (any integers)
    query_codes : (Q, D) +/-1 codes
    k : int
        Neighbours per vote, ``1 <= k <= N``. Distance ties go to the lower training
        index; vote ties to the smallest label (as scikit-learn's ``KNeighborsClassifier``).
    batch_size : int
        Queries per block, so memory stays ``O(batch_size * N)``.

    Returns
    -------
    ndarray, shape (Q,)
        Predicted labels.
    """
    tc = _as_codes(train_codes, "train_codes")
    qc = _as_codes(query_codes, "query_codes")
    if qc.shape[1] != tc.shape[1]:
        raise ValueError(
            f"query_codes: codes of length {qc.shape[1]} differ from train_codes' {tc.shape[1]}"
        )
    y = np.asarray(train_y)
    if y.ndim != 1 or len(y) != len(tc):
        raise ValueError(f"train_y: expected {len(tc)} labels, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"train_y: expected integer labels, got dtype {y.dtype}")
    check_int(k, "k", min=1, max=len(tc))
    check_int(batch_size, "batch_size", min=1)
    labels, y_idx = np.unique(y, return_inverse=True)
    y_t = torch.as_tensor(y_idx)
    n = len(tc)
    index = torch.arange(n)
    tf = tc.float()
    out = []
    for start in range(0, len(qc), batch_size):
        q = qc[start : start + batch_size].float()
        dist = ((tc.shape[1] - q @ tf.T) / 2).round().long()  # (b, N)
        key = dist * n + index  # ties in distance -> lower training index first
        nearest = torch.topk(key, k, dim=1, largest=False).indices  # (b, k)
        votes = torch.zeros(len(q), len(labels), dtype=torch.long)
        votes.scatter_add_(1, y_t[nearest], torch.ones_like(nearest))
        out.append(votes.argmax(dim=1))  # first maximum: the smallest label wins ties
    return labels[torch.cat(out).numpy()]


class SignCodeKNN(ClassifierMixin, BaseEstimator):
    """A kNN classifier on a network's sign codes (the network is frozen, never trained).

    Parameters
    ----------
    model : nn.Module or None
        The trained network whose activation sites give the codes. ``None`` (the default):
        a frozen, untrained ``make_mlp(dim_in=n_features, width=width, depth=2,
        activation="relu", seed=random_state)`` read on the features standardised with the
        training mean and standard deviation, i.e. random-hyperplane codes, the
        data-independent baseline that a trained network's codes are compared against.
    k : int
        Neighbours per vote, at most the number of training samples.
    layers : "all", "last" or list of int
        Which activation sites to read.
    batch_size : int
        Queries per block of the Hamming search.
    width : int
        Hidden width of the random network (``model=None`` only).
    random_state : int
        Seed of the random network's weights (``model=None`` only).

    Attributes
    ----------
    codes_ : torch.Tensor (N, D) int8
        The training codes (the memory).
    classes_ : ndarray of shape (n_classes,)
        The sorted labels.
    model_ : nn.Module
        The network read (``model``, or the random one).
    n_features_in_ : int
        Number of features (2-D inputs only; a ``model`` may also take (N, C, H, W)).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3)); y = (X[:, 0] > 0).astype(int)
    >>> knn = SignCodeKNN(k=3).fit(X, y)
    >>> knn.predict(X[:4]).shape, knn.codes_.shape
    ((4,), torch.Size([80, 512]))
    """

    def __init__(self, model: nn.Module | None = None, *, k: int = 5,
                 layers: str | Sequence[int] = "all", batch_size: int = 1024, width: int = 256,
                 random_state: int = 0) -> None:  # fmt: skip
        self.model = model
        self.k = k
        self.layers = layers
        self.batch_size = batch_size
        self.width = width
        self.random_state = random_state

    def _inputs(self, X, *, reset: bool) -> torch.Tensor:
        """``X`` as a float32 tensor: 2-D inputs through scikit-learn's validation."""
        if isinstance(X, torch.Tensor) and X.requires_grad:
            raise TypeError("X: a tensor that requires grad; pass X.detach()")
        nd = X.ndim if isinstance(X, (np.ndarray, torch.Tensor)) else None
        if nd is not None and nd > 2:
            if self.model is None:
                raise ValueError(f"X: the random network (model=None) takes 2-D features, got "
                                 f"{nd}-D input; pass model= for images")
            x = _as_inputs(X, "X")
            if reset:
                self.input_shape_ = tuple(x.shape[1:])
            elif tuple(x.shape[1:]) != getattr(self, "input_shape_", None):
                raise ValueError(f"X: inputs of shape {tuple(x.shape[1:])} differ from the "
                                 f"training inputs' {getattr(self, 'input_shape_', None)}")
            return x
        if isinstance(X, torch.Tensor):
            X = X.detach().cpu().numpy()
        if not reset and not hasattr(self, "n_features_in_"):
            raise ValueError("X: the model was fitted on images (N, C, H, W); pass such inputs")
        X = validate_data(self, X, reset=reset, dtype=(np.float32, np.float64))
        if self.model is None:
            if reset:
                self.mean_ = X.mean(axis=0)
                self.scale_ = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
            X = (X - self.mean_) / self.scale_
        return torch.as_tensor(np.ascontiguousarray(X), dtype=torch.float32)

    def _network(self, dim_in: int) -> nn.Module:
        if self.model is not None:
            if not isinstance(self.model, nn.Module):
                raise TypeError(f"model: expected an nn.Module or None, got "
                                f"{type(self.model).__name__}")
            return self.model
        from .networks import make_mlp

        width = check_int(self.width, "width", min=1, max=1_000_000)
        seed = check_int(self.random_state, "random_state", min=0)
        return make_mlp(dim_in=dim_in, width=width, num_classes=2, depth=2,
                        activation="relu", seed=seed)

    def fit(self, X, y):
        """Store the training codes.

        Parameters
        ----------
        X : array-like of shape (N, d), or (N, ...) inputs of ``model``
        y : array-like of shape (N,)
            Class labels.

        Returns
        -------
        self
        """
        for name in ("n_features_in_", "input_shape_"):
            if hasattr(self, name):
                delattr(self, name)
        if y is None:
            raise ValueError("SignCodeKNN requires y to be passed, but the target y is None")
        x = self._inputs(X, reset=True)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or len(y) != len(x):
            raise ValueError(f"y: expected {len(x)} labels, got shape {y.shape}")
        check_classification_targets(y)
        k = check_int(self.k, "k", min=1)
        if k > len(x):
            raise ValueError(f"k: {k} neighbours need at least {k} training samples, got "
                             f"n_samples={len(x)}")
        check_int(self.batch_size, "batch_size", min=1)
        self.model_ = self._network(int(np.prod(x.shape[1:])) if x.ndim == 2 else 0)
        self.classes_, self.y_ = np.unique(y, return_inverse=True)
        self.codes_ = sign_code(self.model_, x, layers=self.layers)
        return self

    def predict(self, X) -> np.ndarray:
        """Labels of shape (Q,): the majority label of the ``k`` nearest training codes."""
        check_is_fitted(self, "codes_")
        codes = sign_code(self.model_, self._inputs(X, reset=False), layers=self.layers)
        idx = hamming_knn(self.codes_, self.y_, codes, k=self.k, batch_size=self.batch_size)
        return self.classes_[idx]


@dataclass(frozen=True)
class OverlapStats:
    """Same-class versus different-class agreement of sign codes.

    Attributes
    ----------
    same, different : float
        Mean agreement ``1 - H / D`` over pairs of distinct inputs of the same class and
        of different classes.
    gap : float
        ``same - different`` (the overlap statistic ``O``).
    """

    same: float
    different: float
    gap: float


def sign_overlap(codes, y) -> OverlapStats:
    """The overlap statistic ``O`` of a set of sign codes, exactly, in ``O(N D)``.

    For +/-1 codes the sum of ``c_i . c_j`` over ordered pairs ``i != j`` of a class with
    code sum ``S_c`` is ``|S_c|^2 - n_c D``, so no pairwise matrix is formed. Agreement is
    ``(1 + c_i . c_j / D) / 2``.
    """
    c = _as_codes(codes, "codes").double()
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(c):
        raise ValueError(f"y: expected {len(c)} labels, got shape {y.shape}")
    n, d = c.shape
    classes, inv = np.unique(y, return_inverse=True)
    counts = np.bincount(inv)
    if (counts >= 2).sum() == 0:
        raise ValueError("y: no class has two inputs; same-class agreement is undefined")
    if len(classes) < 2:
        raise ValueError("y: a single class; different-class agreement is undefined")
    sums = torch.zeros(len(classes), d, dtype=torch.float64)
    sums.index_add_(0, torch.as_tensor(inv), c)
    same_dot = float((sums.pow(2).sum(1) - torch.as_tensor(counts) * d).sum())
    same_pairs = float((counts * (counts - 1)).sum())
    total = c.sum(0)
    all_dot = float(total.pow(2).sum() - n * d)
    diff_dot = all_dot - same_dot
    diff_pairs = float(n * n - (counts**2).sum())
    same = 0.5 * (1 + same_dot / same_pairs / d)
    diff = 0.5 * (1 + diff_dot / diff_pairs / d)
    return OverlapStats(same, diff, same - diff)
