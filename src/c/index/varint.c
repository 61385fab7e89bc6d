/* Delta + LEB128: the simple baseline index codec. Gaps g_j = x_j - x_(j-1) - 1 are
 * never negative, so no zig-zag is needed. */
#include "bitio.h"

/* Bytes of the LEB128 form of v. */
static size_t leb_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80u) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t dr_index_varint_bound(size_t d, size_t r)
{
    /* No gap exceeds d - r (the first index is at most d - r). */
    if (r == 0 || r > d)
        return 0;
    return dr_sat_size((uint64_t)r * leb_len((uint64_t)(d - r)));
}

/* The bound grows with r while the LEB128 length of d - r stays; that length only falls
 * as r grows, and the run of length L + 1 ends at r' = d - 128^L. */
size_t dr_index_varint_bound_upto(size_t d, size_t r)
{
    size_t best;
    uint64_t power;
    if (r > d) /* a section holds at most d indices */
        r = d;
    best = dr_index_varint_bound(d, r);
    if (r == 0)
        return best;
    for (power = 128u; power < (uint64_t)d; power <<= 7) {
        uint64_t end = (uint64_t)d - power;
        if (end < r) {
            size_t run_end = dr_index_varint_bound(d, (size_t)end);
            if (run_end > best)
                best = run_end;
        }
        if (power > (UINT64_MAX >> 7))
            break;
    }
    return best;
}

int dr_index_varint_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                           size_t *written)
{
    size_t j, size = 0, pos = 0;
    uint32_t next = 0; /* the smallest index the next one may take */
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    for (j = 0; j < r; j++) {
        size += leb_len(idx[j] - next);
        next = idx[j] + 1u;
    }
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    next = 0;
    for (j = 0; j < r; j++) {
        uint32_t g = idx[j] - next;
        while (g >= 0x80u) {
            out[pos++] = (uint8_t)(g | 0x80u);
            g >>= 7;
        }
        out[pos++] = (uint8_t)g;
        next = idx[j] + 1u;
    }
    *written = size;
    return DR_OK;
}

int dr_index_varint_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    size_t j, pos = 0;
    uint64_t next = 0;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    for (j = 0; j < r; j++) {
        uint64_t g = 0, x;
        unsigned shift = 0;
        uint8_t b;
        do {
            /* A fifth byte may only carry the top 4 bits of a 32-bit value. */
            if (pos == len || shift == 35u)
                return DR_E_CORRUPT;
            b = in[pos++];
            g |= (uint64_t)(b & 0x7fu) << shift;
            shift += 7u;
        } while (b & 0x80u);
        if (g > UINT32_MAX || (b == 0 && shift > 7u))
            return DR_E_CORRUPT;
        x = next + g;
        if (x >= (uint64_t)d)
            return DR_E_CORRUPT;
        idx_out[j] = (uint32_t)x;
        next = x + 1u;
    }
    return pos == len ? DR_OK : DR_E_CORRUPT;
}
