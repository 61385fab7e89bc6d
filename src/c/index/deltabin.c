/* Delta-binary keys, the index coding of SketchML (Jiang et al., SIGMOD 2018) that
 * SKCompress (VLDB Journal 2020) keeps for the keys of sparse gradients: each key becomes
 * its increment over the previous one, stored in as few whole bytes as hold it, and a
 * 2-bit prefix per key says how many (layout in deepreduce/index.h). Byte-aligned
 * fields make decoding a table-free loop; the prefixes cost 2 bits a key. */
#include "bitio.h"

#include <string.h>

/* Whole bytes that hold v (1 for 0). */
static unsigned byte_len(uint32_t v)
{
    return v < 0x100u ? 1u : v < 0x10000u ? 2u : v < 0x1000000u ? 3u : 4u;
}

static size_t prefix_bytes(size_t r)
{
    return (r + 3u) / 4u;
}

size_t dr_index_skcompress_bound(size_t d, size_t r)
{
    if (r == 0 || r > d)
        return 0;
    /* No increment exceeds d - 1. */
    return dr_sat_size((uint64_t)prefix_bytes(r) + (uint64_t)r * byte_len((uint32_t)(d - 1u)));
}

int dr_index_skcompress_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out,
                               size_t cap, size_t *written)
{
    size_t j, size = prefix_bytes(r), pos;
    uint32_t prev = 0;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    for (j = 0; j < r; j++) {
        size += byte_len(idx[j] - prev);
        prev = idx[j];
    }
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    memset(out, 0, prefix_bytes(r));
    pos = prefix_bytes(r);
    prev = 0;
    for (j = 0; j < r; j++) {
        uint32_t delta = idx[j] - prev;
        unsigned n = byte_len(delta), b;
        out[j / 4u] |= (uint8_t)((n - 1u) << (2u * (j % 4u)));
        for (b = 0; b < n; b++)
            out[pos++] = (uint8_t)(delta >> (8u * b));
        prev = idx[j];
    }
    *written = size;
    return DR_OK;
}

int dr_index_skcompress_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                               uint32_t *idx_out)
{
    size_t j, pos = prefix_bytes(r);
    uint64_t prev = 0;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < pos)
        return DR_E_CORRUPT;
    /* Padding prefixes of the last byte are zero. */
    if (r % 4u != 0 && (in[r / 4u] >> (2u * (r % 4u))) != 0)
        return DR_E_CORRUPT;
    for (j = 0; j < r; j++) {
        unsigned n = ((in[j / 4u] >> (2u * (j % 4u))) & 3u) + 1u, b;
        uint32_t delta = 0;
        uint64_t x;
        if (len - pos < n)
            return DR_E_CORRUPT;
        for (b = 0; b < n; b++)
            delta |= (uint32_t)in[pos + b] << (8u * b);
        pos += n;
        /* Canonical: the fewest bytes, and every key above the one before. */
        if (byte_len(delta) != n || (j > 0 && delta == 0))
            return DR_E_CORRUPT;
        x = prev + delta;
        if (x >= (uint64_t)d)
            return DR_E_CORRUPT;
        idx_out[j] = (uint32_t)x;
        prev = x;
    }
    return pos == len ? DR_OK : DR_E_CORRUPT;
}
