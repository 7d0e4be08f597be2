"""Reference outputs of the SKF before the issue-13 speed-up (regression fixture).

Run once on commit 5504ed2 (before the speed-up), with ``OMP_NUM_THREADS=1``:
``python make_skf_reference.py skf_reference_v1.npz``. ``cases()`` is also what the
test re-runs on the current code.
"""

import sys

import numpy as np

from neurips26.papers.score_kalman import (
    ScoreKalmanFilter,
    coupled_duffing,
    full_basis,
    linear_gaussian,
    oscillator_basis,
)


def _duffing(N, steps, sigma, obs_noise, bench_seed, rng_seed):
    b = coupled_duffing(num_nodes=N, sigma=sigma, obs_noise=obs_noise, seed=bench_seed)
    _, ys = b.simulate(steps, np.random.default_rng(rng_seed))
    skf = ScoreKalmanFilter(basis=oscillator_basis(2 * N), model=b.model, H=b.H, R=b.R,
                            dt=b.dt, num_substeps=2)
    return skf.filter(ys, init_moments=b.prior.moments(skf.moment_exponents))


def cases():
    for N, steps in ((1, 12), (2, 12), (4, 4)):
        yield f"duffing_n{2 * N}", _duffing(N, steps, 0.1, 0.1, 3, 100 + N)
    # broad observations: non-Gaussian beliefs and the fallback
    yield "duffing_broad_n4", _duffing(2, 12, 0.3, 0.5, 4, 7)
    rng = np.random.default_rng(1)
    F = np.array([[0.9, 0.2], [-0.1, 0.8]])
    Q = np.array([[0.1, 0.02], [0.02, 0.05]])
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=linear_gaussian(F, Q),
                            H=np.array([[1.0, 0.5]]), R=np.array([[0.2]]), dt=1.0)
    yield "linear_full2", skf.filter(rng.standard_normal((10, 1)), np.array([0.3, -0.2]),
                                     np.eye(2))


def main(path):
    out = {}
    for name, r in cases():
        for f in ("means", "covs", "theta", "cond", "regularised", "truncation_gap"):
            out[f"{name}/{f}"] = np.asarray(getattr(r, f))
    np.savez_compressed(path, **out)


if __name__ == "__main__":
    main(sys.argv[1])
