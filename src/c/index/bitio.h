/* Internal: the LSB-first bit streams and index-set checks shared by the index codecs.
 *
 * Writers never check capacity: every encoder computes its exact output size first,
 * compares it with the caller's cap, and only then writes. Readers never touch a byte
 * outside [0, len): peek64 zero-fills past the end, and callers compare their bit
 * position with 8 * len to notice a stream that ran out. */
#ifndef DR_INDEX_BITIO_H
#define DR_INDEX_BITIO_H

#include "deepreduce.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

/* For each byte value, the positions (0..7) of its set bits, ascending, one per byte of
 * the word from the low byte up (ef.c): unary vectors decode a byte at a time through it. */
extern const uint64_t dr_byte_ones[256];

/* d may be as large as 2^32 (indices are uint32 < d). */
#define DR_INDEX_D_LIMIT 4294967296ull

static inline size_t dr_sat_size(uint64_t n)
{
    return n > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)n;
}

/* The common argument checks of an encoder, the set itself aside. */
static inline int dr_index_check_args(const uint32_t *idx, size_t r, size_t d, const uint8_t *out,
                                      const size_t *written)
{
    return (uint64_t)d > DR_INDEX_D_LIMIT || r > d || (r > 0 && idx == NULL) || out == NULL || written == NULL
               ? DR_E_ARG
               : DR_OK;
}

/* Nonzero where some idx[j] <= idx[j - 1], j < r: one sweep of the set, on AVX2 CPUs
 * compiled for AVX2 (check.c). */
uint32_t dr_index_descending(const uint32_t *idx, size_t r);

/* The common argument checks of an encoder, then the set itself: strictly ascending,
 * every index < d. */
static inline int dr_index_check_encode(const uint32_t *idx, size_t r, size_t d,
                                        const uint8_t *out, const size_t *written)
{
    if (dr_index_check_args(idx, r, d, out, written) != DR_OK)
        return DR_E_ARG;
    if (dr_index_descending(idx, r) || (r > 0 && (uint64_t)idx[r - 1] >= (uint64_t)d))
        return DR_E_ARG;
    return DR_OK;
}

/* The common argument checks of a decoder. */
static inline int dr_index_check_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                                        const uint32_t *idx_out)
{
    if ((uint64_t)d > DR_INDEX_D_LIMIT || r > d || (len > 0 && in == NULL) ||
        (r > 0 && idx_out == NULL))
        return DR_E_ARG;
    return DR_OK;
}

/* The 64 stream bits from bit position bp on, of which at least 57 are real (the top
 * bp % 8 are zero); bytes past `len` read as zero. */
static inline uint64_t dr_peek64(const uint8_t *in, size_t len, uint64_t bp)
{
    uint64_t w = 0;
    size_t off = (size_t)(bp >> 3);
    if (off + 8u <= len)
        memcpy(&w, in + off, 8);
    else if (off < len)
        memcpy(&w, in + off, len - off);
    return w >> (bp & 7u);
}

/* A bit writer: `acc` holds `n` < 32 pending bits. */
typedef struct {
    uint8_t *out;
    size_t pos;
    uint64_t acc;
    unsigned n;
} dr_bitwriter;

static inline void dr_bw_init(dr_bitwriter *w, uint8_t *out)
{
    w->out = out;
    w->pos = 0;
    w->acc = 0;
    w->n = 0;
}

/* Append the low `bits` (<= 32) bits of v; v must have no higher bits set. */
static inline void dr_bw_put(dr_bitwriter *w, uint32_t v, unsigned bits)
{
    w->acc |= (uint64_t)v << w->n;
    w->n += bits;
    if (w->n >= 32u) {
        uint32_t lo = (uint32_t)w->acc;
        memcpy(w->out + w->pos, &lo, 4);
        w->pos += 4;
        w->acc >>= 32;
        w->n -= 32u;
    }
}

/* Append the low `bits` (<= 56) bits of v by one 8-byte store, for a writer with fewer
 * than 8 bits pending (a fresh one, or one that only took dr_bw_put56): the caller
 * guarantees 8 bytes of room at out + pos. Leaves fewer than 8 bits pending, so that
 * dr_bw_put can carry on. Several fields OR-ed into one v take one store and one step
 * of the writer's chain between them (dr_bw_put takes a step per field). */
static inline void dr_bw_put56(dr_bitwriter *w, uint64_t v, unsigned bits)
{
    uint64_t acc = w->acc | v << w->n;
    unsigned n = w->n + bits;
    memcpy(w->out + w->pos, &acc, 8);
    w->pos += n >> 3;
    w->acc = acc >> (n & ~7u);
    w->n = n & 7u;
}

/* Append q zero bits and a one: the unary code of q. */
static inline void dr_bw_unary(dr_bitwriter *w, uint64_t q)
{
    while (q >= 31u) {
        dr_bw_put(w, 0, 31u);
        q -= 31u;
    }
    dr_bw_put(w, 1u << q, (unsigned)q + 1u);
}

/* Write the pending bits, zero-padded to a whole byte; returns the bytes written. */
static inline size_t dr_bw_finish(dr_bitwriter *w)
{
    while (w->n > 0) {
        w->out[w->pos++] = (uint8_t)w->acc;
        w->acc >>= 8;
        w->n = w->n > 8u ? w->n - 8u : 0u;
    }
    return w->pos;
}

/* A writer of a unary vector's ones at ascending bit positions (the vector zeroed
 * first): a 64-bit word in a register, written once when the ones move past it, where a
 * read-modify-write per one waited on the one before in the same byte. */
typedef struct {
    uint8_t *v;
    size_t len;
    uint64_t word, at; /* the pending word and its number (bits 64 at .. 64 at + 63) */
} dr_onewriter;

static inline void dr_ow_init(dr_onewriter *o, uint8_t *v, size_t len)
{
    o->v = v;
    o->len = len;
    o->word = 0;
    o->at = 0;
}

/* Writes the pending word (the part of it inside the vector). */
static inline void dr_ow_flush(dr_onewriter *o)
{
    size_t off = (size_t)o->at * 8u;
    uint64_t word = o->word; /* a copy: the address of a member kept o in memory */
    if (word == 0)
        return;
    if (o->len - off >= 8u)
        memcpy(o->v + off, &word, 8);
    else
        memcpy(o->v + off, &word, o->len - off);
}

/* Sets bit p (>= every bit set before, < 8 len). */
static inline void dr_ow_set(dr_onewriter *o, uint64_t p)
{
    if ((p >> 6) != o->at) {
        dr_ow_flush(o);
        o->at = p >> 6;
        o->word = 0;
    }
    o->word |= 1ull << (p & 63u);
}

/* Sets bit p (>= every bit set before, < 8 len) and stores its word at once, so no flush
 * is pending after it: for ones far apart (a sparse frame's bitmap), where dr_ow_set's
 * branch on a new word mispredicts. On the scalar path of a Zen 4 core, a bitmap of 1M
 * ones in 25.6M bits took 3.3-3.5 ms this way and 5.2-5.4 by dr_ow_set, while the unary
 * vectors (about one bit in two set) encode 3-14% slower with a store per one. */
static inline void dr_ow_set_stored(dr_onewriter *o, uint64_t p)
{
    /* A select, not a branch, on whether p starts a new word. */
    o->word = ((p >> 6) == o->at ? o->word : 0) | 1ull << (p & 63u);
    o->at = p >> 6;
    dr_ow_flush(o);
}

/* Whether every bit from bit position `bits` to the end of in[0..len) is zero, and
 * the stream ends in the byte holding bit bits - 1: len == ceil(bits / 8). */
static inline int dr_stream_ends_at(const uint8_t *in, size_t len, uint64_t bits)
{
    if ((uint64_t)len != (bits + 7u) / 8u)
        return 0;
    return (bits & 7u) == 0 || (in[len - 1] >> (bits & 7u)) == 0;
}

/* The 64-bit word at byte `off` of the unary vector v[0..len) (zero-filled past the end)
 * into *word, and its count of ones, or SIZE_MAX when that exceeds `room` (more ones than
 * indices left: a corrupt vector); *last_one set to the highest one's bit number in v
 * when the word has one. Every unary decoder's step over the vector. */
static inline size_t dr_unary_load_word(const uint8_t *v, size_t len, size_t off, size_t room, uint64_t *word,
                                        uint64_t *last_one)
{
    size_t ones;
    *word = 0;
    if (len - off >= 8u)
        memcpy(word, v + off, 8); /* a fixed-size copy is one load, not a call */
    else
        memcpy(word, v + off, len - off);
    if (*word == 0)
        return 0;
    ones = (size_t)__builtin_popcountll(*word);
    if (ones > room)
        return SIZE_MAX;
    *last_one = (uint64_t)off * 8u + 63u - (uint64_t)__builtin_clzll(*word);
    return ones;
}

/* The ones of that word (dr_unary_load_word): their bit numbers within the word,
 * ascending, into pos[0..count) (pos holds 72 bytes; 8 bytes of table per byte of the
 * word, no branch per bit). Returns the count, or SIZE_MAX as dr_unary_load_word. */
static inline size_t dr_unary_word(const uint8_t *v, size_t len, size_t off, size_t room,
                                   uint8_t *pos, uint64_t *last_one)
{
    uint64_t word;
    size_t ones = dr_unary_load_word(v, len, off, room, &word, last_one), cnt = 0;
    unsigned b;
    if (ones == 0 || ones == SIZE_MAX)
        return ones;
    for (b = 0; b < 8u; b++) {
        unsigned byte = (unsigned)(word >> (8u * b)) & 0xffu;
        uint64_t e = dr_byte_ones[byte] + 0x0808080808080808ull * b;
        memcpy(pos + cnt, &e, 8);
        cnt += (size_t)__builtin_popcount(byte);
    }
    return ones;
}

/* Whether in[0..len) opens with a whole block of r fields of `bits` bits after its byte
 * at in[0] (dr_low_block's checks, without the unpacking); points *rest, *rest_len at
 * the bytes after it. */
static inline int dr_low_block_fits(const uint8_t *in, size_t len, size_t r, unsigned bits, const uint8_t **rest,
                                    size_t *rest_len)
{
    size_t low_bytes = dr_bitpack_size(r, bits);
    if (len - 1u < low_bytes || !dr_stream_ends_at(in + 1, low_bytes, (uint64_t)r * bits))
        return 0;
    *rest = in + 1 + low_bytes;
    *rest_len = len - 1u - low_bytes;
    return 1;
}

/* The block that opens the Elias-Fano and Rice sections: u8 `bits` at in[0] (read by the
 * caller), then r fields of `bits` bits, bit-packed and byte-aligned. Unpacks them into
 * out[0..r) and points *rest, *rest_len at the bytes after the block. DR_E_CORRUPT for
 * a block that is short or has nonzero padding. */
static inline int dr_low_block(const uint8_t *in, size_t len, size_t r, unsigned bits,
                               uint32_t *out, const uint8_t **rest, size_t *rest_len)
{
    if (!dr_low_block_fits(in, len, r, bits, rest, rest_len))
        return DR_E_CORRUPT;
    return dr_bitunpack(in + 1, dr_bitpack_size(r, bits), r, bits, out);
}

#endif
