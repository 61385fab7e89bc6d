/* Internal: AVX2 and AVX-512 (and, for the select, NEON) variants of the threshold
 * kernels. Each handles a prefix of whole vectors, returns its length, and adds what it
 * found to *count. The selects write an index only while *count is below cap, and count
 * on past it. */
#ifndef DR_THRESHOLD_SIMD_H
#define DR_THRESHOLD_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_threshold_count_avx2(const float *x, size_t n, uint32_t tkey, size_t *count);
size_t dr_threshold_select_avx2(const float *x, size_t n, uint32_t tkey, uint32_t *idx_out,
                                size_t cap, size_t *count);
/* The bitmap of x[0..m') (m' = m less m % 8, or % 16: the return value) by magnitude key
 * >= tkey, NaN never, into bits[0..m'/8) (entry i at bit i % 8 of byte i / 8), the passing
 * entries' values appended to val at *count (room for a vector past the end), *count
 * advanced, and *top raised to the largest magnitude key swept (NaN's included). */
size_t dr_threshold_bitmap_avx2(const float *x, size_t m, uint32_t tkey, uint8_t *bits, float *val,
                                size_t *count, uint32_t *top);
size_t dr_threshold_bitmap_avx512(const float *x, size_t m, uint32_t tkey, uint8_t *bits, float *val,
                                  size_t *count, uint32_t *top);
#endif

#if DR_HAVE_NEON
size_t dr_threshold_select_neon(const float *x, size_t n, uint32_t tkey, uint32_t *idx_out, size_t cap,
                                size_t *count);
#endif

#endif
