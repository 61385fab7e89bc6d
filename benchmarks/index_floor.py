"""Index codecs against the floor: bits per index on uniform random r-subsets of
d = 1,000,000 at densities 0.001, 0.01, 0.1, beside log2 C(d, r) / r (and H(p)/p, the
floor SPEC §10 quotes: 11.41 / 8.08 / 4.69). Bloom is lossy: it is sized at the default
fpr 0.1 r/d, and its false positives are listed.

    python benchmarks/index_floor.py
"""
import argparse
import math

import numpy as np

from deepreduce.codecs import index_codec
from deepreduce.codecs.index import encode_section, floor_bits

D = 1_000_000
CODECS = ["ef", "rice", "varint", "rle", "huffman", "bloom", "raw"]


def entropy_floor(p):
    return -(p * math.log2(p) + (1 - p) * math.log2(1 - p)) / p


def main():
    rng = np.random.default_rng(0)
    print(f"bits per index, d={D}, uniform random sets (x = times the floor log2 C(d,r)/r)")
    print(f"{'density':>8} {'r':>7} {'floor':>6} {'H(p)/p':>6} | " + " | ".join(f"{c:>13}" for c in CODECS))
    for density in (0.001, 0.01, 0.1):
        r = int(D * density)
        idx = np.sort(rng.choice(D, r, replace=False)).astype(np.uint32)
        floor = floor_bits(D, r)
        cells = []
        for name in CODECS:
            section, rebuilt = encode_section(index_codec(name), idx, D)
            bits = 8 * section.nbytes / r
            cells.append(f"{bits:6.2f} {bits / floor:5.3f}x")
            if name == "bloom":
                bloom_fp = rebuilt.size - np.count_nonzero(np.isin(rebuilt, idx))
        print(f"{density:8.3f} {r:7d} {floor:6.2f} {entropy_floor(density):6.2f} | " + " | ".join(cells)
              + f"   (bloom: {bloom_fp} of {r} rebuilt are false positives)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
