"""The non-default data sets through the whole job: CIFAR-10 batches with ResNet-20 and
MovieLens ratings with NCF, from tiny files in the real formats, one in-process worker."""
import json

import numpy as np
import pytest

from deepreduce.cli import main
from test_data_loaders import write_cifar

pytestmark = pytest.mark.slow


def train(tmp_path, *argv):
    out = tmp_path / "out"
    assert main(["train", "--workers", "1", "--epochs", "1", "--no-progress", "--out", str(out),
                 *argv]) == 0
    return json.loads((out / "log.json").read_text())


def test_cifar10_resnet20(tmp_path):
    write_cifar(tmp_path / "cifar", per_batch=8, test=6)
    log = train(tmp_path, "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar"),
                "--batch-size", "16", "--no-baseline")
    run = log["runs"][0]
    assert log["config"]["model"] == "resnet20" and run["parameters"] == 269_722
    assert len(run["steps"]) == 3 and run["final"]["bytes_sent"] > 0


def test_movielens_ncf(tmp_path):
    rng = np.random.default_rng(0)
    rows = ["userId,movieId,rating,timestamp"] + [
        f"{u},{m},4.0,{t}" for u in range(1, 21)
        for t, m in enumerate(rng.choice(200, size=8, replace=False) + 1)]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n")
    log = train(tmp_path, "--dataset", "movielens", "--data-dir", str(tmp_path))
    assert log["config"]["model"] == "ncf"
    assert {r["run"] for r in log["summary"]} == {"compressed", "dense"}
    assert log["runs"][0]["metric_name"] == "hit_rate@10"
    assert all(0.0 <= r["metric"] <= 1.0 for r in log["summary"])
