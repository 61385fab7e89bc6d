/* AVX2 and AVX-512 terngrad: 8 or 16 elements per step, each drawing its own uniform
 * from the vector generator (the same numbers as dr_rng_u32), with the scalar code's
 * float arithmetic (u * s against min(|x|, c)), so the codes are the same bits. The two
 * masks "sent and non-negative" / "sent and negative" are interleaved into the 2-bit
 * codes: with PDEP on AVX-512, by shifts and masks on AVX2 (lane_tables.h says why). */
#include "deepreduce.h"
#include "rng_simd.h"
#include "terngrad_simd.h"
#include "lane_tables.h"
#include "stream_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_terngrad_codes_avx2(const float *x, size_t n, float c, float s,
                                             uint64_t key, uint8_t *codes)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 vc = _mm256_set1_ps(c), vs = _mm256_set1_ps(s), zero = _mm256_setzero_ps();
    dr_rng32_avx2 r = dr_rng32_avx2_start(key, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        dr_read_ahead(x + i);
        __m256 clipped = _mm256_min_ps(_mm256_and_ps(v, abs_mask), vc);
        __m256 us = _mm256_mul_ps(dr_rng32_uniform_avx2(dr_rng32_avx2_next(&r)), vs);
        unsigned sent = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(us, clipped, _CMP_LT_OQ));
        unsigned neg = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ));
        uint16_t bits = (uint16_t)dr_interleave_bits8(sent & ~neg, sent & neg);
        memcpy(codes + i / 4, &bits, 2); /* little-endian, as x86 is */
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_terngrad_codes_avx512(const float *x, size_t n, float c, float s,
                                                 uint64_t key, uint8_t *codes)
{
    const __m512 vc = _mm512_set1_ps(c), vs = _mm512_set1_ps(s), zero = _mm512_setzero_ps();
    dr_rng32_avx512 r = dr_rng32_avx512_start(key, 0);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        dr_read_ahead(x + i);
        __m512 clipped = _mm512_min_ps(_mm512_abs_ps(v), vc);
        __m512 us = _mm512_mul_ps(dr_rng32_uniform_avx512(dr_rng32_avx512_next(&r)), vs);
        unsigned sent = _mm512_cmp_ps_mask(us, clipped, _CMP_LT_OQ);
        unsigned neg = _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ);
        uint32_t bits = _pdep_u32(sent & ~neg, 0x55555555u) | _pdep_u32(sent & neg, 0xaaaaaaaau);
        memcpy(codes + i / 4, &bits, 4);
    }
    return i;
}
#endif
