/* Exact top-k by magnitude: radix select over the bits of |x|.
 *
 * For non-negative floats the IEEE bit pattern orders like the number, so |x| can be
 * ranked as a 31-bit unsigned key. Three histogram
 * passes (10 + 11 + 10 bits) find the k-th largest key T and how many entries equal to
 * T belong in the answer; a last pass writes indices in ascending order, taking ties at
 * T from the lowest index up. The histograms live on the stack: no allocation.
 *
 * dr_topk_select first narrows the input to candidates with a sampled threshold (one
 * vectorised sweep that writes each candidate's index and value), then runs the same
 * radix select on the candidates alone. Small tensors, and the sample's misses, take the
 * threshold from an exact histogram of the top radix level instead (exact_select). On
 * large tensors the sample, the sweep, the histograms and the last pass are split over
 * threads (select_split). Every
 * entry at or above T is a candidate and candidates keep ascending index order, so the
 * ties are broken identically and the answers agree bit for bit.
 *
 * dr_topk_sparsify is the same selection with the values written beside the indices
 * (the candidates carry them) and Inf/NaN refused: the sweep keeps the largest raw
 * magnitude key it reads, so the refusal costs no pass of its own on the sampled path. */
#include "deepreduce.h"
#include "parallel.h"
#include "rng_inline.h"
#include "candidates.h"
#include "topk_simd.h"
#include "size_math.h"

#include <math.h>
#include <string.h>

#define SAMPLE_SIZE 16384u
#define SAMPLED_MIN_N 8192u /* the least n the sampled path takes (below, exact_select) */
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

/* The radix levels over a 31-bit key: its top 10 bits, the next 11, the last 10. */
#define TOP_WIDTH 10u /* the top level's, which sizes radix_histogram's stack counters */
static const unsigned radix_shift[3] = {21u, 10u, 0u};
static const unsigned radix_width[3] = {TOP_WIDTH, 11u, 10u};
#define RADIX_BUCKETS 2048u
#define PICK_BLOCK 16u /* divides every level's bucket count */
#define TOP_LANES_MIN_N 2048u

/* The top level's histogram of the keys of x[0..n), into hist[0..2^TOP_WIDTH). Every key
 * is known to be at least `floor` (candidates reach their threshold's key), or floor is
 * 0. */
static void top_histogram(const float *x, size_t n, uint32_t floor, uint32_t *hist)
{
    /* From TOP_LANES_MIN_N entries, neighbouring entries count into four copies of the
     * histogram (hist itself and three lanes, summed at the end), one per entry of an
     * unrolled step, so that increments of one bucket do not each wait for the last
     * one's store: candidates share a few buckets (an exponent or two). Below, zeroing
     * and summing the lanes would cost more than they save. (A lane index per entry,
     * i mod 4, cost more than the waits it saved.) */
    uint32_t lane[3][1u << TOP_WIDTH];
    unsigned shift = radix_shift[0];
    size_t i = 0, b, buckets = (size_t)1 << TOP_WIDTH;
    memset(hist, 0, buckets * sizeof *hist);
#if DR_HAVE_X86_SIMD
    if (floor > 0 && (floor >> shift) <= (1u << TOP_WIDTH) - TOP_WINDOW && dr_simd_active() >= DR_SIMD_AVX512)
        i = dr_topk_top_level_avx512(x, n, shift, floor >> shift, hist);
#else
    (void)floor; /* only the vector window uses it */
#endif
    if (n - i >= TOP_LANES_MIN_N) {
        memset(lane, 0, sizeof lane);
        for (; i + 4 <= n; i += 4) {
            hist[magnitude_key(x[i]) >> shift]++;
            lane[0][magnitude_key(x[i + 1]) >> shift]++;
            lane[1][magnitude_key(x[i + 2]) >> shift]++;
            lane[2][magnitude_key(x[i + 3]) >> shift]++;
        }
        for (b = 0; b < buckets; b++)
            hist[b] += lane[0][b] + lane[1][b] + lane[2][b];
    }
    for (; i < n; i++)
        hist[magnitude_key(x[i]) >> shift]++;
}

/* The histogram at `level` (1 or 2) of the keys of x[0..n) whose bits above the level
 * equal `prefix`, into hist[0..2^width). */
static void radix_histogram(const float *x, size_t n, int level, uint32_t prefix, uint32_t *hist)
{
    uint32_t bucket_mask = (1u << radix_width[level]) - 1u, above_mask;
    unsigned shift = radix_shift[level];
    size_t i = 0;
    memset(hist, 0, sizeof(uint32_t) << radix_width[level]);
    above_mask = ~0u << (shift + radix_width[level]);
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_topk_level_avx512(x, n, shift, bucket_mask, above_mask, prefix, hist);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_topk_level_avx2(x, n, shift, bucket_mask, above_mask, prefix, hist);
#endif
    /* Whether a key matches the prefix is a coin toss at level 1 (most candidates share
     * the top bucket): added, not branched on. At level 2 few match (one bucket of the
     * 2048 at level 1), so the branch is nearly always not taken and the loop skips the
     * increments. */
    if (level == 1) {
        for (; i < n; i++) {
            uint32_t key = magnitude_key(x[i]);
            hist[(key >> shift) & bucket_mask] += (key & above_mask) == prefix;
        }
    } else {
        for (; i < n; i++) {
            uint32_t key = magnitude_key(x[i]);
            if ((key & above_mask) == prefix)
                hist[(key >> shift) & bucket_mask]++;
        }
    }
}

/* The bucket of hist[0..buckets) (a multiple of PICK_BLOCK) that holds the remaining-th
 * largest key, walking down from the largest; the buckets above it are taken off
 * *remaining. */
static uint32_t bucket_pick(const uint32_t *hist, uint32_t buckets, size_t *remaining)
{
    uint32_t b = buckets - 1u;
    size_t above = 0;
    /* Blocks of PICK_BLOCK buckets first (a sum the compiler vectorises): most of a
     * level's buckets lie above the k-th key, and on a small x their walk one bucket at
     * a time cost more than the histograms. */
    while (b + 1u >= PICK_BLOCK) {
        size_t block = 0;
        unsigned j;
        for (j = 0; j < PICK_BLOCK; j++)
            block += hist[b - j];
        if (above + block >= *remaining)
            break;
        above += block;
        b -= PICK_BLOCK;
    }
    while (above + hist[b] < *remaining) {
        above += hist[b];
        b--;
    }
    *remaining -= above;
    return b;
}

/* bucket_pick on the histogram of radix level `level`. */
static uint32_t radix_pick(const uint32_t *hist, int level, size_t *remaining)
{
    return bucket_pick(hist, 1u << radix_width[level], remaining);
}

/* Up to this many entries, lower_levels copies the keys in the top level's bucket aside
 * and selects among them alone, in digits of COMPACT_WIDTH bits, keeping after each digit
 * only the keys that share the digit picked: on a layer's tensor (1,000 entries, a few
 * hundred candidates, a hundred of them in the bucket) levels 1 and 2 swept every
 * candidate twice and walked 3,072 buckets, half of its selection's time. */
#define COMPACT_MAX_N 4096u
#define COMPACT_WIDTH 7u /* three digits: the 21 bits under the top level */

static uint32_t compact_lower_levels(const float *x, size_t n, uint32_t prefix, size_t *remaining, uint32_t *hist)
{
    uint32_t keys[COMPACT_MAX_N], top = prefix >> radix_shift[0], mask = (1u << COMPACT_WIDTH) - 1u;
    unsigned shift = radix_shift[0];
    size_t m = 0, i;
    for (i = 0; i < n; i++) { /* written always, kept when in the bucket: no branch to miss */
        uint32_t key = magnitude_key(x[i]);
        keys[m] = key;
        m += (key >> radix_shift[0]) == top;
    }
    while (shift > 0u) {
        uint32_t digit;
        size_t kept = 0;
        shift -= COMPACT_WIDTH;
        memset(hist, 0, sizeof(uint32_t) << COMPACT_WIDTH);
        for (i = 0; i < m; i++)
            hist[(keys[i] >> shift) & mask]++;
        digit = bucket_pick(hist, 1u << COMPACT_WIDTH, remaining);
        prefix |= digit << shift;
        for (i = 0; i < m && shift > 0u; i++) {
            keys[kept] = keys[i];
            kept += ((keys[i] >> shift) & mask) == digit;
        }
        m = kept;
    }
    return prefix;
}

/* The k-th largest key of x[0..n), given its top level (`prefix`) and how many of the k
 * are not yet placed above it (*remaining, which ends as the ties at the k-th key taken):
 * levels 1 and 2 over the keys with that top level. `hist`: room for RADIX_BUCKETS. */
static uint32_t lower_levels(const float *x, size_t n, uint32_t prefix, size_t *remaining, uint32_t *hist)
{
    int level;
    if (n <= COMPACT_MAX_N)
        return compact_lower_levels(x, n, prefix, remaining, hist);
    for (level = 1; level < 3; level++) {
        radix_histogram(x, n, level, prefix, hist);
        prefix |= radix_pick(hist, level, remaining) << radix_shift[level];
    }
    return prefix;
}

/* The k-th largest key of x[0..n) (1 <= k <= n) and how many entries equal to it are
 * among the k largest; `floor` as top_histogram's. */
static void kth_largest(const float *x, size_t n, size_t k, uint32_t floor, uint32_t *kth, size_t *ties)
{
    uint32_t hist[RADIX_BUCKETS];
    size_t remaining = k;
    top_histogram(x, n, floor, hist);
    *kth = lower_levels(x, n, radix_pick(hist, 0, &remaining) << radix_shift[0], &remaining, hist);
    *ties = remaining;
}

int dr_topk(const float *x, size_t n, size_t k, uint32_t *idx_out)
{
    uint32_t kth;
    size_t ties, i = 0, out = 0, ties_taken = 0;
#if DR_HAVE_X86_SIMD
    int simd;
#endif
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (x == NULL || idx_out == NULL)
        return DR_E_ARG;
    kth_largest(x, n, k, 0, &kth, &ties);
#if DR_HAVE_X86_SIMD
    simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_topk_write_avx512(NULL, x, n, k, kth, ties, idx_out, NULL, &out, &ties_taken);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_topk_write_avx2(NULL, x, n, k, kth, ties, idx_out, NULL, &out, &ties_taken);
#endif
    /* The portable path: a branch per entry, which where few are taken (a sparsifier's
     * k) is predicted right nearly always and costs less than write_answers' stores of
     * every entry. */
    for (; i < n && out < k; i++) {
        uint32_t key = magnitude_key(x[i]);
        if (key > kth || (key == kth && ties_taken++ < ties))
            idx_out[out++] = (uint32_t)i;
    }
    return DR_OK;
}

/* Room for candidates: enough slack over k that a sampled threshold rarely overflows it. */
static size_t candidate_capacity(size_t n, size_t k)
{
    size_t cap = dr_size_add(dr_size_mul(2u, k), 4 * SAMPLE_SIZE);
    return cap < n ? cap : n;
}

/* At most this many threads split a selection (each keeps a histogram in the workspace),
 * one per DR_THREADS_MIN_NUMEL entries of x. */
#define SPLIT_MAX_PARTS 8u

size_t dr_topk_workspace_size(size_t n, size_t k)
{
    /* candidate indices + candidate values + the sample (+ the parts' histograms) */
    size_t histograms = n >= DR_THREADS_MIN_NUMEL ? SPLIT_MAX_PARTS * RADIX_BUCKETS * sizeof(uint32_t) : 0;
    return dr_size_add(dr_size_mul(candidate_capacity(n, k), sizeof(uint32_t) + sizeof(float)),
                       SAMPLE_SIZE * sizeof(float) + histograms);
}

/* The sample is `runs` runs of SAMPLE_RUN consecutive entries (a cache line of floats),
 * one at a random offset in each of `runs` equal strides of x: a run costs about one
 * cache miss where as many scattered entries cost one each, and the strides spread the
 * runs over every layer of a flattened model. SAMPLE_RUNS runs from 131,072 entries on;
 * below, one run per SAMPLE_SPACING entries (an eighth of x), so that the sample of a
 * tensor of a few ten thousand entries costs an eighth of a full histogram of it. */
#define SAMPLE_RUN 16u
#define SAMPLE_RUNS (SAMPLE_SIZE / SAMPLE_RUN)
#define SAMPLE_SPACING 128u
/* Every stride holds a run (take_sample's offsets would wrap otherwise) and there are two
 * runs at least (count_dispersion compares neighbours): compile-time checks that the
 * sampled path's least n leaves room. */
typedef char dr_sampled_min_n_holds_the_sample[SAMPLED_MIN_N >= 2 * SAMPLE_SPACING && SAMPLE_SPACING >= 2 * SAMPLE_RUN
                                                ? 1 : -1];

static size_t sample_runs(size_t n)
{
    size_t runs = n / SAMPLE_SPACING;
    return runs < SAMPLE_RUNS ? runs : SAMPLE_RUNS;
}

/* Runs [first, last) of the `runs` of the sample of x into their places in sample[]. */
static void take_sample(const float *x, size_t n, size_t runs, float *sample, size_t first, size_t last)
{
    size_t stride = (n - SAMPLE_RUN) / runs, j;
    for (j = first; j < last; j++) {
        uint64_t draw = dr_rng_u64_fast(SAMPLE_KEY, j) >> 32;
        size_t at = j * stride + (size_t)((draw * (uint64_t)(stride - SAMPLE_RUN + 1u)) >> 32);
        memcpy(sample + j * SAMPLE_RUN, x + at, SAMPLE_RUN * sizeof *x);
    }
}

/* The variance of the sample's count of keys >= kth over the count itself (`taken`):
 * about 1 for entries drawn independently (a binomial count with a small p), more when
 * a run's entries reach kth together (a channel of large gradients). From the
 * differences of neighbouring runs' counts, the estimator of a systematic sample, so
 * that scales varying from layer to layer (a trend across runs) do not inflate it. */
static double count_dispersion(const float *sample, size_t runs, uint32_t kth, size_t taken)
{
    double sum = 0.0;
    int previous = 0;
    size_t j, i;
    for (j = 0; j < runs; j++) {
        int count = 0;
        for (i = 0; i < SAMPLE_RUN; i++)
            count += magnitude_key(sample[j * SAMPLE_RUN + i]) >= kth;
        if (j > 0)
            sum += (double)((count - previous) * (count - previous));
        previous = count;
    }
    /* sum / (2 (R - 1)) estimates one run's count variance; R of them over `taken`. */
    return taken > 0 ? sum / (2.0 * (double)(runs - 1)) * (double)runs / (double)taken : 1.0;
}

/* A threshold that about k of n entries reach, from their sample (take_sample), biased
 * low by three standard deviations of the sample's count (binomial, or wider where the
 * sample says the runs' entries are correlated) so that at least k pass with high
 * probability. */
static float threshold_from_sample(const float *sample, size_t runs, size_t n, size_t k)
{
    size_t size = runs * SAMPLE_RUN, rank, wider, ties;
    double expected = (double)k / (double)n * (double)size, dispersion;
    uint32_t kth;
    float t;
    rank = (size_t)(expected + 3.0 * sqrt(expected) + 8.0);
    if (rank > size)
        rank = size;
    kth_largest(sample, size, rank, 0, &kth, &ties);
    dispersion = count_dispersion(sample, runs, kth, rank);
    wider = (size_t)(expected + 3.0 * sqrt(expected * dispersion) + 8.0);
    if (wider > rank + 8u) {
        rank = wider < size ? wider : size;
        kth_largest(sample, size, rank, 0, &kth, &ties);
    }
    memcpy(&t, &kth, sizeof t);
    return t;
}

static float sampled_threshold(const float *x, size_t n, size_t k, float *sample)
{
    size_t runs = sample_runs(n);
    take_sample(x, n, runs, sample, 0, runs);
    return threshold_from_sample(sample, runs, n, k);
}

/* The candidates' key for every nonzero entry: a sample whose k-th largest magnitude is
 * zero (a tensor of mostly zeros) sweeps for them all, and where they are fewer than k the
 * answer is all of them and the first zeros (write_with_zero_ties). */
#define ALL_NONZERO 1u

/* The candidates' key for threshold t (t >= 0: the sample's keys rank NaN as zero). */
static uint32_t threshold_key(float t)
{
    uint32_t key;
    memcpy(&key, &t, sizeof key);
    return key > 0 ? key : ALL_NONZERO;
}

/* See candidates.h. */
size_t dr_collect_candidates(const float *x, size_t begin, size_t end, uint32_t tkey, uint32_t *idx,
                             float *val, size_t cap, uint32_t *top)
{
    size_t i = begin, c = 0;
    *top = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_topk_candidates_avx512(x, begin, end, tkey, idx, val, cap, &c, top);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_topk_candidates_avx2(x, begin, end, tkey, idx, val, cap, &c, top);
#elif DR_HAVE_NEON
    if (dr_simd_active() == DR_SIMD_NEON)
        i = dr_topk_candidates_neon(x, begin, end, tkey, idx, val, cap, &c, top);
#endif
    for (; i < end; i++) {
        uint32_t key;
        memcpy(&key, x + i, sizeof key);
        key &= 0x7fffffffu;
        *top = key > *top ? key : *top;
        if (key >= tkey && key <= DR_NONFINITE_KEY) {
            if (c == cap)
                return cap + 1u;
            idx[c] = (uint32_t)i;
            val[c++] = x[i];
        }
    }
    return c;
}

/* The selection split over threads, as the steps of one dr_parallel_steps call:
 *   sample  part p takes its share of the sample's runs; then the caller sets the
 *           threshold from the whole sample;
 *   sweep   part p sweeps its share of x into its share of the candidate room
 *           (proportional to its share of x) and keeps a histogram of its candidates'
 *           top radix level;
 *   level 1, level 2: a histogram of its candidates at that level;
 *           after each of these the caller sums the parts' histograms and picks the
 *           bucket, as kth_largest does on one histogram;
 *   write   the parts' histograms said how many of each part's candidates are above the
 *           k-th key and how many tie with it, so each part writes its answers at its
 *           own offset, the ties going to the lowest indices as on one thread. */
enum { STEP_SAMPLE, STEP_SWEEP, STEP_LEVEL1, STEP_LEVEL2, STEP_WRITE, SPLIT_STEPS };

/* How the steps end, besides DR_OK: the candidates are fewer than k (select_split then
 * gathers them at the start of the room), a part's candidates overflowed its share of the
 * room, or (for dr_topk_sparsify) the sweep met an Inf or a NaN. */
enum { SPLIT_FEW = 1, SPLIT_OVERFLOW = 2, SPLIT_NONFINITE = 3 };

typedef struct {
    const float *x;
    size_t n, k, cap, parts;
    float *sample;
    uint32_t tkey;   /* set after the sample step */
    uint32_t *idx;   /* candidate room; part p's share starts at dr_share(cap, parts, p) */
    float *val;
    uint32_t *hist;  /* parts x RADIX_BUCKETS */
    size_t remaining; /* of the k, those not yet placed above the buckets picked so far */
    uint32_t prefix; /* the key bits picked so far */
    uint32_t *idx_out;
    float *val_out;  /* the answers' values (dr_topk_sparsify), or NULL */
    size_t found[SPLIT_MAX_PARTS];  /* candidates of each part (more than its room: overflowed) */
    uint32_t top[SPLIT_MAX_PARTS];  /* the largest raw magnitude key each part swept */
    size_t above[SPLIT_MAX_PARTS];  /* of them, above the k-th key */
    size_t ties[SPLIT_MAX_PARTS];   /* of them, equal to it and among the k largest */
    size_t out_at[SPLIT_MAX_PARTS]; /* where its answers start in idx_out */
} split_select;

static uint32_t *part_histogram(const split_select *s, size_t p)
{
    return s->hist + p * RADIX_BUCKETS;
}

static size_t part_room(const split_select *s, size_t p)
{
    return dr_share(s->cap, s->parts, p + 1) - dr_share(s->cap, s->parts, p);
}

/* The sweep of part p: its candidates, then their level-0 histogram. */
static void sweep_part(split_select *s, size_t p)
{
    size_t room = dr_share(s->cap, s->parts, p);
    s->found[p] = dr_collect_candidates(s->x, dr_share(s->n, s->parts, p), dr_share(s->n, s->parts, p + 1),
                                        s->tkey, s->idx + room, s->val + room, part_room(s, p), &s->top[p]);
    if (s->found[p] <= part_room(s, p))
        top_histogram(s->val + room, s->found[p], s->tkey, part_histogram(s, p));
}

/* The k answers among `count` candidates, given the k-th key and how many ties at it are
 * taken: as dr_topk's last loop, without a branch per candidate (about one in five is not
 * taken, at random): every candidate is written at `out`, which only the taken ones
 * advance (out < k holds at each write). Their values too where val_out is not NULL. */
static void write_answers(const uint32_t *cand_idx, const float *cand_val, size_t count, size_t k,
                          uint32_t kth, size_t ties, uint32_t *idx_out, float *val_out)
{
    size_t i = 0, out = 0, ties_taken = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_topk_write_avx512(cand_idx, cand_val, count, k, kth, ties, idx_out, val_out, &out, &ties_taken);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_topk_write_avx2(cand_idx, cand_val, count, k, kth, ties, idx_out, val_out, &out, &ties_taken);
#endif
    for (; i < count && out < k; i++) {
        uint32_t key = magnitude_key(cand_val[i]);
        size_t tie = key == kth;
        idx_out[out] = cand_idx[i];
        if (val_out != NULL)
            val_out[out] = cand_val[i];
        out += (size_t)(key > kth) | (tie & (size_t)(ties_taken < ties));
        ties_taken += tie;
    }
}

/* The answers when the k-th largest key is 0: the `count` candidates of the threshold
 * ALL_NONZERO (every entry of x whose key is not 0, ascending) and, tied at 0, the
 * k - count lowest-index entries whose key is 0 (zeros, and NaN, which ranks as zero),
 * merged in index order: dr_topk's answer, from a walk of x only as far as the last
 * zero taken (in a tensor of mostly zeros, about k - count entries). */
static void write_with_zero_ties(const float *x, const uint32_t *cand_idx, const float *cand_val, size_t count,
                                 size_t k, uint32_t *idx_out, float *val_out)
{
    size_t c = 0, out = 0;
    uint32_t i;
    for (i = 0; out + (count - c) < k; i++, out++) {
        int candidate = c < count && cand_idx[c] == i;
        idx_out[out] = i;
        if (val_out != NULL)
            val_out[out] = candidate ? cand_val[c] : x[i];
        c += (size_t)candidate;
    }
    for (; c < count; c++, out++) {
        idx_out[out] = cand_idx[c];
        if (val_out != NULL)
            val_out[out] = cand_val[c];
    }
}

/* See candidates.h: the answers with tkey as the k-th key and every tie at it taken. */
void dr_take_candidates(const uint32_t *cand_idx, const float *cand_val, size_t count, uint32_t tkey,
                        size_t taken, uint32_t *idx_out, float *val_out)
{
    write_answers(cand_idx, cand_val, count, taken, tkey, (size_t)-1, idx_out, val_out);
}

static int split_step(void *ctx, int step, size_t begin, size_t end)
{
    split_select *s = (split_select *)ctx;
    size_t p;
    for (p = begin; p < end; p++) {
        size_t room = dr_share(s->cap, s->parts, p);
        if (step == STEP_SAMPLE)
            take_sample(s->x, s->n, sample_runs(s->n), s->sample, dr_share(sample_runs(s->n), s->parts, p),
                        dr_share(sample_runs(s->n), s->parts, p + 1));
        else if (step == STEP_SWEEP)
            sweep_part(s, p);
        else if (step == STEP_WRITE)
            /* bounded by the part's own answers, so that it never writes into the next part's */
            write_answers(s->idx + room, s->val + room, s->found[p], s->above[p] + s->ties[p], s->prefix,
                          s->ties[p], s->idx_out + s->out_at[p],
                          s->val_out != NULL ? s->val_out + s->out_at[p] : NULL);
        else
            radix_histogram(s->val + room, s->found[p], step - STEP_SWEEP, s->prefix, part_histogram(s, p));
    }
    return DR_OK;
}

/* Sums the parts' histograms at `level`, picks the bucket, adds it to s->prefix and
 * counts each part's candidates in the buckets above it. */
static void split_pick(split_select *s, int level)
{
    uint32_t total[RADIX_BUCKETS], b;
    size_t buckets = (size_t)1 << radix_width[level], p, j;
    memset(total, 0, sizeof total);
    for (p = 0; p < s->parts; p++)
        for (j = 0; j < buckets; j++)
            total[j] += part_histogram(s, p)[j];
    b = radix_pick(total, level, &s->remaining);
    for (p = 0; p < s->parts; p++)
        for (j = b + 1u; j < buckets; j++)
            s->above[p] += part_histogram(s, p)[j];
    s->prefix |= b << radix_shift[level];
}

/* The caller's turn between steps. */
static int split_between(void *ctx, int step)
{
    split_select *s = (split_select *)ctx;
    size_t p, total = 0, ties_left, out = 0;
    if (step == STEP_SAMPLE) {
        s->tkey = threshold_key(threshold_from_sample(s->sample, sample_runs(s->n), s->n, s->k));
        return DR_OK;
    }
    if (step == STEP_SWEEP) {
        for (p = 0; p < s->parts; p++) {
            if (s->found[p] > part_room(s, p))
                return SPLIT_OVERFLOW;
            total += s->found[p];
        }
        for (p = 0; p < s->parts; p++)
            if (s->val_out != NULL && s->top[p] >= DR_NONFINITE_KEY)
                return SPLIT_NONFINITE;
        if (total < s->k)
            return SPLIT_FEW;
    }
    split_pick(s, step - STEP_SWEEP);
    if (step == STEP_LEVEL2) {
        /* The `remaining` ties at the k-th key go to the lowest indices: the first parts'. */
        ties_left = s->remaining;
        for (p = 0; p < s->parts; p++) {
            size_t equal = part_histogram(s, p)[s->prefix & ((1u << radix_width[2]) - 1u)];
            s->ties[p] = equal < ties_left ? equal : ties_left;
            ties_left -= s->ties[p];
            s->out_at[p] = out;
            out += s->above[p] + s->ties[p];
        }
    }
    return DR_OK;
}

/* DR_OK with the answers in idx_out (and val_out), SPLIT_NONFINITE, SPLIT_OVERFLOW, or
 * SPLIT_FEW with the *count candidates moved to the start of cand_idx and cand_val; the
 * threshold's key in *tkey. */
static int select_split(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, uint32_t *cand_idx,
                        float *cand_val, size_t cap, float *sample, uint32_t *hist, int threads, uint32_t *tkey,
                        size_t *count)
{
    split_select s;
    size_t p;
    int r;
    memset(&s, 0, sizeof s);
    s.x = x;
    s.n = n;
    s.k = k;
    s.cap = cap;
    s.parts = (size_t)threads;
    s.sample = sample;
    s.idx = cand_idx;
    s.val = cand_val;
    s.hist = hist;
    s.remaining = k;
    s.idx_out = idx_out;
    s.val_out = val_out;
    r = dr_parallel_steps(s.parts, threads, SPLIT_STEPS, split_step, split_between, &s);
    *tkey = s.tkey;
    *count = 0;
    if (r == SPLIT_FEW)
        for (p = 0; p < s.parts; p++) { /* the parts' rooms ascend, and so do their indices */
            size_t room = dr_share(cap, s.parts, p);
            memmove(cand_idx + *count, cand_idx + room, s.found[p] * sizeof *cand_idx);
            memmove(cand_val + *count, cand_val + room, s.found[p] * sizeof *cand_val);
            *count += s.found[p];
        }
    return r;
}

/* Where the sample lies in dr_topk_select's workspace: after the candidates' indices
 * and values. */
static float *sample_room(void *work, size_t cap)
{
    return (float *)work + 2 * cap;
}

int dr_topk_threshold_estimate(const float *x, size_t n, size_t k, void *work, float *t)
{
    size_t cap;
    if (t == NULL)
        return DR_E_ARG;
    *t = 0.0f;
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return DR_OK;
    if (x == NULL || work == NULL)
        return DR_E_ARG;
    cap = candidate_capacity(n, k);
    if (n >= SAMPLED_MIN_N)
        *t = sampled_threshold(x, n, k, sample_room(work, cap));
    return DR_OK;
}

/* dr_topk's answer where exact_select does not apply, for dr_topk_select (val_out NULL)
 * or dr_topk_sparsify: then Inf/NaN are refused by a pass of their own and the values
 * gathered. */
static int full_select(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out)
{
    size_t j;
    int st;
    if (val_out != NULL && !dr_all_finite(x, n))
        return DR_E_NUMERIC;
    st = dr_topk(x, n, k, idx_out);
    if (st == DR_OK && val_out != NULL)
        for (j = 0; j < k; j++)
            val_out[j] = x[idx_out[j]];
    return st;
}

/* dr_topk's answer through the candidates' path, its threshold the exact top level of the
 * k-th largest key instead of a sample's estimate: a histogram of x's top radix level picks
 * the bucket that holds it, every entry in that bucket or above is a candidate (one
 * vectorised sweep, which also finds Inf and NaN for dr_topk_sparsify), and levels 1 and 2
 * run over the candidates alone. For tensors too small for a sample (below
 * SAMPLED_MIN_N) and for the sample's misses. The full select answers where the candidates
 * would not fit in the room (cap) or the k-th key's top level is 0 (the k-th magnitude
 * is 0 or a denormal below 2^-128: its ties may be NaNs, which the sweep does not take). */
static int exact_select(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, uint32_t *cand_idx,
                        float *cand_val, size_t cap)
{
    uint32_t hist[RADIX_BUCKETS], top_level, top, kth;
    size_t remaining = k, count;
    top_histogram(x, n, 0, hist);
    top_level = radix_pick(hist, 0, &remaining);
    count = k - remaining + hist[top_level]; /* the entries at or above that bucket */
    if (top_level == 0 || count > cap)
        return full_select(x, n, k, idx_out, val_out);
    count = dr_collect_candidates(x, 0, n, top_level << radix_shift[0], cand_idx, cand_val, cap, &top);
    if (val_out != NULL && top >= DR_NONFINITE_KEY)
        return DR_E_NUMERIC;
    kth = lower_levels(cand_val, count, top_level << radix_shift[0], &remaining, hist);
    write_answers(cand_idx, cand_val, count, k, kth, remaining, idx_out, val_out);
    return DR_OK;
}

/* The answer from `count` < k candidates of threshold key tkey (Inf and NaN already
 * refused for dr_topk_sparsify): where they are every nonzero entry, they and the first
 * zeros; else entries below the threshold belong in it, and the exact top level answers. */
static int few_candidates(const float *x, size_t n, size_t k, uint32_t tkey, uint32_t *cand_idx, float *cand_val,
                          size_t count, size_t cap, uint32_t *idx_out, float *val_out)
{
    if (tkey != ALL_NONZERO)
        return exact_select(x, n, k, idx_out, val_out, cand_idx, cand_val, cap);
    write_with_zero_ties(x, cand_idx, cand_val, count, k, idx_out, val_out);
    return DR_OK;
}

/* dr_topk_select (val_out NULL) and dr_topk_sparsify. */
static int select_topk(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, void *work)
{
    size_t cap, count = 0, ties;
    uint32_t *cand_idx, kth, tkey, top;
    int threads;
    float *cand_val, *sample;
    cap = candidate_capacity(n, k);
    cand_idx = (uint32_t *)work;
    cand_val = (float *)(cand_idx + cap);
    if (n < SAMPLED_MIN_N)
        return exact_select(x, n, k, idx_out, val_out, cand_idx, cand_val, cap);
    sample = sample_room(work, cap);

    threads = dr_threads_for(n, DR_THREADS_MIN_NUMEL);
    if (threads > (int)SPLIT_MAX_PARTS)
        threads = (int)SPLIT_MAX_PARTS;
    if (threads > 1) {
        int r = select_split(x, n, k, idx_out, val_out, cand_idx, cand_val, cap, sample,
                             (uint32_t *)(sample + SAMPLE_SIZE), threads, &tkey, &count);
        if (r == DR_OK)
            return DR_OK;
        if (r == SPLIT_NONFINITE)
            return DR_E_NUMERIC;
        if (r == SPLIT_FEW)
            return few_candidates(x, n, k, tkey, cand_idx, cand_val, count, cap, idx_out, val_out);
        /* A part overflowed its share of the room: the candidates bunch in one part of x,
         * and one sweep with the whole room may still hold them. */
    } else {
        tkey = threshold_key(sampled_threshold(x, n, k, sample));
    }
    count = dr_collect_candidates(x, 0, n, tkey, cand_idx, cand_val, cap, &top);
    if (count > cap) /* the estimate missed: the exact top level answers */
        return exact_select(x, n, k, idx_out, val_out, cand_idx, cand_val, cap);
    if (val_out != NULL && top >= DR_NONFINITE_KEY)
        return DR_E_NUMERIC;
    if (count < k)
        return few_candidates(x, n, k, tkey, cand_idx, cand_val, count, cap, idx_out, val_out);
    kth_largest(cand_val, count, k, tkey, &kth, &ties);
    write_answers(cand_idx, cand_val, count, k, kth, ties, idx_out, val_out);
    return DR_OK;
}

/* The checks both entry points make. */
static int select_args(const float *x, size_t n, size_t k, const uint32_t *idx_out, const void *work)
{
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k > 0 && (x == NULL || idx_out == NULL || work == NULL))
        return DR_E_ARG;
    return DR_OK;
}

int dr_topk_select(const float *x, size_t n, size_t k, uint32_t *idx_out, void *work)
{
    int st = select_args(x, n, k, idx_out, work);
    if (st != DR_OK || k == 0)
        return st;
    return select_topk(x, n, k, idx_out, NULL, work);
}

int dr_topk_sparsify(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, void *work)
{
    int st = select_args(x, n, k, idx_out, work);
    if (st != DR_OK)
        return st;
    if (n > 0 && x == NULL)
        return DR_E_ARG;
    if (k == 0)
        return dr_all_finite(x, n) ? DR_OK : DR_E_NUMERIC;
    if (val_out == NULL)
        return DR_E_ARG;
    return select_topk(x, n, k, idx_out, val_out, work);
}
