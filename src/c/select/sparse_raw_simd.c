/* The raw sparse frame's bitmap with AVX-512 and AVX2 (sparse_raw_simd.h): built from 16
 * indices a step (AVX-512), and decoded 16 or 8 positions a step, the next
 * popcount(bits) values expanded into the lanes whose bits are set (AVX2 has no expand:
 * a permutation from a table, lane_tables.h). */
#include "sparse_raw_simd.h"
#include "lane_tables.h"
#include "stream_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX512 size_t dr_bitmap_set_avx512(const uint32_t *idx, size_t r, size_t len, uint8_t *bits)
{
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1), low5 = _mm512_set1_epi32(31);
    const __m512i limit = _mm512_set1_epi32((int)(uint32_t)(len / 4u > UINT32_MAX / 32u ? UINT32_MAX : len / 4u * 32u));
    /* Lane 0 of the vector after idx's last: above every word index (< 2^27). */
    const __m512i beyond = _mm512_set1_epi32(-1);
    __m512i before = _mm512_set1_epi32(-1); /* lane 15: the index before the vector's first */
    uint32_t word_at[16], sum_at[16];
    size_t j;
    for (j = 0; j + 16 <= r; j += 16) {
        __m512i i = _mm512_loadu_si512((const void *)(idx + j)), w = _mm512_srli_epi32(i, 5), s;
        /* Each lane against the one before (lane 0 against the last vector's lane 15, or
         * nothing before the first): strictly above it, and inside the whole words. */
        __m512i prior = _mm512_alignr_epi32(i, before, 15);
        __mmask16 ok = _mm512_cmpgt_epu32_mask(i, prior) | (j == 0 ? (__mmask16)1 : (__mmask16)0);
        __mmask16 ends;
        unsigned k, t;
        ok &= _mm512_cmplt_epu32_mask(i, limit);
        if (ok != 0xffffu)
            break;
        /* The bits are distinct (the indices are), so the OR of a word's bits is their
         * sum: an inclusive prefix sum of the lanes' bits, then the difference between
         * the sums at each run of one word's lanes' end and at the run's before it (mod
         * 2^32, exact as each run's sum is below 2^32). */
        s = _mm512_sllv_epi32(one, _mm512_and_si512(i, low5));
        s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 15));
        s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 14));
        s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 12));
        s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 8));
        ends = _mm512_cmpneq_epi32_mask(w, _mm512_alignr_epi32(beyond, w, 1));
        s = _mm512_maskz_compress_epi32(ends, s);
        s = _mm512_sub_epi32(s, _mm512_alignr_epi32(s, zero, 15));
        _mm512_storeu_si512((void *)sum_at, s);
        _mm512_storeu_si512((void *)word_at, _mm512_maskz_compress_epi32(ends, w));
        k = (unsigned)_mm_popcnt_u32(ends);
        for (t = 0; t < k; t++) {
            uint32_t word;
            memcpy(&word, bits + 4u * word_at[t], 4);
            word |= sum_at[t];
            memcpy(bits + 4u * word_at[t], &word, 4);
        }
        before = i;
    }
    return j;
}

/* dr_bitmap_apply_avx512 for one mode: a constant where inlined, so its branches fold.
 * `stream`: the whole dense tensor is written (DR_APPLY_ZERO_THEN_WRITE) past the caches
 * (stream_simd.h's rule), as the quantisers' decoders write theirs. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) size_t
apply_mode(const uint8_t *bits, size_t n, float *dense, int mode, const uint8_t **values, uint32_t *nonfinite,
           int stream)
{
    const __m512i exponent = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x00400000);
    const uint8_t *vp = *values;
    size_t i, end = n - n % 16u;
    __mmask16 inf_or_nan = 0;
    for (i = 0; i < end; i += 16) {
        uint16_t m;
        unsigned k;
        __m512 e;
        memcpy(&m, bits + i / 8u, 2);
        k = (unsigned)_mm_popcnt_u32(m);
        /* A masked load: the values' section may end within the vector. */
        e = _mm512_maskz_expand_ps(m, _mm512_maskz_loadu_ps((__mmask16)((1u << k) - 1u), vp));
        if (mode == DR_APPLY_ZERO_THEN_WRITE) {
            dr_store16_avx512(dense + i, e, stream);
        } else {
            /* Every lane stored, the unset ones as they were: a masked store across two
             * lines is slow on Zen 4 (stream_simd.h). */
            __m512 d = _mm512_loadu_ps(dense + i);
            if (mode == DR_APPLY_ADD) {
                /* dense's NaN kept where it is one (sparse_raw.c's add_to). */
                __mmask16 nan = _mm512_mask_cmp_ps_mask(m, d, d, _CMP_UNORD_Q);
                d = _mm512_mask_mov_ps(_mm512_mask_add_ps(d, m, d, e), nan,
                                       _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(d), quiet)));
                inf_or_nan |= _mm512_mask_cmpeq_epi32_mask(m, _mm512_and_si512(_mm512_castps_si512(d), exponent),
                                                           exponent);
            } else {
                d = _mm512_mask_mov_ps(d, m, e);
            }
            _mm512_storeu_ps(dense + i, d);
        }
        vp += 4u * k;
    }
    *values = vp;
    *nonfinite |= inf_or_nan != 0;
    return end;
}

DR_TARGET_AVX512 size_t dr_bitmap_apply_avx512(const uint8_t *bits, size_t n, float *dense, int mode,
                                               const uint8_t **values, uint32_t *nonfinite, int stream)
{
    switch (mode) {
    case DR_APPLY_ADD: return apply_mode(bits, n, dense, DR_APPLY_ADD, values, nonfinite, 0);
    case DR_APPLY_ZERO_THEN_WRITE: return apply_mode(bits, n, dense, DR_APPLY_ZERO_THEN_WRITE, values, nonfinite, stream);
    default: return apply_mode(bits, n, dense, DR_APPLY_WRITE, values, nonfinite, 0);
    }
}
/* dr_bitmap_set_avx512 with AVX2, 8 indices a step: the same prefix sums and run ends,
 * whose words are then taken one by one from the mask of ends (AVX2 has no compress).
 * AVX2 compares signed only: the indices are compared with their top bits flipped. */
DR_TARGET_AVX2 size_t dr_bitmap_set_avx2(const uint32_t *idx, size_t r, size_t len, uint8_t *bits)
{
    const __m256i one = _mm256_set1_epi32(1), low5 = _mm256_set1_epi32(31), top = _mm256_set1_epi32((int)0x80000000u);
    const __m256i limit = _mm256_set1_epi32(
        (int)((len / 4u > UINT32_MAX / 32u ? UINT32_MAX : (uint32_t)(len / 4u * 32u)) ^ 0x80000000u));
    const __m256i up1 = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6), down1 = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    uint32_t word_at[8], sum_at[8], before = 0;
    size_t j;
    for (j = 0; j + 8 <= r; j += 8) {
        __m256i i = _mm256_loadu_si256((const __m256i *)(const void *)(idx + j)), flipped = _mm256_xor_si256(i, top);
        __m256i w = _mm256_srli_epi32(i, 5), s, prior, carry;
        unsigned ends, ascending, inside, sum_before = 0;
        /* Each lane above the one before (lane 0 above the last vector's lane 7, or
         * nothing before the first), and inside the whole words. */
        prior = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(flipped, up1),
                                   _mm256_set1_epi32((int)(before ^ 0x80000000u)), 1);
        ascending = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(flipped, prior)));
        inside = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(limit, flipped)));
        if (((ascending | (j == 0 ? 1u : 0u)) & inside) != 0xffu)
            break;
        /* The inclusive prefix sum of the lanes' bits: within each half, then the low
         * half's total (its lane 3) added to the high half. */
        s = _mm256_sllv_epi32(one, _mm256_and_si256(i, low5));
        s = _mm256_add_epi32(s, _mm256_slli_si256(s, 4));
        s = _mm256_add_epi32(s, _mm256_slli_si256(s, 8));
        carry = _mm256_shuffle_epi32(s, 0xff);
        s = _mm256_add_epi32(s, _mm256_permute2x128_si256(carry, carry, 0x08));
        ends = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(w, _mm256_permutevar8x32_epi32(w, down1))));
        ends = (~ends & 0x7fu) | 0x80u;
        _mm256_storeu_si256((__m256i *)(void *)sum_at, s);
        _mm256_storeu_si256((__m256i *)(void *)word_at, w);
        for (; ends != 0; ends &= ends - 1u) {
            unsigned l = (unsigned)__builtin_ctz(ends);
            uint32_t word;
            memcpy(&word, bits + 4u * word_at[l], 4);
            word |= sum_at[l] - sum_before;
            memcpy(bits + 4u * word_at[l], &word, 4);
            sum_before = sum_at[l];
        }
        before = idx[j + 7];
    }
    return j;
}

/* dr_bitmap_apply_avx2 for one mode, as apply_mode above. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) size_t
apply_mode_avx2(const uint8_t *bits, size_t n, float *dense, int mode, const uint8_t **values, uint32_t *nonfinite,
                int stream)
{
    const __m256i exponent = _mm256_set1_epi32(0x7f800000), seven = _mm256_set1_epi32(7);
    const __m256i quiet = _mm256_set1_epi32(0x00400000);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const uint8_t *vp = *values;
    size_t i, end = n - n % 8u;
    __m256i inf_or_nan = _mm256_setzero_si256();
    for (i = 0; i < end; i += 8) {
        unsigned m = bits[i / 8u], k = (unsigned)_mm_popcnt_u32(m);
        __m256i order = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)dr_expand_lanes8[m]));
        __m256i unset = _mm256_cmpgt_epi32(order, seven);
        /* A masked load: the values' section may end within the vector. */
        __m256 v = _mm256_maskload_ps((const float *)(const void *)vp, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), lane));
        __m256 e = _mm256_permutevar8x32_ps(v, order);
        if (mode == DR_APPLY_ZERO_THEN_WRITE) {
            dr_store8_avx2(dense + i, _mm256_andnot_ps(_mm256_castsi256_ps(unset), e), stream);
        } else {
            __m256 d = _mm256_loadu_ps(dense + i);
            if (mode == DR_APPLY_ADD) {
                __m256 sum = _mm256_add_ps(d, e), nan = _mm256_cmp_ps(d, d, _CMP_UNORD_Q);
                sum = _mm256_blendv_ps(sum, _mm256_or_ps(d, _mm256_castsi256_ps(quiet)), nan);
                d = _mm256_blendv_ps(sum, d, _mm256_castsi256_ps(unset));
                inf_or_nan = _mm256_or_si256(
                    inf_or_nan, _mm256_andnot_si256(unset, _mm256_cmpeq_epi32(
                                                               _mm256_and_si256(_mm256_castps_si256(d), exponent), exponent)));
            } else {
                d = _mm256_blendv_ps(e, d, _mm256_castsi256_ps(unset));
            }
            _mm256_storeu_ps(dense + i, d);
        }
        vp += 4u * k;
    }
    *values = vp;
    *nonfinite |= !_mm256_testz_si256(inf_or_nan, inf_or_nan);
    return end;
}

DR_TARGET_AVX2 size_t dr_bitmap_apply_avx2(const uint8_t *bits, size_t n, float *dense, int mode,
                                           const uint8_t **values, uint32_t *nonfinite, int stream)
{
    switch (mode) {
    case DR_APPLY_ADD: return apply_mode_avx2(bits, n, dense, DR_APPLY_ADD, values, nonfinite, 0);
    case DR_APPLY_ZERO_THEN_WRITE: return apply_mode_avx2(bits, n, dense, DR_APPLY_ZERO_THEN_WRITE, values, nonfinite, stream);
    default: return apply_mode_avx2(bits, n, dense, DR_APPLY_WRITE, values, nonfinite, 0);
    }
}
#endif
