/* SKCompress's keys (Jiang et al., VLDB Journal 2020), after SketchML's delta-binary
 * coding (SIGMOD 2018): each key becomes its increment over the previous one, stored in
 * as few whole bytes as hold it, and a prefix per key says how many. SketchML spends a
 * fixed 2 bits on every prefix; SKCompress sizes the prefixes adaptively, here by a
 * Huffman code over the four byte counts, whose lengths travel in the section's first
 * byte (layout in deepreduce/index.h). At density 1% most increments take one byte,
 * so most prefixes cost one bit. Byte-aligned increments keep decoding table-free. */
#include "bitio.h"
#include "prefix_code.h"

#include <string.h>

#define CLASSES 4u /* 1 to 4 bytes per increment */

/* Whole bytes that hold v (1 for 0). */
static unsigned byte_len(uint32_t v)
{
    return v < 0x100u ? 1u : v < 0x10000u ? 2u : v < 0x1000000u ? 3u : 4u;
}

size_t dr_index_skcompress_bound(size_t d, size_t r)
{
    if (r == 0 || r > d)
        return 0;
    /* The table byte, prefixes of at most 3 bits, no increment above d - 1. */
    return dr_sat_size(1u + ((uint64_t)r * 3u + 7u) / 8u +
                       (uint64_t)r * byte_len((uint32_t)(d - 1u)));
}

int dr_index_skcompress_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out,
                               size_t cap, size_t *written)
{
    uint64_t count[CLASSES] = {0, 0, 0, 0}, prefix_bits, size = 0;
    uint8_t len[CLASSES];
    dr_prefix_code pc;
    dr_bitwriter w;
    size_t j, pos;
    uint32_t prev = 0;
    unsigned c;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    if (r == 0) {
        *written = 0;
        return DR_OK;
    }
    for (j = 0; j < r; j++) {
        unsigned n = byte_len(idx[j] - prev);
        count[n - 1u]++;
        size += n;
        prev = idx[j];
    }
    dr_prefix_lengths(count, CLASSES, len);
    if (dr_prefix_build(&pc, len, CLASSES) != DR_OK)
        return DR_E_ARG; /* unreachable: Huffman lengths always form a valid code */
    prefix_bits = dr_prefix_cost(&pc, count);
    size += 1u + (prefix_bits + 7u) / 8u;
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    out[0] = 0;
    for (c = 0; c < CLASSES; c++)
        out[0] |= (uint8_t)(len[c] << (2u * c));
    dr_bw_init(&w, out + 1);
    prev = 0;
    for (j = 0; j < r; j++) {
        c = byte_len(idx[j] - prev) - 1u;
        dr_bw_put(&w, pc.stored[c], pc.len[c]);
        prev = idx[j];
    }
    pos = 1u + dr_bw_finish(&w);
    prev = 0;
    for (j = 0; j < r; j++) {
        uint32_t delta = idx[j] - prev;
        unsigned n = byte_len(delta), b;
        for (b = 0; b < n; b++)
            out[pos++] = (uint8_t)(delta >> (8u * b));
        prev = idx[j];
    }
    *written = pos;
    return DR_OK;
}

int dr_index_skcompress_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                               uint32_t *idx_out)
{
    uint8_t lengths[CLASSES];
    dr_prefix_code pc;
    uint64_t count[CLASSES] = {0, 0, 0, 0}, bp = 0, bytes = 0, prev = 0;
    size_t j, pos;
    unsigned c;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (r == 0)
        return len == 0 ? DR_OK : DR_E_CORRUPT;
    if (len < 1)
        return DR_E_CORRUPT;
    for (c = 0; c < CLASSES; c++)
        lengths[c] = (uint8_t)((in[0] >> (2u * c)) & 3u);
    if (dr_prefix_build(&pc, lengths, CLASSES) != DR_OK)
        return DR_E_CORRUPT;
    /* First the prefixes (each key's byte count, parked in idx_out), which say where the
     * increments start. */
    for (j = 0; j < r; j++) {
        if (dr_prefix_decode(&pc, in + 1, len - 1u, &bp, &c) != DR_OK)
            return DR_E_CORRUPT;
        idx_out[j] = c + 1u;
        bytes += c + 1u;
        count[c]++;
    }
    /* The table must be the one the encoder builds for these classes: one encoding. */
    if (!dr_prefix_is_huffman(lengths, count, CLASSES))
        return DR_E_CORRUPT;
    pos = 1u + (size_t)((bp + 7u) / 8u);
    /* Padding bits after the last prefix are zero, and nothing follows the increments. */
    if ((bp & 7u) != 0 && (in[1u + bp / 8u] >> (bp & 7u)) != 0)
        return DR_E_CORRUPT;
    if ((uint64_t)(len - pos) != bytes)
        return DR_E_CORRUPT;
    for (j = 0; j < r; j++) {
        unsigned n = idx_out[j], b;
        uint32_t delta = 0;
        uint64_t x;
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
    return DR_OK;
}
