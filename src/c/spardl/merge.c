/* Sorted sparse lists: merge with addition, and re-selection of the largest entries. */
#include "deepreduce.h"

static int ascending(const uint32_t *idx, size_t n)
{
    size_t j;
    for (j = 1; j < n; j++)
        if (idx[j] <= idx[j - 1])
            return 0;
    return 1;
}

int dr_sparse_merge_add(const uint32_t *ia, const float *va, size_t na, const uint32_t *ib,
                        const float *vb, size_t nb, uint32_t *io, float *vo, size_t *n_out)
{
    size_t a = 0, b = 0, o = 0;
    if (n_out == NULL || (na > 0 && (ia == NULL || va == NULL)) ||
        (nb > 0 && (ib == NULL || vb == NULL)) || (na + nb > 0 && (io == NULL || vo == NULL)))
        return DR_E_ARG;
    if (!ascending(ia, na) || !ascending(ib, nb))
        return DR_E_ARG;
    while (a < na && b < nb) {
        if (ia[a] < ib[b]) {
            io[o] = ia[a];
            vo[o++] = va[a++];
        } else if (ib[b] < ia[a]) {
            io[o] = ib[b];
            vo[o++] = vb[b++];
        } else {
            io[o] = ia[a];
            vo[o++] = va[a++] + vb[b++];
        }
    }
    for (; a < na; a++, o++) {
        io[o] = ia[a];
        vo[o] = va[a];
    }
    for (; b < nb; b++, o++) {
        io[o] = ib[b];
        vo[o] = vb[b];
    }
    *n_out = o;
    return DR_OK;
}

int dr_sparse_keep_topk(uint32_t *idx, float *val, size_t n, size_t k, size_t *n_out,
                        uint32_t *work)
{
    size_t j;
    int st;
    if (n_out == NULL || (n > 0 && (idx == NULL || val == NULL)))
        return DR_E_ARG;
    if (n <= k) {
        *n_out = n;
        return DR_OK;
    }
    if (work == NULL && k > 0)
        return DR_E_ARG;
    st = dr_topk(val, n, k, work); /* positions, ascending */
    if (st != DR_OK)
        return st;
    for (j = 0; j < k; j++) { /* work[j] >= j: compacting forward never overwrites */
        idx[j] = idx[work[j]];
        val[j] = val[work[j]];
    }
    *n_out = k;
    return DR_OK;
}
