/* Internal: the AVX2 and AVX-512 variants of terngrad's codes (its decoder's lookup is
 * lookup_simd.h's, shared with adaq's sign map). Each does a
 * prefix of whole groups of 8 (AVX2) or 16 (AVX-512) elements and returns its length. */
#ifndef DR_TERNGRAD_SIMD_H
#define DR_TERNGRAD_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* codes[0..n/4) as dr_terngrad_encode computes them for clip bound c and scale s > 0. */
size_t dr_terngrad_codes_avx2(const float *x, size_t n, float c, float s, uint64_t key,
                              uint8_t *codes);
size_t dr_terngrad_codes_avx512(const float *x, size_t n, float c, float s, uint64_t key,
                                uint8_t *codes);
#endif

#endif
