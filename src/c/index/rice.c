/* Golomb-Rice coding of the gaps between sorted indices. For a uniform random r-subset
 * of [0, d) the gaps are close to geometric, for which a Rice code with the right k is
 * within a few hundredths of a bit of the entropy. The codes' two parts travel apart
 * (the low bits bit-packed, then the quotients in unary), so that neither decoder has to
 * find where a code ends before starting the next: the same bits, no serial chain. */
#include "bitio.h"
#include "simd_config.h"
#include "unary_simd.h"

#include <math.h>

/* The k in 0..31 with the smallest expected code length per gap when gaps are
 * geometric with P(g >= t) = q^t, q = 1 - r/d: k + 1 + E[g >> k], where
 * E[g >> k] = sum_{t >= 1} P(g >= t 2^k) = q^(2^k) / (1 - q^(2^k)). Only the encoder
 * runs this (k travels in the section), so floating point cannot make sides disagree. */
static unsigned rice_param(size_t d, size_t r)
{
    double q, best = HUGE_VAL;
    unsigned k, best_k = 0;
    if (r == 0 || r >= d)
        return 0;
    q = 1.0 - (double)r / (double)d;
    if (q >= 1.0) /* r/d below 2^-53 (d past 2^53): gaps longer than any parameter covers */
        return 31u;
    for (k = 0; k < 32u; k++) {
        double qm = pow(q, ldexp(1.0, (int)k));
        double cost = (double)k + 1.0 + qm / (1.0 - qm);
        if (cost < best) {
            best = cost;
            best_k = k;
        }
    }
    return best_k;
}

/* The bytes of the unary vector when the quotients sum to q_sum: r ones and q_sum zeros
 * up to the last one. */
static uint64_t unary_bytes(uint64_t r, uint64_t q_sum)
{
    if (r == 0)
        return 0;
    if (q_sum > UINT64_MAX - 7u - r) /* d near 2^64: saturated, as the sizes are */
        return UINT64_MAX / 8u;
    return (q_sum + r + 7u) / 8u;
}

size_t dr_index_rice_bound(size_t d, size_t r)
{
    /* The quotients add up to at most (sum of gaps) >> k <= (d - r) >> k. */
    unsigned k = rice_param(d, r);
    if (r > d)
        return 0;
    return dr_sat_size(1u + (uint64_t)dr_bitpack_size(r, k) + unary_bytes(r, ((uint64_t)d - r) >> k));
}

/* The bound grows with r while the parameter stays; the parameter only falls as r
 * grows (the expected-cost comparison of k and k + 1 turns once, as the gaps shrink). So
 * the largest bound up to r is at r or at the last r' of a run of a larger parameter:
 * each run's first r' found by bisection, at most 32 runs. */
size_t dr_index_rice_bound_upto(size_t d, size_t r)
{
    size_t best, end;
    if (r > d) /* a section holds at most d indices */
        r = d;
    best = dr_index_rice_bound(d, r);
    end = r;
    if (r == 0)
        return best;
    while (end > 1) {
        unsigned k = rice_param(d, end);
        size_t lo = 1, hi = end, run_end;
        while (lo < hi) { /* the first r' in [1, end] whose parameter is no more than k */
            size_t mid = lo + (hi - lo) / 2u;
            if (rice_param(d, mid) <= k)
                hi = mid;
            else
                lo = mid + 1u;
        }
        if (lo <= 1)
            break;
        end = lo - 1u; /* the last r' of the run before */
        run_end = dr_index_rice_bound(d, end);
        if (run_end > best)
            best = run_end;
    }
    return best;
}

/* One sweep over the set for the encoder's checks and its size: *descending nonzero
 * where some idx[j] <= idx[j - 1], and the sum of the gaps' quotients, (idx[0] >> k) +
 * the (idx[j] - idx[j - 1] - 1) >> k (meaningless where the set does not ascend). Gap
 * j from idx[j - 1] rather than a carried `next`, and no early exit: the loop
 * vectorises. */
DR_ALWAYS_INLINE uint64_t rice_quotients(const uint32_t *idx, size_t r, unsigned k, uint32_t *descending)
{
    uint64_t q_sum = r > 0 ? idx[0] >> k : 0;
    uint32_t bad = 0;
    size_t j;
    for (j = 1; j < r; j++) {
        bad |= (uint32_t)(idx[j] <= idx[j - 1]);
        q_sum += (idx[j] - idx[j - 1] - 1u) >> k;
    }
    *descending = bad;
    return q_sum;
}

static uint64_t rice_quotients_plain(const uint32_t *idx, size_t r, unsigned k, uint32_t *descending)
{
    return rice_quotients(idx, r, k, descending);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static uint64_t rice_quotients_avx2(const uint32_t *idx, size_t r, unsigned k, uint32_t *descending)
{
    return rice_quotients(idx, r, k, descending);
}
#endif

int dr_index_rice_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                         size_t *written)
{
    dr_bitwriter w;
    dr_onewriter ones;
    size_t j, size, low_bytes;
    unsigned k;
    uint32_t next = 0, low_mask, descending;
    uint64_t q_sum, p;
    uint8_t *unary;
    int simd = dr_simd_active();
    if (dr_index_check_args(idx, r, d, out, written) != DR_OK)
        return DR_E_ARG;
    k = rice_param(d, r);
    low_bytes = dr_bitpack_size(r, k);
#if DR_HAVE_X86_SIMD
    /* The vector sweeps check the set as they go (a stretch before its codes): where cap
     * holds the most an ascending set below idx[r - 1] can take, its quotients summing to
     * at most (idx[r - 1] + 1 - r) >> k, one sweep reads the set. Such a set ends at or
     * above r - 1 and below d; one that does not ascend is refused there, with part of
     * the section written. Otherwise (a short cap is refused before anything is written)
     * a sweep of checks comes first. */
    if (simd >= DR_SIMD_AVX2 && r > 0 && (uint64_t)idx[r - 1] < (uint64_t)d && (uint64_t)idx[r - 1] + 1u >= r) {
        uint64_t bits, unary_most = unary_bytes(r, ((uint64_t)idx[r - 1] + 1u - r) >> k);
        if (cap >= dr_sat_size(1u + (uint64_t)low_bytes + unary_most)) {
            int ascending;
            out[0] = (uint8_t)k;
            unary = out + 1 + low_bytes;
            memset(unary, 0, (size_t)unary_most);
            ascending = simd >= DR_SIMD_AVX512
                            ? dr_rice_sweep_avx512(idx, r, k, out + 1, low_bytes, unary, (size_t)unary_most, &bits)
                            : dr_rice_sweep_avx2(idx, r, k, out + 1, low_bytes, unary, (size_t)unary_most, &bits);
            if (!ascending)
                return DR_E_ARG;
            *written = 1u + low_bytes + (size_t)((bits + 7u) / 8u);
            return DR_OK;
        }
    }
    q_sum = simd >= DR_SIMD_AVX2 ? rice_quotients_avx2(idx, r, k, &descending)
                                 : rice_quotients_plain(idx, r, k, &descending);
#else
    q_sum = rice_quotients_plain(idx, r, k, &descending);
    (void)simd;
#endif
    if (descending || (r > 0 && (uint64_t)idx[r - 1] >= (uint64_t)d))
        return DR_E_ARG;
    size = dr_sat_size(1u + (uint64_t)low_bytes + unary_bytes(r, q_sum));
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    out[0] = (uint8_t)k;
    low_mask = (1u << k) - 1u;
    /* In one sweep: the low k bits of every gap, bit-packed, and the quotients in unary,
     * q zeros then a one each: gap j's one at bit Q_j + j, set in place (AVX-512: 16
     * gaps per step, unary_write_avx512.c; AVX2: 8, unary_write_avx2.c). */
    unary = out + 1 + low_bytes;
    memset(unary, 0, size - 1u - low_bytes);
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2 && r > 0) {
        uint64_t bits; /* the sweep's checks pass: the set was checked above */
        if (simd >= DR_SIMD_AVX512)
            (void)dr_rice_sweep_avx512(idx, r, k, out + 1, low_bytes, unary, size - 1u - low_bytes, &bits);
        else
            (void)dr_rice_sweep_avx2(idx, r, k, out + 1, low_bytes, unary, size - 1u - low_bytes, &bits);
        *written = size;
        return DR_OK;
    }
#endif
    dr_ow_init(&ones, unary, size - 1u - low_bytes);
    dr_bw_init(&w, out + 1);
    next = 0;
    p = 0;
    for (j = 0; j < r; j++) {
        uint32_t g = idx[j] - next;
        if (k > 0)
            dr_bw_put(&w, g & low_mask, k);
        p += g >> k;
        dr_ow_set(&ones, p + j);
        next = idx[j] + 1u;
    }
    dr_ow_flush(&ones);
    if (k > 0)
        dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

/* The checks after a decode's sweeps: exactly r ones, the vector ending in the byte of
 * the last one, and the last index below d, the quotients' sum bounded first (so that
 * the shift in the last index did not wrap). */
static int rice_ends_well(size_t ones, size_t r, size_t d, unsigned k, size_t unary_len, uint64_t last_one,
                          uint64_t last_index)
{
    return ones == r && unary_len == (size_t)(last_one / 8u) + 1u &&
                   last_one - (r - 1u) <= ((uint64_t)d - 1u) >> k && last_index < (uint64_t)d
               ? DR_OK
               : DR_E_CORRUPT;
}

/* Decode in two sweeps, each simple enough to run near its own speed: the low bits
 * with the bit unpacker; then the ones of the unary vector a 64-bit word at a time
 * through a per-byte table of set-bit positions (the one of gap j at bit Q_j + j gives
 * Q_j, the quotients' running sum, with no branch per code), each index the sum of its
 * parts and a running sum of the lows. */
DR_ALWAYS_INLINE int rice_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                                 uint32_t *idx_out)
{
    const uint8_t *unary;
    size_t unary_len, j = 0, off;
    unsigned k = in[0];
    uint64_t last_one = 0, carry = 0, value = 0;
    int st = dr_low_block(in, len, r, k, idx_out, &unary, &unary_len);
    if (st != DR_OK)
        return st;
    if (r == 0)
        return unary_len == 0 ? DR_OK : DR_E_CORRUPT;
    for (off = 0; off < unary_len; off += 8u) {
        uint64_t base = (uint64_t)off * 8u;
        uint8_t pos[64 + 8];
        size_t ones = dr_unary_word(unary, unary_len, off, r - j, pos, &last_one), t;
        if (ones == SIZE_MAX)
            return DR_E_CORRUPT;
        /* x_j = (Q_j << k) + (the lows up to j) + j, in 64 bits: strictly ascending by
         * construction (each gap adds at least one), so the last one's bound, checked
         * after the sweep, bounds them all and the truncation to 32 bits is exact. */
        for (t = 0; t < ones; t++) {
            uint64_t low = idx_out[j + t];
            value = ((base + pos[t] - (j + t)) << k) + low + carry;
            carry += low + 1u;
            idx_out[j + t] = (uint32_t)value;
        }
        j += ones;
    }
    return rice_ends_well(j, r, d, k, unary_len, last_one, value);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static int rice_decode_avx2(const uint8_t *in, size_t len, size_t d, size_t r,
                                           uint32_t *idx_out)
{
    return rice_decode(in, len, d, r, idx_out);
}

/* The same sweep in vectors, block by block, every index written once (unary_avx2.c,
 * unary_avx512.c): the running sum of lows + 1 (x_j = (Q_j << k) + that sum - 1), and
 * Q_j << k added per one. In 32 bits, so only where the sums cannot wrap: r lows below
 * 2^k sum with the ones to at most r 2^k <= 2^32 (every section this library writes:
 * 2^k is below the mean gap). */
static int rice_decode_vectors(int simd, const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    const uint8_t *unary;
    size_t unary_len, j;
    unsigned k = in[0];
    uint64_t last_one = 0, sum;
    if (!dr_low_block_fits(in, len, r, k, &unary, &unary_len))
        return DR_E_CORRUPT;
    if (r == 0)
        return unary_len == 0 ? DR_OK : DR_E_CORRUPT;
    j = dr_rice_indices_simd(simd, in + 1, (size_t)(unary - in) - 1u, unary, unary_len, r, k, idx_out, &last_one, &sum);
    /* The last index in 64 bits (Q_last bounded first by rice_ends_well's check, so
     * nothing wraps): no sum above wrapped when it is below d, as the x_j ascend. A
     * count other than r (SIZE_MAX included) is refused there before the rest counts. */
    return rice_ends_well(j, r, d, k, unary_len, last_one, ((last_one - (r - 1u)) << k) + sum - 1u);
}
#endif

int dr_index_rice_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    int simd, st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < 1u || in[0] > 31u)
        return DR_E_CORRUPT;
    simd = dr_simd_active();
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2 && ((uint64_t)r << in[0]) <= ((uint64_t)1 << 32))
        return rice_decode_vectors(simd, in, len, d, r, idx_out);
    if (simd >= DR_SIMD_AVX2)
        return rice_decode_avx2(in, len, d, r, idx_out);
#else
    (void)simd;
#endif
    return rice_decode(in, len, d, r, idx_out);
}
