"""The allgather workload shared by tests/test_transport.py (gloo) and its mpirun script:
a training-like sequence of tensors whose payload sizes are steady, drifting, growing past
what the transport guessed, shrinking to nothing and differing between ranks, so that
every path of the one-collective allgather (fits, spills into a second collective,
nothing to send) runs. Every payload is a function of (rank, step, tensor), so each rank
can check what it received from every other."""
import numpy as np

STEPS = 8
NAMES = ("conv.weight", "conv.bias", "fc.weight", "fc.bias")


def payload(rank, step, name):
    """What ``rank`` sends for ``name`` at ``step``: float32 for the weights (the
    received arrays are views into the gathered block, so their alignment matters),
    bytes for the biases."""
    seed = [rank, step, NAMES.index(name)]
    rng = np.random.default_rng(seed)
    if name == "conv.weight":  # the same size every step
        return rng.standard_normal(1000).astype(np.float32)
    if name == "conv.bias":  # grows every step, by more on higher ranks: spills
        return rng.integers(0, 256, 100 + 37 * step * (rank + 1), dtype=np.uint8)
    if name == "fc.weight":  # drifts within the guess's slack; empty everywhere at step 5
        return rng.standard_normal(0 if step == 5 else 500 + (step * 7 + rank) % 11).astype(np.float32)
    return rng.integers(0, 256, 0 if (rank == 0 and step == 3) else 50 + rank, dtype=np.uint8)  # fc.bias


def exchange(transport, engine_calls):
    """Run the sequence on ``transport``; returns, per step and tensor, the engine's
    collective count (``engine_calls()`` before and after) and raises AssertionError on
    any received byte that is not what its sender sent."""
    counts = []
    for step in range(STEPS):
        for name in NAMES:
            before = engine_calls()
            received = transport.allgather(payload(transport.rank, step, name), name)
            counts.append((step, name, engine_calls() - before))
            assert len(received) == transport.size
            for sender, got in enumerate(received):
                want = payload(sender, step, name)
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (step, name, sender)
                if got.dtype == np.float32:
                    np.testing.assert_array_equal(got * 1, want)  # usable as an array
    return counts


def diverge(transport, other):
    """Four steady steps, then rank 1 moves on to ``other`` where rank 0 stays on the
    sequence: returns the CommunicationError's message on this rank."""
    from deepreduce.errors import CommunicationError
    for step in range(4):
        for name in NAMES:
            transport.allgather(payload(transport.rank, step, name), name)
    name = other if transport.rank == 1 else NAMES[0]
    size = 20000 if transport.rank == 1 else 1000
    try:
        transport.allgather(np.ones(size, np.float32), name)
    except CommunicationError as exc:
        return str(exc)
    return "no error"


def mismatched_dtypes(transport):
    """Each collective with rank 1's array float64 where the others' are float32 (the same
    element count), then an alltoall whose rank-1 arrays mix the two: returns, per
    collective, the CommunicationError's message on this rank, and last the sum of a
    well-formed allreduce, which shows the ranks still in step."""
    from deepreduce.errors import CommunicationError
    dtype = np.float64 if transport.rank == 1 else np.float32
    size = transport.size
    calls = {
        "allreduce": lambda: transport.allreduce(np.ones(6, dtype), "w"),
        "allgather": lambda: transport.allgather(np.ones(6, dtype), "w"),
        "broadcast": lambda: transport.broadcast(np.ones(6, dtype), 0, "w"),
        "alltoall": lambda: transport.alltoall([np.ones(2, dtype) for _ in range(size)], "w"),
        "alltoall mixed": lambda: transport.alltoall(
            [np.ones(2, np.float64 if transport.rank == 1 and j == 0 else np.float32) for j in range(size)], "w"),
    }
    messages = {}
    for op, call in calls.items():
        try:
            call()
            messages[op] = "no error"
        except CommunicationError as exc:
            messages[op] = str(exc)
    messages["sum"] = transport.allreduce(np.full(3, transport.rank + 1, np.float32), "after").tolist()
    return messages


def forged_sizes(transport):
    """Rank 1 states payload sizes no rank of ours sends, as a rank running other code in
    the collective (or damage on the way) would: a negative allgather payload, a broadcast
    larger than any machine's memory, negative alltoall sends. Rank 1 forges the bytes it
    hands the engine, so every rank reads the same statements. Returns, per collective,
    the CommunicationError's message on this rank, and last the sum of a well-formed
    allreduce, which shows the ranks still in step."""
    from deepreduce.errors import CommunicationError
    from deepreduce.transports.base import HEADER, HEADER_BYTES
    blocks, rows = transport._allgather_fixed, transport._allgather_int64

    def negative_payload(block):  # the allgather's block header: (tag, bytes, dtype, 0)
        block = block.copy()
        block[:HEADER_BYTES].view(HEADER)[1] = -24
        return blocks(block)

    def huge_broadcast(row):  # the broadcast's exchange: (tag, dtype, bytes)
        return rows(np.concatenate([row[:2], [1 << 60]]))

    def negative_sends(row):  # the alltoall's exchange: (tag, dtype, bytes to each rank)
        return rows(np.concatenate([row[:2], -np.ones(row.size - 2, np.int64)]))

    calls = {
        "allgather": ("_allgather_fixed", negative_payload,
                      lambda: transport.allgather(np.ones(6, np.float32), "w")),
        "broadcast": ("_allgather_int64", huge_broadcast,
                      lambda: transport.broadcast(np.ones(6, np.float32), 0, "w")),
        "alltoall": ("_allgather_int64", negative_sends,
                     lambda: transport.alltoall([np.ones(2, np.float32)] * transport.size, "w")),
    }
    messages = {}
    for op, (method, forge, call) in calls.items():
        if transport.rank == 1:
            setattr(transport, method, forge)
        try:
            call()
            messages[op] = "no error"
        except CommunicationError as exc:
            messages[op] = str(exc)
        finally:
            transport.__dict__.pop(method, None)
    messages["sum"] = transport.allreduce(np.full(3, transport.rank + 1, np.float32), "after").tolist()
    return messages
