/* Internal: the AVX-512 and AVX2 variants of the sketch's bin search, AVX2's of its tally,
 * and the AVX-512 variant of its decoder's values.
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

/* The prefix table of the edges[0..last) (last < 256; the portable search's and AVX2's,
 * from 64Ki elements): one uint32 entry per top half P of a key (65536), in one of two
 * forms. In both, t is the number of those edges whose top 16 bits are below P, and h
 * the low 16 bits of the edges whose top 16 bits are P, if any: they are all <= a key k
 * with top half P or all > it, as h is <= low16(k) or not; edges with a smaller top half
 * are below k, those with a larger one above it. So find_bin's bin (at most last, so no
 * cap) is one load away:
 * - DR_PREFIX_SINGLE, where each top half belongs to one edge at most: entry
 *   (t << 16) + 0x10000 - h (h = 0x10000 where none), and the bin (entry + low16(k)) >> 16;
 * - DR_PREFIX_RUNS, where equal edges share one (a value repeated in the sample, as exact
 *   zeros are): entry t | a << 8 | h << 16 with a = t + their number (a = t, h = 0 where
 *   none), and the bin low16(k) >= h ? a : t. Twice the instructions of the first form.
 * dr_sketch_prefix_table returns the form it wrote, or DR_PREFIX_NONE (table unspecified)
 * when two different edges share their top 16 bits. */
enum { DR_PREFIX_NONE = 0, DR_PREFIX_SINGLE = 1, DR_PREFIX_RUNS = 2 };
int dr_sketch_prefix_table(const uint32_t *edges, uint32_t last, uint32_t *table);

/* The form dr_sketch_prefix_table would write for these edges, without writing it. */
int dr_sketch_prefix_form(const uint32_t *edges, uint32_t last);

/* The bins of x[0..n) from a prefix table of that form, one byte each; returns n. */
size_t dr_sketch_bins_table(const float *x, size_t n, const uint32_t *table, int form, uint8_t *index);

#if DR_HAVE_X86_SIMD
size_t dr_sketch_bins_avx512(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                             uint32_t last, uint8_t *index, size_t width);

/* The same bins from AVX2 register tables, for p <= 256 (so one byte each); 0 (nothing
 * done) for larger p. Handles whole 16-element blocks. */
size_t dr_sketch_bins_avx2(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                           uint32_t last, uint8_t *index);

/* dr_sketch_bins_table with AVX2, 16 elements at a time (whole blocks only). */
size_t dr_sketch_bins_table_avx2(const float *x, size_t n, const uint32_t *table, int form,
                                 uint8_t *index);

/* The sums and counts of the sketch's tally (sketch.c: tally_add of x[i] to bin index[i]
 * in partial i % 4, one byte per bin index) for whole groups of 4 elements of x[0..n);
 * returns their length. The same additions in the same order as the portable loop, so
 * the same bits: four elements' (value, 1.0) pairs come from one conversion, where the
 * portable loop's SSE2 built each by three instructions (28-30% fewer nanoseconds per
 * element in L1 on the Zen 4 host). */
size_t dr_sketch_tally_avx2(double *tally, uint32_t bins, const float *x, const uint8_t *index, size_t n);

/* table[index[i]] to out[i] (one byte each), table 256 floats: the decoder's AVX-512
 * path where the CPU lacks VBMI (with it, dr_lookup_planes_avx512). */
size_t dr_sketch_read_avx512(const uint8_t *index, size_t n, const float *table, float *out);
#endif

#endif
