"""The orientation warning for models x items tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from neurips26.common.frames import OrientationWarning, warn_if_transposed


def _warned(*args, **kwargs) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_transposed(*args, **kwargs)
    return [w for w in caught if issubclass(w.category, OrientationWarning)]


@pytest.mark.parametrize(
    ("shape", "warns"),
    [
        ((41871, 12), True),  # a real LLM benchmark passed items-first
        ((500, 50), True),  # exactly ratio 10 and >= 50 rows
        ((499, 50), False),  # just under the ratio
        ((98, 57), False),  # MMLU: K < N is valid
        ((12, 41871), False),  # the usual orientation
        ((40, 2), False),  # too few rows to judge
    ],
)
def test_rule_fires_only_on_a_clear_imbalance(shape, warns):
    assert bool(_warned(shape, "scores", rows="models", cols="items")) is warns


def test_long_axis_rows_mirrors_the_rule():
    # (questions, agents): questions are normally the long axis, so a wide table warns.
    assert _warned((12, 600), "answers", rows="questions", cols="agents", long_axis="rows")
    assert not _warned((600, 12), "answers", rows="questions", cols="agents", long_axis="rows")


def test_message_names_the_argument_and_the_fix():
    (w,) = _warned((5000, 12), "Y", rows="models", cols="items")
    text = str(w.message)
    assert text.startswith("Y has 5000 models (rows) and 12 items (columns)")
    assert "Y.T" in text and "OrientationWarning" in text


@pytest.mark.parametrize(
    ("kwargs", "exc", "word"),
    [
        ({"shape": (3,)}, ValueError, "shape"),
        ({"shape": (3, -1)}, ValueError, "shape"),
        ({"shape": (3.5, 2)}, TypeError, "shape"),
        ({"long_axis": "diag"}, ValueError, "long_axis"),
        ({"ratio": 0.5}, ValueError, "ratio"),
        ({"ratio": float("nan")}, ValueError, "ratio"),
        ({"min_size": 0}, ValueError, "min_size"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, exc, word):
    args = {"shape": (10, 10), "name": "x", "rows": "models", "cols": "items", **kwargs}
    with pytest.raises(exc, match=word):
        warn_if_transposed(**args)


def test_monoculture_warns_on_a_transposed_frame():
    from neurips26.papers.monoculture import as_correctness_matrix

    rng = np.random.default_rng(0)
    y = (rng.normal(size=(8, 1)) + rng.normal(size=(8, 600)) > 0).astype(float)
    frame = pd.DataFrame(y, index=[f"model{i}" for i in range(8)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", OrientationWarning)
        as_correctness_matrix(frame)  # the usual orientation: silent
    with pytest.warns(OrientationWarning, match="Y has 600 models"):
        as_correctness_matrix(frame.T)


def test_multiagent_neff_warns_on_an_agents_first_log():
    from neurips26.papers.multiagent_neff import answer_neff

    rng = np.random.default_rng(0)
    answers = rng.integers(0, 4, size=(300, 5))  # 300 questions x 5 agents
    with warnings.catch_warnings():
        warnings.simplefilter("error", OrientationWarning)
        answer_neff(answers)  # the usual orientation: silent
    with pytest.warns(OrientationWarning, match="answers has 5 questions"):
        answer_neff(answers.T)
