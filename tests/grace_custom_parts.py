"""Parts a GRACE user writes themselves, in GRACE's style (its IMPLEMENTING.md): subclasses
of grace_dl.dist's base classes whose bodies are plain torch operations and
torch.distributed calls, knowing nothing of deepreduce. The tests mix them with
deepreduce's built-in parts."""
import torch
from torch import distributed as dist

from grace_dl.dist import Communicator, Compressor, Memory


class TorchFP16Compressor(Compressor):
    """Casts floating-point gradients to half precision; the context is the dtype."""

    def compress(self, tensor, name):
        dtype = tensor.dtype
        if dtype.is_floating_point:
            tensor = tensor.type(torch.float16)
        return [tensor], dtype

    def decompress(self, tensors, ctx):
        tensor, = tensors
        return tensor.type(ctx) if ctx.is_floating_point else tensor


class TorchResidualMemory(Memory):
    """Error feedback kept as torch tensors: residual = tensor - decompress(compress(tensor))."""

    def __init__(self, beta=1.0, gamma=1.0):
        self.residuals = {}
        self.beta = beta
        self.gamma = gamma

    def compensate(self, tensor, name):
        if name in self.residuals:
            tensor = self.beta * self.residuals[name] + self.gamma * tensor
        return tensor

    def update(self, tensor, name, compressor, tensor_compressed, ctx):
        self.residuals[name] = tensor - compressor.decompress(tensor_compressed, ctx)


class TorchAllreduce(Communicator):
    """In-place all_reduce of every payload tensor, then one decompress."""

    def send_receive(self, tensors, name, ctx):
        for tensor_compressed in tensors:
            dist.all_reduce(tensor_compressed)
            if self.compressor.average:
                tensor_compressed.div_(self.world_size)
        return self.compressor.decompress(tensors, ctx)


class TorchAllgather(Communicator):
    """all_gather of every payload tensor (padded to the longest when sizes differ),
    decompress each rank's payload, aggregate, average."""

    def send_receive(self, tensors, name, ctx):
        if self.compressor.tensors_size_are_same:
            gathered = []
            for tensor_compressed in tensors:
                tensor_list = [torch.empty_like(tensor_compressed) for _ in range(self.world_size)]
                dist.all_gather(tensor_list, tensor_compressed)
                gathered.append(tensor_list)
        else:
            local_sizes = torch.tensor([t.numel() for t in tensors])
            gathered_sizes = [torch.empty_like(local_sizes) for _ in range(self.world_size)]
            dist.all_gather(gathered_sizes, local_sizes)
            gathered = []
            for tensor, sizes in zip(tensors, zip(*gathered_sizes)):
                max_size = int(max(sizes))
                padded = torch.zeros(max_size, dtype=tensor.dtype)
                padded[:tensor.numel()] = tensor.flatten()
                tensor_list = [torch.empty_like(padded) for _ in range(self.world_size)]
                dist.all_gather(tensor_list, padded)
                gathered.append([t[:int(size)] for t, size in zip(tensor_list, sizes)])
        decompressed = [self.compressor.decompress(list(per_rank), ctx) for per_rank in zip(*gathered)]
        aggregated = self.compressor.aggregate(decompressed)
        return aggregated / self.world_size if self.compressor.average else aggregated
