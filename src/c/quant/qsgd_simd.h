/* Internal: the AVX2 and AVX-512 variants of qsgd's per-element work. Each does a prefix
 * of whole groups of 8 (AVX2) or 16 (AVX-512) elements and returns its length; the caller does the tail. */
#ifndef DR_QSGD_SIMD_H
#define DR_QSGD_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* levels of b[0..m) as bucket_levels in qsgd.c computes them for a finite float ratio:
 * element i draws dr_rng_u32(key, first + i); width 1 writes int8, 2 int16. A bucket
 * whose counters reach a multiple of 2^32 stops before it (the caller does the rest). */
size_t dr_qsgd_levels_avx2(const float *b, size_t m, float ratio, uint32_t s, uint64_t key,
                           size_t first, uint8_t *levels, size_t width);
size_t dr_qsgd_levels_avx512(const float *b, size_t m, float ratio, uint32_t s,
                             uint64_t key, size_t first, uint8_t *levels, size_t width);
/* dr_qs_sum_squares(b[0..m)) with the sum in registers: the same double (AVX2: for m a
 * multiple of 32). */
double dr_qsgd_sum_squares_avx512(const float *b, size_t m);
double dr_qsgd_sum_squares_avx2(const float *b, size_t m);
/* out[i] = step * level i, for i < m; streamed (stream_simd.h) if `stream` is set and
 * out is 16-byte aligned, without the fence, which the caller issues after its last. */
size_t dr_qsgd_scale_avx2(const uint8_t *levels, size_t m, size_t width, float step, float *out,
                          int stream);
size_t dr_qsgd_scale_avx512(const uint8_t *levels, size_t m, size_t width, float step,
                            float *out, int stream);
/* Whether levels[0..n) all lie in [-s, s]: 1 or 0 for the prefix it returns in *done. */
int dr_qsgd_levels_in_range_avx2(const uint8_t *levels, size_t n, size_t width, uint32_t s,
                                 size_t *done);
#endif

#endif
