/* The NEON (64-bit ARM) dense draw of dr_randomk: dr_rng_u32's hash on 4 lanes at a time
 * and an unsigned compare, each lane's result weighted by its bit and summed across the
 * register into 4 bits of the word. The scalar loop takes a hash per bit (about 2 ns per
 * entry on the development machine's x86 core), which would make the dense draw slower
 * than Floyd's where dr_randomk takes it. */
#include "randomk_simd.h"

#if DR_HAVE_NEON
#include <arm_neon.h>

static inline uint32x4_t hash32_neon(uint32x4_t x, uint32x4_t high)
{
    x = veorq_u32(x, vshrq_n_u32(x, 17));
    x = vmulq_n_u32(x, 0xed5ad4bbu);
    x = veorq_u32(x, high);
    x = veorq_u32(x, vshrq_n_u32(x, 11));
    x = vmulq_n_u32(x, 0xac4c1b51u);
    x = veorq_u32(x, vshrq_n_u32(x, 15));
    x = vmulq_n_u32(x, 0x31848babu);
    return veorq_u32(x, vshrq_n_u32(x, 14));
}

void dr_randomk_draw_neon(uint64_t key, size_t first, size_t end, uint32_t threshold, uint64_t *bits)
{
    /* Counters below 2^32 (randomk_simd.h): the hash's high word is the key's. */
    static const uint32_t lane_init[4] = {0, 1, 2, 3}, weight_init[4] = {1, 2, 4, 8};
    const uint32x4_t high = vdupq_n_u32((uint32_t)(key >> 32)), below = vdupq_n_u32(threshold);
    const uint32x4_t weight = vld1q_u32(weight_init);
    uint32x4_t low = vaddq_u32(vld1q_u32(lane_init), vdupq_n_u32((uint32_t)(first * 64u) + (uint32_t)key));
    size_t w;
    for (w = first; w < end; w++) {
        uint64_t word = 0;
        unsigned q;
        for (q = 0; q < 16; q++) {
            uint32x4_t taken = vcltq_u32(hash32_neon(low, high), below);
            word |= (uint64_t)vaddvq_u32(vandq_u32(taken, weight)) << (4 * q);
            low = vaddq_u32(low, vdupq_n_u32(4));
        }
        bits[w] = word;
    }
}
#endif
