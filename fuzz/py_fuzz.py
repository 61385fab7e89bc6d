"""Mutation fuzzer over the public ``decompress`` of every compressor and every
DeepReduce wrapper, and over LGC's frames (which LGC exchanges itself): each payload
our encoders write is mutated (bit flips, random bytes, header fields, truncation,
extension, splices from other payloads) and, for framed payloads, resealed with a fresh
CRC half of the time so the parsing behind the checksum is reached. A decode must
return a tensor of the receiver's shape or raise FrameError: any other exception, or an
input that takes over a second of CPU time, is a finding.

    python fuzz/py_fuzz.py --seconds 600          # the long campaign (all configs)
    python fuzz/py_fuzz.py --seconds 2 --max-configs 5
"""
import argparse
import sys
import time
import zlib

import numpy as np

from deepreduce import FrameError
from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.wrappers import deepreduce_from_params

SLOW_SECONDS = 1.0


def configs():
    """Every compressor, plain and under each wrapper mode with a spread of codecs."""
    wrapped = [("index", "bloom", "raw", "conflict_sets"), ("index", "bloom", "raw", "p0"),
               ("both", "bloom", "polyfit", "random"), ("both", "ef", "qsgd", "leftmost"),
               ("both", "rle", "dexp", "leftmost"), ("value", "raw", "deflate", "leftmost"),
               ("both", "huffman", "fp16", "leftmost"), ("both", "rice", "bf16", "leftmost"),
               ("both", "varint", "raw", "leftmost"), ("index", "bloom", "raw", "naive"),
               ("both", "skcompress", "polyfit_cpu", "leftmost"), ("both", "skcompress", "skcompress", "leftmost")]
    for name in sorted(PAIRINGS):
        yield natural_params(name)
        if name != "powersgd":
            for mode, index, value, policy in wrapped:
                yield {**natural_params(name), "deepreduce": mode, "index": index, "value": value,
                       "policy": policy, "min_numel": 0}


def label(params):
    extra = "" if "deepreduce" not in params else \
        f"/{params['deepreduce']}:{params['index']}+{params['value']}:{params['policy']}"
    return params["compressor"] + extra


class Mutator:
    """Byte-level mutations; a framed payload may be resealed (CRC recomputed)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, payload, others):
        data = bytearray(np.asarray(payload).view(np.uint8).reshape(-1).tobytes())
        for _ in range(int(self.rng.integers(1, 4))):
            data = self._one(data, others)
        out = np.frombuffer(bytes(data), dtype=np.uint8)
        return out if np.asarray(payload).dtype == np.uint8 else self._as(out, np.asarray(payload).dtype)

    def _as(self, data, dtype):
        usable = data.size - data.size % np.dtype(dtype).itemsize
        return data[:usable].view(dtype).copy()

    def _one(self, data, others):
        rng, n = self.rng, len(data)
        kind = int(rng.integers(7))
        if kind == 0 and n:  # flip a bit
            data[int(rng.integers(n))] ^= 1 << int(rng.integers(8))
        elif kind == 1 and n:  # a random byte, often in the header
            data[int(rng.integers(min(n, 64) if rng.random() < 0.6 else n))] = int(rng.integers(256))
        elif kind == 2 and n >= 4:  # a header field set to an edge value
            pos = int(rng.integers(min(n, 48) - 3))
            value = int(rng.choice([0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, n, n * 8]))
            data[pos:pos + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
        elif kind == 3 and n:  # truncate
            del data[int(rng.integers(n)):]
        elif kind == 4:  # extend
            data += bytes(rng.integers(256, size=int(rng.integers(1, 64)), dtype=np.uint8))
        elif kind == 5 and others:  # splice from another payload
            other = others[int(rng.integers(len(others)))]
            cut = int(rng.integers(len(other) + 1))
            data = data[:int(rng.integers(n + 1))] + bytearray(other[cut:])
        if n >= 8 and data[:4] == b"DRF1" and rng.random() < 0.5:  # reseal
            data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
        return data


def fuzz_config(params, seconds, seed, report):
    """Mutated payloads of one compressor configuration through its decompress."""
    compressor = deepreduce_from_params(params).compressor
    rng = np.random.default_rng(seed)
    seeds = []
    for n in (0, 1, 300, 3000, 64):
        x = rng.laplace(size=n).astype(np.float32)
        if n == 64:
            x[5] = np.nan  # compressors send the non-finite marker
        tensors, ctx = compressor.compress(x, f"w{n}")  # a name per size: state is kept per name
        if len(tensors) == 1:  # powersgd's payload list is empty: nothing travels
            seeds.append((tensors[0], (ctx, n)))

    def decode(mutated, expected):
        ctx, n = expected
        out = compressor.decompress([mutated], ctx)
        if np.asarray(out).size != n:
            raise AssertionError(f"decoded {np.asarray(out).size} values for a tensor of {n}")
    return fuzz_loop(label(params), seeds, decode, seconds, seed, report)


def fuzz_lgc_frames(seconds, seed, report):
    """LGC's own frames (it runs its own collectives, so they never reach a decompress):
    every frame type, opened as the receiving stage opens it."""
    from deepreduce.codecs import index_codec
    from deepreduce.compressors import _lgc_frames as lgc
    rng = np.random.default_rng(seed)
    seeds = []
    for name in ("ef", "rice", "varint"):
        codec = lgc.FrameCodec(index_codec(name))
        for numel, count in ((1, 1), (300, 30), (3000, 300)):
            indices = np.sort(rng.choice(numel, count, replace=False)).astype(np.uint32)
            values = rng.laplace(size=count).astype(np.float32)
            one = np.ones(1, np.float32)
            order = rng.permutation(count).astype(np.uint32)  # the leaders' frames carry their value order
            frames = {lgc.SET: codec.build(lgc.SET, numel, indices),
                      lgc.VALUES: codec.build(lgc.VALUES, numel, values=values),
                      lgc.PS_LEAD: codec.build(lgc.PS_LEAD, numel, indices, order, latent=values[:8], scale=one),
                      lgc.RAR_LEAD: codec.build(lgc.RAR_LEAD, numel, indices, order, scale=one),
                      lgc.INNOVATION: codec.build(lgc.INNOVATION, count, np.arange(count, dtype=np.uint32),
                                                  values=values, gain=one)}
            seeds += [(frame, (codec, kind, count if kind == lgc.INNOVATION else numel))
                      for kind, frame in frames.items()]
            seeds.append((lgc.FrameCodec.nonfinite(numel), (codec, lgc.SET, numel)))

    def decode(mutated, expected):
        codec, kind, numel = expected
        codec.open(mutated, kind, numel, "LGC frame")
    return fuzz_loop("lgc frames", seeds, decode, seconds, seed, report)


def fuzz_loop(name, seeds, decode, seconds, seed, report):
    """Mutate the seed payloads round-robin for ``seconds`` and decode each with
    ``decode(mutated, expected)``: a FrameError is a clean refusal, anything else, or
    over SLOW_SECONDS of CPU, a finding. Returns (runs, findings, slowest CPU seconds)."""
    others = [np.asarray(payload).view(np.uint8).reshape(-1).tobytes() for payload, _ in seeds]
    mutate = Mutator(seed)
    runs = findings = 0
    slowest = 0.0
    end = time.perf_counter() + seconds
    while seeds and time.perf_counter() < end:
        payload, expected = seeds[runs % len(seeds)]
        mutated = mutate(payload, others)
        start = time.process_time()  # CPU time: a stall of a loaded machine is not a slow decode
        try:
            decode(mutated, expected)
        except FrameError:
            pass
        except Exception as exc:  # a finding: anything but a clean refusal
            findings += 1
            report(f"{name}: {type(exc).__name__}: {exc} (input {mutated.tobytes().hex()[:120]}...)")
        took = time.process_time() - start
        slowest = max(slowest, took)
        if took > SLOW_SECONDS:
            findings += 1
            report(f"{name}: an input took {took:.2f} s of CPU")
        runs += 1
    return runs, findings, slowest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="total fuzzing time, split over the configs")
    parser.add_argument("--max-configs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    chosen = list(configs())[:args.max_configs]
    share = args.seconds / (len(chosen) + 1)
    total_runs = total_findings = 0
    worst, worst_label = 0.0, ""
    report = lambda line: print("FINDING", line, flush=True)  # noqa: E731
    jobs = [(label(params), lambda i, params=params: fuzz_config(params, share, args.seed + i, report))
            for params in chosen]
    jobs.append(("lgc frames", lambda i: fuzz_lgc_frames(share, args.seed + i, report)))
    for i, (name, job) in enumerate(jobs):
        runs, findings, slowest = job(i)
        total_runs += runs
        total_findings += findings
        if slowest > worst:
            worst, worst_label = slowest, name
    print(f"py_fuzz: {len(chosen)} configurations and LGC's frames, {total_runs} mutated payloads, "
          f"{total_findings} findings, slowest decode {worst * 1e3:.1f} ms of CPU ({worst_label})")
    return 1 if total_findings else 0


if __name__ == "__main__":
    sys.exit(main())
