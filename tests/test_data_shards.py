import pytest
import torch

from deepreduce.train.config import DATASET_DEFAULTS
from deepreduce.train.data import DATASETS, shard_batches, shard_indices


def test_every_data_set_has_cli_defaults():
    assert set(DATASET_DEFAULTS) == set(DATASETS)


@pytest.mark.parametrize("n,world", [(10, 1), (1437, 2), (1437, 3), (7, 4), (3, 5)])
def test_shards_disjoint_and_covering(n, world):
    shards = [shard_indices(n, r, world, seed=0, epoch=1) for r in range(world)]
    allidx = torch.cat(shards)
    assert len(allidx) == n and set(allidx.tolist()) == set(range(n))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize("n,world,batch", [(1437, 2, 32), (64, 2, 32), (65, 2, 32), (9, 2, 1),
                                           (100, 3, 7)])
def test_every_rank_gets_the_same_number_of_batches(n, world, batch):
    per_rank = [shard_batches(n, r, world, batch, seed=0) for r in range(world)]
    assert len({len(b) for b in per_rank}) == 1
    assert all(len(x) <= batch for b in per_rank for x in b)
    together = torch.cat([x for b in per_rank for x in b])
    assert sorted(together.tolist()) == list(range(n))


def test_shuffle_is_seeded_and_changes_per_epoch():
    a = shard_indices(100, 0, 2, seed=5, epoch=1)
    assert torch.equal(a, shard_indices(100, 0, 2, seed=5, epoch=1))
    assert not torch.equal(a, shard_indices(100, 0, 2, seed=5, epoch=2))
    assert not torch.equal(a, shard_indices(100, 0, 2, seed=6, epoch=1))


def test_bad_rank_and_batch_size():
    with pytest.raises(ValueError, match="rank=2"):
        shard_indices(10, 2, 2, seed=0)
    with pytest.raises(ValueError, match="batch_size=0"):
        shard_batches(10, 0, 2, 0, seed=0)
