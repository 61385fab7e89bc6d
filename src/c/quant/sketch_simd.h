/* Internal: the AVX-512 and AVX2 variants of the sketch's bin search, and the AVX-512
 * variant of its decoder's values.
 * Each handles a prefix of whole vectors (16 elements) and returns its length.
 * dr_sketch_bins_avx512 finds the bins (find_bin of sketch.c on order_key(x[i])), writes
 * them to index (width 1 or 2 bytes each); it keeps the edges in registers and does
 * nothing (returns 0) when p > 256. Up to p = 128, where no two of edges[0..last) share
 * their top 16 bits, it searches on those (32 elements per vector) and handles whole
 * 32-element blocks; otherwise whole 16-element vectors. */
#ifndef DR_SKETCH_SIMD_H
#define DR_SKETCH_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* The prefix table of the edges[0..last) (last < 2^16; the portable search's and AVX2's,
 * from 64Ki elements): entry P (of 65536) is (t << 16) + 0x10000 - h, where t is the
 * number of those edges whose top 16 bits are below P, and h the low 16 bits of edges[t]
 * if its top 16 bits are P, else 0x10000. A key k (order_key) with top half P has bin
 * t + (low16(k) >= h) = (entry + low16(k)) >> 16: the edges with a smaller top half are
 * below k, those with a larger one above it, and the one that shares it, if any, is <= k
 * exactly when its low half is <= k's. That is find_bin's bin (at most last, so no cap)
 * in one load and an add. Returns 1 when built, 0 (table unspecified) when two edges
 * share their top 16 bits. */
int dr_sketch_prefix_table(const uint32_t *edges, uint32_t last, uint32_t *table);

/* The bins of x[0..n) from a prefix table, one byte each (last < 256); returns n. */
size_t dr_sketch_bins_table(const float *x, size_t n, const uint32_t *table, uint8_t *index);

#if DR_HAVE_X86_SIMD
size_t dr_sketch_bins_avx512(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                             uint32_t last, uint8_t *index, size_t width);

/* The same bins from AVX2 register tables, for p <= 256 (so one byte each); 0 (nothing
 * done) for larger p. Handles whole 16-element blocks. */
size_t dr_sketch_bins_avx2(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                           uint32_t last, uint8_t *index);

/* dr_sketch_bins_table by AVX2 gathers, 16 elements at a time (whole blocks only). */
size_t dr_sketch_bins_table_avx2(const float *x, size_t n, const uint32_t *table, uint8_t *index);

/* table[index[i]] to out[i] (one byte each), table 256 floats: the decoder's AVX-512
 * path where the CPU lacks VBMI (with it, dr_lookup_planes_avx512). */
size_t dr_sketch_read_avx512(const uint8_t *index, size_t n, const float *table, float *out);
#endif

#endif
