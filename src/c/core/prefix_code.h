/* Internal: canonical prefix (Huffman) codes over small alphabets, shared by the codecs
 * whose sections carry their own code table (skcompress keys and values).
 *
 * A code is described by one length per symbol: 0 for a symbol that never occurs,
 * otherwise its code length in bits. Two shapes are valid:
 *   - a complete code: at least two used symbols, lengths 1..DR_PREFIX_MAX_LEN, and
 *     sum 2^-len == 1 (Kraft equality, so every bit string decodes);
 *   - a lone symbol: exactly one used symbol, written with length 1, whose code is
 *     empty (0 bits: every occurrence is that symbol).
 * Codes are canonical: symbols sorted by (length, symbol) take consecutive code values,
 * each length's first code being (previous last + 1) << (difference in lengths). A code
 * is written most significant bit first into the LSB-first streams of bitio.h, so the
 * stored pattern is the code reversed.
 * Nothing here allocates; the structures live on the caller's stack. */
#ifndef DR_PREFIX_CODE_H
#define DR_PREFIX_CODE_H

#include "deepreduce.h"

#include <stddef.h>
#include <stdint.h>

#define DR_PREFIX_MAX_SYMBOLS 256
/* The longest code dr_prefix_lengths can build (see there); dr_prefix_build refuses longer. */
#define DR_PREFIX_MAX_LEN 24

typedef struct {
    unsigned nsym;                          /* alphabet size, <= DR_PREFIX_MAX_SYMBOLS */
    unsigned lone;                          /* 1: one used symbol, empty code */
    unsigned max_len;                       /* longest code length */
    uint8_t len[DR_PREFIX_MAX_SYMBOLS];     /* bits written per symbol (0 if lone) */
    uint32_t stored[DR_PREFIX_MAX_SYMBOLS]; /* the code, bit-reversed for LSB-first writing */
    /* decoding: per length l, count[l] codes starting at value first[l], whose symbols
     * are sorted[offset[l] ..] */
    uint32_t first[DR_PREFIX_MAX_LEN + 1];
    uint32_t count[DR_PREFIX_MAX_LEN + 1];
    uint32_t offset[DR_PREFIX_MAX_LEN + 1];
    uint8_t sorted[DR_PREFIX_MAX_SYMBOLS];
} dr_prefix_code;

/* Optimal code lengths (Huffman) for count[0..nsym): 0 where count is 0, a lone used
 * symbol gets 1 (its empty code). Counts below 1/65536 of the total are raised to it
 * first, which keeps every length <= 24 (a symbol of probability p gets at most
 * 1.44 log2(1/p) + 1 bits); they are exact below 65,536 occurrences in all. Ties break
 * by symbol, so both the lengths and the result are deterministic. nsym in
 * 1..DR_PREFIX_MAX_SYMBOLS. */
void dr_prefix_lengths(const uint64_t *count, unsigned nsym, uint8_t *len_out);

/* Build the code of len[0..nsym) (the table a section carries). DR_E_CORRUPT unless it
 * is one of the two valid shapes above (no used symbol at all is refused too). */
int dr_prefix_build(dr_prefix_code *pc, const uint8_t *len, unsigned nsym);

/* Total bits of coding count[s] occurrences of every symbol s. */
uint64_t dr_prefix_cost(const dr_prefix_code *pc, const uint64_t *count);

/* 1 if len[0..nsym) is byte for byte the table dr_prefix_lengths builds for
 * count[0..nsym) (what an encoder writes for those symbols), else 0. A decoder counts
 * the symbols it decoded and asks this, so that a section has exactly one encoding: a
 * forged table (a code for an unused symbol, or a complete code that is not the Huffman
 * code of the counts) is refused even though it decodes. O(nsym log nsym). */
int dr_prefix_is_huffman(const uint8_t *len, const uint64_t *count, unsigned nsym);

/* Decode one symbol from the LSB-first stream in[0..len_bytes) at bit *bp (advanced).
 * DR_E_CORRUPT if the stream ends inside a code. */
static inline int dr_prefix_decode(const dr_prefix_code *pc, const uint8_t *in, size_t len_bytes,
                                   uint64_t *bp, unsigned *sym)
{
    uint32_t code = 0;
    unsigned l;
    if (pc->lone) {
        *sym = pc->sorted[0];
        return DR_OK;
    }
    for (l = 1; l <= pc->max_len; l++) {
        uint64_t b = *bp;
        if (b >= 8u * (uint64_t)len_bytes)
            return DR_E_CORRUPT;
        code = (code << 1) | ((uint32_t)(in[b >> 3] >> (b & 7u)) & 1u);
        *bp = b + 1u;
        if (code - pc->first[l] < pc->count[l]) {
            *sym = pc->sorted[pc->offset[l] + (code - pc->first[l])];
            return DR_OK;
        }
    }
    return DR_E_CORRUPT; /* unreachable for a complete code */
}

#endif
