/* DGC selection: a threshold from a 1% sample, corrected against exact counts, with an
 * exact top-k fallback so the result size is always within the band (see sparsify.h).
 *
 * dr_dgc_sparsify makes the same selection in one sweep of x where it can: before
 * touching x, the sample also gives a cut well below the threshold the search starts
 * from (the sampled magnitude at about twice its rank), and one sweep collects every
 * entry at or above the cut (index and value, in index order: about 2k of them) and the
 * largest magnitude (Inf/NaN). Each count at a threshold at or above the cut is then a
 * count over the candidates, and so is the selection, values included; a threshold the
 * search sends below the cut, or candidates that overflow their room, go back to sweeps
 * of x. */
#include "estimate.h"
#include "../select/candidates.h"

#include <math.h>
#include <string.h>

size_t dr_dgc_workspace_size(size_t n)
{
    return dr_sp_sample_size(n) * (sizeof(float) + sizeof(uint32_t));
}

/* Room for dr_dgc_sparsify's candidates: about 2k expected, and a margin for the
 * sample's error (k = 1% of 25.6M: the cut's count varies by about 7k). */
static size_t candidate_room(size_t n, size_t k)
{
    size_t room = 3u * k + 65536u;
    return room < n ? room : n;
}

size_t dr_dgc_sparsify_workspace_size(size_t n, size_t k)
{
    size_t own, topk;
    if (k > n)
        return 0;
    own = dr_dgc_workspace_size(n) + candidate_room(n, k) * (sizeof(uint32_t) + sizeof(float));
    topk = dr_topk_workspace_size(n, k); /* the fallback's, once the candidates are done with */
    return own > topk ? own : topk;
}

size_t dr_dgc_max_count(size_t k)
{
    size_t lo, hi;
    dr_sp_band(k, &lo, &hi);
    return hi;
}

/* The magnitudes of m sampled entries of x, a NaN as 0, into sample[0..m). */
static void sample_magnitudes(const float *x, size_t n, uint64_t key, float *sample, size_t m)
{
    size_t j;
    dr_random_sample(x, n, key, sample, m);
    for (j = 0; j < m; j++)
        sample[j] = isnan(sample[j]) ? 0.0f : fabsf(sample[j]);
}

/* What the counts read: x, and the candidates when they hold every entry at or above
 * `cut` (have_cut). */
typedef struct {
    const float *x;
    size_t n;
    const float *cand_val;
    size_t ncand;
    float cut;
    int have_cut;
} count_source;

static int from_candidates(const count_source *src, float thr)
{
    return src->have_cut && thr >= src->cut;
}

static int count_at(const count_source *src, float thr, size_t *c)
{
    if (thr == 0.0f && src->have_cut) { /* the sweep saw every entry finite: all reach 0 */
        *c = src->n;
        return DR_OK;
    }
    return from_candidates(src, thr) ? dr_threshold_count(src->cand_val, src->ncand, thr, c)
                                     : dr_threshold_count(src->x, src->n, thr, c);
}

/* Steps 2 of sparsify.h from *thr: the corrected threshold in *thr, its count in *c.
 * *in_band: whether the count ended inside [0.7k, 1.3k]. */
static int search(const count_source *src, size_t k, float *thr, size_t *c, int *in_band)
{
    dr_sp_search s;
    size_t lo, hi;
    int st, step;
    dr_sp_band(k, &lo, &hi);
    dr_sp_search_init(&s);
    for (step = 0;; step++) {
        st = count_at(src, *thr, c);
        if (st != DR_OK)
            return st;
        if ((*c >= lo && *c <= hi) || step == DR_DGC_MAX_ADJUST)
            break;
        *thr = dr_sp_search_next(&s, *thr, *c, hi);
    }
    *in_band = *c >= lo && *c <= hi;
    return DR_OK;
}

static int check_args(const float *x, size_t n, size_t k, const uint32_t *idx_out, size_t cap,
                      size_t *count, const void *work)
{
    if (count == NULL || k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    *count = 0;
    if (k > 0 && (x == NULL || work == NULL || (cap > 0 && idx_out == NULL)))
        return DR_E_ARG;
    return DR_OK;
}

/* The exact top-k, when the search ends outside the band. */
static int fallback_topk(const float *x, size_t n, size_t k, uint32_t *idx_out, size_t cap,
                         size_t *count)
{
    *count = k;
    return cap < k ? DR_E_DST_TOO_SMALL : dr_topk(x, n, k, idx_out);
}

int dr_dgc_select(const float *x, size_t n, size_t k, uint64_t key, uint32_t *idx_out,
                  size_t cap, size_t *count, void *work)
{
    float *sample = (float *)work, thr;
    size_t m, c = 0;
    count_source src;
    int st = check_args(x, n, k, idx_out, cap, count, work), in_band;
    if (st != DR_OK || k == 0)
        return st;
    m = dr_sp_sample_size(n);
    sample_magnitudes(x, n, key, sample, m);
    st = dr_sp_kth_largest(sample, m, dr_sp_scaled_rank(k, m, n), (uint32_t *)(sample + m), &thr);
    if (st != DR_OK)
        return st;
    memset(&src, 0, sizeof src);
    src.x = x;
    src.n = n;
    st = search(&src, k, &thr, &c, &in_band);
    if (st != DR_OK)
        return st;
    if (in_band)
        return dr_threshold_select(x, n, thr, idx_out, cap, count);
    return fallback_topk(x, n, k, idx_out, cap, count);
}

int dr_dgc_sparsify(const float *x, size_t n, size_t k, uint64_t key, uint32_t *idx_out,
                    float *val_out, size_t cap, size_t *count, void *work)
{
    float *sample = (float *)work, *cand_val, thr;
    uint32_t *rank_idx, *cand_idx, tkey, top;
    size_t m, kk, r, room, j, c = 0;
    count_source src;
    int st = check_args(x, n, k, idx_out, cap, count, work), in_band;
    if (st != DR_OK)
        return st;
    if ((k > 0 && cap > 0 && val_out == NULL) || (n > 0 && x == NULL))
        return DR_E_ARG;
    if (k == 0) /* nothing to select, and still a tensor to refuse */
        return dr_all_finite(x, n) == 1 ? DR_OK : DR_E_NUMERIC;
    m = dr_sp_sample_size(n);
    room = candidate_room(n, k);
    rank_idx = (uint32_t *)(sample + m);
    cand_idx = rank_idx + m;
    cand_val = (float *)(cand_idx + room);
    sample_magnitudes(x, n, key, sample, m);
    /* The cut: the least of the r largest samples, r about twice the threshold's rank kk.
     * The threshold: the kk-th largest of those r, which is the sample's kk-th largest
     * (dr_dgc_select's). The r values are staged in cand_val before the sweep. */
    kk = dr_sp_scaled_rank(k, m, n);
    r = 2u * kk + 16u < m ? 2u * kk + 16u : m;
    st = dr_topk(sample, m, r, rank_idx);
    if (st != DR_OK)
        return st;
    memset(&src, 0, sizeof src);
    src.cut = INFINITY;
    for (j = 0; j < r; j++) {
        cand_val[j] = sample[rank_idx[j]];
        src.cut = cand_val[j] < src.cut ? cand_val[j] : src.cut;
    }
    st = dr_sp_kth_largest(cand_val, r, kk, rank_idx, &thr);
    if (st != DR_OK)
        return st;
    /* A cut of zero (a sample of mostly zeros) would make every entry a candidate and
     * overflow the room: the candidates are the nonzero entries then. */
    if (!(src.cut > 0.0f))
        src.cut = DR_SP_LEAST_POSITIVE;

    memcpy(&tkey, &src.cut, sizeof tkey);
    src.x = x;
    src.n = n;
    src.cand_val = cand_val;
    src.ncand = dr_collect_candidates(x, 0, n, tkey, cand_idx, cand_val, room, &top);
    if (src.ncand > room) { /* the sweep stopped early: its top does not cover x */
        if (dr_all_finite(x, n) != 1)
            return DR_E_NUMERIC;
    } else if (top >= DR_NONFINITE_KEY) {
        return DR_E_NUMERIC;
    } else {
        src.have_cut = 1;
    }
    st = search(&src, k, &thr, &c, &in_band);
    if (st != DR_OK)
        return st;
    if (in_band && from_candidates(&src, thr)) {
        /* The c candidates at or above thr, whose key is its bits less the sign. */
        *count = c;
        if (c > cap)
            return DR_E_DST_TOO_SMALL;
        memcpy(&tkey, &thr, sizeof tkey);
        tkey &= 0x7fffffffu;
        dr_take_candidates(cand_idx, cand_val, src.ncand, tkey, c, idx_out, val_out);
        return DR_OK;
    }
    if (!in_band) { /* the exact top-k with its values (dr_topk's answer, on its fast path) */
        *count = k;
        return cap < k ? DR_E_DST_TOO_SMALL : dr_topk_sparsify(x, n, k, idx_out, val_out, work);
    }
    st = dr_threshold_select(x, n, thr, idx_out, cap, count);
    return st != DR_OK ? st : dr_gather(x, n, idx_out, *count, val_out);
}
