"""Frame-feature videos for temporal action segmentation (TAS).

- :func:`make_procedural_videos`: procedural long videos whose frame features follow an
  activity grammar (ordered steps, optional and swappable ones), with lognormal segment
  lengths, confusable action prototypes, within-segment drift, a per-video style and a
  noise level that varies slowly along the video (frame complexity varies, as in real
  long procedural videos). No real TAS feature bank (Breakfast, 50Salads, GTEA) installs
  offline.
- :func:`photo_pan_frames`: real image sequences (slow pans across real photos, one photo
  per "action" segment) whose frames a real pretrained network turns into features.
- :class:`TASDataset`: videos (a list of ``(T_i, D)`` arrays) with frame labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_float, check_int, check_rng, check_seed

#: Largest total number of frames the generators produce (memory guard).
MAX_FRAMES = 5_000_000


@dataclass(frozen=True)
class TASDataset:
    """Videos of frame features with frame-wise action labels.

    Attributes
    ----------
    features : tuple of ndarray (T_i, D), float32
        The frame features x_t of each video.
    labels : tuple of ndarray (T_i,), int64
        Action label of every frame (never read by the memory's training path).
    activities : ndarray (V,), int64
        Activity (grammar) of each video.
    num_actions : int
    """

    features: tuple
    labels: tuple
    activities: np.ndarray
    num_actions: int

    def __len__(self) -> int:
        return len(self.features)

    @property
    def dim(self) -> int:
        """Feature dimension D."""
        return int(self.features[0].shape[1])

    @property
    def num_frames(self) -> int:
        return int(sum(len(f) for f in self.features))

    def subset(self, index) -> TASDataset:
        """The videos at positions ``index`` (a sequence of ints)."""
        index = [int(i) for i in index]
        if not index:
            raise ValueError("index must select at least one video")
        for i in index:
            if not 0 <= i < len(self):
                raise ValueError(f"index: {i} is out of range for {len(self)} videos")
        return TASDataset(tuple(self.features[i] for i in index),
                          tuple(self.labels[i] for i in index),
                          self.activities[index], self.num_actions)


def _grammar(num_actions: int, num_activities: int, rng) -> list[dict]:
    """Per activity: an ordered step list, optional steps and one swappable pair."""
    out = []
    for _ in range(num_activities):
        n = int(rng.integers(max(3, num_actions // 3), max(4, num_actions // 2) + 1))
        steps = list(rng.choice(num_actions, size=min(n, num_actions), replace=False))
        optional = set(int(i) for i in rng.choice(len(steps), size=len(steps) // 4,
                                                   replace=False) if 0 < i < len(steps) - 1)
        swap = int(rng.integers(0, len(steps) - 1))
        out.append({"steps": [int(s) for s in steps], "optional": optional, "swap": swap})
    return out


def make_procedural_videos(*, num_videos: int = 120, num_actions: int = 16,
                           num_activities: int = 4, dim: int = 64, mean_length: int = 600,
                           noise: float = 1.5, confusion: float = 0.95,
                           seed: int = 0) -> TASDataset:
    """Procedural TAS videos: frame features generated from an activity grammar.

    Each activity is an ordered list of actions; some steps are optional (skipped with
    probability 0.3) and one adjacent pair may be swapped (probability 0.5). Segment
    lengths are lognormal (sigma 0.4) with a per-action mean chosen so a video's expected
    length is about ``mean_length``. The feature of frame t in a segment of action a is

        x_t = 2 mu_a + s_v + d_t + sigma(t) eps_t,

    with mu_a a unit prototype in R^D (every odd action's prototype has cosine
    ``confusion`` with the previous action's, so actions are confusable), s_v a per-video style
    offset, d_t an AR(1) drift restarted at each segment, and a noise std sigma(t) that
    varies slowly along the video between 0.5 and 1.5 times ``noise`` (per dimension
    scaled by 1/sqrt(D) times 4, so the signal-to-noise ratio does not depend on D).

    Parameters
    ----------
    num_videos, num_actions, num_activities : int
    dim : int
        Feature dimension D.
    mean_length : int
        Expected frames per video (videos vary around it).
    noise : float
        Overall noise level (> 0).
    confusion : float
        Cosine between the prototypes of confusable pairs, in [0, 1).
    seed : int

    Returns
    -------
    TASDataset

    Examples
    --------
    >>> ds = make_procedural_videos(num_videos=3, dim=8, mean_length=100, seed=0)
    >>> len(ds), ds.dim, ds.features[0].dtype
    (3, 8, dtype('float32'))
    """
    num_videos = check_int(num_videos, "num_videos", min=1, max=100_000)
    num_actions = check_int(num_actions, "num_actions", min=2, max=1000)
    num_activities = check_int(num_activities, "num_activities", min=1, max=1000)
    dim = check_int(dim, "dim", min=2, max=65_536)
    mean_length = check_int(mean_length, "mean_length", min=8, max=1_000_000)
    noise = check_float(noise, "noise", min=0, min_inclusive=False, max=1e3)
    confusion = check_float(confusion, "confusion", min=0, max=1, max_inclusive=False)
    if num_videos * mean_length * 3 > MAX_FRAMES or num_videos * mean_length * dim > 2e9:
        raise ValueError(f"num_videos x mean_length asks for more than {MAX_FRAMES} frames")
    rng = np.random.default_rng(check_seed(seed))
    protos = rng.normal(size=(num_actions, dim))
    protos /= np.linalg.norm(protos, axis=1, keepdims=True)
    for a in range(1, num_actions, 2):  # confusable pairs
        mixed = confusion * protos[a - 1] + np.sqrt(1 - confusion ** 2) * protos[a]
        protos[a] = mixed / np.linalg.norm(mixed)
    grammar = _grammar(num_actions, num_activities, rng)
    steps_mean = np.mean([len(g["steps"]) for g in grammar])
    seg_mean = rng.uniform(30, 80, size=num_actions) * (mean_length / (55.0 * steps_mean))
    scale = 4.0 / np.sqrt(dim)
    feats, labels, acts = [], [], []
    for _v in range(num_videos):
        act = int(rng.integers(num_activities))
        g = grammar[act]
        steps = [s for i, s in enumerate(g["steps"])
                 if i not in g["optional"] or rng.random() > 0.3]
        if len(steps) > 1 and rng.random() < 0.5:
            i = min(g["swap"], len(steps) - 2)
            steps[i], steps[i + 1] = steps[i + 1], steps[i]
        lens = [max(4, round(rng.lognormal(np.log(seg_mean[a]) - 0.08, 0.4)))
                for a in steps]
        T = int(sum(lens))
        y = np.repeat(np.asarray(steps, dtype=np.int64), lens)
        style = 0.5 * rng.normal(size=dim) / np.sqrt(dim) * 2
        x = 2.0 * protos[y] + style
        # AR(1) drift restarted at every segment boundary
        drift = np.zeros((T, dim))
        eps = rng.normal(size=(T, dim)) * 0.3 * scale
        start = np.r_[0, np.cumsum(lens)[:-1]]
        is_start = np.zeros(T, bool)
        is_start[start] = True
        for t in range(T):
            drift[t] = eps[t] if is_start[t] else 0.95 * drift[t - 1] + eps[t]
        # slowly varying noise std along the video
        phase, period = rng.uniform(0, 2 * np.pi), rng.uniform(150, 400)
        sigma = noise * (1.0 + 0.5 * np.sin(2 * np.pi * np.arange(T) / period + phase))
        x = x + drift + sigma[:, None] * scale * rng.normal(size=(T, dim))
        feats.append(x.astype(np.float32))
        labels.append(y)
        acts.append(act)
    return TASDataset(tuple(feats), tuple(labels), np.asarray(acts, np.int64), num_actions)


def photo_pan_frames(photos, *, num_videos: int, num_segments: int = 3,
                     frames_per_segment: int = 16, size: int = 64,
                     rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Real image sequences: each segment is a slow pan (a moving, zooming crop) over one
    real photo, and its label is the photo's index.

    Parameters
    ----------
    photos : sequence of ndarray (H, W, 3) uint8
        Real photos (e.g. :func:`neurips26.common.data.load_photos`); each is an "action".
    num_videos, num_segments, frames_per_segment : int
    size : int
        Side of the square frames.
    rng : numpy Generator

    Returns
    -------
    frames : list of ndarray (T_i, size, size, 3) uint8
    labels : list of ndarray (T_i,) int64

    Examples
    --------
    >>> photos = [np.zeros((40, 50, 3), np.uint8), np.full((30, 30, 3), 200, np.uint8)]
    >>> f, y = photo_pan_frames(photos, num_videos=1, num_segments=2, frames_per_segment=3,
    ...                         size=8, rng=np.random.default_rng(0))
    >>> f[0].shape, y[0].tolist()[:3]
    ((6, 8, 8, 3), [0, 0, 0])
    """
    from PIL import Image

    num_videos = check_int(num_videos, "num_videos", min=1, max=10_000)
    num_segments = check_int(num_segments, "num_segments", min=1, max=1000)
    frames_per_segment = check_int(frames_per_segment, "frames_per_segment", min=1, max=10_000)
    size = check_int(size, "size", min=8, max=1024)
    rng = check_rng(rng)
    if not hasattr(photos, "__len__") or isinstance(photos, (str, bytes)) or len(photos) == 0:
        raise ValueError("photos must be a non-empty sequence of (H, W, 3) uint8 images")
    if num_videos * num_segments * frames_per_segment > 200_000:
        raise ValueError("num_videos x num_segments x frames_per_segment exceeds 200000 frames")
    pils = []
    for k, im in enumerate(photos):
        im = np.asarray(im)
        if im.ndim != 3 or im.shape[2] != 3 or im.shape[0] < 8 or im.shape[1] < 8:
            raise ValueError(f"photos[{k}] must have shape (H, W, 3) with H, W >= 8, "
                             f"got {im.shape}")
        pils.append(Image.fromarray(im.astype(np.uint8)))
    frames, labels = [], []
    for _ in range(num_videos):
        ids = rng.choice(len(pils), size=num_segments, replace=num_segments > len(pils))
        vid, lab = [], []
        for k in ids:
            pil = pils[int(k)]
            W, H = pil.size
            side0 = rng.uniform(0.4, 0.7) * min(H, W)
            side1 = side0 * rng.uniform(0.8, 1.25)
            c0 = rng.uniform([side0 / 2, side0 / 2], [W - side0 / 2, H - side0 / 2])
            c1 = rng.uniform([side1 / 2, side1 / 2],
                             [max(side1 / 2, W - side1 / 2), max(side1 / 2, H - side1 / 2)])
            for t in np.linspace(0.0, 1.0, frames_per_segment):
                side = min((1 - t) * side0 + t * side1, min(H, W))
                cx, cy = (1 - t) * c0 + t * c1
                left = float(np.clip(cx - side / 2, 0, W - side))
                top = float(np.clip(cy - side / 2, 0, H - side))
                crop = pil.resize((size, size), Image.Resampling.BILINEAR,
                                  box=(left, top, left + side, top + side))
                vid.append(np.asarray(crop, dtype=np.uint8))
                lab.append(int(k))
        frames.append(np.stack(vid))
        labels.append(np.asarray(lab, np.int64))
    return frames, labels
