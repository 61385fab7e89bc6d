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

#endif
