"""MovieLens ratings.csv (header userId,movieId,rating,timestamp) as implicit feedback for NCF.

Protocol (He et al., "Neural Collaborative Filtering", 2017): every rating is a positive
interaction; each user's latest interaction (largest timestamp, ties to the last row) is held
out for testing (leave-one-out) and ranked against TEST_NEGATIVES items the user never rated;
the metric is hit rate at 10. Users with a single interaction keep it for training and are not
tested. Training pairs each positive with TRAIN_NEGATIVES unrated items, sampled afresh every
epoch from a generator seeded by (seed, epoch), so all ranks hold the same training set and
shard it; test negatives are sampled once from (seed).
"""
import csv
from pathlib import Path

import numpy as np
import torch

from .base import DataNotFoundError, Dataset

FILE = "ratings.csv"
HEADER = ["userId", "movieId", "rating", "timestamp"]
URL = "https://grouplens.org/datasets/movielens/"
# Official archive folder names searched under --data-dir, smallest first.
ARCHIVE_DIRS = ("ml-latest-small", "ml-25m", "ml-32m", "ml-20m", "ml-latest")
TRAIN_NEGATIVES = 4
TEST_NEGATIVES = 99


def locate(data_dir):
    """The ratings file under data_dir; DataNotFoundError (what is expected, where to get it)
    where it is not there."""
    root = Path(data_dir)
    for d in (root,) + tuple(root / a for a in ARCHIVE_DIRS):
        if (d / FILE).is_file():
            return d / FILE
    raise DataNotFoundError(
        f"MovieLens not found: expected {root / FILE} (or {FILE} inside one of "
        f"{', '.join(ARCHIVE_DIRS)} under {root}), a CSV with header {','.join(HEADER)}. "
        f"Download e.g. ml-latest-small.zip from {URL}, unzip it, and pass "
        f"--data-dir <folder>/ml-latest-small. Nothing is downloaded automatically.")


def _read_ratings(path):
    with open(path, newline="", encoding="utf-8-sig") as f:  # utf-8-sig: a spreadsheet's re-save starts with a BOM
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:4]] != HEADER:
            raise ValueError(f"{path}: expected header {','.join(HEADER)}, got {header}")
        rows = []
        for row in reader:
            if not row:
                continue
            try:
                rows.append((int(row[0]), int(row[1]), int(row[3])))
            except (ValueError, IndexError):
                raise ValueError(f"{path} line {reader.line_num}: expected integer userId, movieId and timestamp "
                                 f"in the columns {','.join(HEADER)}, got {row}; a file cut short by its download "
                                 f"ends this way: download and unzip it again") from None
    if not rows:
        raise ValueError(f"{path} has a header but no ratings")
    return np.array(rows, dtype=np.int64).T   # users, movies, timestamps


def _sample_unrated(users, count, rated, num_items, rng):
    """count items per user in ``users``, none of which the user rated (rejection sampling).

    ``rated`` holds user * num_items + item for every interaction, sorted."""
    items = rng.integers(0, num_items, size=(len(users), count))
    while True:
        bad = np.isin(users[:, None] * num_items + items, rated)
        if not bad.any():
            return items
        items[bad] = rng.integers(0, num_items, size=int(bad.sum()))


def load_movielens(data_dir, seed=0):
    users, movies, stamps = _read_ratings(locate(data_dir))
    # Contiguous ids: the rank of each original id among the distinct ids.
    user_ids, users = np.unique(users, return_inverse=True)
    _, items = np.unique(movies, return_inverse=True)
    num_users, num_items = int(users.max()) + 1, int(items.max()) + 1
    rated = np.unique(users * num_items + items)
    full = np.flatnonzero(np.bincount(rated // num_items, minlength=num_users) == num_items)
    if len(full):
        # Rejection sampling of unrated items would never end for such a user.
        raise ValueError(f"userId {user_ids[full[0]]} rated all {num_items} movies in {FILE}: no "
                         f"negatives can be sampled; drop that user's ratings from it")

    # Leave-one-out: the latest interaction of each user with at least two goes to the test set.
    order = np.lexsort((np.arange(len(users)), stamps, users))
    last = np.r_[users[order][1:] != users[order][:-1], True]
    counts = np.bincount(users, minlength=num_users)
    test_rows = order[last & (counts[users[order]] > 1)]
    if len(test_rows) == 0:
        raise ValueError(f"no user in {FILE} has two interactions, so leave-one-out has "
                         f"nothing to test")
    train_mask = np.ones(len(users), dtype=bool)
    train_mask[test_rows] = False
    train_users, train_items = users[train_mask], items[train_mask]

    rng = np.random.default_rng([seed, 0xC0FFEE])
    test_users = users[test_rows]
    candidates = np.concatenate(
        [items[test_rows][:, None],
         _sample_unrated(test_users, TEST_NEGATIVES, rated, num_items, rng)], axis=1)

    def resample(epoch):
        epoch_rng = np.random.default_rng([seed, epoch])
        neg = _sample_unrated(train_users, TRAIN_NEGATIVES, rated, num_items, epoch_rng)
        u = np.concatenate([train_users, np.repeat(train_users, TRAIN_NEGATIVES)])
        i = np.concatenate([train_items, neg.reshape(-1)])
        label = np.concatenate([np.ones(len(train_users)), np.zeros(neg.size)])
        return (torch.as_tensor(u), torch.as_tensor(i),
                torch.as_tensor(label, dtype=torch.float32))

    return Dataset(name="movielens", task="rank",
                   train=resample(0),
                   test=(torch.as_tensor(test_users), torch.as_tensor(candidates)),
                   meta={"num_users": num_users, "num_items": num_items,
                         "train_negatives": TRAIN_NEGATIVES, "test_negatives": TEST_NEGATIVES},
                   resample=resample)
