/* A counter-based generator: word i of stream k is a strong 64-bit mix of (k, i).
 * Stateless, so ranks reproduce each other's draws and threads never share state. */
#include "deepreduce.h"

/* The finaliser of SplitMix64 (Steele, Lea, Flood 2014): a bijective avalanche mix. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t dr_rng_key(const uint8_t *bytes, size_t len, uint64_t step)
{
    /* FNV-1a over the bytes, then mixed with the step. */
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= bytes[i];
        h *= 0x100000001b3ull;
    }
    return mix64(h ^ mix64(step + 0x9e3779b97f4a7c15ull));
}

uint64_t dr_rng_u64(uint64_t key, uint64_t counter)
{
    return mix64(key + mix64(counter * 0x9e3779b97f4a7c15ull + 1u));
}

float dr_rng_uniform(uint64_t key, uint64_t counter)
{
    return (float)(dr_rng_u64(key, counter) >> 40) * (1.0f / 16777216.0f);
}
