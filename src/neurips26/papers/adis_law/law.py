"""ADIS-Law: the annealing-phase domain-injection law, its fitter and policy ranking.

Late-stage domain injection is modelled as a perturbation of the base pre-training
trajectory, written in the schedule features of :mod:`.schedule` (all divided by a
reference learning rate ``eta_ref``, so areas count steps at ``eta_ref``):

- Eq. (1), the general-domain loss, the LR-annealing law plus a linear
  forgetting-recovery term::

      L_G(s) = L0 + A S1^(-alpha) - C S2 + F E_d - R E_g

  A second reading (``forgetting="saturating"``) lets the forgetting saturate in the
  domain exposure, with one more parameter, the saturation exposure ``Q``::

      L_G(s) = L0 + A S1^(-alpha) - C S2 + F Q (1 - exp(-E_d / Q)) - R E_g

  (it tends to the linear term as ``Q`` grows).

- Eq. (2), the target-domain loss, a power law in the domain exposure plus the general
  exposure ``G = S1 - E_d`` transferred at rate ``kappa`` (knowledge from
  pre-training), with the same annealing bonus::

      L_T(s) = E_T + B (E_d + kappa G)^(-beta) - C_T S2

  Before any injection ``E_d = 0`` and Eq. (2) is an LR-annealing law of its own for
  the target domain.

- Eq. (3), model-scale extrapolation (used when the trajectories come from models of
  more than one size ``N``; ``n = N / N_ref``, one exponent shared by both laws)::

      L0(N) = L0 + k_G n^(-gamma),   E_T(N) = E_T + k_T n^(-gamma)

- Eq. (4), the utility of a policy ``pi`` at budget ``S``::

      U(pi) = L_T(S) + mu max(0, L_G(S) - L_G^base(S))

The two laws are fitted jointly by robust least squares (Huber loss) on the logged
losses of every trajectory, with positive parameters in log space and random restarts.

Deviations from the paper
-------------------------
- Only the abstract is available; Eqs. (1)-(4) are our inference. The spec's target
  law had a constant pre-training offset ``D0``; we replace it by ``kappa G`` so that a
  longer pre-training (a larger data budget) lowers the target loss, which data-budget
  extrapolation needs.
- The optional clipping of the forgetting term at 0 (``floor_forgetting``) is ours, and
  so is the saturating reading of the forgetting term (``forgetting="saturating"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from ._checks import MAX_LR, check_array, check_int, check_real
from .schedule import InjectionPolicy, Schedule, schedule_features, wsd_schedule

__all__ = [
    "FORGETTING_FORMS",
    "FRAME_COLUMNS",
    "GENERAL_PARAMS",
    "SATURATION_PARAM",
    "SCALE_PARAMS",
    "TARGET_PARAMS",
    "ADISFit",
    "ADISLaw",
    "ADISParams",
    "LawPrediction",
    "PolicyScore",
    "Trajectory",
    "adis_predict",
    "fit_adis_law",
    "rank_policies",
    "simulate_trajectory",
    "trajectories_from_frame",
    "trajectories_to_frame",
]

#: Free parameters of Eq. (1), Eq. (2) and Eq. (3).
GENERAL_PARAMS = ("L0", "A", "alpha", "C", "F", "R")
TARGET_PARAMS = ("E_T", "B", "beta", "kappa", "C_T")
SCALE_PARAMS = ("k_G", "k_T", "gamma")
#: The extra general-law parameter of the saturating forgetting term.
SATURATION_PARAM = "Q"
#: Readings of the forgetting-recovery term of Eq. (1).
FORGETTING_FORMS = ("linear", "saturating")
#: Columns of the loss-curve DataFrame read by :func:`trajectories_from_frame`.
FRAME_COLUMNS = ("run", "step", "lr", "domain_fraction", "loss_general", "loss_target")
_LOSSES = ("linear", "huber", "soft_l1", "cauchy", "arctan")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Trajectory:
    """One training run: its per-step schedule and the losses logged along it.

    Parameters
    ----------
    lrs : array_like, shape (S,)
        ``eta_i`` of every optimiser step from step 0 (a branched run repeats the
        schedule it branched from).
    mix : array_like, shape (S,)
        ``r_i``, the domain share of every step's batch.
    steps : array_like of int, shape (K,)
        Strictly increasing steps at which the losses were logged (after step ``i``'s
        update the model has seen steps ``0..i``).
    loss_general, loss_target : array_like, shape (K,)
        Validation losses on the general and the target domain at ``steps``.
    name : str
        A label used in error messages and tables.
    policy : InjectionPolicy or None
        The policy that produced the schedule, if known (``None`` for the base run).
    num_params : float or None
        Model size ``N`` (non-embedding parameters), for model-scale fits.
    """

    lrs: np.ndarray
    mix: np.ndarray
    steps: np.ndarray
    loss_general: np.ndarray
    loss_target: np.ndarray
    name: str = "run"
    policy: InjectionPolicy | None = None
    num_params: float | None = None

    def __post_init__(self) -> None:
        label = f"trajectory {self.name!r}"
        lrs = check_array(f"{label}: lrs", self.lrs)
        mix = check_array(f"{label}: mix", self.mix)
        if mix.shape != lrs.shape:
            raise ValueError(f"{label}: mix has shape {mix.shape}, lrs {lrs.shape}")
        if (lrs < 0).any():
            raise ValueError(f"{label}: lrs has a negative learning rate")
        if not (lrs > 0).any():
            raise ValueError(f"{label}: lrs is a schedule with a zero learning rate everywhere")
        if ((mix < 0) | (mix > 1)).any():
            raise ValueError(f"{label}: mix must lie in [0, 1]")
        steps_f = check_array(f"{label}: steps", self.steps)
        steps = steps_f.astype(int)
        if (steps != steps_f).any():
            raise ValueError(f"{label}: steps must be integers")
        if (np.diff(steps) <= 0).any():
            bad = int(np.flatnonzero(np.diff(steps) <= 0)[0]) + 1
            raise ValueError(
                f"{label}: steps must be strictly increasing (monotone); step {steps[bad]} at "
                f"position {bad} follows {steps[bad - 1]}"
            )
        if steps[0] < 0 or steps[-1] >= lrs.shape[0]:
            raise ValueError(f"{label}: steps must lie in [0, {lrs.shape[0] - 1}] (the schedule)")
        losses = {}
        for key in ("loss_general", "loss_target"):
            arr = np.asarray(getattr(self, key), dtype=float)
            if arr.shape != steps.shape:
                raise ValueError(f"{label}: {key} has shape {arr.shape}, steps {steps.shape}")
            if not np.isfinite(arr).all():
                first = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise ValueError(f"{label}: {key} is NaN or infinite at step {steps[first]}")
            losses[key] = arr
        if self.policy is not None and not isinstance(self.policy, InjectionPolicy):
            raise TypeError(f"{label}: policy must be an InjectionPolicy or None")
        if self.num_params is not None:
            object.__setattr__(self, "num_params", check_real(f"{label}: num_params",
                                                              self.num_params, low=0.0,
                                                              low_open=True))
        object.__setattr__(self, "lrs", lrs)
        object.__setattr__(self, "mix", mix)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "loss_general", losses["loss_general"])
        object.__setattr__(self, "loss_target", losses["loss_target"])

    @property
    def total_steps(self) -> int:
        """``S``, the schedule's length."""
        return int(self.lrs.shape[0])

    @classmethod
    def from_schedule(cls, schedule: Schedule, steps, loss_general, loss_target, *,
                      name: str = "run", num_params: float | None = None) -> Trajectory:
        """A trajectory on a :class:`Schedule` (its policy is kept)."""
        return cls(lrs=schedule.lrs, mix=schedule.mix, steps=steps, loss_general=loss_general,
                   loss_target=loss_target, name=name, policy=schedule.policy,
                   num_params=num_params)


def trajectories_to_frame(trajectories: Sequence[Trajectory]):
    """The logged points of ``trajectories`` as a DataFrame with :data:`FRAME_COLUMNS`.

    One row per logged step; ``lr`` and ``domain_fraction`` are the schedule's values at
    that step. Rows from step 0 of the schedule are needed to rebuild the features, so
    this is lossless only for runs logged at every step.
    """
    import pandas as pd

    rows = []
    for t in _as_trajectories(trajectories):
        for k, s in enumerate(t.steps):
            row = {"run": t.name, "step": int(s), "lr": float(t.lrs[s]),
                   "domain_fraction": float(t.mix[s]),
                   "loss_general": float(t.loss_general[k]),
                   "loss_target": float(t.loss_target[k])}
            if t.num_params is not None:
                row["num_params"] = t.num_params
            rows.append(row)
    return pd.DataFrame(rows)


def trajectories_from_frame(frame) -> list[Trajectory]:
    """Trajectories from a DataFrame of logged loss curves.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``run, step, lr, domain_fraction, loss_general, loss_target`` and
        optionally ``num_params``; one row per logged step. Each run's rows start at
        step 0 (a run branched from a checkpoint repeats the shared rows before the
        branch) and their steps strictly increase. Between two logged rows the learning
        rate is interpolated linearly and the domain fraction of the later row applies;
        a run logged at every step is therefore taken exactly.

    Returns
    -------
    list of Trajectory
        In the order the runs first appear, each logged at its rows.

    Raises
    ------
    ValueError
        For missing columns, NaN values (naming the column and the run), steps that are
        not strictly increasing, or a run that does not start at step 0.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks the columns {missing}; expected {list(FRAME_COLUMNS)}")
    if frame.empty:
        raise ValueError("frame has no rows")
    out = []
    for run, part in frame.groupby("run", sort=False):
        for col in FRAME_COLUMNS[1:]:
            vals = pd.to_numeric(part[col], errors="coerce").to_numpy(dtype=float)
            if not np.isfinite(vals).all():
                raise ValueError(
                    f"frame column {col!r} has NaN or non-numeric values in run {run!r}")
        steps = part["step"].to_numpy(dtype=float)
        if (np.diff(steps) <= 0).any():
            raise ValueError(f"frame column 'step' is not strictly increasing in run {run!r}")
        if steps[0] != 0:
            raise ValueError(
                f"frame run {run!r} starts at step {steps[0]:g}; rows must start at step 0 "
                "(repeat the shared rows before a branch)"
            )
        if (steps != np.round(steps)).any():
            raise ValueError(f"frame column 'step' has non-integer steps in run {run!r}")
        steps = steps.astype(int)
        grid = np.arange(steps[-1] + 1)
        lrs = np.interp(grid, steps, part["lr"].to_numpy(dtype=float))
        frac = part["domain_fraction"].to_numpy(dtype=float)
        mix = frac[np.searchsorted(steps, grid)]  # the later row's fraction on (prev, step]
        num = None
        if "num_params" in part.columns:
            nums = part["num_params"].to_numpy(dtype=float)
            if not np.isfinite(nums).all() or len(set(nums)) != 1:
                raise ValueError(
                    f"frame column 'num_params' must be one finite value in run {run!r}")
            num = float(nums[0])
        out.append(Trajectory(lrs=lrs, mix=mix, steps=steps,
                              loss_general=part["loss_general"].to_numpy(dtype=float),
                              loss_target=part["loss_target"].to_numpy(dtype=float),
                              name=str(run), num_params=num))
    return out


def _as_trajectories(trajectories) -> list[Trajectory]:
    try:
        import pandas as pd

        if isinstance(trajectories, pd.DataFrame):
            return trajectories_from_frame(trajectories)
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    if isinstance(trajectories, Trajectory):
        trajectories = [trajectories]
    try:
        trajectories = list(trajectories)
    except TypeError as err:
        raise TypeError("trajectories must be a sequence of Trajectory or a DataFrame") from err
    for t in trajectories:
        if not isinstance(t, Trajectory):
            raise TypeError(f"trajectories must hold Trajectory objects, got {type(t).__name__}")
    return trajectories


# --------------------------------------------------------------------------- the law


@dataclass(frozen=True)
class ADISParams:
    """Parameters of ADIS-Law.

    Attributes
    ----------
    general : dict
        ``L0, A, alpha, C, F, R`` of Eq. (1), plus ``Q`` for the saturating reading.
    target : dict
        ``E_T, B, beta, kappa, C_T`` of Eq. (2).
    lr_ref : float
        ``eta_ref``: every feature is divided by it before entering the laws.
    scale : dict
        ``k_G, k_T, gamma`` of Eq. (3); empty for a single model size.
    num_params_ref : float or None
        ``N_ref`` of Eq. (3).
    floor_forgetting : bool
        Whether the forgetting-recovery term is clipped at 0.
    forgetting : {"linear", "saturating"}
        The forgetting term: ``F E_d`` or ``F Q (1 - exp(-E_d / Q))``.
    """

    general: Mapping[str, float]
    target: Mapping[str, float]
    lr_ref: float = 1.0
    scale: Mapping[str, float] = field(default_factory=dict)
    num_params_ref: float | None = None
    floor_forgetting: bool = False
    forgetting: str = "linear"

    def __post_init__(self) -> None:
        if self.forgetting not in FORGETTING_FORMS:
            raise ValueError(f"forgetting must be one of {FORGETTING_FORMS}, "
                             f"got {self.forgetting!r}")
        for name, keys, given in (("general", self._general_keys(), self.general),
                                  ("target", TARGET_PARAMS, self.target)):
            if set(given) != set(keys):
                raise ValueError(f"{name} must have the keys {keys}, got {tuple(given)}")
            for k in keys:
                check_real(f"{name}[{k!r}]", given[k])
        if self.scale and set(self.scale) != set(SCALE_PARAMS):
            raise ValueError(f"scale must be empty or have the keys {SCALE_PARAMS}")
        if self.scale and self.num_params_ref is None:
            raise ValueError("num_params_ref is required with scale parameters")
        check_real("lr_ref", self.lr_ref, low=0.0, low_open=True)
        object.__setattr__(self, "general",
                           {k: float(self.general[k]) for k in self._general_keys()})
        object.__setattr__(self, "target", {k: float(self.target[k]) for k in TARGET_PARAMS})
        object.__setattr__(self, "scale", {k: float(self.scale[k]) for k in self.scale})

    def _general_keys(self) -> tuple[str, ...]:
        return GENERAL_PARAMS + ((SATURATION_PARAM,) if self.forgetting == "saturating" else ())

    def as_vector(self) -> np.ndarray:
        """All parameters in the order general, target, scale (then ``Q``, if saturating)."""
        vals = [self.general[k] for k in GENERAL_PARAMS] + [self.target[k] for k in TARGET_PARAMS]
        vals += [self.scale[k] for k in SCALE_PARAMS if k in self.scale]
        if self.forgetting == "saturating":
            vals.append(self.general[SATURATION_PARAM])
        return np.array(vals)

    def names(self) -> tuple[str, ...]:
        """Names matching :meth:`as_vector`."""
        sat = (SATURATION_PARAM,) if self.forgetting == "saturating" else ()
        return GENERAL_PARAMS + TARGET_PARAMS + (SCALE_PARAMS if self.scale else ()) + sat


@dataclass(frozen=True)
class LawPrediction:
    """Predicted losses, shape ``(S,)`` or ``(K,)`` each."""

    loss_general: np.ndarray
    loss_target: np.ndarray


def _forget_gain(ed, q):
    """``Q (1 - exp(-E_d / Q))``, the saturating reading's exposure (``E_d`` for small it)."""
    return -q * np.expm1(-ed / q)


def _law(theta: np.ndarray, s1, s2, ed, eg, g, n, floor: bool, scaled: bool,
         saturating: bool = False):
    """Eqs. (1)-(3) on normalised features; ``theta`` holds the raw parameters (``Q``
    last when ``saturating``)."""
    l0, a, alpha, c, f, r = theta[:6]
    e_t, b, beta, kappa, c_t = theta[6:11]
    if scaled:
        k_g, k_t, gamma = theta[11:14]
        npow = n ** (-gamma)
        l0 = l0 + k_g * npow  # Eq. (3)
        e_t = e_t + k_t * npow
    forget = (f * _forget_gain(ed, theta[-1]) if saturating else f * ed) - r * eg
    if floor:
        forget = np.maximum(forget, 0.0)
    lg = l0 + a * s1 ** (-alpha) - c * s2 + forget  # Eq. (1)
    lt = e_t + b * (ed + kappa * g) ** (-beta) - c_t * s2  # Eq. (2)
    return lg, lt


def adis_predict(params: ADISParams, features, *, num_params: float | None = None) -> LawPrediction:
    """Evaluate ADIS-Law on a schedule's features.

    Parameters
    ----------
    params : ADISParams
    features : ScheduleFeatures
        From :func:`schedule_features` (raw LR units; divided by ``params.lr_ref`` here).
    num_params : float, optional
        ``N`` for a model-scale law (required when ``params.scale`` is set).

    Returns
    -------
    LawPrediction
        ``L_G(s)`` and ``L_T(s)`` at every step, shape ``(S,)``.

    Examples
    --------
    >>> from neurips26.papers.adis_law import wsd_schedule, schedule_features
    >>> p = ADISParams(general=dict(L0=1.0, A=2.0, alpha=0.5, C=1e-3, F=0.01, R=0.002),
    ...                target=dict(E_T=1.2, B=3.0, beta=0.4, kappa=0.1, C_T=1e-3), lr_ref=1e-3)
    >>> f = schedule_features(wsd_schedule(200, peak_lr=1e-3))
    >>> pred = adis_predict(p, f)
    >>> pred.loss_general.shape, bool(pred.loss_target[-1] < pred.loss_target[100])
    ((200,), True)
    """
    if not isinstance(params, ADISParams):
        raise TypeError(f"params must be ADISParams, got {type(params).__name__}")
    from .schedule import ScheduleFeatures

    if not isinstance(features, ScheduleFeatures):
        raise TypeError(f"features must be ScheduleFeatures, got {type(features).__name__}")
    scaled = bool(params.scale)
    n = 1.0
    if scaled:
        if num_params is None:
            raise ValueError("num_params is required: params were fitted across model sizes")
        n = check_real("num_params", num_params, low=0.0, low_open=True) / params.num_params_ref
    ref = params.lr_ref
    s1 = features.s1 / ref
    if (s1 <= 0).any():
        raise ValueError("features has S1 = 0 at a step (no learning yet); the law needs S1 > 0")
    lg, lt = _law(params.as_vector(), s1, features.s2 / ref, features.e_domain / ref,
                  features.e_general / ref, features.general_exposure / ref, n,
                  params.floor_forgetting, scaled, params.forgetting == "saturating")
    return LawPrediction(loss_general=np.asarray(lg, float), loss_target=np.asarray(lt, float))


# --------------------------------------------------------------------------- fitting


@dataclass(frozen=True)
class ADISFit:
    """Result of :func:`fit_adis_law`.

    Attributes
    ----------
    params : ADISParams
        The best fit over the restarts.
    rmse, rmse_general, rmse_target : float
        Root-mean-square residual (loss units) over all logged points, and per domain.
    cost : float
        The robust least-squares objective of the best restart.
    num_restarts : int
        Restarts run.
    converged : bool
        Whether the best restart met a tolerance (scipy status > 0).
    num_points : int
        Logged points per domain.
    zeta : float
        The annealing-momentum decay used for the features.
    """

    params: ADISParams
    rmse: float
    rmse_general: float
    rmse_target: float
    cost: float
    num_restarts: int
    converged: bool
    num_points: int
    zeta: float


@dataclass(frozen=True)
class _Design:
    s1: np.ndarray
    s2: np.ndarray
    ed: np.ndarray
    eg: np.ndarray
    g: np.ndarray
    n: np.ndarray
    yg: np.ndarray
    yt: np.ndarray


def _design(trajs: list[Trajectory], zeta: float, lr_ref: float, n_ref: float | None) -> _Design:
    cols: dict[str, list] = {k: [] for k in ("s1", "s2", "ed", "eg", "g", "n", "yg", "yt")}
    for t in trajs:
        f = schedule_features(t.lrs, mix=t.mix, zeta=zeta)
        idx = t.steps
        if (f.s1[idx] <= 0).any():
            raise ValueError(f"trajectory {t.name!r}: a logged step has S1 = 0 (no learning yet); "
                             "log from a step with a positive learning rate behind it")
        cols["s1"].append(f.s1[idx] / lr_ref)
        cols["s2"].append(f.s2[idx] / lr_ref)
        cols["ed"].append(f.e_domain[idx] / lr_ref)
        cols["eg"].append(f.e_general[idx] / lr_ref)
        cols["g"].append(f.general_exposure[idx] / lr_ref)
        n = 1.0 if n_ref is None else t.num_params / n_ref
        cols["n"].append(np.full(idx.shape, n))
        cols["yg"].append(t.loss_general)
        cols["yt"].append(t.loss_target)
    return _Design(**{k: np.concatenate(v) for k, v in cols.items()})


def _initial_guess(rng: np.random.Generator, d: _Design, scaled: bool,
                   saturating: bool = False) -> np.ndarray:
    """A random start, in log space, spread over plausible magnitudes."""
    def lu(lo, hi):
        return rng.uniform(np.log(lo), np.log(hi))
    x = [np.log(d.yg.min() * rng.uniform(0.3, 0.95)), lu(0.1, 100.0), lu(0.05, 1.0),
         lu(1e-6, 1e-2), lu(1e-6, 1e-2), lu(1e-6, 1e-2),
         np.log(d.yt.min() * rng.uniform(0.3, 0.95)), lu(0.1, 100.0), lu(0.05, 1.0),
         lu(1e-3, 1.0), lu(1e-6, 1e-2)]
    if scaled:
        x += [lu(0.01, 1.0), lu(0.01, 1.0), lu(0.05, 1.0)]
    if saturating:  # Q spread over the observed domain exposures
        top = max(float(d.ed.max()), 1e-3)
        x.append(lu(0.05 * top, 5.0 * top))
    return np.array(x)


def fit_adis_law(
    trajectories,
    *,
    zeta: float = 0.999,
    restarts: int = 20,
    loss: str = "huber",
    f_scale: float = 0.01,
    seed: int = 0,
    floor_forgetting: bool = False,
    forgetting: str = "linear",
    lr_ref: float | None = None,
    max_nfev: int = 3000,
    x0: ADISParams | None = None,
) -> ADISFit:
    """Fit Eqs. (1)-(3) jointly to the general and target losses of many runs.

    Parameters
    ----------
    trajectories : sequence of Trajectory, or pandas.DataFrame
        The runs (base run and injection policies); a DataFrame is read by
        :func:`trajectories_from_frame`. Runs of more than one ``num_params`` switch on
        the model-scale terms of Eq. (3).
    zeta : float
        Annealing-momentum decay of ``S2``, in (0, 1).
    restarts : int
        Random starts of the optimiser (the best is kept).
    loss : str
        ``scipy.optimize.least_squares`` loss (``"huber"``, ``"linear"``, ...).
    f_scale : float
        Residual scale (loss units) where the robust loss bends.
    seed : int
        Seeds the random starts.
    floor_forgetting : bool
        Clip the forgetting-recovery term ``F E_d - R E_g`` at 0.
    forgetting : {"linear", "saturating"}
        The forgetting term of Eq. (1): ``F E_d`` (the paper's linear reading) or
        ``F Q (1 - exp(-E_d / Q))`` with one more free parameter ``Q``.
    lr_ref : float, optional
        ``eta_ref`` (default: the largest learning rate over the runs).
    max_nfev : int
        Function evaluations allowed per restart.
    x0 : ADISParams, optional
        Used as the first start instead of a random one.

    Returns
    -------
    ADISFit

    Raises
    ------
    ValueError
        Too few runs for the law's free parameters, fewer than two runs with domain data,
        NaN losses, non-monotone steps or an all-zero schedule (naming the run).

    Examples
    --------
    >>> from neurips26.papers.adis_law import InjectionPolicy, wsd_schedule
    >>> truth = ADISParams(general=dict(L0=1.0, A=2.0, alpha=0.5, C=1e-3, F=0.01, R=0.002),
    ...                    target=dict(E_T=1.2, B=3.0, beta=0.4, kappa=0.1, C_T=1e-3),
    ...                    lr_ref=1e-3)
    >>> pols = [InjectionPolicy(f, r, e) for f in (0.5, 1.0) for r in (0.2, 0.6)
    ...         for e in (5e-4, 1e-3)]
    >>> runs = [simulate_trajectory(truth, wsd_schedule(400, peak_lr=1e-3, policy=p),
    ...                             steps=range(20, 400, 20)) for p in pols]
    >>> fit = fit_adis_law(runs, restarts=4)
    >>> round(fit.params.target["beta"], 3), fit.rmse < 1e-6
    (0.4, True)
    """
    trajs = _as_trajectories(trajectories)
    zeta = check_real("zeta", zeta, low=0.0, high=1.0, low_open=True, high_open=True)
    restarts = check_int("restarts", restarts, min_value=1, max_value=10_000)
    max_nfev = check_int("max_nfev", max_nfev, min_value=1, max_value=10**7)
    seed = check_int("seed", seed, min_value=0)
    f_scale = check_real("f_scale", f_scale, low=0.0, high=1e100, low_open=True)
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    if forgetting not in FORGETTING_FORMS:
        raise ValueError(f"forgetting must be one of {FORGETTING_FORMS}, got {forgetting!r}")
    sat = forgetting == "saturating"
    sizes = {t.num_params for t in trajs}
    scaled = len(sizes) > 1
    if scaled and None in sizes:
        raise ValueError("trajectories mix runs with and without num_params")
    n_free = max(len(GENERAL_PARAMS) + sat, len(TARGET_PARAMS)) + (2 if scaled else 0)
    if len(trajs) < n_free:
        raise ValueError(
            f"trajectories: {len(trajs)} runs given, but the law has {n_free} free parameters "
            f"per domain; at least {n_free} runs (policies) are needed to fit it"
        )
    injected = {(t.policy, tuple(np.round(t.mix, 12))) for t in trajs if (t.mix > 0).any()}
    if len(injected) < 2:
        raise ValueError(
            f"trajectories: {len(injected)} distinct runs with domain data; at least 2 "
            "injection policies are needed to fit the forgetting and adaptation terms"
        )
    if scaled and len(sizes) < 3:
        raise ValueError("trajectories: a model-scale fit needs runs of at least 3 model sizes")
    if lr_ref is None:
        lr_ref = max(float(t.lrs.max()) for t in trajs)
    lr_ref = check_real("lr_ref", lr_ref, low=0.0, high=MAX_LR, low_open=True)
    n_ref = min(sizes) if scaled else None
    d = _design(trajs, zeta, lr_ref, n_ref)
    if x0 is not None and not isinstance(x0, ADISParams):
        raise TypeError(f"x0 must be ADISParams or None, got {type(x0).__name__}")

    def residuals(x):
        lg, lt = _law(np.exp(x), d.s1, d.s2, d.ed, d.eg, d.g, d.n, floor_forgetting, scaled,
                      sat)
        return np.concatenate([lg - d.yg, lt - d.yt])

    m = d.yg.shape[0]
    p = 11 + 3 * scaled + sat
    lns1, logn = np.log(d.s1), np.log(d.n)

    def jacobian(x):
        # d residual / d log(theta_j) = theta_j d L / d theta_j
        th = np.exp(x)
        a, alpha, f = th[1], th[2], th[4]
        b, beta, kappa = th[7], th[8], th[9]
        jac = np.zeros((2 * m, p))
        pa = d.s1 ** (-alpha)
        jac[:m, 0] = 1.0
        jac[:m, 1] = pa
        jac[:m, 2] = -a * pa * lns1
        jac[:m, 3] = -d.s2
        on = np.ones(m)
        expo = d.ed
        if sat:
            q = th[-1]
            expo = _forget_gain(d.ed, q)
            # d/dQ of Q (1 - exp(-E_d / Q)) = (1 - exp(-E_d / Q)) - (E_d / Q) exp(-E_d / Q)
            decay = np.exp(-d.ed / q)
            jac[:m, -1] = f * (-np.expm1(-d.ed / q) - d.ed / q * decay)
        if floor_forgetting:
            on = (f * expo - th[5] * d.eg > 0).astype(float)
        jac[:m, 4] = expo * on
        jac[:m, 5] = -d.eg * on
        if sat:
            jac[:m, -1] *= on
        u = d.ed + kappa * d.g
        pu = u ** (-beta)
        jac[m:, 6] = 1.0
        jac[m:, 7] = pu
        jac[m:, 8] = -b * pu * np.log(u)
        jac[m:, 9] = -beta * b * pu / u * d.g
        jac[m:, 10] = -d.s2
        if scaled:
            k_g, k_t, gamma = th[11:14]
            npow = d.n ** (-gamma)
            jac[:m, 11] = npow
            jac[m:, 12] = npow
            jac[:m, 13] = -k_g * npow * logn
            jac[m:, 13] = -k_t * npow * logn
        return jac * th

    rng = np.random.default_rng(seed)
    lo = np.full(p, -30.0)
    hi = np.full(p, 12.0)
    hi[[2, 8]] = np.log(5.0)  # alpha, beta below 5
    if scaled:
        hi[13] = np.log(5.0)
    best = None
    for k in range(restarts):
        start = _initial_guess(rng, d, scaled, sat)
        if k == 0 and x0 is not None:
            vec = x0.as_vector()
            if len(vec) != len(start) or (vec <= 0).any():
                raise ValueError("x0 must match the fit's parameters and be positive")
            start = np.log(vec)
        start = np.clip(start, lo + 1e-9, hi - 1e-9)
        # tiny dense solves: one BLAS thread is fastest and avoids oversubscription
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
                threadpool_limits(limits=1, user_api="blas"):
            try:
                res = optimize.least_squares(
                    residuals, start, jac=jacobian, loss=loss, f_scale=f_scale,
                    bounds=(lo, hi), x_scale="jac", max_nfev=max_nfev,
                    xtol=1e-12, ftol=1e-12, gtol=1e-12)
            except ValueError:  # non-finite residuals at the start: skip it
                continue
        if not np.isfinite(res.cost):
            continue
        if best is None or res.cost < best.cost:
            best = res
    if best is None:
        raise RuntimeError("every restart of the ADIS-Law fit failed (non-finite residuals)")
    theta = np.exp(best.x)
    general = dict(zip(GENERAL_PARAMS, theta[:6], strict=True))
    if sat:
        general[SATURATION_PARAM] = theta[-1]
    params = ADISParams(
        general=general,
        target=dict(zip(TARGET_PARAMS, theta[6:11], strict=True)),
        lr_ref=lr_ref,
        scale=dict(zip(SCALE_PARAMS, theta[11:14], strict=True)) if scaled else {},
        num_params_ref=n_ref,
        floor_forgetting=floor_forgetting,
        forgetting=forgetting,
    )
    r = residuals(best.x)
    return ADISFit(params=params, rmse=float(np.sqrt(np.mean(r**2))),
                   rmse_general=float(np.sqrt(np.mean(r[:m] ** 2))),
                   rmse_target=float(np.sqrt(np.mean(r[m:] ** 2))), cost=float(best.cost),
                   num_restarts=restarts, converged=bool(best.status > 0), num_points=m,
                   zeta=zeta)


def simulate_trajectory(
    params: ADISParams,
    schedule: Schedule,
    *,
    steps,
    noise: float = 0.0,
    rng: np.random.Generator | None = None,
    zeta: float = 0.999,
    num_params: float | None = None,
    name: str | None = None,
) -> Trajectory:
    """A trajectory drawn from the law, with multiplicative Gaussian noise.

    Parameters
    ----------
    params : ADISParams
    schedule : Schedule
    steps : iterable of int
        Logged steps.
    noise : float
        Relative noise: each loss is multiplied by ``1 + noise * z``, ``z ~ N(0, 1)``.
    rng : numpy.random.Generator, optional
        Required when ``noise > 0``.
    zeta : float
    num_params : float, optional
    name : str, optional
        Defaults to a label of the policy.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    noise = check_real("noise", noise, low=0.0)
    if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
        raise TypeError(f"steps must be an iterable of int, got {type(steps).__name__}")
    raw = list(steps)
    for i, s in enumerate(raw):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"steps[{i}] must be an int, got {type(s).__name__} {s!r}")
        if not 0 <= s < schedule.total_steps:
            raise ValueError(f"steps must lie in [0, {schedule.total_steps - 1}], got {s}")
    steps = np.asarray(raw, dtype=np.int64)
    if noise > 0 and rng is None:
        raise ValueError("rng is required when noise > 0")
    pred = adis_predict(params, schedule_features(schedule, zeta=zeta), num_params=num_params)
    if steps.size == 0 or steps.min() < 0 or steps.max() >= schedule.total_steps:
        raise ValueError(f"steps must be non-empty and lie in [0, {schedule.total_steps - 1}]")
    lg, lt = pred.loss_general[steps], pred.loss_target[steps]
    if noise:
        lg = lg * (1 + noise * rng.standard_normal(lg.shape))
        lt = lt * (1 + noise * rng.standard_normal(lt.shape))
    if name is None:
        p = schedule.policy
        name = "base" if p is None else f"lam={p.fraction:g},r={p.mix_ratio:g},eta={p.peak_lr:g}"
    return Trajectory.from_schedule(schedule, steps, lg, lt, name=name, num_params=num_params)


# --------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class PolicyScore:
    """A candidate's predicted outcome at the end of the schedule.

    Attributes
    ----------
    policy : InjectionPolicy
    utility : float
        ``U(pi)`` of Eq. (4) (lower is better).
    loss_general, loss_target : float
        Predicted ``L_G(S)`` and ``L_T(S)``.
    """

    policy: InjectionPolicy
    utility: float
    loss_general: float
    loss_target: float


def rank_policies(
    params,
    candidates: Sequence[InjectionPolicy],
    *,
    total_steps: int,
    peak_lr: float,
    mu: float = 1.0,
    num_params: float | None = None,
    zeta: float = 0.999,
    warmup_frac: float = 0.02,
    anneal_frac: float = 0.2,
    min_lr_ratio: float = 0.1,
    rewarm_frac: float = 0.02,
) -> list[PolicyScore]:
    """Rank injection policies by the predicted utility of Eq. (4), best first.

    Parameters
    ----------
    params : ADISParams or ADISFit
    candidates : sequence of InjectionPolicy
    total_steps : int
        ``S`` of the target budget (each candidate gets a WSD schedule of this length).
    peak_lr : float
        ``eta_0`` of the base schedule.
    mu : float
        Weight of a general-loss regression over the base run.
    num_params : float, optional
        ``N`` for a model-scale law.
    zeta, warmup_frac, anneal_frac, min_lr_ratio, rewarm_frac : float
        As in :func:`schedule_features` and :func:`wsd_schedule`.

    Returns
    -------
    list of PolicyScore
        Sorted by utility, ties broken by the policy's values, so the result does not
        depend on the order of ``candidates``.
    """
    if isinstance(params, ADISFit):
        params = params.params
    if not isinstance(params, ADISParams):
        raise TypeError(f"params must be ADISParams or ADISFit, got {type(params).__name__}")
    if not isinstance(candidates, (list, tuple)):
        raise TypeError(f"candidates must be a list of InjectionPolicy, got "
                        f"{type(candidates).__name__}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must hold at least one InjectionPolicy")
    for c in candidates:
        if not isinstance(c, InjectionPolicy):
            raise TypeError(f"candidates must hold InjectionPolicy objects, got {type(c).__name__}")
    mu = check_real("mu", mu, low=0.0)
    kw = dict(peak_lr=peak_lr, warmup_frac=warmup_frac, anneal_frac=anneal_frac,
              min_lr_ratio=min_lr_ratio, rewarm_frac=rewarm_frac)
    base = adis_predict(params, schedule_features(wsd_schedule(total_steps, **kw), zeta=zeta),
                        num_params=num_params)
    lg_base = float(base.loss_general[-1])
    scores = []
    for c in candidates:
        f = schedule_features(wsd_schedule(total_steps, policy=c, **kw), zeta=zeta)
        pred = adis_predict(params, f, num_params=num_params)
        lg, lt = float(pred.loss_general[-1]), float(pred.loss_target[-1])
        u = lt + mu * max(0.0, lg - lg_base)  # Eq. (4)
        scores.append(PolicyScore(policy=c, utility=u, loss_general=lg, loss_target=lt))
    return sorted(scores, key=lambda p: (p.utility, p.policy))


# --------------------------------------------------------------------------- estimator


class ADISLaw(BaseEstimator):
    """ADIS-Law as a scikit-learn style estimator.

    Parameters
    ----------
    zeta, restarts, loss, f_scale, seed, floor_forgetting, forgetting
        As in :func:`fit_adis_law`.

    Attributes
    ----------
    params_ : ADISParams
    fit_ : ADISFit

    Examples
    --------
    >>> law = ADISLaw(restarts=2)
    >>> law.restarts
    2
    """

    def __init__(self, *, zeta: float = 0.999, restarts: int = 20, loss: str = "huber",
                 f_scale: float = 0.01, seed: int = 0, floor_forgetting: bool = False,
                 forgetting: str = "linear"):
        self.zeta = zeta
        self.restarts = restarts
        self.loss = loss
        self.f_scale = f_scale
        self.seed = seed
        self.floor_forgetting = floor_forgetting
        self.forgetting = forgetting

    def fit(self, trajectories, y=None) -> ADISLaw:
        """Fit on trajectories (a sequence of :class:`Trajectory` or a DataFrame)."""
        self.fit_ = fit_adis_law(trajectories, zeta=self.zeta, restarts=self.restarts,
                                 loss=self.loss, f_scale=self.f_scale, seed=self.seed,
                                 floor_forgetting=self.floor_forgetting,
                                 forgetting=self.forgetting)
        self.params_ = self.fit_.params
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "params_"):
            raise RuntimeError("ADISLaw is not fitted; call fit() first")

    def predict(self, schedule, *, num_params: float | None = None) -> LawPrediction:
        """``L_G`` and ``L_T`` at every step of a :class:`Schedule` or a :class:`Trajectory`.

        A trajectory's prediction is taken at its logged steps.
        """
        self._check_fitted()
        if isinstance(schedule, Trajectory):
            f = schedule_features(schedule.lrs, mix=schedule.mix, zeta=self.zeta)
            pred = adis_predict(self.params_, f, num_params=schedule.num_params)
            return LawPrediction(loss_general=pred.loss_general[schedule.steps],
                                 loss_target=pred.loss_target[schedule.steps])
        if not isinstance(schedule, Schedule):
            raise TypeError(
                f"schedule must be a Schedule or Trajectory, got {type(schedule).__name__}")
        return adis_predict(self.params_, schedule_features(schedule, zeta=self.zeta),
                            num_params=num_params)

    def rank(self, candidates, *, total_steps: int, peak_lr: float, mu: float = 1.0,
             num_params: float | None = None, **schedule_kw) -> list[PolicyScore]:
        """:func:`rank_policies` with the fitted parameters."""
        self._check_fitted()
        return rank_policies(self.params_, candidates, total_steps=total_steps, peak_lr=peak_lr,
                             mu=mu, num_params=num_params, zeta=self.zeta, **schedule_kw)

