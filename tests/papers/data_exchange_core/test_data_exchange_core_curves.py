"""Learning curves: power-law recovery, real-data fit, bad input."""

import numpy as np
import pytest

from neurips26.papers.data_exchange_core import (
    Market,
    PowerLawCurve,
    dataset_curve,
    fit_learning_curve,
    fit_power_law,
)


@pytest.mark.parametrize(
    ("a_inf", "c", "gamma"), [(0.9, 0.5, 0.7), (0.97, 6.8, 0.9), (1.0, 0.2, 0.3)]
)
def test_power_law_recovered_from_noiseless_points(a_inf, c, gamma):
    d = np.array([8.0, 15, 30, 60, 120, 250, 500, 1000])
    curve = fit_power_law(d, a_inf - c * d**-gamma)
    assert curve.a_inf == pytest.approx(a_inf, abs=1e-6)
    assert curve.c == pytest.approx(c, abs=1e-6)
    assert curve.gamma == pytest.approx(gamma, abs=1e-6)
    assert curve.r2 == pytest.approx(1.0, abs=1e-9)
    assert (curve.min_size, curve.max_size) == (8.0, 1000.0)


def test_curve_is_callable_and_increasing():
    curve = PowerLawCurve(a_inf=0.9, c=0.5, gamma=0.5)
    d = np.linspace(1, 100, 50)
    assert np.all(np.diff(curve(d)) > 0)
    assert curve(np.ones((2, 3))).shape == (2, 3)


def test_fit_on_wine_is_monotone_and_cached():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    curve = fit_learning_curve(X, y, num_splits=2, seed=1)
    assert curve.gamma > 0 and curve.c > 0
    assert curve.r2 > 0.5
    assert 0.8 < curve(curve.max_size) <= 1.05
    Market([10.0, 20.0, 30.0], curve)  # passes the monotonicity check
    assert dataset_curve("wine", num_splits=2) is dataset_curve("wine", num_splits=2)


def test_bad_curve_inputs():
    d = np.array([10.0, 20.0, 40.0])
    with pytest.raises(ValueError, match="NaN"):
        fit_power_law(d, [0.5, np.nan, 0.7])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([0.0, 1.0, 2.0], [0.5, 0.6, 0.7])
    with pytest.raises(ValueError, match="3 distinct"):
        fit_power_law([5.0, 5.0, 6.0], [0.5, 0.6, 0.7])
    with pytest.raises(ValueError, match="equal length"):
        fit_power_law(d, [0.5, 0.6])
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_curve("mnist")
    with pytest.raises(ValueError, match="train_fractions"):
        fit_learning_curve(np.zeros((20, 2)), np.arange(20) % 2, train_fractions=(0.0, 0.5, 1.0))
    with pytest.raises(ValueError, match="NaN"):
        fit_learning_curve(np.full((20, 2), np.nan), np.arange(20) % 2)
