/* Quantile sketch: bin edges at the quantiles of (a sample of) the data, one small bin
 * index per element, and the mean of each bin.
 *
 * Floats are compared as order-preserving uint32 keys, so the sample is sorted by an
 * LSD radix sort (four byte passes, linear time, no comparisons) and each element finds
 * its bin by a branch-free binary search over integer edges, padded to a power of two.
 * Each bin's sum is kept in TALLIES interleaved partial sums in double (element i goes
 * to partial i % TALLIES, in element order), added up as (p0 + p1) + (p2 + p3) at the
 * end: every path adds in that order, so every path gets the same means, and neighbours
 * in one bin do not wait on each other's read-modify-write (with one partial, an
 * element in the bin of the one before waited for its sum: 1 bin took 3.4x as long).
 * Workspace layout, doubles first for alignment: tally[TALLIES][2Q] (double: each bin's
 * partial sum, then its count), edges[P] (uint32, P = the power of two >= Q), sample[S]
 * and scratch[S] (uint32), S = min(n, DR_SKETCH_SAMPLE), and from TABLE_MIN elements on
 * the prefix table (uint32[65536], dr_sketch_prefix_table). */
#include "qframe.h"
#include "sketch_simd.h"
#include "sketch_fill.h"
#include "lookup_simd.h"
#include "stream_simd.h"
#include "sample.h"
#include "size_math.h"

#include <math.h>

#define TALLIES 4 /* the sum at the end of dr_sketch_fill is written out for 4 */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Tensors from this many elements on get a prefix table (256 KiB, then at most x's size):
 * building it takes about 10 us, and it makes the search one load per element. */
#define TABLE_MIN 65536u
#define TABLE_ENTRIES 65536u
/* Up to 16 bins (p of 16, four levels at most) AVX2's B-tree beats the table's gathers:
 * 20.2-23.8 against 24.6-26.0 ms to encode 25.6M with 2 to 16 bins; 33.1 against 24.8
 * with 17 or 33. */
#define AVX2_TABLE_MIN_P 32u

static size_t sample_size(size_t n)
{
    return n < DR_SKETCH_SAMPLE ? n : DR_SKETCH_SAMPLE;
}

static size_t index_width(uint32_t bins)
{
    return bins <= 256u ? 1u : 2u;
}

/* The power of two >= bins. */
static uint32_t padded(uint32_t bins)
{
    uint32_t p = 1;
    while (p < bins)
        p <<= 1;
    return p;
}

/* Whether work is a workspace the fill may take: not NULL, and aligned for its doubles
 * (the tallies come first). */
static int workspace_ok(const void *work)
{
    return work != NULL && ((uintptr_t)work & 7u) == 0;
}

static int bins_ok(uint32_t bins)
{
    return bins >= 1u && bins <= DR_SKETCH_MAX_BINS;
}

size_t dr_sketch_workspace_size(size_t n, uint32_t bins)
{
    if (!bins_ok(bins)) /* padded() would loop for ever past 2^31 */
        return 0;
    return TALLIES * (size_t)bins * 2u * sizeof(double) +
           (size_t)padded(bins) * sizeof(uint32_t) + 2 * sample_size(n) * sizeof(uint32_t) +
           (n >= TABLE_MIN ? TABLE_ENTRIES * sizeof(uint32_t) : 0u);
}

size_t dr_sketch_size(size_t n, uint32_t bins)
{
    if (!bins_ok(bins))
        return 0;
    return dr_size_add(dr_frame_header_size(2) + 4u * (size_t)bins + DR_FRAME_TRAILER,
                       dr_size_mul(n, index_width(bins)));
}

/* Order-preserving key: negative floats have all bits flipped, others the sign bit. By
 * a mask rather than a choice: the compilers' choice took five instructions where this
 * takes three, and the table search below ran 1.5x as long with it. */
static uint32_t order_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u ^ ((0u - (u >> 31)) | 0x80000000u);
}

/* Sort keys[0..m) ascending using scratch[0..m); the result ends in keys. */
static void radix_sort(uint32_t *keys, uint32_t *scratch, size_t m)
{
    unsigned shift;
    for (shift = 0; shift < 32; shift += 8) {
        size_t hist[256], i, sum = 0;
        uint32_t *t;
        memset(hist, 0, sizeof hist);
        for (i = 0; i < m; i++)
            hist[(keys[i] >> shift) & 0xffu]++;
        for (i = 0; i < 256; i++) {
            size_t c = hist[i];
            hist[i] = sum;
            sum += c;
        }
        for (i = 0; i < m; i++)
            scratch[hist[(keys[i] >> shift) & 0xffu]++] = keys[i];
        t = keys;
        keys = scratch;
        scratch = t;
    }
}

/* The bin of key k: the number of edges[0..p-1) that are <= k (edges ascending, p a
 * power of two), capped at last. Steps of halving powers of two keep edges[0..lo) <= k;
 * the ternary compiles to a conditional move. The cap is for the padding edges
 * (UINT32_MAX), which only a NaN's key can reach; NaN is refused afterwards. */
static uint32_t find_bin(const uint32_t *edges, uint32_t p, uint32_t last, uint32_t k)
{
    uint32_t lo = 0, step;
    for (step = p / 2; step > 0; step >>= 1)
        lo += edges[lo + step - 1] <= k ? step : 0u;
    return lo < last ? lo : last;
}

/* Elements whose searches run side by side in find_bins. */
#define SEARCH_GROUP 16

static void put_bin(uint8_t *index, size_t width, size_t i, uint32_t b)
{
    if (width == 1) {
        index[i] = (uint8_t)b;
    } else {
        uint16_t v = (uint16_t)b;
        memcpy(index + 2 * i, &v, 2);
    }
}

/* find_bin for x[begin..n) into index, SEARCH_GROUP elements at a time: one element's
 * levels are a chain of dependent loads and conditional moves, and the group's
 * independent chains overlap. The same steps and compares as find_bin, so the same bins. */
static void find_bins(const float *x, size_t begin, size_t n, const uint32_t *edges, uint32_t p,
                      uint32_t last, uint8_t *index, size_t width)
{
    size_t i = begin;
    unsigned g;
    for (; i + SEARCH_GROUP <= n; i += SEARCH_GROUP) {
        uint32_t key[SEARCH_GROUP], lo[SEARCH_GROUP], step;
        for (g = 0; g < SEARCH_GROUP; g++) {
            key[g] = order_key(x[i + g]);
            lo[g] = 0;
        }
        for (step = p / 2; step > 0; step >>= 1)
            for (g = 0; g < SEARCH_GROUP; g++)
                lo[g] += edges[lo[g] + step - 1] <= key[g] ? step : 0u;
        for (g = 0; g < SEARCH_GROUP; g++)
            put_bin(index, width, i + g, lo[g] < last ? lo[g] : last);
    }
    for (; i < n; i++)
        put_bin(index, width, i, find_bin(edges, p, last, order_key(x[i])));
}

int dr_sketch_prefix_form(const uint32_t *edges, uint32_t last)
{
    uint32_t j;
    int form = DR_PREFIX_SINGLE;
    /* Edges that share a top half: equal ones make runs, different ones rule out a table. */
    for (j = 1; j < last; j++)
        if (edges[j] >> 16 == edges[j - 1] >> 16) {
            if (edges[j] != edges[j - 1])
                return DR_PREFIX_NONE;
            form = DR_PREFIX_RUNS;
        }
    return form;
}

int dr_sketch_prefix_table(const uint32_t *edges, uint32_t last, uint32_t *table)
{
    uint32_t j, prefix = 0, run;
    int form = dr_sketch_prefix_form(edges, last);
    if (form == DR_PREFIX_NONE)
        return form;
    for (j = 0; j < last; j += run) {
        uint32_t top = edges[j] >> 16, h = edges[j] & 0xffffu;
        for (run = 1; j + run < last && edges[j + run] == edges[j]; run++)
            ;
        if (form == DR_PREFIX_SINGLE) {
            for (; prefix < top; prefix++)
                table[prefix] = j << 16;
            table[prefix++] = (j << 16) + 0x10000u - h;
        } else {
            for (; prefix < top; prefix++)
                table[prefix] = j * 0x101u;
            table[prefix++] = j | (j + run) << 8 | h << 16;
        }
    }
    for (; prefix < TABLE_ENTRIES; prefix++)
        table[prefix] = form == DR_PREFIX_SINGLE ? last << 16 : last * 0x101u;
    return form;
}

size_t dr_sketch_bins_table(const float *x, size_t n, const uint32_t *table, int form, uint8_t *index)
{
    size_t i;
    if (form == DR_PREFIX_SINGLE) {
        for (i = 0; i < n; i++) {
            uint32_t k = order_key(x[i]);
            index[i] = (uint8_t)((table[k >> 16] + (k & 0xffffu)) >> 16);
        }
    } else {
        for (i = 0; i < n; i++) {
            uint32_t k = order_key(x[i]), entry = table[k >> 16];
            /* above by a shift, not a branch: which one a key takes is a coin toss where
             * an edge shares its top half. */
            index[i] = (uint8_t)(entry >> (((k & 0xffffu) >= entry >> 16) << 3));
        }
    }
    return n;
}

/* The prefix table's form in `room` where the encoder uses one: n >= TABLE_MIN, one byte
 * per bin index, no two different edges sharing a prefix; else DR_PREFIX_NONE. */
static int prefix_table(size_t n, uint32_t bins, const uint32_t *edges, uint32_t *room)
{
    if (n < TABLE_MIN || index_width(bins) != 1)
        return DR_PREFIX_NONE;
    return dr_sketch_prefix_table(edges, bins - 1, room);
}

/* Adds v to bin b's sum and 1 to its count (an exact integer in double), stored side by
 * side: one 16-byte read-modify-write per element where two arrays took two (the loop
 * was bound by its stores). The same two double additions either way. */
static void tally_add(double *tally, uint32_t b, float v)
{
#if defined(__SSE2__)
    __m128d *slot = (__m128d *)(void *)(tally + 2 * b);
    _mm_storeu_pd((double *)slot, _mm_add_pd(_mm_loadu_pd((const double *)slot), _mm_set_pd(1.0, (double)v)));
#else
    tally[2 * b] += v;
    tally[2 * b + 1] += 1.0;
#endif
}

/* Elements whose bins are found, then summed, before the next block's: the block's x
 * (128 KiB) is still in L2 when the sums read it, so x crosses the memory bus once
 * instead of twice. A multiple of 32 (the AVX-512 search's block) and of TALLIES, so
 * every block but the last is whole vectors and element i still goes to partial
 * i % TALLIES: the same sums in the same order as two sweeps over all of x. */
#define FILL_BLOCK 32768u

/* The bin searches of a fill: the vector kernel taken (each does a prefix of whole
 * vectors), and what finishes each block after it (the prefix table where `form` says
 * one was built, else find_bins). */
enum { BINS_PORTABLE, BINS_AVX512, BINS_AVX2, BINS_TABLE_AVX2 };

typedef struct {
    const uint32_t *edges, *table;
    uint32_t p, last;
    int form, kernel;
    size_t width;
} bin_search;

/* The search for x[0..n) over edges[0..p) (p the padded bin count): chooses the kernel
 * and builds the prefix table in `table` where that takes one. */
static void choose_search(bin_search *s, const uint32_t *edges, uint32_t p, size_t n, uint32_t bins,
                          uint32_t *table)
{
    s->edges = edges;
    s->p = p;
    s->table = table;
    s->last = bins - 1;
    s->width = index_width(bins);
    s->form = DR_PREFIX_NONE;
    s->kernel = BINS_PORTABLE;
#if DR_HAVE_X86_SIMD
    {
        /* AVX-512 up to 128 bins searches on prefixes in registers, faster than the
         * table's gathers; the table serves every other path that can take it. Where
         * equal edges share a prefix (a tensor with many exact zeros), AVX-512's search
         * is on the whole keys, which at 128 padded bins (seven levels) is slower than
         * the gathers and at 64 or fewer faster. */
        int simd = dr_simd_active();
        if (simd >= DR_SIMD_AVX512 && s->p <= 128u &&
            (s->p < 128u || n < TABLE_MIN || dr_sketch_prefix_form(s->edges, s->last) != DR_PREFIX_RUNS)) {
            s->kernel = BINS_AVX512;
        } else if (simd >= DR_SIMD_AVX2 && s->p < AVX2_TABLE_MIN_P) {
            s->kernel = BINS_AVX2;
        } else {
            s->form = prefix_table(n, bins, s->edges, table);
            if (s->form != DR_PREFIX_NONE && simd >= DR_SIMD_AVX2)
                s->kernel = BINS_TABLE_AVX2;
            else if (simd >= DR_SIMD_AVX512)
                s->kernel = BINS_AVX512;
            else if (simd >= DR_SIMD_AVX2)
                s->kernel = BINS_AVX2;
        }
    }
#else
    s->form = prefix_table(n, bins, s->edges, table);
#endif
}

/* The bins of x[0..n) into index (s->width bytes each). */
static void find_block(const bin_search *s, const float *x, size_t n, uint8_t *index)
{
    size_t done = 0;
#if DR_HAVE_X86_SIMD
    if (s->kernel == BINS_AVX512)
        done = dr_sketch_bins_avx512(x, n, s->edges, s->p, s->last, index, s->width);
    else if (s->kernel == BINS_AVX2)
        done = dr_sketch_bins_avx2(x, n, s->edges, s->p, s->last, index);
    else if (s->kernel == BINS_TABLE_AVX2)
        done = dr_sketch_bins_table_avx2(x, n, s->table, s->form, index);
#endif
    if (s->form != DR_PREFIX_NONE)
        dr_sketch_bins_table(x + done, n - done, s->table, s->form, index + done);
    else
        find_bins(x, done, n, s->edges, s->p, s->last, index, s->width);
}

/* Adds x[0..n) to the partial sums of their bins, element i to partial i % TALLIES
 * (x starts at a multiple of TALLIES of the tensor). */
static void tally_block(double *tally, uint32_t bins, const float *x, const uint8_t *index, size_t n,
                        size_t width)
{
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (width == 1 && dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_sketch_tally_avx2(tally, bins, x, index, n);
#endif
    if (width == 1) {
        for (; i + TALLIES <= n; i += TALLIES) {
            tally_add(tally, index[i], x[i]);
            tally_add(tally + 2u * bins, index[i + 1], x[i + 1]);
            tally_add(tally + 4u * bins, index[i + 2], x[i + 2]);
            tally_add(tally + 6u * bins, index[i + 3], x[i + 3]);
        }
    }
    for (; i < n; i++) {
        uint16_t b = index[i];
        if (width == 2)
            memcpy(&b, index + 2 * i, 2);
        tally_add(tally + (i % TALLIES) * 2u * bins, b, x[i]);
    }
}

int dr_sketch_fill(const float *x, size_t n, uint32_t bins, uint64_t key, void *work,
                       uint8_t *means, uint8_t *index)
{
    double *tally;
    uint32_t *edges, *sample, *scratch, j, p;
    bin_search search;
    size_t m = sample_size(n), i, width = index_width(bins);

    tally = (double *)work;
    p = padded(bins);
    edges = (uint32_t *)(tally + TALLIES * 2u * bins);
    sample = edges + p;
    scratch = sample + m;

    /* Sample (all of x when small enough: exact quantiles), sort, read the edges. The
     * sampled values go through scratch first: dr_random_sample prefetches a batch of
     * positions before reading them, where one read at a time waited on each miss. */
    if (m < n) {
        float *drawn = (float *)(void *)scratch;
        dr_random_sample(x, n, key, drawn, m);
        for (i = 0; i < m; i++)
            sample[i] = order_key(drawn[i]);
    } else {
        for (i = 0; i < m; i++)
            sample[i] = order_key(x[i]);
    }
    radix_sort(sample, scratch, m);
    for (j = 1; j < bins; j++)
        edges[j - 1] = m > 0 ? sample[(size_t)((uint64_t)j * m / bins)] : 0u;
    for (j = bins - 1; j < p; j++)
        edges[j] = UINT32_MAX;

    memset(tally, 0, TALLIES * 2u * bins * sizeof *tally);
    /* Block by block, the bins (AVX-512 or AVX2 where the machine has them), then the
     * partial sums (their order fixes the double sums, so every path gives the same
     * means). */
    choose_search(&search, edges, p, n, bins, scratch + m);
    for (i = 0; i < n; i += FILL_BLOCK) {
        size_t len = n - i < FILL_BLOCK ? n - i : FILL_BLOCK;
        find_block(&search, x + i, len, index + i * width);
        tally_block(tally, bins, x + i, index + i * width, len, width);
    }
    for (j = 0; j < 2u * bins; j++)
        tally[j] = (tally[j] + tally[2u * bins + j]) + (tally[4u * bins + j] + tally[6u * bins + j]);
    for (j = 0; j < bins; j++) {
        float mean = tally[2 * j + 1] > 0.0 ? (float)(tally[2 * j] / tally[2 * j + 1]) : 0.0f;
        /* Inf/NaN in x end up in some bin's sum. */
        if (!isfinite(mean))
            return DR_E_NUMERIC;
        dr_qf_put_f32(means + 4 * j, mean);
    }
    return DR_OK;
}

/* out[i] = means[index[i]] for i < n, after checking every mean finite and every index
 * below bins (DR_E_CORRUPT otherwise). */
static int sketch_read(const uint8_t *means, const uint8_t *index, uint32_t bins, size_t n,
                       float *out)
{
    size_t i, width = index_width(bins);
    uint32_t j;
    for (j = 0; j < bins; j++)
        if (!isfinite(dr_qf_get_f32(means + 4 * j)))
            return DR_E_CORRUPT;
    /* The largest bin index, by a max with no early exit (the loops vectorise). */
    if (width == 2) {
        uint16_t top = 0;
        for (i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, index + 2 * i, 2);
            top = v > top ? v : top;
        }
        if (n > 0 && top >= bins)
            return DR_E_CORRUPT;
        for (i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, index + 2 * i, 2);
            out[i] = dr_qf_get_f32(means + 4 * v);
        }
    } else {
        float table[256];
        uint8_t top = 0;
        for (i = 0; i < n; i++)
            top = index[i] > top ? index[i] : top;
        if (n > 0 && top >= bins)
            return DR_E_CORRUPT;
        memset(table, 0, sizeof table);
        memcpy(table, means, 4u * bins);
        i = 0;
#if DR_HAVE_X86_SIMD
        {
            int simd = dr_simd_active();
            if (simd >= DR_SIMD_AVX512 && dr_cpu_has_vbmi())
                i = dr_lookup_planes_avx512(index, n, table, bins, out);
            else if (simd >= DR_SIMD_AVX512)
                i = dr_sketch_read_avx512(index, n, table, out);
            else if (simd >= DR_SIMD_AVX2 && dr_stream_output(out, n))
                i = dr_lookup256_stream_avx2(index, n, table, out);
        }
#endif
        for (; i < n; i++)
            out[i] = table[index[i]];
    }
    return DR_OK;
}

int dr_sketch_encode(const float *x, size_t n, uint32_t bins, uint64_t key, uint8_t dtype,
                     void *work, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    uint64_t len[2];
    int st;
    if (!bins_ok(bins) || !workspace_ok(work))
        return DR_E_ARG;
    len[0] = 4u * (uint64_t)bins;
    len[1] = (uint64_t)n * index_width(bins);
    st = dr_qf_prepare(&f, DR_KIND_SKETCH, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    f.params[0] = bins;
    st = dr_sketch_fill(x, n, bins, key, work, buf + f.section_off[0], buf + f.section_off[1]);
    if (st != DR_OK)
        return st;
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_sketch_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    uint32_t bins;
    int st = dr_qf_open(buf, len, DR_KIND_SKETCH, n, 2, out, &f);
    if (st != DR_OK)
        return st;
    bins = f.params[0];
    if (!bins_ok(bins) || f.params[1] | f.params[2] | f.params[3])
        return DR_E_FRAME_FIELD;
    if (f.section_len[0] != 4u * (uint64_t)bins ||
        f.section_len[1] != (uint64_t)n * index_width(bins))
        return DR_E_FRAME_FIELD;
    return sketch_read(buf + f.section_off[0], buf + f.section_off[1], bins, n, out);
}

/* ---- the same sketch as a DeepReduce value section (SketchML's values in SKCompress). */

size_t dr_value_sketch_bound(size_t r, uint32_t bins)
{
    if (!bins_ok(bins) || r > (size_t)UINT32_MAX)
        return 0;
    return 4u * (size_t)bins + r * index_width(bins);
}

int dr_value_sketch_encode(const float *val, size_t r, uint32_t bins, uint64_t key,
                           uint8_t *out, size_t cap, size_t *written, void *work)
{
    size_t need = dr_value_sketch_bound(r, bins);
    int st;
    if (need == 0 || written == NULL || out == NULL || !workspace_ok(work) || (r > 0 && val == NULL))
        return DR_E_ARG;
    if (cap < need)
        return DR_E_DST_TOO_SMALL;
    st = dr_sketch_fill(val, r, bins, key, work, out, out + 4u * (size_t)bins);
    if (st != DR_OK)
        return st;
    *written = need;
    return DR_OK;
}

int dr_value_sketch_decode(const uint8_t *in, size_t len, size_t r, uint32_t bins,
                           float *val_out)
{
    size_t need = dr_value_sketch_bound(r, bins);
    if (need == 0 || (in == NULL && len > 0) || (r > 0 && val_out == NULL))
        return DR_E_ARG;
    if (len < need)
        return DR_E_FRAME_SHORT;
    if (len > need)
        return DR_E_FRAME_FIELD;
    return sketch_read(in, in + 4u * (size_t)bins, bins, r, val_out);
}
