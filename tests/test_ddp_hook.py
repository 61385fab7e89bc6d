"""The DDP communication hook on 2 real gloo ranks."""
import functools

import numpy as np
import pytest

pytest.importorskip("torch")

import distributed
import grace_loop

TOPK = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1}


@pytest.mark.slow
def test_ddp_hook_trains_to_the_accuracy_of_the_grace_loop():
    hook_runs = distributed.run(grace_loop.train_ddp_hook, 2, TOPK)
    loop_runs = distributed.run(grace_loop.train, 2, TOPK)
    assert hook_runs[0][0].tobytes() == hook_runs[1][0].tobytes()  # ranks identical
    hook_accuracy, loop_accuracy = hook_runs[0][1], loop_runs[0][2]
    assert loop_accuracy > 0.85
    assert abs(hook_accuracy - loop_accuracy) <= 0.05, (hook_accuracy, loop_accuracy)


@pytest.mark.slow
def test_ddp_hook_runs_deepreduce_codecs_named_in_params():
    """'deepreduce', 'index' and 'value' in the params dict wrap the compressor, as in the
    train command and the federated mode (the hook's state left them out, unsaid, and ran
    plain top-k)."""
    for mode, wrapper in (("index", "IndexCompressor"), ("both", "DeepReduce")):
        params = dict(TOPK, deepreduce=mode, index="bloom", value="polyfit")
        runs = distributed.run(grace_loop.train_ddp_hook, 2, params)
        assert runs[0][0].tobytes() == runs[1][0].tobytes()  # ranks identical
        assert runs[0][2] == wrapper and runs[0][1] > 0.8, runs[0][1:]


@pytest.mark.slow
def test_ddp_hook_gives_powersgd_each_gradient_with_its_shape():
    """DDP's buckets are flat: PowerSGD, which sends a vector as it is, sent every bucket
    dense (the parameters were plain DDP's to the bit). The hook now exchanges such a
    compressor's bucket a gradient at a time, shaped: each averaged weight is rank 1."""
    runs = distributed.run(grace_loop.train_ddp_hook_watching_shapes, 2,
                           {"compressor": "powersgd", "memory": "powersgd", "compress_rank": 1})
    plain = distributed.run(grace_loop.train_ddp_hook, 2, None, 20)
    assert runs[0][0].tobytes() == runs[1][0].tobytes()  # ranks identical
    for flat, accuracy, tiled, largest_rank, names, matrices in runs:
        assert tiled and largest_rank == 1 and accuracy > 0.8, (tiled, largest_rank, accuracy)
        # a bucket's vectors go as one (a collective per bias vector was 30x torch's hook)
        vectors = [name for name in names if name.endswith(".vectors")]
        assert vectors and len(names) == matrices + len(vectors), names
    assert np.abs(runs[0][0] - plain[0][0]).max() > 1e-3


@pytest.mark.slow
def test_ddp_hook_without_compression_equals_plain_ddp():
    hooked = distributed.run(grace_loop.train_ddp_hook, 2, {"compressor": "none"})
    plain = distributed.run(grace_loop.train_ddp_hook, 2, None)
    np.testing.assert_allclose(hooked[0][0], plain[0][0], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_overlapping_hook_gives_the_synchronous_hooks_parameters():
    """50 steps through a model DDP splits into many buckets: the hook that exchanges on a
    worker thread while backward goes on ends with exactly the parameters of the hook that
    exchanges inside DDP's reducer (benchmarks/ddp_overlap.py times the two)."""
    for params in (TOPK, {"compressor": "qsgd", "memory": "residual", "communicator": "allgather"}):
        overlapped = distributed.run(grace_loop.train_ddp_hook, 2, params, 50, 32, True)
        synchronous = distributed.run(grace_loop.train_ddp_hook, 2, params, 50, 32, False)
        assert overlapped[0][0].tobytes() == synchronous[0][0].tobytes()
        assert overlapped[1][0].tobytes() == synchronous[1][0].tobytes()


@pytest.mark.slow
def test_overlapping_hook_beside_the_models_own_collectives_in_backward():
    """A layer that all-reduces in backward (as SyncBatchNorm's statistics do) ran its
    collective on DDP's group while the worker thread's exchanges ran there too, in
    another order on each rank: both ranks hung until gloo's timeout. The worker now
    exchanges on a group of its own."""
    params = {"compressor": "none", "communicator": "allgather"}
    train = functools.partial(grace_loop.train_ddp_hook_deep, width=128, depth=6, bucket_cap_mb=0.06,
                              sync_centering=True)
    overlapped = distributed.run(train, 2, params, True, pg_timeout=20)
    synchronous = distributed.run(train, 2, params, False)
    assert overlapped[0][0].tobytes() == overlapped[1][0].tobytes() == synchronous[0][0].tobytes()


@pytest.mark.slow
@pytest.mark.parametrize("params", [TOPK, {"compressor": "powersgd", "memory": "powersgd"}],
                         ids=["topk", "powersgd"])
def test_hook_under_static_graph_rebuilds_its_state_with_the_buckets(params):
    """static_graph=True rebuilds DDP's buckets a step later (before the third iteration),
    after the hook had started compressing: every method with a residual failed there
    ('has 1188 elements but its residual has 1860'). The rebuilt buckets start their
    memory afresh."""
    train = functools.partial(grace_loop.train_ddp_hook_deep, width=32, depth=2, bucket_cap_mb=0.001,
                              static_graph=True)
    overlapped = distributed.run(train, 2, params, True)
    synchronous = distributed.run(train, 2, params, False)
    assert overlapped[0][0].tobytes() == overlapped[1][0].tobytes() == synchronous[0][0].tobytes()
    assert overlapped[0][1] > 0.8


@pytest.mark.slow
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "sync"])
def test_an_error_in_the_hook_reaches_the_training_step_with_its_type_and_message(overlap):
    """The hook failed its future with set_exception, which DDP read back as "Unable to
    cast <message> to Tensor"; now the error is raised in a callback, which DDP reports
    with its type and message. The other rank's exchange fails too: no rank hangs."""
    messages = distributed.run(grace_loop.train_ddp_hook_failing, 2, overlap, timeout=90)
    assert "ValueError: rank 0's compressor refuses" in messages[0] and "Unable to cast" not in messages[0]
    assert messages[1] is not None and "CommunicationError" in messages[1], messages[1]


@pytest.mark.slow
def test_overlapping_hook_under_find_unused_parameters():
    """With find_unused_parameters=True DDP allreduces which parameters were used right
    after the last bucket's hook, on its own thread: the overlapping hook's exchanges still
    running on the worker then met it in another order on each rank, and the ranks hung
    until gloo's timeout. The hook now finishes the exchanges at the last bucket: the
    parameters are the synchronous hook's, and with 'none' plain DDP's."""
    overlapped = distributed.run(grace_loop.train_ddp_hook, 2, TOPK, 20, 32, True, True)
    synchronous = distributed.run(grace_loop.train_ddp_hook, 2, TOPK, 20, 32, False, True)
    for rank in range(2):
        assert overlapped[rank][0].tobytes() == synchronous[rank][0].tobytes()
    hooked = distributed.run(grace_loop.train_ddp_hook, 2, {"compressor": "none"}, 20, 32, True, True)
    plain = distributed.run(grace_loop.train_ddp_hook, 2, None, 20, 32, True, True)
    np.testing.assert_allclose(hooked[0][0], plain[0][0], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_hook_state_resumes_from_a_checkpoint():
    """The hook state saved with torch.save mid-training, as torch's PowerSGDState is, and
    loaded into a model rebuilt from the checkpoint: its residuals come back bit for bit,
    the first resumed iteration averages plainly (DDP's buckets are provisional again:
    nothing counted), compression resumes at the second, and the run ends where an
    uninterrupted one does."""
    resumed = distributed.run(grace_loop.train_ddp_hook_resumed, 2, TOPK, 30, 15)
    straight = distributed.run(grace_loop.train_ddp_hook, 2, TOPK, 30)
    assert resumed[0][0].tobytes() == resumed[1][0].tobytes()  # ranks identical
    for flat, accuracy, carried, counts in resumed:
        assert carried
        assert counts[1] == counts[0] and counts[2] > counts[1], counts
    assert abs(resumed[0][1] - straight[0][1]) <= 0.05, (resumed[0][1], straight[0][1])


@pytest.mark.slow
def test_hook_state_given_a_process_group_exchanges_within_it():
    """DDP on two pairs of ranks, each pair with its own group and its own data: the
    hook's exchange runs within the pair, as DDP's allreduce does (it ran over the default
    group, averaging all four ranks). 'none' gives plain DDP's parameters in each pair; top-k
    gives each pair's two ranks one result and the pairs different ones."""
    hooked = distributed.run(grace_loop.train_ddp_hook_in_pairs, 4, {"compressor": "none"})
    plain = distributed.run(grace_loop.train_ddp_hook_in_pairs, 4, None)
    topk = distributed.run(grace_loop.train_ddp_hook_in_pairs, 4, TOPK)
    for rank in range(4):
        np.testing.assert_allclose(hooked[rank][0], plain[rank][0], rtol=1e-5, atol=1e-6)
        assert hooked[rank][1:] == topk[rank][1:] == (2, 4)  # the pair's size; loaded: the world's
    assert not np.allclose(plain[0][0], plain[2][0])  # the pairs' data differ
    for first in (0, 2):
        assert topk[first][0].tobytes() == topk[first + 1][0].tobytes()
    assert topk[0][0].tobytes() != topk[2][0].tobytes()


def test_hook_state_refuses_a_transport_beside_a_process_group_and_bad_arguments():
    from deepreduce.torch import DeepReduceHookState
    with pytest.raises(ValueError, match="transport 'local' and process_group"):
        DeepReduceHookState({"compressor": "none", "transport": "local"}, process_group=object())
    with pytest.raises(ValueError, match="start_iter must be >= 1"):
        DeepReduceHookState({"compressor": "none"}, start_iter=0)
    with pytest.raises(ValueError, match="start_iter must be an integer, got 1.5"):
        DeepReduceHookState({"compressor": "none"}, start_iter=1.5)
    with pytest.raises(TypeError, match="overlap must be True or False, got 'no'"):  # 'no' overlapped
        DeepReduceHookState({"compressor": "none"}, overlap="no")
