"""The transports' allgather over real processes: one collective per call once the
tensor sequence repeats, every byte right whether a payload fits the guessed capacity,
spills past it or is empty, and ranks that move on to different tensors after steady
steps raise a CommunicationError on every rank instead of aborting in the engine, as do
ranks that pass arrays of different dtypes to any collective."""
import numpy as np
import pytest

pytest.importorskip("torch")

import distributed
import transport_workload
from deepreduce.transports.base import CapacityGuess


def test_capacity_guess_follows_a_repeating_sequence_and_forgets_past_its_bound():
    guess = CapacityGuess()
    assert guess.capacity() == 0  # nothing seen yet
    for size_a, size_b in [(1000, 64), (1000, 64)]:
        guess.record(1, size_a)
        guess.record(2, size_b)
    guess.record(1, 1000)
    assert guess.capacity() == 128  # 2 followed 1 twice: its 64 bytes, + 1/32, to 64
    guess.record(2, 3000)
    assert guess.capacity() == 1088  # 1 followed 2 twice: 1000 + 31, to 64
    guess.record(3, 10)
    assert guess.capacity() == 0  # 3 is new: no successor known
    guess.record(1, 1000)
    assert guess.capacity() == 3136  # 2 followed 1 three times: 3000 + 93, to 64
    guess.record(3, 10)
    guess.record(1, 1000)
    assert guess.capacity() == 0  # 1 was last followed by 3, once: no guess
    for tag in range(100, 100 + CapacityGuess.REMEMBERED):
        guess.record(tag, 8)
    assert len(guess._largest) <= CapacityGuess.REMEMBERED and guess.capacity() == 0


def _counting_transport():
    """A TorchTransport whose torch.distributed.all_gather calls are counted."""
    import torch.distributed as dist
    from deepreduce.transports.torch_dist import TorchTransport
    calls = [0]
    engine = dist.all_gather

    def counted(*args, **kwargs):
        calls[0] += 1
        return engine(*args, **kwargs)

    transport = TorchTransport()
    transport._dist = _Patched(dist, all_gather=counted)
    return transport, lambda: calls[0]


class _Patched:
    """A module with some attributes replaced (the worker's torch.distributed stays as is)."""

    def __init__(self, module, **replaced):
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, attr):
        return getattr(self._module, attr)


def _exchange(rank, world):
    transport, calls = _counting_transport()
    return transport_workload.exchange(transport, calls)


def _diverge(rank, world, other):
    transport, _ = _counting_transport()
    return transport_workload.diverge(transport, other)


@pytest.mark.slow
def test_allgather_is_one_collective_in_steady_state_and_every_byte_arrives():
    counts = distributed.run(_exchange, 3)
    assert counts[0] == counts[1] == counts[2]  # every rank took the same path
    by_step = {(step, name): n for step, name, n in counts[0]}
    # The first steps learn the sequence: sizes first, then the payloads.
    assert all(by_step[0, name] == 2 for name in transport_workload.NAMES)
    # From step 3 on the steady weight goes in one collective; conv.bias, which grows
    # past the guess every step, spills into a second; fc.weight drifts within the slack,
    # except right after its empty step 5, whose size was the guess.
    for step in range(3, transport_workload.STEPS):
        assert by_step[step, "conv.weight"] == 1
        assert by_step[step, "conv.bias"] == 2
        assert by_step[step, "fc.weight"] == (2 if step == 6 else 1)
        assert by_step[step, "fc.bias"] == 1
    single = sum(n == 1 for n in by_step.values())
    assert single >= 3 * (transport_workload.STEPS - 3)


@pytest.mark.slow
@pytest.mark.parametrize("other", ["head.weight", "fc.weight"], ids=["new tensor", "tensor out of turn"])
def test_ranks_that_diverge_after_steady_steps_raise_on_every_rank(other):
    messages = distributed.run(_diverge, 2, other, timeout=60)  # an engine abort shows as a timeout
    for rank, message in enumerate(messages):
        assert "ranks disagree on the tensor sequence" in message, message
        assert f"rank {rank} sent tensor" in message


def _mismatched_dtypes(rank, world):
    transport, _ = _counting_transport()
    return transport_workload.mismatched_dtypes(transport)


def check_dtype_refusals(messages, world):
    """Every collective refused on every rank, naming each rank's dtype (the bytes had been
    read as the other type's: float64 pairs as garbage float32s; the sum aborted gloo)."""
    sent = ", ".join(f"rank {r}: {'float64' if r == 1 else 'float32'}" for r in range(world))
    for op in ("allreduce", "allgather", "broadcast", "alltoall"):
        assert messages[op] == (f"{op} of tensor 'w': the ranks' dtypes differ ({sent}); "
                                "every rank must pass the same dtype"), messages[op]
    mixed = ", ".join(f"rank {r}: {'arrays of several dtypes' if r == 1 else 'float32'}" for r in range(world))
    assert f"the ranks' dtypes differ ({mixed})" in messages["alltoall mixed"], messages["alltoall mixed"]
    assert messages["sum"] == [world * (world + 1) / 2] * 3  # still in step


def test_dtype_codes_name_every_dtype_and_a_foreign_code_as_a_number():
    """The code each rank sends names its dtype on every other rank; a code no rank of
    ours sends (bytes from another program, damage) still gives a message, not an error
    from NumPy while the message is made."""
    import numpy as np

    from deepreduce.transports.base import MIXED_DTYPES, dtype_code, dtype_name
    for dtype in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int64, np.bool_, np.complex128, "M8[ns]"):
        assert dtype_name(dtype_code(dtype)) == np.dtype(dtype).name
    assert dtype_name(MIXED_DTYPES) == "arrays of several dtypes"
    for foreign in (0, -5, 123456789, 2**63 - 1):
        assert dtype_name(foreign) == f"an unknown dtype (code {foreign:#x})"


@pytest.mark.slow
def test_ranks_that_pass_different_dtypes_raise_on_every_rank():
    for messages in distributed.run(_mismatched_dtypes, 2, timeout=60):  # an abort shows as a timeout
        check_dtype_refusals(messages, 2)


def _forged_sizes(rank, world):
    transport, _ = _counting_transport()
    return transport_workload.forged_sizes(transport)


@pytest.mark.slow
def test_payload_sizes_no_rank_of_ours_sends_are_refused_on_every_rank():
    """A negative allgather size was read as an empty payload, and the spill collective the
    other sizes asked for then waited for gloo's timeout; a broadcast past any machine's
    memory failed in NumPy's allocation. Now each is a CommunicationError on every rank that
    names the rank and what it stated, and the ranks stay in step."""
    for messages in distributed.run(_forged_sizes, 2, timeout=60):
        check_size_refusals(messages, 2)


def check_size_refusals(messages, world):
    stated = {"allgather": -24, "broadcast": 1 << 60, "alltoall": -1}
    for op, size in stated.items():
        assert messages[op] == (f"{op} of tensor 'w': rank 1 stated a payload of {size} bytes, which "
                                f"no rank of deepreduce sends (0 to {1 << 48}); every rank must run "
                                "the same deepreduce in this collective"), messages[op]
    assert messages["sum"] == [world * (world + 1) / 2] * 3  # still in step


def _short_messages(rank, world):
    """Rank 1 hands gloo fewer bytes than it stated: half its broadcast, half its alltoall
    message to rank 0. gloo takes a short message into a longer receive and leaves the
    rest of the buffer as it was, so rank 0 took uninitialised memory as an unframed
    payload's values, unsaid. Returns, per collective, this rank's outcome."""
    import torch
    from deepreduce.errors import CommunicationError
    from deepreduce.transports.base import marked
    from deepreduce.transports.torch_dist import TorchTransport
    transport = TorchTransport()
    if rank == 1:
        engine = transport._alltoallv_bytes

        def short_broadcast(data, nbytes, root):
            transport._dist.broadcast(torch.from_numpy(marked(data[:nbytes // 2])), src=root)
            return data[:nbytes]

        transport._broadcast_bytes = short_broadcast
        transport._alltoallv_bytes = lambda sends, sizes: engine(
            [s[:s.nbytes // 2] if peer == 0 else s for peer, s in enumerate(sends)], sizes)
    outcomes = {}
    for op, call in (("broadcast", lambda: transport.broadcast(np.arange(200, dtype=np.float32), 1, "w")),
                     ("alltoall", lambda: transport.alltoall([np.arange(100, dtype=np.float32)] * world, "w"))):
        try:
            call()
            outcomes[op] = "no error"
        except CommunicationError as exc:
            outcomes[op] = str(exc)
    return outcomes


@pytest.mark.slow
def test_a_peer_that_sends_fewer_bytes_than_it_stated_is_named():
    rank0, rank1 = distributed.run(_short_messages, 2, timeout=60)
    assert rank0 == {op: f"{op} of tensor 'w' failed on rank 0 of 2 (torch.distributed): rank 1 sent fewer bytes "
                         f"than the {size} it stated (or other bytes at their end): every rank must run the same "
                         "deepreduce" for op, size in (("broadcast", 800), ("alltoall", 400))}
    assert rank1 == {"broadcast": "no error", "alltoall": "no error"}


@pytest.mark.slow
@pytest.mark.mpi
def test_the_same_workload_under_mpirun():
    rows = distributed.run_mpi("transport_mpi_run.py", 3)  # a wrong byte fails the job
    assert sorted(row["rank"] for row in rows) == [0, 1, 2]
    assert all("ranks disagree on the tensor sequence" in row["diverged"] for row in rows)
    for row in rows:
        check_dtype_refusals(row["dtypes"], 3)
        check_size_refusals(row["sizes"], 3)


def test_a_world_of_one_refuses_a_broadcast_root_that_is_no_rank():
    """At world size 1 the root was not looked at: a script's root_rank=1 ran here and
    failed only on a real world."""
    import numpy as np

    from deepreduce.transports.local import LocalTransport
    local = LocalTransport()
    assert local.broadcast(np.ones(2, np.float32), 0, "w").tolist() == [1.0, 1.0]
    for root in (1, -1, 0.0, True):
        with pytest.raises(ValueError, match="is not a rank of this world \\(ranks 0 to 0\\)"):
            local.broadcast(np.ones(2, np.float32), root, "w")
