/* Internal: the counter-based generator of core/rng.c as inline functions, so kernels
 * that draw once per element (stochastic rounding, sampling) pay a few multiplies per
 * draw instead of a call. rng.c defines the public functions with these, so both give
 * the same numbers by construction. */
#ifndef DR_RNG_INLINE_H
#define DR_RNG_INLINE_H

#include <stdint.h>

/* The finaliser of SplitMix64 (Steele, Lea, Flood 2014): a bijective avalanche mix. */
static inline uint64_t dr_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t dr_rng_u64_fast(uint64_t key, uint64_t counter)
{
    return dr_mix64(key + dr_mix64(counter * 0x9e3779b97f4a7c15ull + 1u));
}

static inline float dr_rng_uniform_fast(uint64_t key, uint64_t counter)
{
    return (float)(dr_rng_u64_fast(key, counter) >> 40) * (1.0f / 16777216.0f);
}

/* The 32-bit generator the stochastic quantisers draw from: word `counter` of stream
 * `key` is Wellons' triple32 integer hash (three 32-bit multiplies, an avalanche bias of
 * about 0.02) of the counter's low word offset by the key's low word, with the key's high
 * word, and the counter's high word times a golden-ratio odd constant, XOR-ed in after
 * the first multiply. Keyed that way it is a bijection of the low word for every
 * (key, high word), and 32-bit multiplies are one instruction per 8 or 16 lanes on AVX2
 * and AVX-512, where the 64-bit generator above needs three or one per 4 or 8. */
static inline uint32_t dr_rng_u32_fast(uint64_t key, uint64_t counter)
{
    uint32_t x = (uint32_t)counter + (uint32_t)key;
    uint32_t high = (uint32_t)(key >> 32) ^ ((uint32_t)(counter >> 32) * 0x9e3779b9u);
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= high;
    x ^= x >> 11;
    x *= 0xac4c1b51u;
    x ^= x >> 15;
    x *= 0x31848babu;
    return x ^ (x >> 14);
}

/* Its top 24 bits as a float in [0, 1) (exact: 24-bit values). */
static inline float dr_rng_u32_uniform(uint32_t r)
{
    return (float)(r >> 8) * 0x1p-24f;
}

#endif
