"""An ESIM-style event-camera simulator and event representations.

An event camera reports, per pixel and asynchronously, that the log intensity has changed
by a contrast threshold ``C`` since the pixel's last event (Gallego et al., 2020). ESIM
(Rebecq et al., 2018) simulates one from frames: it keeps a per-pixel reference log
intensity ``L_ref``, and between two frames, linearly interpolated in time, emits one
event each time ``L(t)`` crosses ``L_ref +- C``. We implement that rule vectorised over
pixels, with the non-idealities of real sensors that ESIM and v2e model: a per-pixel
threshold drawn around ``C`` (fixed-pattern mismatch), a refractory period after each
event, and background-activity noise events.

Camera motion is a saccade: the static image is translated along a small triangle, as
the N-MNIST and N-Caltech101 recordings moved a real sensor in front of a monitor
(Orchard et al., 2015).

References
----------
Rebecq, Gehrig, Scaramuzza. ESIM: an open event camera simulator. CoRL 2018.
Orchard, Jayawant, Cohen, Thakor. Converting static image datasets to spiking
neuromorphic datasets using saccades. Frontiers in Neuroscience, 2015.
Zhu, Yuan, Chaney, Daniilidis. Unsupervised event-based learning of optical flow, depth
and egomotion (voxel grid). CVPR 2019.
Lagorce et al. HOTS: a hierarchy of event-based time-surfaces. TPAMI 2017.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from neurips26.common.validation import check_array, check_float, check_int, check_seed

#: ITU-R BT.601 luma weights, as ESIM converts RGB frames.
LUMA = np.array([0.299, 0.587, 0.114])

# Added to |L - L_ref| / C before flooring so that a change of exactly k thresholds,
# computed in floating point, counts k events (never k - 1).
_FLOOR_SLACK = 1e-9
# Most events one pixel may emit between two frames (guards huge changes over tiny C).
_MAX_PER_STEP = 10_000


@dataclass(frozen=True)
class EventStream:
    """Events of one sensor of shape ``(H, W)``, sorted by time.

    Attributes
    ----------
    t : ndarray (E,) float64
        Timestamps in the units of the frame times.
    x, y : ndarray (E,) int64
        Column and row of each event.
    p : ndarray (E,) int8
        Polarity, +1 (brighter) or -1 (darker).
    shape : (int, int)
        ``(H, W)`` of the sensor.
    duration : float
        Time span of the recording (last frame time minus the first).
    """

    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    p: np.ndarray
    shape: tuple[int, int]
    duration: float

    def __len__(self) -> int:
        return int(self.t.size)

    def counts(self) -> np.ndarray:
        """Events per pixel and polarity, ``(2, H, W)`` (channel 0: positive)."""
        return event_histogram(self)


def luminance(image) -> np.ndarray:
    """Luma ``Y = 0.299 R + 0.587 G + 0.114 B`` of RGB images ``(..., 3, H, W)``.

    Examples
    --------
    >>> round(float(luminance(np.ones((3, 2, 2)))[0, 0]), 12)
    1.0
    """
    img = check_array(image, "image", dtype=np.float64)
    if img.ndim < 3 or img.shape[-3] != 3:
        raise ValueError(f"image must have shape (..., 3, H, W), got {img.shape}")
    return np.tensordot(img, LUMA, axes=([-3], [0]))


def pixel_thresholds(shape, *, contrast_threshold: float = 0.15, threshold_jitter: float = 0.0,
                     min_threshold: float = 0.01, seed: int = 0) -> np.ndarray:
    """Per-pixel contrast thresholds ``C_ij ~ N(C, sigma_C^2)``, clipped below.

    Parameters
    ----------
    shape : tuple of int
        Sensor shape, e.g. ``(H, W)``.
    contrast_threshold : float
        The nominal threshold ``C`` (> 0).
    threshold_jitter : float
        ``sigma_C`` (>= 0); 0 gives ``C`` at every pixel.
    min_threshold : float
        Floor of the drawn thresholds (> 0, as a real comparator has one).
    seed : int

    Examples
    --------
    >>> pixel_thresholds((2, 2), contrast_threshold=0.2).tolist()
    [[0.2, 0.2], [0.2, 0.2]]
    """
    shape = tuple(check_int(s, "shape", min=1, max=1 << 16) for s in np.atleast_1d(shape))
    c = check_float(contrast_threshold, "contrast_threshold", min=0, max=100,
                    min_inclusive=False)
    sigma = check_float(threshold_jitter, "threshold_jitter", min=0, max=100)
    floor = check_float(min_threshold, "min_threshold", min=0, max=100, min_inclusive=False)
    if sigma == 0:
        return np.full(shape, c)
    rng = np.random.default_rng(check_seed(seed))
    return np.maximum(rng.normal(c, sigma, size=shape), floor)


def esim(log_frames, times, thresholds, *, refractory: float = 0.0, noise_rate: float = 0.0,
         seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ESIM event rule on pixels laid out along the last axis.

    Parameters
    ----------
    log_frames : ndarray (T, M)
        Log intensity ``L_k`` of ``M`` pixels at ``T >= 2`` frame times.
    times : ndarray (T,)
        Strictly increasing frame times ``t_k``.
    thresholds : ndarray (M,)
        Per-pixel contrast thresholds ``C_i > 0``.
    refractory : float
        Refractory period ``tau_r >= 0``: a crossing less than ``tau_r`` after the pixel's
        last emitted event is not reported (the reference still moves past it, as the
        pixel reset would).
    noise_rate : float
        Background-activity noise: Poisson events per pixel per time unit (random
        polarity, uniform times), added after the rule.
    seed : int
        Seeds the noise.

    Returns
    -------
    t : ndarray (E,) float64
    pixel : ndarray (E,) int64
    p : ndarray (E,) int8
        Sorted by time (ties by pixel).
    """
    L = check_array(log_frames, "log_frames", ndim=2, dtype=np.float64)
    T, M = L.shape
    if T < 2:
        raise ValueError(f"log_frames needs at least 2 frames, got {T}")
    ts = check_array(times, "times", shape=(T,), dtype=np.float64)
    if np.any(np.diff(ts) <= 0):
        raise ValueError("times must be strictly increasing")
    C = check_array(thresholds, "thresholds", shape=(M,), dtype=np.float64)
    if np.any(C <= 0):
        raise ValueError("thresholds must be positive (a contrast threshold C > 0)")
    refractory = check_float(refractory, "refractory", min=0, max=1e12)
    noise_rate = check_float(noise_rate, "noise_rate", min=0, max=1e6)
    seed = check_seed(seed)

    ref = L[0].copy()  # L_ref starts at L_0
    last = np.full(M, -np.inf)  # time of each pixel's last emitted event
    out_t, out_i, out_p = [], [], []
    for k in range(1, T):
        d = L[k] - ref  # L_t - L_ref
        n = np.floor(np.abs(d) / C + _FLOOR_SLACK).astype(np.int64)  # N = floor(|dL| / C)
        if n.max(initial=0) > _MAX_PER_STEP:
            raise ValueError(f"thresholds: a pixel would emit more than {_MAX_PER_STEP} "
                             "events between two frames; raise the contrast threshold")
        sgn = np.sign(d)
        slope = L[k] - L[k - 1]
        for j in range(1, int(n.max(initial=0)) + 1):
            idx = np.flatnonzero(n >= j)
            # The j-th crossing, L_ref + j*s*C, reached on the linear path from L_{k-1}.
            level = ref[idx] + j * sgn[idx] * C[idx]
            frac = np.where(slope[idx] != 0,
                            (level - L[k - 1, idx]) / np.where(slope[idx] != 0, slope[idx], 1),
                            1.0)
            t_ev = ts[k - 1] + np.clip(frac, 0.0, 1.0) * (ts[k] - ts[k - 1])
            ok = t_ev - last[idx] >= refractory
            keep = idx[ok]
            last[keep] = t_ev[ok]
            out_t.append(t_ev[ok])
            out_i.append(keep)
            out_p.append(sgn[keep].astype(np.int8))
        ref += sgn * n * C  # L_ref moves by s * N * C
    if noise_rate > 0:
        rng = np.random.default_rng(seed)
        lam = noise_rate * (ts[-1] - ts[0])
        counts = rng.poisson(lam, size=M)
        pix = np.repeat(np.arange(M), counts)
        out_t.append(rng.uniform(ts[0], ts[-1], size=pix.size))
        out_i.append(pix)
        out_p.append(np.where(rng.random(pix.size) < 0.5, 1, -1).astype(np.int8))
    if not out_t:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int8)
    t = np.concatenate(out_t)
    i = np.concatenate(out_i).astype(np.int64)
    p = np.concatenate(out_p).astype(np.int8)
    order = np.lexsort((i, t))
    return t[order], i[order], p[order]


def saccade_path(num_steps: int = 6, amplitude: float = 1.0) -> np.ndarray:
    """Sub-pixel translations ``(num_steps + 1, 2)`` (dy, dx) along a closed triangle.

    The three legs mimic the three saccades with which N-MNIST was recorded; the first
    position is ``(0, 0)`` and positions are spaced evenly along the perimeter.

    Examples
    --------
    >>> p = saccade_path(3, 2.0)
    >>> p.shape, p[0].tolist(), p[-1].tolist(), bool(abs(p).max() <= 2.0)
    ((4, 2), [0.0, 0.0], [0.0, 0.0], True)
    """
    num_steps = check_int(num_steps, "num_steps", min=1, max=10_000)
    amplitude = check_float(amplitude, "amplitude", min=0, max=1e3)
    verts = amplitude * np.array([[0.0, 0.0], [1.0, 0.5], [0.0, 1.0], [0.0, 0.0]])
    seg = np.linalg.norm(np.diff(verts, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    s = np.linspace(0.0, cum[-1], num_steps + 1)
    if cum[-1] == 0:
        return np.zeros((num_steps + 1, 2))
    return np.stack([np.interp(s, cum, verts[:, 0]), np.interp(s, cum, verts[:, 1])], axis=1)


def saccade_frames(images, *, num_steps: int = 6, amplitude: float = 1.0) -> np.ndarray:
    """Luminance frames of images moved along :func:`saccade_path`.

    Parameters
    ----------
    images : ndarray (N, 3, H, W) or (N, 1, H, W) in [0, 1]
        RGB or grey images (grey is taken as luminance).
    num_steps, amplitude : int, float
        Steps of the saccade and its size in pixels.

    Returns
    -------
    ndarray (num_steps + 1, N, H, W)
        Translated luminance (``scipy.ndimage.shift``, order 1, edges replicated).
    """
    x = _check_images(images, "images", channels=(1, 3))
    Y = x[:, 0] if x.shape[1] == 1 else luminance(x)
    path = saccade_path(num_steps, amplitude)
    return np.stack([ndimage.shift(Y, (0.0, dy, dx), order=1, mode="nearest")
                     for dy, dx in path])


def _check_images(images, name, *, channels=(3,)):
    x = check_array(images, name, ndim=4, dtype=np.float64)
    if x.shape[1] not in channels:
        raise ValueError(f"{name} must have shape (N, C, H, W) with C in {channels}, "
                         f"got {x.shape}")
    if x.min() < 0 or x.max() > 1:
        raise ValueError(f"{name} values must lie in [0, 1], got [{x.min():.3g}, {x.max():.3g}]")
    return x


def simulate_events(frames, *, times=None, contrast_threshold: float = 0.15,
                    threshold_jitter: float = 0.0, refractory: float = 0.0,
                    noise_rate: float = 0.0, eps: float = 1e-3, seed: int = 0) -> EventStream:
    """Events of a video of intensity frames (ESIM's contrast-threshold rule).

    Parameters
    ----------
    frames : ndarray (T, H, W) in [0, 1]
        Intensity (luminance) frames; ``T >= 2``. All must have the same size.
    times : ndarray (T,), optional
        Strictly increasing frame times; default ``0, 1, ..., T - 1``.
    contrast_threshold : float
        Nominal ``C > 0`` of the rule ``N = floor(|L_t - L_ref| / C)``.
    threshold_jitter : float
        ``sigma_C >= 0`` of per-pixel thresholds (fixed per pixel for the recording).
    refractory : float
        Refractory period ``>= 0`` (time units of ``times``).
    noise_rate : float
        Background-activity noise events per pixel per time unit (``>= 0``).
    eps : float
        Offset of the log, ``L = log(eps + Y)`` (> 0).
    seed : int
        Seeds the threshold draw and the noise.

    Returns
    -------
    EventStream

    Examples
    --------
    >>> ramp = np.stack([np.full((1, 1), v) for v in (0.1, 0.2, 0.4)])
    >>> ev = simulate_events(ramp, contrast_threshold=0.3, eps=1e-9)
    >>> len(ev), ev.p.tolist()   # log 4 = 1.386 = 4.6 thresholds
    (4, [1, 1, 1, 1])
    """
    if isinstance(frames, (list, tuple)):
        shapes = {np.shape(f) for f in frames}
        if len(shapes) > 1:
            raise ValueError(f"frames must all have the same size, got shapes {sorted(shapes)}")
    f = check_array(frames, "frames", ndim=3, dtype=np.float64)
    if f.shape[0] < 2:
        raise ValueError(f"frames needs at least 2 frames, got {f.shape[0]}")
    if f.min() < 0 or f.max() > 1:
        raise ValueError(f"frames values must lie in [0, 1], got [{f.min():.3g}, {f.max():.3g}]")
    T, H, W = f.shape
    eps = check_float(eps, "eps", min=0, max=1, min_inclusive=False)
    if times is None:
        times = np.arange(T, dtype=np.float64)
    C = pixel_thresholds((H * W,), contrast_threshold=contrast_threshold,
                         threshold_jitter=threshold_jitter, seed=seed)
    L = np.log(eps + f.reshape(T, H * W))  # L_t = log(eps + Y_t)
    t, i, p = esim(L, times, C, refractory=refractory, noise_rate=noise_rate, seed=seed)
    ts = np.asarray(times, dtype=np.float64)
    return EventStream(t, i % W, i // W, p, (H, W), float(ts[-1] - ts[0]))


def event_frames(images, *, contrast_threshold: float = 0.15, num_steps: int = 6,
                 amplitude: float = 1.0, threshold_jitter: float = 0.0,
                 refractory: float = 0.0, noise_rate: float = 0.0, eps: float = 1e-3,
                 normalize: bool = True, seed: int = 0) -> np.ndarray:
    """Two-channel polarity count frames of images seen through a saccade.

    Each image is moved along :func:`saccade_path` (frame times ``0..num_steps``),
    events are simulated with :func:`esim` and counted per polarity; with ``normalize``
    each frame is divided by its 99th percentile of non-zero counts and clipped to 1.

    Parameters
    ----------
    images : ndarray (N, 3, H, W) or (N, 1, H, W) in [0, 1]
    contrast_threshold, threshold_jitter, refractory, noise_rate, eps, seed
        As in :func:`simulate_events` (one threshold map for all images).
    num_steps, amplitude : int, float
        The saccade.
    normalize : bool

    Returns
    -------
    ndarray (N, 2, H, W) float32

    Examples
    --------
    >>> img = np.zeros((1, 3, 8, 8)); img[:, :, :, 4:] = 1.0
    >>> fr = event_frames(img, normalize=False)
    >>> fr.shape, bool(fr[0, :, :, :2].sum() == 0)
    ((1, 2, 8, 8), True)
    """
    if not isinstance(normalize, bool):
        raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
    eps = check_float(eps, "eps", min=0, max=1, min_inclusive=False)
    seq = saccade_frames(images, num_steps=num_steps, amplitude=amplitude)  # (T, N, H, W)
    T, N, H, W = seq.shape
    C = np.tile(pixel_thresholds((H * W,), contrast_threshold=contrast_threshold,
                                 threshold_jitter=threshold_jitter, seed=seed), N)
    L = np.log(eps + np.clip(seq, 0, 1).reshape(T, N * H * W))
    _, i, p = esim(L, np.arange(T, dtype=np.float64), C, refractory=refractory,
                   noise_rate=noise_rate, seed=seed)
    out = np.zeros((N * H * W, 2))
    np.add.at(out, (i, (p < 0).astype(np.int64)), 1.0)
    out = out.reshape(N, H, W, 2).transpose(0, 3, 1, 2)
    if normalize:
        out = normalize_frames(out)
    return out.astype(np.float32)


def normalize_frames(frames) -> np.ndarray:
    """Divide each frame ``(N, ...)`` by its 99th percentile of non-zero values, clip to 1.

    Frames with no non-zero value stay zero.

    Examples
    --------
    >>> normalize_frames(np.array([[0.0, 2.0, 4.0]])).round(2).tolist()
    [[0.0, 0.5, 1.0]]
    """
    f = check_array(frames, "frames", ndim=(2, 3, 4), dtype=np.float64, min=0)
    flat = f.reshape(len(f), -1)
    out = np.zeros_like(flat)
    for k, row in enumerate(flat):
        nz = row[row > 0]
        if nz.size:
            out[k] = np.minimum(row / np.percentile(nz, 99), 1.0)
    return out.reshape(f.shape)


def _check_stream(events, name="events"):
    if not isinstance(events, EventStream):
        raise TypeError(f"{name} must be an EventStream, got {type(events).__name__}")
    return events


def event_histogram(events: EventStream) -> np.ndarray:
    """Event counts per polarity ``(2, H, W)``: channel 0 positive, channel 1 negative.

    Examples
    --------
    >>> ev = EventStream(np.array([0.5]), np.array([1]), np.array([0]), np.array([-1], np.int8),
    ...                  (1, 2), 1.0)
    >>> event_histogram(ev).tolist()
    [[[0.0, 0.0]], [[0.0, 1.0]]]
    """
    ev = _check_stream(events)
    H, W = ev.shape
    out = np.zeros((2, H, W))
    np.add.at(out, ((ev.p < 0).astype(np.int64), ev.y, ev.x), 1.0)
    return out


def voxel_grid(events: EventStream, num_bins: int = 5) -> np.ndarray:
    """Voxel grid ``(B, H, W)``: polarities spread bilinearly over ``B`` time bins.

    Each event adds ``p * max(0, 1 - |t* - b|)`` to bin ``b``, with
    ``t* = (B - 1)(t - t_0) / (t_E - t_0)`` (Zhu et al., 2019); the sum over bins is the
    net polarity count per pixel.

    Examples
    --------
    >>> ev = EventStream(np.array([0.0, 1.0]), np.array([0, 0]), np.array([0, 0]),
    ...                  np.array([1, 1], np.int8), (1, 1), 1.0)
    >>> voxel_grid(ev, 3)[:, 0, 0].tolist()
    [1.0, 0.0, 1.0]
    """
    ev = _check_stream(events)
    B = check_int(num_bins, "num_bins", min=1, max=10_000)
    H, W = ev.shape
    out = np.zeros((B, H, W))
    if len(ev) == 0:
        return out
    span = ev.t[-1] - ev.t[0]
    ts = (B - 1) * (ev.t - ev.t[0]) / span if span > 0 else np.zeros_like(ev.t)
    lo = np.floor(ts).astype(np.int64)
    for b, w in ((lo, 1.0 - (ts - lo)), (np.minimum(lo + 1, B - 1), ts - lo)):
        np.add.at(out, (b, ev.y, ev.x), ev.p * w * (b < B))
    return out


def time_surface(events: EventStream, tau: float = 1.0) -> np.ndarray:
    """Exponentially decaying time surface ``(2, H, W)`` at the end of the stream.

    ``S_p(x, y) = exp(-(t_end - t_last_p(x, y)) / tau)`` with ``t_last_p`` the time of the
    pixel's last event of polarity ``p`` (0 where there was none) and ``t_end`` the last
    event's time (Lagorce et al., 2017).

    Examples
    --------
    >>> ev = EventStream(np.array([0.0, 1.0]), np.array([0, 1]), np.array([0, 0]),
    ...                  np.array([1, 1], np.int8), (1, 2), 1.0)
    >>> time_surface(ev, 1.0)[0].round(3).tolist()
    [[0.368, 1.0]]
    """
    ev = _check_stream(events)
    tau = check_float(tau, "tau", min=0, max=1e12, min_inclusive=False)
    H, W = ev.shape
    last = np.full((2, H, W), -np.inf)
    if len(ev) == 0:
        return np.zeros((2, H, W))
    np.maximum.at(last, ((ev.p < 0).astype(np.int64), ev.y, ev.x), ev.t)
    return np.exp(-(ev.t.max() - last) / tau)
