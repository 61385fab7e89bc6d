/* AVX2 sign bitmaps: eight floats compare against zero and movemask into one byte;
 * unpacking broadcasts a byte, isolates one bit per lane and blends the two values. */
#include "deepreduce.h"
#include "signs_simd.h"
#include "stream_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_pack_signs_avx2(const float *x, size_t n, uint8_t *out)
{
    const __m256 zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        /* _CMP_GE_OQ is false for NaN and true for -0.0, as `x >= 0.0f` is. */
        uint32_t a = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), zero, _CMP_GE_OQ));
        uint32_t b = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 8), zero, _CMP_GE_OQ));
        uint32_t c = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 16), zero, _CMP_GE_OQ));
        uint32_t d = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 24), zero, _CMP_GE_OQ));
        uint32_t word = a | (b << 8) | (c << 16) | (d << 24);
        out[i / 8] = (uint8_t)word;
        out[i / 8 + 1] = (uint8_t)(word >> 8);
        out[i / 8 + 2] = (uint8_t)(word >> 16);
        out[i / 8 + 3] = (uint8_t)(word >> 24);
    }
    for (; i + 8 <= n; i += 8)
        out[i / 8] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), zero, _CMP_GE_OQ));
    return i;
}

DR_TARGET_AVX2 size_t dr_pack_signs_finite_avx2(const float *x, size_t n, uint8_t *out,
                                                uint32_t *nonfinite)
{
    /* An all-ones exponent is an Inf or a NaN: the largest sign-cleared bit pattern of
     * the prefix tells (a signed max is the unsigned one below 2^31). */
    const __m256 zero = _mm256_setzero_ps();
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i top = _mm256_setzero_si256();
    size_t i = 0, j;
    for (; i + 32 <= n; i += 32) {
        uint32_t word = 0;
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (j = 0; j < 32; j += 8) {
            __m256 v = _mm256_loadu_ps(x + i + j);
            top = _mm256_max_epi32(top, _mm256_and_si256(_mm256_castps_si256(v), abs_mask));
            word |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ)) << j;
        }
        memcpy(out + i / 8, &word, sizeof word); /* little-endian: byte k is floats 8k..8k+7 */
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        top = _mm256_max_epi32(top, _mm256_and_si256(_mm256_castps_si256(v), abs_mask));
        out[i / 8] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ));
    }
    *nonfinite |= (uint32_t)!_mm256_testz_si256(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x7f7fffff)),
                                                _mm256_set1_epi32(-1));
    return i;
}

DR_TARGET_AVX2 size_t dr_unpack_signs_avx2(const uint8_t *bits, size_t n, float if_clear,
                                           float if_set, float *out)
{
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 clear = _mm256_set1_ps(if_clear), set = _mm256_set1_ps(if_set);
    const int stream = dr_stream_output(out, n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), lane_bit);
        __m256 v = _mm256_blendv_ps(clear, set, _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, lane_bit)));
        dr_store8_avx2(out + i, v, stream);
    }
    if (stream)
        dr_stream_fence();
    return i;
}
#endif
