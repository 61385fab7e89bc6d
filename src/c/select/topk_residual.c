/* A residual memory's step in front of the top-k sparsifier: compensate, select, frame
 * and keep the residual in one call. The kernels are the ones the Python roles call one
 * by one (dr_axpby, dr_topk_sparsify, dr_sparse_raw_encode, dr_zero_at); what this saves
 * is the eighty-odd Python calls between them, most of a step on a small tensor. */
#include "deepreduce.h"

#include <string.h>

/* The selection's indices and values sit in the caller's work after the top-k scratch,
 * each part starting on a multiple of this (malloc's alignment or better). */
#define PART_ALIGN 64u

static size_t part(size_t bytes)
{
    return (bytes + PART_ALIGN - 1) / PART_ALIGN * PART_ALIGN;
}

size_t dr_topk_residual_workspace_size(size_t n, size_t k)
{
    return part(dr_topk_workspace_size(n, k)) + part(k * sizeof(uint32_t)) + k * sizeof(float);
}

int dr_topk_residual_encode(const float *residual, float beta, const float *grad, float gamma, size_t n,
                            size_t k, float *kept, uint8_t kind, uint8_t *buf, size_t cap, size_t *written,
                            void *work)
{
    uint32_t *idx;
    float *val;
    int st;
    /* Refused before anything is written: the frame's own checks would come after the
     * compensation had overwritten kept. */
    if ((n > 0 && (grad == NULL || kept == NULL)) || buf == NULL || written == NULL || work == NULL || k > n ||
        n > (size_t)UINT32_MAX || kind >= DR_KIND_COUNT_)
        return DR_E_ARG;
    if (cap < dr_sparse_raw_frame_size(n, k))
        return DR_E_DST_TOO_SMALL;
    idx = (uint32_t *)((uint8_t *)work + part(dr_topk_workspace_size(n, k)));
    val = (float *)((uint8_t *)idx + part(k * sizeof *idx));
    if (residual != NULL)
        st = dr_axpby(beta, residual, gamma, grad, kept, n);
    else if (gamma != 1.0f)
        st = dr_axpby(0.0f, grad, gamma, grad, kept, n); /* gamma * grad, as the memory's first compensate */
    else {
        if (n > 0)
            memcpy(kept, grad, n * sizeof *kept);
        st = DR_OK;
    }
    if (st == DR_OK)
        st = dr_topk_sparsify(kept, n, k, idx, val, work);
    if (st == DR_OK)
        st = dr_sparse_raw_encode(kind, DR_DTYPE_FLOAT32, n, idx, val, k, buf, cap, written);
    if (st == DR_OK)
        st = dr_zero_at(idx, k, kept, n);
    return st;
}
