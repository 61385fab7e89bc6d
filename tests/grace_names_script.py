"""A GRACE-style training script that leans on the names GRACE's modules export: the
``*_cuda`` compressors, the helper functions ``sparsify``/``desparsify``/``orthogonalize``,
state attributes (``momentums``, ``global_step``, DGC memory's ``residuals`` and
``gradients``, PowerSGD's ``world_size``, ``q_memory``), and the NotImplementedError of an
unknown name. Written against GRACE alone; the tests run it on deepreduce unchanged."""
import torch
import torch.nn.functional as F

from grace_dl.dist import Compressor
from grace_dl.dist.communicator.allgather import Allgather
from grace_dl.dist.communicator.allreduce import Allreduce
from grace_dl.dist.compressor.powersgd import PowerSGDCompressor, orthogonalize
from grace_dl.dist.compressor.qsgd import QSGDCompressor_CUDA
from grace_dl.dist.compressor.topk import desparsify, sparsify
from grace_dl.dist.helper import grace_from_params
from grace_dl.dist.memory.powersgd import PowerSGDMemory
from grace_dl.dist.memory.residual import ResidualMemory

import grace_loop


class HelperTopK(Compressor):
    """A user's own top-k compressor built from GRACE's topk helpers."""

    def __init__(self, compress_ratio):
        super().__init__()
        self.compress_ratio = compress_ratio

    def compress(self, tensor, name):
        return list(sparsify(tensor, self.compress_ratio, 'torch')), tensor.size()

    def decompress(self, tensors, ctx):
        return desparsify(tensors, ctx.numel()).view(ctx)


def main(rank, world_size):
    facts = {}
    params = {'compressor': 'qsgd_cuda', 'memory': 'residual', 'communicator': 'allgather', 'world_size': world_size}
    grc = grace_from_params(params)
    facts['qsgd_cuda'] = (type(grc.compressor).__name__, isinstance(grc.compressor, QSGDCompressor_CUDA))
    facts['qsgd_cuda_run'] = grace_loop.train(rank, world_size, params)

    natural = dict(params, compressor='natural_cuda')
    facts['natural_cuda_run'] = grace_loop.train(rank, world_size, natural)

    grc = Allgather(HelperTopK(0.3), ResidualMemory(), world_size)
    facts['helper_topk_run'] = grace_loop.train(rank, world_size, None, grc=grc)

    compressor = PowerSGDCompressor(rank=1, use_memory=True, world_size=world_size)
    grc = Allreduce(compressor, PowerSGDMemory(compressor.q_memory, compress_rank=1), world_size)
    facts['powersgd_run'] = grace_loop.train(rank, world_size, None, grc=grc)
    facts['powersgd_state'] = (compressor.world_size, sorted(compressor.q_memory),
                               {k: type(v).__name__ for k, v in compressor.q_memory.items()})

    signum = grace_from_params({'compressor': 'signum', 'communicator': 'allgather', 'world_size': world_size})
    grace_loop.train(rank, world_size, None, grc=signum, steps=3, lr=0.01)
    facts['momentums'] = {k: (type(v).__name__, v.numel()) for k, v in signum.compressor.momentums.items()}

    randomk = grace_from_params({'compressor': 'randomk', 'world_size': world_size})
    grace_loop.train(rank, world_size, None, grc=randomk, steps=3)
    facts['global_step'] = randomk.compressor.global_step

    dgc = grace_from_params({'compressor': 'dgc', 'memory': 'dgc', 'communicator': 'allgather', 'world_size': world_size})
    grace_loop.train(rank, world_size, None, grc=dgc, steps=3)
    facts['dgc_state'] = (sorted(dgc.memory.residuals), sorted(dgc.memory.gradients),
                          type(dgc.memory.residuals['0.weight']).__name__)

    matrix = torch.randn(6, 3)
    orthogonalize(matrix)
    facts['orthogonal'] = torch.allclose(matrix.t() @ matrix, torch.eye(3), atol=1e-5)

    try:
        grace_from_params({'compressor': 'no-such-method'})
    except NotImplementedError as error:
        facts['unknown'] = str(error)
    return facts
