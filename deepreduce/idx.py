"""The IDX file format of MNIST (LeCun et al.): read and write, plain or gzip-compressed.

An IDX file is a 4-byte magic (two zero bytes, a type code, the number of dimensions),
one big-endian uint32 per dimension, then the array in row-major order, big-endian.
``load_mnist(folder)`` reads the four files of the MNIST distribution
(``train-images-idx3-ubyte`` ... with or without ``.gz``) as GRACE's examples use them.
"""
import gzip
import math
import os
import struct
import zlib

import numpy as np

# IDX type code -> NumPy dtype (big-endian where it matters).
_TYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
          0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_CODES = {dtype.newbyteorder("="): code for code, dtype in _TYPES.items()}

MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def _open(path):
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def read_idx(path):
    """The array stored in the IDX file at ``path`` (native byte order)."""
    try:
        with _open(path) as f:
            data = f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:  # a gzip stream cut short or damaged
        raise ValueError(f"{path}: not a whole gzip-compressed IDX file ({e}); a file cut short by its "
                         f"download reads this way: download it again") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (it must start with two zero bytes)")
    code, ndim = data[2], data[3]
    if code not in _TYPES:
        raise ValueError(f"{path}: unknown IDX type code 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: truncated header ({len(data)} bytes for {ndim} dimensions)")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = _TYPES[code]
    expected = math.prod(shape) * dtype.itemsize  # Python's integers: no wrap-around
    if len(data) - header != expected:
        raise ValueError(f"{path}: the header declares shape {shape} ({expected} bytes of data) "
                         f"but the file holds {len(data) - header}")
    return np.frombuffer(data, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path, array, compress=False):
    """Write ``array`` (uint8, int8, int16, int32, float32 or float64) as an IDX file."""
    array = np.asarray(array)
    code = _CODES.get(array.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"IDX cannot hold dtype {array.dtype}; use uint8, int8, int16, int32, float32 or float64")
    payload = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    payload += np.ascontiguousarray(array, dtype=_TYPES[code]).tobytes()
    with (gzip.open(path, "wb") if compress else open(path, "wb")) as f:
        f.write(payload)


def load_mnist(folder):
    """``(train_images, train_labels), (test_images, test_labels)`` from the MNIST IDX
    files in ``folder`` (uint8 images N×28×28, uint8 labels 0..9), as Keras' ``load_data``.
    Fashion-MNIST's files have the same names and shapes. A file of another shape, type or
    label range is refused by name: a training script would fail on it later, far from
    the cause."""
    arrays, paths = {}, {}
    for key, name in MNIST_FILES.items():
        for candidate in (name, name + ".gz"):
            path = os.path.join(folder, candidate)
            if os.path.exists(path):
                arrays[key], paths[key] = read_idx(path), path
                break
        else:
            raise FileNotFoundError(f"{folder}: no {name} (or {name}.gz); MNIST's four IDX files must be there")
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        images_path, labels_path = paths[f"{split}_images"], paths[f"{split}_labels"]
        if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
            raise ValueError(f"{images_path}: holds {images.dtype} of shape {images.shape}; MNIST's images "
                             f"are uint8 of shape N×28×28 (type code 0x08, 3 dimensions)")
        if labels.dtype != np.uint8 or labels.ndim != 1:
            raise ValueError(f"{labels_path}: holds {labels.dtype} of shape {labels.shape}; MNIST's labels "
                             f"are uint8 of shape N (type code 0x08, 1 dimension)")
        if len(images) != len(labels):
            raise ValueError(f"{folder}: {images_path} holds {len(images)} images but {labels_path} "
                             f"{len(labels)} labels")
        if len(labels) and labels.max() > 9:
            raise ValueError(f"{labels_path}: label {int(labels.max())} found; MNIST's labels are 0 to 9")
    return (arrays["train_images"], arrays["train_labels"]), (arrays["test_images"], arrays["test_labels"])


def write_synthetic_mnist(folder, train=512, test=128, seed=0):
    """MNIST-shaped data in the four IDX files (gzip, as distributed): 28×28 uint8 images
    of ten classes, each class a fixed random stroke pattern plus noise, so a small
    network learns it in a few steps. For tests and examples: no download needed."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((10, 28, 28)) > 0.8) * 200.0
    os.makedirs(folder, exist_ok=True)
    for split, count in (("train", train), ("test", test)):
        labels = rng.integers(0, 10, count).astype(np.uint8)
        images = np.clip(prototypes[labels] + rng.normal(0, 30, (count, 28, 28)), 0, 255).astype(np.uint8)
        prefix = "train" if split == "train" else "t10k"
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), images, compress=True)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), labels, compress=True)
    return folder
