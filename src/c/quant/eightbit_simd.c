/* AVX-512 8-bit codes: nearest() of eightbit.c on 16 lanes, as an estimate from
 * |x| * (1/scale) settled by the magnitudes where each code begins (which eightbit.c
 * derives from nearest() itself), so no division and the same bytes. The 128-entry
 * table of those magnitudes lives in eight registers and is read by permutes. AVX2:
 * nearest()'s own float operations, in its order, with the table read by gathers. */
#include "deepreduce.h"
#include "eightbit_simd.h"
#include "lookup_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* nearest()'s per-decade constants as lane tables of `lanes` entries (8 or 16; entries
 * past the 7 decades zero): the multiplier up, the steps, and the width 2^f. */
static void decade_lanes(const float *up, const float *steps, int lanes, float *up_out,
                         float *steps_out, int32_t *width_out)
{
    int k;
    for (k = 0; k < lanes; k++) {
        up_out[k] = k < 7 ? up[k] : 0.0f;
        steps_out[k] = k < 7 ? steps[k] : 0.0f;
        width_out[k] = k < 7 ? 1 << (6 - k) : 0;
    }
}

DR_TARGET_AVX512 size_t dr_eightbit_codes_avx512(const float *x, size_t n, float inv,
                                                 const uint32_t *bound, const float *up,
                                                 const float *steps, uint8_t *codes)
{
    static const float decade[6] = {1e-1f, 1e-2f, 1e-3f, 1e-4f, 1e-5f, 1e-6f};
    const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512(), abs_bits = _mm512_set1_epi32(0x7fffffff);
    const __m512 vinv = _mm512_set1_ps(inv);
    float up16[16], steps16[16];
    int32_t width16[16];
    __m512 t[8], vup, vsteps;
    __m512i vwidth;
    size_t i = 0;
    int k;
    decade_lanes(up, steps, 16, up16, steps16, width16);
    vup = _mm512_loadu_ps(up16);
    vsteps = _mm512_loadu_ps(steps16);
    vwidth = _mm512_loadu_si512((const void *)width16);
    for (k = 0; k < 8; k++)
        t[k] = _mm512_castsi512_ps(_mm512_loadu_si512((const void *)(bound + 16 * k)));
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512(x + i), mag = _mm512_and_si512(u, abs_bits);
        /* An estimate of the code from |x| * (1/scale), as nearest() estimates it... */
        __m512 a = _mm512_mul_ps(_mm512_castsi512_ps(mag), vinv);
        __m512i z = zero, w, j1, c, here, next, code;
        __m512 tt;
        for (k = 0; k < 6; k++)
            z = _mm512_mask_add_epi32(z, _mm512_cmp_ps_mask(a, _mm512_set1_ps(decade[k]), _CMP_LE_OQ), z, one);
        w = _mm512_permutexvar_epi32(z, vwidth); /* 2^f */
        tt = _mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(a, _mm512_permutexvar_ps(z, vup)), _mm512_set1_ps(0.1f)),
                           _mm512_permutexvar_ps(z, vsteps));
        j1 = _mm512_sub_epi32(_mm512_cvttps_epi32(_mm512_add_ps(_mm512_add_ps(tt, _mm512_set1_ps(0.5f)), _mm512_set1_ps(1.0f))), one);
        j1 = _mm512_min_epi32(_mm512_max_epi32(j1, zero), w);
        c = _mm512_add_epi32(_mm512_sub_epi32(w, one), j1);
        /* ...settled exactly by the magnitudes where the codes c and c + 1 begin. */
        here = _mm512_castps_si512(dr_lookup128_avx512(t, c));
        next = _mm512_castps_si512(dr_lookup128_avx512(t, _mm512_add_epi32(c, one)));
        code = _mm512_mask_sub_epi32(c, _mm512_cmplt_epu32_mask(mag, here), c, one);
        code = _mm512_mask_add_epi32(code, _mm512_cmplt_epi32_mask(c, _mm512_set1_epi32(127)) &
                                               _mm512_cmpge_epu32_mask(mag, next),
                                     code, one);
        /* Sign bit for nonzero codes of negative x. */
        code = _mm512_mask_or_epi32(code, _mm512_cmplt_epi32_mask(u, zero) & _mm512_cmpneq_epi32_mask(mag, zero) &
                                              _mm512_test_epi32_mask(code, code),
                                    code, _mm512_set1_epi32(0x80));
        _mm_storeu_si128((__m128i *)(codes + i), _mm512_cvtepi32_epi8(code));
    }
    return i;
}

/* The same search on 8 lanes: the table read by gathers (indices clamped into it, where
 * the AVX-512 variant wraps them: the lanes that would read outside are masked off by the
 * c > 0 and c < 127 tests either way). */
DR_TARGET_AVX2 size_t dr_eightbit_codes_avx2(const float *x, size_t n, float scale,
                                             const float *table, const float *up,
                                             const float *steps, uint8_t *codes)
{
    static const float decade[6] = {1e-1f, 1e-2f, 1e-3f, 1e-4f, 1e-5f, 1e-6f};
    const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(127);
    const __m256 vscale = _mm256_set1_ps(scale), abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    float up8[8], steps8[8];
    int32_t width8[8];
    __m256 vup, vsteps;
    __m256i vwidth;
    size_t i = 0;
    int k;
    decade_lanes(up, steps, 8, up8, steps8, width8);
    vup = _mm256_loadu_ps(up8);
    vsteps = _mm256_loadu_ps(steps8);
    vwidth = _mm256_loadu_si256((const __m256i *)(const void *)width8);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 a = _mm256_div_ps(_mm256_and_ps(v, abs_mask), vscale);
        __m256i z = zero, w, j1, c, best, take, neg, code;
        __m256 tt, d_best, dm, dp;
        for (k = 0; k < 6; k++) /* a compare is all ones (-1): subtracting it counts */
            z = _mm256_sub_epi32(z, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(decade[k]), _CMP_LE_OQ)));
        w = _mm256_permutevar8x32_epi32(vwidth, z); /* 2^f */
        tt = _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(a, _mm256_permutevar8x32_ps(vup, z)), _mm256_set1_ps(0.1f)),
                           _mm256_permutevar8x32_ps(vsteps, z));
        j1 = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_add_ps(_mm256_add_ps(tt, _mm256_set1_ps(0.5f)), _mm256_set1_ps(1.0f))), one);
        j1 = _mm256_min_epi32(_mm256_max_epi32(j1, zero), w);
        c = _mm256_add_epi32(_mm256_sub_epi32(w, one), j1);
        d_best = _mm256_and_ps(_mm256_sub_ps(a, _mm256_i32gather_ps(table, c, 4)), abs_mask);
        dm = _mm256_and_ps(_mm256_sub_ps(a, _mm256_i32gather_ps(table, _mm256_max_epi32(_mm256_sub_epi32(c, one), zero), 4)),
                           abs_mask);
        take = _mm256_and_si256(_mm256_cmpgt_epi32(c, zero), _mm256_castps_si256(_mm256_cmp_ps(dm, d_best, _CMP_LE_OQ)));
        best = _mm256_add_epi32(c, take); /* take is -1 where c - 1 wins */
        d_best = _mm256_blendv_ps(d_best, dm, _mm256_castsi256_ps(take));
        dp = _mm256_and_ps(_mm256_sub_ps(_mm256_i32gather_ps(table, _mm256_min_epi32(_mm256_add_epi32(c, one), top), 4), a),
                           abs_mask);
        take = _mm256_and_si256(_mm256_cmpgt_epi32(top, c), _mm256_castps_si256(_mm256_cmp_ps(dp, d_best, _CMP_LT_OQ)));
        best = _mm256_blendv_epi8(best, _mm256_add_epi32(c, one), take);
        /* Sign bit for nonzero codes of negative x. */
        neg = _mm256_castps_si256(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
        neg = _mm256_andnot_si256(_mm256_cmpeq_epi32(best, zero), neg);
        code = _mm256_or_si256(best, _mm256_and_si256(_mm256_set1_epi32(0x80), neg));
        {
            __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
            _mm_storel_epi64((__m128i *)(codes + i), _mm_packus_epi16(words, words));
        }
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_eightbit_values_avx2(const uint8_t *codes, size_t n, const float *scaled,
                                              float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + i)));
        __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
        __m256 v = _mm256_i32gather_ps(scaled, _mm256_and_si256(c, _mm256_set1_epi32(0x7f)), 4);
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), sign)));
    }
    return i;
}
#endif
