/* Golomb-Rice coding of the gaps between sorted indices. For a uniform random r-subset
 * of [0, d) the gaps are close to geometric, for which a Rice code with the right k is
 * within a few hundredths of a bit of the entropy. */
#include "bitio.h"
#include "simd_config.h"

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
        uint32_t g = idx[j] - next, q = g >> k;
        if (q + 1u + k <= 32u) {
            /* The usual case: q zeros, a one, the k low bits, in one write. */
            dr_bw_put(&w, (uint32_t)((1ull << q) | ((uint64_t)(g & low_mask) << (q + 1u))), q + 1u + k);
        } else {
            dr_bw_unary(&w, q);
            dr_bw_put(&w, g & low_mask, k);
        }
        next = idx[j] + 1u;
    }
    dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

/* Decode the codes of body[0..blen) (k low bits, q_max the largest quotient) into
 * idx_out[0..r). Several codes come out of each 64-bit load: the loop goes on taking
 * codes from the loaded word while the next one lies wholly inside its real bits. */
DR_ALWAYS_INLINE int rice_decode(const uint8_t *body, size_t blen, size_t d, size_t r,
                                 unsigned k, uint32_t *idx_out)
{
    size_t j = 0;
    uint64_t bp = 0, total = (uint64_t)blen * 8u, next = 0, q_max = (uint64_t)d >> k;
    uint64_t low_mask = (1ull << k) - 1u;
    while (j < r) {
        uint64_t word = dr_peek64(body, blen, bp);
        unsigned avail = 64u - (unsigned)(bp & 7u);
        if (word == 0) {
            /* A long unary run: count zeros a word at a time, adding them to `next` as
             * they go (q << k is part of the gap). Bytes past the end read as zero, so
             * running out shows as bp passing the end. */
            uint64_t q = 0;
            do {
                q += avail;
                bp += avail;
                if (bp >= total || q > q_max)
                    return DR_E_CORRUPT;
                word = dr_peek64(body, blen, bp);
                avail = 64u - (unsigned)(bp & 7u);
            } while (word == 0);
            q += (uint64_t)__builtin_ctzll(word);
            if (q > q_max)
                return DR_E_CORRUPT;
            /* The run's zeros, except those of this word, which the loop below counts. */
            next += (q - (uint64_t)__builtin_ctzll(word)) << k;
        }
        do {
            /* A code within the word: z zeros, the one, k low bits. Its quotient z < 64
             * cannot overflow; the range check after the sum covers it. */
            unsigned z = (unsigned)__builtin_ctzll(word), used = z + 1u + k;
            uint64_t g;
            if (used > avail) {
                /* The low bits run past this word: take them from a fresh load. */
                g = ((uint64_t)z << k) | (dr_peek64(body, blen, bp + z + 1u) & low_mask);
                word = 0;
            } else {
                g = ((uint64_t)z << k) | ((word >> z >> 1) & low_mask);
                avail -= used;
                word = word >> (used - 1u) >> 1;
            }
            bp += used;
            next += g;
            if (next >= (uint64_t)d)
                return DR_E_CORRUPT;
            idx_out[j++] = (uint32_t)next;
            next++;
        } while (word != 0 && j < r);
    }
    return bp <= total && dr_stream_ends_at(body, blen, bp) ? DR_OK : DR_E_CORRUPT;
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static int rice_decode_avx2(const uint8_t *body, size_t blen, size_t d, size_t r,
                                           unsigned k, uint32_t *idx_out)
{
    return rice_decode(body, blen, d, r, k, idx_out);
}
#endif

int dr_index_rice_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < 1u || in[0] > 31u)
        return DR_E_CORRUPT;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        return rice_decode_avx2(in + 1, len - 1u, d, r, in[0], idx_out);
#endif
    return rice_decode(in + 1, len - 1u, d, r, in[0], idx_out);
}
