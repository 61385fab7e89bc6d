/* Internal: the AVX-512 decoder of a unary vector's ones, shared by Elias-Fano (its
 * upper vector) and Rice (its quotients), and the running sum Rice's lows need.
 *
 * In both codecs the t-th one (t = 0, 1, ...) of the vector sits at bit p_t = h_t + t,
 * with h_t the index's high part (Elias-Fano) or the quotients' running sum (Rice), and
 * the decoders add h_t << shift to what the lows left in out[t]. */
#ifndef DR_UNARY_SIMD_H
#define DR_UNARY_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* For the t-th one of v[0..len) at bit p_t, t < r: out[t] += (uint32_t)((p_t - t) << shift)
 * (shift <= 32; 32 adds nothing, as the scalar decoders' 64-bit shift truncated to 32
 * bits). Words of 64 bits, a vector compress of the bit numbers per 16 bits. Returns the
 * number of ones, or SIZE_MAX where a word takes the count past r (out[0..r) then holds
 * partial sums: the caller refuses the input). *last_one is set to the highest one's bit
 * number when there is a one, and left alone otherwise. */
size_t dr_unary_add_highs_avx512(const uint8_t *v, size_t len, size_t r, unsigned shift, uint32_t *out,
                                 uint64_t *last_one);

/* out[t] = (out[0] + 1) + ... + (out[t] + 1) - 1 for t < n, modulo 2^32; returns the
 * sum of the n values out[t] + 1 in 64 bits (exact for any n that fits in memory). */
uint64_t dr_rice_running_sum_avx512(uint32_t *out, size_t n);
#endif

#endif
