/* Exact top-k by magnitude: radix select over the bits of |x|.
 *
 * For non-negative floats the IEEE bit pattern orders like the number, so |x| can be
 * ranked as a 31-bit unsigned key. Three histogram
 * passes (10 + 11 + 10 bits) find the k-th largest key T and how many entries equal to
 * T belong in the answer; a last pass writes indices in ascending order, taking ties at
 * T from the lowest index up. The histograms live on the stack: no allocation.
 *
 * dr_topk_select first narrows the input to candidates with a sampled threshold (one
 * vectorised sweep that writes each candidate's index and value, split over
 * dr_thread_count() threads on large tensors), then runs the same radix select on the
 * candidates alone. Every
 * entry at or above T is a candidate and candidates keep ascending index order, so the
 * ties are broken identically and the answers agree bit for bit. */
#include "deepreduce.h"
#include "parallel.h"
#include "rng_inline.h"
#include "topk_simd.h"

#include <math.h>
#include <string.h>

#define SAMPLE_SIZE 16384u
#define FAST_MIN_N 65536u
#define SAMPLE_KEY 0x746f706b5f736d70ull /* "topk_smp": fixed, so runs are reproducible */

/* NaN ranks as zero magnitude: a NaN is never preferred to a number, as in the
 * threshold kernels, which never select one. */
static uint32_t magnitude_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0x7fffffffu;
    return u > 0x7f800000u ? 0u : u;
}

/* The k-th largest key of x[0..n) (1 <= k <= n) and how many entries equal to it are
 * among the k largest. */
static void kth_largest(const float *x, size_t n, size_t k, uint32_t *kth, size_t *ties)
{
    static const unsigned shift[3] = {21u, 10u, 0u};
    static const uint32_t width[3] = {10u, 11u, 10u};
    uint32_t hist[2048];
    uint32_t prefix = 0, prefix_mask = 0;
    size_t remaining = k, i;
    int pass;
    for (pass = 0; pass < 3; pass++) {
        uint32_t bucket_mask = (1u << width[pass]) - 1u;
        uint32_t b = bucket_mask;
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
        while (above + hist[b] < remaining) {
            above += hist[b];
            b--;
        }
        remaining -= above;
        prefix |= b << shift[pass];
        prefix_mask |= bucket_mask << shift[pass];
    }
    *kth = prefix;
    *ties = remaining;
}

int dr_topk(const float *x, size_t n, size_t k, uint32_t *idx_out)
{
    uint32_t kth;
    size_t ties, i, out = 0, ties_taken = 0;
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (x == NULL || idx_out == NULL)
        return DR_E_ARG;
    kth_largest(x, n, k, &kth, &ties);
    for (i = 0; i < n && out < k; i++) {
        uint32_t key = magnitude_key(x[i]);
        if (key > kth || (key == kth && ties_taken++ < ties))
            idx_out[out++] = (uint32_t)i;
    }
    return DR_OK;
}

/* Room for candidates: enough slack over k that a sampled threshold rarely overflows it. */
static size_t candidate_capacity(size_t n, size_t k)
{
    size_t cap = 2 * k + 4 * SAMPLE_SIZE;
    return cap < n ? cap : n;
}

size_t dr_topk_workspace_size(size_t n, size_t k)
{
    /* candidate indices + candidate values + the sample */
    return candidate_capacity(n, k) * (sizeof(uint32_t) + sizeof(float)) + SAMPLE_SIZE * sizeof(float);
}

/* A threshold that about `wanted` of n entries reach, biased low (by three standard
 * deviations of the sample count) so that at least k pass with high probability. */
static float sampled_threshold(const float *x, size_t n, size_t k, float *sample)
{
    double p = (double)k / (double)n, expected = p * SAMPLE_SIZE;
    size_t rank, j;
    uint32_t kth;
    size_t ties;
    float t;
    for (j = 0; j < SAMPLE_SIZE; j++) {
        size_t at = (size_t)(((dr_rng_u64_fast(SAMPLE_KEY, j) >> 32) * (uint64_t)n) >> 32);
        sample[j] = x[at];
    }
    rank = (size_t)(expected + 3.0 * sqrt(expected) + 8.0);
    if (rank > SAMPLE_SIZE)
        rank = SAMPLE_SIZE;
    kth_largest(sample, SAMPLE_SIZE, rank, &kth, &ties);
    memcpy(&t, &kth, sizeof t);
    return t;
}

/* The candidates among x[begin..end): the index and value of every entry of magnitude
 * key >= tkey (NaN never), in index order, into idx/val[0..cap). Returns their count,
 * or cap + 1 if they do not fit. */
static size_t collect_candidates(const float *x, size_t begin, size_t end, uint32_t tkey,
                                 uint32_t *idx, float *val, size_t cap)
{
    size_t i = begin, c = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_topk_candidates_avx512(x, begin, end, tkey, idx, val, cap, &c);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_topk_candidates_avx2(x, begin, end, tkey, idx, val, cap, &c);
#endif
    for (; i < end; i++) {
        uint32_t key;
        memcpy(&key, x + i, sizeof key);
        key &= 0x7fffffffu;
        if (key >= tkey && key <= 0x7f800000u) {
            if (c == cap)
                return cap + 1u;
            idx[c] = (uint32_t)i;
            val[c++] = x[i];
        }
    }
    return c;
}

/* The candidate sweep cut into parts, one per thread: part p sweeps its share of x
 * into its share of the candidate room, so no part waits on another. */
typedef struct {
    const float *x;
    size_t n, cap, parts;
    uint32_t tkey;
    uint32_t *idx;
    float *val;
    size_t found[DR_MAX_THREADS]; /* per part: its count, or more than its room */
} candidate_sweep;

static size_t share(size_t total, size_t parts, size_t p)
{
    return (size_t)((uint64_t)total * p / parts);
}

static int sweep_parts(void *ctx, size_t begin, size_t end)
{
    candidate_sweep *s = (candidate_sweep *)ctx;
    size_t p;
    for (p = begin; p < end; p++) {
        size_t room = share(s->cap, s->parts, p);
        s->found[p] = collect_candidates(s->x, share(s->n, s->parts, p), share(s->n, s->parts, p + 1),
                                         s->tkey, s->idx + room, s->val + room,
                                         share(s->cap, s->parts, p + 1) - room);
    }
    return DR_OK;
}

/* Every candidate of x, in index order, into idx/val[0..cap), as collect_candidates over
 * the whole of x. Each thread fills a share of the room proportional to its share of
 * x; the shares are then closed up. When one share overflows (candidates bunched in one
 * part of x), the sweep is redone on one thread with the whole room. */
static size_t collect_candidates_split(const float *x, size_t n, uint32_t tkey, uint32_t *idx,
                                       float *val, size_t cap, int threads)
{
    candidate_sweep s;
    size_t p, c;
    if (threads <= 1)
        return collect_candidates(x, 0, n, tkey, idx, val, cap);
    s.x = x;
    s.n = n;
    s.cap = cap;
    s.parts = (size_t)threads;
    s.tkey = tkey;
    s.idx = idx;
    s.val = val;
    dr_parallel_for(s.parts, threads, sweep_parts, &s);
    for (p = 0, c = 0; p < s.parts; p++) {
        size_t room = share(cap, s.parts, p);
        if (s.found[p] > share(cap, s.parts, p + 1) - room)
            return collect_candidates(x, 0, n, tkey, idx, val, cap);
        memmove(idx + c, idx + room, s.found[p] * sizeof *idx);
        memmove(val + c, val + room, s.found[p] * sizeof *val);
        c += s.found[p];
    }
    return c;
}

int dr_topk_select(const float *x, size_t n, size_t k, uint32_t *idx_out, void *work)
{
    size_t cap, count = 0, i, out = 0, ties, ties_taken = 0;
    uint32_t *cand_idx, kth, tkey;
    float *cand_val, *sample, t;
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (x == NULL || idx_out == NULL || work == NULL)
        return DR_E_ARG;
    cap = candidate_capacity(n, k);
    if (n < FAST_MIN_N || cap >= n)
        return dr_topk(x, n, k, idx_out);
    cand_idx = (uint32_t *)work;
    cand_val = (float *)(cand_idx + cap);
    sample = cand_val + cap;

    t = sampled_threshold(x, n, k, sample);
    /* A zero threshold (mostly zeros) would let NaNs, which rank as zero, escape the
     * candidates; it and a missed estimate fall back to the full select. */
    if (!(t > 0.0f))
        return dr_topk(x, n, k, idx_out);
    memcpy(&tkey, &t, sizeof tkey);
    count = collect_candidates_split(x, n, tkey, cand_idx, cand_val, cap,
                                     n >= DR_THREADS_MIN_NUMEL ? dr_thread_count() : 1);
    if (count < k || count > cap)
        return dr_topk(x, n, k, idx_out);
    kth_largest(cand_val, count, k, &kth, &ties);
    /* As dr_topk's last loop, without a branch per candidate (about one in five is not
     * taken, at random): every candidate is written at `out`, which only the taken
     * ones advance (out < k holds at each write). */
    for (i = 0; i < count && out < k; i++) {
        uint32_t key = magnitude_key(cand_val[i]);
        size_t tie = key == kth;
        idx_out[out] = cand_idx[i];
        out += (size_t)(key > kth) | (tie & (size_t)(ties_taken < ties));
        ties_taken += tie;
    }
    return DR_OK;
}
