/* Canonical prefix codes over alphabets of up to 256 symbols (prefix_code.h). */
#include "prefix_code.h"

#include <stdlib.h>
#include <string.h>

/* A used symbol's place in the queue of leaves: by weight, then node number. */
typedef struct {
    uint64_t weight;
    unsigned node;
} leaf_key;

static int lighter_leaf_first(const void *x, const void *y)
{
    const leaf_key *a = x, *b = y;
    if (a->weight != b->weight)
        return a->weight < b->weight ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Huffman's construction on the used symbols: repeatedly join the two lightest nodes,
 * the lower node number on equal weights (leaves are numbered 0.. in symbol order, joined
 * nodes after them as made), then read each leaf's depth through its parents. Joined
 * weights never decrease, so the lightest node is the head of one of two queues: the
 * leaves sorted by (weight, number), and the joined nodes as made; on equal weights the
 * leaf is taken, its number being the lower. O(n log n) for n used symbols, which a
 * decoder pays to check a section's table (dr_prefix_is_huffman). */
void dr_prefix_lengths(const uint64_t *count, unsigned nsym, uint8_t *len_out)
{
    uint64_t weight[2 * DR_PREFIX_MAX_SYMBOLS], total = 0, floor_w;
    uint16_t parent[2 * DR_PREFIX_MAX_SYMBOLS], leaf_of[DR_PREFIX_MAX_SYMBOLS];
    uint8_t depth[2 * DR_PREFIX_MAX_SYMBOLS];
    leaf_key leaves[DR_PREFIX_MAX_SYMBOLS];
    unsigned s, used = 0, nodes, k, next_leaf = 0, next_joined;

    memset(len_out, 0, nsym);
    for (s = 0; s < nsym; s++)
        total += count[s];
    /* The 1/65536 floor bounds the depth; below 65,536 occurrences it is 1 (no change). */
    floor_w = (total + 65535u) / 65536u;
    for (s = 0; s < nsym; s++) {
        if (count[s] == 0)
            continue;
        leaf_of[used] = (uint16_t)s;
        weight[used] = count[s] > floor_w ? count[s] : floor_w;
        leaves[used].weight = weight[used];
        leaves[used].node = used;
        used++;
    }
    if (used == 0)
        return;
    if (used == 1) {
        len_out[leaf_of[0]] = 1; /* the lone symbol: an empty code */
        return;
    }
    qsort(leaves, used, sizeof *leaves, lighter_leaf_first);
    nodes = next_joined = used;
    for (k = 1; k < used; k++) {
        unsigned pick[2], p;
        for (p = 0; p < 2; p++) {
            if (next_leaf < used &&
                (next_joined == nodes || leaves[next_leaf].weight <= weight[next_joined]))
                pick[p] = leaves[next_leaf++].node;
            else
                pick[p] = next_joined++;
        }
        weight[nodes] = weight[pick[0]] + weight[pick[1]];
        parent[pick[0]] = parent[pick[1]] = (uint16_t)nodes;
        nodes++;
    }
    /* A parent is numbered above its children: one pass down from the root. */
    depth[nodes - 1u] = 0;
    for (k = nodes - 1u; k-- > 0;)
        depth[k] = (uint8_t)(depth[parent[k]] + 1u);
    for (k = 0; k < used; k++)
        len_out[leaf_of[k]] = depth[k];
}

static uint32_t reverse_bits(uint32_t v, unsigned bits)
{
    uint32_t r = 0;
    unsigned i;
    for (i = 0; i < bits; i++) {
        r = (r << 1) | (v & 1u);
        v >>= 1;
    }
    return r;
}

int dr_prefix_build(dr_prefix_code *pc, const uint8_t *len, unsigned nsym)
{
    uint64_t kraft = 0;
    uint32_t code = 0;
    unsigned s, l, used = 0, pos = 0;

    if (nsym < 1 || nsym > DR_PREFIX_MAX_SYMBOLS)
        return DR_E_ARG;
    memset(pc, 0, sizeof *pc);
    pc->nsym = nsym;
    for (s = 0; s < nsym; s++) {
        if (len[s] == 0)
            continue;
        if (len[s] > DR_PREFIX_MAX_LEN)
            return DR_E_CORRUPT;
        used++;
        pc->count[len[s]]++;
        kraft += (uint64_t)1 << (DR_PREFIX_MAX_LEN - len[s]);
        if (len[s] > pc->max_len)
            pc->max_len = len[s];
    }
    if (used == 0)
        return DR_E_CORRUPT;
    if (used == 1) {
        /* The lone symbol: written with length 1 in the table, coded in 0 bits. */
        if (pc->max_len != 1)
            return DR_E_CORRUPT;
        for (s = 0; len[s] == 0; s++)
            ;
        pc->lone = 1;
        pc->sorted[0] = (uint8_t)s;
        pc->max_len = 0;
        return DR_OK;
    }
    if (kraft != (uint64_t)1 << DR_PREFIX_MAX_LEN)
        return DR_E_CORRUPT;
    /* Canonical assignment, lengths ascending, symbols ascending within a length. */
    for (l = 1; l <= pc->max_len; l++) {
        pc->offset[l] = pos;
        pc->first[l] = code;
        for (s = 0; s < nsym; s++) {
            if (len[s] != l)
                continue;
            pc->sorted[pos++] = (uint8_t)s;
            pc->len[s] = (uint8_t)l;
            pc->stored[s] = reverse_bits(code, l);
            code++;
        }
        code <<= 1;
    }
    return DR_OK;
}

uint64_t dr_prefix_cost(const dr_prefix_code *pc, const uint64_t *count)
{
    uint64_t bits = 0;
    unsigned s;
    for (s = 0; s < pc->nsym; s++)
        bits += count[s] * pc->len[s];
    return bits;
}

int dr_prefix_is_huffman(const uint8_t *len, const uint64_t *count, unsigned nsym)
{
    uint8_t rebuilt[DR_PREFIX_MAX_SYMBOLS];
    dr_prefix_lengths(count, nsym, rebuilt);
    return memcmp(rebuilt, len, nsym) == 0;
}
