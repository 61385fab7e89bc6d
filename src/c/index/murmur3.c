/* MurmurHash3 x86_32 (Austin Appleby's public-domain design), the hash the Bloom
 * filter codec is specified with. Blocks are read little-endian, as on x86. */
#include "murmur3.h"

uint32_t dr_murmur3_32(const uint8_t *key, size_t len, uint32_t seed)
{
    uint32_t h = seed, k = 0;
    size_t i, blocks = len / 4u;
    for (i = 0; i < blocks; i++) {
        const uint8_t *p = key + 4u * i;
        h = dr_murmur3_block(h, (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                    (uint32_t)p[3] << 24);
    }
    /* The 1..3 trailing bytes are mixed in without the block's rotate-and-add step. */
    switch (len & 3u) {
    case 3:
        k ^= (uint32_t)key[4u * blocks + 2u] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)key[4u * blocks + 1u] << 8;
        /* fall through */
    case 1:
        k ^= key[4u * blocks];
        h ^= dr_murmur3_scramble(k);
        break;
    default:
        break;
    }
    return dr_murmur3_fmix(h ^ (uint32_t)len);
}
