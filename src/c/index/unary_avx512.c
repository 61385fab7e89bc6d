/* AVX-512 unary decoding (unary_simd.h). The AVX2 sweep spreads each byte's ones through
 * a table; here each 16 bits of a word become their set bits' numbers by one compress
 * (VPCOMPRESSD) of the lane numbers 0..15, and 16 highs are made and stored per step
 * whatever the count. The blocks of highs become indices with their low fields, 16 per
 * step here (dr_indices_block_vbmi, on CPUs with VBMI, whose byte permute unpacks 16
 * fields at once; the AVX2 blocks on those without): each index written once, where
 * adding the highs into lows unpacked beforehand, and Rice's running sum, took three
 * sweeps of the output (1.2-1.7x the time of one at density 0.1 on a host whose memory is
 * slow), and 8 fields per step took more operations per index than those sweeps' 16-lane
 * ones where the indices stay in the caches (densities 0.01, 0.001). */
#include "deepreduce.h"
#include "unary_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Rice's step of 16: the running sum run + (low_0 + 1) + ... + (low_i + 1) in lane i,
 * with run in every lane of *carry, which it advances to the last lane's sum (as the AVX2
 * step, unary_avx2.c: the chain from one step to the next is one add). Each shift of the
 * running sum moves lanes up by s with zeros below (VALIGND with zero). */
DR_TARGET_AVX512 static inline __m512i rice_step16(__m512i low, __m512i *carry)
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i v = _mm512_add_epi32(low, _mm512_set1_epi32(1));
    __m512i sums;
    v = _mm512_add_epi32(v, _mm512_alignr_epi32(v, zero, 15));
    v = _mm512_add_epi32(v, _mm512_alignr_epi32(v, zero, 14));
    v = _mm512_add_epi32(v, _mm512_alignr_epi32(v, zero, 12));
    v = _mm512_add_epi32(v, _mm512_alignr_epi32(v, zero, 8));
    sums = _mm512_add_epi32(v, *carry);
    *carry = _mm512_add_epi32(*carry, _mm512_permutexvar_epi32(_mm512_set1_epi32(15), v));
    return sums;
}

/* Where a block takes its low fields from: steps of 16 fields unpacked as they are used
 * (those before vec, a multiple of 16), then the fields from vec on, unpacked first into
 * low (dr_block_rest). */
typedef struct {
    const uint8_t *first; /* the field at step 0 */
    size_t vec;
    unsigned bits;
    __m512i control, shifts, mask;
    const uint32_t *low;
} step_lows;

/* The 16 fields of the block's step at t (a multiple of 16). */
DR_TARGET_AVX512_VBMI static inline __m512i lows16(const step_lows *from, size_t t)
{
    if (t >= from->vec)
        return _mm512_loadu_si512((const void *)(from->low + t - from->vec));
    if (from->bits == 0)
        return _mm512_setzero_si512();
    return dr_unpack16_vbmi(from->first + t / 8u * from->bits, from->control, from->shifts, from->mask);
}

/* The blocks of 16 fields per step (unary_simd.h). */
DR_TARGET_AVX512_VBMI void dr_indices_block_vbmi(dr_indices_to *to, size_t done, uint32_t *out, const uint32_t *high,
                                                 size_t n)
{
    uint32_t low[DR_UNARY_BLOCK + 64 + 16]; /* the fields from vec on */
    const __m128i count = _mm_cvtsi32_si128((int)to->bits);
    step_lows from;
    size_t t;
    from.first = to->lows + done / 8u * to->bits;
    from.bits = to->bits;
    from.control = _mm512_loadu_si512((const void *)to->plan16.control);
    from.shifts = _mm512_loadu_si512((const void *)to->plan16.shift);
    from.mask = _mm512_set1_epi32((int)to->plan16.mask);
    from.low = low;
    from.vec = dr_block_rest(to, done, n, 16u, low);
    if (to->rice) {
        __m512i carry = _mm512_set1_epi32((int)to->run);
        for (t = 0; t + 16u <= n; t += 16u) {
            __m512i h = _mm512_sll_epi32(_mm512_loadu_si512((const void *)(high + t)), count);
            __m512i x = rice_step16(lows16(&from, t), &carry);
            _mm512_storeu_si512((void *)(out + t), _mm512_add_epi32(x, h));
        }
        dr_block_tail(to, done, out, high, low, from.vec, t, n,
                      (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(carry)), 0);
        return;
    }
    {
        /* out[t + i] <= out[t + i - 1], against the lanes one back: [before's last lane,
         * now's 0..14], by one VALIGND. The first step checks no lane 0 where the block
         * starts the section. */
        __m512i before = _mm512_set1_epi32(done > 0 ? (int)out[-1] : 0);
        __mmask16 checked = done > 0 ? (__mmask16)0xffff : (__mmask16)0xfffe, found = 0;
        for (t = 0; t + 16u <= n; t += 16u) {
            __m512i h = _mm512_sll_epi32(_mm512_loadu_si512((const void *)(high + t)), count);
            __m512i now = _mm512_add_epi32(lows16(&from, t), h);
            _mm512_storeu_si512((void *)(out + t), now);
            found |= _mm512_mask_cmple_epu32_mask(checked, now, _mm512_alignr_epi32(now, before, 15));
            checked = (__mmask16)0xffff;
            before = now;
        }
        dr_block_tail(to, done, out, high, low, from.vec, t, n, 0, found != 0);
    }
}

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
    to->block(to, done, out + done, high, filled);
    return done + filled;
}
#endif
