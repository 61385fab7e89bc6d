/* DGC selection: a threshold from a 1% sample, corrected against exact counts, with an
 * exact top-k fallback so the result size is always within the band (see sparsify.h). */
#include "estimate.h"

#include <math.h>

size_t dr_dgc_workspace_size(size_t n)
{
    return dr_sp_sample_size(n) * (sizeof(float) + sizeof(uint32_t));
}

size_t dr_dgc_max_count(size_t k)
{
    size_t lo, hi;
    dr_sp_band(k, &lo, &hi);
    return hi;
}

int dr_dgc_select(const float *x, size_t n, size_t k, uint64_t key, uint32_t *idx_out,
                  size_t cap, size_t *count, void *work)
{
    float *sample = (float *)work, thr;
    uint32_t *rank_idx;
    size_t m, j, c = 0, lo, hi;
    dr_sp_search search;
    int st, step;
    if (count == NULL || k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    *count = 0;
    if (k == 0)
        return DR_OK;
    if (x == NULL || work == NULL || (cap > 0 && idx_out == NULL))
        return DR_E_ARG;
    m = dr_sp_sample_size(n);
    rank_idx = (uint32_t *)(sample + m);
    dr_random_sample(x, n, key, sample, m);
    for (j = 0; j < m; j++)
        sample[j] = isnan(sample[j]) ? 0.0f : fabsf(sample[j]);
    st = dr_sp_kth_largest(sample, m, dr_sp_scaled_rank(k, m, n), rank_idx, &thr);
    if (st != DR_OK)
        return st;

    dr_sp_band(k, &lo, &hi);
    dr_sp_search_init(&search);
    for (step = 0;; step++) {
        st = dr_threshold_count(x, n, thr, &c);
        if (st != DR_OK)
            return st;
        if ((c >= lo && c <= hi) || step == DR_DGC_MAX_ADJUST)
            break;
        thr = dr_sp_search_next(&search, thr, c, hi);
    }
    if (c >= lo && c <= hi)
        return dr_threshold_select(x, n, thr, idx_out, cap, count);
    *count = k;
    return cap < k ? DR_E_DST_TOO_SMALL : dr_topk(x, n, k, idx_out);
}
