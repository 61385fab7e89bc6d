"""What SparDL trains, in the real formats: VGG-16/19 on CIFAR-10/100, the LSTM on IMDB's
aclImdb folders (loaders read tiny generated files), SparDL's own command-line names, and
its command under mpiexec with 4 ranks on a generated CIFAR-10."""
import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from deepreduce.train.data import DataNotFoundError, load_dataset  # noqa: E402
from deepreduce.train.data.imdb import tokenize  # noqa: E402
from deepreduce.train.models import build_model, count_parameters  # noqa: E402
from deepreduce.train.options import add_arguments, build_params, config_from_args  # noqa: E402
from test_data_loaders import write_cifar  # noqa: E402


def write_cifar100(folder, train=6, test=4):
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train", train), ("test", test)):
        batch = {b"filenames": [b"x.png"] * n,
                 b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
                 b"fine_labels": [int(v) for v in rng.integers(0, 100, size=n)],
                 b"coarse_labels": [int(v) for v in rng.integers(0, 20, size=n)]}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    with open(folder / "meta", "wb") as f:
        pickle.dump({b"fine_label_names": [f"fine{i}".encode() for i in range(100)],
                     b"coarse_label_names": [f"coarse{i}".encode() for i in range(20)]}, f)
    return folder


REVIEWS = {
    ("train", "pos"): ["A wonderful film.<br /><br />I loved it!", "Great acting, great story."],
    ("train", "neg"): ["Awful. I didn't like it at all.", "Boring and awful plot"],
    ("test", "pos"): ["wonderful and great"],
    ("test", "neg"): ["an awful, boring mess; zyzzyva"],
}


def write_imdb(root):
    for (split, label), texts in REVIEWS.items():
        folder = root / "aclImdb" / split / label
        folder.mkdir(parents=True)
        for i, text in enumerate(texts):
            (folder / f"{i}_{7 if label == 'pos' else 2}.txt").write_text(text, encoding="utf-8")
    (root / "aclImdb" / "train" / "unsup").mkdir()  # the release's unlabelled folder is ignored
    return root


def test_cifar100_reads_fine_labels_and_names(tmp_path):
    write_cifar100(tmp_path / "cifar-100-python")
    ds = load_dataset("cifar100", tmp_path)
    assert ds.train[0].shape == (6, 3, 32, 32) and ds.test[0].shape == (4, 3, 32, 32)
    assert ds.meta["num_classes"] == 100 and ds.meta["class_names"][3] == "fine3"
    with open(tmp_path / "cifar-100-python" / "train", "rb") as f:
        raw = pickle.load(f, encoding="bytes")
    assert ds.train[1].tolist() == raw[b"fine_labels"]


def test_cifar100_missing_or_foreign_files_say_what_is_wrong(tmp_path):
    with pytest.raises(DataNotFoundError, match="cifar-100-python.tar.gz"):
        load_dataset("cifar100", tmp_path)
    write_cifar(tmp_path / "c10")
    (tmp_path / "c10" / "train").write_bytes((tmp_path / "c10" / "data_batch_1").read_bytes())
    (tmp_path / "c10" / "test").write_bytes((tmp_path / "c10" / "test_batch").read_bytes())
    with pytest.raises(ValueError, match="fine_labels"):
        load_dataset("cifar100", tmp_path / "c10")


def test_tokenizer():
    assert tokenize("A wonderful film.<br /><br />I didn't LIKE it!") == \
        ["a", "wonderful", "film", "i", "didn't", "like", "it"]
    # Letters beyond ASCII, and the typographic apostrophe (words were cut at both).
    assert tokenize("Amélie is naïve, I don\u2019t care. Señor Müller") == \
        ["amélie", "is", "naïve", "i", "don't", "care", "señor", "müller"]


def test_imdb_reads_acl_layout(tmp_path):
    ds = load_dataset("imdb", write_imdb(tmp_path))
    x, y = ds.train
    assert x.shape == (4, 200) and x.dtype == torch.long
    assert y.tolist() == [0, 0, 1, 1]            # neg first, then pos, files sorted
    assert ds.meta["num_classes"] == 2 and ds.meta["vocab_size"] == x.max().item() + 1
    # ids by training frequency, ties by the word: awful, great, i, it (2 each) get 2..5,
    # then the words seen once alphabetically: a=6, acting=7, all=8, and=9, at=10, ...
    assert x[0, -7:].tolist() == [2, 4, 12, 14, 5, 10, 8]  # "awful i didn't like it at all"
    test_x, test_y = ds.test
    assert test_y.tolist() == [0, 1]
    assert (test_x[0] == 1).sum().item() >= 2      # 'mess' and 'zyzzyva' are unknown
    assert (test_x[:, :190] == 0).all()            # padded at the front


def test_imdb_missing_folder(tmp_path):
    with pytest.raises(DataNotFoundError, match="aclImdb_v1.tar.gz"):
        load_dataset("imdb", tmp_path)


@pytest.mark.parametrize("empty", ["train/neg", "test/pos"])
def test_imdb_split_with_an_empty_class_folder_is_refused(tmp_path, empty):
    # It loaded as a one-class data set, unsaid, when only one of the two folders was empty.
    write_imdb(tmp_path)
    for review in (tmp_path / "aclImdb" / empty).glob("*.txt"):
        review.unlink()
    with pytest.raises(ValueError, match=f"aclImdb/{empty}: no .txt reviews; both pos/ and neg/"):
        load_dataset("imdb", tmp_path)


@pytest.mark.parametrize("name, params", [("vgg16", 14.7e6), ("vgg19", 20.0e6)])
def test_vgg_on_cifar_shapes(name, params):
    model = build_model(name, {"in_shape": (3, 32, 32), "num_classes": 100})
    assert abs(count_parameters(model) - params) < 0.1e6
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 100)
    with pytest.raises(ValueError, match="32x32 colour images"):
        build_model(name, {"in_shape": (1, 8, 8), "num_classes": 10})


def test_lstm_classifies_token_rows():
    model = build_model("lstm", {"vocab_size": 50, "num_classes": 2})
    assert model(torch.randint(0, 50, (3, 20))).shape == (3, 2)
    with pytest.raises(ValueError, match="text data set"):
        build_model("lstm", {"in_shape": (3, 32, 32), "num_classes": 10})


def parse(argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_spardl_command_line_names():
    args = parse(["--dnn", "vgg19", "--dataset", "cifar100", "--nworkers", "4", "--density", "0.02",
                  "--compressor", "spardl", "--compression", "--max-epochs", "3", "--batch-size", "16",
                  "--data-dir", "/data", "--lr", "0.05"])
    cfg = config_from_args(args, "spawn")
    assert (cfg.model, cfg.dataset, cfg.epochs, cfg.batch_size, cfg.lr, cfg.data_dir) == \
        ("vgg19", "cifar100", 3, 16, 0.05, "/data")
    assert args.workers == 4
    assert build_params(args) == {"compressor": "topk", "memory": "residual", "communicator": "spardl",
                                  "compress_ratio": 0.02}
    assert build_params(parse(["--compressor", "spardl", "--memory", "none"]))["memory"] == "none"


@pytest.mark.slow
def test_spardl_command_under_mpiexec_trains_resnet20(tmp_path):
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not installed (apt-get install openmpi-bin)")
    pytest.importorskip("mpi4py")
    write_cifar(tmp_path / "cifar", per_batch=8, test=8)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    cmd = [mpiexec, "--oversubscribe", "-n", "4", sys.executable, "-m", "deepreduce", "train",
           "--dnn", "resnet20", "--dataset", "cifar10", "--compressor", "spardl", "--density", "0.01",
           "--data-dir", str(tmp_path / "cifar"), "--max-epochs", "1", "--batch-size", "4",
           "--no-baseline", "--no-progress", "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    log = json.loads((tmp_path / "out" / "log.json").read_text())
    assert log["world_size"] == 4 and log["config"]["launcher"] == "mpirun"
    run = log["runs"][0]
    assert run["params"]["communicator"] == "spardl"
    epoch = run["epochs"][-1]
    assert 0 < epoch["bytes_sent"] < 0.2 * epoch["dense_bytes"]


@pytest.mark.slow
def test_lstm_on_generated_imdb_trains_through_spardl(tmp_path):
    write_imdb(tmp_path / "data")
    cmd = [sys.executable, "-m", "deepreduce", "train", "--dataset", "imdb", "--data-dir",
           str(tmp_path / "data"), "--max-epochs", "1", "--batch-size", "2", "--nworkers", "2",
           "--compressor", "spardl", "--no-baseline", "--no-progress", "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    log = json.loads((tmp_path / "out" / "log.json").read_text())
    assert log["config"]["model"] == "lstm" and log["world_size"] == 2
    assert 0 < log["runs"][0]["epochs"][-1]["bytes_sent"] < 0.05 * log["runs"][0]["epochs"][-1]["dense_bytes"]
