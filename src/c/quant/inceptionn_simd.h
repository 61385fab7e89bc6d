/* Internal: the AVX-512 variants of inceptionn's three sweeps (count, fill, decode), 16
 * elements per step, each the scalar code's arithmetic lane by lane. Each does a prefix
 * of whole steps; the scalar code continues from the cursors they leave. */
#ifndef DR_INCEPTIONN_SIMD_H
#define DR_INCEPTIONN_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* An error bound's fixed-point steps 2^-k8 and 2^-k16 (quant.h), twice their inverses
 * (2^(k+1) <= 2^24, exact) for the encoder, and the magnitudes where the tags change, as
 * |x|'s bit patterns (which order like |x|): an element's tag is how many of t0 <= t8 <=
 * t16 its magnitude reaches (t16 <= 1 also tags |x| >= 1 as float32). */
typedef struct {
    int k8, k16;
    float twice8, twice16;
    uint32_t t0, t8, t16;
} dr_inceptionn_bands;

#if DR_HAVE_X86_SIMD
/* Adds the tag counts of x to count[4] and returns n, or returns 0 (nothing counted) when
 * x holds Inf or NaN, for the scalar code to find. */
size_t dr_inceptionn_count_avx512(const float *x, size_t n, const dr_inceptionn_bands *s,
                                  size_t *count);
/* Writes the tags (whole bytes, 4 per step) and section entries of a prefix of x, with
 * cursor[0..3) the entries written so far to sections 1..3, which hold total[0..3)
 * entries (exactly those x's tags call for). Returns the prefix length. */
size_t dr_inceptionn_fill_avx512(const float *x, size_t n, const dr_inceptionn_bands *s,
                                 uint8_t *tags, uint8_t *p8, uint8_t *p16, uint8_t *p32,
                                 const size_t *total, size_t *cursor);
/* Decodes a prefix of out from the tags and sections (checked to hold exactly the entries
 * the tags call for), cursors as above. */
size_t dr_inceptionn_values_avx512(const uint8_t *tags, size_t n, const uint8_t *p8,
                                   const uint8_t *p16, const uint8_t *p32, float step8,
                                   float step16, const size_t *total, size_t *cursor, float *out);
#endif

#endif
