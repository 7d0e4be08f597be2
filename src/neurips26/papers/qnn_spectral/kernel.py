"""The Fourier-projected (quantum) neural tangent kernel, its linearised dynamics, and MLPs.

Under gradient descent with step ``eta`` on the mean squared error the linearised residual
obeys ``r_{t+1} = (I - (2 eta / N) K) r_t`` with the tangent kernel ``K = J J^T``; in the
unitary Fourier basis ``Phi`` this reads ``r_hat_{t+1} = (I - (2 eta / N) K_hat) r_hat_t``
with ``K_hat = Phi K Phi^H`` (:func:`qntk`, :func:`linearized_spectrum`), so the diagonal of
``K_hat`` is the predicted per-frequency learning rate (the decay ``q_k = 1 - 2 eta
K_hat[k, k] / N`` of :func:`share_time_linear`). :class:`MLP` is the classical baseline.

Deviations from the paper
-------------------------
- The spec writes the linearised step as ``I - lr K_hat``; with the mean-squared-error loss
  the exact factor is ``2 lr / N``, which we use.
- The MLP baseline takes ``x / pi - 1`` (spec); its NTK is projected with the same DFT,
  although the MLP is not periodic on ``[0, 2 pi)``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .dynamics import _finite_1d, residual_spectrum

__all__ = ["ACTIVATIONS", "MLP", "QNTK", "linearized_spectrum", "qntk"]

ACTIVATIONS = ("tanh", "relu")


class MLP(nn.Module):
    """Classical baseline: a fully connected network on ``x / pi - 1`` (or Fourier features).

    Parameters
    ----------
    hidden : tuple of int
        Hidden widths; the spec's baseline is ``(64, 64)`` (4,353 parameters).
    activation : {"tanh", "relu"}
    fourier_features : int
        ``m > 0`` replaces the input by ``(cos jx, sin jx)_{j=1..m}`` (context only: this
        removes the spectral bias the comparison is about).
    seed : int
        Seed of the ``torch.Generator`` for PyTorch's default ``U(-1/sqrt(fan_in), ...)``
        initialisation.

    Examples
    --------
    >>> MLP(hidden=(64, 64), seed=0)(torch.zeros(3)).shape
    torch.Size([3])
    """

    def __init__(
        self, *, hidden=(64, 64), activation: str = "tanh", fourier_features: int = 0, seed: int = 0
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; valid: {ACTIVATIONS}")
        hidden = tuple(int(h) for h in hidden)
        if not hidden or min(hidden) < 1:
            raise ValueError(f"hidden must be a non-empty tuple of positive widths, got {hidden}")
        if int(fourier_features) < 0:
            raise ValueError(f"fourier_features must be >= 0, got {fourier_features}")
        self.fourier_features = int(fourier_features)
        self.activation = activation
        widths = (2 * self.fourier_features or 1, *hidden, 1)
        gen = torch.Generator().manual_seed(int(seed))
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(widths)):
            lin = nn.Linear(a, b, dtype=torch.float64)
            bound = 1 / math.sqrt(a)
            with torch.no_grad():
                lin.weight.uniform_(-bound, bound, generator=gen)
                lin.bias.uniform_(-bound, bound, generator=gen)
            layers.append(lin)
            if i < len(widths) - 2:
                layers.append(nn.Tanh() if activation == "tanh" else nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``f(x)``, shape ``(B,)`` for ``x`` of shape ``(B,)``."""
        dtype = next(self.net.parameters()).dtype  # float64 unless the user casts the model
        x = x.to(dtype)
        if self.fourier_features:
            j = torch.arange(1, self.fourier_features + 1, dtype=dtype)
            feats = torch.cat([torch.cos(x[:, None] * j), torch.sin(x[:, None] * j)], -1)
        else:
            feats = (x / math.pi - 1)[:, None]  # (B, 1), inputs in [-1, 1)
        return self.net(feats).squeeze(-1)


@dataclass(frozen=True)
class QNTK:
    """The (quantum) neural tangent kernel on a grid and its Fourier projection.

    Attributes
    ----------
    jacobian : ndarray, shape (N, P)
        ``J_{np} = d f(x_n) / d theta_p``.
    K : ndarray, shape (N, N)
        ``K = J J^T`` (symmetric PSD).
    K_hat : ndarray, shape (N, N), complex
        ``Phi K Phi^H`` with the unitary DFT ``Phi_{kn} = exp(-2 pi i k n / N) / sqrt(N)``
        (Hermitian).
    diag_by_frequency : ndarray, shape (N // 2 + 1,)
        ``Re K_hat[k, k]`` for ``k = 0 .. N // 2``: the per-frequency kernel strength.
    """

    jacobian: np.ndarray
    K: np.ndarray
    K_hat: np.ndarray
    diag_by_frequency: np.ndarray


def qntk(model: nn.Module, x) -> QNTK:
    """Tangent kernel of ``model`` at its current parameters, projected on Fourier modes.

    Parameters
    ----------
    model : nn.Module
        Maps ``(B,)`` to ``(B,)``.
    x : Tensor, shape (N,)
        The equispaced grid :func:`training_grid` (the Fourier projection assumes it).

    Returns
    -------
    QNTK

    References
    ----------
    Jacot, Gabriel, Hongler, "Neural tangent kernel", NeurIPS 2018; Xu, Zhang, Yan,
    arXiv 2409.06682 (QNTK in the frequency domain).

    Examples
    --------
    >>> from neurips26.papers.qnn_spectral import QNNConfig, ReuploadingQNN, training_grid
    >>> k = qntk(ReuploadingQNN(QNNConfig(num_layers=2)), training_grid(16))
    >>> k.K.shape, k.diag_by_frequency.shape
    ((16, 16), (9,))
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = torch.as_tensor(x, dtype=torch.float64)
    if x.ndim != 1 or x.shape[0] < 2 or not bool(torch.isfinite(x).all()):
        raise ValueError(f"x must be a finite 1-D grid of at least 2 points, got {tuple(x.shape)}")
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}

    def f(p):
        return torch.func.functional_call(model, p, (x,))

    jac = torch.func.jacrev(f)(params)  # {name: (N, *shape)}
    N = x.shape[0]
    J = torch.cat([jac[n].reshape(N, -1) for n in names], 1).numpy()  # (N, P)
    K = J @ J.T  # (N, N)
    n = np.arange(N)
    Phi = np.exp(-2j * np.pi * np.outer(n, n) / N) / math.sqrt(N)  # (N, N) unitary DFT
    K_hat = Phi @ K @ Phi.conj().T
    return QNTK(jacobian=J, K=K, K_hat=K_hat, diag_by_frequency=K_hat.diagonal().real[: N // 2 + 1])


def linearized_spectrum(
    kernel: QNTK, residual0, *, lr: float, steps: int, num_frequencies: int
) -> np.ndarray:
    """Residual spectrum predicted by the linearised gradient-descent dynamics.

    ``r_hat_{t+1} = (I - (2 eta / N) K_hat) r_hat_t`` (the factor ``2 / N`` comes from the
    mean-squared-error loss), mapped back with ``Phi^H`` and summarised by
    :func:`residual_spectrum`.

    Parameters
    ----------
    kernel : QNTK
        At initialisation, on the training grid.
    residual0 : array, shape (N,)
        ``r_0 = f_0 - g`` on the grid.
    lr : float
        ``eta``, the gradient-descent step.
    steps : int
        Number of steps ``T``.
    num_frequencies : int
        ``K``.

    Returns
    -------
    ndarray, shape (T + 1, K + 1)
        Predicted ``R_k(t)``.
    """
    r0 = _finite_1d("residual0", residual0)
    N = kernel.K.shape[0]
    if r0.shape != (N,):
        raise ValueError(f"residual0 must have shape ({N},), got {r0.shape}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr}")
    n = np.arange(N)
    Phi = np.exp(-2j * np.pi * np.outer(n, n) / N) / math.sqrt(N)
    M = np.eye(N) - (2 * lr / N) * kernel.K_hat  # Eq.: linearised step in Fourier space
    r_hat = Phi @ r0  # (N,)
    out = []
    for _ in range(int(steps) + 1):
        out.append((Phi.conj().T @ r_hat).real)
        r_hat = M @ r_hat
    return residual_spectrum(np.asarray(out), num_frequencies)  # (T+1, K+1)
