/* AVX2 and AVX-512 kernels of dr_topk_select.
 *
 * The candidate sweeps: the magnitude keys of a vector
 * compared with the threshold's, then the passing lanes' indices and values appended in
 * lane order (AVX-512: compressed in registers and stored whole, the count advanced by
 * the mask's popcount, no branch per lane; AVX2: packed by a permutation from a table and
 * stored whole).
 *
 * Both also find which keys match a radix level's prefix (the lower levels) and write
 * the answers (the last pass) a vector at a time: a compare and a compress (AVX2: a
 * permutation) per 16 (8) candidates, where the scalar loops take a few instructions per
 * candidate. */
#include "deepreduce.h"
#include "topk_simd.h"
#include "append_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Entries per batch of the level kernels: a batch's keys that match the prefix are
 * appended to a buffer without a branch per vector, then counted, where a test per
 * vector mispredicted on most vectors at the candidates' first lower level. */
#define LEVEL_BATCH 2048u

/* The magnitude keys of x[0..8) as topk.c's magnitude_key: NaN ranks as zero. */
DR_TARGET_AVX2 static inline __m256i magnitude_keys_avx2(const float *x)
{
    __m256i key = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)x),
                                   _mm256_set1_epi32(0x7fffffff));
    return _mm256_and_si256(key, _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800001), key));
}

DR_TARGET_AVX2 size_t dr_topk_candidates_avx2(const float *x, size_t begin, size_t n, uint32_t tkey,
                                              uint32_t *idx, float *val, size_t cap, size_t *count,
                                              uint32_t *top)
{
    /* key >= tkey <=> key > tkey - 1; not NaN <=> key < 0x7f800001. Keys are below 2^31,
     * so the signed compares are exact. */
    const __m256i below = _mm256_set1_epi32((int)tkey - 1), nan_floor = _mm256_set1_epi32(0x7f800001);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), step = _mm256_set1_epi32(8);
    __m256i lanes = _mm256_add_epi32(_mm256_set1_epi32((int)begin), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i most = _mm256_setzero_si256();
    uint32_t swept[8], j;
    size_t i = begin, c = *count;
    for (; i + 8 <= n && c + 8 <= cap; i += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        dr_read_ahead(x + i);
        __m256i key = _mm256_and_si256(v, abs_mask);
        __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(key, below), _mm256_cmpgt_epi32(nan_floor, key));
        most = _mm256_max_epu32(most, key);
        c += dr_append_avx2((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ok)), lanes, v, idx + c, val + c);
        lanes = _mm256_add_epi32(lanes, step);
    }
    _mm256_storeu_si256((__m256i *)(void *)swept, most);
    for (j = 0; j < 8; j++)
        *top = swept[j] > *top ? swept[j] : *top;
    *count = c;
    return i;
}

DR_TARGET_AVX2 size_t dr_topk_write_avx2(const uint32_t *cand_idx, const float *cand_val, size_t count, size_t k,
                                         uint32_t kth, size_t ties, uint32_t *idx_out, float *val_out, size_t *out,
                                         size_t *ties_taken)
{
    /* Keys and kth are below 2^31 (NaN's key is 0), so the signed compares are exact. */
    const __m256i threshold = _mm256_set1_epi32((int)kth), step = _mm256_set1_epi32(8);
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t i, o = *out, tied = *ties_taken;
    for (i = 0; i + 8 <= count && o + 8 <= k; i += 8) {
        __m256i key = magnitude_keys_avx2(cand_val + i), index;
        unsigned taken, equal;
        taken = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, threshold)));
        equal = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(key, threshold)));
        for (; equal; equal &= equal - 1u, tied++) /* ties are rare: their lanes one by one */
            if (tied < ties)
                taken |= equal & (0u - equal);
        index = cand_idx != NULL ? _mm256_loadu_si256((const __m256i *)(const void *)(cand_idx + i)) : lanes;
        o += dr_append_avx2(taken, index, _mm256_loadu_si256((const __m256i *)(const void *)(cand_val + i)),
                            idx_out + o, val_out != NULL ? (void *)(val_out + o) : NULL);
        lanes = _mm256_add_epi32(lanes, step);
    }
    *out = o;
    *ties_taken = tied;
    return i;
}

DR_TARGET_AVX2 size_t dr_topk_level_avx2(const float *x, size_t n, unsigned shift, uint32_t bucket_mask,
                                         uint32_t above_mask, uint32_t prefix, uint32_t *hist)
{
    const __m256i above = _mm256_set1_epi32((int)above_mask), want = _mm256_set1_epi32((int)prefix);
    uint32_t matched[LEVEL_BATCH + 8];
    size_t i = 0, c, j;
    while (i + 8 <= n) {
        size_t end = n - i > LEVEL_BATCH ? i + LEVEL_BATCH : n;
        for (c = 0; i + 8 <= end; i += 8) {
            __m256i key = magnitude_keys_avx2(x + i);
            __m256i match = _mm256_cmpeq_epi32(_mm256_and_si256(key, above), want);
            c += dr_append_avx2((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(match)), key, key, matched + c,
                                NULL);
        }
        for (j = 0; j < c; j++)
            hist[(matched[j] >> shift) & bucket_mask]++;
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_topk_candidates_avx512(const float *x, size_t begin, size_t n, uint32_t tkey,
                                                  uint32_t *idx, float *val, size_t cap, size_t *count,
                                                  uint32_t *top)
{
    const __m512i below = _mm512_set1_epi32((int)tkey - 1), nan_floor = _mm512_set1_epi32(0x7f800001);
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), step = _mm512_set1_epi32(16);
    __m512i lanes = _mm512_add_epi32(_mm512_set1_epi32((int)begin),
                                     _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i most = _mm512_setzero_si512();
    uint32_t swept_top;
    size_t i = begin, c = *count;
    for (; i + 16 <= n && c + 16 <= cap; i += 16) {
        __m512i v = _mm512_loadu_si512(x + i);
        dr_read_ahead(x + i);
        __m512i key = _mm512_and_si512(v, abs_mask);
        __mmask16 m = _mm512_cmpgt_epi32_mask(key, below) & _mm512_cmpgt_epi32_mask(nan_floor, key);
        most = _mm512_max_epu32(most, key);
        c += dr_append_avx512(m, lanes, v, idx + c, val + c);
        lanes = _mm512_add_epi32(lanes, step);
    }
    swept_top = (uint32_t)_mm512_reduce_max_epu32(most);
    *top = swept_top > *top ? swept_top : *top;
    *count = c;
    return i;
}
/* The magnitude keys of x[0..16) as topk.c's magnitude_key: NaN ranks as zero. */
DR_TARGET_AVX512 static inline __m512i magnitude_keys(const float *x)
{
    __m512i key = _mm512_and_si512(_mm512_loadu_si512(x), _mm512_set1_epi32(0x7fffffff));
    return _mm512_maskz_mov_epi32(_mm512_cmple_epu32_mask(key, _mm512_set1_epi32(0x7f800000)), key);
}

DR_TARGET_AVX512 size_t dr_topk_top_level_avx512(const float *x, size_t n, unsigned shift, uint32_t base,
                                                 uint32_t *hist)
{
    const __m512i window = _mm512_set1_epi32((int)base), one = _mm512_set1_epi32(1);
    __m512i count[TOP_WINDOW];
    uint32_t bucket[16];
    size_t i;
    unsigned j;
    for (j = 0; j < TOP_WINDOW; j++)
        count[j] = _mm512_setzero_si512();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512i b = _mm512_sub_epi32(_mm512_srli_epi32(magnitude_keys(x + i), shift), window);
        __mmask16 outside = _mm512_cmpge_epu32_mask(b, _mm512_set1_epi32(TOP_WINDOW));
        for (j = 0; j < TOP_WINDOW; j++)
            count[j] = _mm512_mask_add_epi32(count[j], _mm512_cmpeq_epi32_mask(b, _mm512_set1_epi32((int)j)),
                                             count[j], one);
        if (outside) {
            unsigned m = outside;
            _mm512_storeu_si512(bucket, b);
            for (; m; m &= m - 1u)
                hist[base + bucket[__builtin_ctz(m)]]++;
        }
    }
    for (j = 0; j < TOP_WINDOW; j++)
        hist[base + j] += (uint32_t)_mm512_reduce_add_epi32(count[j]);
    return i;
}

DR_TARGET_AVX512 size_t dr_topk_level_avx512(const float *x, size_t n, unsigned shift, uint32_t bucket_mask,
                                             uint32_t above_mask, uint32_t prefix, uint32_t *hist)
{
    const __m512i above = _mm512_set1_epi32((int)above_mask), want = _mm512_set1_epi32((int)prefix);
    uint32_t matched[LEVEL_BATCH + 16];
    size_t i = 0, c, j;
    while (i + 16 <= n) {
        size_t end = n - i > LEVEL_BATCH ? i + LEVEL_BATCH : n;
        for (c = 0; i + 16 <= end; i += 16) {
            __m512i key = magnitude_keys(x + i);
            __mmask16 m = _mm512_cmpeq_epi32_mask(_mm512_and_si512(key, above), want);
            c += dr_append_avx512(m, key, key, matched + c, NULL);
        }
        for (j = 0; j < c; j++)
            hist[(matched[j] >> shift) & bucket_mask]++;
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_topk_write_avx512(const uint32_t *cand_idx, const float *cand_val, size_t count, size_t k,
                                             uint32_t kth, size_t ties, uint32_t *idx_out, float *val_out,
                                             size_t *out, size_t *ties_taken)
{
    const __m512i threshold = _mm512_set1_epi32((int)kth), lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                                                   11, 12, 13, 14, 15);
    size_t i, o = *out, tied = *ties_taken;
    for (i = 0; i + 16 <= count && o + 16 <= k; i += 16) {
        __m512i index;
        __m512i key = magnitude_keys(cand_val + i);
        __mmask16 taken = _mm512_cmpgt_epu32_mask(key, threshold);
        __mmask16 equal = _mm512_cmpeq_epu32_mask(key, threshold);
        if (equal) {
            /* the lowest (ties - tied) of the equal lanes, as the scalar loop takes them */
            size_t left = tied < ties ? ties - tied : 0;
            uint32_t first = left >= 16 ? 0xffffu : (1u << left) - 1u;
            taken |= (__mmask16)_pdep_u32(first, equal);
            tied += (size_t)_mm_popcnt_u32(equal);
        }
        index = cand_idx != NULL ? _mm512_loadu_si512(cand_idx + i)
                                 : _mm512_add_epi32(_mm512_set1_epi32((int)i), lanes);
        _mm512_storeu_si512(idx_out + o, _mm512_maskz_compress_epi32(taken, index));
        if (val_out != NULL)
            _mm512_storeu_ps(val_out + o, _mm512_maskz_compress_ps(taken, _mm512_loadu_ps(cand_val + i)));
        o += (size_t)_mm_popcnt_u32(taken);
    }
    *out = o;
    *ties_taken = tied;
    return i;
}
#endif
