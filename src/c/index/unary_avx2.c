/* AVX2 unary decoding (unary_simd.h), for CPUs without AVX-512: a byte of the vector at
 * a time, the zeros below each of its ones read as 8 lanes from a table
 * (dr_byte_zeros_below) and offset by the zeros before the byte, 8 highs stored per byte
 * whatever its count, a block of them at a time made indices (dr_indices_block_avx2, 8
 * per step, which the AVX-512 sweep takes too on CPUs without VBMI; unary_avx512.c has
 * the 16-lane blocks): each brings its own low fields, so that each index is written
 * once, Elias-Fano's as they are, Rice's through their running sum. */
#include "deepreduce.h"
#include "bitpack_simd.h"
#include "unary_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Rice's step of 8: the running sum run + (low_0 + 1) + ... + (low_i + 1) in lane i, with
 * run in every lane of *carry, which it advances to the last lane's sum. The step's own
 * total is taken from its lows before run is added, so that the chain from one step to
 * the next is one add. */
DR_TARGET_AVX2 static inline __m256i rice_step(__m256i low, __m256i *carry)
{
    __m256i v = dr_running_sum8_avx2(_mm256_add_epi32(low, _mm256_set1_epi32(1)));
    __m256i sums = _mm256_add_epi32(v, *carry);
    *carry = _mm256_add_epi32(*carry, _mm256_broadcastd_epi32(_mm_shuffle_epi32(_mm256_extracti128_si256(v, 1), 0xff)));
    return sums;
}

/* Where a block takes its low fields from: groups of 8 fields unpacked as they are used
 * (groups before vec), then the fields from vec on, unpacked first into low. */
typedef struct {
    const uint8_t *group; /* the group at step 0 */
    size_t half, vec;
    unsigned bits;
    __m256i shuffle, shifts, mask;
    const uint32_t *low;
} block_lows;

/* The 8 fields of the block's step at t (a multiple of 8). */
DR_TARGET_AVX2 static inline __m256i lows8(const block_lows *from, size_t t)
{
    if (t >= from->vec)
        return _mm256_loadu_si256((const __m256i *)(const void *)(from->low + t - from->vec));
    if (from->bits == 0)
        return _mm256_setzero_si256();
    return dr_unpack8_avx2(from->group + t / 8u * from->bits, from->half, from->shuffle, from->shifts, from->mask);
}

/* The blocks of 8 fields per step (unary_simd.h). */
DR_TARGET_AVX2 void dr_indices_block_avx2(dr_indices_to *to, size_t done, uint32_t *out, const uint32_t *high, size_t n)
{
    uint32_t low[DR_UNARY_BLOCK + 64 + 8]; /* the fields from vec on */
    const __m128i count = _mm_cvtsi32_si128((int)to->bits);
    block_lows from;
    size_t t;
    from.group = to->lows + done / 8u * to->bits;
    from.half = to->plan.half;
    from.bits = to->bits;
    from.shuffle = _mm256_loadu_si256((const __m256i *)(const void *)to->plan.control);
    from.shifts = _mm256_loadu_si256((const __m256i *)(const void *)to->plan.shift);
    from.mask = _mm256_set1_epi32((int)to->plan.mask);
    from.low = low;
    from.vec = dr_block_rest(to, done, n, 8u, low);
    if (to->rice) {
        __m256i carry = _mm256_set1_epi32((int)to->run);
        for (t = 0; t + 8u <= n; t += 8u) {
            __m256i h = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t)), count);
            __m256i x = rice_step(lows8(&from, t), &carry);
            _mm256_storeu_si256((__m256i *)(void *)(out + t), _mm256_add_epi32(x, h));
        }
        dr_block_tail(to, done, out, high, low, from.vec, t, n, (uint32_t)_mm256_cvtsi256_si32(carry), 0);
        return;
    }
    {
        /* out[t + i] <= out[t + i - 1], against the lanes one back: [before's last lane,
         * now's 0..6] (one lane-crossing permute, where loading the stored outputs back
         * would wait on the stores). The first step checks no lane 0 where the block
         * starts the section. */
        __m256i before = _mm256_set1_epi32(done > 0 ? (int)out[-1] : 0), found = _mm256_setzero_si256();
        __m256i checked = done > 0 ? _mm256_set1_epi32(-1) : _mm256_setr_epi32(0, -1, -1, -1, -1, -1, -1, -1);
        for (t = 0; t + 8u <= n; t += 8u) {
            __m256i h = _mm256_sll_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(high + t)), count);
            __m256i now = _mm256_add_epi32(lows8(&from, t), h);
            __m256i back = _mm256_alignr_epi8(now, _mm256_permute2x128_si256(before, now, 0x21), 12);
            _mm256_storeu_si256((__m256i *)(void *)(out + t), now);
            found = _mm256_or_si256(found,
                                    _mm256_and_si256(checked, _mm256_cmpeq_epi32(_mm256_max_epu32(back, now), back)));
            checked = _mm256_set1_epi32(-1);
            before = now;
        }
        dr_block_tail(to, done, out, high, low, from.vec, t, n, 0, (uint32_t)!_mm256_testz_si256(found, found));
    }
}

/* The unary sweep on AVX2, with dr_unary_blocks_avx512's contract. */
DR_TARGET_AVX2 static size_t unary_blocks(const uint8_t *v, size_t len, size_t r, uint32_t *out, uint64_t *last_one,
                                          dr_indices_to *to)
{
    uint32_t high[DR_UNARY_BLOCK + 64 + 8]; /* a byte stores 8 lanes from its first one */
    size_t off, done = 0, filled = 0; /* ones added into out; highs waiting in the block */
    /* The zeros before the current byte, in every lane (mod 2^32, exact for every input
     * the caller's checks accept): a vector add per byte, where the count made in scalar
     * took a broadcast per byte. */
    __m256i zeros = _mm256_setzero_si256();
    for (off = 0; off < len; off += 8u) {
        uint64_t word;
        size_t ones = dr_unary_load_word(v, len, off, r - done - filled, &word, last_one);
        unsigned b;
        if (ones == SIZE_MAX)
            return SIZE_MAX;
        if (ones == 0) {
            zeros = _mm256_add_epi32(zeros, _mm256_set1_epi32(64));
            continue;
        }
        for (b = 0; b < 8u; b++) {
            unsigned byte = (unsigned)(word >> (8u * b)) & 0xffu;
            /* p - t for the byte's i-th one, the zeros below it: those in the byte (the
             * table's lane i) and those before the byte. */
            __m256i h = _mm256_add_epi32(_mm256_load_si256((const __m256i *)(const void *)dr_byte_zeros_below[byte]),
                                         zeros);
            _mm256_storeu_si256((__m256i *)(void *)(high + filled), h);
            zeros = _mm256_add_epi32(zeros, _mm256_set1_epi32((int)dr_byte_zeros[byte]));
            filled += (size_t)__builtin_popcount(byte);
        }
        dr_indices_flush_full(to, out, high, &done, &filled);
    }
    to->block(to, done, out + done, high, filled);
    return done + filled;
}

dr_indices_to dr_indices_to_make(int simd, const uint8_t *lows, size_t low_len, unsigned bits, int rice)
{
    dr_indices_to to;
    memset(&to, 0, sizeof to); /* the plan, for bits it does not serve; no order broken yet */
    to.lows = lows;
    to.low_len = low_len;
    to.bits = bits;
    to.rice = rice;
    /* No fields (bits 0) are zeros in every group; past 25 bits none is unpacked in the
     * loop. */
    to.vector_groups = bits == 0 ? SIZE_MAX : 0;
    if (simd >= DR_SIMD_AVX512 && dr_cpu_has_vbmi()) {
        to.block = dr_indices_block_vbmi;
        to.step = 16u;
        if (bits >= 1u && bits <= 25u) {
            dr_unpack16_plan_make(&to.plan16, bits);
            to.vector_groups = dr_unpack8_groups(low_len, bits, DR_UNPACK16_LAST);
        }
    } else {
        to.block = dr_indices_block_avx2;
        to.step = 8u;
        if (bits >= 1u && bits <= 25u) {
            dr_unpack8_plan_make(&to.plan, bits);
            to.vector_groups = dr_unpack8_groups(low_len, bits, to.plan.half);
        }
    }
    to.run = UINT32_MAX;
    return to;
}

/* The unary sweep of the path `simd` (AVX2 or AVX-512). */
static size_t unary_sweep(int simd, const uint8_t *v, size_t len, size_t r, uint32_t *out, uint64_t *last_one,
                          dr_indices_to *to)
{
    return simd >= DR_SIMD_AVX512 ? dr_unary_blocks_avx512(v, len, r, out, last_one, to)
                                  : unary_blocks(v, len, r, out, last_one, to);
}

size_t dr_ef_indices_simd(int simd, const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r,
                          unsigned l, uint32_t *out, uint64_t *last_one, uint32_t *descending)
{
    dr_indices_to to = dr_indices_to_make(simd, lows, low_len, l, 0);
    size_t ones = unary_sweep(simd, v, len, r, out, last_one, &to);
    *descending = to.descending;
    return ones;
}

size_t dr_rice_indices_simd(int simd, const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r,
                            unsigned k, uint32_t *out, uint64_t *last_one, uint64_t *sum)
{
    dr_indices_to to = dr_indices_to_make(simd, lows, low_len, k, 1);
    size_t ones = unary_sweep(simd, v, len, r, out, last_one, &to);
    /* The lows + 1 sum to at most r 2^k <= 2^32 (the caller's condition), so the running
     * sum less one, to.run, holds their sum less one exactly. */
    *sum = (uint64_t)to.run + 1u;
    return ones;
}

#endif
