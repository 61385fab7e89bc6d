/* Exact top-k by magnitude: radix select over the bits of |x|.
 *
 * For non-negative floats the IEEE bit pattern orders like the number, so |x| can be
 * ranked as a 31-bit unsigned key (NaN keys sort above infinity). Three histogram
 * passes (10 + 11 + 10 bits) find the k-th largest key T and how many entries equal to
 * T belong in the answer; a fourth pass writes indices in ascending order. The
 * histograms live on the stack: no allocation, four streaming reads of x. */
#include "deepreduce.h"

#include <string.h>

static uint32_t magnitude_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x7fffffffu;
}

int dr_topk(const float *x, size_t n, size_t k, uint32_t *idx_out)
{
    static const unsigned shift[3] = {21u, 10u, 0u};
    static const uint32_t width[3] = {10u, 11u, 10u};
    uint32_t hist[2048];
    uint32_t prefix = 0, prefix_mask = 0;
    size_t remaining = k, i, out = 0, ties_taken = 0;
    int pass;

    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (x == NULL || idx_out == NULL)
        return DR_E_ARG;

    for (pass = 0; pass < 3; pass++) {
        uint32_t bucket_mask = (1u << width[pass]) - 1u;
        uint32_t nbuckets = bucket_mask + 1u, b;
        size_t above = 0;
        memset(hist, 0, sizeof hist);
        if (pass == 0) {
            for (i = 0; i < n; i++)
                hist[magnitude_key(x[i]) >> shift[0]]++;
        } else {
            for (i = 0; i < n; i++) {
                uint32_t key = magnitude_key(x[i]);
                if ((key & prefix_mask) == prefix)
                    hist[(key >> shift[pass]) & bucket_mask]++;
            }
        }
        /* Walk down from the largest bucket until it holds the remaining-th entry. */
        b = nbuckets - 1u;
        while (above + hist[b] < remaining) {
            above += hist[b];
            b--;
        }
        remaining -= above;
        prefix |= b << shift[pass];
        prefix_mask |= bucket_mask << shift[pass];
    }

    /* prefix is now the k-th largest key; `remaining` entries equal to it are taken. */
    for (i = 0; i < n && out < k; i++) {
        uint32_t key = magnitude_key(x[i]);
        if (key > prefix || (key == prefix && ties_taken++ < remaining))
            idx_out[out++] = (uint32_t)i;
    }
    return DR_OK;
}
