"""Disjoint per-worker shards with a seeded shuffle, cut into the same number of batches on
every rank (collectives run once per step, so a rank with one step fewer would hang the others).
"""
import math

import numpy as np
import torch


def generator(*seeds):
    """A torch.Generator for the tuple of non-negative integers ``seeds`` (seed, epoch, rank...).

    Streams never touch the global RNG and are the same in every process, so all ranks agree
    on shuffles and samples without communicating."""
    g = torch.Generator()
    state = np.random.SeedSequence([int(s) for s in seeds]).generate_state(1, dtype=np.uint64)[0]
    g.manual_seed(int(state) & 0x7FFF_FFFF_FFFF_FFFF)
    return g


def shard_indices(n, rank, world_size, seed, epoch=0):
    """Indices of rank's shard of range(n): a shuffle shared by all ranks, then every
    world_size-th element from position rank. Shards are disjoint and together cover range(n)."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
    perm = torch.randperm(n, generator=generator(seed, epoch))
    return perm[rank::world_size]


def steps_per_epoch(n, world_size, batch_size):
    """Batches per rank per epoch: enough for the largest shard at batch_size."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    return max(1, math.ceil(math.ceil(n / world_size) / batch_size))


def shard_batches(n, rank, world_size, batch_size, seed, epoch=0):
    """rank's shard split into steps_per_epoch() batches of near-equal size.

    Every rank gets the same number of batches; a batch is empty only when a rank has fewer
    samples than steps (batch_size 1 with n not a multiple of world_size)."""
    steps = steps_per_epoch(n, world_size, batch_size)
    return list(torch.tensor_split(shard_indices(n, rank, world_size, seed, epoch), steps))

