"""Speed of deepreduce against baselines measured in the same run, one table per area.

    python benchmarks/speed.py [--numel 25557032] [--repeat 3] [--huge] [--only topk,layer,grace,kernels,index,threads]

One process, one thread (torch.set_num_threads(1), and DEEPREDUCE_THREADS=1 unless set: by
default the C kernels split large tensors over the allowed cores). Every time is the median of --repeat runs of the thread's
CPU time (time.thread_time: on a shared machine, wall time also counts the other programs'
turns on the core); every ratio comes from times of this run. "pass" is one streaming read of the tensor, ``x.sum()``: a
kernel's time in passes says how close it is to the memory bound.

Tables:
  top-k      dr_topk_select (through the binding) at n = 1e6, 1e7, numel (--huge: 1e8) and
             rho = 0.001, 0.01, 0.1, against torch.topk(|x|), numpy.argpartition(|x|) and a pass.
  layer      top-k of one layer's tensor (dr_topk_sparsify, n = 1e3 to 1e5, rho = 0.01 and
             GRACE's default 0.3) against torch.topk(|x|) and numpy.argpartition(|x|).
  grace      every GRACE method, compress + decompress through deepreduce's compressor (as a
             user calls it), against a straightforward torch version of the same algorithm
             written here (no GRACE code) and against a pass.
  index      the index codecs at d = numel: bits per index against the floor
             log2(C(d, r)) / r, encode and decode in G indices/s; bit unpacking. The
             buffers' pointers are made once, as a caller that reuses its buffers does,
             and each timing spans calls for at least a million indices, so that the
             timer's reads (a system call each) are not counted against 25k indices.
  kernels    the quantiser kernels themselves (C, the caller's buffers), encode and decode,
             in passes.
  threads    qsgd encode + decode and top-k 1% with DEEPREDUCE_THREADS = 1 and 2 (wall time),
             beside one streaming read (torch.sum) on 1 and 2 torch threads.
"""
import argparse
import math
import os
import platform
import statistics
import time

import numpy as np
import torch

import deepreduce
from deepreduce._native import f32, ffi, lib, simd_level, u8, u32


def median_time(repeat, fn, clock=time.thread_time):
    """The median of `repeat` timings of fn() by `clock` (thread CPU time by default)."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def one_pass(x):
    """One streaming read: torch's x.sum() (also for NumPy arrays, viewed without a copy),
    so every table measures passes against the same reference."""
    t = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
    return lambda: t.sum()


# ------------------------------------------------------------------------------- top-k

def best_of_rounds(repeat, *steps):
    """The best time of each step over `repeat` rounds that run the steps one after the
    other: on a shared VM the memory bus's load drifts over seconds, and a reference timed
    apart from what it is set against would be timed under another load."""
    rounds = [[median_time(1, step) for step in steps] for _ in range(repeat)]
    return [min(times) for times in zip(*rounds)]


def topk_table(repeat, sizes):
    print(f"\n## top-k (ours = dr_topk_select; ratios = their time / ours; best of {repeat})")
    print(f"{'n':>11} {'rho':>6} {'ours ms':>8} {'pass ms':>8} {'passes':>7} {'torch.topk':>11} {'argpartition':>13}")
    for n in sizes:
        x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
        xt = torch.from_numpy(x)
        for rho in (0.001, 0.01, 0.1):
            k = max(1, int(n * rho))
            idx = np.empty(k, dtype=np.uint32)
            work = np.empty(lib.dr_topk_workspace_size(n, k), dtype=np.uint8)
            t_pass, ours, t_torch, t_np = best_of_rounds(
                repeat, one_pass(x), lambda: lib.dr_topk_select(f32(x), n, k, u32(idx), ffi.from_buffer(work)),
                lambda: torch.topk(xt.abs(), k, sorted=False), lambda: np.argpartition(np.abs(x), n - k)[n - k:])
            print(f"{n:>11,} {rho:>6} {ours * 1e3:8.2f} {t_pass * 1e3:8.2f} {ours / t_pass:7.1f} "
                  f"{t_torch / ours:10.1f}x {t_np / ours:12.1f}x")
    # Tensors of mostly zeros (a reduced chunk of sparse payloads, an embedding's
    # gradient): the sample's threshold is zero, and fewer than k entries may be nonzero.
    n = sizes[-1]
    k = max(1, int(n * 0.01))
    idx = np.empty(k, dtype=np.uint32)
    work = np.empty(lib.dr_topk_workspace_size(n, k), dtype=np.uint8)
    print(f"{'n':>11} {'nonzero':>8} {'ours ms':>8} {'pass ms':>8} {'passes':>7} {'torch.topk':>11} "
          f"{'argpartition':>13}   (rho = 0.01, the rest zeros)")
    for density in (0.03, 0.005, 0.0):
        rng = np.random.default_rng(2)
        x = np.empty(n, dtype=np.float32)
        x.fill(0.0)  # written, not fresh zero pages (which every read finds in one page)
        x[rng.choice(n, int(n * density), replace=False)] = rng.standard_normal(int(n * density))
        xt = torch.from_numpy(x)
        t_pass, ours, t_torch, t_np = best_of_rounds(
            repeat, one_pass(x), lambda: lib.dr_topk_select(f32(x), n, k, u32(idx), ffi.from_buffer(work)),
            lambda: torch.topk(xt.abs(), k, sorted=False), lambda: np.argpartition(np.abs(x), n - k)[n - k:])
        print(f"{n:>11,} {density:>8} {ours * 1e3:8.2f} {t_pass * 1e3:8.2f} {ours / t_pass:7.1f} "
              f"{t_torch / ours:10.1f}x {t_np / ours:12.1f}x")


def batch_time(fn, seconds=2e-3):
    """A call of fn's thread CPU time, from a batch of calls that together take about
    `seconds`: a call of a few microseconds is below what one reading of the clock resolves."""
    calls, spent = 1, 0.0
    while spent < seconds:
        calls *= 4
        start = time.thread_time()
        for _ in range(calls):
            fn()
        spent = time.thread_time() - start
    return spent / calls


def small_topk_table(repeat):
    """Top-k on one layer's tensor, as GRACE's per-tensor step meets it: dr_topk_sparsify
    (indices and values, what the topk compressor calls) at GRACE's default ratio 0.3 and at
    1%, its pointers made once, as the step keeps them with its buffers (making four per
    call cost more than the call on 1,000 entries). Tensors this small stay in cache, so
    there is no pass column; each time is the best of `repeat` rounds of batches
    (batch_time)."""
    print(f"\n## top-k of one layer (ours = dr_topk_sparsify; ratios = their time / ours; best of {repeat})")
    print(f"{'n':>11} {'rho':>6} {'ours us':>8} {'ns/entry':>9} {'torch.topk':>11} {'argpartition':>13}")
    for n in (1_000, 10_000, 30_000, 100_000):
        x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
        xt = torch.from_numpy(x)
        for rho in (0.01, 0.3):
            k = max(1, int(n * rho))
            idx, val = np.empty(k, dtype=np.uint32), np.empty(k, dtype=np.float32)
            work = np.empty(lib.dr_topk_workspace_size(n, k), dtype=np.uint8)
            x_p, idx_p, val_p, work_p = f32(x), u32(idx), f32(val), ffi.from_buffer(work)
            steps = (lambda: lib.dr_topk_sparsify(x_p, n, k, idx_p, val_p, work_p),
                     lambda: torch.topk(xt.abs(), k, sorted=False),
                     lambda: np.argpartition(np.abs(x), n - k)[n - k:])
            ours, t_torch, t_np = [min(times) for times in zip(*[[batch_time(step) for step in steps]
                                                                  for _ in range(repeat)])]
            print(f"{n:>11,} {rho:>6} {ours * 1e6:8.1f} {ours / n * 1e9:9.2f} {t_torch / ours:10.1f}x "
                  f"{t_np / ours:12.1f}x")


# ------------------------------------------------------------------ torch versions (GRACE)
# Straightforward torch versions of each method: compress then decompress, as one would
# write them from the papers. They are the baselines, not references for correctness.

def t_none(x):
    return x.clone()


def t_fp16(x):
    return x.half().float()


def t_topk(x, rho=0.01):
    k = max(1, int(x.numel() * rho))
    _, idx = torch.topk(x.abs(), k, sorted=False)
    return torch.zeros_like(x).scatter_(0, idx, x[idx])


def t_randomk(x, rho=0.01):
    k = max(1, int(x.numel() * rho))
    idx = torch.randperm(x.numel())[:k]
    return torch.zeros_like(x).scatter_(0, idx, x[idx])


def t_threshold(x, thr=0.01):
    idx = (x.abs() >= thr).nonzero().squeeze(1)
    return torch.zeros_like(x).scatter_(0, idx, x[idx])


def t_dgc(x, rho=0.01):
    n = x.numel()
    k = max(1, int(n * rho))
    sample = x[torch.randint(n, (max(1, n // 100),))].abs()
    thr = torch.topk(sample, max(1, int(sample.numel() * rho)), sorted=False)[0].min()
    for _ in range(10):
        count = int((x.abs() >= thr).sum())
        if 0.7 * k <= count <= 1.3 * k:
            break
        thr = thr * (1.3 if count > k else 0.7)
    idx = (x.abs() >= thr).nonzero().squeeze(1)
    return torch.zeros_like(x).scatter_(0, idx, x[idx])


def t_qsgd(x, s=127, bucket=128):
    n = x.numel()
    b = torch.nn.functional.pad(x, (0, (-n) % bucket)).view(-1, bucket)
    norm = b.norm(dim=1, keepdim=True)
    a = b.abs() / norm.clamp_min(1e-30) * s
    low = a.floor()
    level = (low + (torch.rand_like(a) < a - low).float()) * b.sign()
    levels = level.to(torch.int8)
    return (levels.float() * norm / s).view(-1)[:n]


def t_terngrad(x):
    c = 2.5 * x.std(unbiased=False)
    y = x.clamp(-c, c)
    s = y.abs().max()
    t = (torch.rand_like(y) < y.abs() / s).to(torch.int8) * y.sign().to(torch.int8)
    return t.float() * s


def t_onebit(x):
    mask = x >= 0
    pos, neg = x[mask].mean(), x[~mask].mean()
    return torch.where(mask, pos, neg)


def t_signsgd(x):
    return torch.where(x >= 0, 1.0, -1.0)


def t_signum(x, state={}):  # noqa: B006 - the momentum persists across calls, as Signum's does
    m = state.get("m")
    m = x.clone() if m is None else m.mul_(0.9).add_(x, alpha=0.1)
    state["m"] = m
    return torch.where(m >= 0, 1.0, -1.0)


def t_efsignsgd(x):
    return torch.where(x >= 0, 1.0, -1.0) * x.abs().mean()


def t_natural(x):
    mant, exp = torch.frexp(x.abs())  # |x| = mant * 2^exp, mant in [0.5, 1)
    low = torch.ldexp(torch.full_like(x, 0.5), exp)
    up = torch.rand_like(x) < (mant * 2 - 1)
    code = (exp + up.to(exp.dtype)).to(torch.int8)
    return torch.ldexp(torch.full_like(x, 0.5), code.to(torch.int32)) * x.sign() * (low > 0)


_EIGHTBIT = None


def t_8bit(x):
    global _EIGHTBIT
    if _EIGHTBIT is None:
        table = np.empty(128, dtype=np.float32)
        lib.dr_eightbit_table(f32(table))
        _EIGHTBIT = torch.from_numpy(table)
    scale = x.abs().max()
    a = x.abs() / scale
    hi = torch.searchsorted(_EIGHTBIT, a).clamp(1, 127)
    lo = hi - 1
    code = torch.where((a - _EIGHTBIT[lo]) <= (_EIGHTBIT[hi] - a), lo, hi).to(torch.uint8)
    return _EIGHTBIT[code.long()] * scale * x.sign()


def t_inceptionn(x, bound_bits=10):
    a = x.abs()
    big = a >= 1
    mid = (a >= 2.0 ** -8) & ~big
    small = (a >= 2.0 ** -bound_bits) & ~big & ~mid
    half = x[mid].half()
    byte = (x[small] * 2 ** (bound_bits - 1) * 127).round().to(torch.int8)
    out = torch.zeros_like(x)
    out[big] = x[big]
    out[mid] = half.float()
    out[small] = byte.float() / (2 ** (bound_bits - 1) * 127)
    return out


def t_sketch(x, bins=127):
    edges = torch.quantile(x[torch.randint(x.numel(), (1 << 16,))], torch.linspace(0, 1, bins + 1)[1:-1])
    code = torch.bucketize(x, edges)
    means = torch.zeros(bins).index_add_(0, code, x) / torch.bincount(code, minlength=bins).clamp_min(1)
    return means[code]


def t_adaq(x, rho=0.01):
    n = x.numel()
    sample = x[torch.randint(n, (max(1, n // 100),))]
    out = torch.zeros_like(x)
    for sign in (1.0, -1.0):
        side = sample * sign
        side = side[side > 0]
        if side.numel() == 0:
            continue
        thr = torch.topk(side, max(1, int(side.numel() * rho)), sorted=False)[0].min()
        idx = ((x * sign) >= thr).nonzero().squeeze(1)
        out[idx] = x[idx].mean()
    return out


def t_powersgd(m, rank=1):
    q = torch.randn(m.shape[1], rank)
    p = torch.linalg.qr(m @ q)[0]
    q = m.t() @ p
    return p @ q.t()


GRACE_METHODS = [
    ("none", {}, t_none),
    ("fp16", {}, t_fp16),
    ("topk", {"compress_ratio": 0.01}, t_topk),
    ("topk 0.3", {"compress_ratio": 0.3}, lambda x: t_topk(x, 0.3)),  # GRACE's default ratio: the bitmap
    ("randomk", {"compress_ratio": 0.01}, t_randomk),
    ("randomk 0.3", {"compress_ratio": 0.3}, lambda x: t_randomk(x, 0.3)),  # GRACE's default ratio
    ("threshold", {"threshold": 0.01}, t_threshold),
    ("dgc", {"compress_ratio": 0.01}, t_dgc),
    ("qsgd", {"quantum_num": 127, "bucket_size": 128}, t_qsgd),
    ("terngrad", {}, t_terngrad),
    ("onebit", {}, t_onebit),
    ("signsgd", {}, t_signsgd),
    ("signum", {"momentum": 0.9}, t_signum),
    ("efsignsgd", {}, t_efsignsgd),
    ("natural", {}, t_natural),
    ("8bit", {}, t_8bit),
    ("inceptionn", {}, t_inceptionn),
    ("sketch", {"quantum_num": 127}, t_sketch),
    ("adaq", {"compress_ratio": 0.01}, t_adaq),
    ("powersgd", {"compress_rank": 1}, t_powersgd),
]
# A row's label is the method's name, and after a space what sets it apart from the
# method's other row. PowerSGD works on matrices (a vector goes dense): it gets x as rows
# of 1024.
MATRIX_METHODS = {"powersgd"}


def grace_table(repeat, n, methods=None):
    from deepreduce.pairings import natural_params
    from deepreduce.params import resolve_params
    from deepreduce.registry import COMPRESSORS, COMPRESSOR_ALIASES, lookup

    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    t_pass = median_time(repeat, one_pass(x))
    print(f"\n## GRACE methods, n = {n:,}, compress + decompress (pass = x.sum() = {t_pass * 1e3:.2f} ms)")
    print(f"{'method':<11} {'ours ms':>8} {'passes':>7} {'torch ms':>9} {'torch/ours':>11}")
    for label, extra, torch_version in GRACE_METHODS:
        name = label.split()[0]
        if methods and name not in methods:
            continue
        # The method's own communicator (powersgd refuses another), no memory: the codec alone.
        params = resolve_params(dict(natural_params(name, **extra), memory="none"))
        compressor = lookup(COMPRESSORS, "compressor", name, COMPRESSOR_ALIASES).from_params(params)

        data = x[: n - n % 1024].view(-1, 1024) if name in MATRIX_METHODS else x

        def ours():
            payload, ctx = compressor.compress(data, "w")
            return compressor.decompress(payload, ctx)

        try:
            ours()
            t_ours = median_time(repeat, ours)
        except Exception as exc:  # a method that needs a process group (powersgd)
            print(f"{label:<11} {'n/a':>8} ({type(exc).__name__}: {str(exc)[:60]})")
            continue
        t_torch = median_time(repeat, lambda: torch_version(data))
        # 'none' hands the tensor back: its row shows the call overhead, not a ratio.
        ratio = "-" if name == "none" else f"{t_torch / t_ours:.1f}x"
        print(f"{label:<11} {t_ours * 1e3:8.1f} {t_ours / t_pass:7.1f} {t_torch * 1e3:9.1f} {ratio:>11}")


# ----------------------------------------------------------------------------- kernels

def kernel_calls(x, n):
    """(name, encode(frame), frame size) for each quantiser kernel, on the caller's
    buffers as the compressors use them; the name's first word names the decoder."""
    written = ffi.new("size_t *")
    work = np.empty(max(lib.dr_sketch_workspace_size(n, 127), lib.dr_adaq_workspace_size(n)), dtype=np.uint8)
    w = ffi.from_buffer(work)
    return written, [
        ("qsgd", lambda b: lib.dr_qsgd_encode(f32(x), n, 127, 128, 1, 0, u8(b), b.nbytes, written), lib.dr_qsgd_size(n, 127, 128)),
        ("terngrad", lambda b: lib.dr_terngrad_encode(f32(x), n, 1, 0, u8(b), b.nbytes, written), lib.dr_terngrad_size(n)),
        ("natural", lambda b: lib.dr_natural_encode(f32(x), n, 1, 0, u8(b), b.nbytes, written), lib.dr_natural_size(n)),
        ("eightbit", lambda b: lib.dr_eightbit_encode(f32(x), n, 0, u8(b), b.nbytes, written), lib.dr_eightbit_size(n)),
        ("sketch", lambda b: lib.dr_sketch_encode(f32(x), n, 127, 1, 0, w, u8(b), b.nbytes, written), lib.dr_sketch_size(n, 127)),
        ("inceptionn", lambda b: lib.dr_inceptionn_encode(f32(x), n, 10, 0, u8(b), b.nbytes, written), lib.dr_inceptionn_bound(n)),
        ("adaq", lambda b: lib.dr_adaq_encode(f32(x), n, 0.01, 1, 0, w, u8(b), b.nbytes, written), lib.dr_adaq_bound(n)),
        # GRACE's default ratio: past a few percent the selection is swept from x itself.
        ("adaq 30%", lambda b: lib.dr_adaq_encode(f32(x), n, 0.3, 1, 0, w, u8(b), b.nbytes, written), lib.dr_adaq_bound(n)),
        ("onebit", lambda b: lib.dr_onebit_encode(f32(x), n, 0, u8(b), b.nbytes, written), lib.dr_onebit_size(n)),
        ("efsignsgd", lambda b: lib.dr_efsignsgd_encode(f32(x), n, 0, u8(b), b.nbytes, written), lib.dr_efsignsgd_size(n)),
        ("signsgd", lambda b: lib.dr_signsgd_encode(f32(x), n, 0, u8(b), b.nbytes, written), lib.dr_signsgd_size(n)),
    ]


def kernels_table(repeat, n):
    """The quantiser kernels in passes: each row's pass, encode and decode are the best of
    `repeat` rounds of the three (best_of_rounds; the issue's "min of 3")."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty(n, dtype=np.float32)
    read = one_pass(x)
    print(f"\n## quantiser kernels (C, caller's buffers), n = {n:,}, SIMD {simd_level()}, best of {repeat}")
    print(f"{'kernel':<11} {'enc ms':>7} {'dec ms':>7} {'pass ms':>8} {'passes':>7}")
    written, calls = kernel_calls(x, n)
    for name, encode, size in calls:
        frame = np.empty(size, dtype=np.uint8)
        assert encode(frame) == 0, name
        length = written[0]
        decode = getattr(lib, f"dr_{name.split()[0]}_decode")
        t_pass, te, td = best_of_rounds(repeat, read, lambda: encode(frame),
                                        lambda: decode(u8(frame), length, f32(out), n))
        print(f"{name:<11} {te * 1e3:7.1f} {td * 1e3:7.1f} {t_pass * 1e3:8.2f} {(te + td) / t_pass:7.1f}")


# ------------------------------------------------------------------------------- index

def per_call(repeat, fn, calls):
    """median_time of `calls` calls of fn back to back, per call."""
    def batch():
        for _ in range(calls):
            fn()
    return median_time(repeat, batch) / calls


def floor_bits(d, r):
    return (math.lgamma(d + 1) - math.lgamma(r + 1) - math.lgamma(d - r + 1)) / math.log(2) / r


def index_table(repeat, d):
    print(f"\n## index codecs, d = {d:,} (G idx/s = 1e9 indices per second)")
    print(f"{'codec':<8} {'density':>8} {'bits/idx':>9} {'floor':>7} {'+bits':>6} {'enc G/s':>8} {'dec G/s':>8}")
    written = ffi.new("size_t *")
    for rho in (0.001, 0.01, 0.1):
        r = int(d * rho)
        idx = np.sort(np.random.default_rng(2).choice(d, size=r, replace=False)).astype(np.uint32)
        back = np.empty(r, dtype=np.uint32)
        fl = floor_bits(d, r)
        calls = -(-1_000_000 // r)
        for codec in ("ef", "rice", "varint", "rle"):
            buf = np.empty(getattr(lib, f"dr_index_{codec}_bound")(d, r), dtype=np.uint8)
            enc = getattr(lib, f"dr_index_{codec}_encode")
            dec = getattr(lib, f"dr_index_{codec}_decode")
            idx_p, buf_p, back_p = u32(idx), u8(buf), u32(back)
            assert enc(idx_p, r, d, buf_p, buf.nbytes, written) == 0
            size = written[0]
            te = per_call(repeat, lambda: enc(idx_p, r, d, buf_p, buf.nbytes, written), calls)
            td = per_call(repeat, lambda: dec(buf_p, size, d, r, back_p), calls)
            assert np.array_equal(back, idx)
            bits = 8 * size / r
            print(f"{codec:<8} {rho:>8} {bits:9.2f} {fl:7.2f} {bits - fl:6.2f} {r / te / 1e9:8.2f} {r / td / 1e9:8.2f}")
    n = d
    back = np.empty(n, dtype=np.uint32)
    for bits in (6, 17):
        vals = (np.arange(n, dtype=np.uint64) * 2654435761 % (1 << bits)).astype(np.uint32)
        buf = np.empty(lib.dr_bitpack_size(n, bits), dtype=np.uint8)
        lib.dr_bitpack(u32(vals), n, bits, u8(buf), buf.nbytes, written)
        buf_p, back_p = u8(buf), u32(back)
        tu = median_time(repeat, lambda: lib.dr_bitunpack(buf_p, buf.nbytes, n, bits, back_p))
        print(f"bit unpacking, {bits} bits: {n / tu / 1e9:.2f} G idx/s")


# ----------------------------------------------------------------------------- threads

def threads_table(repeat, n):
    """qsgd encode + decode and top-k 1% with DEEPREDUCE_THREADS = 1 and 2, in wall time
    (CPU time would add the threads up), encode and decode also apart, beside one streaming
    read (torch.sum with 1 and 2 torch threads) and one write (fill_): their speed-ups are
    what the memory bus gives a second core in the same minutes, the ceiling for a kernel
    bound by it (qsgd's decode writes 4 bytes per element, its encode reads 4 and writes 1). Each repeat times 1 then 2 threads
    back to back, and the speed-up is the median of those pairs' ratios, so that the
    host's load, which drifts over seconds on a shared VM, hits both sides of a pair.
    The table is taken twice: each call right after the one before, and each call after
    5 ms asleep, as a training step's compression comes after a wait on the network, when
    the cores have gone idle (where new threads start then: src/c/core/parallel.c)."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    xt = torch.from_numpy(x)
    out = np.empty(n, dtype=np.float32)
    filled = torch.empty(n)
    frame = np.empty(lib.dr_qsgd_size(n, 127, 128), dtype=np.uint8)
    written = ffi.new("size_t *")
    k = n // 100
    idx = np.empty(k, dtype=np.uint32)
    work = np.empty(lib.dr_topk_workspace_size(n, k), dtype=np.uint8)

    def qsgd_encode():
        lib.dr_qsgd_encode(f32(x), n, 127, 128, 1, 0, u8(frame), frame.nbytes, written)

    def qsgd_decode():
        lib.dr_qsgd_decode(u8(frame), written[0], f32(out), n)

    def qsgd():
        qsgd_encode()
        qsgd_decode()

    def topk():
        lib.dr_topk_select(f32(x), n, k, u32(idx), ffi.from_buffer(work))

    def ours(count):
        os.environ["DEEPREDUCE_THREADS"] = str(count)

    saved_env, saved_torch = os.environ.get("DEEPREDUCE_THREADS"), torch.get_num_threads()
    print(f"\n## threads: wall ms (median, min, max of {repeat}), n = {n:,}")
    try:
        for pause, when in ((0.0, "each call right after the one before"), (0.005, "each call after 5 ms asleep")):
            print(f"### {when}")
            for name, step, use in (("one pass (torch.sum)", lambda: xt.sum(), torch.set_num_threads),
                                    ("one write (fill_)", lambda: filled.fill_(1.0), torch.set_num_threads),
                                    ("qsgd encode", qsgd_encode, ours), ("qsgd decode", qsgd_decode, ours),
                                    ("qsgd encode + decode", qsgd, ours), ("top-k 1%", topk, ours)):
                results = {1: [], 2: []}
                for _ in range(repeat):
                    for count in results:
                        use(count)
                        if pause:
                            time.sleep(pause)
                        results[count].append(median_time(1, step, clock=time.perf_counter))
                use(1)
                for count, times in results.items():
                    print(f"{name:<22} {count} thread(s): {statistics.median(times) * 1e3:7.1f} "
                          f"{min(times) * 1e3:7.1f} {max(times) * 1e3:7.1f}")
                pairs = [one / two for one, two in zip(results[1], results[2])]
                print(f"{name:<22} speed-up of 2 threads: {statistics.median(pairs):.2f}x (median of pairs; "
                      f"of medians {statistics.median(results[1]) / statistics.median(results[2]):.2f}x)")
    finally:
        torch.set_num_threads(saved_torch)
        if saved_env is None:
            os.environ.pop("DEEPREDUCE_THREADS", None)
        else:
            os.environ["DEEPREDUCE_THREADS"] = saved_env


def cpu_description():
    """The CPU as docs/performance.md names hosts: model name, and on x86 its family and
    model numbers (a VM's model name can be bare, e.g. 'AMD EPYC', where the numbers tell
    Zen 3 from Zen 4). The machine's architecture where /proc/cpuinfo is not to be had."""
    try:
        with open("/proc/cpuinfo") as f:
            first_cpu = f.read().split("\n\n")[0]
    except OSError:
        return platform.machine() or "unknown CPU"
    fields = {key.strip(): value.strip() for key, _, value in
              (line.partition(":") for line in first_cpu.splitlines()) if value}
    name = fields.get("model name") or platform.machine() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        return f"{name} (family {fields['cpu family']} model {fields['model']})"
    return name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numel", type=int, default=25_557_032)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--huge", action="store_true", help="add n = 1e8 to the top-k table")
    parser.add_argument("--only", default="topk,layer,grace,kernels,index,threads", help="comma-separated tables")
    parser.add_argument("--methods", default="", help="comma-separated GRACE methods (default all)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    # The C kernels split large tensors over the allowed cores by default; every table
    # but "threads" measures one core.
    os.environ.setdefault("DEEPREDUCE_THREADS", "1")
    tables = set(args.only.split(","))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"deepreduce {deepreduce.__version__}, SIMD path {simd_level()}, torch {torch.__version__}, "
          f"numpy {np.__version__}; {cpu_description()}, load average {load:.1f} on {os.cpu_count()} cores")
    if "topk" in tables:
        topk_table(args.repeat, sorted({10**6, 10**7, args.numel} | ({10**8} if args.huge else set())))
    if "layer" in tables:
        small_topk_table(args.repeat)
    if "grace" in tables:
        grace_table(args.repeat, args.numel, [m for m in args.methods.split(",") if m])
    if "kernels" in tables:
        kernels_table(args.repeat, args.numel)
    if "index" in tables:
        index_table(args.repeat, args.numel)
    if "threads" in tables:
        threads_table(args.repeat, args.numel)


if __name__ == "__main__":
    main()
