/* Internal to src/c/sparsify: the sample-then-correct threshold search that dgc and adaq
 * share. Not part of the public API. */
#ifndef DR_ESTIMATE_H
#define DR_ESTIMATE_H

#include "deepreduce.h"
#include "sample.h"

#include <float.h>

/* The sample size for n entries: max(1, n/100). */
size_t dr_sp_sample_size(size_t n);

/* *out = the kk-th largest of v[0..m) (1 <= kk <= m, v >= 0 without NaN), found with
 * dr_topk; idx holds kk uint32. */
int dr_sp_kth_largest(const float *v, size_t m, size_t kk, uint32_t *idx, float *out);

/* round(t*m/n) clamped to [1, m]: how many of m samples stand for t of n entries. */
size_t dr_sp_scaled_rank(size_t t, size_t m, size_t n);

/* The accepted band of counts around a target t: [t - floor(0.3t), t + floor(0.3t)]. */
void dr_sp_band(size_t t, size_t *lo, size_t *hi);

/* What the search knows: thresholds that selected too many (below the answer) and too
 * few (above it). */
typedef struct {
    float below, above;
    int have_below, have_above;
} dr_sp_search;

void dr_sp_search_init(dr_sp_search *s);

/* The smallest positive float (a denormal): a threshold that leaves out exactly the zeros. */
#define DR_SP_LEAST_POSITIVE (FLT_MIN * FLT_EPSILON)

/* Threshold thr selected c entries, which is above hi or below the band: the next
 * threshold to try. Rescales by 1.3 or 0.7 until the answer is bracketed, then bisects. */
float dr_sp_search_next(dr_sp_search *s, float thr, size_t c, size_t hi);

#endif
