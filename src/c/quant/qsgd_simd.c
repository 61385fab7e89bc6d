/* AVX2 and AVX-512 qsgd: the levels of 8 or 16 elements per step, in float exactly as
 * the scalar code computes them (|x| * ratio, floor, one 24-bit uniform per element from
 * the vector generator against the fraction, clamp to s, sign), so every level is the
 * same integer. */
#include "deepreduce.h"
#include "qsgd_simd.h"
#include "rng_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* The levels of 8 elements in int32 lanes, from their 8 draws. */
DR_TARGET_AVX2 static inline __m256i levels8_avx2(__m256 x, __m256i draws, __m256 ratio, __m256i s)
{
    __m256 a = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), ratio);
    __m256 fl = _mm256_floor_ps(a);
    /* up is all ones (-1) where the draw rounds up: subtracting it adds one. */
    __m256i up = _mm256_castps_si256(_mm256_cmp_ps(dr_rng32_uniform_avx2(draws), _mm256_sub_ps(a, fl), _CMP_LT_OQ));
    __m256i lev = _mm256_min_epi32(_mm256_sub_epi32(_mm256_cvttps_epi32(fl), up), s);
    /* Negated where x's sign bit is set. sign_epi32 zeroes where x's bits are zero, at
     * +0.0, whose level is 0 anyway; -0.0's is 0 negated. */
    return _mm256_sign_epi32(lev, _mm256_castps_si256(x));
}

DR_TARGET_AVX2 size_t dr_qsgd_levels_avx2(const float *b, size_t m, float ratio, uint32_t s,
                                          uint64_t key, size_t first, uint8_t *levels,
                                          size_t width)
{
    dr_rng32_avx2 r = dr_rng32_avx2_start(key, first);
    const __m256 vratio = _mm256_set1_ps(ratio);
    const __m256i vs = _mm256_set1_epi32((int)s);
    /* A bucket across a multiple of 2^32 of the counter leaves the rest to the caller. */
    size_t i = 0, within = dr_rng32_draws_within(first, m);
    /* One loop per width: a test of it per step cost as much as the packing. */
    if (width == 1) {
        /* 32 levels per step: four generator chains in flight, and one pass of packs
         * and one permute for all of them. |level| <= 127 here: the saturating packs
         * never saturate; the permute undoes the in-lane order of the packs. */
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; i + 32 <= within; i += 32) {
            dr_read_ahead(b + i);
            dr_read_ahead(b + i + 16);
            __m256i l0 = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i l1 = levels8_avx2(_mm256_loadu_ps(b + i + 8), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i l2 = levels8_avx2(_mm256_loadu_ps(b + i + 16), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i l3 = levels8_avx2(_mm256_loadu_ps(b + i + 24), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(l0, l1), _mm256_packs_epi32(l2, l3));
            _mm256_storeu_si256((__m256i *)(levels + i), _mm256_permutevar8x32_epi32(bytes, order));
        }
        if (i + 16 <= within) {
            __m256i l0 = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i l1 = levels8_avx2(_mm256_loadu_ps(b + i + 8), dr_rng32_avx2_next_within(&r), vratio, vs);
            __m256i w = _mm256_packs_epi32(l0, l1);
            __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w, w), order);
            _mm_storeu_si128((__m128i *)(levels + i), _mm256_castsi256_si128(bytes));
            i += 16;
        }
    } else {
        for (; i + 8 <= within; i += 8) {
            dr_read_ahead(b + i);
            __m256i lev = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(&r), vratio, vs);
            _mm_storeu_si128((__m128i *)(levels + 2 * i),
                             _mm_packs_epi32(_mm256_castsi256_si128(lev), _mm256_extracti128_si256(lev, 1)));
        }
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_qsgd_levels_avx512(const float *b, size_t m, float ratio,
                                              uint32_t s, uint64_t key, size_t first,
                                              uint8_t *levels, size_t width)
{
    dr_rng32_avx512 r = dr_rng32_avx512_start(key, first);
    const __m512 vratio = _mm512_set1_ps(ratio);
    const __m512i vs = _mm512_set1_epi32((int)s), one = _mm512_set1_epi32(1);
    size_t i = 0, within = dr_rng32_draws_within(first, m); /* as on AVX2 */
    for (; i + 16 <= within; i += 16) {
        __m512 x = _mm512_loadu_ps(b + i);
        dr_read_ahead(b + i);
        __m512 a = _mm512_mul_ps(_mm512_abs_ps(x), vratio);
        __m512 fl = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        __mmask16 up = _mm512_cmp_ps_mask(dr_rng32_uniform_avx512(dr_rng32_avx512_next_within(&r)),
                                          _mm512_sub_ps(a, fl), _CMP_LT_OQ);
        __m512i lev = _mm512_cvttps_epi32(fl);
        lev = _mm512_min_epi32(_mm512_mask_add_epi32(lev, up, lev, one), vs);
        lev = _mm512_mask_sub_epi32(lev, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ),
                                    _mm512_setzero_si512(), lev);
        if (width == 1)
            _mm_storeu_si128((__m128i *)(levels + i), _mm512_cvtepi32_epi8(lev));
        else
            _mm256_storeu_si256((__m256i *)(levels + 2 * i), _mm512_cvtepi32_epi16(lev));
    }
    return i;
}

DR_TARGET_AVX512 double dr_qsgd_sum_squares_avx512(const float *b, size_t m)
{
    __m512d a[4], t;
    __m256d h;
    __m128d q;
    size_t i = 0;
    int k;
    for (k = 0; k < 4; k++)
        a[k] = _mm512_setzero_pd();
    /* Lane i % 32 as qstats; the tail by zero-filling loads: adding +0.0 to a sum of
     * squares (never -0.0) leaves it as it was. */
    for (; i < m; i += 32) {
        dr_read_ahead(b + i);
        if (i + 16 < m) /* b + i + 16 must stay inside the array (pointer arithmetic) */
            dr_read_ahead(b + i + 16);
        for (k = 0; k < 4; k++) {
            size_t at = i + 8u * (size_t)k;
            __mmask8 live = at >= m ? 0 : m - at >= 8 ? 0xff : (__mmask8)((1u << (m - at)) - 1u);
            __m256 f;
            /* Whole vectors by plain loads: here a masked load waits for the stores before
             * it (the levels of the buckets before), which cost a third of the encode. */
            if (live == 0xff)
                f = _mm256_loadu_ps(b + at);
            else
                f = _mm256_maskz_loadu_ps(live, b + (at < m ? at : 0));
            __m512d v = _mm512_cvtps_pd(f);
            a[k] = _mm512_add_pd(a[k], _mm512_mul_pd(v, v));
        }
    }
    /* dr_lanes_total's order: fold 32 -> 8, then ((m0+m4)+(m2+m6)) + ((m1+m5)+(m3+m7)). */
    t = _mm512_add_pd(_mm512_add_pd(a[0], a[1]), _mm512_add_pd(a[2], a[3]));
    h = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}

DR_TARGET_AVX2 double dr_qsgd_sum_squares_avx2(const float *b, size_t m)
{
    /* Lanes 4r..4r+3 in register r, r < 8; m is a multiple of 32. */
    __m256d a[8], t0, t1, t;
    __m128d q;
    size_t i;
    int r;
    for (r = 0; r < 8; r++)
        a[r] = _mm256_setzero_pd();
    for (i = 0; i < m; i += 32) {
        dr_read_ahead(b + i);
        dr_read_ahead(b + i + 16);
        for (r = 0; r < 8; r++) {
            /* 4 floats a load: converted from memory, no extract of a high half. */
            __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4 * r));
            a[r] = _mm256_add_pd(a[r], _mm256_mul_pd(v, v));
        }
    }
    /* dr_lanes_total's order: m_j = (l_j + l_j+8) + (l_j+16 + l_j+24), j < 8 (registers
     * r and r + 2, r + 4, r + 6), then ((m0+m4) + (m2+m6)) + ((m1+m5) + (m3+m7)). */
    t0 = _mm256_add_pd(_mm256_add_pd(a[0], a[2]), _mm256_add_pd(a[4], a[6])); /* m0..m3 */
    t1 = _mm256_add_pd(_mm256_add_pd(a[1], a[3]), _mm256_add_pd(a[5], a[7])); /* m4..m7 */
    t = _mm256_add_pd(t0, t1); /* m0+m4, m1+m5, m2+m6, m3+m7 */
    q = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1)); /* (m0+m4)+(m2+m6), (m1+m5)+(m3+m7) */
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}

DR_TARGET_AVX2 size_t dr_qsgd_scale_avx2(const uint8_t *levels, size_t m, size_t width,
                                         float step, float *out, int stream)
{
    const __m256 vstep = _mm256_set1_ps(step);
    size_t i = 0;
    stream &= ((uintptr_t)out & 15u) == 0;
    for (; i + 8 <= m; i += 8) {
        __m256i l = width == 1 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(levels + i)))
                               : _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(levels + 2 * i)));
        dr_store8_avx2(out + i, _mm256_mul_ps(vstep, _mm256_cvtepi32_ps(l)), stream);
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_qsgd_scale_avx512(const uint8_t *levels, size_t m, size_t width,
                                             float step, float *out, int stream)
{
    const __m512 vstep = _mm512_set1_ps(step);
    size_t i = 0;
    stream &= ((uintptr_t)out & 15u) == 0;
    for (; i + 16 <= m; i += 16) {
        __m512i l = width == 1 ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(levels + i)))
                               : _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(levels + 2 * i)));
        __m512 v = _mm512_mul_ps(vstep, _mm512_cvtepi32_ps(l));
        dr_store8_avx2(out + i, _mm512_castps512_ps256(v), stream);
        dr_store8_avx2(out + i + 8, _mm512_extractf32x8_ps(v, 1), stream);
    }
    return i;
}

DR_TARGET_AVX2 int dr_qsgd_levels_in_range_avx2(const uint8_t *levels, size_t n, size_t width,
                                                uint32_t s, size_t *done)
{
    __m256i bad = _mm256_setzero_si256();
    size_t i = 0, bytes = n * width;
    if (width == 1) {
        /* s < 128 here, so the bounds fit int8. */
        const __m256i hi = _mm256_set1_epi8((char)s), lo = _mm256_set1_epi8((char)-(int)s);
        for (; i + 32 <= bytes; i += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(levels + i));
            bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi8(v, hi), _mm256_cmpgt_epi8(lo, v)));
        }
    } else {
        const __m256i hi = _mm256_set1_epi16((short)s), lo = _mm256_set1_epi16((short)-(int)s);
        for (; i + 32 <= bytes; i += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(levels + i));
            bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi16(v, hi), _mm256_cmpgt_epi16(lo, v)));
        }
    }
    *done = i / width;
    return _mm256_testz_si256(bad, bad);
}
#endif
