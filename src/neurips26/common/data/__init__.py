"""Offline data loaders with fixed splits (images, text); nothing downloads."""

from neurips26.common.data.images import (
    DataNotInstalledError,
    ImageDataset,
    load_digits,
    load_fashion_mnist,
    load_foolbox_samples,
    load_images,
    load_mnist,
    load_mnist1d,
    package_dir,
    read_idx,
    upsample,
)
from neurips26.common.data.text import (
    ByteTokenizer,
    CharTokenizer,
    TokenSplit,
    pydoc_topics_text,
    random_batches,
    sequential_windows,
    stdlib_source_text,
    train_val_split,
)

__all__ = [
    "ByteTokenizer",
    "CharTokenizer",
    "DataNotInstalledError",
    "ImageDataset",
    "TokenSplit",
    "load_digits",
    "load_fashion_mnist",
    "load_foolbox_samples",
    "load_images",
    "load_mnist",
    "load_mnist1d",
    "package_dir",
    "pydoc_topics_text",
    "random_batches",
    "read_idx",
    "sequential_windows",
    "stdlib_source_text",
    "train_val_split",
    "upsample",
]
