/* AVX2 and AVX-512 natural compression: natural_code() of natural.c on 32-bit lanes,
 * 8 or 16 at a time (one draw of the vector generator per element, the same numbers as
 * dr_rng_u32): the normal range in integer arithmetic on the float bits, the range below
 * 2^-63 as the scalar code's float compare, so the codes are the same bytes. */
#include "deepreduce.h"
#include "natural_simd.h"
#include "rng_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* The codes of 8 finite floats (bits u) in int32 lanes. */
DR_TARGET_AVX2 static inline __m256i codes8_avx2(__m256i u, __m256i r)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256i e = _mm256_and_si256(_mm256_srli_epi32(u, 23), _mm256_set1_epi32(0xff));
    __m256i mant = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffff));
    /* Normal range: e - (NAT_EXP_MIN - 1) + (r >> 9 < mant), at most 127 (all operands
     * below 2^23, so the signed compares are the unsigned ones). */
    __m256i big = _mm256_sub_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(NAT_EXP_MIN - 1)),
                                   _mm256_cmpgt_epi32(mant, _mm256_srli_epi32(r, 9)));
    __m256i normal = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(NAT_EXP_MIN - 1));
    __m256i code = _mm256_min_epi32(big, _mm256_set1_epi32(127));
    /* Below 2^-63 (zeros included): rare but for zeros, so only vectors that hold one
     * pay for the float compare. */
    if (!_mm256_testc_si256(normal, _mm256_set1_epi32(-1))) {
        __m256i small = _mm256_and_si256(_mm256_set1_epi32(1), _mm256_castps_si256(_mm256_cmp_ps(
            _mm256_cvtepi32_ps(_mm256_srli_epi32(r, 8)),
            _mm256_mul_ps(_mm256_and_ps(_mm256_castsi256_ps(u), abs_mask), _mm256_set1_ps(0x1p87f)), _CMP_LT_OQ)));
        code = _mm256_blendv_epi8(small, code, normal);
    }
    /* Sign bit 0x80 for nonzero codes. */
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    return _mm256_or_si256(code, _mm256_andnot_si256(_mm256_cmpeq_epi32(code, _mm256_setzero_si256()), sign));
}

/* 16 codes (int32 lanes, 8 each in c0 and c1) as bytes at out, in element order. Codes
 * are below 256: the unsigned packs never saturate; the permute undoes the in-lane
 * order of the packs. */
DR_TARGET_AVX2 static inline void store16_avx2(__m256i c0, __m256i c1, uint8_t *out)
{
    __m256i w = _mm256_packus_epi32(c0, c1);
    w = _mm256_packus_epi16(w, w);
    w = _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0));
    _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(w));
}

DR_TARGET_AVX2 size_t dr_natural_codes_avx2(const float *x, size_t n, uint64_t key, uint8_t *codes)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), all = _mm256_set1_epi32(-1);
    /* |v| - 2^(NAT_EXP_MIN - 127) in bits is below normal_span exactly for the finite
     * values of the normal range (as unsigned: the range below wraps to the top). */
    const __m256i normal_floor = _mm256_set1_epi32(NAT_EXP_MIN << 23);
    const __m256i normal_span = _mm256_set1_epi32(0x7f800000 - (NAT_EXP_MIN << 23) - 1);
    /* With d = |v| bits - normal_floor = (e - NAT_EXP_MIN) << 23 | mant and the draw's
     * D = 2^24 - 1 - (r >> 9): d + D = (e - NAT_EXP_MIN + 1) << 23 + mant + 2^23 - 1 -
     * (r >> 9), which carries once more exactly when r >> 9 < mant. So the code before
     * its cap at 127 is (|v| bits + carry_base - (r >> 9)) >> 23. */
    const __m256i carry_base = _mm256_set1_epi32(0xffffff - (NAT_EXP_MIN << 23));
    const __m256i sign_bit = _mm256_set1_epi8((char)0x80), finite_top = _mm256_set1_epi32(0x7f7fffff);
    dr_rng32_avx2 rng = dr_rng32_avx2_start(key, 0);
    /* Counters past 2^32 (more than 4G elements) are left to the caller. */
    size_t i = 0, within = dr_rng32_draws_within(0, n);
    for (; i + 16 <= within; i += 16) {
        dr_read_ahead(x + i);
        __m256i u0 = _mm256_loadu_si256((const __m256i *)(x + i)), u1 = _mm256_loadu_si256((const __m256i *)(x + i + 8));
        __m256i a0 = _mm256_and_si256(u0, abs_mask), a1 = _mm256_and_si256(u1, abs_mask);
        __m256i d0 = _mm256_sub_epi32(a0, normal_floor), d1 = _mm256_sub_epi32(a1, normal_floor);
        __m256i normal = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_min_epu32(d0, normal_span), d0),
                                          _mm256_cmpeq_epi32(_mm256_min_epu32(d1, normal_span), d1));
        __m256i r0 = dr_rng32_avx2_next_within(&rng), r1 = dr_rng32_avx2_next_within(&rng);
        __m256i c, sign;
        if (!_mm256_testc_si256(normal, all)) {
            /* A zero, a value below 2^-63, an Inf or a NaN: rare but for zeros. */
            __m256i inf_nan = _mm256_or_si256(_mm256_cmpgt_epi32(a0, finite_top), _mm256_cmpgt_epi32(a1, finite_top));
            if (!_mm256_testz_si256(inf_nan, inf_nan))
                break; /* Inf or NaN: the scalar code refuses it */
            store16_avx2(codes8_avx2(u0, r0), codes8_avx2(u1, r1), codes + i);
            continue;
        }
        c = _mm256_packs_epi32(_mm256_srli_epi32(_mm256_sub_epi32(_mm256_add_epi32(a0, carry_base), _mm256_srli_epi32(r0, 9)), 23),
                               _mm256_srli_epi32(_mm256_sub_epi32(_mm256_add_epi32(a1, carry_base), _mm256_srli_epi32(r1, 9)), 23));
        /* The signs ride in the same packs: a negative float's bits saturate to -32768,
         * then -128 (0x80); a positive normal one's to 32767, then 127. The codes (1 to
         * 192 here) saturate at 127, the cap. Bytes: codes in the low half, signs in the
         * high, after the permute. */
        c = _mm256_packs_epi16(c, _mm256_packs_epi32(u0, u1));
        c = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        sign = _mm256_and_si256(_mm256_permute2x128_si256(c, c, 0x11), sign_bit);
        _mm_storeu_si128((__m128i *)(codes + i), _mm256_castsi256_si128(_mm256_or_si256(c, sign)));
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_natural_codes_avx512(const float *x, size_t n, uint64_t key, uint8_t *codes)
{
    const __m512i ff = _mm512_set1_epi32(0xff), one = _mm512_set1_epi32(1);
    dr_rng32_avx512 rng = dr_rng32_avx512_start(key, 0);
    size_t i = 0, within = dr_rng32_draws_within(0, n); /* as on AVX2 */
    for (; i + 16 <= within; i += 16) {
        __m512i u = _mm512_loadu_si512(x + i);
        dr_read_ahead(x + i);
        __m512i e = _mm512_and_si512(_mm512_srli_epi32(u, 23), ff);
        __m512i mant = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffff));
        __m512i r, big, code, sign;
        __mmask16 normal;
        if (_mm512_cmpeq_epi32_mask(e, ff))
            break; /* Inf or NaN: the scalar code refuses it */
        r = dr_rng32_avx512_next_within(&rng);
        big = _mm512_sub_epi32(e, _mm512_set1_epi32(NAT_EXP_MIN - 1));
        big = _mm512_mask_add_epi32(big, _mm512_cmplt_epu32_mask(_mm512_srli_epi32(r, 9), mant), big, one);
        big = _mm512_min_epu32(big, _mm512_set1_epi32(127));
        normal = _mm512_cmpgt_epu32_mask(e, _mm512_set1_epi32(NAT_EXP_MIN - 1));
        code = big;
        if (normal != 0xffffu) { /* below 2^-63, zeros included: as in the AVX2 variant */
            __mmask16 small = _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(_mm512_srli_epi32(r, 8)),
                                                 _mm512_mul_ps(_mm512_abs_ps(_mm512_castsi512_ps(u)),
                                                               _mm512_set1_ps(0x1p87f)),
                                                 _CMP_LT_OQ);
            code = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(small, one), normal, big);
        }
        sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
        code = _mm512_mask_or_epi32(code, _mm512_test_epi32_mask(code, code), code, sign);
        _mm_storeu_si128((__m128i *)(codes + i), _mm512_cvtepi32_epi8(code));
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_natural_values_avx2(const uint8_t *codes, size_t n, float *out)
{
    const __m256i mag_mask = _mm256_set1_epi32(0x7f), zero = _mm256_setzero_si256();
    const int stream = dr_stream_output(out, n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + i)));
        __m256i mag = _mm256_and_si256(c, mag_mask);
        __m256i u = _mm256_or_si256(_mm256_slli_epi32(_mm256_andnot_si256(mag_mask, c), 24),
                                    _mm256_slli_epi32(_mm256_add_epi32(mag, _mm256_set1_epi32(NAT_EXP_MIN - 1)), 23));
        u = _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, zero), u);
        dr_store8_avx2(out + i, _mm256_castsi256_ps(u), stream);
    }
    if (stream)
        dr_stream_fence();
    return i;
}
#endif
