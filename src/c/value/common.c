/* What the value codecs share. The stable LSD radix sort orders values for polyfit and
 * dexp: each maps its floats to uint32 keys whose unsigned order is the order it wants,
 * so one sort serves both, and stability makes equal values keep their input order on
 * every rank. */
#include "value_internal.h"

#include <string.h>

void dr_value_radix_sort(uint32_t *keys, uint32_t *perm, uint32_t *tmp_keys, uint32_t *tmp_perm,
                         size_t n)
{
    uint32_t hist[4][256];
    uint32_t *src_k = keys, *src_p = NULL, *dst_k = tmp_keys, *dst_p = tmp_perm;
    size_t i;
    unsigned pass;

    if (n == 0)
        return;
    /* All four histograms in one read. */
    memset(hist, 0, sizeof hist);
    for (i = 0; i < n; i++) {
        uint32_t k = keys[i];
        hist[0][k & 255u]++;
        hist[1][(k >> 8) & 255u]++;
        hist[2][(k >> 16) & 255u]++;
        hist[3][k >> 24]++;
    }
    for (pass = 0; pass < 4; pass++) {
        unsigned shift = 8u * pass;
        uint32_t offset[256], sum = 0, *t;
        unsigned b;
        if (hist[pass][(keys[0] >> shift) & 255u] == (uint32_t)n)
            continue; /* every key has this byte: the pass would not move anything */
        for (b = 0; b < 256; b++) {
            offset[b] = sum;
            sum += hist[pass][b];
        }
        /* src_p == NULL stands for the identity permutation before the first real pass. */
        for (i = 0; i < n; i++) {
            uint32_t k = src_k[i];
            uint32_t o = offset[(k >> shift) & 255u]++;
            dst_k[o] = k;
            dst_p[o] = src_p != NULL ? src_p[i] : (uint32_t)i;
        }
        t = src_k, src_k = dst_k, dst_k = t;
        /* The next pass writes its permutation into whichever perm array is not the source. */
        src_p = dst_p;
        dst_p = src_p == tmp_perm ? perm : tmp_perm;
    }
    if (src_p == NULL) {
        for (i = 0; i < n; i++)
            perm[i] = (uint32_t)i;
    } else if (src_p != perm) {
        memcpy(perm, src_p, n * sizeof *perm);
    }
    if (src_k != keys)
        memcpy(keys, src_k, n * sizeof *keys);
}

size_t dr_value_sort_scratch_size(size_t n)
{
    return n > SIZE_MAX / 12u ? SIZE_MAX : 12u * n;
}

int dr_value_sort_begin(const float *val, size_t r, const uint32_t *perm_out,
                        const uint8_t *out, size_t cap, const size_t *written, void *work,
                        uint32_t **keys, uint32_t **tmp_keys, uint32_t **tmp_perm)
{
    uint32_t *w = (uint32_t *)work;
    if (r > (size_t)UINT32_MAX || written == NULL || (r > 0 && (val == NULL || perm_out == NULL)) ||
        (out == NULL && cap > 0))
        return DR_E_ARG;
    if (r > 0 && (work == NULL || ((uintptr_t)work & 7u) != 0))
        return DR_E_ARG;
    *keys = w;
    *tmp_keys = r > 0 ? w + r : w;
    *tmp_perm = r > 0 ? w + 2u * r : w;
    return dr_value_all_finite(val, r) ? DR_OK : DR_E_NUMERIC;
}
