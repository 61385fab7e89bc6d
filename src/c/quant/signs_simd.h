/* Internal: AVX2 variants of the sign-bit kernels. Each handles a prefix of whole
 * 8-element groups (one output byte each) and returns how many elements it did. */
#ifndef DR_SIGNS_SIMD_H
#define DR_SIGNS_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_pack_signs_avx2(const float *x, size_t n, uint8_t *out);
/* As dr_pack_signs_avx2; sets *nonfinite nonzero if the prefix holds an Inf or a NaN. */
size_t dr_pack_signs_finite_avx2(const float *x, size_t n, uint8_t *out, uint32_t *nonfinite);
size_t dr_unpack_signs_avx2(const uint8_t *bits, size_t n, float if_clear, float if_set,
                            float *out);
#endif

#endif
