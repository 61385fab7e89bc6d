/* DeepReduce's `huffman` index codec: a static Huffman code over the bytes of the
 * little-endian uint32 indices, derived from d alone so no table travels. The exact
 * construction (weights, tie rules, canonical assignment) is in deepreduce/index.h:
 * both sides must build the same code, so it is integer-only and order-fixed. */
#include "bitio.h"

#define HUFF_SYMBOLS 256
/* One lookup decodes any code this short: all codes for most d (d >= 65,536 needs 9
 * bits); the rare longer ones (up to 11 bits seen, 17 possible) take the slow path. */
#define HUFF_LUT_BITS 10

typedef struct {
    uint32_t code[HUFF_SYMBOLS]; /* bit-reversed canonical code: first bit lowest */
    uint8_t len[HUFF_SYMBOLS];   /* 0 for bytes that never occur below d */
    unsigned max_len;
    /* Canonical decoding: count[l] codes of length l (l <= 17, see index.h), and
     * sorted[] the symbols in (length, value) order. */
    uint32_t count[33];
    uint8_t sorted[HUFF_SYMBOLS];
} huff_code;

/* How often byte value b occurs, over all four bytes of every integer 0..d-1. */
static void huff_weights(uint64_t d, uint64_t weight[HUFF_SYMBOLS])
{
    unsigned p, b;
    for (b = 0; b < HUFF_SYMBOLS; b++)
        weight[b] = 0;
    for (p = 0; p < 4u; p++) {
        /* Byte p cycles with period 2^(8p+8), holding each value for 2^(8p) steps. */
        uint64_t block = 1ull << (8u * p), cycle = block << 8;
        uint64_t full = d / cycle, rem = d % cycle;
        for (b = 0; b < HUFF_SYMBOLS; b++) {
            uint64_t start = (uint64_t)b * block;
            uint64_t extra = rem <= start ? 0 : (rem - start < block ? rem - start : block);
            weight[b] += full * block + extra;
        }
    }
}

/* The occurring symbols in (weight, value) order, into leaf[]; returns their number.
 * Byte p adds the same amount to every value except a step at q_p = (d mod 2^(8p+8))
 * / 2^(8p), so equal weights come in at most 9 runs of consecutive values: sorting the
 * runs by (weight, first value) and listing each run in value order sorts the
 * symbols, at a cost linear in 256 rather than a full sort. */
static unsigned huff_order(const uint64_t w[HUFF_SYMBOLS], uint8_t leaf[HUFF_SYMBOLS])
{
    uint16_t start[HUFF_SYMBOLS + 1]; /* runs of equal weight: [start[i], start[i+1]) */
    uint16_t run[HUFF_SYMBOLS];       /* run numbers, sorted */
    unsigned nruns = 0, b, i, j, n = 0;
    for (b = 0; b < HUFF_SYMBOLS; b++)
        if (b == 0 || w[b] != w[b - 1u])
            start[nruns++] = (uint16_t)b;
    start[nruns] = HUFF_SYMBOLS;
    for (i = 0; i < nruns; i++) {
        uint16_t x = (uint16_t)i;
        for (j = i; j > 0 && w[start[run[j - 1u]]] > w[start[x]]; j--)
            run[j] = run[j - 1u];
        run[j] = x;
    }
    for (i = 0; i < nruns; i++)
        for (b = start[run[i]]; b < start[run[i] + 1u]; b++)
            if (w[b] != 0)
                leaf[n++] = (uint8_t)b;
    return n;
}

static uint32_t reverse32(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

/* Build the code for tensors of d entries (d >= 1). */
static void huff_build(uint64_t d, huff_code *hc)
{
    uint64_t weight[2 * HUFF_SYMBOLS];
    uint16_t parent[2 * HUFF_SYMBOLS];
    uint8_t depth[2 * HUFF_SYMBOLS];
    uint8_t leaf[HUFF_SYMBOLS]; /* symbols by (weight, value) */
    uint64_t w[HUFF_SYMBOLS];
    unsigned n, i, b, l, next_leaf = 0, next_node, made;
    uint32_t code, next_code[33], slot[33];

    huff_weights(d, w);
    n = huff_order(w, leaf);
    memset(hc->len, 0, sizeof hc->len);
    if (n == 1) {
        depth[0] = 1;
    } else {
        /* Two-queue Huffman: leaves in order, internal nodes made in non-decreasing
         * weight; take the leaf on ties. Node i < n is leaf i, node n + t the t-th made. */
        for (i = 0; i < n; i++)
            weight[i] = w[leaf[i]];
        next_node = n;
        for (made = n; made < 2u * n - 1u; made++) {
            unsigned pick[2], c;
            for (c = 0; c < 2u; c++) {
                if (next_leaf < n && (next_node == made || weight[next_leaf] <= weight[next_node]))
                    pick[c] = next_leaf++;
                else
                    pick[c] = next_node++;
            }
            weight[made] = weight[pick[0]] + weight[pick[1]];
            parent[pick[0]] = (uint16_t)made;
            parent[pick[1]] = (uint16_t)made;
        }
        /* Depths top-down: a node's parent was made after it. */
        depth[2u * n - 2u] = 0;
        for (i = 2u * n - 2u; i-- > 0;)
            depth[i] = (uint8_t)(depth[parent[i]] + 1u);
    }
    hc->max_len = 0;
    for (i = 0; i < n; i++) {
        hc->len[leaf[i]] = depth[i];
        if (depth[i] > hc->max_len)
            hc->max_len = depth[i];
    }
    /* Canonical assignment in (length, value) order: codes of length l are consecutive
     * from first(l) = (first(l-1) + count(l-1)) << 1. */
    memset(hc->count, 0, sizeof hc->count);
    for (b = 0; b < HUFF_SYMBOLS; b++)
        hc->count[hc->len[b]]++;
    hc->count[0] = 0;
    for (l = 1, code = 0, i = 0; l <= hc->max_len; l++) {
        next_code[l] = code;
        slot[l] = i;
        code = (code + hc->count[l]) << 1;
        i += hc->count[l];
    }
    for (b = 0; b < HUFF_SYMBOLS; b++) {
        l = hc->len[b];
        if (l == 0)
            continue;
        hc->code[b] = reverse32(next_code[l]++) >> (32u - l);
        hc->sorted[slot[l]++] = (uint8_t)b;
    }
}

size_t dr_index_huffman_bound(size_t d, size_t r)
{
    huff_code hc;
    if (r == 0 || r > d || (uint64_t)d > DR_INDEX_D_LIMIT)
        return 0;
    huff_build(d, &hc);
    return dr_sat_size(((uint64_t)r * 4u * hc.max_len + 7u) / 8u);
}

int dr_index_huffman_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                            size_t *written)
{
    huff_code hc;
    dr_bitwriter w;
    uint64_t bits = 0;
    size_t j, size;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    if (r == 0) {
        *written = 0;
        return DR_OK;
    }
    huff_build(d, &hc);
    for (j = 0; j < r; j++) {
        uint32_t x = idx[j];
        bits += (uint64_t)hc.len[x & 255u] + hc.len[(x >> 8) & 255u] + hc.len[(x >> 16) & 255u] +
                hc.len[x >> 24];
    }
    size = dr_sat_size((bits + 7u) / 8u);
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    dr_bw_init(&w, out);
    for (j = 0; j < r; j++) {
        uint32_t x = idx[j];
        unsigned t;
        for (t = 0; t < 4u; t++, x >>= 8)
            dr_bw_put(&w, hc.code[x & 255u], hc.len[x & 255u]);
    }
    dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

/* Decode one symbol of a code longer than the lookup (or an invalid one), bit by bit:
 * canonical codes of length l are the count[l] consecutive values from first. */
static int huff_slow(const huff_code *hc, uint64_t word, unsigned *sym, unsigned *len)
{
    uint32_t code = 0, first = 0, index = 0;
    unsigned l;
    for (l = 1; l <= hc->max_len; l++) {
        code |= (uint32_t)(word >> (l - 1u)) & 1u;
        if (code - first < hc->count[l]) {
            *sym = hc->sorted[index + (code - first)];
            *len = l;
            return DR_OK;
        }
        index += hc->count[l];
        first = (first + hc->count[l]) << 1;
        code <<= 1;
    }
    return DR_E_CORRUPT; /* only reachable when the code is incomplete (d = 1) */
}

int dr_index_huffman_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                            uint32_t *idx_out)
{
    huff_code hc;
    uint16_t lut[1u << HUFF_LUT_BITS]; /* symbol | length << 8; 0: not in the table */
    uint64_t bp = 0, total = (uint64_t)len * 8u, prev = 0;
    size_t j;
    unsigned b;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (r == 0)
        return len == 0 ? DR_OK : DR_E_CORRUPT;
    huff_build(d, &hc);
    memset(lut, 0, sizeof lut);
    for (b = 0; b < HUFF_SYMBOLS; b++) {
        unsigned l = hc.len[b];
        uint32_t fill;
        if (l == 0 || l > HUFF_LUT_BITS)
            continue;
        for (fill = hc.code[b]; fill < (1u << HUFF_LUT_BITS); fill += 1u << l)
            lut[fill] = (uint16_t)(b | l << 8);
    }
    /* A peek yields 57 usable bits, room for two codes of up to 17 bits (index.h):
     * one load per pair of bytes, whatever d. */
    for (j = 0; j < r; j++) {
        uint64_t x = 0, word = 0;
        unsigned t, used = 0;
        for (t = 0; t < 4u; t++) {
            unsigned e, sym, l;
            if ((t & 1u) == 0) {
                bp += used;
                used = 0;
                word = dr_peek64(in, len, bp);
            }
            e = lut[(word >> used) & ((1u << HUFF_LUT_BITS) - 1u)];
            if (e != 0) {
                sym = e & 255u;
                l = e >> 8;
            } else if (huff_slow(&hc, word >> used, &sym, &l) != DR_OK) {
                return DR_E_CORRUPT;
            }
            used += l;
            x |= (uint64_t)sym << (8u * t);
        }
        bp += used;
        if (bp > total || x >= (uint64_t)d || (j > 0 && x <= prev))
            return DR_E_CORRUPT;
        idx_out[j] = (uint32_t)x;
        prev = x;
    }
    return dr_stream_ends_at(in, len, bp) ? DR_OK : DR_E_CORRUPT;
}
