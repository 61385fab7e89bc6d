/* Sign bitmaps: bit i = (x[i] >= 0), LSB first. The rule is a comparison rather than
 * the IEEE sign bit so that -0.0 counts as non-negative and NaN as negative, the same
 * on every path (the AVX2 variant compares too, then movemasks). */
#include "deepreduce.h"
#include "qframe.h"
#include "signs_simd.h"

#include <string.h>

size_t dr_sign_bytes(size_t n)
{
    return n / 8u + (n % 8u != 0);
}

int dr_pack_signs(const float *x, size_t n, uint8_t *out)
{
    size_t i = 0;
    if (n > 0 && (x == NULL || out == NULL))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_pack_signs_avx2(x, n, out);
#endif
    for (; i < n; i += 8) {
        size_t j, end = n - i < 8 ? n - i : 8;
        unsigned byte = 0;
        for (j = 0; j < end; j++)
            byte |= (unsigned)(x[i + j] >= 0.0f) << j;
        out[i / 8] = (uint8_t)byte;
    }
    return DR_OK;
}

int dr_qf_pack_signs_finite(const float *x, size_t n, uint8_t *out)
{
    uint32_t nonfinite = 0;
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_pack_signs_finite_avx2(x, n, out, &nonfinite);
#endif
    for (; i < n; i += 8) {
        size_t j, end = n - i < 8 ? n - i : 8;
        unsigned byte = 0;
        for (j = 0; j < end; j++) {
            uint32_t bits;
            memcpy(&bits, x + i + j, sizeof bits);
            nonfinite |= (uint32_t)((bits & 0x7f800000u) == 0x7f800000u);
            byte |= (unsigned)(x[i + j] >= 0.0f) << j;
        }
        out[i / 8] = (uint8_t)byte;
    }
    return !nonfinite;
}

int dr_unpack_signs(const uint8_t *bits, size_t n, float if_clear, float if_set, float *out)
{
    size_t i = 0;
    float pick[2];
    if (n > 0 && (bits == NULL || out == NULL))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_unpack_signs_avx2(bits, n, if_clear, if_set, out);
#endif
    pick[0] = if_clear;
    pick[1] = if_set;
    for (; i < n; i++)
        out[i] = pick[(bits[i / 8] >> (i % 8)) & 1u];
    return DR_OK;
}
