"""Loaders read tiny files written here in the real formats; missing data gives a clear error."""
import pickle

import numpy as np
import pytest
import torch

from deepreduce.train.data import DataNotFoundError, load_dataset
from deepreduce.train.data import cifar10, movielens


def write_cifar(folder, per_batch=4, test=3, meta=True):
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in [(f, per_batch) for f in cifar10.TRAIN_FILES] + [(cifar10.TEST_FILE, test)]:
        batch = {b"batch_label": name.encode(),
                 b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
                 b"labels": [int(v) for v in rng.integers(0, 10, size=n)]}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    if meta:
        with open(folder / "batches.meta", "wb") as f:
            pickle.dump({b"label_names": [f"class{i}".encode() for i in range(10)]}, f)
    return folder


def test_cifar10_reads_python_batches(tmp_path):
    write_cifar(tmp_path)
    ds = load_dataset("cifar10", tmp_path)
    assert ds.task == "classify"
    assert ds.train[0].shape == (20, 3, 32, 32) and ds.train[0].dtype == torch.float32
    assert ds.test[0].shape == (3, 3, 32, 32)
    assert ds.train[1].dtype == torch.long and ds.train[1].max() < 10
    assert ds.meta["class_names"][3] == "class3"
    # Channel-major layout: pixel (c=1, y=0, x=0) is byte 1024 of the row.
    with open(tmp_path / "data_batch_1", "rb") as f:
        raw = pickle.load(f, encoding="bytes")[b"data"]
    expected = (raw[0, 1024] / 255.0 - cifar10.MEAN[1]) / cifar10.STD[1]
    assert ds.train[0][0, 1, 0, 0].item() == pytest.approx(expected, rel=1e-5)


def test_cifar10_found_in_archive_folder_and_without_meta(tmp_path):
    write_cifar(tmp_path / cifar10.ARCHIVE_DIR, meta=False)
    ds = load_dataset("cifar10", tmp_path)
    assert ds.num_train == 20 and ds.meta["class_names"][0] == "0"


def test_cifar10_augment_keeps_shape_and_is_seeded():
    x = torch.randn(5, 3, 32, 32)
    a = cifar10.augment(x, torch.Generator().manual_seed(1))
    b = cifar10.augment(x, torch.Generator().manual_seed(1))
    assert a.shape == x.shape and torch.equal(a, b)


def test_cifar10_missing_names_files_and_download_page(tmp_path):
    write_cifar(tmp_path)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("cifar10", tmp_path)
    msg = str(e.value)
    assert "data_batch_3" in msg and "data_batch_1" not in msg
    assert str(tmp_path) in msg and cifar10.URL in msg and "--data-dir" in msg


def test_dataset_needs_data_dir_and_known_name():
    with pytest.raises(ValueError, match="--data-dir"):
        load_dataset("cifar10")
    with pytest.raises(ValueError, match="digits, cifar10, cifar100, imdb, movielens"):
        load_dataset("imagenet", "/tmp")


RATINGS = """userId,movieId,rating,timestamp
1,10,4.0,100
1,20,3.5,300
1,30,5.0,200
2,10,2.0,50
2,40,4.0,60
3,50,1.0,10
4,20,4.5,70
4,30,4.0,80
4,60,3.0,90
"""


def test_movielens_leave_one_out(tmp_path):
    (tmp_path / "ratings.csv").write_text(RATINGS)
    ds = load_dataset("movielens", tmp_path, seed=3)
    assert ds.task == "rank"
    assert ds.meta["num_users"] == 4 and ds.meta["num_items"] == 6
    users, cands = ds.test
    # User 3 has one rating: trained on, not tested. The others hold out their latest item.
    assert users.tolist() == [0, 1, 3]
    assert cands.shape == (3, 1 + movielens.TEST_NEGATIVES)
    # Contiguous ids are ranks of the original ids: movie 20 -> 1, 40 -> 3, 60 -> 5.
    assert cands[:, 0].tolist() == [1, 3, 5]
    rated = {(0, 0), (0, 1), (0, 2), (1, 0), (1, 3), (2, 4), (3, 1), (3, 2), (3, 5)}
    for u, row in zip(users.tolist(), cands[:, 1:].tolist()):
        assert all((u, i) not in rated for i in row)

    u, i, label = ds.train_tensors(0)
    positives = {(a, b) for a, b, l in zip(u.tolist(), i.tolist(), label.tolist()) if l == 1}
    assert positives == rated - {(0, 1), (1, 3), (3, 5)}
    assert int((label == 0).sum()) == movielens.TRAIN_NEGATIVES * len(positives)
    assert all((a, b) not in rated
               for a, b, l in zip(u.tolist(), i.tolist(), label.tolist()) if l == 0)


def test_movielens_user_who_rated_every_movie_is_named_by_the_files_userId(tmp_path):
    # The message named the user's contiguous index (1 here), which the file does not hold.
    (tmp_path / "ratings.csv").write_text("userId,movieId,rating,timestamp\n7,10,4.0,1\n"
                                          "42,10,3.0,2\n42,20,5.0,3\n")
    with pytest.raises(ValueError, match=r"userId 42 rated all 2 movies in ratings.csv"):
        load_dataset("movielens", tmp_path)


def test_movielens_negatives_are_seeded_per_epoch(tmp_path):
    (tmp_path / "ratings.csv").write_text(RATINGS)
    a = load_dataset("movielens", tmp_path, seed=1)
    b = load_dataset("movielens", tmp_path, seed=1)
    assert torch.equal(a.test[1], b.test[1])
    assert all(torch.equal(x, y) for x, y in zip(a.train_tensors(2), b.train_tensors(2)))
    assert not torch.equal(a.train_tensors(1)[1], a.train_tensors(2)[1])


def test_movielens_missing_and_malformed(tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        load_dataset("movielens", tmp_path)
    msg = str(e.value)
    assert str(tmp_path / "ratings.csv") in msg and movielens.URL in msg
    assert "userId,movieId,rating,timestamp" in msg
    (tmp_path / "ratings.csv").write_text("user,item\n1,2\n")
    with pytest.raises(ValueError, match="expected header"):
        load_dataset("movielens", tmp_path)
    # Cut short by its download: the last row lacks its timestamp (int('') before, no file
    # or line named), or has two fields only (an IndexError).
    for cut in (RATINGS + "4,70,3.0,", RATINGS + "4,7"):
        (tmp_path / "ratings.csv").write_text(cut)
        with pytest.raises(ValueError, match=r"ratings.csv line 11: expected integer userId, movieId and "
                                             r"timestamp .* download and unzip it again"):
            load_dataset("movielens", tmp_path)


def test_cifar10_batch_cut_short_or_of_partial_images_is_named(tmp_path):
    write_cifar(tmp_path)
    whole = (tmp_path / "data_batch_2").read_bytes()
    (tmp_path / "data_batch_2").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ValueError, match=r"data_batch_2 is not a whole CIFAR-10 python batch \(pickle data was "
                                         r"truncated\); .* download and extract the archive again"):
        load_dataset("cifar10", tmp_path)
    write_cifar(tmp_path)
    with open(tmp_path / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros(3072 + 5, dtype=np.uint8), b"labels": [1]}, f)
    with pytest.raises(ValueError, match="test_batch: b'data' holds 3077 bytes, not whole 3x32x32 images"):
        load_dataset("cifar10", tmp_path)


def test_cifar_files_that_are_not_what_they_should_be_are_named(tmp_path):
    """A cut meta file was a raw UnpicklingError, a CIFAR-10 label of 10 an IndexError in
    the loss, and float pixels were cast to bytes without a word."""
    write_cifar(tmp_path)
    (tmp_path / "batches.meta").write_bytes((tmp_path / "batches.meta").read_bytes()[:40])
    with pytest.raises(ValueError, match=r"batches.meta is not a whole CIFAR-10 file of class names"):
        load_dataset("cifar10", tmp_path)
    write_cifar(tmp_path)
    with open(tmp_path / "data_batch_2", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [3, 10]}, f)
    with pytest.raises(ValueError, match=r"data_batch_2: labels must lie in 0..9, found 3..10"):
        load_dataset("cifar10", tmp_path)
    write_cifar(tmp_path)
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump({b"data": np.full((2, 3072), 0.5, dtype=np.float32), b"labels": [3, 4]}, f)
    with pytest.raises(ValueError, match=r"data_batch_1: b'data' must be the batch's uint8 pixels, got float32"):
        load_dataset("cifar10", tmp_path)


@pytest.mark.parametrize("file, content, message", [
    # An empty test batch ended the run after training in a ZeroDivisionError; empty training
    # batches trained on nothing and reported success.
    ("test_batch", {b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, r"test_batch: b'data' holds no images"),
    ("data_batch_3", {b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, r"data_batch_3: b'data' holds no images"),
    # These were an IndexError, an AttributeError and a RuntimeError in torch.cat, unnamed.
    ("data_batch_2", np.zeros((2, 3072), np.uint8), r"data_batch_2 is not a CIFAR-10 python batch .* holds a ndarray"),
    ("batches.meta", [b"airplane"] * 10, r"batches.meta is not a CIFAR-10 file of class names .* holds a list"),
    ("data_batch_1", {b"data": np.zeros((3, 3072), np.uint8), b"labels": [[1], [2], [3]]},
     r"data_batch_1: b'labels' must be a list of integer class numbers, got int64 of shape \(3, 1\)"),
    ("data_batch_1", {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1.7, 2.0]},
     r"data_batch_1: b'labels' must be a list of integer class numbers, got float64"),
    ("data_batch_4", {b"data": np.zeros((2, 3072), np.uint8)}, r"data_batch_4 is not a CIFAR-10 python batch .* "
                                                                r"holds a dict with keys \[b'data'\]"),
])
def test_cifar10_batches_of_another_structure_or_empty_are_named(tmp_path, file, content, message):
    write_cifar(tmp_path)
    with open(tmp_path / file, "wb") as f:
        pickle.dump(content, f)
    with pytest.raises(ValueError, match=message):
        load_dataset("cifar10", tmp_path)


def test_cifar10_missing_from_the_archive_folder_names_only_what_is_missing(tmp_path):
    write_cifar(tmp_path / cifar10.ARCHIVE_DIR)
    (tmp_path / cifar10.ARCHIVE_DIR / "data_batch_5").unlink()
    with pytest.raises(DataNotFoundError, match=r"cifar-10-batches-py lacks the python-version batches data_batch_5\."):
        load_dataset("cifar10", tmp_path)


def test_movielens_ratings_saved_with_a_byte_order_mark(tmp_path):
    """A spreadsheet's 'CSV UTF-8' starts with a BOM: the header was refused."""
    (tmp_path / "ratings.csv").write_bytes(b"\xef\xbb\xbf" + RATINGS.encode())
    assert load_dataset("movielens", tmp_path, seed=3).meta["num_users"] == 4


def test_digits_split_is_fixed():
    a, b = load_dataset("digits"), load_dataset("digits", seed=7)
    assert a.num_train == 1438 and a.num_test == 359
    assert a.train[0].shape[1:] == (1, 8, 8) and 0.0 <= a.train[0].min() <= a.train[0].max() <= 1.0
    assert torch.equal(a.test[1], b.test[1])
    # Stratified: each class contributes a fifth of its images to the test set.
    per_class = torch.bincount(torch.cat([a.train[1], a.test[1]]))
    assert torch.equal(torch.bincount(a.test[1]), (per_class * 0.2).round().long())
