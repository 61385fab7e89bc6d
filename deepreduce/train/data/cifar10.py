"""CIFAR-10, "python version": pickled batches data_batch_1..5 and test_batch, each a dict with
b'data' (uint8, N x 3072, channel-major 3x32x32) and b'labels'; batches.meta names the classes."""
import pickle
from pathlib import Path

import numpy as np
import torch

from .base import DataNotFoundError, Dataset

TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILE = "test_batch"
URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
# The folder name inside the official cifar-10-python.tar.gz, also searched under --data-dir.
ARCHIVE_DIR = "cifar-10-batches-py"
# Per-channel statistics of the CIFAR-10 training set, for the usual input normalisation.
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def find_folder(data_dir, archive_dir, files):
    """The folder, data_dir itself or data_dir/archive_dir, that holds all ``files``; None if
    neither does."""
    root = Path(data_dir)
    for d in (root, root / archive_dir):
        if all((d / f).is_file() for f in files):
            return d
    return None


def locate(data_dir):
    """The folder of the data set's files under data_dir; DataNotFoundError (what is expected,
    where to get it) where they are not there."""
    root = Path(data_dir)
    found = find_folder(root, ARCHIVE_DIR, TRAIN_FILES + (TEST_FILE,))
    if found is not None:
        return found
    # What is missing from the folder that holds the most of the files (data_dir may be
    # the archive's parent, whose own files are none).
    files = TRAIN_FILES + (TEST_FILE,)
    folder, missing = min(((d, [f for f in files if not (d / f).is_file()]) for d in (root, root / ARCHIVE_DIR)),
                          key=lambda found: len(found[1]))
    where = (f"expected the python-version batches {', '.join(files)} in {root} (or in {root / ARCHIVE_DIR})"
             if len(missing) == len(files) else f"{folder} lacks the python-version batches {', '.join(missing)}")
    raise DataNotFoundError(
        f"CIFAR-10 not found: {where}. Download 'CIFAR-10 python version' "
        f"(cifar-10-python.tar.gz) from {URL}, extract it, and pass "
        f"--data-dir <folder>/{ARCHIVE_DIR}. Nothing is downloaded automatically.")


def _unpickle(path, what):
    """The object pickled in the file at path (``what``: a batch, the class names);
    ValueError naming the file where it does not unpickle whole."""
    with open(path, "rb") as f:
        try:
            return pickle.load(f, encoding="bytes")
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError, IndexError) as e:
            raise ValueError(f"{path} is not a whole {what} ({e}); a file cut short by its "
                             f"download reads this way: download and extract the archive again") from None


def _read_batch(path, labels_key=b"labels", what="CIFAR-10", classes=10):
    """A batch's images (uint8, N x 3 x 32 x 32) and labels (0..classes-1), checked: a batch
    that is not the official layout is refused by name, before any worker trains on it."""
    batch = _unpickle(path, f"{what} python batch")
    if not isinstance(batch, dict) or b"data" not in batch or labels_key not in batch:
        found = (f"a dict with keys {sorted(batch, key=repr)}" if isinstance(batch, dict)
                 else f"a {type(batch).__name__}")
        raise ValueError(f"{path} is not a {what} python batch (a dict with b'data' and "
                         f"{labels_key!r}); it holds {found}")
    data, labels = batch[b"data"], np.asarray(batch[labels_key])
    if getattr(data, "dtype", None) != np.uint8:  # a re-saved batch of floats was cast to bytes, unsaid
        raise ValueError(f"{path}: b'data' must be the batch's uint8 pixels, got "
                         f"{getattr(data, 'dtype', type(data).__name__)}")
    if data.size % (3 * 32 * 32):
        raise ValueError(f"{path}: b'data' holds {data.size} bytes, not whole 3x32x32 images")
    if not data.size:  # an empty test set divides by zero after training; an empty train set trains nothing
        raise ValueError(f"{path}: b'data' holds no images")
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{path}: {labels_key!r} must be a list of integer class numbers, got "
                         f"{labels.dtype} of shape {labels.shape}")
    x = torch.as_tensor(data).reshape(-1, 3, 32, 32)
    y = torch.as_tensor(labels, dtype=torch.long)
    if len(x) != len(y):
        raise ValueError(f"{path}: {len(x)} images but {len(y)} labels")
    if int(y.min()) < 0 or int(y.max()) >= classes:
        raise ValueError(f"{path}: labels must lie in 0..{classes - 1}, found {int(y.min())}..{int(y.max())}")
    return x, y


def _normalise(x, mean=MEAN, std=STD):
    mean = torch.tensor(mean).view(1, 3, 1, 1)
    std = torch.tensor(std).view(1, 3, 1, 1)
    return (x.float() / 255.0 - mean) / std


def class_names(meta, key, classes, what):
    """The class names in the optional file meta (under ``key``), else the numbers."""
    found = _unpickle(meta, f"{what} file of class names") if meta.is_file() else {}
    if not isinstance(found, dict):
        raise ValueError(f"{meta} is not a {what} file of class names (a dict with {key!r}); "
                         f"it holds a {type(found).__name__}")
    names = found.get(key, [])
    if not isinstance(names, (list, tuple)) or len(names) != classes:
        return [str(i) for i in range(classes)]
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]


def augment(x, gen):
    """The standard CIFAR augmentation of He et al.: pad 4, random 32x32 crop, random flip."""
    n, _, h, w = x.shape
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (n,), generator=gen)
    dx = torch.randint(0, 9, (n,), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    out = torch.empty_like(x)
    for i in range(n):
        crop = padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w]
        out[i] = crop.flip(-1) if flip[i] else crop
    return out


def load_cifar10(data_dir):
    d = locate(data_dir)
    parts = [_read_batch(d / f) for f in TRAIN_FILES]
    x_train = torch.cat([p[0] for p in parts])
    y_train = torch.cat([p[1] for p in parts])
    x_test, y_test = _read_batch(d / TEST_FILE)
    return Dataset(name="cifar10", task="classify",
                   train=(_normalise(x_train), y_train), test=(_normalise(x_test), y_test),
                   meta={"in_shape": (3, 32, 32), "num_classes": 10,
                         "class_names": class_names(d / "batches.meta", b"label_names", 10, "CIFAR-10")},
                   augment=augment)
