"""The shared plateau rule against a direct transcription of its definition."""

import math

import numpy as np
import pytest

from neurips26.common.plateau import Plateau


def _reference(values, patience, tol):
    """The first evaluation index (1-based count) at which ``patience`` evaluations in a
    row fail to beat the last counted value by the relative margin, or None."""
    r, run = math.inf, 0
    for i, v in enumerate(values):
        if v < (1 - tol) * r:
            r, run = v, 0
        else:
            run += 1
        if run >= patience:
            return i + 1
    return None


@pytest.mark.parametrize("seed", range(20))
def test_fires_where_the_definition_says(seed):
    rng = np.random.default_rng(seed)
    patience, tol = int(rng.integers(1, 5)), float(rng.choice([0.0, 0.01, 0.05]))
    # a noisy decaying loss that flattens
    values = list(np.exp(-np.linspace(0, 3, 60)) + 0.05 * rng.random(60))
    rule = Plateau(patience, tol)
    fired = next((i + 1 for i, v in enumerate(values) if rule.update(v)), None)
    assert fired == _reference(values, patience, tol)
    assert rule.best == min(rule.values)


def test_slow_progress_accumulates_and_stays_fired():
    rule = Plateau(patience=4, min_improvement=0.1)
    # each step is 4% below the last: no single one counts against the one before, but
    # every third reaches the 10% margin against the reference (0.96^3 < 0.9)
    values = [0.96**k for k in range(12)]
    assert not any(rule.update(v) for v in values)
    assert rule.reference == values[9] and rule.since == 2
    assert [rule.update(values[-1]) for _ in range(3)] == [False, True, True]
    assert rule.update(0.0) is True  # once fired, stays fired


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="patience"):
        Plateau(0)
    with pytest.raises(TypeError, match="patience"):
        Plateau(2.5)
    with pytest.raises(ValueError, match="min_improvement"):
        Plateau(2, 1.0)
    with pytest.raises(ValueError, match="min_improvement"):
        Plateau(2, float("nan"))
    rule = Plateau(2)
    with pytest.raises(ValueError, match="value"):
        rule.update(float("nan"))
    with pytest.raises(TypeError, match="value"):
        rule.update("0.5")
    with pytest.raises(TypeError, match="value"):
        rule.update(None)
    assert rule.update(np.float32(0.5)) is False and rule.update(math.inf) is False
