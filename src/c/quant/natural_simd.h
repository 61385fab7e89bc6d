/* Internal: the AVX2 and AVX-512 variants of natural compression's encoder. Each codes a
 * prefix of whole groups of 16 elements and returns its length; it stops before the
 * first group holding an Inf or NaN, which the scalar code then refuses, and before
 * element 2^32 (where the generator's high word changes), past which the scalar code
 * goes on. */
#ifndef DR_NATURAL_SIMD_H
#define DR_NATURAL_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* Float exponent field of code 1, i.e. of 2^(1 - DR_NATURAL_CODE_OFFSET). */
#define NAT_EXP_MIN (127 + 1 - DR_NATURAL_CODE_OFFSET)

#if DR_HAVE_X86_SIMD
size_t dr_natural_codes_avx2(const float *x, size_t n, uint64_t key, uint8_t *codes);
size_t dr_natural_codes_avx512(const float *x, size_t n, uint64_t key, uint8_t *codes);
/* out[i] = the value of code i (codes already checked). */
size_t dr_natural_values_avx2(const uint8_t *codes, size_t n, float *out);
#endif

#endif
