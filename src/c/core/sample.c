/* Random samples of a tensor's entries, shared by the sampled threshold searches (dgc,
 * adaq) and the quantile sketch. */
#include "sample.h"
#include "rng_inline.h"

void dr_random_sample(const float *x, size_t n, uint64_t key, float *sample, size_t m)
{
    /* Each read is a cache (and TLB) miss in a large tensor: the positions of a batch
     * are drawn and prefetched first, so its misses overlap, then read. */
    enum { BATCH = 256 }; /* 64: 1.8 ms for 255k reads of 102 MB; 256: 1.1 ms */
    uint32_t pos[BATCH];
    size_t j, b, len;
    for (j = 0; j < m; j += len) {
        len = m - j < BATCH ? m - j : BATCH;
        for (b = 0; b < len; b++) {
            /* The top 32 bits scaled to [0, n): uniform up to n/2^32, without a division. */
            uint64_t r = dr_rng_u64_fast(key, j + b) >> 32;
            pos[b] = (uint32_t)((r * (uint64_t)n) >> 32);
#if defined(__GNUC__) || defined(__clang__)
            __builtin_prefetch(x + pos[b]);
#endif
        }
        for (b = 0; b < len; b++)
            sample[j + b] = x[pos[b]];
    }
}
