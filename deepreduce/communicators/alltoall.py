"""All-to-all (GRACE's reduce-scatter + allgather of quantized chunks).

The compensated tensor is cut into world_size chunks (aligned to the compressor's bucket
size, so bucketed quantizers see whole buckets) and each chunk is compressed on its own.
Chunk j of every rank goes to rank j, which decompresses, sums and averages them,
compresses its reduced chunk again, and all ranks allgather the reduced chunks. Every
chunk payload is a framed buffer; any compressor works, quantizers being the intent.
"""
import math
from functools import partial

import numpy as np

from .. import edge
from ..base import Communicator, Compressor, is_compressor
from .allreduce import Allreduce


class ChunkedCtx:
    """A chunked compress's state: each chunk's ctx, the way back to the caller's kind,
    and the bytes of the reduced chunk this rank then sends in the exchange's second
    phase (set there; ``wire_bytes`` counts both phases)."""

    __slots__ = ("contexts", "restore", "reduced_bytes")

    def __init__(self, contexts, restore):
        self.contexts, self.restore, self.reduced_bytes = contexts, restore, 0


class ChunkedCodec(Compressor):
    """Applies a compressor chunk by chunk: payload = one payload list per chunk."""

    def __init__(self, compressor, chunks, rank):
        super().__init__(compressor.average, compressor.tensors_size_are_same)
        self.inner = compressor
        self.chunks = chunks
        self.rank = rank  # this rank keeps its own chunk: it never goes on the wire

    def bounds(self, numel):
        align = int(getattr(self.inner, "bucket_size", 1) or 1)
        size = math.ceil(numel / (self.chunks * align)) * align
        return [(min(j * size, numel), min((j + 1) * size, numel)) for j in range(self.chunks)]

    def compress(self, tensor, name):
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        payloads, contexts = [], []
        for j, (lo, hi) in enumerate(self.bounds(flat.size)):
            tensors, ctx = self.inner.compress(restore.wrap(flat[lo:hi]), f"{name}/chunk{j}")
            payloads.append(tensors)
            contexts.append(ctx)
        return payloads, ChunkedCtx(contexts, restore)

    def decompress(self, tensors, ctx):
        parts = [edge.to_core(self.inner.decompress(t, c))[0] for t, c in zip(tensors, ctx.contexts)]
        return ctx.restore(np.concatenate(parts) if parts else edge.zeros(0))

    def lost(self, flat, tensors, ctx, out):
        """Each chunk's loss by the inner compressor's own ``lost`` (a sparsifier's zeroes
        what it sent, where the default decompressed the whole tensor), into its slice."""
        inner_lost = self.inner.lost if is_compressor(self.inner) else partial(Compressor.lost, self.inner)
        for (lo, hi), chunk_tensors, chunk_ctx in zip(self.bounds(flat.size), tensors, ctx.contexts):
            inner_lost(flat[lo:hi], chunk_tensors, chunk_ctx, out[lo:hi])

    def rollback(self, name):
        for j in range(self.chunks):
            self.inner.rollback(f"{name}/chunk{j}")
            self.inner.rollback(f"{name}/chunk{j}/reduced")

    def wire_bytes(self, tensors, ctx):
        """The chunks sent to the other ranks, and the reduced chunk once (as an allgather's
        frame is counted once): this rank's own chunk is only copied."""
        return sum(self.inner.wire_bytes(t, c) for j, (t, c) in enumerate(zip(tensors, ctx.contexts))
                   if j != self.rank) + ctx.reduced_bytes


class AllToAll(Communicator):
    # The chunks for the P - 1 others, then the reduced chunk (about 1/P of the tensor's
    # payload) to each of them: about 2(P - 1)/P of what wire_bytes counts, a ring
    # allreduce's share. (A staticmethod again: the bare function became a method here.)
    link_bytes_per_payload_byte = staticmethod(Allreduce.link_bytes_per_payload_byte)

    def codec(self):
        return ChunkedCodec(self.compressor, self.transport.size, self.transport.rank)

    def send_receive(self, tensors, name, ctx):
        contexts, restore = ctx.contexts, ctx.restore
        me = self.transport.rank
        # 1. reduce-scatter: chunk j of every rank's payload goes to rank j.
        received = []
        for i in range(len(tensors[0])):
            per_rank = self.transport.alltoall([chunk[i] for chunk in tensors], f"{name}#{i}")
            received.append(per_rank)
        # (The chunks' sizes follow the tensors': ranks with tensors of other sizes are told so.)
        reduced = self.decompress_aggregate([list(parts) for parts in zip(*received)], contexts[me],
                                            f"alltoall of tensor {name!r} (its chunk {me})")
        # 2. the reduced chunk is compressed again and gathered by everyone.
        again, again_ctx = self.compressor.compress(reduced, f"{name}/chunk{me}/reduced")
        ctx.reduced_bytes = self.compressor.wire_bytes(again, again_ctx)
        gathered = [self.transport.allgather(t, f"{name}/reduced#{i}") for i, t in enumerate(again)]
        chunks = [edge.to_core(self.compressor.decompress(list(parts), again_ctx_for(contexts, again_ctx, j, me)))[0]
                  for j, parts in enumerate(zip(*gathered))]
        return restore(np.concatenate(chunks, out=self.buffers.take(("result", name), restore.numel)))


def again_ctx_for(contexts, own_ctx, j, me):
    """Decompressing rank j's reduced chunk needs a ctx of chunk j's size: this rank's
    ctx from compressing chunk j in step 1 has it (own_ctx for our own chunk)."""
    return own_ctx if j == me else contexts[j]
