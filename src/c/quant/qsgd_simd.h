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
/* The norms and levels of `count` whole buckets of bucket_size elements at x, element
 * `first` of the tensor onwards, as bucket_norm and bucket_levels in qsgd.c compute
 * them: norm j to norms[4j..), the levels to levels (width 1 or 2 bytes each). Returns
 * how many buckets it did; it stops before a group of buckets with a sum of squares
 * past DBL_MAX, a ratio beyond float or a counter at a multiple of 2^32, which the
 * caller's code does (and reports) bucket by bucket. bucket_size is a multiple of 16
 * (AVX-512) or of 32 (AVX2). */
size_t dr_qsgd_buckets_avx512(const float *x, size_t count, size_t bucket_size, uint32_t s,
                              uint64_t key, size_t first, uint8_t *norms, uint8_t *levels,
                              size_t width);
size_t dr_qsgd_buckets_avx2(const float *x, size_t count, size_t bucket_size, uint32_t s,
                            uint64_t key, size_t first, uint8_t *norms, uint8_t *levels,
                            size_t width);
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
/* dr_qsgd_scale_avx512 for `count` whole buckets of bucket_size elements (a multiple of
 * 16), each with step = norm / s from norms[4j..): returns count. */
size_t dr_qsgd_scale_buckets_avx512(const uint8_t *levels, size_t count, size_t bucket_size,
                                    size_t width, const uint8_t *norms, uint32_t s, float *out,
                                    int stream);
/* Whether levels[0..n) all lie in [-s, s]: 1 or 0 for the prefix it returns in *done. */
int dr_qsgd_levels_in_range_avx2(const uint8_t *levels, size_t n, size_t width, uint32_t s,
                                 size_t *done);
#endif

#endif
