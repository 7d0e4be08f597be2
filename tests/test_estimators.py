"""Common checks over every scikit-learn style estimator of the papers (issue 11).

Every class with ``fit`` in a paper's ``__all__`` implements ``get_params``/``set_params``
(through ``sklearn.base.BaseEstimator``), so ``sklearn.base.clone`` and a readable repr
work. Classes are discovered, not listed, so a new paper's estimator is held to this too.
"""

from __future__ import annotations

import importlib
import inspect

import pytest
from sklearn.base import BaseEstimator, clone

from neurips26.registry import SLUGS

# Constructor arguments for estimators with required parameters (by class name).
REQUIRED = {
    "ChangePointLocalizer": lambda m: {"num_change_points": 2},
    "GETOBarycenter": lambda m: {"grid": m.GridSpec((2, 2))},
    "OracleRouter": lambda m: {"gold": {"q": 0}},
    "NoisyRouter": lambda m: {"base": m.RandomRouter(seed=1), "temperature": 0.5},
    "RobustSparseHalfspace": lambda m: {"sparsity": 2},
}


def _estimators():
    out = []
    for slug in SLUGS:
        mod = importlib.import_module(f"neurips26.papers.{slug}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and callable(getattr(obj, "fit", None)):
                if getattr(obj, "_is_protocol", False):  # typing.Protocol interfaces
                    continue
                out.append(pytest.param(mod, obj, id=f"{slug}.{name}"))
    return out


ESTIMATORS = _estimators()


def test_discovery_finds_the_known_estimators():
    names = {p.id.split(".")[1] for p in ESTIMATORS}
    assert {"GETOBarycenter", "MonocultureAudit", "ReliabilityAnalyzer"} <= names
    assert len(ESTIMATORS) >= 15


@pytest.mark.parametrize(("mod", "cls"), ESTIMATORS)
def test_estimator_clones_and_prints(mod, cls):
    kwargs = REQUIRED.get(cls.__name__, lambda m: {})(mod)
    est = cls(**kwargs)
    assert isinstance(est, BaseEstimator) or hasattr(est, "get_params")
    params = est.get_params()
    sig = inspect.signature(cls.__init__)
    named = [
        p
        for p in sig.parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    assert {p.name for p in named} <= set(params)
    twin = clone(est)
    assert type(twin) is cls and twin is not est
    assert twin.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    text = repr(est)
    assert text.startswith(cls.__name__ + "(")
    # set_params round-trips a parameter that has a default
    for p in named:
        if p.default is not inspect.Parameter.empty:
            est.set_params(**{p.name: params[p.name]})
            assert est.get_params()[p.name] is params[p.name]
            break
    if cls.__name__ != "JudgeValidator":  # its extra keywords are decision thresholds
        with pytest.raises(ValueError):
            est.set_params(no_such_parameter_xyz=1)


def test_judge_validator_clone_keeps_decision_thresholds():
    from neurips26.papers.judge_rasch import JudgeValidator

    v = JudgeValidator(num_categories=4, min_reliability=0.9)
    assert v.get_params()["min_reliability"] == 0.9
    twin = clone(v)
    assert twin.num_categories == 4 and twin.decision == {"min_reliability": 0.9}
    v.set_params(min_nsmf=0.5, seed=3)
    assert v.decision == {"min_reliability": 0.9, "min_nsmf": 0.5} and v.seed == 3
