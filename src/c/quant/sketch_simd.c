/* The sketch's bins with SIMD: AVX-512 runs the branch-free binary search of find_bin()
 * in sketch.c, one lane per element, the steps and compares the scalar code's, so the
 * bins are the same, on the keys' top 16 bits where the edges allow it (below); AVX2
 * reaches the same bins by a B-tree (below). All keep the edges in registers: a gather
 * per step ran slower than the scalar search on the development machine's AMD (Zen 5)
 * core. */
#include "deepreduce.h"
#include "sketch_simd.h"
#include "stream_simd.h"
#include "lookup_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Vectors searched together (for up to 128 bins; half as many up to 256, whose level
 * tables take more registers). */
#define SEARCH_WAYS 8

/* The edge each lane compares with at the level of `count` candidates, from the level's
 * table in registers t[0..8) (count 1..128): permutes over 32 entries, then selects by
 * the index's higher bits. */
DR_TARGET_AVX512 static __m512i level_edge(const __m512i *t, uint32_t count, __m512i idx)
{
    __m512i e;
    if (count <= 16u)
        return _mm512_permutexvar_epi32(idx, t[0]);
    e = _mm512_permutex2var_epi32(t[0], idx, t[1]);
    if (count >= 64u)
        e = _mm512_mask_mov_epi32(e, _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32)),
                                  _mm512_permutex2var_epi32(t[2], idx, t[3]));
    if (count == 128u) {
        __m512i f = _mm512_mask_mov_epi32(_mm512_permutex2var_epi32(t[4], idx, t[5]),
                                          _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32)),
                                          _mm512_permutex2var_epi32(t[6], idx, t[7]));
        e = _mm512_mask_mov_epi32(e, _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64)), f);
    }
    return e;
}

/* The bins of `ways` vectors of x at x[0..16 ways), stored to index (width 1 or 2). The
 * search runs over `levels` = log2(p) levels; where the call passes constants, the loops
 * unroll, each level's table stays in registers and level_edge's branches fold (a loop
 * over a run-time level count reloads the tables and branches per level). The vectors'
 * searches are independent chains, so several interleave where one waited on each
 * level's permute and compare. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) void
search(const float *x, __m512i regs[8][8], unsigned levels, uint32_t p, uint32_t last, unsigned ways,
       uint8_t *index, size_t width)
{
    const __m512i top = _mm512_set1_epi32((int)0x80000000u), cap = _mm512_set1_epi32((int)last);
    __m512i key[SEARCH_WAYS], lo[SEARCH_WAYS];
    unsigned lv, w;
    for (w = 0; w < ways; w++) {
        __m512i u = _mm512_loadu_si512((const void *)(x + 16 * w));
        key[w] = _mm512_xor_si512(u, _mm512_or_si512(_mm512_srai_epi32(u, 31), top));
        lo[w] = _mm512_setzero_si512();
    }
    for (lv = 0; lv < levels; lv++) {
        const __m512i step = _mm512_set1_epi32((int)(p >> (lv + 1)));
        for (w = 0; w < ways; w++) {
            __m512i e = level_edge(regs[lv], 1u << lv, _mm512_srli_epi32(lo[w], levels - lv));
            lo[w] = _mm512_mask_add_epi32(lo[w], _mm512_cmple_epu32_mask(e, key[w]), lo[w], step);
        }
    }
    for (w = 0; w < ways; w++) {
        __m512i bins = _mm512_min_epu32(lo[w], cap);
        if (width == 1)
            _mm_storeu_si128((__m128i *)(index + 16 * w), _mm512_cvtepi32_epi8(bins));
        else
            _mm256_storeu_si256((__m256i *)(index + 32 * w), _mm512_cvtepi32_epi16(bins));
    }
}

/* The bins of the whole vectors of x, `ways` vectors at a time while they last. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) size_t
bins_body(const float *x, size_t n, __m512i regs[8][8], unsigned levels, unsigned ways, uint32_t p,
          uint32_t last, uint8_t *index, size_t width)
{
    size_t i = 0, end = n - n % 16;
    for (; i + 16 * ways <= end; i += 16 * ways) {
        unsigned w;
        for (w = 0; w < ways; w++)
            dr_read_ahead(x + i + 16 * w);
        search(x + i, regs, levels, p, last, ways, index + width * i, width);
    }
    for (; i < end; i += 16)
        search(x + i, regs, levels, p, last, 1, index + width * i, width);
    return end;
}

/* ---- AVX-512 on the keys' top 16 bits: 32 lanes per vector where the search above has
 * 16.
 *
 * The binary search runs on the 16-bit prefixes of the keys and the edges, and finds
 * lo' = the number of edges whose prefix is <= the key's. That counts every edge below
 * the key's prefix (all < the key) and none above it (all > the key); it is off only for
 * edges with the key's own prefix, which it counts whether or not their low halves
 * exceed the key's. Where no two real edges share a prefix, the one such edge can only
 * be edge lo' - 1, so lo = lo' - [prefix(e) == prefix(k) and low(e) > low(k)] for
 * e = edges[lo' - 1]: two more lookups (the prefix and the low half of edge lo' - 1) and
 * two compares. The padding edges (UINT32_MAX) are all alike, so their prefix, all ones,
 * may belong to no real edge; a key with that prefix (a NaN's) ends at lo' = p - 1 less
 * at most one, which is >= last where padding exists, and capped to last as find_bin
 * caps it. Edges that break the rule (duplicates: a tensor of many exact zeros) take the
 * 32-bit search above. */

/* Prefix searches run together (8 vectors of 32 elements). */
#define PREFIX_WAYS 8
/* The deepest search on prefixes: the correction's tables take p 16-bit entries, four
 * registers each at p = 128. */
#define PREFIX_MAX_LEVELS 7u

/* Whether the prefix search gives find_bin's bins for edges[0..last) (see above): each
 * top half one edge's at most, and the largest edge's not all ones (the edges ascend). */
static int prefixes_distinct(const uint32_t *edges, uint32_t last)
{
    return dr_sketch_prefix_form(edges, last) == DR_PREFIX_SINGLE &&
           (last == 0 || edges[last - 1] >> 16 != 0xffffu);
}

/* Entry idx (< count, count <= 128) of a 16-bit table in t[0..4): one register up to 32
 * entries, then two-register permutes, blended by bit 6 of idx past 64. A one-entry
 * table is kept broadcast, so it needs no permute. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) __m512i
lookup16(const __m512i *t, uint32_t count, __m512i idx)
{
    __m512i e;
    if (count == 1u)
        return t[0];
    if (count <= 32u)
        return _mm512_permutexvar_epi16(idx, t[0]);
    e = _mm512_permutex2var_epi16(t[0], idx, t[1]);
    if (count == 128u)
        e = _mm512_mask_mov_epi16(e, _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64)),
                                  _mm512_permutex2var_epi16(t[2], idx, t[3]));
    return e;
}

/* The bins of 32 ways elements at x[0..32 ways), as bytes, from the level tables
 * level[0..levels) and the correction's tables high and low (entry t: the prefix and the
 * low half of edges[t - 1]; entry 0 has low half 0, so it never corrects). */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) void
search16(const float *x, __m512i level[][2], const __m512i *high, const __m512i *low,
         unsigned levels, uint32_t p, uint32_t last, unsigned ways, uint8_t *index)
{
    /* Word i of the result from a pair of vectors: the odd words are the floats' high
     * halves (sign, exponent, 7 mantissa bits), the even ones their low halves. */
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
                                         31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i even = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32,
                                          30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i top = _mm512_set1_epi16((short)0x8000), cap = _mm512_set1_epi16((short)last);
    __m512i key[PREFIX_WAYS], lo[PREFIX_WAYS];
    unsigned lv, w;
    for (w = 0; w < ways; w++) {
        __m512i h = _mm512_permutex2var_epi16(_mm512_loadu_si512((const void *)(x + 32 * w)), odd,
                                              _mm512_loadu_si512((const void *)(x + 32 * w + 16)));
        /* order_key's top half: all bits flipped where negative, else the sign bit set. */
        key[w] = _mm512_xor_si512(h, _mm512_or_si512(_mm512_srai_epi16(h, 15), top));
        lo[w] = _mm512_setzero_si512();
    }
    for (lv = 0; lv < levels; lv++) {
        const __m512i step = _mm512_set1_epi16((short)(p >> (lv + 1)));
        for (w = 0; w < ways; w++) {
            __m512i e = lookup16(level[lv], 1u << lv, _mm512_srli_epi16(lo[w], levels - lv));
            lo[w] = _mm512_mask_add_epi16(lo[w], _mm512_cmple_epu16_mask(e, key[w]), lo[w], step);
        }
    }
    for (w = 0; w < ways; w++) {
        /* The keys' low halves, from x again (L1) rather than held through the search:
         * the float's low half, flipped where the float is negative (key's top bit 0). */
        __m512i u = _mm512_permutex2var_epi16(_mm512_loadu_si512((const void *)(x + 32 * w)), even,
                                              _mm512_loadu_si512((const void *)(x + 32 * w + 16)));
        __m512i key_low = _mm512_ternarylogic_epi32(u, _mm512_srai_epi16(key[w], 15), u, 0x99);
        __mmask32 shared = _mm512_cmpeq_epi16_mask(lookup16(high, p, lo[w]), key[w]);
        __mmask32 above = _mm512_mask_cmpgt_epu16_mask(shared, lookup16(low, p, lo[w]), key_low);
        __m512i bins = _mm512_mask_sub_epi16(lo[w], above, lo[w], _mm512_set1_epi16(1));
        _mm256_storeu_si256((__m256i *)(void *)(index + 32 * w), _mm512_cvtepi16_epi8(_mm512_min_epu16(bins, cap)));
    }
}

/* The bins of x[0..n - n % 32) by prefixes, for p = 2^levels <= 128 (one byte each). */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) size_t
prefix_body(const float *x, size_t n, __m512i level[][2], const __m512i *high,
            const __m512i *low, unsigned levels, uint32_t p, uint32_t last, uint8_t *index)
{
    size_t i = 0, end = n - n % 32;
    for (; i + 32 * PREFIX_WAYS <= end; i += 32 * PREFIX_WAYS) {
        unsigned w;
        for (w = 0; w < 2 * PREFIX_WAYS; w++)
            dr_read_ahead(x + i + 16 * w);
        search16(x + i, level, high, low, levels, p, last, PREFIX_WAYS, index + i);
    }
    for (; i < end; i += 32)
        search16(x + i, level, high, low, levels, p, last, 1, index + i);
    return end;
}

DR_TARGET_AVX512 static size_t prefix_bins(const float *x, size_t n, const uint32_t *edges,
                                           unsigned levels, uint32_t last, uint8_t *index)
{
    const uint32_t p = 1u << levels;
    uint16_t table[PREFIX_MAX_LEVELS][64], high[128], low[128];
    __m512i level[PREFIX_MAX_LEVELS][2], high_regs[4], low_regs[4];
    unsigned lv, t;
    memset(table, 0, sizeof table);
    memset(high, 0, sizeof high);
    memset(low, 0, sizeof low);
    for (lv = 0; lv < levels; lv++) {
        uint32_t step = p >> (lv + 1);
        for (t = 0; t < (1u << lv); t++)
            table[lv][t] = (uint16_t)(edges[t * 2u * step + step - 1u] >> 16);
        level[lv][0] = lv == 0 ? _mm512_set1_epi16((short)table[0][0])
                               : _mm512_loadu_si512((const void *)table[lv]);
        level[lv][1] = _mm512_loadu_si512((const void *)(table[lv] + 32));
    }
    for (t = 1; t < p; t++) {
        high[t] = (uint16_t)(edges[t - 1] >> 16);
        low[t] = (uint16_t)edges[t - 1];
    }
    for (t = 0; t < 4; t++) {
        high_regs[t] = _mm512_loadu_si512((const void *)(high + 32 * t));
        low_regs[t] = _mm512_loadu_si512((const void *)(low + 32 * t));
    }
    /* A constant level count for each p, as below (127 bins: 7 levels). */
    switch (levels) {
    case 1: return prefix_body(x, n, level, high_regs, low_regs, 1, p, last, index);
    case 2: return prefix_body(x, n, level, high_regs, low_regs, 2, p, last, index);
    case 3: return prefix_body(x, n, level, high_regs, low_regs, 3, p, last, index);
    case 4: return prefix_body(x, n, level, high_regs, low_regs, 4, p, last, index);
    case 5: return prefix_body(x, n, level, high_regs, low_regs, 5, p, last, index);
    case 6: return prefix_body(x, n, level, high_regs, low_regs, 6, p, last, index);
    default: return prefix_body(x, n, level, high_regs, low_regs, 7, p, last, index);
    }
}

/* With p <= 256 every level's candidate edges fit in registers: at the level of step s
 * the lanes' lo is a multiple of 2s, so the edge edges[lo + s - 1] is entry lo / 2s of
 * that level's table, fetched by a permute instead of a gather. Up to 128 bins whose
 * edges allow it, the search runs on prefixes (above). */
DR_TARGET_AVX512 size_t dr_sketch_bins_avx512(const float *x, size_t n, const uint32_t *edges,
                                              uint32_t p, uint32_t last, uint8_t *index,
                                              size_t width)
{
    uint32_t table[8][128];
    __m512i regs[8][8];
    unsigned levels = 0, lv, r;
    if (p > 256u)
        return 0;
    while ((1u << levels) < p)
        levels++;
    if (levels >= 1 && levels <= PREFIX_MAX_LEVELS && prefixes_distinct(edges, last))
        return prefix_bins(x, n, edges, levels, last, index);
    for (lv = 0; lv < levels; lv++) {
        uint32_t step = p >> (lv + 1), t;
        memset(table[lv], 0, sizeof table[lv]);
        for (t = 0; t < (1u << lv); t++)
            table[lv][t] = edges[t * 2u * step + step - 1u];
        for (r = 0; r < 8u; r++)
            regs[lv][r] = _mm512_loadu_si512((const void *)(table[lv] + 16u * r));
    }
    /* A constant level count for each p, so that the loops unroll (GRACE's default of
     * 127 bins takes 7 levels). */
    switch (levels) {
    case 0: return bins_body(x, n, regs, 0, SEARCH_WAYS, p, last, index, width);
    case 1: return bins_body(x, n, regs, 1, SEARCH_WAYS, p, last, index, width);
    case 2: return bins_body(x, n, regs, 2, SEARCH_WAYS, p, last, index, width);
    case 3: return bins_body(x, n, regs, 3, SEARCH_WAYS, p, last, index, width);
    case 4: return bins_body(x, n, regs, 4, SEARCH_WAYS, p, last, index, width);
    case 5: return bins_body(x, n, regs, 5, SEARCH_WAYS, p, last, index, width);
    case 6: return bins_body(x, n, regs, 6, SEARCH_WAYS, p, last, index, width);
    case 7: return bins_body(x, n, regs, 7, SEARCH_WAYS, p, last, index, width);
    default: return bins_body(x, n, regs, 8, SEARCH_WAYS / 2, p, last, index, width);
    }
}

/* ---- AVX2: the same bins, as a B-tree of register tables.
 *
 * AVX2 has no two-register permute, so a level's table is one register (8 entries) at
 * most. The first min(levels, 3) levels of find_bin's search run as above, a permute
 * each, and leave lo at block j = lo / B of B = p / 8 edges. The rest of the search only
 * counts the edges of that block that are <= the key (the edges ascend, so the binary
 * search's answer is lo plus that count): B - 1 compares with tables T_m[j] =
 * edges[j B + m], all independent, where the binary search was a chain of levels whose
 * tables would take up to 16 permutes and 15 blends each. There is no unsigned compare
 * either, so the tables and the keys are biased by 2^31 for the signed one. */

/* The largest p the register tables take, and their count: 3 levels of 1, 2 and 4
 * entries, then B - 1 = p / 8 - 1 block tables. */
#define AVX2_MAX_P 256u
#define AVX2_TOP_LEVELS 3u
#define AVX2_TABLES (AVX2_TOP_LEVELS + AVX2_MAX_P / 8u - 1u)

/* x's order_key (sketch.c), less 2^31: the bits with the non-sign ones flipped where
 * negative. Compared signed, it orders as order_key does unsigned. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) __m256i signed_key(const float *x)
{
    __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)x);
    return _mm256_xor_si256(u, _mm256_srli_epi32(_mm256_srai_epi32(u, 31), 1));
}

/* The bins of 8 elements at x, for a search of `levels` levels (p = 2^levels). */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) __m256i
bins8_avx2(const float *x, const __m256i *tables, unsigned levels, __m256i last)
{
    const unsigned top = levels < AVX2_TOP_LEVELS ? levels : AVX2_TOP_LEVELS;
    const uint32_t block = 1u << (levels - top);
    __m256i key = signed_key(x), lo = _mm256_setzero_si256(), count, j;
    unsigned lv, m;
    for (lv = 0; lv < top; lv++) {
        __m256i e = _mm256_permutevar8x32_epi32(tables[lv], _mm256_srli_epi32(lo, (int)(levels - lv)));
        lo = _mm256_add_epi32(lo, _mm256_andnot_si256(_mm256_cmpgt_epi32(e, key),
                                                      _mm256_set1_epi32((int)(1u << (levels - lv - 1)))));
    }
    /* Each compare is -1 where the edge is above the key: count = (B - 1) + their sum. */
    j = _mm256_srli_epi32(lo, (int)(levels - top));
    count = _mm256_set1_epi32((int)(block - 1u));
    for (m = 0; m + 1 < block; m++)
        count = _mm256_add_epi32(count, _mm256_cmpgt_epi32(_mm256_permutevar8x32_epi32(tables[top + m], j), key));
    return _mm256_min_epu32(_mm256_add_epi32(lo, count), last);
}

/* Bins a then b (8 each, below 256) to index[0..16) as bytes. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) void store_bins16_avx2(__m256i a, __m256i b,
                                                                                 uint8_t *index)
{
    /* 32 -> 16 bits packs within 128-bit lanes: a0-3 b0-3 | a4-7 b4-7; put a before b. */
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm_storeu_si128((__m128i *)(void *)index,
                     _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
}

/* The bins of x[0..n - n % 16), 16 at a time (two searches interleave), as bytes. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) size_t
bins_body_avx2(const float *x, size_t n, const __m256i *tables, unsigned levels, uint32_t last,
               uint8_t *index)
{
    const __m256i cap = _mm256_set1_epi32((int)last);
    size_t i, end = n - n % 16;
    for (i = 0; i < end; i += 16) {
        dr_read_ahead(x + i);
        store_bins16_avx2(bins8_avx2(x + i, tables, levels, cap), bins8_avx2(x + i + 8, tables, levels, cap),
                          index + i);
    }
    return end;
}

DR_TARGET_AVX2 size_t dr_sketch_bins_avx2(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                                          uint32_t last, uint8_t *index)
{
    uint32_t table[AVX2_TABLES][8];
    __m256i tables[AVX2_TABLES];
    unsigned levels = 0, top, lv, t, m;
    uint32_t block;
    if (p > AVX2_MAX_P)
        return 0;
    while ((1u << levels) < p)
        levels++;
    top = levels < AVX2_TOP_LEVELS ? levels : AVX2_TOP_LEVELS;
    block = 1u << (levels - top);
    memset(table, 0, sizeof table);
    for (lv = 0; lv < top; lv++) {
        uint32_t step = p >> (lv + 1);
        for (t = 0; t < (1u << lv); t++)
            table[lv][t] = edges[t * 2u * step + step - 1u] ^ 0x80000000u;
    }
    for (m = 0; m + 1 < block; m++)
        for (t = 0; t < (1u << top); t++)
            table[top + m][t] = edges[t * block + m] ^ 0x80000000u;
    for (t = 0; t < AVX2_TABLES; t++)
        tables[t] = _mm256_loadu_si256((const __m256i *)(const void *)table[t]);
    /* A constant level count, so that the loops unroll (127 bins: 7 levels). */
    switch (levels) {
    case 0: return bins_body_avx2(x, n, tables, 0, last, index);
    case 1: return bins_body_avx2(x, n, tables, 1, last, index);
    case 2: return bins_body_avx2(x, n, tables, 2, last, index);
    case 3: return bins_body_avx2(x, n, tables, 3, last, index);
    case 4: return bins_body_avx2(x, n, tables, 4, last, index);
    case 5: return bins_body_avx2(x, n, tables, 5, last, index);
    case 6: return bins_body_avx2(x, n, tables, 6, last, index);
    case 7: return bins_body_avx2(x, n, tables, 7, last, index);
    default: return bins_body_avx2(x, n, tables, 8, last, index);
    }
}

/* The bins of 8 elements at x from a prefix table of the form `form` (constant where
 * inlined; dr_sketch_bins_table says how each reads): the table's entries by eight plain
 * loads, as the 8-bit encoder reads its buckets (a VPGATHERDD took 32 ms for 25.6M
 * elements where the loads take 26, on an AMD Zen 1 core). */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) __m256i table_bins8_avx2(const float *x,
                                                                                   const uint32_t *table,
                                                                                   int form)
{
    __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)x);
    __m256i key = _mm256_xor_si256(u, _mm256_or_si256(_mm256_srai_epi32(u, 31), _mm256_set1_epi32((int)0x80000000u)));
    __m256i low = _mm256_and_si256(key, _mm256_set1_epi32(0xffff)), entry, below;
    uint32_t slot[8];
    _mm256_storeu_si256((__m256i *)(void *)slot, _mm256_srli_epi32(key, 16));
    entry = _mm256_setr_epi32((int)table[slot[0]], (int)table[slot[1]], (int)table[slot[2]], (int)table[slot[3]],
                              (int)table[slot[4]], (int)table[slot[5]], (int)table[slot[6]], (int)table[slot[7]]);
    if (form == DR_PREFIX_SINGLE)
        return _mm256_srli_epi32(_mm256_add_epi32(entry, low), 16);
    /* -1 where the key's low half is below h: the bin t. */
    below = _mm256_cmpgt_epi32(_mm256_srli_epi32(entry, 16), low);
    return _mm256_and_si256(_mm256_blendv_epi8(_mm256_srli_epi32(entry, 8), entry, below), _mm256_set1_epi32(0xff));
}

DR_TARGET_AVX2 static inline __attribute__((always_inline)) size_t
table_body_avx2(const float *x, size_t n, const uint32_t *table, int form, uint8_t *index)
{
    size_t i, end = n - n % 16;
    for (i = 0; i < end; i += 16) {
        dr_read_ahead(x + i);
        store_bins16_avx2(table_bins8_avx2(x + i, table, form), table_bins8_avx2(x + i + 8, table, form), index + i);
    }
    return end;
}

DR_TARGET_AVX2 size_t dr_sketch_bins_table_avx2(const float *x, size_t n, const uint32_t *table, int form,
                                                uint8_t *index)
{
    return form == DR_PREFIX_SINGLE ? table_body_avx2(x, n, table, DR_PREFIX_SINGLE, index)
                                    : table_body_avx2(x, n, table, DR_PREFIX_RUNS, index);
}

/* The decoder's values: table[index[i]] from two 128-entry halves in registers (bit 7 of
 * the index picks the half). (Non-temporal stores of the output, as the sign decoders
 * use, were slower here: 5.8-6.6 against 5.2-5.5 ms for 25.6M elements.) */
DR_TARGET_AVX512 size_t dr_sketch_read_avx512(const uint8_t *index, size_t n, const float *table,
                                              float *out)
{
    const __m512i bit7 = _mm512_set1_epi32(0x80);
    __m512 low[8], high[8];
    size_t i = 0;
    int k;
    for (k = 0; k < 8; k++) {
        low[k] = _mm512_loadu_ps(table + 16 * k);
        high[k] = _mm512_loadu_ps(table + 128 + 16 * k);
    }
    for (; i + 16 <= n; i += 16) {
        __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(index + i)));
        __m512 v = dr_lookup128_avx512(low, b);
        _mm512_storeu_ps(out + i, _mm512_mask_mov_ps(v, _mm512_test_epi32_mask(b, bit7), dr_lookup128_avx512(high, b)));
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_sketch_tally_avx2(double *tally, uint32_t bins, const float *x, const uint8_t *index,
                                           size_t n)
{
    const __m256d ones = _mm256_set1_pd(1.0);
    /* Partial p's (sum, count) pairs, 16 bytes per bin. */
    char *t0 = (char *)tally, *t1 = (char *)(tally + 2u * bins), *t2 = (char *)(tally + 4u * bins);
    char *t3 = (char *)(tally + 6u * bins);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        /* The four elements' (v, 1.0) pairs from one conversion: [v0 1 | v2 1], [v1 1 | v3 1]. */
        __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d even = _mm256_unpacklo_pd(v, ones), odd = _mm256_unpackhi_pd(v, ones);
        double *s0, *s1, *s2, *s3;
        /* Keeps the four partials' bases in registers: GCC otherwise rebuilt each from
         * the first every step (7 more additions per 4 elements). */
        __asm__("" : "+r"(t0), "+r"(t1), "+r"(t2), "+r"(t3));
        s0 = (double *)(void *)(t0 + ((size_t)index[i] << 4));
        s1 = (double *)(void *)(t1 + ((size_t)index[i + 1] << 4));
        s2 = (double *)(void *)(t2 + ((size_t)index[i + 2] << 4));
        s3 = (double *)(void *)(t3 + ((size_t)index[i + 3] << 4));
        _mm_storeu_pd(s0, _mm_add_pd(_mm_loadu_pd(s0), _mm256_castpd256_pd128(even)));
        _mm_storeu_pd(s1, _mm_add_pd(_mm_loadu_pd(s1), _mm256_castpd256_pd128(odd)));
        _mm_storeu_pd(s2, _mm_add_pd(_mm_loadu_pd(s2), _mm256_extractf128_pd(even, 1)));
        _mm_storeu_pd(s3, _mm_add_pd(_mm_loadu_pd(s3), _mm256_extractf128_pd(odd, 1)));
    }
    return i;
}
#endif
