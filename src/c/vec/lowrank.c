/* PowerSGD's decode, the product of its two thin factors P Q^T, and its residual
 * minuend - P Q^T, in one pass over the output, row by row: a row of out is its row of
 * P (rank floats) against all of Q^T, which stays in the caches. */
#include "deepreduce.h"
#include "lowrank_simd.h"
#include "parallel.h"
#include "stream_simd.h"

#include <stdint.h>
#include <string.h>

/* A range of rows reports an Inf or a NaN in what it wrote through its status (the
 * first nonzero status of the ranges is what dr_parallel_for returns). */
#define ROWS_NOT_FINITE 1

typedef struct {
    const float *p, *qt, *minuend;
    float *out;
    size_t cols, rank;
    int simd, stream;
} lowrank_job;

/* Columns [j, cols) of one row, one column at a time: the scalar path, and the vector
 * path's tail. */
static uint32_t row_tail(const float *prow, const float *qt, size_t cols, size_t rank,
                         const float *minuend, float *out, size_t j)
{
    uint32_t top = 0;
    size_t k;
    for (; j < cols; j++) {
        float v = prow[0] * qt[j];
        uint32_t bits;
        for (k = 1; k < rank; k++)
            v = v + prow[k] * qt[k * cols + j];
        if (minuend != NULL)
            v = minuend[j] - v;
        out[j] = v;
        memcpy(&bits, &v, sizeof bits);
        bits &= 0x7fffffffu;
        top = bits > top ? bits : top;
    }
    return top;
}

static int product_rows(void *ctx, size_t begin, size_t end)
{
    const lowrank_job *job = (const lowrank_job *)ctx;
    const size_t cols = job->cols, rank = job->rank;
    uint32_t top = 0, tail;
    size_t i;
    for (i = begin; i < end; i++) {
        const float *prow = job->p + i * rank;
        const float *minuend = job->minuend != NULL ? job->minuend + i * cols : NULL;
        float *out = job->out + i * cols;
        size_t j = 0;
#if DR_HAVE_X86_SIMD
        if (job->simd >= DR_SIMD_AVX2)
            j = dr_lowrank_row_avx2(prow, job->qt, cols, rank, minuend, out, job->stream, &top);
#endif
        tail = row_tail(prow, job->qt, cols, rank, minuend, out, j);
        top = tail > top ? tail : top;
    }
#if DR_HAVE_X86_SIMD
    if (job->stream)
        dr_stream_fence();
#endif
    return top > 0x7f7fffffu ? ROWS_NOT_FINITE : DR_OK;
}

int dr_lowrank_product(const float *p, const float *qt, size_t rows, size_t cols, size_t rank,
                       const float *minuend, float *out)
{
    lowrank_job job = {p, qt, minuend, out, cols, rank, 0, 0};
    int st;
    if (rank == 0 || (cols > 0 && rows > SIZE_MAX / cols) || (rows > 0 && rank > SIZE_MAX / rows) ||
        (cols > 0 && rank > SIZE_MAX / cols))
        return DR_E_ARG;
    if (rows == 0 || cols == 0)
        return 1;
    if (p == NULL || qt == NULL || out == NULL)
        return DR_E_ARG;
    job.simd = dr_simd_active();
    /* The vector rows store at out + i*cols + j: 16-byte aligned on every row when out is
     * and a row is a whole number of 4-float groups. */
    job.stream = dr_stream_output(out, rows * cols) && cols % 4 == 0;
    st = dr_parallel_for(rows, dr_threads_for(rows * cols, DR_THREADS_MIN_NUMEL), product_rows, &job);
    if (st == ROWS_NOT_FINITE)
        return 0;
    return st == DR_OK ? 1 : st;
}
