"""The array edge: where torch tensors and NumPy arrays of any float dtype become the
flat float32 NumPy arrays the C core works on, and where results turn back.

A CPU float32 tensor or array crosses without a copy (a view). Other float dtypes are
converted here; CUDA tensors are staged through pinned host memory. ``Restore`` remembers
the input's type, dtype, device and shape so the result comes back as the input came in.
"""
import sys

import numpy as np

CORE_DTYPE = np.float32
_NUMPY_FLOATS = (np.float16, np.float32, np.float64)


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch" and sys.modules.get("torch") is not None


class Restore:
    """Turns a flat float32 result back into the caller's kind of array."""

    __slots__ = ("shape", "dtype", "torch_device", "is_torch")

    def __init__(self, shape, dtype, torch_device=None, is_torch=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.torch_device = torch_device
        self.is_torch = is_torch

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __call__(self, flat):
        if _is_torch(flat):  # a compressor already produced a tensor (e.g. user code)
            import torch
            return flat.reshape(self.shape).to(dtype=self.dtype, device=self.torch_device) \
                if self.is_torch else flat.detach().cpu().numpy().reshape(self.shape).astype(self.dtype, copy=False)
        flat = np.asarray(flat)
        if not self.is_torch:
            return flat.reshape(self.shape).astype(self.dtype, copy=False)
        import torch
        out = torch.from_numpy(np.ascontiguousarray(flat)).reshape(self.shape)
        if out.dtype != self.dtype:
            out = out.to(self.dtype)
        if self.torch_device.type != "cpu":
            out = out.to(self.torch_device, non_blocking=True)
        return out


def to_core(x, what="tensor"):
    """Return ``(flat, restore)``: ``flat`` a 1-D C-contiguous float32 NumPy array holding
    x's values (a view when x is CPU float32), ``restore`` the way back."""
    if _is_torch(x):
        return _torch_to_core(x, what)
    if isinstance(x, np.ndarray):
        if x.dtype.type not in _NUMPY_FLOATS:
            raise TypeError(f"{what}: expected a floating-point array (float16/32/64), got dtype {x.dtype}")
        flat = np.ascontiguousarray(x.reshape(-1), dtype=CORE_DTYPE)
        return flat, Restore(x.shape, x.dtype)
    if isinstance(x, (list, tuple, float, int)):
        raise TypeError(f"{what}: expected a torch tensor or a NumPy array, got {type(x).__name__}; "
                        "wrap it with numpy.asarray(..., dtype=numpy.float32)")
    raise TypeError(f"{what}: expected a torch tensor or a NumPy array, got {type(x).__name__}")


def _torch_to_core(t, what):
    import torch
    if not t.dtype.is_floating_point:
        raise TypeError(f"{what}: expected a floating-point tensor, got dtype {t.dtype}")
    restore = Restore(t.shape, t.dtype, t.device, is_torch=True)
    t = t.detach()
    if t.device.type != "cpu":
        staged = torch.empty(t.shape, dtype=torch.float32, pin_memory=torch.cuda.is_available())
        staged.copy_(t, non_blocking=False)
        t = staged
    elif t.dtype != torch.float32:
        t = t.to(torch.float32)
    return np.ascontiguousarray(t.reshape(-1).numpy()), restore


def zeros(n):
    return np.zeros(n, dtype=CORE_DTYPE)
