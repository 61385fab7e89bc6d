/* A counter-based generator: word i of stream k is a strong 64-bit mix of (k, i).
 * Stateless, so ranks reproduce each other's draws and threads never share state. */
#include "deepreduce.h"
#include "rng_inline.h"

uint64_t dr_rng_key(const uint8_t *bytes, size_t len, uint64_t step)
{
    /* FNV-1a over the bytes, then mixed with the step. */
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= bytes[i];
        h *= 0x100000001b3ull;
    }
    return dr_mix64(h ^ dr_mix64(step + 0x9e3779b97f4a7c15ull));
}

uint64_t dr_rng_u64(uint64_t key, uint64_t counter)
{
    return dr_rng_u64_fast(key, counter);
}

float dr_rng_uniform(uint64_t key, uint64_t counter)
{
    return dr_rng_uniform_fast(key, counter);
}

uint32_t dr_rng_u32(uint64_t key, uint64_t counter)
{
    return dr_rng_u32_fast(key, counter);
}
