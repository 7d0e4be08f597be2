"""Bad-input property tests for asvq (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-dtype, negative and huge values
(numpy arrays and torch tensors), one argument at a time: it must refuse them with a
ValueError/TypeError naming the argument, or return a result without new NaN/inf, and
never hang.
"""

from __future__ import annotations

import tempfile
import wave
from pathlib import Path

import numpy as np
import torch

from _fuzz import (
    BAD_ARRAYS,
    BAD_SCALARS,
    Call,
    cases,
    check_bad_argument,
    fuzz_tests,
    with_array_tensors,
)
from neurips26.papers.asvq import (
    ASVQ,
    EMAVQ,
    SimVQ,
    VanillaVQ,
    VQAutoencoder,
    codebook_perplexity,
    codebook_usage,
    count_loss_spikes,
    evaluate_vqae,
    load_speech_clips,
    log_spectrogram,
    nearest_code,
    read_wav,
    rotate_to,
    train_vqae,
)

A, S = BAD_ARRAYS, BAD_SCALARS
#: Bad tensors: empty, NaN, inf, wrong rank, integer, huge; plus every bad numpy array.
T = (
    torch.tensor([]),
    torch.tensor([[[float("nan"), 1.0, 2.0, 3.0]]]),
    torch.tensor([[[float("inf"), 1.0, 2.0, 3.0]]]),
    torch.tensor([1.0, 2.0, 3.0]),
    torch.ones(2, 3, 4, dtype=torch.int64),
    torch.full((1, 2, 4), 1e30),
    torch.ones(2, 3, 5),
    *A,
)
BOOLS = (None, "abc", 1, 0.5)

G = torch.Generator().manual_seed(0)
Z = torch.randn(2, 5, 4, generator=G)
C = torch.randn(16, 4, generator=G)
IMG = np.random.default_rng(0).random((8, 1, 8, 8)).astype(np.float32)
IDX = np.array([0, 1, 1, 3])


def _model():
    return VQAutoencoder(1, quantizer=ASVQ(4, 16), dim=4, hidden=4)


MODEL = _model()

_WAVS = Path(tempfile.mkdtemp(prefix="asvq_fuzz_"))
for _i in range(5):
    with wave.open(str(_WAVS / f"w{_i}.wav"), "wb") as _w:
        _w.setnchannels(1)
        _w.setsampwidth(2)
        _w.setframerate(8000)
        _w.writeframes(np.random.default_rng(_i).integers(-9000, 9000, 300, dtype="<i2")
                       .tobytes())  # fmt: skip


def asvq_forward(z, **kw):
    """ASVQ's constructor (``kw``) and one training forward."""
    args = {"dim": 4, "codebook_size": 16, **kw}
    return ASVQ(**args).train()(z)


def simvq_forward(z, **kw):
    return SimVQ(**{"dim": 4, "codebook_size": 16, **kw})(z)


def vanilla_forward(z, **kw):
    return VanillaVQ(**{"dim": 4, "codebook_size": 16, **kw})(z)


def ema_forward(z, **kw):
    return EMAVQ(**{"dim": 4, "codebook_size": 16, **kw}).train()(z)


def autoencoder_forward(x, **kw):
    args = {"in_channels": 1, "dim": 4, "hidden": 4, "kind": "image", **kw}
    return VQAutoencoder(quantizer=ASVQ(4, 16), **args)(x)


def autoencoder_quantizer(quantizer):
    return VQAutoencoder(1, quantizer=quantizer, dim=4, hidden=4)


def indices_to_codes(indices):
    return ASVQ(4, 16).indices_to_codes(indices)


X = torch.rand(2, 1, 8, 8, generator=G)
CTOR = {"codebook_size": S, "commitment_weight": S, "rotation_trick": BOOLS,
        "channel_first": BOOLS, "seed": S}  # fmt: skip

CALLS = [
    Call(nearest_code, {"z": Z[0], "codebook": C}, {"z": T, "codebook": T}),
    Call(rotate_to, {"z": Z, "q": Z + 1}, {"z": T, "q": T}),
    Call(codebook_usage, {"indices": IDX, "codebook_size": 4},
         {"indices": A, "codebook_size": S}),
    Call(codebook_perplexity, {"indices": IDX, "codebook_size": 4},
         {"indices": A, "codebook_size": S}),
    Call(count_loss_spikes, {"losses": np.ones(10), "window": 3, "factor": 2.0},
         {"losses": A, "window": S, "factor": S}),
    Call(asvq_forward, {"z": Z},
         {"z": T, "dim": S, **CTOR, "scale": (None, "cubic", 3), "data_init": BOOLS,
          "ema_decay": S}),
    Call(asvq_forward, {"z": Z, "scale": "ema_stats"}, {"z": T, "ema_decay": S}),
    Call(simvq_forward, {"z": Z}, {"z": T, **CTOR, "codebook_transform": ("abc", 3)}),
    Call(vanilla_forward, {"z": Z}, {"z": T, **CTOR}),
    Call(ema_forward, {"z": Z}, {"z": T, **CTOR, "decay": S, "dead_code_threshold": S}),
    Call(indices_to_codes, {"indices": torch.tensor([0, 3])},
         {"indices": (None, torch.tensor([-1]), torch.tensor([16]), torch.tensor([]),
                      torch.tensor([0.5]), np.array([1]))}),
    Call(autoencoder_forward, {"x": X},
         {"x": (*T, torch.rand(2, 1, 6, 6)), "in_channels": S, "dim": S, "hidden": S,
          "kind": (None, "video", 1), "seed": S}),
    Call(autoencoder_quantizer, {"quantizer": ASVQ(4, 16)},
         {"quantizer": (None, "abc", ASVQ(8, 16), ASVQ(4, 16, channel_first=True),
                        torch.nn.Linear(4, 4))}),
    Call(train_vqae, {"model": MODEL, "data": IMG, "max_iter": 2, "batch_size": 4},
         {"model": (None, "abc", ASVQ(4, 16)), "data": A, "max_iter": S, "lr": S,
          "batch_size": S, "seed": S, "spike_window": S}),
    Call(evaluate_vqae, {"model": MODEL, "data": IMG},
         {"model": (None, "abc"), "data": A, "batch_size": S}),
    Call(load_speech_clips, {"clip_length": 128, "folder": _WAVS, "min_rms": 0.0},
         {"clip_length": S, "max_clips": S[1:], "min_rms": S, "folder": (3, 1.5, [1]),
          "seed": S}),
    Call(log_spectrogram, {"clips": np.zeros((2, 1, 128)), "frame": 64},
         {"clips": A, "frame": (*S, 3), "floor": S, "top": S}),
    Call(read_wav, {"path": _WAVS / "w0.wav"}, {"path": (None, 3, [1])}),
]  # fmt: skip
# Float numpy arguments also get tensors holding NaN and tensors requiring grad.
CALLS = with_array_tensors(CALLS)

# Bad inputs not yet refused with a message naming the argument (issue 10); each is an
# xfail(strict) below, so fixing one makes the test say to remove it from this list.
KNOWN_GAPS: frozenset = frozenset()


test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)


def test_every_case_at_once():
    # The hypothesis test samples cases; this walks all of them (cheap: tiny modules).
    for case in cases(CALLS, KNOWN_GAPS):
        check_bad_argument(*case)
