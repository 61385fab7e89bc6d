"""GRACE's Horovod-PyTorch flavour: grace_dl.torch's names and helper, the communicators'
send_step/receive_step, and deepreduce.torch.horovod's call shapes (one process here;
two processes in test_horovod_examples.py)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import deepreduce.torch.horovod as hvd
from deepreduce import CommunicationError, grace_from_params, world
from deepreduce.transports import LocalTransport
from tests.distributed import run

TOPK = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.2}


LAUNCHER_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                "PMI_SIZE", "PMI_RANK", "PMIX_RANK")


def test_init_finds_the_world_the_communicators_find(monkeypatch):
    """hvd.init() and grace_from_params's communicators choose the engine in one place
    (transports.resolve): alone, a world of one; an environment that names a larger world
    without the means to join it is refused by both, never run as a world of one."""
    for name in LAUNCHER_ENV:
        monkeypatch.delenv(name, raising=False)
    assert isinstance(world.discover(), LocalTransport)
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(CommunicationError, match="world size is 3"):
        world.discover()
    with pytest.raises(CommunicationError, match="world size is 3"):
        grace_from_params(TOPK).step(torch.ones(4), "w")


def model_and_batch(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    return model, x, y


def test_graces_torch_paths_and_send_receive_steps():
    from grace_dl.torch.communicator.allgather import Allgather
    from grace_dl.torch.communicator.allreduce import Allreduce
    from grace_dl.torch.compressor.topk import TopKCompressor
    from grace_dl.torch.helper import grace_from_params as torch_factory
    from grace_dl.torch.memory.residual import ResidualMemory
    grc = Allgather(TopKCompressor(0.3), ResidualMemory(), 1)
    g = torch.randn(10, 10)
    handle, ctx = grc.send_step(g, "w")
    out = grc.receive_step(handle, ctx)
    expected = grace_from_params(dict(TOPK, compress_ratio=0.3)).step(g, "w")
    assert torch.equal(out, expected)
    assert isinstance(Allreduce(TopKCompressor(0.3), ResidualMemory()), Allreduce)
    assert type(torch_factory(TOPK).compressor).__name__ == "TopKCompressor"


def test_distributed_optimizer_steps_with_the_grace_average(one_process_world):
    model, x, y = model_and_batch()
    reference, _, _ = model_and_batch()
    grc, expected_grc = grace_from_params(TOPK), grace_from_params(TOPK)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5), grc,
                                   named_parameters=model.named_parameters())
    assert isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD"
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.5)
    for i in range(3):
        for m, o in ((model, opt), (reference, ref_opt)):
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
        for name, p in reference.named_parameters():
            p.grad.copy_(expected_grc.step(p.grad, name))
        if i == 1:  # Horovod's pattern for clipping: exchange once, then step without exchanging again
            opt.synchronize()
            with opt.skip_synchronize():
                opt.step()
        else:
            opt.step()
        ref_opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.equal(a, b)


def test_distributed_optimizer_without_grace_averages_sparse_gradients(one_process_world):
    """An nn.Embedding(sparse=True) gradient failed in the dense average ("unsupported
    memory format option Contiguous"); Horovod averages such gradients. It comes back
    sparse, for the optimizers that need it so."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 3, sparse=True)
    reference = torch.nn.Embedding(10, 3, sparse=True)
    reference.load_state_dict(emb.state_dict())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5), named_parameters=emb.named_parameters())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    rows = torch.tensor([[1, 4], [4, 7]])
    for model, optimizer in ((emb, opt), (reference, ref_opt)):
        optimizer.zero_grad()
        model(rows).sum().backward()
        optimizer.step()
    assert emb.weight.grad.is_sparse and torch.equal(emb.weight, reference.weight)


def test_distributed_optimizer_checks_its_arguments(one_process_world):
    model, _, _ = model_and_batch()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    named = list(model.named_parameters())
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(sgd, named_parameters=[("w", p) for _, p in named])
    with pytest.raises(ValueError, match="not in it"):
        hvd.DistributedOptimizer(sgd, named_parameters=named[:1])
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(sgd, backward_passes_per_step=2)
    # Horovod's own names, as its scripts write them (they had no attribute here).
    with pytest.raises(ValueError, match="Adasum"):
        hvd.DistributedOptimizer(sgd, op=hvd.Adasum)
    with pytest.raises(ValueError, match="compression=hvd.Compression.fp16: .*compressor': 'fp16'"):
        hvd.DistributedOptimizer(sgd, compression=hvd.Compression.fp16)
    with pytest.raises(ValueError, match="Adasum"):
        hvd.allreduce(torch.ones(2), op=hvd.Adasum)
    hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=named,
                             compression=hvd.Compression.none)  # no cast: the params decide
    with pytest.raises(ValueError, match="only op="):  # Horovod's rule: op supersedes the deprecated flag
        hvd.allreduce(torch.ones(2), average=True, op=hvd.Sum)
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        hvd.DistributedOptimizer(object())
    world.shutdown()
    with pytest.raises(ValueError, match="hvd.init"):
        hvd.DistributedOptimizer(sgd)


def test_the_optimizer_takes_horovods_options_and_refuses_what_is_no_communicator(one_process_world):
    model, x, y = model_and_batch()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    # GRACE's params dict where its communicator belongs: it failed at the first step()
    with pytest.raises(TypeError, match="grace must be a communicator, grace_from_params\\(params\\).*got dict"):
        hvd.DistributedOptimizer(sgd, {"compressor": "topk"})
    with pytest.raises(TypeError, match="hvd.allreduce: tensor must be a torch.Tensor, got list"):
        hvd.allreduce([1.0, 2.0])
    for bad in (0.0, float("inf"), "x"):
        with pytest.raises(ValueError, match="gradient_predivide_factor must be a finite number > 0"):
            hvd.DistributedOptimizer(sgd, gradient_predivide_factor=bad)
    with pytest.raises(ValueError, match="a GRACE communicator averages in its own way"):
        hvd.DistributedOptimizer(sgd, grace_from_params(TOPK), gradient_predivide_factor=2.0)
    # Horovod's own examples pass the factor (1.0 by default): the script runs as written
    opt = hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters(), gradient_predivide_factor=4.0)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    before = [p.grad.clone() for p in model.parameters()]
    opt.synchronize()
    for a, b in zip(before, model.parameters()):
        assert torch.allclose(a, b.grad, rtol=1e-6)  # one rank: (g / 4) * (4 / 1)
    # wrapped after it stepped: its state and its defaults (for groups added later) go along
    sgd = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    sgd.step()
    opt = hvd.DistributedOptimizer(sgd)
    assert opt.defaults["lr"] == 0.3 and all("momentum_buffer" in opt.state[p] for p in model.parameters())


def test_parameters_added_later_and_sparse_gradients_go_through_the_communicator(one_process_world):
    """A group added after wrapping (a new head) failed at step() with a bare KeyError; a
    sparse gradient with a communicator said to call .to_dense(), which the optimizer,
    not the script, would have to."""
    torch.manual_seed(0)
    emb, head = torch.nn.Embedding(10, 3, sparse=True), torch.nn.Linear(3, 1)
    reference, reference_head = torch.nn.Embedding(10, 3), torch.nn.Linear(3, 1)
    reference.load_state_dict(emb.state_dict())
    reference_head.load_state_dict(head.state_dict())
    grc = grace_from_params({"compressor": "none", "memory": "none", "communicator": "allreduce"})
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5), grc,
                                   named_parameters=emb.named_parameters())
    opt.add_param_group({"params": head.parameters()})
    ref_opt = torch.optim.SGD([*reference.parameters(), *reference_head.parameters()], lr=0.5)
    rows = torch.tensor([[1, 4], [4, 7]])
    for model, top, optimizer in ((emb, head, opt), (reference, reference_head, ref_opt)):
        optimizer.zero_grad()
        top(model(rows)).sum().backward()
        optimizer.step()
    assert emb.weight.grad.is_sparse and torch.equal(emb.weight, reference.weight)
    assert torch.equal(head.weight, reference_head.weight)
    dense = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5), sparse_as_dense=True)
    dense.zero_grad()
    emb(rows).sum().backward()
    dense.step()
    assert not emb.weight.grad.is_sparse


def test_broadcast_parameters_takes_a_list_of_tensors_and_refuses_others(one_process_world):
    model, _, _ = model_and_batch()
    hvd.broadcast_parameters(list(model.parameters()), root_rank=0)  # Horovod takes a plain list
    for bad, what in ((None, "got NoneType"), (torch.ones(2), "got Tensor"), ([("a", 1)], "got \\('a', 1\\)")):
        with pytest.raises(TypeError, match=f"broadcast_parameters: .*{what}"):
            hvd.broadcast_parameters(bad, root_rank=0)


def _autograd_and_state(rank, world_size):
    """Horovod's collectives are autograd functions; its broadcast_optimizer_state sends
    every hyperparameter (here only numbers were: Adam's betas and amsgrad stayed each
    rank's own, and the ranks' weights parted); objects travel pickled."""
    hvd.init()
    try:
        x = torch.full((3,), float(rank + 1), requires_grad=True)
        (2 * x.sum() + hvd.allreduce(x, name="x").sum()).backward()     # d/dx: 2 + mean of ones
        rows = torch.ones(rank + 1, 2, requires_grad=True)
        (hvd.allgather(rows, name="rows") * torch.arange(1.0, 4.0).reshape(3, 1)).sum().backward()
        root = torch.ones(2, requires_grad=True)
        (hvd.broadcast(root, root_rank=1, name="root") * (rank + 1)).sum().backward()
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        adam = torch.optim.Adam(model.parameters(), lr=1e-2)
        if rank == 0:  # root resumed from a checkpoint of other hyperparameters
            state = adam.state_dict()
            state["param_groups"][0].update(lr=5e-3, betas=(0.5, 0.6), amsgrad=True)
            adam.load_state_dict(state)
        hvd.broadcast_optimizer_state(adam, root_rank=0)
        group = adam.param_groups[0]
        hyper = (group["lr"], group["betas"], group["amsgrad"])
        objects = (hvd.broadcast_object({"epoch": 3} if rank == 0 else None, root_rank=0),
                   hvd.allgather_object(("rank", rank)))
        return x.grad.tolist(), rows.grad.tolist(), root.grad.tolist(), hyper, objects
    finally:
        world.shutdown()


@pytest.mark.slow
def test_collectives_are_differentiable_and_optimizer_state_travels_whole():
    for rank, (x_grad, rows_grad, root_grad, hyper, objects) in enumerate(run(_autograd_and_state, 2)):
        assert x_grad == [3.0] * 3
        # rows 0 (rank 0) and 1, 2 (rank 1), each weighted 1, 2, 3, summed over both ranks' losses
        assert rows_grad == ([[2.0, 2.0]] if rank == 0 else [[4.0, 4.0], [6.0, 6.0]])
        assert root_grad == ([0.0, 0.0] if rank == 0 else [3.0, 3.0])
        assert hyper == (5e-3, (0.5, 0.6), True)
        assert objects == ({"epoch": 3}, [("rank", 0), ("rank", 1)])


def _state_of_every_kind(rank, world_size):
    """What broadcast_optimizer_state could not send as JSON was dropped (LBFGS's history
    lists, deleted on every rank; LBFGS then failed) or left as each rank had it (a NumPy
    lr); optimizers of other groups left the ranks out of step; an object root cannot
    pickle left the others waiting; a sparse gradient came back sparse in its values,
    so SparseAdam skipped the zeros of the rows it should update."""
    import numpy as np
    hvd.init()
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        lbfgs = torch.optim.LBFGS(model.parameters(), history_size=3)
        x = torch.randn(8, 3, generator=torch.Generator().manual_seed(rank))

        def closure():
            lbfgs.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            return loss
        lbfgs.step(closure)
        hvd.broadcast_optimizer_state(lbfgs, root_rank=0)
        history = [d.tolist() for d in lbfgs.state[model.weight]["old_dirs"]]
        lbfgs.step(closure)                                          # failed: the lists were gone
        sgd = torch.optim.SGD(model.parameters(), lr=np.float32(0.1 * (rank + 1)))
        hvd.broadcast_optimizer_state(sgd, root_rank=0)
        uneven = torch.optim.SGD([{"params": [model.weight]}, {"params": [model.bias]}] if rank == 0
                                 else model.parameters(), lr=0.1)
        with pytest.raises(ValueError, match="differ in their parameter groups .* \\[\\[1, 1\\], \\[2\\]\\]"):
            hvd.broadcast_optimizer_state(uneven, root_rank=0)
        with pytest.raises(TypeError, match="rank 0's object cannot be pickled"):
            hvd.broadcast_object(lambda: rank if rank == 0 else None, root_rank=0)
        emb = torch.nn.Embedding(4, 2, sparse=True)
        opt = hvd.DistributedOptimizer(torch.optim.SparseAdam(emb.parameters()), named_parameters=emb.named_parameters())
        (emb(torch.tensor([1])) * torch.tensor([1.0, 0.0])).sum().backward()   # row 1 touched, one entry 0
        opt.synchronize()
        touched = (emb.weight.grad.sparse_dim(), emb.weight.grad.coalesce().indices().tolist())
        complex_mean = hvd.allreduce(torch.tensor([1j * (rank + 1)]), name="c")
        rows = torch.ones(rank + 1, 2, requires_grad=True)
        first, = torch.autograd.grad(hvd.allgather(rows, name="g").pow(2).sum(), rows, create_graph=True)
        second, = torch.autograd.grad(first.sum(), rows)                  # twice through the allgather
        return history, sgd.param_groups[0]["lr"], touched, complex_mean.tolist(), second.tolist()
    finally:
        world.shutdown()


@pytest.mark.slow
def test_optimizer_state_of_every_kind_travels_and_sparse_gradients_keep_their_rows():
    ranks = run(_state_of_every_kind, 2)
    assert ranks[0][0] == ranks[1][0] and ranks[0][0]              # root's LBFGS history on both
    for history, lr, touched, complex_mean, second in ranks:
        assert lr == np.float32(0.1)
        assert touched == (1, [[1]])                                # the row, not its nonzero entry
        assert complex_mean == [1.5j]
    assert ranks[0][4] == [[4.0, 4.0]] and ranks[1][4] == [[4.0, 4.0], [4.0, 4.0]]


def _collectives(rank, world_size):
    hvd.init()
    try:
        model, _, _ = model_and_batch(seed=rank)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        sgd = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.5)
        if rank == 0:  # root resumed with momentum buffers, the other rank fresh: it must take root's
            for p in model.parameters():
                sgd.state[p]["momentum_buffer"] = torch.ones_like(p)
        hvd.broadcast_optimizer_state(sgd, root_rank=0)
        momentum = torch.cat([sgd.state[p]["momentum_buffer"].reshape(-1) for p in model.parameters()]).numpy()
        mean = hvd.allreduce(torch.tensor(float(rank)), name="metric")
        total = hvd.allreduce(torch.tensor([rank + 1]), op=hvd.Sum)
        assert hvd.allreduce(torch.tensor([rank + 1]), average=False).tolist() == total.tolist()
        gathered = hvd.allgather(torch.full((rank + 1, 2), float(rank)))
        weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
        # Rows of another width, or another dtype, on one rank: read as garbage before (rank 0
        # got 5 rows of 2 from rows of 2 and of 3; a float64's bytes as float32 pairs).
        for mine in (torch.ones(2, 2 + rank), torch.ones(2, 2, dtype=torch.float32 if rank == 0 else torch.float64)):
            with pytest.raises(CommunicationError, match="the ranks' tensors differ in dtype or in the dimensions"):
                hvd.allgather(mine)
        # Another dtype on one rank: gloo aborted the process on the sum, the broadcast gave garbage.
        mixed = torch.ones(3, dtype=torch.float32 if rank == 0 else torch.float64)
        for collective in (lambda: hvd.allreduce(mixed, name="mixed"), lambda: hvd.broadcast(mixed, 0, name="mixed")):
            with pytest.raises(CommunicationError, match="the ranks' dtypes differ \\(rank 0: float32, rank 1: float64\\)"):
                collective()
        for root in (2, -1):  # no rank: refused on every rank, before any exchange (-1 indexed from the end)
            with pytest.raises(ValueError, match=f"root {root} is not a rank of this world \\(ranks 0 to 1\\)"):
                hvd.broadcast(torch.ones(2), root_rank=root)
        assert hvd.broadcast(torch.full((2,), float(rank)), root_rank=1).tolist() == [1.0, 1.0]  # still in step
        return weights, sgd.param_groups[0]["lr"], mean.item(), total.tolist(), gathered.tolist(), hvd.size(), momentum
    finally:
        world.shutdown()


@pytest.mark.slow
def test_collectives_over_gloo():
    ranks = run(_collectives, 2)
    np.testing.assert_array_equal(ranks[0][0], ranks[1][0])  # rank 0's weights everywhere
    assert [r[1] for r in ranks] == [0.1, 0.1]
    np.testing.assert_array_equal(ranks[0][6], ranks[1][6])  # root's optimizer state everywhere
    assert np.all(ranks[1][6] == 1.0)
    for weights, lr, mean, total, gathered, size, _ in ranks:
        assert mean == 0.5 and total == [3] and size == 2
        assert gathered == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]


def test_only_deepreduce_tensorflow_imports_tensorflow():
    probe = ("import sys, deepreduce, deepreduce.torch.horovod, grace_dl.tensorflow.helper, "
             "grace_dl.tensorflow.compressor.u8bit, grace_dl.tensorflow.communicator.allgather; "
             "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
