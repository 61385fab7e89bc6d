/* Internal: the AVX2 variant of one Bloom filtering pass. It handles a prefix of whole
 * 8-lane groups of cand[0..n), appends to dst (from dst[*kept]) the candidates whose
 * hash `seed` hits a set filter bit, in order, and returns how many inputs it consumed;
 * the caller finishes the tail with the scalar code. dst holds n entries and does not
 * overlap cand. */
#ifndef DR_BLOOM_SIMD_H
#define DR_BLOOM_SIMD_H

#include "simd_config.h"

#if DR_HAVE_X86_SIMD
uint32_t dr_bloom_pass_avx2(const uint32_t *cand, uint32_t *dst, uint32_t n, uint32_t seed,
                            const uint8_t *filter, uint64_t recip, uint32_t m, uint32_t *kept);
#endif

#endif
