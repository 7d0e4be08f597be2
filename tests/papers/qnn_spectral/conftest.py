"""qnn_spectral's tests run single-threaded, as the runner runs the paper (Resources(cpus=1)).

The models are tiny (a few qubits, 2 x 64 MLPs on 72 points): torch's intra-op pool only
adds synchronisation to every operation, which on a shared machine made the module's
trainings many times slower.
"""

import pytest
import torch  # noqa: F401  (imported first, so limit_threads sets torch's pool too)

from neurips26.common.threads import limit_threads


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with limit_threads(1):
        yield
