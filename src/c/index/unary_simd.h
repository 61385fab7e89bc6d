/* Internal: the AVX-512 and AVX2 decoders of a unary vector's ones, shared by Elias-Fano
 * (its upper vector) and Rice (its quotients), the running sum Rice's lows need, and both
 * codecs' encoding sweeps (AVX-512).
 *
 * In both codecs the t-th one (t = 0, 1, ...) of the vector sits at bit p_t = h_t + t,
 * with h_t the index's high part (Elias-Fano) or the quotients' running sum (Rice), and
 * the decoders add h_t << shift to what the lows left in out[t]. */
#ifndef DR_UNARY_SIMD_H
#define DR_UNARY_SIMD_H

#include "bitio.h"
#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* The inclusive running sum of v's 8 lanes, modulo 2^32: within each 128-bit half (lane
 * i adds lane i - 1, then i - 2), then the low half's total added to the high half. No
 * lane-crossing permutes (VPERMD, VPERM2I128: several adds' cost each on AMD before Zen
 * 2): the sum crosses between the halves by a 128-bit insert. Rice's encoder and decoder
 * (unary_write_avx2.c, unary_avx2.c). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_running_sum8_avx2(__m256i v)
{
    __m256i top;
    v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4));
    v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
    top = _mm256_shuffle_epi32(v, 0xff);
    return _mm256_add_epi32(v, _mm256_inserti128_si256(_mm256_setzero_si256(), _mm256_castsi256_si128(top), 1));
}

/* For the t-th one of v[0..len) at bit p_t, t < r: out[t] += (uint32_t)((p_t - t) << shift)
 * (shift <= 32; 32 adds nothing, as the scalar decoders' 64-bit shift truncated to 32
 * bits). Words of 64 bits, a vector compress of the bit numbers per 16 bits. Returns the
 * number of ones, or SIZE_MAX where a word takes the count past r (out[0..r) then holds
 * partial sums: the caller refuses the input). *last_one is set to the highest one's bit
 * number when there is a one, and left alone otherwise. */
size_t dr_unary_add_highs_avx512(const uint8_t *v, size_t len, size_t r, unsigned shift, uint32_t *out,
                                 uint64_t *last_one);

/* out[t] = (out[0] + 1) + ... + (out[t] + 1) - 1 for t < n, modulo 2^32; returns the
 * sum of the n values out[t] + 1 in 64 bits (exact for any n that fits in memory). */
uint64_t dr_rice_running_sum_avx512(uint32_t *out, size_t n);

/* The AVX2 decoders (unary_avx2.c) take the vector a byte per step, and each block of
 * ones with its low fields, so that every index is written once. */
/* For each byte value, the zeros below each of its set bits, ascending (the j-th one, at
 * bit p_j, has p_j - j), in 32-bit lanes; 0 past its last one (unary_tables.c). */
extern const uint32_t dr_byte_zeros_below[256][8];
/* For each byte value, its zeros: 8 less its ones (unary_tables.c). */
extern const uint32_t dr_byte_zeros[256];

/* Elias-Fano's indices on AVX2 in one sweep: out[t] = low_t + ((p_t - t) << l), low_t
 * the t-th of the fields of l bits (1..32) packed at lows[0..low_len) (which holds at
 * least r). Returns the ones, or SIZE_MAX past r, and sets *last_one, as
 * dr_unary_add_highs_avx512 does; sets *descending nonzero when some out[t] <= out[t - 1]
 * among those written. */
size_t dr_ef_indices_avx2(const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r, unsigned l,
                          uint32_t *out, uint64_t *last_one, uint32_t *descending);

/* Rice's indices on AVX2 in one sweep: out[t] = (the running sum of the lows + 1, less
 * one, as dr_rice_running_sum_avx512 makes it) + (Q_t << k), the lows the fields of k
 * bits (0..31) at lows[0..low_len) (at least r of them); *sum gets the lows + 1 summed in
 * 64 bits. Returns the ones and sets *last_one as dr_ef_indices_avx2 does. For
 * sections where r 2^k <= 2^32 (the sums then do not wrap). */
size_t dr_rice_indices_avx2(const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r, unsigned k,
                            uint32_t *out, uint64_t *last_one, uint64_t *sum);

/* The encoders' sweeps (unary_write_avx512.c); the bytes are the portable encoders'. */

/* Sets bit p of the zeroed vector v (p < 8 len): where the vector steps do not. */
static inline void dr_unary_set_bit(uint8_t *v, uint64_t p)
{
    v[p >> 3] |= (uint8_t)(1u << (p & 7u));
}

/* Elias-Fano's ones for idx[t..end), one at a time. */
static inline void dr_ef_upper_ones(const uint32_t *idx, size_t t, size_t end, unsigned l, uint8_t *v)
{
    for (; t < end; t++)
        dr_unary_set_bit(v, ((uint64_t)idx[t] >> l) + t);
}

/* Rice's ones for idx[t..end), one at a time, and their gaps' low k bits to w where w is
 * not NULL, from the quotients so far and idx[t - 1] + 1 (*next), which both advance. */
static inline void dr_rice_codes(const uint32_t *idx, size_t t, size_t end, unsigned k, dr_bitwriter *w,
                                 uint8_t *v, uint64_t *quotients, uint64_t *next)
{
    for (; t < end; t++) {
        uint64_t gap = (uint64_t)idx[t] - *next;
        if (w != NULL && k > 0u)
            dr_bw_put(w, (uint32_t)gap & ((1u << k) - 1u), k);
        *quotients += gap >> k;
        dr_unary_set_bit(v, *quotients + t);
        *next = (uint64_t)idx[t] + 1u;
    }
}

/* Elias-Fano's low fields, idx[t] & (2^l - 1), l in 1..32, appended to w (fresh, or one
 * that only this took) 16 at a time while each step's stores stay within the first `room`
 * bytes of w->out. Returns how many it appended; the caller appends the rest. */
size_t dr_ef_lows_avx512(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room);

/* Elias-Fano's upper vector: bit (idx[t] >> l) + t of the zeroed v[0..len), for t < r. */
void dr_ef_upper_avx512(const uint32_t *idx, size_t r, unsigned l, uint8_t *v, size_t len);

/* Rice's one sweep: the low k bits of every gap g_t = idx[t] - idx[t - 1] - 1 (g_0 =
 * idx[0]) bit-packed into lows[0..low_bytes) when k > 0, and the one of index t at bit
 * Q_t + t of the zeroed v[0..len), Q_t = (g_0 >> k) + ... + (g_t >> k). */
void dr_rice_sweep_avx512(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows, size_t low_bytes, uint8_t *v,
                          size_t len);

/* The encoders' sweeps again for AVX2 CPUs (unary_write_avx2.c: 8 indices per step).
 * Elias-Fano's lows and upper vector in one sweep: the upper vector as
 * dr_ef_upper_avx512 writes it, and low fields as dr_ef_lows_avx512 appends them (l in
 * 0..32: none for l = 0 or above 28); returns how many fields it appended. Rice's
 * sweep with dr_rice_sweep_avx512's contract. */
size_t dr_ef_sweep_avx2(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room, uint8_t *v,
                        size_t len);
void dr_rice_sweep_avx2(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows, size_t low_bytes, uint8_t *v,
                        size_t len);
#endif

#endif
