"""Decode cost of hostile Bloom frames against honest ones, per receiver policy: issue
9's forgery (one 0xff filter byte, m = 8, k = 64, count d - 1, the frame naming
conflict_sets), an all-ones filter with exactly the receiver's sizing (passes the
parameter check), and an honest top-1% frame. CPU seconds of one decompress (best of
3), and what happened. Prints a markdown table (docs/reliability.md).

    python benchmarks/hostile_bloom.py [d=1048576]
"""
import argparse
import time

import numpy as np

from deepreduce import FrameError, IndexCompressor, grace_from_params
from deepreduce._native import ffi, lib, u8

POLICIES = ["leftmost", "random", "p0", "conflict_sets"]


def seal(numel, count, params, sections):
    f = ffi.new("dr_frame *")
    f.kind, f.index_codec, f.value_codec = lib.DR_KIND_TOPK, lib.DR_INDEX_BLOOM, lib.DR_VALUE_RAW
    f.dtype, f.nsections, f.numel, f.count = lib.DR_DTYPE_FLOAT32, len(sections), numel, count
    f.params = params
    for i, section in enumerate(sections):
        f.section_len[i] = len(section)
    size = ffi.new("size_t *")
    lib.dr_frame_layout(f, size)
    frame = np.zeros(size[0], dtype=np.uint8)
    for i, section in enumerate(sections):
        frame[f.section_off[i]:f.section_off[i] + len(section)] = np.frombuffer(section, dtype=np.uint8)
    lib.dr_frame_seal(f, u8(frame), frame.nbytes, size)
    return frame


def receiver(d, policy):
    params = {"compressor": "topk", "compress_ratio": 0.01, "deepreduce": "index", "index": "bloom",
              "policy": policy}
    w = IndexCompressor(grace_from_params(params).compressor, params)
    honest, ctx = w.compress(np.random.default_rng(0).laplace(size=d).astype(np.float32), "w")
    return w, ctx, honest[0]


def frames(d, policy, w, honest):
    code = getattr(lib, f"DR_BLOOM_{policy.upper()}")
    yield "issue 9 forgery (m=8, k=64, count d-1)", seal(d, d - 1, (8, 64 | lib.DR_BLOOM_CONFLICT_SETS << 8, 0, 0),
                                                         [b"\xff", b"\0" * 4 * (d - 1)])
    r = max(1, d // 100)
    k_hash, m_bits = w.index_codec.sizing(d, r)
    ones = b"\xff" * (m_bits // 8) + (bytes([(1 << (m_bits % 8)) - 1]) if m_bits % 8 else b"")
    count = d if policy == "p0" else r
    yield "all-ones filter, receiver's sizing", seal(d, count, (m_bits, k_hash | code << 8, 0, 0),
                                                     [ones, b"\0" * 4 * count])
    yield "honest top-1% frame", honest


def main(d):
    print(f"d = {d}; CPU seconds of one decompress, best of 3")
    print("| receiver policy | frame | seconds | outcome |")
    print("|---|---|---:|---|")
    for policy in POLICIES:
        w, ctx, honest = receiver(d, policy)
        for label, frame in frames(d, policy, w, honest):
            best, outcome = float("inf"), ""
            for _ in range(3):
                start = time.process_time()
                try:
                    w.decompress([frame], ctx)
                    outcome = "decoded"
                except FrameError as exc:
                    outcome = "refused: " + str(exc).split(": ", 1)[1][:70]
                best = min(best, time.process_time() - start)
            print(f"| {policy} | {label} | {best:.4f} | {outcome} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("d", nargs="?", type=int, default=1 << 20, help="the tensor's size (default: 1048576)")
    main(parser.parse_args().d)
