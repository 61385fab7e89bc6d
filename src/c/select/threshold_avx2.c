/* AVX2 threshold kernels: compare eight magnitude keys at once, then walk the set bits
 * of the comparison mask so indices come out in ascending order, as in the scalar path. */
#include "deepreduce.h"
#include "threshold_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 static unsigned pass_mask(const float *p, __m256i below, __m256i nan_floor,
                                         __m256i abs_mask)
{
    __m256i key = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)p), abs_mask);
    /* key >= tkey  <=>  key > tkey - 1;  not NaN  <=>  nan_floor > key. Keys are < 2^31,
     * so the signed compare is exact. */
    __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(key, below), _mm256_cmpgt_epi32(nan_floor, key));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ok));
}

DR_TARGET_AVX2 size_t dr_threshold_count_avx2(const float *x, size_t n, uint32_t tkey, size_t *count)
{
    const __m256i below = _mm256_set1_epi32((int)tkey - 1);
    const __m256i nan_floor = _mm256_set1_epi32(0x7f800001);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    size_t i = 0, c = 0;
    for (; i + 8 <= n; i += 8) {
        dr_read_ahead(x + i);
        c += (size_t)_mm_popcnt_u32(pass_mask(x + i, below, nan_floor, abs_mask));
    }
    *count += c;
    return i;
}

DR_TARGET_AVX2 size_t dr_threshold_select_avx2(const float *x, size_t n, uint32_t tkey,
                                               uint32_t *idx_out, size_t cap, size_t *count)
{
    const __m256i below = _mm256_set1_epi32((int)tkey - 1);
    const __m256i nan_floor = _mm256_set1_epi32(0x7f800001);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    size_t i = 0, c = *count;
    for (; i + 8 <= n; i += 8) {
        unsigned m = pass_mask(x + i, below, nan_floor, abs_mask);
        dr_read_ahead(x + i);
        while (m) {
            if (c < cap)
                idx_out[c] = (uint32_t)(i + (unsigned)__builtin_ctz(m));
            c++;
            m &= m - 1u;
        }
    }
    *count = c;
    return i;
}
#endif
