/* Internal: SIMD variants of the half conversions. Each returns how many leading
 * elements it converted (a multiple of its vector width); the caller finishes the tail
 * with the scalar code. */
#ifndef DR_HALF_SIMD_H
#define DR_HALF_SIMD_H

#include "simd_config.h"

uint16_t dr_half_from_f32_scalar(float value);
float dr_half_to_f32_scalar(uint16_t h);

#if DR_HAVE_X86_SIMD
/* With `stream` set, out (16-byte aligned) is written past the caches (stream_simd.h).
 * The half-to-float conversion also raises *top to the largest of the halves it read
 * with the sign cleared (an Inf or a NaN iff at least 0x7c00). */
size_t dr_f32_to_f16_f16c(const float *x, uint16_t *out, size_t n, int stream);
size_t dr_f16_to_f32_f16c(const uint16_t *x, float *out, size_t n, int stream, uint16_t *top);
#endif

#endif
