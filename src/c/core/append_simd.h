/* Internal: appending the selected lanes of a vector to index and value arrays, shared by
 * the candidate sweeps of top-k (select/topk_simd.c) and adaq (sparsify/adaq_simd.c). */
#ifndef DR_APPEND_SIMD_H
#define DR_APPEND_SIMD_H

#include "simd_config.h"
#include "lane_tables.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Appends the lanes of m, in lane order, of `lanes` to idx and of v to val (both with
 * room for 16 past the end: lanes beyond the count are written too, to be overwritten
 * by the next append) and returns how many. Compressed in registers and stored whole (a
 * compressing store to memory is slow on some cores); only the low halves when they hold
 * every lane, as almost always at a few percent: a quarter off a sweep's time on the
 * development machine (AMD Zen 5), fewer cache lines written and crossed. val may be
 * NULL (a constant, so the inlined code keeps no test): the indices alone. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE unsigned dr_append_avx512(__mmask16 m, __m512i lanes, __m512i v,
                                                          uint32_t *idx, void *val)
{
    __m512i ci = _mm512_maskz_compress_epi32(m, lanes);
    __m512i cv = val != NULL ? _mm512_maskz_compress_epi32(m, v) : ci;
    unsigned k = (unsigned)_mm_popcnt_u32(m);
    if (k <= 8) {
        _mm256_storeu_si256((__m256i *)(void *)idx, _mm512_castsi512_si256(ci));
        if (val != NULL)
            _mm256_storeu_si256((__m256i *)val, _mm512_castsi512_si256(cv));
    } else {
        _mm512_storeu_si512(idx, ci);
        if (val != NULL)
            _mm512_storeu_si512(val, cv);
    }
    return k;
}

/* As dr_append_avx512 for the 8 lanes of an AVX2 vector (m: 8 bits), the lanes packed by
 * a permutation from dr_pack_lanes8 and stored whole: no branch per lane, where walking
 * the mask's bits mispredicted on every other candidate at ratios of a few percent and
 * more. (Where candidates are rare, 0.1%, a test for none before the append saved up to
 * a tenth of a sweep; choosing per block between the two cost about what it saved.)
 * Room for 8 past the end of idx and val. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE unsigned dr_append_avx2(unsigned m, __m256i lanes, __m256i v, uint32_t *idx,
                                                      void *val)
{
    __m256i order = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)dr_pack_lanes8[m]));
    _mm256_storeu_si256((__m256i *)(void *)idx, _mm256_permutevar8x32_epi32(lanes, order));
    if (val != NULL)
        _mm256_storeu_si256((__m256i *)val, _mm256_permutevar8x32_epi32(v, order));
    return (unsigned)__builtin_popcount(m);
}
#endif

#endif
