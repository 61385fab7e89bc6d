"""The IDX format of MNIST: round trips, gzip, and clear errors on damaged files."""
import gzip

import numpy as np
import pytest

from deepreduce.idx import load_mnist, read_idx, write_idx, write_synthetic_mnist


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(tmp_path, dtype, compress):
    array = (np.arange(24) - 5).reshape(2, 3, 4).astype(dtype)
    write_idx(tmp_path / "a.idx", array, compress=compress)
    back = read_idx(tmp_path / "a.idx")
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_the_bytes_are_mnists_layout(tmp_path):
    write_idx(tmp_path / "labels", np.array([7, 2, 1], dtype=np.uint8))
    assert (tmp_path / "labels").read_bytes() == bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 1])


def test_damaged_files_are_refused(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(bytes([1, 0, 8, 1, 0, 0, 0, 1, 5]))
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(path)
    path.write_bytes(bytes([0, 0, 0x42, 1, 0, 0, 0, 1, 5]))
    with pytest.raises(ValueError, match="type code"):
        read_idx(path)
    path.write_bytes(gzip.compress(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3])))
    with pytest.raises(ValueError, match="declares shape"):
        read_idx(path)
    with pytest.raises(TypeError, match="IDX cannot hold"):
        write_idx(path, np.zeros(2, dtype=np.complex64))


def test_a_gzip_file_cut_short_or_damaged_is_named(tmp_path):
    """gzip's EOFError or BadGzipFile, without the file's name, before."""
    path = tmp_path / "train-images-idx3-ubyte.gz"
    write_idx(path, np.arange(4096, dtype=np.uint8).reshape(4, 32, 32), compress=True)
    whole = path.read_bytes()
    for damaged in (whole[:len(whole) // 2], whole[:-4] + bytes(4)):  # cut short; its length field zeroed
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz: not a whole gzip-compressed IDX file"):
            read_idx(path)


def test_a_header_whose_shape_overflows_64_bits_is_refused(tmp_path):
    """The element count was a NumPy int64 product, which wraps around past 2**63."""
    path = tmp_path / "huge"
    path.write_bytes(bytes([0, 0, 8, 3]) + bytes([0xFF] * 12))
    with pytest.raises(ValueError, match=f"declares shape .* \\({(2**32 - 1) ** 3} bytes of data\\)"):
        read_idx(path)


def test_synthetic_mnist_loads_as_mnist(tmp_path):
    write_synthetic_mnist(tmp_path, train=40, test=20)
    (x, y), (xt, yt) = load_mnist(tmp_path)
    assert x.shape == (40, 28, 28) and x.dtype == np.uint8 and y.shape == (40,) and y.max() <= 9
    assert xt.shape == (20, 28, 28) and yt.shape == (20,)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte"):
        load_mnist(tmp_path)


@pytest.mark.parametrize("file, array, message", [
    ("train-labels-idx1-ubyte.gz", np.array([0, 200, 255] * 13 + [1], np.uint8), r"label 255 found; MNIST's labels are 0 to 9"),
    ("train-images-idx3-ubyte.gz", np.zeros((40, 32, 32), np.uint8), r"uint8 of shape \(40, 32, 32\); MNIST's images"),
    ("train-images-idx3-ubyte.gz", np.zeros((40, 28, 28), np.float32), r"float32 of shape \(40, 28, 28\)"),
    ("t10k-labels-idx1-ubyte.gz", np.zeros((20, 1), np.uint8), r"uint8 of shape \(20, 1\); MNIST's labels"),
    ("t10k-labels-idx1-ubyte.gz", np.zeros(19, np.uint8), r"holds 20 images but .*t10k-labels-idx1-ubyte.gz 19 labels"),
])
def test_a_file_that_is_not_mnists_shape_type_or_labels_is_named(tmp_path, file, array, message):
    # The examples would fail later inside nll_loss ("Target 200 is out of bounds") or on a
    # batch of 32x32 images; the loader names the file instead.
    write_synthetic_mnist(tmp_path, train=40, test=20)
    write_idx(tmp_path / file, array, compress=True)
    with pytest.raises(ValueError, match=message) as raised:
        load_mnist(tmp_path)
    assert file in str(raised.value)
