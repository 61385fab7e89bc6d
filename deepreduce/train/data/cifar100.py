"""CIFAR-100, "python version": pickled files ``train`` and ``test``, each a dict with b'data'
(uint8, N x 3072, channel-major 3x32x32), b'fine_labels' (0..99) and b'coarse_labels';
``meta`` names the classes (b'fine_label_names'). The fine labels are the targets."""
from pathlib import Path

from .base import DataNotFoundError, Dataset
from .cifar10 import URL, _normalise, _read_batch, augment, class_names, find_folder

FILES = ("train", "test")
ARCHIVE_DIR = "cifar-100-python"
# Per-channel statistics of the CIFAR-100 training set.
MEAN = (0.5071, 0.4865, 0.4409)
STD = (0.2673, 0.2564, 0.2762)


def locate(data_dir):
    """The folder of the data set's files under data_dir; DataNotFoundError (what is expected,
    where to get it) where they are not there."""
    root = Path(data_dir)
    found = find_folder(root, ARCHIVE_DIR, FILES)
    if found is not None:
        return found
    raise DataNotFoundError(
        f"CIFAR-100 not found: expected the python-version files 'train' and 'test' in {root} "
        f"(or in {root / ARCHIVE_DIR}). Download 'CIFAR-100 python version' "
        f"(cifar-100-python.tar.gz) from {URL}, extract it, and pass --data-dir "
        f"<folder>/{ARCHIVE_DIR}. Nothing is downloaded automatically.")


def load_cifar100(data_dir):
    d = locate(data_dir)
    x_train, y_train = _read_batch(d / "train", b"fine_labels", "CIFAR-100", 100)
    x_test, y_test = _read_batch(d / "test", b"fine_labels", "CIFAR-100", 100)
    return Dataset(name="cifar100", task="classify",
                   train=(_normalise(x_train, MEAN, STD), y_train),
                   test=(_normalise(x_test, MEAN, STD), y_test),
                   meta={"in_shape": (3, 32, 32), "num_classes": 100, "class_names": class_names(d / "meta", b"fine_label_names", 100, "CIFAR-100")},
                   augment=augment)
