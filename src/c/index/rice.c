/* Golomb-Rice coding of the gaps between sorted indices. For a uniform random r-subset
 * of [0, d) the gaps are close to geometric, for which a Rice code with the right k is
 * within a few hundredths of a bit of the entropy. */
#include "bitio.h"

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

size_t dr_index_rice_bound(size_t d, size_t r)
{
    /* The quotients add up to at most (sum of gaps) >> k <= (d - r) >> k. */
    unsigned k = rice_param(d, r);
    uint64_t bits;
    if (r > d)
        return 0;
    if (r == 0)
        return 1;
    bits = (uint64_t)r * (k + 1u) + (((uint64_t)d - r) >> k);
    return dr_sat_size(1u + (bits + 7u) / 8u);
}

int dr_index_rice_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                         size_t *written)
{
    dr_bitwriter w;
    size_t j, size;
    unsigned k;
    uint32_t next = 0, low_mask;
    uint64_t bits;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    k = rice_param(d, r);
    bits = (uint64_t)r * (k + 1u);
    for (j = 0; j < r; j++) {
        bits += (idx[j] - next) >> k;
        next = idx[j] + 1u;
    }
    size = dr_sat_size(1u + (bits + 7u) / 8u);
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    out[0] = (uint8_t)k;
    low_mask = (1u << k) - 1u;
    dr_bw_init(&w, out + 1);
    next = 0;
    for (j = 0; j < r; j++) {
        uint32_t g = idx[j] - next;
        dr_bw_unary(&w, g >> k);
        dr_bw_put(&w, g & low_mask, k);
        next = idx[j] + 1u;
    }
    dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

int dr_index_rice_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    const uint8_t *body;
    size_t j, blen;
    unsigned k;
    uint64_t bp = 0, total, next = 0, q_max, low_mask;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < 1u || in[0] > 31u)
        return DR_E_CORRUPT;
    k = in[0];
    body = in + 1;
    blen = len - 1u;
    total = (uint64_t)blen * 8u;
    q_max = (uint64_t)d >> k;
    low_mask = (1ull << k) - 1u;
    for (j = 0; j < r; j++) {
        uint64_t q = 0, g, word = dr_peek64(body, blen, bp);
        unsigned z;
        /* The unary part: count zeros up to the next one, a word at a time. Bytes past
         * the end read as zero, so running out shows as bp passing the end. */
        while (word == 0) {
            q += 64u - (bp & 7u);
            bp += 64u - (bp & 7u);
            if (bp >= total || q > q_max)
                return DR_E_CORRUPT;
            word = dr_peek64(body, blen, bp);
        }
        z = (unsigned)__builtin_ctzll(word);
        q += z;
        if (q > q_max)
            return DR_E_CORRUPT;
        /* The low bits usually sit in the same 57-bit window: no second load. */
        if (z + 1u + k <= 57u)
            g = (q << k) | ((word >> z >> 1) & low_mask);
        else
            g = (q << k) | (dr_peek64(body, blen, bp + z + 1u) & low_mask);
        bp += z + 1u + k;
        if (bp > total || g >= (uint64_t)d - next)
            return DR_E_CORRUPT;
        next += g;
        idx_out[j] = (uint32_t)next;
        next++;
    }
    return dr_stream_ends_at(body, blen, bp) ? DR_OK : DR_E_CORRUPT;
}
