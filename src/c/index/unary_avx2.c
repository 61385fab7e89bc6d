/* AVX2 unary decoding (unary_simd.h), for CPUs without AVX-512: a byte of the vector at
 * a time, the zeros below each of its ones read as 8 lanes from a table
 * (dr_byte_zeros_below) and offset by the zeros before the byte, 8 highs stored per byte
 * whatever its count. As in the AVX-512 decoder the highs go to a stack block first and
 * then into out in whole vectors (writing out straight away would load each byte's
 * entries just after the overlapping store of the byte before). Each block brings its
 * own low fields, so that each index is written once: Elias-Fano's as they are, Rice's
 * through their running sum. */
#include "deepreduce.h"
#include "bitpack_simd.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Highs decoded per block; a word adds up to 64 and a byte stores 8 lanes from its first
 * one, so the block holds BLOCK + 64 + 8. */
#define BLOCK 1024u

/* out[0..n) = base[0..n) + (high[0..n) << shift). */
DR_TARGET_AVX2 static void add_block(uint32_t *out, const uint32_t *high, size_t n, unsigned shift,
                                     const uint32_t *base)
{
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256i h = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t)), count);
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(base + t));
        _mm256_storeu_si256((__m256i *)(void *)(out + t), _mm256_add_epi32(b, h));
    }
    /* shift 32 adds nothing, as in the AVX-512 decoder (a vector shift past 31 gives 0). */
    for (; t < n; t++)
        out[t] = base[t] + (shift < 32u ? high[t] << shift : 0u);
}

/* Rice's running sum in place: x[t] = run + (x[0] + 1) + ... + (x[t] + 1) modulo 2^32,
 * *run (the sum so far, less one) advanced past them, and the values + 1 added to *sum
 * in 64 bits. No lane-crossing permutes (VPERMD, VPERM2I128: several adds' cost each on
 * AMD before Zen 2): the carries cross between the halves by 128-bit extracts and
 * inserts. */
DR_TARGET_AVX2 static void running_sum(uint32_t *x, size_t n, uint32_t *run, uint64_t *sum)
{
    const __m256i one = _mm256_set1_epi32(1), low32 = _mm256_set1_epi64x(0xffffffff);
    __m256i carry = _mm256_set1_epi32((int)*run);
    __m256i wide = _mm256_setzero_si256(); /* the values + 1, summed in 64-bit lanes */
    uint64_t lanes[4];
    uint32_t last;
    size_t t;
    for (t = 0; t + 8 <= n; t += 8) {
        __m256i *at = (__m256i *)(void *)(x + t);
        __m256i v = _mm256_add_epi32(_mm256_loadu_si256(at), one), top;
        wide = _mm256_add_epi64(wide, _mm256_add_epi64(_mm256_and_si256(v, low32), _mm256_srli_epi64(v, 32)));
        /* Inclusive running sum within each 128-bit half (lane i adds lane i - 1, then
         * i - 2), then the low half's total added to the high half. */
        v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4));
        v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
        top = _mm256_shuffle_epi32(v, 0xff);
        v = _mm256_add_epi32(v, _mm256_inserti128_si256(_mm256_setzero_si256(), _mm256_castsi256_si128(top), 1));
        v = _mm256_add_epi32(v, carry);
        _mm256_storeu_si256(at, v);
        carry = _mm256_broadcastd_epi32(_mm_shuffle_epi32(_mm256_extracti128_si256(v, 1), 0xff));
    }
    _mm256_storeu_si256((__m256i *)(void *)lanes, wide);
    *sum += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    last = (uint32_t)_mm256_cvtsi256_si32(carry);
    for (; t < n; t++) {
        *sum += (uint64_t)x[t] + 1u;
        last += x[t] + 1u;
        x[t] = last;
    }
    *run = last;
}

/* How a block's highs become indices: with their low fields, which the block unpacks
 * from lows (low_len bytes, the fields of `shift` bits each from index 0 on) to the stack
 * first, Elias-Fano's as they are, Rice's through their running sum. */
typedef struct {
    const uint8_t *lows;
    size_t low_len, fields; /* the section's bytes and fields */
    int rice;
    uint32_t descending;    /* Elias-Fano: nonzero once some out[t] <= out[t - 1] */
    uint32_t run;           /* Rice: the running sum so far, less one */
    uint64_t sum;           /* Rice: the lows + 1 so far, in 64 bits */
} flush_to;

/* out[0..n) = (lows' fields done..done + n, for Rice their running sum) + (high[0..n) <<
 * shift), and for Elias-Fano whether they ascend from out[-1] (done > 0) on. The block's
 * fields start at a multiple of 8, whose bit offset, 8 shift per 8 fields, is on a byte. */
DR_TARGET_AVX2 static void indices_block(flush_to *to, size_t done, uint32_t *out, const uint32_t *high, size_t n,
                                         unsigned shift)
{
    uint32_t low[BLOCK + 64 + 8 + 8];
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t first = done & ~(size_t)7u, skip = done - first, at = first / 8u * shift, t, k;
    size_t fields = (skip + n + 7u) & ~(size_t)7u; /* whole groups, where r has them */
    uint32_t descending = 0;
    if (fields > to->fields - first)
        fields = to->fields - first;
    /* Whole groups of 8 by the vector unpacker; what it leaves (the last fields of the
     * section, or fields wider than 25 bits) by the library's, whose statuses cannot fail
     * on a section the caller checked. */
    k = dr_bitunpack_avx2(to->lows + at, to->low_len - at, fields, shift, low);
    if (k < skip + n)
        (void)dr_bitunpack(to->lows + at + k / 8u * shift, to->low_len - at - k / 8u * shift, skip + n - k, shift,
                           low + k);
    if (to->rice) {
        /* Rice's indices ascend by construction (each gap adds at least one). */
        running_sum(low + skip, n, &to->run, &to->sum);
        add_block(out, high, n, shift, low + skip);
        return;
    }
    /* out[t] <= out[t - 1] where the larger of the two is out[t - 1]. The first index
     * against the block before; the others against an index made again from the block's
     * lows and highs (a load of out just stored would wait on the stores). */
    if (n > 0 && done > 0)
        descending = (uint32_t)(low[skip] + (shift < 32u ? high[0] << shift : 0u) <= out[-1]);
    {
        __m256i found = _mm256_setzero_si256();
        for (t = 0; t + 9 <= n; t += 8) {
            __m256i h = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t)), count);
            __m256i g = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t + 1)), count);
            __m256i now = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(low + skip + t)), h);
            __m256i next = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(low + skip + t + 1)), g);
            _mm256_storeu_si256((__m256i *)(void *)(out + t), now);
            found = _mm256_or_si256(found, _mm256_cmpeq_epi32(_mm256_max_epu32(next, now), now));
        }
        descending |= (uint32_t)!_mm256_testz_si256(found, found);
    }
    for (; t < n; t++) {
        out[t] = low[skip + t] + (shift < 32u ? high[t] << shift : 0u);
        if (t > 0)
            descending |= (uint32_t)(out[t] <= out[t - 1]);
    }
    to->descending |= descending;
}

/* The unary sweep: for the t-th one of v[0..len) at bit p_t, its high p_t - t, a block
 * of them at a time made indices by indices_block. Returns the ones, or SIZE_MAX past r;
 * *last_one as dr_unary_add_highs_avx512 sets it. */
DR_TARGET_AVX2 static size_t unary_blocks(const uint8_t *v, size_t len, size_t r, unsigned shift, uint32_t *out,
                                          uint64_t *last_one, flush_to *to)
{
    uint32_t high[BLOCK + 64 + 8];
    size_t off, done = 0, filled = 0; /* ones added into out; highs waiting in the block */
    for (off = 0; off < len; off += 8u) {
        uint64_t word;
        size_t ones = dr_unary_load_word(v, len, off, r - done - filled, &word, last_one);
        unsigned b;
        if (ones == SIZE_MAX)
            return SIZE_MAX;
        if (ones == 0)
            continue;
        for (b = 0; b < 8u; b++) {
            unsigned byte = (unsigned)(word >> (8u * b)) & 0xffu;
            /* p - t for the byte's i-th one, the zeros below it: those in the byte
             * (the table's lane i) plus those before the byte, 8 off + 8 b less the ones
             * before it, done + filled (mod 2^32, exact for every input the caller's
             * checks accept). */
            uint32_t before = (uint32_t)((uint64_t)off * 8u + 8u * b - (done + filled));
            __m256i h = _mm256_add_epi32(_mm256_load_si256((const __m256i *)(const void *)dr_byte_zeros_below[byte]),
                                         _mm256_set1_epi32((int)before));
            _mm256_storeu_si256((__m256i *)(void *)(high + filled), h);
            filled += (size_t)__builtin_popcount(byte);
        }
        if (filled >= BLOCK) {
            indices_block(to, done, out + done, high, filled, shift);
            done += filled;
            filled = 0;
        }
    }
    indices_block(to, done, out + done, high, filled, shift);
    return done + filled;
}

/* The state of a sweep that unpacks the low fields of a section of r. */
static flush_to with_lows(const uint8_t *lows, size_t low_len, size_t r, int rice)
{
    flush_to to;
    to.lows = lows;
    to.low_len = low_len;
    to.fields = r;
    to.rice = rice;
    to.descending = 0;
    to.run = UINT32_MAX;
    to.sum = 0;
    return to;
}

DR_TARGET_AVX2 size_t dr_ef_indices_avx2(const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r,
                                         unsigned l, uint32_t *out, uint64_t *last_one, uint32_t *descending)
{
    flush_to to = with_lows(lows, low_len, r, 0);
    size_t ones = unary_blocks(v, len, r, l, out, last_one, &to);
    *descending = to.descending;
    return ones;
}

DR_TARGET_AVX2 size_t dr_rice_indices_avx2(const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len,
                                           size_t r, unsigned k, uint32_t *out, uint64_t *last_one, uint64_t *sum)
{
    flush_to to = with_lows(lows, low_len, r, 1);
    size_t ones = unary_blocks(v, len, r, k, out, last_one, &to);
    *sum = to.sum;
    return ones;
}

#endif
