"""Throughput of the C kernels on one core, through the public binding.

    python benchmarks/throughput.py [--numel 25557032] [--repeat 5]

Each row is the best of --repeat runs (the machine is shared and noisy: compare rows of one
run, not runs). Dense kernels report GB/s of float32 input; index codecs report millions of
indices per second at density 1%. SPEC §10's reference points: one streaming read ≈ 10 GB/s,
exact top-k by radix select 2–3 GB/s, Elias–Fano / bit-packed decode ≥ 1 G indices/s.
"""
import argparse
import os
import time

import numpy as np

from deepreduce._native import f32, ffi, lib, simd_level, u8, u32


def best_of(repeat, fn):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def dense_rows(x, repeat):
    n = x.size
    k = n // 100
    idx = np.empty(k, dtype=np.uint32)
    work = np.empty(lib.dr_topk_workspace_size(n, k), dtype=np.uint8)
    count = ffi.new("size_t *")
    half = np.empty(n, dtype=np.uint16)
    signs = np.empty(lib.dr_sign_bytes(n), dtype=np.uint8)
    frame = np.empty(lib.dr_qsgd_size(n, 127, 128), dtype=np.uint8)
    written = ffi.new("size_t *")
    out = np.empty(n, dtype=np.float32)
    lib.dr_qsgd_encode(f32(x), n, 127, 128, 1, 0, u8(frame), frame.nbytes, written)
    return [
        ("memcpy (numpy)", lambda: out.__setitem__(slice(None), x)),
        ("top-k 1% (radix, full)", lambda: lib.dr_topk(f32(x), n, k, u32(idx))),
        ("top-k 1% (sampled + radix)", lambda: lib.dr_topk_select(f32(x), n, k, u32(idx), ffi.from_buffer(work))),
        ("threshold count", lambda: lib.dr_threshold_count(f32(x), n, 2.0, count)),
        ("fp32 -> fp16", lambda: lib.dr_f32_to_f16(f32(x), ffi.from_buffer("uint16_t[]", half), n)),
        ("sign bit packing", lambda: lib.dr_pack_signs(f32(x), n, u8(signs))),
        ("qsgd encode (s=127, B=128)", lambda: lib.dr_qsgd_encode(f32(x), n, 127, 128, 1, 0, u8(frame), frame.nbytes, written)),
        ("qsgd decode", lambda: lib.dr_qsgd_decode(u8(frame), written[0], f32(out), n)),
    ]


def index_rows(d, repeat):
    r = d // 100
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(d, size=r, replace=False)).astype(np.uint32)
    back = np.empty(r, dtype=np.uint32)
    written = ffi.new("size_t *")
    rows = []
    for codec in ("ef", "rice", "varint", "rle"):
        bound = getattr(lib, f"dr_index_{codec}_bound")(d, r)
        buf = np.empty(bound, dtype=np.uint8)
        encode = getattr(lib, f"dr_index_{codec}_encode")
        decode = getattr(lib, f"dr_index_{codec}_decode")
        encode(u32(idx), r, d, u8(buf), buf.nbytes, written)
        size = written[0]
        rows.append((f"{codec} encode", lambda e=encode, b=buf: e(u32(idx), r, d, u8(b), b.nbytes, written)))
        rows.append((f"{codec} decode", lambda dec=decode, b=buf, s=size: dec(u8(b), s, d, r, u32(back))))
    bits = 17
    packed = np.empty(lib.dr_bitpack_size(r, bits), dtype=np.uint8)
    lib.dr_bitpack(u32(idx & ((1 << bits) - 1)), r, bits, u8(packed), packed.nbytes, written)
    rows.append(("bit unpack (17 bits)", lambda: lib.dr_bitunpack(u8(packed), packed.nbytes, r, bits, u32(back))))
    return r, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numel", type=int, default=25_557_032)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("DEEPREDUCE_THREADS", "1")  # one core: the kernels split by default
    x = np.random.default_rng(0).laplace(size=args.numel).astype(np.float32)
    print(f"SIMD path: {simd_level()}; {args.numel:,} float32 ({4 * args.numel / 1e6:.0f} MB), Laplace values")
    print(f"{'dense kernel':<30} {'ms':>8} {'GB/s':>7}")
    for label, fn in dense_rows(x, args.repeat):
        seconds = best_of(args.repeat, fn)
        print(f"{label:<30} {seconds * 1e3:8.2f} {4 * args.numel / seconds / 1e9:7.2f}")
    r, rows = index_rows(args.numel, args.repeat)
    print(f"\n{'index codec (d=' + format(args.numel, ',') + ', 1%)':<30} {'ms':>8} {'M idx/s':>8}")
    for label, fn in rows:
        seconds = best_of(args.repeat, fn)
        print(f"{label:<30} {seconds * 1e3:8.2f} {r / seconds / 1e6:8.0f}")


if __name__ == "__main__":
    main()
