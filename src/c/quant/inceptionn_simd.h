/* Internal: the vector variants of inceptionn's sweeps: the count of dr_inceptionn_size,
 * and one frame block's encode and decode (AVX-512, 16 elements per step; AVX2, 8), each
 * the scalar code's arithmetic lane by lane. */
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
/* Writes the frame block of x[0..DR_INCEPTIONN_BLOCK) at dst (tags, float32s, uint16s,
 * bytes: quant.h) and returns its length, or returns 0 when x holds Inf or NaN. Its
 * whole-vector stores may write up to 64 bytes past the block's end (the next block
 * overwrites them): the caller leaves room for that. */
size_t dr_inceptionn_block_avx512(const float *x, const dr_inceptionn_bands *s, uint8_t *dst);
/* Adds the counts of tags 1..3 among a whole block's tags (DR_INCEPTIONN_BLOCK / 4 bytes)
 * to count[1..3]. */
void dr_inceptionn_count_block_avx512(const uint8_t *tags, size_t *count);
/* Decodes the frame block at src into out[0..DR_INCEPTIONN_BLOCK), its tags holding
 * count[1..3] entries of tags 1..3 (the caller counted them); returns nonzero if the
 * block holds an entry the encoder cannot write. Its whole-vector loads may read up to
 * 64 bytes past the block's end: the caller checks that they stay inside the frame.
 * With `stream` set, the lines of out that the block fills are written by non-temporal
 * stores (out may start anywhere): the caller calls dr_stream_fence after the last
 * block. */
unsigned dr_inceptionn_block_decode_avx512(const uint8_t *src, const size_t *count, float step8,
                                           float step16, float *out, int stream);
/* The same two for AVX2 CPUs (the same contracts, eight lanes per step; streamed, out
 * must be 16-byte aligned). */
size_t dr_inceptionn_block_avx2(const float *x, const dr_inceptionn_bands *s, uint8_t *dst);
unsigned dr_inceptionn_block_decode_avx2(const uint8_t *src, const size_t *count, float step8,
                                         float step16, float *out, int stream);
#endif

#endif
