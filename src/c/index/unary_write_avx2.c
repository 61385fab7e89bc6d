/* AVX2 encoding of Elias-Fano and Rice sections (unary_simd.h), 8 indices per step, for
 * CPUs without AVX-512: the method of unary_write_avx512.c at half the width, with
 * Elias-Fano's low fields and upper vector in one sweep.
 *
 * The unary vectors: a step's 8 ones, which almost always fall within two 64-bit words,
 * become those two words by variable shifts, OR-ed into the zeroed vector by two 8-byte
 * read-modify-writes (the next step's first word is this step's second or a later one:
 * an exact overlap, forwarded from the store). The portable encoders set one bit per
 * index through a word held in a register, with a branch where the ones move on to the
 * next word.
 *
 * The low fields: packed in the lanes into groups of up to 56 bits (pairs, then fours,
 * then eights), each group appended by one 8-byte store (dr_bw_put56). The bytes are
 * those of the portable code. */
#include "bitio.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* ORs the 8 ones at bits 64 w + rel_i (rel_i < 128) into the words w and w + 1 of v,
 * which must both lie inside v: each one shifted into its 64-bit word by a variable
 * shift (VPSLLVQ gives 0 for a count of 64 or more, so a one lands in exactly one of
 * the two), the words OR-ed across the lanes. On AMD before Zen 2 a variable shift costs
 * six adds; there, 16-byte one-hot entries from a table OR-ed by loads were faster, but
 * on Zen 3 they measured 1.15x slower than these four shifts (docs/performance.md). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE void or_two_words(uint8_t *v, uint64_t w, __m256i rel)
{
    const __m256i one = _mm256_set1_epi64x(1), sixty_four = _mm256_set1_epi64x(64);
    __m256i r0 = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(rel));
    __m256i r1 = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(rel, 1));
    __m256i first = _mm256_or_si256(_mm256_sllv_epi64(one, r0), _mm256_sllv_epi64(one, r1));
    __m256i second = _mm256_or_si256(_mm256_sllv_epi64(one, _mm256_sub_epi64(r0, sixty_four)),
                                     _mm256_sllv_epi64(one, _mm256_sub_epi64(r1, sixty_four)));
    /* [w of lanes 0|1, w + 1 of 0|1, w of 2|3, w + 1 of 2|3], then the halves OR-ed. */
    __m256i mixed = _mm256_or_si256(_mm256_unpacklo_epi64(first, second), _mm256_unpackhi_epi64(first, second));
    __m128i both = _mm_or_si128(_mm256_castsi256_si128(mixed), _mm256_extracti128_si256(mixed, 1));
    __m128i *at = (__m128i *)(void *)(v + 8u * w), *after = (__m128i *)(void *)(v + 8u * w + 8u);
    /* Two 8-byte read-modify-writes, not one of 16 bytes: the next step's first read is
     * then exactly one of these stores (16 bytes overlapping half of one would stall). */
    _mm_storel_epi64(at, _mm_or_si128(_mm_loadl_epi64(at), both));
    _mm_storel_epi64(after, _mm_or_si128(_mm_loadl_epi64(after), _mm_unpackhi_epi64(both, both)));
}

/* Appends the 8 fields of f (each below 2^bits, 1 <= bits <= 28) to w, which has fewer
 * than 8 bits pending and `bits` + 8 bytes of room (the fields take `bits` bytes, and a
 * group's store writes 8): 8 / 2^m groups of 2^m fields, with the largest m >= 1 that
 * keeps a group within 56 bits. Shifts within the 128-bit halves, no lane-crossing
 * permutes (several times an add's cost on AMD before Zen 2). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE void put8(dr_bitwriter *w, __m256i f, unsigned bits)
{
    uint64_t group[4];
    __m128i low, high;
    /* Pairs: 64-bit lane i holds fields 2i and 2i + 1, 2 bits wide. */
    f = _mm256_or_si256(_mm256_and_si256(f, _mm256_set1_epi64x(0xffffffff)),
                        _mm256_sll_epi64(_mm256_srli_epi64(f, 32), _mm_cvtsi32_si128((int)bits)));
    if (4u * bits > 56u) {
        _mm256_storeu_si256((__m256i *)(void *)group, f);
        dr_bw_put56(w, group[0], 2u * bits);
        dr_bw_put56(w, group[1], 2u * bits);
        dr_bw_put56(w, group[2], 2u * bits);
        dr_bw_put56(w, group[3], 2u * bits);
        return;
    }
    /* Fours: each half's second pair shifted onto its first. */
    f = _mm256_or_si256(f, _mm256_sll_epi64(_mm256_srli_si256(f, 8), _mm_cvtsi32_si128((int)(2u * bits))));
    low = _mm256_castsi256_si128(f);
    high = _mm256_extracti128_si256(f, 1);
    if (8u * bits > 56u) {
        dr_bw_put56(w, (uint64_t)_mm_cvtsi128_si64(low), 4u * bits);
        dr_bw_put56(w, (uint64_t)_mm_cvtsi128_si64(high), 4u * bits);
        return;
    }
    /* Eights: the high half's four after the low half's. */
    low = _mm_or_si128(low, _mm_sll_epi64(high, _mm_cvtsi32_si128((int)(4u * bits))));
    dr_bw_put56(w, (uint64_t)_mm_cvtsi128_si64(low), 8u * bits);
}

/* The indices one back from idx[t..t + 8): a second load (a lane permute costs several
 * adds on AMD before Zen 2), but at t = 0, where the index before is -1. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i one_back(const uint32_t *idx, size_t t)
{
    uint32_t first[8];
    if (t > 0)
        return _mm256_loadu_si256((const __m256i *)(const void *)(idx + t - 1));
    first[0] = UINT32_MAX;
    memcpy(first + 1, idx, 7u * sizeof *idx);
    return _mm256_loadu_si256((const __m256i *)(const void *)first);
}

/* Whether the 8 indices `now` ascend from `before` (one_back's; in the lanes of `after`,
 * all but lane 0 at t = 0) and stay at or below top's: checked before a step writes, as
 * unsigned (now <= before where the larger is before; now <= top where the smaller is
 * now). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE int ascending8(__m256i now, __m256i before, int after, __m256i top)
{
    int back = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_max_epu32(now, before), before)));
    int below = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_min_epu32(now, top), now)));
    return (back & after) == 0 && below == 0xff;
}

DR_TARGET_AVX2 size_t dr_ef_sweep_avx2(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room,
                                       uint8_t *v, size_t len)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_set1_epi32(l == 32u ? -1 : (int)((1u << l) - 1u));
    const __m128i shift = _mm_cvtsi32_si128((int)l);
    dr_bitwriter low_writer = *w; /* a local copy: through w, each field's store could alias the writer */
    size_t t, lows = 0;
    for (t = 0; t + 8u <= r; t += 8u) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(idx + t));
        uint64_t first = ((uint64_t)idx[t] >> l) + t, last = ((uint64_t)idx[t + 7u] >> l) + t + 7u;
        uint64_t word = first / 64u;
        /* The lows while the group stores stay in room (the last steps' fields go to the
         * caller's scalar code). */
        if (lows == t && l >= 1u && l <= 28u && low_writer.pos + l + 8u <= room) {
            put8(&low_writer, _mm256_and_si256(x, mask), l);
            lows += 8u;
        }
        if (last - 64u * word < 128u && 8u * word + 16u <= len) {
            /* rel_i = high_i + t + i - 64 word = (high_i - high_0) + i + first % 64. */
            __m256i base = _mm256_set1_epi32((int)(uint32_t)(first % 64u - (first - t)));
            or_two_words(v, word, _mm256_add_epi32(_mm256_add_epi32(_mm256_srl_epi32(x, shift), lanes), base));
        } else {
            dr_ef_upper_ones(idx, t, t + 8u, l, v);
        }
    }
    dr_ef_upper_ones(idx, t, r, l, v);
    *w = low_writer;
    return lows;
}

/* dr_rice_codes for idx[t..end) after `at` bits of codes; returns the bits after them. */
static uint64_t codes_from(const uint32_t *idx, size_t t, size_t end, unsigned k, dr_bitwriter *w, uint8_t *v,
                           uint64_t at)
{
    uint64_t quotients = at - t, next = t > 0 ? (uint64_t)idx[t - 1u] + 1u : 0u;
    dr_rice_codes(idx, t, end, k, w, v, &quotients, &next);
    return quotients + end;
}

DR_TARGET_AVX2 int dr_rice_sweep_avx2(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows, size_t low_bytes,
                                      uint8_t *v, size_t len, uint64_t *bits)
{
    const __m256i one = _mm256_set1_epi32(1), top = _mm256_set1_epi32((int)idx[r - 1u]);
    const __m256i low_mask = _mm256_set1_epi32((int)((1u << k) - 1u));
    const __m128i shift = _mm_cvtsi32_si128((int)k);
    dr_bitwriter w;
    uint64_t at = 0; /* the bits of the codes before t: their quotients + t */
    size_t t, i;
    dr_bw_init(&w, lows);
    for (t = 0; t + 8u <= r; t += 8u) {
        __m256i now = _mm256_loadu_si256((const __m256i *)(const void *)(idx + t)), before = one_back(idx, t);
        __m256i gap, sum;
        uint32_t total;
        /* Checked before any of the step's codes is written: a set that does not ascend,
         * or an index past the last, could place a one outside v. */
        if (!ascending8(now, before, t > 0 ? 0xff : 0xfe, top))
            return 0;
        /* gap_i = idx[t + i] - idx[t + i - 1] - 1. */
        gap = _mm256_sub_epi32(_mm256_sub_epi32(now, before), one);
        sum = _mm256_add_epi32(_mm256_srl_epi32(gap, shift), one);
        if (k > 0u) {
            if (k <= 28u && w.pos + k + 8u <= low_bytes) {
                put8(&w, _mm256_and_si256(gap, low_mask), k);
            } else {
                uint32_t field[8];
                _mm256_storeu_si256((__m256i *)(void *)field, _mm256_and_si256(gap, low_mask));
                for (i = 0; i < 8u; i++)
                    dr_bw_put(&w, field[i], k);
            }
        }
        /* S_i = (q_0 + 1) + ... + (q_i + 1); the one of index t + i is at bit at + S_i - 1,
         * at rel_i = at % 64 + S_i - 1 from word at / 64. The sums cannot wrap but for S_7
         * at exactly 2^32 (the step's gaps less their lows sum below 2^32, the indices
         * being below 2^32), which the check below sends to the scalar code. */
        sum = dr_running_sum8_avx2(sum);
        total = (uint32_t)_mm256_extract_epi32(sum, 7);
        if (total - 1u < 128u - at % 64u && 8u * (at / 64u) + 16u <= len) {
            or_two_words(v, at / 64u, _mm256_add_epi32(sum, _mm256_set1_epi32((int)(uint32_t)(at % 64u) - 1)));
            at += total;
        } else {
            at = codes_from(idx, t, t + 8u, k, NULL, v, at);
        }
    }
    if (!dr_ascending_to(idx, t, r, idx[r - 1u]))
        return 0;
    *bits = codes_from(idx, t, r, k, &w, v, at);
    if (k > 0u)
        dr_bw_finish(&w);
    return 1;
}
#endif
