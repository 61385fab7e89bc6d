/* Internal: the SIMD variants of qstats.c. Each accumulates the first whole multiple of
 * 32 elements into the lanes given (lane i % 32 for element i, as the scalar code does)
 * and returns how many elements it did; the caller finishes the tail. */
#ifndef DR_QSTATS_SIMD_H
#define DR_QSTATS_SIMD_H

#include "qstats.h"
#include "simd_config.h"

#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* what: 0 sum of squares, 1 sum (and max |x| into *max_abs), 2 squared deviations
 * from `mean`, 3 sum of |x|. */
size_t dr_qs_lanes_avx2(int what, const float *x, size_t n, double mean, dr_lanes *acc,
                        float *max_abs);
size_t dr_qs_lanes_avx512(int what, const float *x, size_t n, double mean, dr_lanes *acc,
                          float *max_abs);
/* The two sums of dr_qs_shifted_sums (dev, sq) and the max |x| (into *max_abs). */
size_t dr_qs_shifted_avx2(const float *x, size_t n, double shift, dr_lanes *dev, dr_lanes *sq,
                          float *max_abs);
size_t dr_qs_shifted_avx512(const float *x, size_t n, double shift, dr_lanes *dev,
                            dr_lanes *sq, float *max_abs);
/* dr_qs_max_abs_bits over a prefix of whole groups of 16 (AVX2) or 32 (AVX-512)
 * elements, folded into *top. */
size_t dr_qs_max_bits_avx2(const float *x, size_t n, uint32_t *top);
size_t dr_qs_max_bits_avx512(const float *x, size_t n, uint32_t *top);
size_t dr_qs_split_avx2(const float *x, size_t n, dr_lanes *neg, dr_lanes *nonneg,
                        size_t *count_neg);
size_t dr_qs_split_avx512(const float *x, size_t n, dr_lanes *neg, dr_lanes *nonneg,
                          size_t *count_neg);
#endif

enum { DR_QS_SQUARES = 0, DR_QS_SUM = 1, DR_QS_SQ_DEV = 2, DR_QS_ABS = 3 };

#endif
