"""Data re-uploading quantum models as a batched torch statevector simulator.

The model of Schuld, Sweke and Meyer (2021) and Xu, Zhang and Yan (arXiv 2409.06682):
``U(x, theta) = W_L S(x) W_{L-1} ... S(x) W_0`` acting on ``|0...0>``, where each
trainable block ``W_l`` is ``d`` layers of general single-qubit rotations
``Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi)``, each followed by an entangler (a
CNOT ring when ``n > 1``), and each encoding block ``S(x) = exp(-i x H)`` is given by the
architecture (:class:`QNNConfig`, :mod:`.encoding`): Pauli rotations by ``s x`` or a
Golomb-ruler diagonal generator. The output ``f(x) = <0| U^dag O U |0>`` is a real
trigonometric polynomial whose frequencies are the differences of the encoding
eigenvalues (:func:`path_counts`).

The simulator keeps the whole batch of inputs as one ``(B, 2^n)`` complex128 state tensor,
so autograd, :func:`torch.func.jacrev` (the QNTK) and plain Adam loops are fast for the
1-5 qubit circuits used here. :func:`simulate_numpy` is an independent dense
matrix-product implementation used as an oracle; PennyLane ``default.qubit`` is the
second oracle in the tests (it is never imported here).

Deviations from the paper
-------------------------
- The circuit family (Rot layers + CNOT ring, parallel encoding, ``<Z_0>``) and the
  uniform initialisation of the angles follow the spec; the paper's exact ansatz is not
  given in the abstract.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from neurips26.common.validation import check_array

from .encoding import (
    GOLOMB_RULERS,
    QNNConfig,
    _z_signs,
    encoding_eigenvalues,
    encoding_scales,
    num_parameters,
)

_DEFAULT = QNNConfig()

__all__ = [
    "ReuploadingQNN",
    "init_params",
    "parameter_shift_gradient",
    "rot_matrix",
    "simulate",
    "simulate_numpy",
    "single_qubit_closed_form",
]


def rot_matrix(angles: torch.Tensor) -> torch.Tensor:
    """``Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi)`` for a batch of angles.

    Parameters
    ----------
    angles : Tensor, shape (..., 3)
        ``(phi, theta, omega)`` (PennyLane's ``qml.Rot`` convention).

    Returns
    -------
    Tensor, shape (..., 2, 2), complex128
    """
    phi, theta, omega = angles.to(torch.float64).unbind(-1)
    c, s = torch.cos(theta / 2), torch.sin(theta / 2)
    e_pp = torch.polar(torch.ones_like(phi), -(phi + omega) / 2)  # e^{-i(phi+omega)/2}
    e_pm = torch.polar(torch.ones_like(phi), (phi - omega) / 2)  # e^{i(phi-omega)/2}
    row0 = torch.stack([e_pp * c, -e_pm * s], -1)
    row1 = torch.stack([e_pm.conj() * s, e_pp.conj() * c], -1)
    return torch.stack([row0, row1], -2)  # (..., 2, 2)


@lru_cache(maxsize=64)
def _entangler_permutation(n: int, kind: str) -> tuple[int, ...] | None:
    """Basis permutation ``perm`` with ``(CNOTs psi)[i] = psi[perm[i]]`` (wire 0 = MSB)."""
    if n == 1 or kind == "none":
        return None
    if kind == "chain" or n == 2:
        pairs = [(q, q + 1) for q in range(n - 1)]
    else:
        pairs = [(q, (q + 1) % n) for q in range(n)]
    ar = np.arange(2**n)
    perm = ar.copy()
    for c, t in pairs:  # apply CNOTs in order: new[i] = old[i ^ (bit_t if bit_c)]
        flip = ((ar >> (n - 1 - c)) & 1) << (n - 1 - t)
        perm = perm[ar ^ flip]
    return tuple(int(i) for i in perm)


def _as_float_tensor(value, name: str) -> torch.Tensor:
    """A float64 tensor (gradients kept); ``None``, strings and object arrays are refused."""
    if not isinstance(value, torch.Tensor):
        check_array(value, name, dtype=None, finite=False, min_size=0)
    return torch.as_tensor(value, dtype=torch.float64)


def _check_inputs(params, x, config: QNNConfig) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(config, QNNConfig):
        raise TypeError(f"config must be a QNNConfig, got {type(config).__name__}")
    params = _as_float_tensor(params, "params")
    x = _as_float_tensor(x, "x")
    P = num_parameters(config)
    if params.shape != (P,):
        raise ValueError(
            f"params must have shape ({P},) = 3 * num_qubits * (num_layers + 1), "
            f"got {tuple(params.shape)}"
        )
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty 1-D array of inputs, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(params).all()):
        raise ValueError("params contain NaN or inf")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    return params, x


def _apply_1q(state: torch.Tensor, gate: torch.Tensor, q: int, n: int) -> torch.Tensor:
    """Apply a 2x2 gate (shared ``(2, 2)`` or per-sample ``(B, 2, 2)``) to qubit ``q``."""
    B = state.shape[0]
    s = state.reshape(B, 2**q, 2, 2 ** (n - q - 1))  # (B, left, 2, right)
    if gate.ndim == 2:
        out = torch.einsum("ij,bajc->baic", gate, s)
    else:
        out = torch.einsum("bij,bajc->baic", gate, s)
    return out.reshape(B, 2**n)


def simulate(params, x, config: QNNConfig) -> torch.Tensor:
    """Model output ``f(x; theta) = <0| U^dag O U |0>`` for a batch of inputs.

    Parameters
    ----------
    params : Tensor or array, shape (P,)
        ``theta``, the Rot angles laid out as ``(L + 1, d, n, 3)`` (block, layer within
        the block, qubit, ``(phi, theta, omega)``) and flattened; ``P = 3 n d (L + 1)``.
    x : Tensor or array, shape (B,)
        Inputs (radians).
    config : QNNConfig

    Returns
    -------
    Tensor, shape (B,), float64
        Differentiable in ``params`` (autograd, ``torch.func``).

    Examples
    --------
    >>> cfg = QNNConfig(num_qubits=2, num_layers=2)
    >>> f = simulate(init_params(cfg, seed=0), torch.linspace(0, 6.28, 5), cfg)
    >>> f.shape
    torch.Size([5])
    """
    params, x = _check_inputs(params, x, config)
    n, L, d = config.num_qubits, config.num_layers, config.block_depth
    B, D = x.shape[0], 2**n
    gates = rot_matrix(params.reshape(L + 1, d, n, 3))  # (L+1, d, n, 2, 2)
    perm = _entangler_permutation(n, config.entangler)
    perm_t = None if perm is None else torch.tensor(perm)
    signs = torch.as_tensor(_z_signs(n))  # (n, D)
    scales = torch.as_tensor(encoding_scales(config))  # (L, n)
    eigs = torch.as_tensor(encoding_eigenvalues(config))  # (L, D)
    state = torch.zeros(B, D, dtype=torch.complex128)
    state[:, 0] = 1.0  # |0...0>, (B, D)
    for layer in range(L + 1):
        for sub in range(d):  # W_l = d x (Rot (x) ... (x) Rot, then the entangler)
            W = gates[layer, sub, 0]
            for q in range(1, n):  # wire 0 most significant
                W = torch.kron(W, gates[layer, sub, q])
            state = state @ W.T  # (B, D)
            if perm_t is not None:
                state = state[:, perm_t]
        if layer == L:
            break
        if config.encoding in ("z", "golomb"):  # S(x) = exp(-i x H_l), H_l diagonal
            state = state * torch.polar(
                torch.ones(B, D, dtype=torch.float64), -x[:, None] * eigs[layer][None, :]
            )
        else:
            for q in range(config.num_encoded):
                ang = scales[layer, q] * x  # (B,)
                zeros = torch.zeros_like(ang)
                if config.encoding == "y":  # RY(a) = [[c, -s], [s, c]]
                    enc = rot_matrix(torch.stack([zeros, ang, zeros], -1))
                else:  # RX(a) = RZ(-pi/2) RY(a) RZ(pi/2)
                    half = torch.full_like(ang, math.pi / 2)
                    enc = rot_matrix(torch.stack([half, ang, -half], -1))
                state = _apply_1q(state, enc, q, n)  # (B, D)
    probs = state.real**2 + state.imag**2  # (B, D)
    if config.observable == "Z0":
        return probs @ signs[0]
    return probs @ signs.mean(0)


def simulate_numpy(params, x, config: QNNConfig) -> np.ndarray:
    """Independent reference: dense ``2^n x 2^n`` matrix products, one input at a time.

    Builds every gate as a full matrix with Kronecker products and multiplies the circuit
    out; slow, but it shares no code with :func:`simulate` (used as a test oracle).

    Parameters
    ----------
    params : array, shape (P,)
    x : array, shape (B,)
    config : QNNConfig

    Returns
    -------
    ndarray, shape (B,)
    """
    params, x = (t.numpy() for t in _check_inputs(params, x, config))
    n, L, d = config.num_qubits, config.num_layers, config.block_depth
    I2 = np.eye(2)
    X = np.array([[0, 1], [1, 0]], dtype=complex)
    Y = np.array([[0, -1j], [1j, 0]])
    Z = np.diag([1.0, -1.0]).astype(complex)
    P0, P1 = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])

    def on(q, g):
        mats = [g if k == q else I2 for k in range(n)]
        out = mats[0]
        for m in mats[1:]:
            out = np.kron(out, m)
        return out

    def cnot(c, t):
        return on(c, P0) + _kron_two(n, c, P1, t, X)

    def pauli_rot(P, a):
        return math.cos(a / 2) * np.eye(2) - 1j * math.sin(a / 2) * P

    if n == 1 or config.entangler == "none":
        pairs = []
    elif config.entangler == "chain" or n == 2:
        pairs = [(q, q + 1) for q in range(n - 1)]
    else:
        pairs = [(q, (q + 1) % n) for q in range(n)]
    ang = params.reshape(L + 1, d, n, 3)
    scales = encoding_scales(config)
    r = config.num_encoded
    axis = {"z": Z, "y": Y, "x": X, "golomb": None}[config.encoding]
    if config.observable == "Z0":
        obs = on(0, Z)
    else:
        obs = sum(on(q, Z) for q in range(n)) / n
    out = np.empty(len(x))
    for b, xb in enumerate(x):
        U = np.eye(2**n, dtype=complex)
        for layer in range(L + 1):
            for sub in range(d):
                for q in range(n):
                    phi, th, om = ang[layer, sub, q]
                    rot = pauli_rot(Z, om) @ pauli_rot(Y, th) @ pauli_rot(Z, phi)
                    U = on(q, rot) @ U
                for c, t in pairs:
                    U = cnot(c, t) @ U
            if layer < L and config.encoding == "golomb":  # exp(-i x G) (x) I
                marks = np.asarray(GOLOMB_RULERS[r], dtype=float)
                U = np.kron(np.diag(np.exp(-1j * xb * marks)), np.eye(2 ** (n - r))) @ U
            elif layer < L:
                for q in range(n):
                    U = on(q, pauli_rot(axis, scales[layer, q] * xb)) @ U
        psi = U[:, 0]
        out[b] = float(np.real(psi.conj() @ obs @ psi))
    return out


def _kron_two(n, q1, g1, q2, g2):
    out = np.ones((1, 1))
    for k in range(n):
        out = np.kron(out, g1 if k == q1 else g2 if k == q2 else np.eye(2))
    return out


def init_params(config: QNNConfig, *, seed: int = 0) -> torch.Tensor:
    """Angles drawn uniformly from ``[0, 2 pi)`` with a ``torch.Generator``, shape ``(P,)``.

    Parameters
    ----------
    config : QNNConfig
        The circuit.
    seed : int
        Seed of the ``torch.Generator`` (global torch state is not touched).

    Returns
    -------
    torch.Tensor, shape (P,), float64
        The initial angles ``theta``.
    """
    gen = torch.Generator().manual_seed(int(seed))
    return 2 * math.pi * torch.rand(num_parameters(config), generator=gen, dtype=torch.float64)


def single_qubit_closed_form(params) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Closed form of the one-qubit, one-layer model: ``f(x) = a cos x + b sin x + c``.

    With ``W_0 = Rot(phi_0, theta_0, omega_0)`` the Bloch vector after ``W_0`` is
    ``v = (sin theta_0 cos omega_0, sin theta_0 sin omega_0, cos theta_0)``; the encoding
    ``RZ(x)`` rotates it by ``x`` about ``z``; measuring ``Z`` after
    ``W_1 = Rot(phi_1, theta_1, omega_1)`` is measuring along
    ``m = (-sin theta_1 cos phi_1, sin theta_1 sin phi_1, cos theta_1)``. Hence
    ``a = m_x v_x + m_y v_y``, ``b = m_y v_x - m_x v_y``, ``c = m_z v_z``.

    Parameters
    ----------
    params : Tensor or array, shape (6,)
        ``(phi_0, theta_0, omega_0, phi_1, theta_1, omega_1)``.

    Returns
    -------
    a, b, c : Tensor
        Scalars, differentiable in ``params``.
    """
    p = torch.as_tensor(params, dtype=torch.float64)
    if p.shape != (6,):
        raise ValueError(
            f"the closed form is for 1 qubit, L = 1: params shape (6,), got {tuple(p.shape)}"
        )
    _, t0, w0, f1, t1, _ = p.unbind()
    v = (torch.sin(t0) * torch.cos(w0), torch.sin(t0) * torch.sin(w0), torch.cos(t0))
    m = (-torch.sin(t1) * torch.cos(f1), torch.sin(t1) * torch.sin(f1), torch.cos(t1))
    a = m[0] * v[0] + m[1] * v[1]
    b = m[1] * v[0] - m[0] * v[1]
    c = m[2] * v[2]
    return a, b, c


def parameter_shift_gradient(params, x, config: QNNConfig) -> torch.Tensor:
    """Gradient ``df(x)/d theta_p`` by the two-term parameter-shift rule.

    Every angle enters through one Pauli rotation ``exp(-i theta P / 2)``, so
    ``df/d theta_p = [f(theta + pi/2 e_p) - f(theta - pi/2 e_p)] / 2`` exactly.

    Parameters
    ----------
    params : array, shape (P,)
    x : array, shape (B,)
    config : QNNConfig

    Returns
    -------
    Tensor, shape (B, P)

    References
    ----------
    Mitarai et al., PRA 98, 032309 (2018); Schuld et al., PRA 99, 032331 (2019).
    """
    params, x = _check_inputs(params, x, config)
    P = params.shape[0]
    shifts = (math.pi / 2) * torch.eye(P, dtype=torch.float64)  # (P, P)
    cols = []
    with torch.no_grad():
        for p in range(P):
            plus = simulate(params + shifts[p], x, config)
            minus = simulate(params - shifts[p], x, config)
            cols.append((plus - minus) / 2)
    return torch.stack(cols, -1)  # (B, P)


class ReuploadingQNN(nn.Module):
    """A data re-uploading circuit as a ``torch.nn.Module``.

    Parameters
    ----------
    config : QNNConfig
        Architecture.
    seed : int
        Seed of the ``torch.Generator`` for the initial angles (uniform in ``[0, 2 pi)``).

    Attributes
    ----------
    weights : nn.Parameter, shape (L + 1, d, n, 3)
        The Rot angles ``theta`` (``d = block_depth``).

    Examples
    --------
    >>> model = ReuploadingQNN(QNNConfig(num_qubits=1, num_layers=2), seed=0)
    >>> model(torch.zeros(4)).shape
    torch.Size([4])
    """

    def __init__(self, config: QNNConfig = _DEFAULT, *, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(config, QNNConfig):
            raise TypeError(f"config must be a QNNConfig, got {type(config).__name__}")
        self.config = config
        shape = (config.num_layers + 1, config.block_depth, config.num_qubits, 3)
        self.weights = nn.Parameter(init_params(config, seed=seed).reshape(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``f(x)``, shape ``(B,)`` for ``x`` of shape ``(B,)``."""
        return simulate(self.weights.reshape(-1), x, self.config)
