"""Circuit simulator tests for qnn_spectral: oracles, closed forms, properties, bad input."""

from __future__ import annotations

import itertools
import math
from math import comb

import numpy as np
import pytest
import torch

from neurips26.papers.qnn_spectral import (
    GOLOMB_RULERS,
    QNNConfig,
    ReuploadingQNN,
    encoding_eigenvalues,
    encoding_scales,
    flat_band,
    fourier_coefficients,
    golomb_pauli_terms,
    init_params,
    max_frequency,
    num_parameters,
    parameter_shift_gradient,
    path_counts,
    rot_matrix,
    simulate,
    simulate_numpy,
    single_qubit_closed_form,
)

# single-threaded, as the runner runs the paper (tests/conftest.py)
ONE_THREAD = True

CONFIGS = [
    QNNConfig(num_qubits=1, num_layers=3),
    QNNConfig(num_qubits=2, num_layers=2),
    QNNConfig(num_qubits=3, num_layers=2),
    QNNConfig(num_qubits=3, num_layers=2, entangler="chain", encoding="y", observable="Zmean"),
    QNNConfig(num_qubits=2, num_layers=2, encoding="x", entangler="none"),
    QNNConfig(num_qubits=1, num_layers=3, scaling="exponential"),
    QNNConfig(num_qubits=2, num_layers=1, encoding="golomb"),
    QNNConfig(num_qubits=4, num_layers=1, encoding="golomb", encoded_qubits=3, block_depth=2),
    QNNConfig(num_qubits=3, num_layers=2, encoding="golomb", encoded_qubits=2, entangler="chain"),
    QNNConfig(num_qubits=3, num_layers=2, encoded_qubits=1, block_depth=3),
    QNNConfig(num_qubits=4, num_layers=1),
]
FLAT = QNNConfig(num_qubits=4, num_layers=1, encoding="golomb", encoded_qubits=3, block_depth=2)


def test_shapes_and_module():
    cfg = QNNConfig(num_qubits=2, num_layers=3)
    assert num_parameters(cfg) == 3 * 2 * 4
    x = torch.linspace(0, 2 * math.pi, 11)
    out = simulate(init_params(cfg, seed=0), x, cfg)
    assert out.shape == (11,) and out.dtype == torch.float64
    model = ReuploadingQNN(cfg, seed=0)
    assert model.weights.shape == (4, 1, 2, 3)
    deep = QNNConfig(num_qubits=2, num_layers=3, block_depth=2)
    assert num_parameters(deep) == 48 and ReuploadingQNN(deep).weights.shape == (4, 2, 2, 3)
    torch.testing.assert_close(model(x), out)
    assert not torch.equal(ReuploadingQNN(cfg, seed=1)(x), out)


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_simulate_matches_dense_numpy_simulator(cfg):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2 * np.pi, 7)
    for _ in range(3):
        p = rng.uniform(0, 2 * np.pi, num_parameters(cfg))
        np.testing.assert_allclose(
            simulate(p, x, cfg).numpy(), simulate_numpy(p, x, cfg), atol=1e-12
        )


def _pennylane_qnode(cfg, qml, interface=None, diff_method="best"):
    n, L, d = cfg.num_qubits, cfg.num_layers, cfg.block_depth
    scales = encoding_scales(cfg)
    terms = golomb_pauli_terms(cfg.num_encoded) if cfg.encoding == "golomb" else {}
    dev = qml.device("default.qubit", wires=n)
    enc = {"z": qml.RZ, "y": qml.RY, "x": qml.RX, "golomb": None}[cfg.encoding]
    if n == 1 or cfg.entangler == "none":
        pairs = []
    elif cfg.entangler == "chain" or n == 2:
        pairs = [(q, q + 1) for q in range(n - 1)]
    else:
        pairs = [(q, (q + 1) % n) for q in range(n)]

    @qml.qnode(dev, interface=interface, diff_method=diff_method)
    def circuit(params, x):
        for layer in range(L + 1):
            for sub in range(d):
                for q in range(n):
                    base = 3 * ((layer * d + sub) * n + q)
                    qml.Rot(params[base], params[base + 1], params[base + 2], wires=q)
                for c, t in pairs:
                    qml.CNOT(wires=[c, t])
            if layer < L and cfg.encoding == "golomb":
                # exp(-i x G) from its Z-string decomposition (global phase dropped)
                for wires, w in terms.items():
                    if wires:
                        qml.MultiRZ(2 * w * x, wires=list(wires))
            elif layer < L:
                for q in range(n):
                    enc(float(scales[layer, q]) * x, wires=q)
        if cfg.observable == "Z0":
            return qml.expval(qml.PauliZ(0))
        return qml.expval(sum(qml.PauliZ(q) for q in range(n)) / n)

    return circuit


@pytest.mark.parametrize("cfg", CONFIGS[:10], ids=str)
def test_simulate_matches_pennylane_default_qubit(cfg):
    qml = pytest.importorskip("pennylane")
    circuit = _pennylane_qnode(cfg, qml)
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 2 * np.pi, 5)
    for _ in range(6):
        p = rng.uniform(0, 2 * np.pi, num_parameters(cfg))
        ref = np.asarray([circuit(p, xb) for xb in x])
        np.testing.assert_allclose(simulate(p, x, cfg).numpy(), ref, atol=1e-10)


def test_spectrum_is_band_limited_and_matches_pennylane_coefficients():
    qml = pytest.importorskip("pennylane")
    cfg = QNNConfig(num_qubits=3, num_layers=2)
    D = max_frequency(cfg)
    p = init_params(cfg, seed=3)
    c = fourier_coefficients(p, cfg, num_points=4 * D + 2)  # (4D + 2,), fft order
    freqs = np.fft.fftfreq(4 * D + 2, d=1 / (4 * D + 2))
    assert np.abs(c[np.abs(freqs) > D]).max() < 1e-12
    # The observable's light cone removes the top frequency here (the last encoding of one
    # qubit commutes with the measured Pauli string); frequency D - 1 is present.
    assert np.abs(c[np.abs(freqs) == D - 1]).max() > 1e-6
    circuit = _pennylane_qnode(cfg, qml)
    ref = qml.fourier.coefficients(lambda x: circuit(p.numpy(), x[0]), 1, D)
    np.testing.assert_allclose(fourier_coefficients(p, cfg), ref, atol=1e-10)


def test_single_qubit_reaches_its_top_frequency():
    cfg = QNNConfig(num_qubits=1, num_layers=3)
    c = fourier_coefficients(init_params(cfg, seed=0), cfg)
    assert len(c) == 7 and np.abs(c[3]) > 1e-6


def test_exponential_encoding_reaches_ternary_frequencies():
    cfg = QNNConfig(num_qubits=1, num_layers=2, scaling="exponential")
    assert max_frequency(cfg) == 4
    c = fourier_coefficients(init_params(cfg, seed=0), cfg)
    assert np.abs(c[4]) > 1e-6 and len(c) == 9


def test_closed_form_single_qubit_one_layer():
    cfg = QNNConfig(num_qubits=1, num_layers=1)
    x = torch.linspace(0, 2 * math.pi, 33, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        p = 2 * math.pi * torch.rand(6, generator=gen, dtype=torch.float64)
        a, b, c = single_qubit_closed_form(p)
        torch.testing.assert_close(
            simulate(p, x, cfg), a * torch.cos(x) + b * torch.sin(x) + c, atol=1e-12, rtol=0
        )


def test_rot_matrix_is_unitary_and_matches_pauli_product():
    rng = np.random.default_rng(0)
    ang = torch.as_tensor(rng.uniform(-7, 7, (50, 3)))
    U = rot_matrix(ang)  # (50, 2, 2)
    eye = torch.eye(2, dtype=torch.complex128).expand(50, 2, 2)
    torch.testing.assert_close(U.conj().transpose(-1, -2) @ U, eye, atol=1e-13, rtol=0)
    Y = np.array([[0, -1j], [1j, 0]])
    Z = np.diag([1.0, -1.0])

    def r(P, a):
        return np.cos(a / 2) * np.eye(2) - 1j * np.sin(a / 2) * P

    for (phi, th, om), u in zip(ang.numpy(), U.numpy(), strict=True):
        np.testing.assert_allclose(u, r(Z, om) @ r(Y, th) @ r(Z, phi), atol=1e-13)


def test_outputs_lie_in_unit_interval():
    x = torch.linspace(0, 2 * math.pi, 50)
    for seed, cfg in enumerate(CONFIGS):
        out = simulate(init_params(cfg, seed=seed), x, cfg)
        assert out.abs().max() <= 1 + 1e-12


def test_autograd_equals_parameter_shift():
    cfg = QNNConfig(num_qubits=2, num_layers=2)
    x = torch.linspace(0, 2 * math.pi, 6, dtype=torch.float64)
    for seed in range(10):
        p = init_params(cfg, seed=seed)
        auto = torch.func.jacrev(lambda q: simulate(q, x, cfg))(p)  # (B, P)
        torch.testing.assert_close(auto, parameter_shift_gradient(p, x, cfg), atol=1e-12, rtol=0)


def test_gradient_matches_pennylane_torch_parameter_shift():
    qml = pytest.importorskip("pennylane")
    cfg = QNNConfig(num_qubits=2, num_layers=1)
    circuit = _pennylane_qnode(cfg, qml, interface="torch", diff_method="parameter-shift")
    p = init_params(cfg, seed=5).requires_grad_(True)
    ref = circuit(p, 0.7)
    ref.backward()
    q = p.detach().clone().requires_grad_(True)
    out = simulate(q, torch.tensor([0.7], dtype=torch.float64), cfg)[0]
    out.backward()
    torch.testing.assert_close(out.detach(), ref.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(q.grad, p.grad, atol=1e-10, rtol=0)


@pytest.mark.parametrize("n,L", [(1, 1), (1, 8), (3, 3), (2, 4)])
def test_path_counts_are_binomial_for_constant_scaling(n, L):
    pc = path_counts(QNNConfig(num_qubits=n, num_layers=L))
    assert pc == {w: comb(2 * n * L, n * L + w) for w in range(n * L + 1)}


def _brute_counts(eigs):
    """Enumerate every (ket, bra) index sequence over the blocks; eigs: (L, D)."""
    counts: dict[int, int] = {}
    D = eigs.shape[1]
    for ket in itertools.product(range(D), repeat=eigs.shape[0]):
        for bra in itertools.product(range(D), repeat=eigs.shape[0]):
            w = sum(eigs[l, i] - eigs[l, j] for l, (i, j) in enumerate(zip(ket, bra, strict=True)))
            w = round(float(w))
            if w >= 0:
                counts[w] = counts.get(w, 0) + 1
    return dict(sorted(counts.items()))


def test_golomb_rulers_have_distinct_differences():
    for r, marks in GOLOMB_RULERS.items():
        assert len(marks) == 2**r and marks[0] == 0
        diffs = [b - a for a, b in itertools.combinations(marks, 2)]
        assert len(set(diffs)) == len(diffs)


def test_flat_circuit_degeneracy_is_equal_on_its_band_by_enumeration():
    # Issue 12: every frequency of the tested band (targets k = 1..6 and the probe's 8) has
    # the same number of paths, counted exactly; the circuit's spectrum extends beyond.
    marks = np.asarray(GOLOMB_RULERS[3], dtype=float)
    eigs = np.repeat(marks, 2)[None, :]  # G (x) I on 3 + 1 qubits, built independently
    brute = _brute_counts(eigs)
    assert path_counts(FLAT) == brute
    band = [brute[w] for w in range(1, 16)]
    assert band == [4] * 15 and flat_band(FLAT) == 15
    assert max_frequency(FLAT) == 34 > 8
    # The spec's circuit does not have this property: its count falls with k and its top
    # frequency 8 (the old probe) is fed by one path.
    spec = path_counts(QNNConfig(num_qubits=1, num_layers=8))
    assert spec[1] > spec[6] and spec[8] == 1 and flat_band(QNNConfig(num_layers=8)) == 1


def test_flat_circuit_spectrum_is_the_ruler_differences():
    cfg = QNNConfig(num_qubits=3, num_layers=1, encoding="golomb", block_depth=2)
    c = fourier_coefficients(init_params(cfg, seed=4), cfg, num_points=128)
    present = {b - a for a, b in itertools.combinations(GOLOMB_RULERS[3], 2)}
    for w in range(1, 64):
        if w not in present:
            assert abs(c[w]) < 1e-12, w
    assert sum(abs(c[w]) > 1e-6 for w in present) >= 20


def test_golomb_pauli_terms_rebuild_the_marks():
    for r in GOLOMB_RULERS:
        diag = np.zeros(2**r)
        idx = np.arange(2**r)
        for wires, w in golomb_pauli_terms(r).items():
            chi = np.ones(2**r)
            for q in wires:
                chi *= 1 - 2 * ((idx >> (r - 1 - q)) & 1)
            diag += w * chi
        np.testing.assert_allclose(diag, GOLOMB_RULERS[r], atol=1e-12)
    cfg = QNNConfig(num_qubits=3, num_layers=2, encoding="golomb", encoded_qubits=2)
    np.testing.assert_array_equal(
        encoding_eigenvalues(cfg), np.tile(np.repeat([0, 1, 4, 6], 2), (2, 1))
    )


def test_path_counts_with_ancillas_and_several_golomb_blocks():
    cfg = QNNConfig(num_qubits=3, num_layers=2, encoding="golomb", encoded_qubits=2)
    # one ancilla multiplies each block's (ket, bra) choices by 2 x 2 = 4
    register = _brute_counts(encoding_eigenvalues(cfg)[:, ::2])  # the 2 encoded qubits
    assert path_counts(cfg) == {w: 16 * c for w, c in register.items()}
    pauli = QNNConfig(num_qubits=2, num_layers=2, encoded_qubits=1)
    assert path_counts(pauli) == {w: 16 * comb(4, 2 + w) for w in range(3)}


def test_path_counts_by_brute_force_enumeration():
    cfg = QNNConfig(num_qubits=1, num_layers=3, scaling="exponential")
    s = encoding_scales(cfg).ravel()
    brute: dict[int, int] = {}
    for ket in itertools.product((-0.5, 0.5), repeat=len(s)):
        for bra in itertools.product((-0.5, 0.5), repeat=len(s)):
            w = round(float(np.dot(s, np.subtract(ket, bra))))
            if w >= 0:
                brute[w] = brute.get(w, 0) + 1
    assert path_counts(cfg) == dict(sorted(brute.items()))
    assert max(path_counts(cfg)) == 13


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(num_qubits=0), "num_qubits must be in"),
        (dict(num_qubits=11), "dense statevector"),
        (dict(num_layers=0), "num_layers must be >= 1"),
        (dict(encoding="w"), "unknown encoding"),
        (dict(observable="X0"), "unknown observable"),
        (dict(entangler="all"), "unknown entangler"),
        (dict(scaling="log"), "unknown scaling"),
        (dict(block_depth=0), "block_depth must be in"),
        (dict(num_qubits=2, encoded_qubits=3), "encoded_qubits must be in"),
        (dict(num_qubits=5, encoding="golomb"), "rulers for up to 4"),
        (dict(num_qubits=2, encoding="golomb", scaling="exponential"), "constant"),
    ],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        QNNConfig(**kwargs)


def test_bad_config_types_and_inputs():
    with pytest.raises(TypeError, match="num_layers must be an int"):
        QNNConfig(num_layers=2.0)
    with pytest.raises(TypeError, match="encoded_qubits must be an int"):
        QNNConfig(encoded_qubits=1.0)
    with pytest.raises(ValueError, match="num_qubits must be one of"):
        golomb_pauli_terms(5)
    with pytest.raises(TypeError, match="num_qubits must be an int"):
        golomb_pauli_terms("2")
    cfg = QNNConfig(num_qubits=1, num_layers=2)
    p = init_params(cfg)
    with pytest.raises(ValueError, match=r"params must have shape \(9,\)"):
        simulate(p[:-1], [0.1], cfg)
    with pytest.raises(ValueError, match="x contains NaN"):
        simulate(p, [0.1, float("nan")], cfg)
    with pytest.raises(ValueError, match="params contain NaN"):
        simulate(torch.full((9,), float("inf")), [0.1], cfg)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        simulate(p, np.zeros((2, 2)), cfg)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        simulate(p, [], cfg)
    with pytest.raises(TypeError, match="QNNConfig"):
        simulate(p, [0.1], {"num_qubits": 1})
    with pytest.raises(ValueError, match="closed form is for 1 qubit"):
        single_qubit_closed_form(np.zeros(9))
    with pytest.raises(ValueError, match="aliasing"):
        fourier_coefficients(p, cfg, num_points=3)


@pytest.mark.parametrize(
    "fn",
    [
        num_parameters,
        encoding_scales,
        encoding_eigenvalues,
        max_frequency,
        path_counts,
        flat_band,
        init_params,
    ],
)
def test_config_helpers_reject_non_configs(fn):
    with pytest.raises(TypeError, match="QNNConfig"):
        fn({"num_qubits": 1, "num_layers": 2})
