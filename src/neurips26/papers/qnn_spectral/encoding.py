"""Circuit architecture and its frequency spectrum: encodings, eigenvalues, path counts.

A data re-uploading model ``U(x, theta) = W_L S_L(x) W_{L-1} ... S_1(x) W_0`` (Schuld, Sweke
and Meyer 2021) outputs ``f(x) = sum_omega c_omega e^{i omega x}``, whose frequencies
``omega`` are differences of the eigenvalue sums of the encoding generators
(:func:`encoding_eigenvalues`); :func:`path_counts` counts the circuit terms ("paths") that
feed each frequency exactly. Pauli encodings ``exp(-i s x sigma / 2)`` give binomial counts
that fall with the frequency. ``encoding="golomb"`` replaces them by one diagonal generator
on a register of ``r`` qubits whose ``2^r`` eigenvalues are the marks of an optimal Golomb
ruler (:data:`GOLOMB_RULERS`; e.g. ``{0, 1, 4, 6}`` for two qubits): every difference of two
marks occurs once, so every frequency of the band ``1 .. B`` (:func:`flat_band`: all
differences up to the first missing one) is fed by the same number of paths. The generator
is a rescaled sum of Pauli-``Z`` strings (:func:`golomb_pauli_terms`), i.e. single-qubit
``RZ`` rotations with rescaled angles plus ``ZZ``-type couplings. Further qubits
(``encoded_qubits < num_qubits``) are trainable ancillas that the data never touches.

Deviations from the paper
-------------------------
- ``scaling="exponential"`` (ternary encoding scales) is ours. The spec expected the
  single-qubit model to have a nearly uniform path count, but its count is binomial,
  ``C(2L, L + omega)``, like the parallel one.
- :func:`path_counts` counts terms before the observable's light cone (terms can cancel).
- ``encoding="golomb"``, ``encoded_qubits`` and ``block_depth > 1`` are ours: the
  degeneracy-flat circuit (a frequency band in which every frequency
  has the same path count, with the target inside it and the circuit's spectrum extending
  beyond it).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "ENCODINGS",
    "ENTANGLERS",
    "GOLOMB_RULERS",
    "OBSERVABLES",
    "SCALINGS",
    "QNNConfig",
    "encoding_eigenvalues",
    "encoding_scales",
    "flat_band",
    "golomb_pauli_terms",
    "max_frequency",
    "num_parameters",
    "path_counts",
]

ENCODINGS = ("z", "y", "x", "golomb")
ENTANGLERS = ("ring", "chain", "none")
OBSERVABLES = ("Z0", "Zmean")
SCALINGS = ("constant", "exponential")
MAX_QUBITS = 10  # dense statevector limit
MAX_BLOCK_DEPTH = 16

#: Optimal Golomb rulers with ``2^r`` marks (``r`` encoded qubits): all pairwise differences
#: are distinct (checked in the tests). Sources: the OGR tables (Shearer; distributed.net).
GOLOMB_RULERS: dict[int, tuple[int, ...]] = {
    1: (0, 1),
    2: (0, 1, 4, 6),
    3: (0, 1, 4, 9, 15, 22, 32, 34),
    4: (0, 1, 4, 11, 26, 32, 56, 68, 76, 115, 117, 134, 150, 163, 168, 177),
}


@dataclass(frozen=True)
class QNNConfig:
    """Architecture of a data re-uploading circuit.

    Parameters
    ----------
    num_qubits : int
        ``n``, 1 to 10 (the dense simulation limit). The encoding is parallel: every qubit
        is rotated by the input in every encoding block.
    num_layers : int
        ``L``, the number of encoding blocks ``S(x)``; there are ``L + 1`` trainable blocks.
    encoding : {"z", "y", "x", "golomb"}
        Pauli axis of the encoding rotation ``exp(-i s x sigma / 2)``, or ``"golomb"``:
        one diagonal generator ``G = diag(g_0, ..., g_{2^r - 1})`` on the first ``r``
        qubits with the marks ``g`` of the optimal Golomb ruler :data:`GOLOMB_RULERS[r]`
        (``S(x) = exp(-i x G)``), whose frequency degeneracy is flat on ``1 .. B``
        (:func:`flat_band`).
    entangler : {"ring", "chain", "none"}
        CNOTs after each rotation layer when ``n > 1``: a ring ``CNOT(q, q+1 mod n)``
        (a single ``CNOT(0, 1)`` for ``n = 2``), an open chain, or none.
    observable : {"Z0", "Zmean"}
        ``Z`` on qubit 0, or the mean of ``Z`` over all qubits.
    scaling : {"constant", "exponential"}
        Encoding scale ``s = 1`` for every gate, or ``s = 3^j`` for the ``j``-th encoding
        gate (order: layer-major, then qubit), which makes every frequency up to
        ``(3^{nL} - 1) / 2`` reachable through few, non-degenerate paths. Only
        ``"constant"`` with ``encoding="golomb"``.
    encoded_qubits : int or None
        ``r``: the data enters qubits ``0 .. r - 1`` only (the rest are trainable
        ancillas); ``None`` means all qubits (at most 4 for ``"golomb"``).
    block_depth : int
        ``d``: each trainable block ``W_l`` is ``d`` repetitions of (Rot layer,
        entangler); 1 is the spec's circuit.

    Examples
    --------
    >>> cfg = QNNConfig(num_qubits=1, num_layers=3)
    >>> num_parameters(cfg), max_frequency(cfg)
    (12, 3)
    """

    num_qubits: int = 1
    num_layers: int = 8
    encoding: str = "z"
    entangler: str = "ring"
    observable: str = "Z0"
    scaling: str = "constant"
    encoded_qubits: int | None = None
    block_depth: int = 1

    def __post_init__(self) -> None:
        for name in ("num_qubits", "num_layers", "block_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 1 <= self.num_qubits <= MAX_QUBITS:
            raise ValueError(
                f"num_qubits must be in [1, {MAX_QUBITS}] (dense statevector limit), "
                f"got {self.num_qubits}"
            )
        if self.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {self.num_layers}")
        if not 1 <= self.block_depth <= MAX_BLOCK_DEPTH:
            raise ValueError(
                f"block_depth must be in [1, {MAX_BLOCK_DEPTH}], got {self.block_depth}"
            )
        r = self.encoded_qubits
        if r is not None:
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
                raise TypeError(f"encoded_qubits must be an int or None, got {type(r).__name__}")
            if not 1 <= r <= self.num_qubits:
                raise ValueError(
                    f"encoded_qubits must be in [1, num_qubits={self.num_qubits}], got {r}"
                )
        for name, valid in (
            ("encoding", ENCODINGS),
            ("entangler", ENTANGLERS),
            ("observable", OBSERVABLES),
            ("scaling", SCALINGS),
        ):
            if getattr(self, name) not in valid:
                raise ValueError(f"unknown {name} {getattr(self, name)!r}; valid: {valid}")
        if self.encoding == "golomb":
            if self.num_encoded > max(GOLOMB_RULERS):
                raise ValueError(
                    f"encoding='golomb' has rulers for up to {max(GOLOMB_RULERS)} encoded "
                    f"qubits, got encoded_qubits={self.num_encoded}; set encoded_qubits"
                )
            if self.scaling != "constant":
                raise ValueError("encoding='golomb' takes scaling='constant' only")
        if self.scaling == "exponential" and self.num_encoded * self.num_layers > 12:
            raise ValueError(
                "exponential scaling with encoded_qubits * num_layers > 12 gives frequencies "
                f"above 3^12 / 2; got {self.num_encoded * self.num_layers} encoding gates"
            )

    @property
    def num_encoded(self) -> int:
        """``r``, the number of qubits the data enters."""
        return self.num_qubits if self.encoded_qubits is None else int(self.encoded_qubits)


def _check_config(config) -> QNNConfig:
    if not isinstance(config, QNNConfig):
        raise TypeError(f"config must be a QNNConfig, got {type(config).__name__}")
    return config


def num_parameters(config: QNNConfig) -> int:
    """``P = 3 n d (L + 1)``: three Rot angles per qubit per layer of each trainable block.

    Parameters
    ----------
    config : QNNConfig
        The circuit (``n = num_qubits``, ``L = num_layers``, ``d = block_depth``).

    Returns
    -------
    int
        The number of trainable angles ``P``.

    Examples
    --------
    >>> num_parameters(QNNConfig(num_qubits=2, num_layers=3))
    24
    """
    _check_config(config)
    return 3 * config.num_qubits * config.block_depth * (config.num_layers + 1)


def encoding_scales(config: QNNConfig) -> np.ndarray:
    """Scale ``s`` of each encoding gate, shape ``(L, n)``.

    Parameters
    ----------
    config : QNNConfig
        The circuit; ``scaling`` is ``"constant"`` (``s = 1``) or exponential
        (``s = 3^g`` for encoding gate ``g = 0 .. rL - 1``).

    Returns
    -------
    ndarray, shape (L, n)
        The scales ``s``; 0 on qubits the data does not enter (``q >= r``) and for
        ``encoding="golomb"`` (whose generator is not a sum of single-qubit terms; see
        :func:`encoding_eigenvalues`).

    Examples
    --------
    >>> encoding_scales(QNNConfig(num_qubits=1, num_layers=3)).ravel().tolist()
    [1.0, 1.0, 1.0]
    """
    _check_config(config)
    n, L, r = config.num_qubits, config.num_layers, config.num_encoded
    out = np.zeros((L, n))
    if config.encoding == "golomb":
        return out
    if config.scaling == "constant":
        out[:, :r] = 1.0
    else:
        out[:, :r] = 3.0 ** np.arange(L * r).reshape(L, r)
    return out


def encoding_eigenvalues(config: QNNConfig) -> np.ndarray:
    """Eigenvalues of each encoding block's generator, shape ``(L, 2^n)``.

    ``S_l(x) = exp(-i x H_l)`` with ``H_l`` diagonal in the computational basis (after
    the basis change of ``"x"``/``"y"`` encodings, which leaves the spectrum unchanged):
    ``H_l = sum_q s_{lq} Z_q / 2`` for the Pauli encodings and ``G (x) I`` for
    ``"golomb"``. Basis index ``i`` has wire 0 as its most significant bit.

    Parameters
    ----------
    config : QNNConfig
        The circuit.

    Returns
    -------
    ndarray, shape (L, 2^n)
        ``lambda_{l, i}``: half-integers for the Pauli encodings, ruler marks for Golomb.

    Examples
    --------
    >>> encoding_eigenvalues(QNNConfig(num_qubits=2, num_layers=1, encoding="golomb")).tolist()
    [[0.0, 1.0, 4.0, 6.0]]
    """
    _check_config(config)
    n, L = config.num_qubits, config.num_layers
    if config.encoding == "golomb":
        r = config.num_encoded
        marks = np.asarray(GOLOMB_RULERS[r], dtype=float)
        eig = marks[np.arange(2**n) >> (n - r)]  # G (x) I_{2^(n-r)}
        return np.tile(eig, (L, 1))
    return 0.5 * encoding_scales(config) @ _z_signs(n)  # (L, n) @ (n, 2^n)


def golomb_pauli_terms(num_qubits: int) -> dict[tuple[int, ...], float]:
    """The Golomb generator ``G`` of ``r`` qubits as a sum of Pauli-``Z`` strings.

    ``G = sum_S w_S prod_{q in S} Z_q`` with ``w_S = 2^{-r} sum_i g_i prod_{q in S} z_q(i)``
    (the Walsh-Hadamard transform of the marks), so ``exp(-i x G)`` is a product of
    ``RZ(2 w_q x)`` rotations (rescaled single-qubit encodings) and multi-qubit ``ZZ``
    rotations (``qml.MultiRZ(2 w_S x)``), up to a global phase ``w_{()}``.

    Parameters
    ----------
    num_qubits : int
        ``r`` in ``1 .. 4`` (a key of :data:`GOLOMB_RULERS`).

    Returns
    -------
    dict
        ``{S: w_S}`` for the non-zero weights; ``S`` is a sorted tuple of wires (``()`` is
        the identity).

    Examples
    --------
    >>> golomb_pauli_terms(2)
    {(): 2.75, (0,): -2.25, (1,): -0.75, (0, 1): 0.25}
    """
    if isinstance(num_qubits, bool) or not isinstance(num_qubits, (int, np.integer)):
        raise TypeError(f"num_qubits must be an int, got {type(num_qubits).__name__}")
    if num_qubits not in GOLOMB_RULERS:
        raise ValueError(f"num_qubits must be one of {sorted(GOLOMB_RULERS)}, got {num_qubits}")
    r = int(num_qubits)
    g = np.asarray(GOLOMB_RULERS[r], dtype=float)
    signs = _z_signs(r)  # (r, 2^r)
    out: dict[tuple[int, ...], float] = {}
    for size in range(r + 1):
        for subset in itertools.combinations(range(r), size):
            chi = np.prod(signs[list(subset)], axis=0) if subset else np.ones(2**r)
            w = float(g @ chi) / 2**r
            if abs(w) > 1e-12:
                out[subset] = w
    return out


def path_counts(config: QNNConfig) -> dict[int, int]:
    """Number of encoding paths ("circuit terms") that produce each frequency.

    Write each encoding block as ``exp(-i x H_l)`` with eigenvalues ``lambda_{l, i}``
    (:func:`encoding_eigenvalues`). A term of ``f(x)`` picks one eigenvector index per block
    on the ket side and one on the bra side, and oscillates at
    ``omega = sum_l (lambda_{l, i_l} - lambda_{l, j_l})``; the count of ``omega`` is the
    coefficient of ``z^omega`` in ``prod_l |sum_i z^{lambda_{l, i}}|^2``. For the Pauli
    encodings each encoding gate contributes ``z^{-s} + 2 + z^{s}``, so constant scaling
    gives ``4^{L (n - r)} C(2rL, rL + omega)`` (binomial: low frequencies are fed by many
    more terms); one Golomb block gives ``4^{n - r}`` for every difference of two marks. The
    count is per architecture, before the observable's light cone: e.g. for two qubits with
    ``<Z_0>`` the last encoding of qubit 1 commutes through and the top frequency vanishes.

    Parameters
    ----------
    config : QNNConfig

    Returns
    -------
    dict
        ``{omega: count}`` for every ``omega = 0 .. max_frequency(config)`` with a
        non-zero count (exact integers).

    References
    ----------
    Schuld, Sweke, Meyer, "Effect of data encoding on the expressive power of variational
    quantum machine learning models", PRA 103, 032430 (2021).

    Examples
    --------
    >>> path_counts(QNNConfig(num_qubits=1, num_layers=2))
    {0: 6, 1: 4, 2: 1}
    >>> path_counts(QNNConfig(num_qubits=2, num_layers=1, encoding="golomb"))
    {0: 4, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
    """
    twice = np.rint(2 * encoding_eigenvalues(config)).astype(np.int64)  # (L, 2^n), 2 lambda
    twice -= twice.min(axis=1, keepdims=True)
    poly = np.ones(1, dtype=object)  # exact integers; index = 2 omega + offset
    for row in twice:
        hist = np.bincount(row).astype(object)  # multiplicity of each eigenvalue
        auto = np.convolve(hist, hist[::-1])  # |sum_i z^{2 lambda_i}|^2, lags -top .. top
        poly = np.convolve(poly, auto)
    centre = (len(poly) - 1) // 2
    counts = {}
    for lag in range(0, len(poly) - centre):
        c = int(poly[centre + lag])
        if c and lag % 2:
            raise AssertionError("eigenvalue differences must be integers")  # pragma: no cover
        if c or lag == 0:
            counts[lag // 2] = c
    return counts


def flat_band(config: QNNConfig) -> int:
    """Top ``B`` of the band ``1 .. B`` on which every frequency has the same path count.

    Parameters
    ----------
    config : QNNConfig

    Returns
    -------
    int
        The largest ``B`` with ``path_counts[1] == ... == path_counts[B] > 0`` (1 when
        already ``path_counts[2]`` differs; 0 when frequency 1 is absent).

    Examples
    --------
    >>> flat_band(QNNConfig(num_qubits=3, num_layers=1, encoding="golomb"))
    15
    >>> flat_band(QNNConfig(num_qubits=1, num_layers=8))
    1
    """
    pc = path_counts(config)
    first = pc.get(1, 0)
    if not first:
        return 0
    b = 1
    while pc.get(b + 1, 0) == first:
        b += 1
    return b


def max_frequency(config: QNNConfig) -> int:
    """Largest frequency of ``f``: ``sum_l (max_i lambda_{l,i} - min_i lambda_{l,i})``.

    ``rL`` for constant scaling, ``(3^{rL} - 1) / 2`` for exponential scaling and ``L`` times
    the ruler length for ``"golomb"``.

    Parameters
    ----------
    config : QNNConfig
        The circuit.

    Returns
    -------
    int
        The top of the frequency spectrum.

    Examples
    --------
    >>> max_frequency(QNNConfig(num_qubits=2, num_layers=3))
    6
    >>> max_frequency(QNNConfig(num_qubits=3, num_layers=1, encoding="golomb"))
    34
    """
    eig = encoding_eigenvalues(config)
    return round(float((eig.max(1) - eig.min(1)).sum()))


@lru_cache(maxsize=64)
def _z_signs(n: int) -> np.ndarray:
    """``(n, 2^n)`` eigenvalues ``+-1`` of ``Z_q`` on each basis state (wire 0 = MSB)."""
    idx = np.arange(2**n)
    return np.stack([1.0 - 2.0 * ((idx >> (n - 1 - q)) & 1) for q in range(n)])
