/* Internal: SIMD variants of the half conversions. Each returns how many leading
 * elements it converted (a multiple of its vector width); the caller finishes the tail
 * with the scalar code. */
#ifndef DR_HALF_SIMD_H
#define DR_HALF_SIMD_H

#include "simd_config.h"

uint16_t dr_half_from_f32_scalar(float value);
float dr_half_to_f32_scalar(uint16_t h);

#if DR_HAVE_X86_SIMD
size_t dr_f32_to_f16_f16c(const float *x, uint16_t *out, size_t n);
size_t dr_f16_to_f32_f16c(const uint16_t *x, float *out, size_t n);
#endif

#endif
