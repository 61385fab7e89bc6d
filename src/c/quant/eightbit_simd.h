/* Internal: the AVX-512 and AVX2 variants of the 8-bit encoder's codes and decoder's
 * values. The encoders code a prefix of whole groups of 16 (8) elements exactly as
 * nearest() in eightbit.c does and return its length. */
#ifndef DR_EIGHTBIT_SIMD_H
#define DR_EIGHTBIT_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* codes of x[0..n) for a scale > 0 whose inverse inv = 1/scale is finite; bound[c]: the
 * bit pattern of the least magnitude coded c or above (bound[0] = 0, rising); up and
 * steps: the per-decade constants nearest() uses (7 each). */
size_t dr_eightbit_codes_avx512(const float *x, size_t n, float inv, const uint32_t *bound,
                                const float *up, const float *steps, uint8_t *codes);
/* codes of x[0..n) for scale > 0 by 8 lanes and gathers, whole groups of 8; table: the
 * 128 magnitudes. */
size_t dr_eightbit_codes_avx2(const float *x, size_t n, float scale, const float *table,
                              const float *up, const float *steps, uint8_t *codes);
/* out[i] = +-scaled[code i & 127] (sign from bit 7) for a prefix of whole groups of 8, by
 * gathers (AVX-512 takes dr_signed_lookup128_avx512, the table in registers). */
size_t dr_eightbit_values_avx2(const uint8_t *codes, size_t n, const float *scaled, float *out);
#endif

#endif
