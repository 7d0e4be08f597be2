"""qnn_spectral: amplitude-ordered learning of Fourier components in quantum neural networks.

Data re-uploading circuits (:class:`ReuploadingQNN`, simulated by :func:`simulate` as a
batched torch statevector) are trained on Fourier targets (:func:`fourier_target`) while the
residual spectrum is tracked (:func:`spectral_training`); :func:`ordering_stats` measures
whether components are learned in order of amplitude or of frequency, :func:`qntk` gives the
tangent kernel projected on Fourier modes, and :func:`path_counts` the number of circuit
terms feeding each frequency. ``QNNConfig(encoding="golomb")`` is a degeneracy-flat circuit
(every frequency of the band :func:`flat_band` has the same path count); learning times are
amplitude-sensitive (``SpectralTrace.tau_share``, :func:`share_time_linear`). :class:`MLP`
is the classical baseline.
"""

from .circuit import (
    ReuploadingQNN,
    init_params,
    parameter_shift_gradient,
    rot_matrix,
    simulate,
    simulate_numpy,
    single_qubit_closed_form,
)
from .dynamics import (
    LEARNING_TIMES,
    PROFILES,
    FourierTarget,
    OrderingStats,
    SpectralTrace,
    amplitude_profile,
    fourier_coefficients,
    fourier_target,
    ordering_stats,
    partial_spearman,
    residual_spectrum,
    share_time_linear,
    spectral_training,
    training_grid,
)
from .encoding import (
    ENCODINGS,
    ENTANGLERS,
    GOLOMB_RULERS,
    OBSERVABLES,
    SCALINGS,
    QNNConfig,
    encoding_eigenvalues,
    encoding_scales,
    flat_band,
    golomb_pauli_terms,
    max_frequency,
    num_parameters,
    path_counts,
)
from .kernel import ACTIVATIONS, MLP, QNTK, linearized_spectrum, qntk

__all__ = [
    "ACTIVATIONS",
    "ENCODINGS",
    "ENTANGLERS",
    "GOLOMB_RULERS",
    "LEARNING_TIMES",
    "MLP",
    "OBSERVABLES",
    "PROFILES",
    "QNTK",
    "SCALINGS",
    "FourierTarget",
    "OrderingStats",
    "QNNConfig",
    "ReuploadingQNN",
    "SpectralTrace",
    "amplitude_profile",
    "encoding_eigenvalues",
    "encoding_scales",
    "flat_band",
    "fourier_coefficients",
    "fourier_target",
    "golomb_pauli_terms",
    "init_params",
    "linearized_spectrum",
    "max_frequency",
    "num_parameters",
    "ordering_stats",
    "parameter_shift_gradient",
    "partial_spearman",
    "path_counts",
    "qntk",
    "residual_spectrum",
    "rot_matrix",
    "share_time_linear",
    "simulate",
    "simulate_numpy",
    "single_qubit_closed_form",
    "spectral_training",
    "training_grid",
]
