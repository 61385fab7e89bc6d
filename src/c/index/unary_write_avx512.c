/* AVX-512 encoding of Elias-Fano and Rice sections (unary_simd.h), 16 indices per step.
 *
 * The unary vectors: the portable encoders set one bit per index through a word held in
 * a register, with a branch where the ones move on to the next word. Here a step's 16
 * ones, which almost always fall within two 64-bit words, become those two words by a
 * variable shift per lane and an OR across the lanes, and are OR-ed into the zeroed
 * vector by two 8-byte read-modify-writes. The next step's first word is this step's
 * second (or a later one): an exact overlap, which the core forwards from the store.
 *
 * The low fields: packed in the lanes into groups of up to 56 bits (pairs, then fours,
 * ...), each group appended by one 8-byte store (dr_bw_put56), where the portable code
 * takes a step of the bit writer per field. The bytes are those of the portable code. */
#include "bitio.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* ORs the 16 ones at bits 64 w + rel_i (rel_i < 128) into the words w and w + 1 of v,
 * which must both lie inside v. */
DR_TARGET_AVX512 static void or_two_words(uint8_t *v, uint64_t w, __m512i rel)
{
    const __m512i one = _mm512_set1_epi64(1), sixty_four = _mm512_set1_epi64(64);
    __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(rel));
    __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(rel, 1));
    /* A count of 64 or more shifts the one out (rel - 64 wraps below 64): each lane's one
     * lands in one of the two words. */
    __m512i first = _mm512_or_si512(_mm512_sllv_epi64(one, lo), _mm512_sllv_epi64(one, hi));
    __m512i second = _mm512_or_si512(_mm512_sllv_epi64(one, _mm512_sub_epi64(lo, sixty_four)),
                                     _mm512_sllv_epi64(one, _mm512_sub_epi64(hi, sixty_four)));
    /* Both ORs across the lanes at once: the first word's lanes in the low 256 bits, the
     * second's in the high, halved twice more; the words end up in 64-bit lanes 0 and 4. */
    __m512i both = _mm512_or_si512(_mm512_shuffle_i64x2(first, second, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_i64x2(first, second, _MM_SHUFFLE(3, 2, 3, 2)));
    __m128i *at = (__m128i *)(void *)(v + 8u * w), *after = (__m128i *)(void *)(v + 8u * w + 8u);
    both = _mm512_or_si512(both, _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(2, 3, 0, 1)));
    both = _mm512_or_si512(both, _mm512_shuffle_epi32(both, _MM_PERM_BADC));
    /* Two 8-byte read-modify-writes, not one of 16 bytes: the next step's first read is
     * then exactly one of these stores (16 bytes overlapping half of one would stall). */
    _mm_storel_epi64(at, _mm_or_si128(_mm_loadl_epi64(at), _mm512_castsi512_si128(both)));
    _mm_storel_epi64(after, _mm_or_si128(_mm_loadl_epi64(after), _mm512_extracti32x4_epi32(both, 2)));
}

/* Appends the 16 fields of f (each below 2^bits, 1 <= bits <= 28) to w, which has fewer
 * than 8 bits pending and 2 bits + 8 bytes of room: 16 / 2^m groups of 2^m fields, with
 * the largest m >= 1 that keeps a group within 56 bits. (16 or more indices below 2^32
 * leave both codecs at most 28 bits per field.) */
DR_TARGET_AVX512 static void put16(dr_bitwriter *w, __m512i f, unsigned bits)
{
    const __m512i evens = _mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6), odds = _mm512_setr_epi64(1, 3, 5, 7, 1, 3, 5, 7);
    uint64_t group[8];
    unsigned groups = 8, width = 2u * bits, g;
    /* Pairs: 64-bit lane i holds fields 2i and 2i + 1. */
    f = _mm512_or_si512(_mm512_and_si512(f, _mm512_set1_epi64(0xffffffff)),
                        _mm512_sll_epi64(_mm512_srli_epi64(f, 32), _mm_cvtsi32_si128((int)bits)));
    while (groups > 1u && 2u * width <= 56u) {
        f = _mm512_or_si512(_mm512_permutexvar_epi64(evens, f),
                            _mm512_sll_epi64(_mm512_permutexvar_epi64(odds, f), _mm_cvtsi32_si128((int)width)));
        groups /= 2u;
        width *= 2u;
    }
    _mm512_storeu_si512((void *)group, f);
    for (g = 0; g < groups; g++)
        dr_bw_put56(w, group[g], width);
}

DR_TARGET_AVX512 size_t dr_ef_lows_avx512(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room)
{
    const __m512i mask = _mm512_set1_epi32(l == 32u ? -1 : (int)((1u << l) - 1u));
    size_t t;
    for (t = 0; t + 16u <= r && l <= 28u && w->pos + 2u * l + 8u <= room; t += 16u)
        put16(w, _mm512_and_si512(_mm512_loadu_si512((const void *)(idx + t)), mask), l);
    return t;
}

/* Whether the 16 indices `now` ascend from `back` (the indices one back; in the lanes of
 * `after`, all but lane 0 at the set's start) and stay at or below top's: checked before
 * a step writes, as unsigned. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE int ascending16(__m512i now, __m512i back, __mmask16 after, __m512i top)
{
    return (_mm512_mask_cmple_epu32_mask(after, now, back) | _mm512_cmpgt_epu32_mask(now, top)) == 0;
}

DR_TARGET_AVX512 int dr_ef_upper_avx512(const uint32_t *idx, size_t r, unsigned l, uint8_t *v, size_t len)
{
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i top = _mm512_set1_epi32((int)idx[r - 1u]);
    const __m128i shift = _mm_cvtsi32_si128((int)l);
    __m512i before = _mm512_set1_epi32(-1); /* the last step's indices: lane 15 precedes idx[t] */
    __mmask16 after = 0xfffe;               /* the lanes with an index before them: all but idx[0]'s */
    size_t t;
    for (t = 0; t + 16u <= r; t += 16u) {
        __m512i now = _mm512_loadu_si512((const void *)(idx + t));
        uint64_t first = ((uint64_t)idx[t] >> l) + t, last = ((uint64_t)idx[t + 15u] >> l) + t + 15u;
        uint64_t w = first / 64u;
        /* Before the step's ones: a set that does not ascend, or an index past the last,
         * could place one outside v. */
        if (!ascending16(now, _mm512_alignr_epi32(now, before, 15), after, top))
            return 0;
        after = 0xffff;
        before = now;
        if (last - 64u * w < 128u && 8u * w + 16u <= len) {
            /* rel_i = high_i + t + i - 64 w = (high_i - high_0) + i + first % 64. */
            __m512i base = _mm512_set1_epi32((int)(uint32_t)(first % 64u - (first - t)));
            or_two_words(v, w, _mm512_add_epi32(_mm512_add_epi32(_mm512_srl_epi32(now, shift), lanes), base));
        } else {
            dr_ef_upper_ones(idx, t, t + 16u, l, v);
        }
    }
    if (!dr_ascending_to(idx, t, r, idx[r - 1u]))
        return 0;
    dr_ef_upper_ones(idx, t, r, l, v);
    return 1;
}

DR_TARGET_AVX512 int dr_rice_sweep_avx512(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows,
                                          size_t low_bytes, uint8_t *v, size_t len, uint64_t *bits)
{
    const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
    const __m512i top = _mm512_set1_epi32((int)idx[r - 1u]);
    __mmask16 after = 0xfffe; /* the lanes with an index before them: all but idx[0]'s */
    const __m512i low_mask = _mm512_set1_epi32((int)((1u << k) - 1u));
    const __m128i shift = _mm_cvtsi32_si128((int)k);
    __m512i before = _mm512_set1_epi32(-1); /* the last block's indices: lane 15 precedes idx[t] */
    dr_bitwriter w;
    uint64_t next = 0, quotients = 0; /* idx[t - 1] + 1, and the quotients of the gaps before t */
    size_t t, i;
    dr_bw_init(&w, lows);
    for (t = 0; t + 16u <= r; t += 16u) {
        __m512i now = _mm512_loadu_si512((const void *)(idx + t)), back = _mm512_alignr_epi32(now, before, 15);
        __m512i gap = _mm512_sub_epi32(_mm512_sub_epi32(now, back), one);
        __m512i sum = _mm512_add_epi32(_mm512_srl_epi32(gap, shift), one);
        uint64_t q0, p0, w0;
        uint32_t spread;
        /* Checked before any of the step's codes is written: a set that does not ascend, or
         * an index past the last, could place a one outside v. */
        if (!ascending16(now, back, after, top))
            return 0;
        after = 0xffff;
        q0 = ((uint64_t)idx[t] - next) >> k;
        p0 = quotients + q0 + t;
        w0 = p0 / 64u;
        before = now;
        if (k > 0u) {
            if (k <= 28u && w.pos + 2u * k + 8u <= low_bytes) {
                put16(&w, _mm512_and_si512(gap, low_mask), k);
            } else {
                uint32_t field[16];
                _mm512_storeu_si512((void *)field, _mm512_and_si512(gap, low_mask));
                for (i = 0; i < 16u; i++)
                    dr_bw_put(&w, field[i], k);
            }
        }
        /* S_i = (q_0 + 1) + ... + (q_i + 1), inclusive across the lanes, modulo 2^32; the
         * one of index t + i is at p0 + S_i - S_0, at rel_i = S_i - S_0 + p0 % 64 from word
         * w0. The differences are exact while the block's gaps sum below 2^31. */
        sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 15));
        sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 14));
        sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 12));
        sum = _mm512_add_epi32(sum, _mm512_alignr_epi32(sum, zero, 8));
        /* S_15 - S_0 taken from the sums, not from rel: the running count of quotients
         * then waits on no lane extraction. */
        spread = (uint32_t)_mm_extract_epi32(_mm512_extracti32x4_epi32(sum, 3), 3) - (uint32_t)(q0 + 1u);
        if ((uint64_t)idx[t + 15u] - idx[t] < ((uint64_t)1 << 31) && spread + p0 % 64u < 128u &&
            8u * w0 + 16u <= len) {
            or_two_words(v, w0, _mm512_add_epi32(sum, _mm512_set1_epi32((int)(uint32_t)(p0 % 64u - (q0 + 1u)))));
            quotients += q0 + spread - 15u;
        } else {
            dr_rice_codes(idx, t, t + 16u, k, NULL, v, &quotients, &next);
        }
        next = (uint64_t)idx[t + 15u] + 1u;
    }
    if (!dr_ascending_to(idx, t, r, idx[r - 1u]))
        return 0;
    dr_rice_codes(idx, t, r, k, &w, v, &quotients, &next);
    if (k > 0u)
        dr_bw_finish(&w);
    *bits = quotients + r;
    return 1;
}
#endif
