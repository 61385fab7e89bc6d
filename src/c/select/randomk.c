/* k distinct uniform indices from a keyed counter-based stream (Floyd's algorithm over a
 * bitmap), emitted in ascending order. Every rank with the same key draws the same set. */
#include "deepreduce.h"
#include "rng_inline.h"

#include <string.h>

size_t dr_randomk_workspace_size(size_t n)
{
    return ((n + 63u) / 64u) * sizeof(uint64_t);
}

int dr_randomk(uint64_t key, size_t n, size_t k, uint32_t *idx_out, void *work)
{
    uint64_t *bits = (uint64_t *)work;
    size_t j, w, out = 0, words = (n + 63u) / 64u;
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (idx_out == NULL || work == NULL)
        return DR_E_ARG;
    memset(bits, 0, words * sizeof(uint64_t));
    /* Floyd: for j = n-k .. n-1 pick t uniform in [0, j]; take t, or j if t is taken. */
    for (j = n - k; j < n; j++) {
        uint32_t r = (uint32_t)(dr_rng_u64_fast(key, j) >> 32);
        size_t t = (size_t)(((uint64_t)r * (uint64_t)(j + 1)) >> 32);
        if (bits[t >> 6] & (1ull << (t & 63u)))
            t = j;
        bits[t >> 6] |= 1ull << (t & 63u);
    }
    for (w = 0; w < words; w++) {
        uint64_t m = bits[w];
        while (m) {
            idx_out[out++] = (uint32_t)(w * 64u + (size_t)__builtin_ctzll(m));
            m &= m - 1u;
        }
    }
    return DR_OK;
}
