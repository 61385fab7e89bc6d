/* float32 <-> binary16 / bfloat16, round to nearest even. The scalar code reproduces
 * the F16C instructions bit for bit (NaN payloads included), so the dispatcher may
 * pick either. */
#include "deepreduce.h"
#include "half_simd.h"
#include "simd_config.h"
#include "stream_simd.h"

#include <string.h>

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t dr_half_from_f32_scalar(float value)
{
    uint32_t x = f32_bits(value);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
    if (mag >= 0x47800000u) /* >= 65536 (and infinity): overflow */
        return (uint16_t)(sign | 0x7c00u);
    if (mag < 0x38800000u) {
        /* Below the smallest normal half (2^-14): let the FPU round, by adding a number
         * whose exponent puts the half's subnormal unit in the float's last place. */
        const uint32_t magic = (127u - 14u + 23u - 10u) << 23; /* 0.5 in half-subnormal units */
        float f = bits_f32(mag) + bits_f32(magic);
        return (uint16_t)(sign | (f32_bits(f) - magic));
    }
    /* Normal: rebias the exponent and round the 13 dropped bits to nearest even. A carry
     * out of the mantissa bumps the exponent, up to infinity, as it should. */
    mag += ((uint32_t)(15 - 127) << 23) + 0xfffu + ((mag >> 13) & 1u);
    return (uint16_t)(sign | (mag >> 13));
}

float dr_half_to_f32_scalar(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t man = (uint32_t)h & 0x3ffu;
    if (exp == 0x1fu) /* infinity or NaN (a signalling NaN comes back quiet, as in F16C) */
        return bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0u));
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in float32 */
        float f = (float)man * (1.0f / 16777216.0f);
        return bits_f32(sign | f32_bits(f));
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

#if DR_HAVE_X86_SIMD
/* Whether n halves at out are written streamed: as many bytes as a streamed float output
 * (dr_stream_output), 16-byte aligned. */
static int halves_streamed(const uint16_t *out, size_t n)
{
    return n / 2 >= DR_STREAM_MIN_N && ((uintptr_t)out & 15u) == 0;
}
#endif

int dr_f32_to_f16(const float *x, uint16_t *out, size_t n)
{
    size_t i = 0;
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_f32_to_f16_f16c(x, out, n, halves_streamed(out, n));
#endif
    for (; i < n; i++)
        out[i] = dr_half_from_f32_scalar(x[i]);
    return DR_OK;
}

/* Both half-to-float entry points: out = the floats of x, and the largest of x's
 * halves with the sign cleared (an Inf or a NaN iff at least 0x7c00). */
DR_ALWAYS_INLINE uint16_t halves_to_floats(const uint16_t *x, float *out, size_t n)
{
    uint16_t top = 0;
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_f16_to_f32_f16c(x, out, n, dr_stream_output(out, n), &top);
#endif
    for (; i < n; i++) {
        uint16_t magnitude = (uint16_t)(x[i] & 0x7fffu);
        top = magnitude > top ? magnitude : top;
        out[i] = dr_half_to_f32_scalar(x[i]);
    }
    return top;
}

int dr_f16_to_f32(const uint16_t *x, float *out, size_t n)
{
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
    (void)halves_to_floats(x, out, n);
    return DR_OK;
}

int dr_f16_to_f32_finite(const uint16_t *x, float *out, size_t n)
{
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
    return halves_to_floats(x, out, n) >= 0x7c00u ? 0 : 1;
}

int dr_f32_to_bf16(const float *x, uint16_t *out, size_t n)
{
    size_t i;
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
    for (i = 0; i < n; i++) {
        uint32_t u = f32_bits(x[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            out[i] = (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
        else
            out[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return DR_OK;
}

int dr_bf16_to_f32(const uint16_t *x, float *out, size_t n)
{
    size_t i;
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
    for (i = 0; i < n; i++)
        out[i] = bits_f32((uint32_t)x[i] << 16);
    return DR_OK;
}
