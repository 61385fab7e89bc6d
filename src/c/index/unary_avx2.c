/* AVX2 unary decoding (unary_simd.h), for CPUs without AVX-512: a byte of the vector at
 * a time, the zeros below each of its ones read as 8 lanes from a table
 * (dr_byte_zeros_below) and offset by the zeros before the byte, 8 highs stored per byte
 * whatever its count. As in the AVX-512 decoder the highs go to a stack
 * block first and then into out in whole vectors (adding into out straight away would
 * load each byte's entries just after the overlapping store of the byte before). */
#include "deepreduce.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Highs decoded per block; a word adds up to 64 and a byte stores 8 lanes from its first
 * one, so the block holds BLOCK + 64 + 8. */
#define BLOCK 1024u

/* out[0..n) += high[0..n) << shift. */
DR_TARGET_AVX2 static void add_block(uint32_t *out, const uint32_t *high, size_t n, unsigned shift)
{
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256i h = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t)), count);
        __m256i *at = (__m256i *)(void *)(out + t);
        _mm256_storeu_si256(at, _mm256_add_epi32(_mm256_loadu_si256(at), h));
    }
    /* shift 32 adds nothing, as in the AVX-512 decoder (a vector shift past 31 gives 0). */
    for (; t < n; t++)
        out[t] += shift < 32u ? high[t] << shift : 0u;
}

DR_TARGET_AVX2 size_t dr_unary_add_highs_avx2(const uint8_t *v, size_t len, size_t r, unsigned shift,
                                              uint32_t *out, uint64_t *last_one)
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
            add_block(out + done, high, filled, shift);
            done += filled;
            filled = 0;
        }
    }
    add_block(out + done, high, filled, shift);
    return done + filled;
}

/* No lane-crossing permutes (VPERMD, VPERM2I128: several adds' cost each on AMD before
 * Zen 2): the carries cross between the halves by 128-bit extracts and inserts. */
DR_TARGET_AVX2 uint64_t dr_rice_running_sum_avx2(uint32_t *out, size_t n)
{
    const __m256i one = _mm256_set1_epi32(1), low32 = _mm256_set1_epi64x(0xffffffff);
    __m256i carry = _mm256_set1_epi32(-1); /* the sum so far, less one, in every lane */
    __m256i wide = _mm256_setzero_si256(); /* the values + 1, summed in 64-bit lanes */
    uint64_t lanes[4], sum;
    size_t t;
    for (t = 0; t + 8 <= n; t += 8) {
        __m256i *at = (__m256i *)(void *)(out + t);
        __m256i x = _mm256_add_epi32(_mm256_loadu_si256(at), one), last;
        wide = _mm256_add_epi64(wide, _mm256_add_epi64(_mm256_and_si256(x, low32), _mm256_srli_epi64(x, 32)));
        /* Inclusive running sum within each 128-bit half (lane i adds lane i - 1, then
         * i - 2), then the low half's total added to the high half. */
        x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
        x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
        last = _mm256_shuffle_epi32(x, 0xff);
        x = _mm256_add_epi32(x, _mm256_inserti128_si256(_mm256_setzero_si256(), _mm256_castsi256_si128(last), 1));
        x = _mm256_add_epi32(x, carry);
        _mm256_storeu_si256(at, x);
        carry = _mm256_broadcastd_epi32(_mm_shuffle_epi32(_mm256_extracti128_si256(x, 1), 0xff));
    }
    _mm256_storeu_si256((__m256i *)(void *)lanes, wide);
    sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    {
        uint32_t run = (uint32_t)_mm256_cvtsi256_si32(carry);
        for (; t < n; t++) {
            sum += (uint64_t)out[t] + 1u;
            run += out[t] + 1u;
            out[t] = run;
        }
    }
    return sum;
}
#endif
