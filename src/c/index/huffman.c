/* DeepReduce's `huffman` index codec: a static Huffman code over the bytes of the
 * little-endian uint32 indices, derived from d alone so no table travels. The exact
 * construction (weights, tie rules, canonical assignment) is in deepreduce/index.h:
 * both sides must build the same code, so it is integer-only and order-fixed. */
#include "bitio.h"

#define HUFF_SYMBOLS 256
#define HUFF_LUT_BITS 11 /* one lookup decodes any code this short (all, for most d) */

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

/* Whether symbol a goes before symbol b: by weight, then by value. */
static int huff_before(unsigned a, unsigned b, const uint64_t w[HUFF_SYMBOLS])
{
    return w[a] < w[b] || (w[a] == w[b] && a < b);
}

static void huff_sift(uint8_t *s, size_t root, size_t n, const uint64_t w[HUFF_SYMBOLS])
{
    for (;;) {
        size_t child = 2u * root + 1u;
        uint8_t t;
        if (child >= n)
            return;
        if (child + 1u < n && huff_before(s[child], s[child + 1u], w))
            child++;
        if (!huff_before(s[root], s[child], w))
            return;
        t = s[root];
        s[root] = s[child];
        s[child] = t;
        root = child;
    }
}

/* Heapsort of the symbols by (weight, value): the keys are distinct, so the order is
 * fixed whatever the algorithm. */
static void huff_sort(uint8_t *s, size_t n, const uint64_t w[HUFF_SYMBOLS])
{
    size_t i;
    uint8_t t;
    for (i = n / 2u; i-- > 0;)
        huff_sift(s, i, n, w);
    for (i = n; i-- > 1u;) {
        t = s[0];
        s[0] = s[i];
        s[i] = t;
        huff_sift(s, 0, i, w);
    }
}

/* Build the code for tensors of d entries (d >= 1). */
static void huff_build(uint64_t d, huff_code *hc)
{
    uint64_t weight[2 * HUFF_SYMBOLS];
    uint16_t parent[2 * HUFF_SYMBOLS];
    uint8_t depth[2 * HUFF_SYMBOLS];
    uint8_t leaf[HUFF_SYMBOLS]; /* symbols by (weight, value) */
    uint64_t w[HUFF_SYMBOLS];
    unsigned n = 0, i, b, l, next_leaf = 0, next_node, made;
    uint32_t code = 0;

    huff_weights(d, w);
    for (b = 0; b < HUFF_SYMBOLS; b++)
        if (w[b] != 0)
            leaf[n++] = (uint8_t)b;
    huff_sort(leaf, n, w);
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
    /* Canonical assignment in (length, value) order. */
    memset(hc->count, 0, sizeof hc->count);
    for (i = 0, l = 1; l <= hc->max_len; l++) {
        for (b = 0; b < HUFF_SYMBOLS; b++) {
            unsigned t, rev = 0;
            if (hc->len[b] != l)
                continue;
            for (t = 0; t < l; t++)
                rev |= ((code >> t) & 1u) << (l - 1u - t);
            hc->code[b] = rev;
            hc->sorted[i++] = (uint8_t)b;
            hc->count[l]++;
            code++;
        }
        code <<= 1;
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
    /* A peek yields 57 usable bits: refill only when the next code might not fit
     * (for most d, 4 * max_len <= 57 and one load serves a whole index). */
    for (j = 0; j < r; j++) {
        uint64_t x = 0, word = dr_peek64(in, len, bp);
        unsigned t, used = 0;
        for (t = 0; t < 4u; t++) {
            unsigned e, sym, l;
            if (used + hc.max_len > 57u) {
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
