/* Internal: the AVX-512 variants of inceptionn's three sweeps (count, fill, decode), 16
 * elements per step, each the scalar code's arithmetic lane by lane. Each does a prefix
 * of whole steps; the scalar code continues from the cursors they leave. */
#ifndef DR_INCEPTIONN_SIMD_H
#define DR_INCEPTIONN_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* Adds the tag counts of a prefix of x to count[4]; stops before a group holding Inf or
 * NaN. Returns the prefix length. */
size_t dr_inceptionn_count_avx512(const float *x, size_t n, double inv8, double inv16,
                                  size_t *count);
/* Writes the tags (whole bytes, 4 per step) and section entries of a prefix of x, with
 * cursor[0..3) the entries written so far to sections 1..3 (which hold exactly the
 * entries x's tags call for). Returns the prefix length. */
size_t dr_inceptionn_fill_avx512(const float *x, size_t n, double inv8, double inv16,
                                 uint8_t *tags, uint8_t *p8, uint8_t *p16, uint8_t *p32,
                                 size_t *cursor);
/* Decodes a prefix of out from the tags and sections (checked to hold exactly the entries
 * the tags call for), cursors as above. */
size_t dr_inceptionn_values_avx512(const uint8_t *tags, size_t n, const uint8_t *p8,
                                   const uint8_t *p16, const uint8_t *p32, float step8,
                                   float step16, size_t *cursor, float *out);
#endif

#endif
