/* AVX2 and AVX-512 natural compression: natural_code() of natural.c on 64-bit lanes (one
 * draw of the vector generator per element, the same numbers as dr_rng_u64), all in
 * integer arithmetic on the float bits, so the codes are the same bytes.
 *
 * Below the smallest power the scalar code compares the draw with (uint64_t)(|v|*2^127);
 * that product is exact, and its integer part is taken here from v's bits: significand
 * s (with the hidden bit, none for a subnormal) times 2^(e - 23), e the exponent field
 * (1 for a subnormal), i.e. s << (e - 23) or s >> (23 - e). */
#include "deepreduce.h"
#include "natural_simd.h"
#include "rng_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Four codes (without sign) in 64-bit lanes from four float bit patterns and draws. */
DR_TARGET_AVX2 static __m256i codes4_avx2(__m256i u, __m256i r)
{
    const __m256i one = _mm256_set1_epi64x(1), flip = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    __m256i e = _mm256_and_si256(_mm256_srli_epi64(u, 23), _mm256_set1_epi64x(0xff));
    __m256i mant = _mm256_and_si256(u, _mm256_set1_epi64x(0x7fffff));
    /* Normal range: e - (NAT_EXP_MIN - 1) + (r >> 41 < mant), at most 127. */
    __m256i up = _mm256_cmpgt_epi64(mant, _mm256_srli_epi64(r, 41));
    __m256i big = _mm256_sub_epi64(_mm256_sub_epi64(e, _mm256_set1_epi64x(NAT_EXP_MIN - 1)), up);
    __m256i cap = _mm256_set1_epi64x(127);
    __m256i is_sub = _mm256_cmpeq_epi64(e, _mm256_setzero_si256());
    __m256i sig = _mm256_or_si256(mant, _mm256_andnot_si256(is_sub, _mm256_set1_epi64x(1 << 23)));
    __m256i e1 = _mm256_blendv_epi8(e, one, is_sub);
    /* Out-of-range shift counts (the negative one of the two) give 0. */
    __m256i t_int = _mm256_or_si256(_mm256_sllv_epi64(sig, _mm256_sub_epi64(e1, _mm256_set1_epi64x(23))),
                                    _mm256_srlv_epi64(sig, _mm256_sub_epi64(_mm256_set1_epi64x(23), e1)));
    __m256i small = _mm256_and_si256(one, _mm256_cmpgt_epi64(_mm256_xor_si256(t_int, flip), _mm256_xor_si256(r, flip)));
    big = _mm256_blendv_epi8(big, cap, _mm256_cmpgt_epi64(big, cap));
    return _mm256_blendv_epi8(small, big, _mm256_cmpgt_epi64(e, _mm256_set1_epi64x(NAT_EXP_MIN - 1)));
}

DR_TARGET_AVX2 size_t dr_natural_codes_avx2(const float *x, size_t n, uint64_t key, uint8_t *codes)
{
    const __m256i exp_mask = _mm256_set1_epi32(0x7f800000);
    const __m256i low_words = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    dr_rng_avx2 r = dr_rng_avx2_start(key, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i bits = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i lo, hi, c32, sign;
        __m128i words;
        if (!_mm256_testz_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, exp_mask), exp_mask),
                                _mm256_set1_epi32(-1)))
            break; /* Inf or NaN: the scalar code refuses it */
        lo = codes4_avx2(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(bits)), dr_rng_avx2_next(&r));
        hi = codes4_avx2(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(bits, 1)), dr_rng_avx2_next(&r));
        c32 = _mm256_inserti128_si256(_mm256_permutevar8x32_epi32(lo, low_words),
                                      _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(hi, low_words)), 1);
        /* Sign bit 0x80 for nonzero codes. */
        sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
        c32 = _mm256_or_si256(c32, _mm256_andnot_si256(_mm256_cmpeq_epi32(c32, _mm256_setzero_si256()), sign));
        words = _mm_packus_epi32(_mm256_castsi256_si128(c32), _mm256_extracti128_si256(c32, 1));
        _mm_storel_epi64((__m128i *)(codes + i), _mm_packus_epi16(words, words));
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_natural_codes_avx512(const float *x, size_t n, uint64_t key, uint8_t *codes)
{
    const __m512i one = _mm512_set1_epi64(1), cap = _mm512_set1_epi64(127), k23 = _mm512_set1_epi64(23);
    dr_rng_avx512 rng = dr_rng_avx512_start(key, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i u = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(x + i)));
        __m512i r = dr_rng_avx512_next(&rng);
        __m512i e = _mm512_and_si512(_mm512_srli_epi64(u, 23), _mm512_set1_epi64(0xff));
        __m512i mant = _mm512_and_si512(u, _mm512_set1_epi64(0x7fffff));
        __mmask8 sub = _mm512_cmpeq_epi64_mask(e, _mm512_setzero_si512());
        __m512i big, sig, e1, t_int, code, sign;
        if (_mm512_cmpeq_epi64_mask(e, _mm512_set1_epi64(0xff)))
            break; /* Inf or NaN: the scalar code refuses it */
        big = _mm512_sub_epi64(e, _mm512_set1_epi64(NAT_EXP_MIN - 1));
        big = _mm512_mask_add_epi64(big, _mm512_cmplt_epu64_mask(_mm512_srli_epi64(r, 41), mant), big, one);
        big = _mm512_min_epu64(big, cap);
        sig = _mm512_mask_or_epi64(mant, (__mmask8)~sub, mant, _mm512_set1_epi64(1 << 23));
        e1 = _mm512_mask_mov_epi64(e, sub, one);
        t_int = _mm512_or_si512(_mm512_sllv_epi64(sig, _mm512_sub_epi64(e1, k23)),
                                _mm512_srlv_epi64(sig, _mm512_sub_epi64(k23, e1)));
        code = _mm512_maskz_mov_epi64(_mm512_cmplt_epu64_mask(r, t_int), one);
        code = _mm512_mask_mov_epi64(code, _mm512_cmpgt_epu64_mask(e, _mm512_set1_epi64(NAT_EXP_MIN - 1)), big);
        sign = _mm512_and_si512(_mm512_srli_epi64(u, 24), _mm512_set1_epi64(0x80));
        code = _mm512_mask_or_epi64(code, _mm512_test_epi64_mask(code, code), code, sign);
        _mm_storel_epi64((__m128i *)(codes + i), _mm512_cvtepi64_epi8(code));
    }
    return i;
}
DR_TARGET_AVX2 size_t dr_natural_values_avx2(const uint8_t *codes, size_t n, float *out)
{
    const __m256i mag_mask = _mm256_set1_epi32(0x7f), zero = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + i)));
        __m256i mag = _mm256_and_si256(c, mag_mask);
        __m256i u = _mm256_or_si256(_mm256_slli_epi32(_mm256_andnot_si256(mag_mask, c), 24),
                                    _mm256_slli_epi32(_mm256_add_epi32(mag, _mm256_set1_epi32(NAT_EXP_MIN - 1)), 23));
        u = _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, zero), u);
        _mm256_storeu_si256((__m256i *)(out + i), u);
    }
    return i;
}
#endif
