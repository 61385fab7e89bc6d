"""The array edge: where torch tensors and NumPy arrays of any float dtype become the
flat float32 NumPy arrays the C core works on, and where results turn back.

A CPU float32 tensor or array crosses without a copy (a view). Other float dtypes are
converted here; CUDA tensors are staged through pinned host memory. ``Restore`` remembers
the input's type, dtype, device and shape so the result comes back as the input came in.

The caller's *kind* (torch or NumPy) crosses every role boundary, so that memories,
compressors and communicators written against GRACE's classes with torch operations mix
with ours: ``Restore.working`` gives a memory and a compressor the tensor in the
caller's kind and shape (CPU float32, a zero-copy view), ``Restore.wrap`` turns a
compressor's NumPy payload into the caller's kind (``torch.from_numpy``, no copy), and
``as_numpy`` / ``like`` carry payloads of either kind through the transports.
"""
import sys

import numpy as np

CORE_DTYPE = np.float32
_F32 = np.dtype(np.float32)
_NUMPY_FLOATS = (np.float16, np.float32, np.float64)


# torch's tensor class, once torch is imported (None until then). torch is never imported
# here: a tensor can only exist once its caller imported it. Kept because the edge asks
# "is this a tensor?" about ten times per step, and a dict and an attribute lookup each
# time cost about a microsecond of a step's twenty.
_TENSOR = None
# torch.float32, torch.bfloat16 and torch.from_numpy, bound with _TENSOR: the hot paths run
# only once a tensor has been seen, and read them without a module lookup.
_FLOAT32 = _BFLOAT16 = _FROM_NUMPY = None
# Classes whose instances are no TensorFlow tensor: NumPy's array, and torch's tensor
# once bound (a step skips its look for TensorFlow for these exact classes).
NOT_TENSORFLOW = {np.ndarray}


def is_torch(x):
    tensor = _TENSOR
    if tensor is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        tensor = _bind_torch(torch)
    return isinstance(x, tensor)


def _bind_torch(torch):
    """Keep torch's tensor class (``is_torch``), its float32, bfloat16 and from_numpy,
    and return the class."""
    global _TENSOR, _FLOAT32, _BFLOAT16, _FROM_NUMPY
    _FLOAT32, _BFLOAT16, _FROM_NUMPY = torch.float32, torch.bfloat16, torch.from_numpy
    NOT_TENSORFLOW.add(torch.Tensor)
    _TENSOR = torch.Tensor  # last: is_torch binds until this is set
    return _TENSOR


def is_tensorflow(x):
    """A TensorFlow tensor or variable (eager or symbolic), without importing TensorFlow:
    those cross through NumPy inside ``tf.numpy_function`` (``deepreduce.tensorflow``)."""
    # Without TensorFlow imported this costs one dict lookup per step.
    tf = sys.modules.get("tensorflow")
    return tf is not None and (tf.is_tensor(x) or isinstance(x, tf.Variable))


def _torch():
    """The torch module, already imported by whoever handed us a tensor."""
    return sys.modules["torch"]


def torch_float32():
    return sys.modules["torch"].float32


class Restore:
    """Turns a flat float32 result back into the caller's kind of array."""

    __slots__ = ("shape", "dtype", "torch_device", "is_torch", "on_cpu", "cpu_float32_torch")

    def __init__(self, shape, dtype, torch_device=None, is_torch=False, on_cpu=None):
        # A plain tuple of ints, a torch.Size copied: NumPy reshapes by a torch.Size at
        # half as much cost again (the Restore of a CPU float32 tensor is made once per
        # shape, so the copy is not a step's).
        self.shape = shape if type(shape) is tuple else tuple(shape)
        self.dtype = dtype
        self.torch_device = torch_device  # None: the CPU
        self.is_torch = is_torch
        self.on_cpu = (torch_device is None or torch_device.type == "cpu") if on_cpu is None else on_cpu
        # The caller's tensor was CPU float32 torch: a float32 result needs no cast or move.
        self.cpu_float32_torch = is_torch and self.on_cpu and dtype is _torch().float32

    def holds_float32_range(self):
        """Whether every finite float32 stays finite in the caller's dtype (float16 and
        narrower do not: past 65504 the cast gives Inf)."""
        if self.cpu_float32_torch or self.dtype == _F32:
            return True
        finfo = _torch().finfo if self.is_torch else np.finfo
        return float(finfo(self.dtype).max) >= float(np.finfo(np.float32).max)

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def wrap(self, array):
        """A NumPy array (a payload, a state buffer) in the caller's kind, sharing its
        memory: a CPU torch tensor when the caller passed torch, else the array itself."""
        return _FROM_NUMPY(array) if self.is_torch else array

    def working(self, flat):
        """The flat float32 core array as the roles see it: the caller's kind and shape,
        on the CPU, sharing flat's memory."""
        # NumPy's reshape then from_numpy: a third of the cost of torch's .view(shape).
        # A flat array already of the shape (a 1-D tensor, a DDP bucket) needs no reshape.
        shaped = flat if flat.shape == self.shape else flat.reshape(self.shape)
        return _FROM_NUMPY(shaped) if self.is_torch else shaped

    def __call__(self, flat):
        if self.cpu_float32_torch:  # the common cases, kept short
            if type(flat) is np.ndarray and flat.dtype is _F32 and flat.flags.c_contiguous:
                return _FROM_NUMPY(flat if flat.shape == self.shape else flat.reshape(self.shape))
            # A result a decompress has already restored (the step restores what its
            # communicator returns, whatever that is).
            if type(flat) is _TENSOR and flat.dtype is _FLOAT32 and flat.is_cpu and flat.shape == self.shape:
                return flat
        if is_torch(flat):  # a compressor already produced a tensor (e.g. user code)
            if not self.is_torch:
                return flat.detach().cpu().numpy().reshape(self.shape).astype(self.dtype, copy=False)
            out = flat if flat.shape == self.shape else flat.reshape(self.shape)
        else:
            flat = np.asarray(flat)
            if not self.is_torch:
                return flat.reshape(self.shape).astype(self.dtype, copy=False)
            if not flat.flags.c_contiguous:
                flat = np.ascontiguousarray(flat)
            out = _torch().from_numpy(flat.reshape(self.shape))
        if out.dtype != self.dtype:
            out = out.to(self.dtype)
        if not self.on_cpu or out.device.type != "cpu":
            out = out.to(self.torch_device, non_blocking=True)
        return out


# The Restore of a CPU float32 torch tensor, by shape. Such a Restore holds nothing but
# the shape (none is ever changed), so one serves every tensor of that shape, and making
# one afresh, as a step does twice, was a tenth of a 'none' step. A program whose shapes
# never repeat empties it now and then instead of growing it.
_CPU_FLOAT32_TORCH = {}
_CPU_FLOAT32_TORCH_MAX = 4096


def _cpu_float32_torch_restore(shape):
    restore = _CPU_FLOAT32_TORCH.get(shape)
    if restore is None:
        if len(_CPU_FLOAT32_TORCH) >= _CPU_FLOAT32_TORCH_MAX:
            _CPU_FLOAT32_TORCH.clear()
        restore = _CPU_FLOAT32_TORCH[shape] = Restore(shape, torch_float32(), None, True, True)
    return restore


def to_core(x, what="tensor"):
    """Return ``(flat, restore)``: ``flat`` a 1-D C-contiguous float32 NumPy array holding
    x's values (a view when x is CPU float32), ``restore`` the way back."""
    if is_torch(x):
        return _torch_to_core(x, what)
    return _array_to_core(x, what)


def _array_to_core(x, what):
    """to_core of anything but a torch tensor."""
    if isinstance(x, np.generic):
        # A NumPy scalar: what 0-d arrays become in arithmetic (the sum of every rank's
        # 0-d tensor) and what tf.numpy_function hands over for a scalar tf.Variable.
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        if x.dtype.type not in _NUMPY_FLOATS:
            raise TypeError(f"{what}: expected a floating-point array (float16/32/64), got dtype {x.dtype}")
        flat = np.ascontiguousarray(x.reshape(-1), dtype=CORE_DTYPE)
        return flat, Restore(x.shape, x.dtype)
    if isinstance(x, (list, tuple, float, int)):
        raise TypeError(f"{what}: expected a torch tensor or a NumPy array, got {type(x).__name__}; "
                        "wrap it with numpy.asarray(..., dtype=numpy.float32)")
    raise TypeError(f"{what}: expected a torch tensor or a NumPy array, got {type(x).__name__}")


def to_working(x, what, name):
    """``(working, numel, restore)`` for a step: ``working`` is x as the roles see it (the
    caller's kind and shape, CPU float32), ``restore`` the way back. A CPU float32
    contiguous tensor is its own working tensor (detached if it requires grad): no
    NumPy view is made, since the roles cross the edge themselves. An error names x as
    ``what`` and the tensor's ``name`` ("gradient 'fc.weight'"): the message is made
    only then, not at every step."""
    if type(x) is _TENSOR or is_torch(x):  # the exact class first: no call for the common case
        try:  # _contiguous, written out: a call per step costs more than the look
            working = x.dtype is _FLOAT32 and x.is_cpu and x.is_contiguous()
        except RuntimeError:
            working = False
        if working:
            shape = x.shape
            return (x.detach() if x.requires_grad else x), x.numel(), \
                _CPU_FLOAT32_TORCH.get(shape) or _cpu_float32_torch_restore(shape)
        flat, restore = _torch_to_core(x, f"{what} {name!r}")
    else:
        flat, restore = _array_to_core(x, f"{what} {name!r}")
    return restore.working(flat), flat.size, restore


def _contiguous(t):
    """``t.is_contiguous()``, False for a sparse compressed layout (CSR, BSR), which has
    none: the general path then says what is wrong with it."""
    try:
        return t.is_contiguous()
    except RuntimeError:
        return False


def _torch_to_core(t, what):
    dtype = t.dtype
    if dtype is _FLOAT32 and t.is_cpu and _contiguous(t):  # the common case, kept short: a view
        # A gradient never requires grad: detach (a new tensor object) only when needed.
        shape = t.shape
        return (t.detach() if t.requires_grad else t).numpy().reshape(-1), \
            _CPU_FLOAT32_TORCH.get(shape) or _cpu_float32_torch_restore(shape)
    torch = _torch()
    device = t.device
    if t.layout is not torch.strided:
        raise TypeError(f"{what}: expected a dense tensor, got layout {t.layout}; pass tensor.to_dense() "
                        "(a sparse gradient comes from nn.Embedding(sparse=True) and the like)")
    if device.type == "meta":
        raise ValueError(f"{what}: a tensor on the meta device holds no values; materialise it first "
                         "(module.to_empty(device=...) and initialise it)")
    restore = Restore(t.shape, dtype, device, is_torch=True)
    if not dtype.is_floating_point:
        raise TypeError(f"{what}: expected a floating-point tensor, got dtype {dtype}")
    t = t.detach()
    if device.type != "cpu":
        staged = torch.empty(t.shape, dtype=torch.float32, pin_memory=torch.cuda.is_available())
        staged.copy_(t, non_blocking=False)
        t = staged
    else:
        # contiguous: a strided or expanded 1-D tensor is already flat, and its reshape a
        # view with its strides, which the C kernels cannot read.
        t = t.to(torch.float32).contiguous()
    return t.reshape(-1).numpy(), restore


def unaliased(result, original, outputs=None, name=None):
    """``result``, or a copy of it where it is ``original``'s own memory: a CPU float32
    one into a buffer of ``outputs`` (a ``state.Outputs``) for ``name`` where given (a
    fresh 100 MB copy costs twice a reused one's time in page faults), else a new one."""
    if type(result) is _TENSOR and type(original) is _TENSOR:  # the common case, kept short
        if result.data_ptr() != original.data_ptr() or not result.numel():
            return result
    if is_torch(result):
        if not (is_torch(original) and result.numel() and result.data_ptr() == original.data_ptr()):
            return result
        if outputs is None or result.dtype is not _FLOAT32 or result.device.type != "cpu" or \
                not result.is_contiguous():
            return result.clone()
        return _torch().from_numpy(outputs.copy_of(name, result.numpy()))
    if not (isinstance(original, np.ndarray) and np.may_share_memory(result, original)):
        return result
    return result.copy() if outputs is None else outputs.copy_of(name, result)


def as_numpy(payload):
    """A payload of either kind as a NumPy array, without a copy where the memory allows
    (CPU tensors). bfloat16, which NumPy lacks, travels as float32 (``like`` casts back)."""
    if type(payload) is np.ndarray:
        return payload
    if not is_torch(payload):
        return np.asarray(payload)
    if payload.is_cpu and not payload.requires_grad and payload.dtype is not _BFLOAT16:
        return payload.numpy()  # the common case: no detached copy of the tensor object
    t = payload.detach()
    if t.dtype is _torch().bfloat16:
        t = t.float()
    return t.numpy() if t.device.type == "cpu" else t.cpu().numpy()


def cpu_float32_tensor(x):
    """Whether x is a torch tensor of exactly torch's class (no subclass), CPU float32
    and C-contiguous: one whose data pointer the C library may read as ``float *``."""
    return type(x) is _TENSOR and x.dtype is _FLOAT32 and x.is_cpu and x.is_contiguous()


def to_kind(array, template, dtype=None):
    """A NumPy array in the kind of ``template``: a torch tensor (zero-copy on the CPU) on
    template's device when template is one, else the array; cast to ``dtype`` (a dtype
    of that kind) when given."""
    if not is_torch(template):
        return array if dtype is None else array.astype(dtype, copy=False)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    out = _torch().from_numpy(array)
    if dtype is not None and out.dtype != dtype:
        out = out.to(dtype)
    return out if template.device.type == "cpu" else out.to(template.device)


def like(array, template):
    """A NumPy result in the kind and dtype of ``template`` (the payload it answers), with
    template's shape when the element count allows (a 0-d scalar payload comes back 0-d)."""
    if not is_torch(template):
        return array
    out = to_kind(array, template, template.dtype)
    return out.reshape(template.shape) if out.numel() == template.numel() and out.dim() != template.dim() else out


def writable_view(x):
    """x's memory as a flat float32 NumPy view, or None if x is not contiguous CPU
    float32 (a conversion would copy, and writes through it would be lost)."""
    if is_torch(x):
        if not x.is_cpu or x.dtype is not _torch().float32 or not x.is_contiguous():
            return None
        return x.detach().numpy().reshape(-1)
    if isinstance(x, np.ndarray) and x.dtype == CORE_DTYPE and x.flags.c_contiguous and x.flags.writeable:
        return x.reshape(-1)
    return None


def nan_filled(n):
    """What a non-finite marker frame decodes to: NaN in every entry."""
    return np.full(n, np.nan, dtype=CORE_DTYPE)


def zeros(n):
    return np.zeros(n, dtype=CORE_DTYPE)
