/* AVX2 row of the low-rank product: eight columns per step, the products and their sum
 * in the scalar loop's order (the core builds with -ffp-contract=off: no fused
 * multiply-add on either path), written streamed when the output is far larger than
 * the caches. */
#include "deepreduce.h"
#include "lowrank_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_lowrank_row_avx2(const float *prow, const float *qt, size_t cols,
                                          size_t rank, const float *minuend, float *out,
                                          int stream, uint32_t *top)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i largest = _mm256_setzero_si256();
    uint32_t lanes[8];
    size_t j = 0, k, l;
    for (; j + 8 <= cols; j += 8) {
        __m256 v = _mm256_mul_ps(_mm256_set1_ps(prow[0]), _mm256_loadu_ps(qt + j));
        for (k = 1; k < rank; k++)
            v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(prow[k]), _mm256_loadu_ps(qt + k * cols + j)));
        if (minuend != NULL)
            v = _mm256_sub_ps(_mm256_loadu_ps(minuend + j), v);
        dr_store8_avx2(out + j, v, stream);
        largest = _mm256_max_epu32(largest, _mm256_and_si256(_mm256_castps_si256(v), abs_mask));
    }
    _mm256_storeu_si256((__m256i *)lanes, largest);
    for (l = 0; l < 8; l++)
        *top = lanes[l] > *top ? lanes[l] : *top;
    return j;
}
#endif
