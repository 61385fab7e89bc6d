"""The default data set: scikit-learn's bundled handwritten digits (1797 8x8 grey images,
10 classes), shipped inside scikit-learn, so the default run needs no download."""
import gzip
import importlib.util
from pathlib import Path

import numpy as np
import torch

from .base import DataNotFoundError, Dataset

# A fixed stratified split (independent of --seed) so every run is scored on the same images.
TEST_FRACTION = 0.2
SPLIT_SEED = 0


def locate(data_dir=None):
    """Where scikit-learn keeps its copy, digits.csv.gz (``data_dir`` is not read: the set
    comes with scikit-learn); DataNotFoundError where scikit-learn is not installed."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise DataNotFoundError("dataset='digits' is the copy bundled with scikit-learn: "
                                "pip install scikit-learn (or deepreduce[train])")
    return Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz"


def _read_bundled():
    """(pixels, labels) from scikit-learn's digits.csv.gz, the file load_digits() reads.

    Read directly: importing sklearn.datasets costs seconds in every worker process."""
    path = locate()
    if not path.is_file():
        from sklearn.datasets import load_digits    # a future layout: let sklearn find it
        bunch = load_digits()
        return bunch.data, bunch.target
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1], table[:, -1].astype(np.int64)


def stratified_split(labels, test_fraction, seed):
    """Train and test indices with each class split in the same proportion."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cut = int(round(len(members) * test_fraction))
        test.append(members[:cut])
        train.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def load_digits_dataset():
    pixels, labels = _read_bundled()
    # Pixels are 0..16; scale to [0, 1] and give them a channel axis for the CNN.
    x = torch.tensor(pixels, dtype=torch.float32).div_(16.0).view(-1, 1, 8, 8)
    y = torch.as_tensor(labels)
    train_idx, test_idx = map(torch.as_tensor, stratified_split(labels, TEST_FRACTION, SPLIT_SEED))
    return Dataset(name="digits", task="classify",
                   train=(x[train_idx], y[train_idx]), test=(x[test_idx], y[test_idx]),
                   meta={"in_shape": (1, 8, 8), "num_classes": 10})
