/* k distinct uniform indices from a keyed counter-based stream, emitted in ascending
 * order. Every rank with the same key, n and k draws the same set, on every SIMD path and
 * thread count: which algorithm draws depends on n and k alone.
 *
 * The set is drawn as a bitmap (bit i of word w: index 64w + i), for m = min(k, n - k)
 * indices (the complement's, inverted, when k > n / 2), in one of two ways:
 *   - sparse (m < n / DENSE_FRACTION): Floyd's algorithm, m draws that each set one
 *     bit; each draw's read-modify-write lands on a random word, so a batch of draws is
 *     made and their words prefetched before any is set.
 *   - dense: every index is drawn with probability m / n, a 32-bit draw against a
 *     threshold (vectors of 8 or 16, and the words split over threads), and the count
 *     is then corrected to exactly m by removing uniformly chosen drawn indices or adding
 *     uniformly chosen undrawn ones (a few thousand at 25.6M: about the binomial's
 *     deviation). Given its count the Bernoulli set is a uniform subset of that size, and
 *     each removal or addition keeps it uniform, so the result is a uniform m-subset.
 *     Floyd's costs a random access per index (about 5 ns at 25.6M, where the bitmap
 *     is 3.2 MB); this about 0.3 ns per entry of n, written out, on AVX-512.
 * The indices are then written out word by word, each thread from its own words to its
 * own offset; for dr_randomk_sparsify with their values, read from x in the same sweep
 * (x is read whole, a vector per 8 or 16 indices, since the check for Inf and NaN reads
 * every entry anyway: no gather). */
#include "deepreduce.h"
#include "finite_bytes.h"
#include "parallel.h"
#include "randomk_simd.h"
#include "rng_inline.h"

#include <string.h>

/* Dense from m >= n / DENSE_FRACTION. The choice decides which indices are drawn, so it
 * depends on n and m alone, the same on every path. At 25.6M entries, one thread,
 * Floyd's draw takes 4.5 ms at m = n / 100, 8.6 at n / 20 and 17-19 just under n / 8;
 * the dense draw 7.8 (AVX-512) or 9.7 (AVX2) at any m up to n / 2: the faster from
 * about n / 30. The scalar dense loop (a hash per entry: 65 ms) is slower than Floyd's
 * below about n / 3; it serves x86 CPUs without AVX2 (NEON's draw is not timed here). */
#define DENSE_FRACTION 8u

/* The write-out takes vectors where x is read (every entry is, for the check) or from
 * k >= n / VECTOR_WRITE_FRACTION. Below, the scalar loop's few instructions per set bit
 * beat a compress and a store per 16 entries: at 25.6M, 3.4-3.7 against 4.3 ms for the
 * draw at 1%; 8.3 against 9.3 at 5%. */
#define VECTOR_WRITE_FRACTION 32u

/* Floyd's draws made, and their words prefetched, this many at a time. */
#define FLOYD_BATCH 256u

size_t dr_randomk_workspace_size(size_t n)
{
    return ((n + 63u) / 64u) * sizeof(uint64_t);
}

/* floor(r * n / 2^64) for n < 2^32: a uniform index below n, without a 128-bit multiply. */
static size_t below(uint64_t r, size_t n)
{
    uint64_t high = (r >> 32) * (uint64_t)n, low = ((r & 0xffffffffu) * (uint64_t)n) >> 32;
    return (size_t)((high + low) >> 32);
}

static int is_set(const uint64_t *bits, size_t t)
{
    return (int)(bits[t >> 6] >> (t & 63u) & 1u);
}

static void floyd(uint64_t key, size_t n, size_t m, uint64_t *bits)
{
    uint32_t pick[FLOYD_BATCH];
    size_t j, b;
    /* For j = n-m .. n-1 pick t uniform in [0, j]; take t, or j if t is taken. */
    for (j = n - m; j < n; j += b) {
        size_t batch = n - j < FLOYD_BATCH ? n - j : FLOYD_BATCH;
        for (b = 0; b < batch; b++) {
            uint32_t r = (uint32_t)(dr_rng_u64_fast(key, j + b) >> 32);
            pick[b] = (uint32_t)(((uint64_t)r * (uint64_t)(j + b + 1)) >> 32);
            __builtin_prefetch(&bits[pick[b] >> 6], 1);
        }
        for (b = 0; b < batch; b++) {
            size_t t = is_set(bits, pick[b]) ? j + b : pick[b];
            bits[t >> 6] |= 1ull << (t & 63u);
        }
    }
}

/* Word w of the dense draw, for its `count` indices 64w .. 64w + count - 1. */
static uint64_t dense_word(uint64_t key, size_t w, unsigned count, uint32_t threshold)
{
    uint64_t word = 0;
    unsigned i;
    for (i = 0; i < count; i++)
        word |= (uint64_t)(dr_rng_u32_fast(key, (uint64_t)w * 64u + i) < threshold) << i;
    return word;
}

/* Takes drawn indices away (want < drawn) or adds undrawn ones (want > drawn), each
 * chosen uniformly among those it may take, until `want` are drawn. The candidates come
 * from counters n, n + 1, ... of the 64-bit stream, past those Floyd's draw reads. */
static void correct_count(uint64_t key, size_t n, size_t drawn, size_t want, uint64_t *bits)
{
    uint64_t counter = n;
    while (drawn != want) {
        size_t t = below(dr_rng_u64_fast(key, counter++), n);
        int set = is_set(bits, t);
        if (set && drawn > want) {
            bits[t >> 6] &= ~(1ull << (t & 63u));
            drawn--;
        } else if (!set && drawn < want) {
            bits[t >> 6] |= 1ull << (t & 63u);
            drawn++;
        }
    }
}

/* The set bits of bits[first..end), written once and compiled twice (simd_config.h): the
 * plain build has no POPCNT and calls libgcc's bit-twiddling routine per word. */
DR_ALWAYS_INLINE size_t count_words(const uint64_t *bits, size_t first, size_t end)
{
    size_t w, c = 0;
    for (w = first; w < end; w++)
        c += (size_t)__builtin_popcountll(bits[w]);
    return c;
}

static size_t count_words_plain(const uint64_t *bits, size_t first, size_t end)
{
    return count_words(bits, first, end);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static size_t count_words_avx2(const uint64_t *bits, size_t first, size_t end)
{
    return count_words(bits, first, end);
}
#endif

static size_t popcount_words(const uint64_t *bits, size_t first, size_t end)
{
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        return count_words_avx2(bits, first, end);
#endif
    return count_words_plain(bits, first, end);
}

/* The draw's steps over the words, one part of them per thread (dr_parallel_steps with
 * count = parts):
 *   DRAW   dense: part p draws its words; sparse: part p zeroes them. Then the caller
 *          alone corrects the dense count, or makes Floyd's draws.
 *   COUNT  part p inverts its words for a complement (keeping the bits past n clear)
 *          and counts them; then the caller sets each part's offset in idx_out.
 *   WRITE  part p writes its indices at its offset (with x, their values too, and
 *          whether its share of x is finite). */
enum { STEP_DRAW, STEP_COUNT, STEP_WRITE, STEPS };

typedef struct {
    uint64_t key;
    size_t n, m, words, parts;
    int dense, complement;
    int vector_write;   /* whether the write-out takes vectors (VECTOR_WRITE_FRACTION) */
    uint32_t threshold; /* dense: a draw below it takes its index */
    uint64_t *bits;
    const float *x;     /* dr_randomk_sparsify's, else NULL */
    uint32_t *idx_out;
    float *val_out;
    size_t out_at[DR_MAX_THREADS + 1];
    int finite[DR_MAX_THREADS];
} draw_job;

static void draw_words(const draw_job *s, size_t first, size_t end)
{
    size_t full = s->n / 64u, w = first;
#if DR_HAVE_X86_SIMD
    size_t vector_end = end < full ? end : full;
    if (w < vector_end && dr_simd_active() >= DR_SIMD_AVX512) {
        dr_randomk_draw_avx512(s->key, w, vector_end, s->threshold, s->bits);
        w = vector_end;
    } else if (w < vector_end && dr_simd_active() >= DR_SIMD_AVX2) {
        dr_randomk_draw_avx2(s->key, w, vector_end, s->threshold, s->bits);
        w = vector_end;
    }
#elif DR_HAVE_NEON
    size_t vector_end = end < full ? end : full;
    if (w < vector_end && dr_simd_active() == DR_SIMD_NEON) {
        dr_randomk_draw_neon(s->key, w, vector_end, s->threshold, s->bits);
        w = vector_end;
    }
#endif
    for (; w < end; w++)
        s->bits[w] = dense_word(s->key, w, w < full ? 64u : (unsigned)(s->n % 64u), s->threshold);
}

/* Part p's write-out: its words [first, end) to its offset. */
static void write_part(draw_job *s, size_t p, size_t first, size_t end)
{
    size_t at = s->out_at[p], room = s->out_at[p + 1] - at, full = s->n / 64u, w = first, c = 0, tail;
    uint32_t *idx = s->idx_out + at, top = 0;
    float *val = s->x != NULL ? s->val_out + at : NULL;
#if DR_HAVE_X86_SIMD
    size_t vector_end = !s->vector_write ? first : end < full ? end : full;
    if (w < vector_end && dr_simd_active() >= DR_SIMD_AVX512)
        w += dr_randomk_write_avx512(s->bits, w, vector_end, s->x, idx, val, room, &c, &top);
    else if (w < vector_end && dr_simd_active() >= DR_SIMD_AVX2)
        w += dr_randomk_write_avx2(s->bits, w, vector_end, s->x, idx, val, room, &c, &top);
#else
    (void)full;
    (void)room;
#endif
    for (tail = w; w < end; w++) {
        uint64_t word = s->bits[w];
        while (word) {
            size_t i = w * 64u + (size_t)__builtin_ctzll(word);
            idx[c] = (uint32_t)i;
            if (val != NULL)
                val[c] = s->x[i];
            c++;
            word &= word - 1u;
        }
    }
    if (s->x != NULL) {
        size_t from = tail * 64u, to = end * 64u < s->n ? end * 64u : s->n;
        s->finite[p] = top < 0x7f800000u && dr_finite_bytes((const uint8_t *)(const void *)(s->x + from),
                                                             to - from);
    }
}

static int draw_step(void *ctx, int step, size_t p, size_t p_end)
{
    draw_job *s = (draw_job *)ctx;
    size_t first = dr_share(s->words, s->parts, p), end = dr_share(s->words, s->parts, p + 1), w;
    (void)p_end;
    if (step == STEP_DRAW) {
        if (s->dense)
            draw_words(s, first, end);
        else
            memset(s->bits + first, 0, (end - first) * sizeof *s->bits);
    } else if (step == STEP_COUNT) {
        if (s->complement) {
            for (w = first; w < end; w++)
                s->bits[w] = ~s->bits[w];
            if (end == s->words && s->n % 64u != 0)
                s->bits[end - 1] &= (1ull << (s->n % 64u)) - 1u;
        }
        s->out_at[p + 1] = popcount_words(s->bits, first, end);
    } else {
        write_part(s, p, first, end);
    }
    return DR_OK;
}

static int draw_between(void *ctx, int step)
{
    draw_job *s = (draw_job *)ctx;
    size_t p;
    if (step == STEP_DRAW && s->dense)
        correct_count(s->key, s->n, popcount_words(s->bits, 0, s->words), s->m, s->bits);
    else if (step == STEP_DRAW)
        floyd(s->key, s->n, s->m, s->bits);
    else
        for (p = 0, s->out_at[0] = 0; p < s->parts; p++)
            s->out_at[p + 1] += s->out_at[p];
    return DR_OK;
}

/* The draw, and with x (not NULL) the values and the check: DR_E_NUMERIC if a part of x
 * held an Inf or a NaN (every index written all the same). */
static int draw(uint64_t key, const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, void *work)
{
    draw_job s;
    size_t p;
    int threads, r;
    if (k > n || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    if (k == 0)
        return x == NULL || dr_finite_bytes((const uint8_t *)(const void *)x, n) ? DR_OK : DR_E_NUMERIC;
    if (idx_out == NULL || work == NULL)
        return DR_E_ARG;
    memset(&s, 0, sizeof s);
    s.key = key;
    s.n = n;
    s.complement = k > n / 2;
    s.m = s.complement ? n - k : k;
    s.dense = s.m >= n / DENSE_FRACTION;
    s.vector_write = x != NULL || k >= n / VECTOR_WRITE_FRACTION;
    s.threshold = (uint32_t)(((uint64_t)s.m << 32) / n); /* m <= n / 2: below 2^31 */
    s.words = (n + 63u) / 64u;
    s.bits = (uint64_t *)work;
    s.x = x;
    s.idx_out = idx_out;
    s.val_out = val_out;
    threads = dr_threads_for(n, DR_THREADS_MIN_NUMEL);
    s.parts = (size_t)threads;
    r = dr_parallel_steps(s.parts, threads, STEPS, draw_step, draw_between, &s);
    for (p = 0; r == DR_OK && x != NULL && p < s.parts; p++)
        if (!s.finite[p])
            r = DR_E_NUMERIC;
    return r;
}

int dr_randomk(uint64_t key, size_t n, size_t k, uint32_t *idx_out, void *work)
{
    return draw(key, NULL, n, k, idx_out, NULL, work);
}

int dr_randomk_sparsify(uint64_t key, const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out,
                        void *work)
{
    if ((n > 0 && x == NULL) || (k > 0 && val_out == NULL))
        return DR_E_ARG;
    return draw(key, x, n, k, idx_out, val_out, work);
}
