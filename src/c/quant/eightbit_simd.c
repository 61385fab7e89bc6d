/* The 8-bit encoder's codes. AVX-512 (with VBMI): the guess of eightbit_simd.h, a few
 * operations and one table read by byte permutes per 16 elements. AVX2: the bucket table
 * (eightbit.c, code_buckets) on 8 lanes: the bucket from the magnitude's top bits, its
 * entry (the table, at most 12 KB, stays in L1), and the low bits' carry into the code.
 * Both exact by construction, so the same bytes as the scalar loop. The AVX2 decoder's
 * values past the caches: the scalar loop's loads, stored past the caches. */
#include "deepreduce.h"
#include "eightbit_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX512_VBMI size_t dr_eightbit_guess_avx512(const float *x, size_t n, const dr_eightbit_guess *g,
                                                      uint8_t *codes)
{
    const __m512i abs_bits = _mm512_set1_epi32(0x7fffffff), mantissa = _mm512_set1_epi32(0x7fffff);
    const __m512i binade0 = _mm512_set1_epi32((int)g->binade0), one = _mm512_set1_epi32(1);
    const __m512i split_lo = _mm512_loadu_si512(g->split), split_hi = _mm512_loadu_si512(g->split + 16);
    const __m512 slope = _mm512_loadu_ps(g->slope), offset = _mm512_loadu_ps(g->offset);
    /* Negative x coded nonzero: the patterns from the sign bit plus bound[1] up. */
    const __m512i negative_coded = _mm512_set1_epi32((int)(0x80000000u | g->next[0]));
    /* Byte 0 of each lane copied into its four bytes. */
    const __m512i spread = _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0x00000000);
    uint8_t bytes[4][128];
    __m512i plane[8];
    size_t i = 0;
    int j, c;
    /* next[] as four 128-byte planes (byte j of each entry), two registers each. */
    for (j = 0; j < 4; j++)
        for (c = 0; c < 128; c++)
            bytes[j][c] = (uint8_t)(g->next[c] >> (8 * j));
    for (j = 0; j < 4; j++) {
        plane[2 * j] = _mm512_loadu_si512(bytes[j]);
        plane[2 * j + 1] = _mm512_loadu_si512(bytes[j] + 64);
    }
    for (; i + 16 <= n; i += 16) {
        dr_read_ahead(x + i);
        __m512i u = _mm512_loadu_si512(x + i), mag = _mm512_and_si512(u, abs_bits);
        /* The binade, clamped at 0 by a saturating subtract on the low halves (the high
         * halves are 0 - 0), then the decade and the estimate. */
        __m512i e = _mm512_subs_epu16(_mm512_srli_epi32(mag, 23), binade0);
        __m512i z = _mm512_srli_epi32(_mm512_sub_epi32(_mm512_permutex2var_epi32(split_lo, e, split_hi),
                                                       _mm512_and_si512(mag, mantissa)),
                                      24);
        __m512i est = _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_castsi512_ps(mag), _mm512_permutexvar_ps(z, slope),
                                                          _mm512_permutexvar_ps(z, offset)));
        /* next[est], a byte at a time: each permute reads byte j of every lane's entry
         * (the index bytes still hold est) into that lane's byte j. */
        __m512i bound = _mm512_shuffle_epi8(est, spread), code;
        bound = _mm512_mask2_permutex2var_epi8(plane[0], bound, 0x1111111111111111ull, plane[1]);
        bound = _mm512_mask2_permutex2var_epi8(plane[2], bound, 0x2222222222222222ull, plane[3]);
        bound = _mm512_mask2_permutex2var_epi8(plane[4], bound, 0x4444444444444444ull, plane[5]);
        bound = _mm512_mask2_permutex2var_epi8(plane[6], bound, 0x8888888888888888ull, plane[7]);
        code = _mm512_mask_add_epi32(est, _mm512_cmpge_epu32_mask(mag, bound), est, one);
        code = _mm512_mask_or_epi32(code, _mm512_cmpge_epu32_mask(u, negative_coded), code, _mm512_set1_epi32(0x80));
        _mm_storeu_si128((__m128i *)(codes + i), _mm512_cvtepi32_epi8(code));
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_eightbit_codes_avx2(const float *x, size_t n, const uint32_t *entry,
                                             uint32_t base, uint8_t *codes)
{
    const __m256i abs_bits = _mm256_set1_epi32(0x7fffffff), low_bits = _mm256_set1_epi32(0xffff);
    const __m256i vbase = _mm256_set1_epi32((int)base), step = _mm256_set1_epi32(127);
    uint32_t b[8];
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        dr_read_ahead(x + i);
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(x + i)), mag = _mm256_and_si256(u, abs_bits);
        __m256i e, code;
        /* The buckets, clamped at 0 by a saturating subtract on the low halves; their
         * entries read by eight plain loads, which this core does in a third of a gather's
         * time. */
        _mm256_storeu_si256((__m256i *)(void *)b, _mm256_subs_epu16(_mm256_srli_epi32(mag, 16), vbase));
        e = _mm256_setr_epi32((int)entry[b[0]], (int)entry[b[1]], (int)entry[b[2]], (int)entry[b[3]],
                              (int)entry[b[4]], (int)entry[b[5]], (int)entry[b[6]], (int)entry[b[7]]);
        code = _mm256_srli_epi32(_mm256_add_epi32(e, _mm256_and_si256(mag, low_bits)), 16);
        /* Sign bit for nonzero codes of negative x: bit 7 of code + 127 is set for codes
         * 1..127, and the arithmetic shift of x spreads its sign. */
        code = _mm256_or_si256(code, _mm256_and_si256(_mm256_add_epi32(code, step),
                                                      _mm256_and_si256(_mm256_srai_epi32(u, 31), _mm256_set1_epi32(0x80))));
        {
            __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
            _mm_storel_epi64((__m128i *)(codes + i), _mm_packus_epi16(words, words));
        }
    }
    return i;
}
#endif
