/* AVX2 and AVX-512 sweeps of dr_randomk (see randomk_simd.h). */
#include "randomk_simd.h"
#include "lane_tables.h"
#include "rng_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 void dr_randomk_draw_avx2(uint64_t key, size_t first, size_t end, uint32_t threshold,
                                         uint64_t *bits)
{
    /* u < threshold, unsigned, as a signed compare of both sides with the top bit flipped. */
    const __m256i bias = _mm256_set1_epi32((int)0x80000000u);
    const __m256i below = _mm256_set1_epi32((int)(threshold ^ 0x80000000u));
    dr_rng32_avx2 rng = dr_rng32_avx2_start(key, (uint64_t)first * 64u);
    size_t w;
    for (w = first; w < end; w++) {
        uint64_t word = 0;
        unsigned q;
        for (q = 0; q < 8; q++) {
            __m256i u = _mm256_xor_si256(dr_rng32_avx2_next_within(&rng), bias);
            unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(below, u)));
            word |= (uint64_t)m << (8 * q);
        }
        bits[w] = word;
    }
}

DR_TARGET_AVX512 void dr_randomk_draw_avx512(uint64_t key, size_t first, size_t end, uint32_t threshold,
                                             uint64_t *bits)
{
    const __m512i below = _mm512_set1_epi32((int)threshold);
    dr_rng32_avx512 rng = dr_rng32_avx512_start(key, (uint64_t)first * 64u);
    size_t w;
    for (w = first; w < end; w++) {
        uint64_t m0 = _mm512_cmplt_epu32_mask(dr_rng32_avx512_next_within(&rng), below);
        uint64_t m1 = _mm512_cmplt_epu32_mask(dr_rng32_avx512_next_within(&rng), below);
        uint64_t m2 = _mm512_cmplt_epu32_mask(dr_rng32_avx512_next_within(&rng), below);
        uint64_t m3 = _mm512_cmplt_epu32_mask(dr_rng32_avx512_next_within(&rng), below);
        bits[w] = m0 | m1 << 16 | m2 << 32 | m3 << 48;
    }
}

DR_TARGET_AVX2 size_t dr_randomk_write_avx2(const uint64_t *bits, size_t first, size_t end, const float *x,
                                            uint32_t *idx, float *val, size_t room, size_t *count, uint32_t *top)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), magnitude = _mm256_set1_epi32(0x7fffffff);
    __m256i most = _mm256_setzero_si256();
    uint32_t lanes[8];
    size_t w, c = 0;
    unsigned j;
    for (w = first; w < end && c + 64 <= room; w++) {
        uint64_t word = bits[w];
        unsigned q;
        for (q = 0; q < 8 && (word != 0 || x != NULL); q++, word >>= 8) {
            size_t at = w * 64u + 8u * q;
            unsigned m = (unsigned)(word & 0xffu);
            __m256i order = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)dr_pack_lanes8[m]));
            __m256i index = _mm256_add_epi32(lane, _mm256_set1_epi32((int)at));
            _mm256_storeu_si256((__m256i *)(void *)(idx + c), _mm256_permutevar8x32_epi32(index, order));
            if (x != NULL) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + at));
                most = _mm256_max_epu32(most, _mm256_and_si256(v, magnitude));
                _mm256_storeu_si256((__m256i *)(void *)(val + c), _mm256_permutevar8x32_epi32(v, order));
            }
            c += (size_t)_mm_popcnt_u32(m);
        }
    }
    _mm256_storeu_si256((__m256i *)(void *)lanes, most);
    for (j = 0; j < 8; j++)
        *top = lanes[j] > *top ? lanes[j] : *top;
    *count = c;
    return w - first;
}

DR_TARGET_AVX512 size_t dr_randomk_write_avx512(const uint64_t *bits, size_t first, size_t end, const float *x,
                                                uint32_t *idx, float *val, size_t room, size_t *count,
                                                uint32_t *top)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
    __m512i most = _mm512_setzero_si512();
    size_t w, c = 0;
    uint32_t top_here;
    for (w = first; w < end && c + 64 <= room; w++) {
        uint64_t word = bits[w];
        unsigned q;
        for (q = 0; q < 4 && (word != 0 || x != NULL); q++, word >>= 16) {
            size_t at = w * 64u + 16u * q;
            __mmask16 m = (__mmask16)word;
            __m512i index = _mm512_add_epi32(lane, _mm512_set1_epi32((int)at));
            _mm512_storeu_si512(idx + c, _mm512_maskz_compress_epi32(m, index));
            if (x != NULL) {
                __m512i v = _mm512_loadu_si512(x + at);
                most = _mm512_max_epu32(most, _mm512_and_si512(v, magnitude));
                _mm512_storeu_si512(val + c, _mm512_maskz_compress_epi32(m, v));
            }
            c += (size_t)_mm_popcnt_u32(m);
        }
    }
    top_here = (uint32_t)_mm512_reduce_max_epu32(most);
    *top = top_here > *top ? top_here : *top;
    *count = c;
    return w - first;
}
#endif
