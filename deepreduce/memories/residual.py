import numpy as np

from .. import edge
from .._native import check, f32, lib
from ..base import Memory


class ResidualMemory(Memory):
    """Error feedback: e = x − D(C(x)) is kept per tensor and the next gradient becomes
    x = β·e + γ·g. The residual buffer is allocated once per name and reused."""

    def __init__(self, beta=1.0, gamma=1.0):
        self.residuals = {}
        self.beta = beta
        self.gamma = gamma

    def compensate(self, tensor, name):
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        if flat.size != residual.size:
            raise ValueError(f"tensor {name!r} has {flat.size} elements but its residual has {residual.size}; "
                             "names must be stable and unique per parameter")
        out = np.empty_like(flat)
        check(lib.dr_axpby(self.beta, f32(residual), self.gamma, f32(flat), f32(out), flat.size), "compensate")
        return restore(out)

    def update(self, tensor, name, compressor, tensors, ctx):
        flat, _ = edge.to_core(tensor, what=f"tensor {name!r}")
        sent, _ = edge.to_core(compressor.decompress(tensors, ctx), what=f"decompressed {name!r}")
        residual = self.residuals.get(name)
        if residual is None or residual.size != flat.size:
            residual = self.residuals[name] = np.empty_like(flat)
        check(lib.dr_axpby(1.0, f32(flat), -1.0, f32(sent), f32(residual), flat.size), "residual update")

    def forget(self, name):
        self.residuals.pop(name, None)
