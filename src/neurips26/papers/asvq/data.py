"""Real 8 kHz speech clips from Debian's asterisk English prompts, and image tokens data.

:func:`load_speech_clips` reads the WAV files of ``asterisk-core-sounds-en-wav`` (568
prompts by one female speaker, 8 kHz mono 16-bit, CC-BY-SA-3.0) with the standard
library's :mod:`wave`, cuts them into fixed-length clips, drops near-silent clips and
splits by file (every fifth file is held out), so no prompt is in both splits.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neurips26.common.data import DataNotInstalledError
from neurips26.common.validation import check_array, check_float, check_int, check_seed

__all__ = ["SPEECH_DIR", "SpeechClips", "load_speech_clips", "log_spectrogram", "read_wav"]

#: Where Debian's ``asterisk-core-sounds-en-wav`` installs the English prompts.
SPEECH_DIR = Path("/usr/share/asterisk/sounds/en_US_f_Allison")


@dataclass(frozen=True)
class SpeechClips:
    """Fixed-length speech clips, split by file.

    Attributes
    ----------
    x_train, x_test : ndarray, shape (N, 1, L), float32 in [-1, 1]
    sample_rate : int
    """

    x_train: np.ndarray
    x_test: np.ndarray
    sample_rate: int


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """A mono 16-bit PCM WAV file as floats in [-1, 1] and its sample rate.

    Examples
    --------
    >>> import io, wave
    >>> buf = io.BytesIO()
    >>> with wave.open(buf, "wb") as w:
    ...     w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
    ...     w.writeframes(np.array([0, 16384, -32768], "<i2").tobytes())
    >>> _ = buf.seek(0)
    >>> x, sr = read_wav(buf)
    >>> x.tolist(), sr
    ([0.0, 0.5, -1.0], 8000)
    """
    if not isinstance(path, (str, Path)) and not hasattr(path, "read"):
        raise TypeError(f"path must be a file name or a binary file, got {type(path).__name__}")
    try:
        handle = wave.open(path if not isinstance(path, Path) else str(path), "rb")
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"path: not a readable WAV file ({exc})") from None
    with handle as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"path: expected 16-bit PCM, got {8 * w.getsampwidth()}-bit")
        raw = w.readframes(w.getnframes())
        channels, rate = w.getnchannels(), w.getframerate()
    x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        x = x.reshape(-1, channels).mean(1)
    return x, rate


def load_speech_clips(clip_length: int = 2048, *, max_clips: int | None = None,
                      min_rms: float = 0.02, folder: str | Path | None = None,
                      seed: int = 0) -> SpeechClips:  # fmt: skip
    """Non-overlapping clips of the asterisk English prompts (real 8 kHz speech).

    Parameters
    ----------
    clip_length : int
        Samples per clip (2,048 = 0.256 s at 8 kHz; a multiple of 64 for the encoder).
    max_clips : int, optional
        Keep at most this many training clips (a seeded random subset); the test split
        keeps at most a quarter of it.
    min_rms : float
        Clips whose root mean square is below this are silence and are dropped.
    folder : path, optional
        A folder of WAV files (default :data:`SPEECH_DIR`).
    seed : int
        Seed of the subset.

    Returns
    -------
    SpeechClips

    Raises
    ------
    DataNotInstalledError
        When the folder has no WAV files (install ``asterisk-core-sounds-en-wav``).
    """
    clip_length = check_int(clip_length, "clip_length", min=64, max=2**20)
    if max_clips is not None:
        max_clips = check_int(max_clips, "max_clips", min=1, max=10**7)
    min_rms = check_float(min_rms, "min_rms", min=0.0, max=1.0)
    seed = check_seed(seed)
    if folder is not None and not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    root = Path(folder) if folder is not None else SPEECH_DIR
    files = sorted(root.glob("*.wav")) if root.is_dir() else []
    if not files:
        raise DataNotInstalledError(
            f"no WAV files under {root}: install Debian's asterisk-core-sounds-en-wav "
            "(apt-get install asterisk-core-sounds-en-wav)"
        )
    splits: dict[str, list[np.ndarray]] = {"train": [], "test": []}
    rate = 0
    for i, f in enumerate(files):
        x, rate = read_wav(f)
        n = len(x) // clip_length
        if n == 0:
            continue
        clips = x[: n * clip_length].reshape(n, clip_length)
        rms = np.sqrt((clips**2).mean(1))
        splits["test" if i % 5 == 4 else "train"].append(clips[rms >= min_rms])
    rng = np.random.default_rng(seed)
    out = {}
    for name, parts in splits.items():
        arr = np.concatenate(parts) if parts else np.zeros((0, clip_length), np.float32)
        cap = max_clips if name == "train" else (None if max_clips is None
                                                 else max(1, max_clips // 4))  # fmt: skip
        if cap is not None and len(arr) > cap:
            arr = arr[np.sort(rng.choice(len(arr), size=cap, replace=False))]
        out[name] = arr[:, None, :].astype(np.float32)
    if len(out["train"]) == 0 or len(out["test"]) == 0:
        raise ValueError(f"min_rms {min_rms} leaves no clip of {clip_length} samples")
    return SpeechClips(out["train"], out["test"], rate)


def log_spectrogram(clips, *, frame: int = 64, floor: float = 1e-4,
                    top: float = 10 ** 1.5) -> np.ndarray:  # fmt: skip
    """Log-magnitude spectrogram images of audio clips, scaled to [0, 1].

    Each clip is cut into non-overlapping Hann-windowed frames of ``frame`` samples; the
    magnitude of the real FFT of each frame, without its Nyquist bin, gives ``frame / 2``
    frequency rows. ``log10`` of the magnitude is mapped linearly from
    ``[log10(floor), log10(top)]`` to [0, 1] and clipped.

    Parameters
    ----------
    clips : ndarray, shape (N, 1, L)
        Audio in [-1, 1]; L a multiple of ``frame``.
    frame : int
        Frame (and FFT) length, even.
    floor, top : float
        Magnitudes mapped to 0 and 1.

    Returns
    -------
    ndarray, shape (N, 1, frame / 2, L / frame), float32 in [0, 1]
        Rows are frequencies (bin b is ``b * rate / frame`` Hz), columns frames.

    Examples
    --------
    >>> t = np.arange(2048) / 8000
    >>> spec = log_spectrogram(np.sin(2 * np.pi * 1000 * t)[None, None])
    >>> spec.shape, int(spec[0, 0, :, 5].argmax())  # 1 kHz = bin 1000 * 64 / 8000
    ((1, 1, 32, 32), 8)
    """
    frame = check_int(frame, "frame", min=2, max=2**16)
    if frame % 2:
        raise ValueError(f"frame must be even, got {frame}")
    floor = check_float(floor, "floor", min=0.0, min_inclusive=False, max=1e6)
    top = check_float(top, "top", min=floor, min_inclusive=False, max=1e12)
    x = check_array(clips, "clips", ndim=3, max_size=2 * 10**8, min=-1e6, max=1e6)
    if x.shape[1] != 1 or x.shape[2] % frame:
        raise ValueError(f"clips must have shape (N, 1, L) with L a multiple of {frame}, "
                         f"got {x.shape}")  # fmt: skip
    frames = x[:, 0].reshape(len(x), -1, frame) * np.hanning(frame)  # (N, T, frame)
    mag = np.abs(np.fft.rfft(frames, axis=-1))[..., : frame // 2]  # (N, T, F)
    lo, hi = np.log10(floor), np.log10(top)
    img = (np.log10(mag + floor) - lo) / (hi - lo)
    return np.clip(img, 0.0, 1.0).transpose(0, 2, 1)[:, None].astype(np.float32)
