/* Threshold kernels: AVX2 compares eight magnitude keys at once and walks the set bits
 * of the comparison mask so indices come out in ascending order, as in the scalar path;
 * the frame's bitmap sweep (AVX-512 and AVX2) stores the masks as the bitmap's bits. */
#include "deepreduce.h"
#include "threshold_simd.h"
#include "append_simd.h"
#include "stream_simd.h"

#include <string.h>

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

/* The values are appended as dr_append_* appends indices: compressed (AVX-512) or packed
 * by a permutation (AVX2) in registers and stored whole, `val` with room for a vector
 * past the count. */
DR_TARGET_AVX2 size_t dr_threshold_bitmap_avx2(const float *x, size_t m, uint32_t tkey, uint8_t *bits, float *val,
                                               size_t *count, uint32_t *top)
{
    const __m256i below = _mm256_set1_epi32((int)tkey - 1), nan_floor = _mm256_set1_epi32(0x7f800001);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i most = _mm256_setzero_si256();
    uint32_t swept[8], j;
    size_t i, c = *count;
    for (i = 0; i + 8 <= m; i += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + i)), key = _mm256_and_si256(v, abs_mask);
        unsigned ok = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
            _mm256_and_si256(_mm256_cmpgt_epi32(key, below), _mm256_cmpgt_epi32(nan_floor, key))));
        dr_read_ahead(x + i);
        most = _mm256_max_epu32(most, key);
        bits[i / 8] = (uint8_t)ok;
        c += dr_append_avx2(ok, v, v, (uint32_t *)(void *)(val + c), NULL);
    }
    _mm256_storeu_si256((__m256i *)(void *)swept, most);
    for (j = 0; j < 8; j++)
        *top = swept[j] > *top ? swept[j] : *top;
    *count = c;
    return i;
}

DR_TARGET_AVX512 size_t dr_threshold_bitmap_avx512(const float *x, size_t m, uint32_t tkey, uint8_t *bits,
                                                   float *val, size_t *count, uint32_t *top)
{
    const __m512i below = _mm512_set1_epi32((int)tkey - 1), nan_floor = _mm512_set1_epi32(0x7f800001);
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    __m512i most = _mm512_setzero_si512();
    uint32_t swept_top;
    size_t i, c = *count;
    for (i = 0; i + 16 <= m; i += 16) {
        __m512i v = _mm512_loadu_si512(x + i), key = _mm512_and_si512(v, abs_mask);
        __mmask16 ok = _mm512_cmpgt_epi32_mask(key, below) & _mm512_cmpgt_epi32_mask(nan_floor, key);
        uint16_t word = (uint16_t)_cvtmask16_u32(ok);
        dr_read_ahead(x + i);
        most = _mm512_max_epu32(most, key);
        memcpy(bits + i / 8, &word, 2);
        c += dr_append_avx512(ok, v, v, (uint32_t *)(void *)(val + c), NULL);
    }
    swept_top = (uint32_t)_mm512_reduce_max_epu32(most);
    *top = swept_top > *top ? swept_top : *top;
    *count = c;
    return i;
}
#endif
