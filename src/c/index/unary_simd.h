/* Internal: the AVX-512 and AVX2 decoders of a unary vector's ones, shared by Elias-Fano
 * (its upper vector) and Rice (its quotients), and both codecs' encoding sweeps.
 *
 * In both codecs the t-th one (t = 0, 1, ...) of the vector sits at bit p_t = h_t + t,
 * with h_t the index's high part (Elias-Fano) or the quotients' running sum (Rice), and
 * the decoders make out[t] from h_t << shift and the lows. */
#ifndef DR_UNARY_SIMD_H
#define DR_UNARY_SIMD_H

#include "bitio.h"
#include "bitpack_simd.h"
#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* The decoders take the vector's ones a block at a time: up to DR_UNARY_BLOCK + 63 highs
 * (a word adds up to 64 to a block under DR_UNARY_BLOCK) go to a stack block, store
 * after store, and then become indices in whole vectors with their low fields, so that
 * every index is written once (writing out straight away would load each step's entries
 * just after the overlapping store of the step before, which the core cannot forward). */
#define DR_UNARY_BLOCK 1024u

/* A block's highs made indices: out[0..n) = (the fields done..done + n, for Rice their
 * running sum) + (high[t] << bits), high[t] = p_t - t of the block's ones, and for
 * Elias-Fano whether they ascend from out[-1] (done > 0) on. done is a multiple of 8 (the
 * block's fields start on a byte), n <= DR_UNARY_BLOCK + 63. The AVX2 blocks take 8
 * fields per step (unary_avx2.c), the AVX-512 ones 16, on CPUs with VBMI
 * (unary_avx512.c). */
struct dr_indices_to;
typedef void dr_indices_block_fn(struct dr_indices_to *to, size_t done, uint32_t *out, const uint32_t *high,
                                 size_t n);
dr_indices_block_fn dr_indices_block_avx2;
dr_indices_block_fn dr_indices_block_vbmi;

/* Where a decoder's blocks of highs go: the section's low fields of `bits` bits, unpacked
 * as they are used, Elias-Fano's as they are, Rice's through their running sum. Made by
 * dr_indices_to_make. */
typedef struct dr_indices_to {
    const uint8_t *lows;
    size_t low_len;           /* the section's bytes */
    unsigned bits;
    int rice;
    dr_indices_block_fn *block; /* the blocks of the CPU's level */
    size_t step;              /* the fields they take per step, 8 or 16 */
    dr_unpack8_plan plan;     /* the AVX2 blocks' unpacker, for 1 to 25 bits */
    dr_unpack16_plan plan16;  /* the AVX-512 blocks' */
    size_t vector_groups;     /* the groups of 8 fields from the section's start from which
                                 the blocks' unpacker reads inside the section */
    uint32_t descending;      /* Elias-Fano: nonzero once some out[t] <= out[t - 1] */
    uint32_t run;             /* Rice: the running sum so far, less one */
} dr_indices_to;

/* The state of a sweep over the `bits`-bit fields at lows[0..low_len) (0..32 bits;
 * Rice's `rice` nonzero) for the blocks of the path `simd` (AVX2 or AVX-512). */
dr_indices_to dr_indices_to_make(int simd, const uint8_t *lows, size_t low_len, unsigned bits, int rice);

/* The fields of a block (from field `done`, n of them) that its steps of `step` (8 or 16)
 * do not unpack as they go: those steps' windows lie in the section (to->vector_groups;
 * a step of 16 starts at every other group of 8), and the fields from the returned vec
 * on (the block's last, fewer than a step; the section's last; all of them past 25
 * bits) are unpacked here into low, one at a time (dr_bitunpack_scalar: the caller
 * checked the section). */
static inline size_t dr_block_rest(const dr_indices_to *to, size_t done, size_t n, size_t step, uint32_t *low)
{
    size_t first_group = done / 8u, vec = 0, at;
    if (to->vector_groups > first_group) {
        size_t groups = to->vector_groups - first_group, per = step / 8u;
        size_t steps = groups / per + (groups % per != 0);
        vec = step * (steps < n / step ? steps : n / step);
    }
    at = (done + vec) / 8u * to->bits;
    if (vec < n)
        dr_bitunpack_scalar(to->lows + at, to->low_len - at, n - vec, to->bits, low);
    return vec;
}

/* A block's indices t..n past its vector steps, one at a time (low holds the fields from
 * vec on), with `last` the running sum at t (Rice) or `descending` the order so far
 * (Elias-Fano), as the steps left them. bits 32 adds no high (a vector shift past 31
 * gives 0); Rice's indices ascend by construction (each gap adds at least one). */
static inline void dr_block_tail(dr_indices_to *to, size_t done, uint32_t *out, const uint32_t *high,
                                 const uint32_t *low, size_t vec, size_t t, size_t n, uint32_t last,
                                 uint32_t descending)
{
    const unsigned bits = to->bits;
    for (; t < n; t++) {
        uint32_t up = bits < 32u ? high[t] << bits : 0u;
        if (to->rice) {
            last += low[t - vec] + 1u;
            out[t] = last + up;
        } else {
            out[t] = low[t - vec] + up;
            if (done + t > 0)
                descending |= (uint32_t)(out[t] <= out[(ptrdiff_t)t - 1]);
        }
    }
    if (to->rice)
        to->run = last;
    else
        to->descending |= descending;
}

/* A sweep's step after each word of the vector: once the block holds DR_UNARY_BLOCK
 * highs, its whole steps become indices (so that every block's fields start on a byte)
 * and the highs past them start the next block. *done: the ones made indices; *filled:
 * the highs waiting in high. */
static inline void dr_indices_flush_full(dr_indices_to *to, uint32_t *out, uint32_t *high, size_t *done,
                                         size_t *filled)
{
    size_t whole;
    if (*filled < DR_UNARY_BLOCK)
        return;
    whole = *filled - *filled % to->step;
    to->block(to, *done, out + *done, high, whole);
    *done += whole;
    *filled -= whole;
    memcpy(high, high + whole, *filled * sizeof *high);
}

/* The unary sweep on AVX-512: for the t-th one of v[0..len) at bit p_t, t < r, its high
 * p_t - t, from each 16 bits of a word by one compress (VPCOMPRESSD) of the lane numbers,
 * the highs made indices a block at a time by to's blocks. Returns the ones, or
 * SIZE_MAX where a word takes the count past r (out[0..r) then holds partial results:
 * the caller refuses the input). *last_one is set to the highest one's bit number when
 * there is a one, and left alone otherwise. */
size_t dr_unary_blocks_avx512(const uint8_t *v, size_t len, size_t r, uint32_t *out, uint64_t *last_one,
                              dr_indices_to *to);

/* The AVX2 decoders' tables: they take the vector a byte per step. */
/* For each byte value, the zeros below each of its set bits, ascending (the j-th one, at
 * bit p_j, has p_j - j), in 32-bit lanes; 0 past its last one (unary_tables.c). */
extern const uint32_t dr_byte_zeros_below[256][8];
/* For each byte value, its zeros: 8 less its ones (unary_tables.c). */
extern const uint32_t dr_byte_zeros[256];

/* Elias-Fano's indices in one sweep (`simd` AVX2 or AVX-512: the unary sweep's path):
 * out[t] = low_t + ((p_t - t) << l), low_t the t-th of the fields of l bits (1..32)
 * packed at lows[0..low_len) (which holds at least r). Returns the ones, or SIZE_MAX
 * past r, and sets *last_one, as dr_unary_blocks_avx512 does; sets *descending nonzero
 * when some out[t] <= out[t - 1] among those written. */
size_t dr_ef_indices_simd(int simd, const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r,
                          unsigned l, uint32_t *out, uint64_t *last_one, uint32_t *descending);

/* Rice's indices in one sweep (`simd` as above): out[t] = (the lows + 1 summed up to t,
 * less one) + (Q_t << k), the lows the fields of k bits (0..31) at lows[0..low_len) (at
 * least r of them); *sum gets the lows + 1 summed in 64 bits. Returns the ones and sets
 * *last_one as dr_ef_indices_simd does. For sections where r 2^k <= 2^32 (the sums then
 * do not wrap). */
size_t dr_rice_indices_simd(int simd, const uint8_t *lows, size_t low_len, const uint8_t *v, size_t len, size_t r,
                            unsigned k, uint32_t *out, uint64_t *last_one, uint64_t *sum);

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

/* Whether idx[t..end) ascend from idx[t - 1] (t > 0) and stay at or below `last`: the
 * sweeps' check of the indices past their last whole step. */
static inline int dr_ascending_to(const uint32_t *idx, size_t t, size_t end, uint32_t last)
{
    for (; t < end; t++)
        if ((t > 0 && idx[t] <= idx[t - 1u]) || idx[t] > last)
            return 0;
    return 1;
}

/* Elias-Fano's low fields, idx[t] & (2^l - 1), l in 1..32, appended to w (fresh, or one
 * that only this took) 16 at a time while each step's stores stay within the first `room`
 * bytes of w->out. Returns how many it appended; the caller appends the rest. */
size_t dr_ef_lows_avx512(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room);

/* Elias-Fano's upper vector, which checks the set as it goes: bit (idx[t] >> l) + t of
 * the zeroed v[0..len), for t < r (r >= 1; v holds (idx[r - 1] >> l) + r bits). Returns
 * 1, or 0 where some idx[t] <= idx[t - 1] or idx[t] > idx[r - 1] (then what it wrote is
 * partial, inside v: a step's indices are checked before their ones are set). */
int dr_ef_upper_avx512(const uint32_t *idx, size_t r, unsigned l, uint8_t *v, size_t len);

/* Rice's one sweep, which checks the set as it goes: the low k bits of every gap g_t =
 * idx[t] - idx[t - 1] - 1 (g_0 = idx[0]) bit-packed into lows[0..low_bytes) when k > 0,
 * and the one of index t at bit Q_t + t of the zeroed v[0..len), Q_t = (g_0 >> k) + ...
 * + (g_t >> k). v must hold (idx[r - 1] + 1 - r) >> k + r bits (r >= 1), as many as an
 * ascending set can take. Returns 1 with *bits = Q_{r-1} + r, or 0 where some idx[t] <=
 * idx[t - 1] or idx[t] > idx[r - 1] (then what it wrote is partial; every store stayed
 * inside lows and v: a stretch of indices is checked before its codes are written). */
int dr_rice_sweep_avx512(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows, size_t low_bytes, uint8_t *v,
                         size_t len, uint64_t *bits);

/* The encoders' sweeps again for AVX2 CPUs (unary_write_avx2.c: 8 indices per step).
 * Elias-Fano's lows and upper vector in one sweep, for a set checked before: the upper
 * vector as dr_ef_upper_avx512 writes it, and low fields as dr_ef_lows_avx512 appends
 * them (l in 0..32: none for l = 0 or above 28); returns how many fields it appended.
 * (Checking in this sweep measured slower than the check's own sweep before it: up to
 * 1.3x at densities 0.01 and 0.001.) Rice's sweep with dr_rice_sweep_avx512's contract,
 * where the check in the sweep shares its loads of the indices one back. */
size_t dr_ef_sweep_avx2(const uint32_t *idx, size_t r, unsigned l, dr_bitwriter *w, size_t room, uint8_t *v,
                        size_t len);
int dr_rice_sweep_avx2(const uint32_t *idx, size_t r, unsigned k, uint8_t *lows, size_t low_bytes, uint8_t *v,
                       size_t len, uint64_t *bits);
#endif

#endif
