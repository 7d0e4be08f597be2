"""Baselines that ADIS-Law is compared with.

- :class:`DecoupledLaw`: the target loss as a power law in domain tokens alone
  (``L_T = E + B (D + D0)^(-beta)``, ``D`` = domain sequences seen, in batch units),
  without the learning rate or the pre-training length; the general loss is the base
  trajectory (an LR-annealing law fitted to the base run only), i.e. no forgetting.
- :class:`AdditiveRegression`: ordinary least squares of the final losses on
  ``(lambda, r, eta / eta_0)`` and their logs.
- :class:`NearestConfiguration`: the final losses of the closest training policy in
  standardised ``(lambda, r, log eta)``.

The last two see only policies and final losses, not the budget: they cannot tell a
budget of ``2S`` from one of ``S``, which is the point of comparing with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import optimize
from sklearn.base import BaseEstimator

from ._checks import check_array, check_real
from .law import LawPrediction, Trajectory, _as_trajectories
from .schedule import InjectionPolicy, schedule_features

__all__ = ["AdditiveRegression", "DecoupledLaw", "NearestConfiguration"]


def _policies(name: str, policies) -> list[InjectionPolicy]:
    try:
        policies = list(policies)
    except TypeError as err:
        raise TypeError(f"{name} must be a sequence of InjectionPolicy") from err
    if not policies:
        raise ValueError(f"{name} must hold at least one InjectionPolicy")
    for p in policies:
        if not isinstance(p, InjectionPolicy):
            raise TypeError(f"{name} must hold InjectionPolicy objects, got {type(p).__name__}")
    return policies


def _targets(name: str, y, n: int) -> np.ndarray:
    y = check_array(name, y, ndim=2 if np.ndim(y) == 2 else 1)
    if y.shape[0] != n:
        raise ValueError(f"{name} has {y.shape[0]} rows, policies {n}")
    return y.reshape(n, -1)


def _design(policies: Sequence[InjectionPolicy], lr_ref: float) -> np.ndarray:
    lam = np.array([p.fraction for p in policies])
    r = np.array([p.mix_ratio for p in policies])
    eta = np.array([p.peak_lr for p in policies]) / lr_ref
    tiny = 1e-6
    return np.column_stack([np.ones_like(lam), lam, r, eta, np.log(lam), np.log(r + tiny),
                            np.log(eta)])


class AdditiveRegression(BaseEstimator):
    """Final losses regressed additively on ``(lambda, r, eta)`` and their logs.

    Parameters
    ----------
    lr_ref : float
        ``eta`` is divided by it.

    Examples
    --------
    >>> pols = [InjectionPolicy(f, r, e) for f in (0.25, 0.5, 1.0) for r in (0.1, 0.3, 0.6)
    ...         for e in (5e-4, 1e-3)]
    >>> y = [[1.0 + p.mix_ratio] for p in pols]
    >>> reg = AdditiveRegression(lr_ref=1e-3).fit(pols, y)
    >>> round(float(reg.predict([InjectionPolicy(0.7, 0.2, 1e-3)])[0, 0]), 6)
    1.2
    """

    def __init__(self, *, lr_ref: float = 1.0):
        self.lr_ref = lr_ref

    def fit(self, policies, y) -> AdditiveRegression:
        """``policies`` (n,), ``y`` (n,) or (n, k) final losses."""
        policies = _policies("policies", policies)
        check_real("lr_ref", self.lr_ref, low=0.0, low_open=True)
        y = _targets("y", y, len(policies))
        x = _design(policies, self.lr_ref)
        self.coef_, *_ = np.linalg.lstsq(x, y, rcond=None)  # minimum-norm where collinear
        return self

    def predict(self, policies) -> np.ndarray:
        """Predicted final losses, shape (m, k)."""
        if not hasattr(self, "coef_"):
            raise RuntimeError("AdditiveRegression is not fitted; call fit() first")
        return _design(_policies("policies", policies), self.lr_ref) @ self.coef_


class NearestConfiguration(BaseEstimator):
    """The final losses of the nearest training policy (standardised coordinates).

    Examples
    --------
    >>> pols = [InjectionPolicy(0.5, 0.1, 1e-3), InjectionPolicy(1.0, 0.6, 1e-3)]
    >>> nn = NearestConfiguration().fit(pols, [[2.0], [3.0]])
    >>> float(nn.predict([InjectionPolicy(0.9, 0.5, 1e-3)])[0, 0])
    3.0
    """

    def fit(self, policies, y) -> NearestConfiguration:
        """``policies`` (n,), ``y`` (n,) or (n, k) final losses."""
        policies = _policies("policies", policies)
        self.y_ = _targets("y", y, len(policies))
        x = self._coords(policies)
        self.mean_, self.scale_ = x.mean(0), np.where(x.std(0) > 0, x.std(0), 1.0)
        self.x_ = (x - self.mean_) / self.scale_
        return self

    @staticmethod
    def _coords(policies) -> np.ndarray:
        return np.array([[p.fraction, p.mix_ratio, np.log(p.peak_lr)] for p in policies])

    def predict(self, policies) -> np.ndarray:
        """Predicted final losses, shape (m, k); ties go to the earlier training policy."""
        if not hasattr(self, "x_"):
            raise RuntimeError("NearestConfiguration is not fitted; call fit() first")
        q = (self._coords(_policies("policies", policies)) - self.mean_) / self.scale_
        dist = ((q[:, None, :] - self.x_[None, :, :]) ** 2).sum(-1)  # (m, n)
        return self.y_[dist.argmin(1)]


class DecoupledLaw(BaseEstimator):
    """Target power law in domain tokens only; general loss = the base trajectory.

    ``L_T(s) = E + B (D(s) + D0)^(-beta)`` with ``D(s) = sum_{i<=s} r_i`` (domain
    batches), fitted to every logged target loss; ``L_G(s) = L0 + A S1^(-alpha) - C S2``
    fitted to the runs without domain data.

    Parameters
    ----------
    zeta : float
        For ``S2``.
    seed : int
        Seeds the restarts of the fits.
    """

    def __init__(self, *, zeta: float = 0.999, seed: int = 0, restarts: int = 8):
        self.zeta = zeta
        self.seed = seed
        self.restarts = restarts

    def _features(self, t: Trajectory):
        f = schedule_features(t.lrs, mix=t.mix, zeta=self.zeta)
        dom = np.cumsum(t.mix)
        return f.s1[t.steps] / self.lr_ref_, f.s2[t.steps] / self.lr_ref_, dom[t.steps]

    @staticmethod
    def _best(fun, starts):
        best = None
        for x0 in starts:
            with np.errstate(all="ignore"):
                try:
                    res = optimize.least_squares(fun, x0, loss="huber", f_scale=0.01,
                                                 bounds=(-30, 12), max_nfev=2000)
                except ValueError:
                    continue
            if np.isfinite(res.cost) and (best is None or res.cost < best.cost):
                best = res
        if best is None:
            raise RuntimeError("DecoupledLaw: every restart failed")
        return np.exp(best.x)

    def fit(self, trajectories, y=None) -> DecoupledLaw:
        """Fit on trajectories with and without domain data."""
        trajs = _as_trajectories(trajectories)
        base = [t for t in trajs if not (t.mix > 0).any()]
        inj = [t for t in trajs if (t.mix > 0).any()]
        if not base or len(inj) < 3:
            raise ValueError("trajectories must hold a base run (no domain data) and at least "
                             "3 injected runs")
        self.lr_ref_ = max(float(t.lrs.max()) for t in trajs)
        rng = np.random.default_rng(self.seed)
        s1, s2, yg = (np.concatenate(v) for v in zip(
            *[(*self._features(t)[:2], t.loss_general) for t in base], strict=True))

        def res_g(x):
            l0, a, al, c = np.exp(x)
            return l0 + a * s1 ** (-al) - c * s2 - yg

        starts = [np.log([yg.min() * rng.uniform(0.3, 0.95), 10 ** rng.uniform(-1, 2),
                          10 ** rng.uniform(-1.3, 0), 10 ** rng.uniform(-6, -2)])
                  for _ in range(self.restarts)]
        self.general_ = self._best(res_g, starts)
        dom, yt = (np.concatenate(v) for v in zip(
            *[(self._features(t)[2], t.loss_target) for t in trajs], strict=True))

        def res_t(x):
            e, b, beta, d0 = np.exp(x)
            return e + b * (dom + d0) ** (-beta) - yt

        starts = [np.log([yt.min() * rng.uniform(0.3, 0.95), 10 ** rng.uniform(-1, 2),
                          10 ** rng.uniform(-1.3, 0), 10 ** rng.uniform(0, 3)])
                  for _ in range(self.restarts)]
        self.target_ = self._best(res_t, starts)
        return self

    def predict(self, trajectory: Trajectory) -> LawPrediction:
        """Predicted losses at the logged steps of ``trajectory`` (its schedule is used)."""
        if not hasattr(self, "target_"):
            raise RuntimeError("DecoupledLaw is not fitted; call fit() first")
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"trajectory must be a Trajectory, got {type(trajectory).__name__}")
        s1, s2, dom = self._features(trajectory)
        l0, a, al, c = self.general_
        e, b, beta, d0 = self.target_
        return LawPrediction(loss_general=l0 + a * s1 ** (-al) - c * s2,
                             loss_target=e + b * (dom + d0) ** (-beta))
