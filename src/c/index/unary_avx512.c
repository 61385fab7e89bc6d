/* AVX-512 unary decoding (unary_simd.h). The AVX2 sweep spreads each byte's ones through
 * a table; here each 16 bits of a word become their set bits' numbers by one compress
 * (VPCOMPRESSD) of the lane numbers 0..15, and 16 highs are made and stored per step
 * whatever the count. The blocks of highs become indices as the AVX2 sweep's do
 * (dr_indices_block), with their low fields: each index written once, where adding the
 * highs into lows unpacked beforehand, and Rice's running sum, took three sweeps of the
 * output (1.2-1.7x the time of one at density 0.1 on a host whose memory is slow). */
#include "deepreduce.h"
#include "unary_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX512 size_t dr_unary_blocks_avx512(const uint8_t *v, size_t len, size_t r, uint32_t *out,
                                               uint64_t *last_one, dr_indices_to *to)
{
    uint32_t high[DR_UNARY_BLOCK + 64 + 16]; /* a step stores 16 lanes from its first one */
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t off, done = 0, filled = 0; /* ones made indices; highs waiting in the block */
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
        dr_indices_flush_full(to, out, high, &done, &filled);
    }
    dr_indices_block(to, done, out + done, high, filled);
    return done + filled;
}
#endif
