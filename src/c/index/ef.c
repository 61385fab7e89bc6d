/* Elias-Fano coding of a sorted index set: each index splits into l low bits, stored
 * verbatim, and a high part, stored as a unary-coded increment in a bit vector of about
 * 2r bits. With l = floor(log2(d / r)) the size is within 2 bits per index of the
 * information-theoretic floor, and decoding is a bit-unpack plus a scan of set bits. */
#include "bitio.h"

/* The l that minimises r*l + (d >> l): the largest l with r << l <= d. */
static unsigned ef_low_bits(size_t d, size_t r)
{
    unsigned l = 0;
    if (r == 0)
        return 0;
    while (l < 32u && ((uint64_t)r << (l + 1u)) <= (uint64_t)d)
        l++;
    return l;
}

static uint64_t ef_size(uint64_t r, unsigned l, uint64_t high_last)
{
    uint64_t upper_bits = r == 0 ? 0 : high_last + r;
    return 1u + (uint64_t)dr_bitpack_size((size_t)r, l) + (upper_bits + 7u) / 8u;
}

size_t dr_index_ef_bound(size_t d, size_t r)
{
    unsigned l = ef_low_bits(d, r);
    if (r > d)
        return 0;
    return dr_sat_size(ef_size(r, l, r == 0 ? 0 : ((uint64_t)d - 1u) >> l));
}

int dr_index_ef_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                       size_t *written)
{
    dr_bitwriter w;
    size_t j, size, low_bytes;
    unsigned l;
    uint32_t low_mask;
    uint64_t prev_high = 0;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    l = ef_low_bits(d, r);
    size = (size_t)ef_size(r, l, r == 0 ? 0 : (uint64_t)idx[r - 1] >> l);
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    out[0] = (uint8_t)l;
    low_mask = l == 32u ? UINT32_MAX : (1u << l) - 1u;
    low_bytes = dr_bitpack_size(r, l);
    dr_bw_init(&w, out + 1);
    if (l > 0) {
        for (j = 0; j < r; j++)
            dr_bw_put(&w, idx[j] & low_mask, l);
        dr_bw_finish(&w);
    }
    dr_bw_init(&w, out + 1 + low_bytes);
    for (j = 0; j < r; j++) {
        uint64_t high = (uint64_t)idx[j] >> l;
        dr_bw_unary(&w, high - prev_high);
        prev_high = high;
    }
    dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

int dr_index_ef_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    const uint8_t *low, *upper;
    size_t low_bytes, upper_len, j = 0, off, low_fast;
    unsigned l;
    uint64_t low_mask, low_bp = 0, next_min = 0, last_one = 0, bad = 0;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < 1u || in[0] > 32u)
        return DR_E_CORRUPT;
    l = in[0];
    low_bytes = dr_bitpack_size(r, l);
    if (len - 1u < low_bytes || !dr_stream_ends_at(in + 1, low_bytes, (uint64_t)r * l))
        return DR_E_CORRUPT;
    if (r == 0)
        return len == 1u ? DR_OK : DR_E_CORRUPT;
    low = in + 1;
    upper = low + low_bytes;
    upper_len = len - 1u - low_bytes;
    low_mask = (1ull << l) - 1u;
    /* Low fields whose 8-byte window lies inside the low block load directly. */
    low_fast = l > 0 && low_bytes >= 8u ? (size_t)(((uint64_t)(low_bytes - 8u) * 8u) / l) + 1u : 0u;
    /* One pass over the set bits of the upper vector, a 64-bit word at a time: the one
     * for index j sits at bit high_j + j, and its low bits are field j of the low block.
     * Ascending order is checked on the way without a branch; the range check needs
     * only the last index, since high_j never decreases: high_last <= (d-1) >> l rules
     * out any overflow of high << l, and then x_last < d bounds them all. */
    for (off = 0; off < upper_len; off += 8u) {
        uint64_t word = 0;
        size_t take = upper_len - off < 8u ? upper_len - off : 8u;
        memcpy(&word, upper + off, take);
        while (word != 0) {
            uint64_t p = (uint64_t)off * 8u + (uint64_t)__builtin_ctzll(word), lo, x;
            word &= word - 1u;
            if (j == r)
                return DR_E_CORRUPT;
            if (j < low_fast) {
                memcpy(&lo, low + (low_bp >> 3), 8);
                lo >>= low_bp & 7u;
            } else {
                lo = dr_peek64(low, low_bytes, low_bp);
            }
            x = ((p - j) << l) | (lo & low_mask);
            bad |= (uint64_t)(x < next_min);
            next_min = x + 1u;
            idx_out[j++] = (uint32_t)x;
            low_bp += l;
            last_one = p;
        }
    }
    /* Exactly r ones, the vector ending in the byte of the last one. */
    if (bad || j != r || upper_len != (size_t)(last_one / 8u) + 1u ||
        last_one - (r - 1u) > ((uint64_t)d - 1u) >> l || next_min > (uint64_t)d)
        return DR_E_CORRUPT;
    return DR_OK;
}
