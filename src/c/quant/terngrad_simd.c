/* AVX2 and AVX-512 terngrad: eight elements per step, each drawing its own uniform from
 * the vector generator (the same numbers as dr_rng_uniform), with the scalar code's
 * float arithmetic (min, one division, compare), so the codes are the same bits. The
 * two masks "sent and non-negative" / "sent and negative" are interleaved into the
 * 2-bit codes with PDEP. */
#include "deepreduce.h"
#include "rng_simd.h"
#include "terngrad_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 static void put_codes(uint8_t *codes, unsigned sent, unsigned neg)
{
    unsigned bits = _pdep_u32(sent & ~neg, 0x5555u) | _pdep_u32(sent & neg, 0xaaaau);
    codes[0] = (uint8_t)bits;
    codes[1] = (uint8_t)(bits >> 8);
}

DR_TARGET_AVX2 size_t dr_terngrad_codes_avx2(const float *x, size_t n, float c, float s,
                                             uint64_t key, uint8_t *codes)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 vc = _mm256_set1_ps(c), vs = _mm256_set1_ps(s), zero = _mm256_setzero_ps();
    const __m256i low_words = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    dr_rng_avx2 r = dr_rng_avx2_start(key, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 p = _mm256_div_ps(_mm256_min_ps(_mm256_and_ps(v, abs_mask), vc), vs);
        /* Two blocks of four 24-bit draws, narrowed to 32-bit lanes and converted. */
        __m256i k0 = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(dr_rng_avx2_next(&r), 40), low_words);
        __m256i k1 = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(dr_rng_avx2_next(&r), 40), low_words);
        __m256i k = _mm256_inserti128_si256(k0, _mm256_castsi256_si128(k1), 1);
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(k), _mm256_set1_ps(1.0f / 16777216.0f));
        unsigned sent = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(u, p, _CMP_LT_OQ));
        unsigned neg = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ));
        put_codes(codes + i / 4, sent, neg);
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_terngrad_codes_avx512(const float *x, size_t n, float c, float s,
                                                 uint64_t key, uint8_t *codes)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 vc = _mm256_set1_ps(c), vs = _mm256_set1_ps(s), zero = _mm256_setzero_ps();
    dr_rng_avx512 r = dr_rng_avx512_start(key, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 p = _mm256_div_ps(_mm256_min_ps(_mm256_and_ps(v, abs_mask), vc), vs);
        __m256 u = _mm256_mul_ps(_mm512_cvtepu64_ps(_mm512_srli_epi64(dr_rng_avx512_next(&r), 40)),
                                 _mm256_set1_ps(1.0f / 16777216.0f));
        put_codes(codes + i / 4, _mm256_cmp_ps_mask(u, p, _CMP_LT_OQ),
                  _mm256_cmp_ps_mask(v, zero, _CMP_LT_OQ));
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_terngrad_values_avx2(const uint8_t *codes, size_t n, float s, float *out)
{
    /* Lane j tests bit 2j (+s) and bit 2j+1 (-s) of the group's 16 code bits. */
    const __m256i plus_bit = _mm256_setr_epi32(1, 4, 16, 64, 256, 1024, 4096, 16384);
    const __m256i minus_bit = _mm256_slli_epi32(plus_bit, 1);
    const __m256 vs = _mm256_set1_ps(s), vneg = _mm256_set1_ps(-s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i g = _mm256_set1_epi32(codes[i / 4] | (codes[i / 4 + 1] << 8));
        __m256 plus = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(g, plus_bit), plus_bit));
        __m256 minus = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(g, minus_bit), minus_bit));
        _mm256_storeu_ps(out + i, _mm256_or_ps(_mm256_and_ps(plus, vs), _mm256_and_ps(minus, vneg)));
    }
    return i;
}
#endif
