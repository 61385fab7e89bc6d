"""Write the seed corpora of the libFuzzer targets from our own encoders: every framed
compressor payload, every DeepReduce wrapper frame and SparDL's block messages
(fuzz_frame), and every index and
value section and a permutation section with the 20-byte header fuzz_sections reads
(fuzz_sections).

    python fuzz/make_corpus.py OUT_DIR    # writes OUT_DIR/fuzz_frame/, OUT_DIR/fuzz_sections/
"""
import hashlib
import pathlib
import struct
import sys

import numpy as np

from deepreduce import grace_from_params
from deepreduce._native import check, f32, ffi, lib, u8
from deepreduce.codecs import Workspace, index_codec, permutation, value_codec
from deepreduce.codecs.index import NAMES as INDEX_NAMES, POLICIES, encode_section
from deepreduce.codecs.value import NAMES as VALUE_NAMES
from deepreduce.pairings import PAIRINGS, natural_params
from deepreduce.wrappers import deepreduce_from_params


def tensors():
    rng = np.random.default_rng(0)
    for n in (1, 7, 300, 3000):
        yield rng.laplace(size=n).astype(np.float32)
    yield np.zeros(64, dtype=np.float32)
    yield np.where(np.arange(64) == 5, np.nan, 1.0).astype(np.float32)  # the non-finite marker


def framed(payload):
    array = np.asarray(payload)
    return array.dtype == np.uint8 and array.size >= lib.DR_FRAME_FIXED_HEADER


def frames():
    for name in sorted(PAIRINGS):
        configs = [natural_params(name)]
        if name in ("adaq", "topk"):  # GRACE's default ratio sends a map; a small one, the lists
            configs.append(natural_params(name, compress_ratio=0.01))
        if name != "powersgd":
            configs += [{**natural_params(name), "deepreduce": "both", "index": index, "value": value,
                         "policy": policy, "min_numel": 0}
                        for index in INDEX_NAMES for value in VALUE_NAMES
                        for policy in (POLICIES if index == "bloom" else ["leftmost"])
                        if name in ("topk", "dgc") or (index, value) in (("ef", "qsgd"), ("bloom", "polyfit"))]
        for params in configs:
            compressor = deepreduce_from_params(params).compressor
            for x in tensors():
                payloads, _ = compressor.compress(x, f"w{x.size}")  # a name per size: state is kept per name
                yield from (np.asarray(p).tobytes() for p in payloads if framed(p))


def spardl_messages():
    """SparDL block frames (every index codec SparDL takes), alone and two back to back."""
    rng = np.random.default_rng(2)
    for block in (1, 100, 3000):
        for k in sorted({1, 10, max(1, block // 10)}):
            for codec in (lib.DR_INDEX_RAW, lib.DR_INDEX_EF, lib.DR_INDEX_RICE, lib.DR_INDEX_VARINT):
                values = rng.laplace(size=block).astype(np.float32)
                frame = np.empty(lib.dr_spardl_frame_bound(block, min(k, block), codec), dtype=np.uint8)
                work = np.empty(lib.dr_spardl_workspace_size(block, min(k, block)) + 1, dtype=np.uint8)
                written = ffi.new("size_t *")
                check(lib.dr_spardl_select_encode(f32(values), block, min(k, block), codec, 7, u8(frame),
                                                  frame.nbytes, written, ffi.from_buffer(work)), "spardl seed")
                one = frame[:written[0]].tobytes()
                yield one
                yield one + one


PERMUTATION = lib.DR_INDEX_COUNT_ + lib.DR_VALUE_COUNT_  # fuzz_sections' permutation selector


def sections():
    work = Workspace()
    rng = np.random.default_rng(1)
    for d, r in ((1, 1), (100, 3), (3000, 30), (3000, 300), (20000, 200)):
        support = np.sort(rng.choice(d, r, replace=False)).astype(np.uint32)
        for selector, name in enumerate(INDEX_NAMES[:-1]):  # raw has no C decoder
            for policy in (POLICIES if name == "bloom" else ["leftmost"]):
                codec = index_codec(name, policy=policy)
                section, rebuilt = encode_section(codec, support, d, work)
                params = (0, 0)
                if name == "bloom":
                    k_hash, m_bits = codec.sizing(d, r)
                    params = (m_bits, k_hash | codec.policy << 8)
                codec_id = codec.codec_id
                yield struct.pack("<B3xIIII", codec_id, d, rebuilt.size, *params) + section.tobytes()
        values = rng.laplace(size=r).astype(np.float32)
        for name in VALUE_NAMES[:-1]:
            codec = value_codec(name)
            buf = np.empty(codec.bound(r) + 16, dtype=np.uint8)
            written, _ = codec.encode(values, u8(buf), buf.nbytes, "w", work)
            p2, p3 = codec.params
            selector = lib.DR_INDEX_COUNT_ + codec.codec_id
            yield struct.pack("<B3xIIII", selector, r, r, p2, p3) + buf[:written].tobytes()
        order = permutation.packed(rng.permutation(r).astype(np.uint32), "seed")
        yield struct.pack("<B3xIIII", PERMUTATION, r, r, 0, 0) + order.tobytes()


def write(directory, blobs):
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for blob in blobs:
        (directory / hashlib.sha1(blob).hexdigest()).write_bytes(blob)
        count += 1
    return count


def main(out):
    out = pathlib.Path(out)
    print(f"fuzz_frame: {write(out / 'fuzz_frame', frames()) + write(out / 'fuzz_frame', spardl_messages())} seeds")
    print(f"fuzz_sections: {write(out / 'fuzz_sections', sections())} seeds")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus")
