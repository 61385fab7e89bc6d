/* AVX2 and AVX-512 qsgd: the levels of eight elements per step, computed in double
 * exactly as the scalar code does (|x| * ratio, floor, one uniform per element from the
 * vector generator, compare with the fraction), so every level is the same integer.
 * The sign is OR-ed in from x's own sign bit: -0.0 gives level -0.0, which converts to
 * the same integer 0 the scalar code writes. */
#include "deepreduce.h"
#include "qsgd_simd.h"
#include "rng_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Four levels in double from four x in double (sign included). */
DR_TARGET_AVX2 static __m256d levels4_avx2(__m256d xd, __m256d ratio, __m256d s, __m256d u)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d a = _mm256_mul_pd(_mm256_andnot_pd(sign, xd), ratio);
    __m256d fl = _mm256_floor_pd(a);
    __m256d up = _mm256_and_pd(_mm256_cmp_pd(u, _mm256_sub_pd(a, fl), _CMP_LT_OQ), _mm256_set1_pd(1.0));
    __m256d lev = _mm256_blendv_pd(_mm256_add_pd(fl, up), s, _mm256_cmp_pd(a, s, _CMP_GE_OQ));
    return _mm256_or_pd(lev, _mm256_and_pd(sign, xd));
}

DR_TARGET_AVX2 size_t dr_qsgd_levels_avx2(const float *b, size_t m, double ratio, uint32_t s,
                                          uint64_t key, size_t first, uint8_t *levels,
                                          size_t width)
{
    dr_rng_avx2 r = dr_rng_avx2_start(key, first);
    const __m256d vratio = _mm256_set1_pd(ratio), vs = _mm256_set1_pd((double)s);
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m256 x = _mm256_loadu_ps(b + i);
        __m256d lo = levels4_avx2(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), vratio, vs,
                                  dr_rng_avx2_uniform_pd(&r));
        __m256d hi = levels4_avx2(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), vratio, vs,
                                  dr_rng_avx2_uniform_pd(&r));
        /* |level| <= 32767: the saturating packs never saturate. */
        __m128i words = _mm_packs_epi32(_mm256_cvttpd_epi32(lo), _mm256_cvttpd_epi32(hi));
        if (width == 1)
            _mm_storel_epi64((__m128i *)(levels + i), _mm_packs_epi16(words, words));
        else
            _mm_storeu_si128((__m128i *)(levels + 2 * i), words);
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_qsgd_levels_avx512(const float *b, size_t m, double ratio,
                                              uint32_t s, uint64_t key, size_t first,
                                              uint8_t *levels, size_t width)
{
    dr_rng_avx512 r = dr_rng_avx512_start(key, first);
    const __m512d vratio = _mm512_set1_pd(ratio), vs = _mm512_set1_pd((double)s);
    const __m512i sign = _mm512_set1_epi64((long long)0x8000000000000000ull);
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m512d xd = _mm512_cvtps_pd(_mm256_loadu_ps(b + i));
        __m512d a = _mm512_mul_pd(_mm512_abs_pd(xd), vratio);
        __m512d fl = _mm512_roundscale_pd(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        __mmask8 up = _mm512_cmp_pd_mask(dr_rng_avx512_uniform_pd(&r), _mm512_sub_pd(a, fl), _CMP_LT_OQ);
        __m512d lev = _mm512_mask_add_pd(fl, up, fl, _mm512_set1_pd(1.0));
        __m256i li;
        lev = _mm512_mask_mov_pd(lev, _mm512_cmp_pd_mask(a, vs, _CMP_GE_OQ), vs);
        lev = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(lev),
                                                  _mm512_and_si512(_mm512_castpd_si512(xd), sign)));
        li = _mm512_cvttpd_epi32(lev);
        if (width == 1)
            _mm_storel_epi64((__m128i *)(levels + i), _mm256_cvtepi32_epi8(li));
        else
            _mm_storeu_si128((__m128i *)(levels + 2 * i), _mm256_cvtepi32_epi16(li));
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_qsgd_scale_avx2(const uint8_t *levels, size_t m, size_t width,
                                         float step, float *out)
{
    const __m256 vstep = _mm256_set1_ps(step);
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m256i l = width == 1 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(levels + i)))
                               : _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(levels + 2 * i)));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(vstep, _mm256_cvtepi32_ps(l)));
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_qsgd_scale_avx512(const uint8_t *levels, size_t m, size_t width,
                                             float step, float *out)
{
    const __m512 vstep = _mm512_set1_ps(step);
    size_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m512i l = width == 1 ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(levels + i)))
                               : _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(levels + 2 * i)));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(vstep, _mm512_cvtepi32_ps(l)));
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
