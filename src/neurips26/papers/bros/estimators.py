"""Estimator-style front ends: ``BROS``, ``MASOBA``, ``SOBA`` and ``FirstOrderBilevel``.

Each stores its hyperparameters in ``__init__`` (scikit-learn convention) and ``fit``
runs the matching stepper of :mod:`.optim` (one ``step`` per iteration, the objects a
user's own loop can drive) on a :class:`~.bilevel.BilevelProblem`,
setting ``x_``, ``y_``, ``z_``, ``state_``, ``history_`` and ``memory_`` (the counted
bytes of the first iteration).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_bool, check_int, check_seed

from .bilevel import BilevelProblem, check_rank_fraction
from .optim import BilevelOptimizer, BROSOptimizer, FirstOrderBilevelOptimizer, MASOBAOptimizer
from .steps import check_lr, check_theta

__all__ = ["BROS", "MASOBA", "SOBA", "FirstOrderBilevel"]

MAX_ITER = 10**7


class _Bilevel(BaseEstimator):
    """Shared ``fit`` loop over a stepper of :mod:`.optim`; subclasses define
    ``_optimizer`` and ``_step_kwargs``."""

    def _optimizer(self, problem: BilevelProblem, kwargs: dict) -> BilevelOptimizer:
        raise NotImplementedError  # pragma: no cover - abstract

    def _step_kwargs(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, problem: BilevelProblem, data: Iterable | None = None,
            callback: Callable | None = None):  # fmt: skip
        """Run up to ``max_iter`` iterations.

        Parameters
        ----------
        problem : BilevelProblem
        data : iterable of (xi, phi, psi) or None
            Minibatch triples, one per iteration (the run stops early when it ends);
            ``None`` runs deterministic losses with ``batch=None``.
        callback : callable, optional
            ``callback(state)`` after every iteration (e.g. to evaluate ``grad Phi``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            An empty ``data``, bad hyperparameters, a loss that is not a finite scalar
            (the message names the iteration) or a diverging iterate.
        """
        if not isinstance(problem, BilevelProblem):
            raise TypeError(f"problem must be a BilevelProblem, got {type(problem).__name__}")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        max_iter = check_int(self.max_iter, "max_iter", min=1, max=MAX_ITER)
        kwargs = self._step_kwargs()
        if data is None:
            batches = itertools.repeat((None, None, None))
        else:
            if not isinstance(data, Iterable):
                raise TypeError(f"data must be an iterable of batch triples, got "
                                f"{type(data).__name__}")
            batches = iter(data)
        opt = self._optimizer(problem, kwargs)
        hist = {"upper_loss": [], "lower_loss": []}
        for _ in range(max_iter):
            try:
                batch = next(batches)
            except StopIteration:
                if opt.n_iter == 0:
                    raise ValueError("data is empty: it gave no batch triple") from None
                break
            stats = opt.step(batch)
            hist["upper_loss"].append(stats.upper_loss)
            hist["lower_loss"].append(stats.lower_loss)
            if callback is not None:
                callback(opt.state)
        state = opt.state
        self.state_ = state
        self.x_ = state.x
        self.y_ = state.y
        self.z_ = state.z
        self.history_ = {k: np.asarray(v) for k, v in hist.items()}
        self.memory_ = opt.memory
        self.n_iter_ = state.step
        return self


class MASOBA(_Bilevel):
    """MA-SOBA: single-loop SBO with a moving-average hypergradient and exact HVPs.

    Parameters
    ----------
    lr_x, lr_y, lr_z : float > 0
        ``alpha``, ``beta``, ``gamma`` (defaults ours, the abstract gives none).
    theta : float in (0, 1]
        Moving-average weight (``1``: SOBA).
    max_iter : int
    seed : int
        Unused by the exact method (kept for a common interface).

    References
    ----------
    X. Chen, T. Xu, Y. Zhang, "Optimal algorithms for stochastic bilevel optimization
    under relaxed smoothness conditions", 2023.

    Examples
    --------
    >>> import torch
    >>> from neurips26.papers.bros import BilevelProblem
    >>> prob = BilevelProblem(lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
    ...                       lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum(),
    ...                       torch.zeros(2), {"w": torch.zeros(2)})
    >>> est = MASOBA(lr_x=0.1, lr_y=0.5, lr_z=0.5, theta=0.5, max_iter=300).fit(prob)
    >>> [round(v, 3) for v in est.x_.tolist()]  # Phi(x) = ||x - 1||^2 / 2
    [1.0, 1.0]
    """

    def __init__(self, *, lr_x: float = 1e-2, lr_y: float = 1e-1, lr_z: float = 1e-1,
                 theta: float = 0.1, max_iter: int = 1000, seed: int = 0) -> None:  # fmt: skip
        self.lr_x = lr_x
        self.lr_y = lr_y
        self.lr_z = lr_z
        self.theta = theta
        self.max_iter = max_iter
        self.seed = seed

    def _optimizer(self, problem, kwargs):
        return MASOBAOptimizer(problem, **kwargs)

    def _step_kwargs(self):
        check_seed(self.seed)
        return {"lr_x": check_lr(self.lr_x, "lr_x"), "lr_y": check_lr(self.lr_y, "lr_y"),
                "lr_z": check_lr(self.lr_z, "lr_z"), "theta": check_theta(self.theta)}  # fmt: skip


class SOBA(MASOBA):
    """SOBA (Dagreou et al. 2022): MA-SOBA without the moving average (``theta = 1``)."""

    def __init__(self, *, lr_x: float = 1e-2, lr_y: float = 1e-1, lr_z: float = 1e-1,
                 max_iter: int = 1000, seed: int = 0) -> None:  # fmt: skip
        super().__init__(lr_x=lr_x, lr_y=lr_y, lr_z=lr_z, theta=1.0, max_iter=max_iter,
                         seed=seed)  # fmt: skip

    def _step_kwargs(self):
        kw = super()._step_kwargs()
        kw["theta"] = 1.0
        return kw


class BROS(_Bilevel):
    """BROS: single-loop SBO with lower and auxiliary steps in random subspaces.

    Parameters
    ----------
    lr_x, lr_y, lr_z, theta, max_iter
        As :class:`MASOBA`.
    rank_fraction : float in (0, 1]
        ``r / m`` of every sketched weight (default ours: 1/8).
    probes : {1, 2}
        2: the Rademacher bi-probe correction (unbiased); 1: the uncorrected variant.
    sketch_vectors : bool
        Also sketch 1-D tensors (biases stay full by default).
    seed : int
        Seeds the sketches' generator.

    Examples
    --------
    >>> import torch
    >>> from neurips26.papers.bros import BilevelProblem
    >>> prob = BilevelProblem(lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
    ...                       lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum(),
    ...                       torch.zeros(8), {"w": torch.zeros(8)})
    >>> est = BROS(lr_x=0.05, lr_y=0.3, lr_z=0.1, theta=0.2, rank_fraction=0.5,
    ...            sketch_vectors=True, max_iter=800).fit(prob)
    >>> bool((est.x_ - 1).abs().max() < 0.1)
    True
    >>> est.memory_.grad_buffer_bytes < 5 * 8 * 4  # subspace buffers (r = 4, not 8)
    True
    """

    def __init__(self, *, lr_x: float = 1e-2, lr_y: float = 1e-1, lr_z: float = 1e-1,
                 theta: float = 0.1, rank_fraction: float = 0.125, probes: int = 2,
                 sketch_vectors: bool = False, max_iter: int = 1000,
                 seed: int = 0) -> None:  # fmt: skip
        self.lr_x = lr_x
        self.lr_y = lr_y
        self.lr_z = lr_z
        self.theta = theta
        self.rank_fraction = rank_fraction
        self.probes = probes
        self.sketch_vectors = sketch_vectors
        self.max_iter = max_iter
        self.seed = seed

    def _optimizer(self, problem, kwargs):
        return BROSOptimizer(problem, **kwargs)

    def _step_kwargs(self):
        return {"lr_x": check_lr(self.lr_x, "lr_x"), "lr_y": check_lr(self.lr_y, "lr_y"),
                "lr_z": check_lr(self.lr_z, "lr_z"), "theta": check_theta(self.theta),
                "rank_fraction": check_rank_fraction(self.rank_fraction),
                "probes": check_int(self.probes, "probes", min=1, max=2),
                "sketch_vectors": check_bool(self.sketch_vectors, "sketch_vectors"),
                "seed": check_seed(self.seed)}  # fmt: skip


class FirstOrderBilevel(_Bilevel):
    """The first-order surrogate: MA-SOBA with the Hessian term dropped (``z = 0``)."""

    def __init__(self, *, lr_x: float = 1e-2, lr_y: float = 1e-1, theta: float = 0.1,
                 max_iter: int = 1000, seed: int = 0) -> None:  # fmt: skip
        self.lr_x = lr_x
        self.lr_y = lr_y
        self.theta = theta
        self.max_iter = max_iter
        self.seed = seed

    def _optimizer(self, problem, kwargs):
        return FirstOrderBilevelOptimizer(problem, **kwargs)

    def _step_kwargs(self):
        check_seed(self.seed)
        return {"lr_x": check_lr(self.lr_x, "lr_x"), "lr_y": check_lr(self.lr_y, "lr_y"),
                "theta": check_theta(self.theta)}  # fmt: skip
