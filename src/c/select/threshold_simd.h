/* Internal: AVX2 variants of the threshold kernels. Each handles a prefix of whole
 * vectors, returns its length, and adds what it found to *count. */
#ifndef DR_THRESHOLD_SIMD_H
#define DR_THRESHOLD_SIMD_H

#include "simd_config.h"

#if DR_HAVE_X86_SIMD
size_t dr_threshold_count_avx2(const float *x, size_t n, uint32_t tkey, size_t *count);
size_t dr_threshold_select_avx2(const float *x, size_t n, uint32_t tkey, uint32_t *idx_out,
                                size_t *count);
#endif

#endif
