/* Internal: the steps of MurmurHash3 x86_32, shared by dr_murmur3_32 and the Bloom
 * filter, which hashes 4-byte keys in its inner loop without going through bytes. */
#ifndef DR_INDEX_MURMUR3_H
#define DR_INDEX_MURMUR3_H

#include "deepreduce.h"

static inline uint32_t dr_rotl32(uint32_t x, unsigned s)
{
    return (x << s) | (x >> (32u - s));
}

static inline uint32_t dr_murmur3_scramble(uint32_t k)
{
    k *= 0xcc9e2d51u;
    k = dr_rotl32(k, 15);
    return k * 0x1b873593u;
}

/* Mix one 4-byte block into the state. */
static inline uint32_t dr_murmur3_block(uint32_t h, uint32_t k)
{
    h ^= dr_murmur3_scramble(k);
    h = dr_rotl32(h, 13);
    return h * 5u + 0xe6546b64u;
}

/* The final avalanche. */
static inline uint32_t dr_murmur3_fmix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

/* dr_murmur3_32 of the 4 little-endian bytes of i. */
static inline uint32_t dr_murmur3_u32(uint32_t i, uint32_t seed)
{
    return dr_murmur3_fmix(dr_murmur3_block(seed, i) ^ 4u);
}

#endif
