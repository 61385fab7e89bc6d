/* AVX-512 unary decoding (unary_simd.h). The scalar decoders spread each word's ones
 * through a byte table and then add them one by one; here each 16 bits of a word become
 * their set bits' numbers by one compress (VPCOMPRESSD) of the lane numbers 0..15, and
 * 16 highs are made and stored per step whatever the count. The highs go to a stack
 * block first, store after store, and then into out in whole vectors: adding them into
 * out straight away would load each step's 16 entries just after the overlapping store
 * of the step before, which the core cannot forward (a stall per 16 bits). */
#include "deepreduce.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Highs decoded per block; a word adds up to 64 and a step stores 16 lanes from its first
 * one, so the block holds BLOCK + 64 + 16. */
#define BLOCK 1024u

/* out[0..n) += high[0..n) << shift. */
DR_TARGET_AVX512 static void add_block(uint32_t *out, const uint32_t *high, size_t n, unsigned shift)
{
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t t = 0;
    for (; t + 16 <= n; t += 16) {
        __m512i h = _mm512_sll_epi32(_mm512_loadu_si512((const void *)(high + t)), count);
        _mm512_storeu_si512((void *)(out + t), _mm512_add_epi32(_mm512_loadu_si512((const void *)(out + t)), h));
    }
    if (t < n) {
        __mmask16 live = (__mmask16)((1u << (n - t)) - 1u);
        __m512i h = _mm512_sll_epi32(_mm512_maskz_loadu_epi32(live, high + t), count);
        _mm512_mask_storeu_epi32(out + t, live, _mm512_add_epi32(_mm512_maskz_loadu_epi32(live, out + t), h));
    }
}

DR_TARGET_AVX512 size_t dr_unary_add_highs_avx512(const uint8_t *v, size_t len, size_t r, unsigned shift,
                                                  uint32_t *out, uint64_t *last_one)
{
    uint32_t high[BLOCK + 64 + 16];
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t off, done = 0, filled = 0; /* ones added into out; highs waiting in the block */
    for (off = 0; off < len; off += 8u) {
        uint64_t word;
        size_t ones = dr_unary_load_word(v, len, off, r - done - filled, &word, last_one);
        unsigned q;
        if (ones == SIZE_MAX)
            return SIZE_MAX;
        if (ones == 0)
            continue;
        for (q = 0; q < 4u; q++) {
            __mmask16 m = (__mmask16)(word >> (16u * q));
            /* Lane i: the i-th one's bit number in these 16 bits, then p - t for it, with
             * p = 8 off + 16 q + that and t = done + filled + i (mod 2^32, which is exact
             * for every input the caller's checks accept). */
            uint32_t first = (uint32_t)((uint64_t)off * 8u + 16u * q - (done + filled));
            __m512i h = _mm512_add_epi32(_mm512_maskz_compress_epi32(m, lanes),
                                         _mm512_sub_epi32(_mm512_set1_epi32((int)first), lanes));
            _mm512_storeu_si512((void *)(high + filled), h);
            filled += (size_t)__builtin_popcount((unsigned)m);
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

DR_TARGET_AVX512 uint64_t dr_rice_running_sum_avx512(uint32_t *out, size_t n)
{
    const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512(), top = _mm512_set1_epi32(15);
    __m512i carry = _mm512_set1_epi32(-1); /* the sum so far, less one, in every lane */
    __m512i wide = _mm512_setzero_si512(); /* the values + 1, summed in 64-bit lanes */
    size_t t;
    for (t = 0; t < n; t += 16) {
        __mmask16 live = n - t >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - t)) - 1u);
        __m512i x = _mm512_maskz_add_epi32(live, _mm512_maskz_loadu_epi32(live, out + t), one);
        wide = _mm512_add_epi64(wide, _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(x)),
                                                       _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(x, 1))));
        /* Inclusive running sum across the lanes: lane i adds lane i - s, s = 1, 2, 4, 8. */
        x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 15));
        x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 14));
        x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 12));
        x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 8));
        x = _mm512_add_epi32(x, carry);
        _mm512_mask_storeu_epi32(out + t, live, x);
        carry = _mm512_permutexvar_epi32(top, x);
    }
    return (uint64_t)_mm512_reduce_add_epi64(wide);
}
#endif
