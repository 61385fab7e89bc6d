/* Internal: the AVX-512 and AVX2 variants of the 8-bit encoder's codes, and the AVX2
 * decoder's streamed values. */
#ifndef DR_EIGHTBIT_SIMD_H
#define DR_EIGHTBIT_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* The AVX-512 encoder's code for a magnitude bit pattern m (built and checked by
 * eightbit.c, build_guess): an estimate from a linear formula per decade, one step low at
 * most, settled by one compare with where the next code begins:
 *     e    = (m >> 23) - binade0, clamped at 0      (the binade)
 *     z    = (split[e] - (m & 0x7fffff)) >> 24       (the decade: 6 from the binade's top,
 *                                                    one more below a power of ten in it)
 *     est  = trunc(fma(float m, slope[z], offset[z]))
 *     code = est + (m >= next[est]). */
typedef struct {
    uint32_t binade0;
    uint32_t split[32];
    float slope[16], offset[16];
    uint32_t next[128];
} dr_eightbit_guess;

#if DR_HAVE_X86_SIMD
/* codes of x[0..n) (every |x| at most the scale the guess was built for) by the guess, for
 * a prefix of whole groups of 16; returns its length. Needs AVX-512 VBMI: where
 * dr_cpu_has_vbmi() is 0, the AVX-512 level takes the AVX2 buckets. */
size_t dr_eightbit_guess_avx512(const float *x, size_t n, const dr_eightbit_guess *g, uint8_t *codes);
/* codes of x[0..n) from the encoder's bucket entries (eightbit.c, code_buckets: bucket b
 * for the magnitude bit patterns (base + b) << 16 onwards, every finite |x| <= the scale
 * within the table, those below base << 16 clamped to bucket 0), for a prefix of whole
 * groups of 8; returns its length. */
size_t dr_eightbit_codes_avx2(const float *x, size_t n, const uint32_t *entry, uint32_t base,
                              uint8_t *codes);
#endif

#endif
