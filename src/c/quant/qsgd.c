/* QSGD: bucketed stochastic quantisation to s levels of the bucket's l2 norm.
 *
 * The levels are computed against the float32 norm that goes on the wire, so the
 * decoder's norm/s*level is an unbiased estimate of x itself, not of a rounded x.
 * Norms accumulate in double: a float sum of squares overflows or loses the small
 * entries long before the data does. One sweep over x: each bucket's norm and levels are
 * computed while the bucket is in L1. The AVX2/AVX-512 variants (qsgd_simd.c) compute
 * the same norms and levels, 16 at a time. */
#include "rng_inline.h"
#include "qframe.h"
#include "qsgd_simd.h"
#include "qstats.h"
#include "stream_simd.h"
#include "parallel.h"
#include "size_math.h"

#include <float.h>
#include <math.h>

static size_t bucket_count(size_t n, uint32_t bucket_size)
{
    return n / bucket_size + (n % bucket_size != 0);
}

static size_t level_width(uint32_t s)
{
    return s < 128u ? 1u : 2u;
}

size_t dr_qsgd_size(size_t n, uint32_t quantum_num, uint32_t bucket_size)
{
    if (bucket_size == 0)
        return 0;
    return dr_size_add(dr_size_add(dr_frame_header_size(2) + DR_FRAME_TRAILER,
                                   dr_size_mul(4u, bucket_count(n, bucket_size))),
                       dr_size_mul(n, level_width(quantum_num)));
}

/* The level of b = x[i] (counter i) given a = |b| * ratio in float:
 * sign(b) * min(floor(a) + Bernoulli(a - floor(a)), s), the Bernoulli drawn as a 24-bit
 * uniform below the fraction (both exact in float, as on the SIMD paths). */
static int32_t level_of(float b, float a, uint32_t s, uint64_t key, size_t i)
{
    float floor_a = floorf(a);
    int32_t level = (int32_t)floor_a + (dr_rng_u32_uniform(dr_rng_u32_fast(key, i)) < a - floor_a);
    /* a exceeds s only when |x| exceeds the rounded norm by an ulp: clamp to the range. */
    level = level > (int32_t)s ? (int32_t)s : level;
    return b < 0.0f ? -level : level;
}

static void put_level(uint8_t *levels, size_t i, size_t width, int32_t level)
{
    if (width == 1) {
        levels[i] = (uint8_t)(int8_t)level;
    } else {
        int16_t v = (int16_t)level;
        memcpy(levels + 2 * i, &v, 2);
    }
}

/* The levels of b[0..m) (element `first` of the tensor onwards) at SIMD level simd, for
 * ratio = s / norm. A ratio beyond float's range (a norm below about s * 1e-38) takes
 * the product in double on every path; otherwise a = |b| * (float)ratio. */
static void bucket_levels(int simd, const float *b, size_t m, double ratio, uint32_t s,
                          uint64_t key, size_t first, uint8_t *levels, size_t width)
{
    size_t i = 0;
    if (ratio > (double)FLT_MAX) {
        for (; i < m; i++)
            put_level(levels, i, width,
                      level_of(b[i], (float)(fabs((double)b[i]) * ratio), s, key, first + i));
        return;
    }
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_qsgd_levels_avx512(b, m, (float)ratio, s, key, first, levels, width);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_qsgd_levels_avx2(b, m, (float)ratio, s, key, first, levels, width);
#else
    (void)simd;
#endif
    for (; i < m; i++)
        put_level(levels, i, width, level_of(b[i], fabsf(b[i]) * (float)ratio, s, key, first + i));
}

/* The norm of bucket b[0..m), written to norm_out, and the ratio s / norm its levels
 * take (0 for a zero bucket). */
static int bucket_norm(int simd, const float *b, size_t m, uint32_t s, uint8_t *norm_out, double *ratio)
{
    double sq;
    float norm;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        sq = dr_qsgd_sum_squares_avx512(b, m);
    else if (simd >= DR_SIMD_AVX2 && m % 32u == 0)
        sq = dr_qsgd_sum_squares_avx2(b, m);
    else
#endif
        sq = dr_qs_sum_squares(simd, b, m);
    if (!(sq <= DBL_MAX))
        return DR_E_NUMERIC;
    /* Finite values near FLT_MAX can have a norm beyond it: send FLT_MAX, still >= every
     * |x|, so the levels stay unbiased and the decoded values finite. */
    norm = sqrt(sq) < (double)FLT_MAX ? (float)sqrt(sq) : FLT_MAX;
    dr_qf_put_f32(norm_out, norm);
    /* A zero bucket sends zero levels; dividing by its norm is what gave GRACE NaNs.
     * The ratio is a double so that a subnormal norm cannot overflow it. */
    *ratio = norm > 0.0f ? (double)s / (double)norm : 0.0;
    return DR_OK;
}

/* What a range of buckets needs, shared by the threads of one call (read-only but for
 * the disjoint outputs each range writes). */
typedef struct {
    const float *x;
    size_t n, width;
    uint32_t s, bucket_size;
    uint64_t key;
    uint8_t *norms, *levels;
    int simd;
} qsgd_job;

/* The per-bucket code takes each bucket's norm NORM_AHEAD buckets before its levels
 * (fewer for buckets so large that those would leave L1 first): a bucket's levels wait
 * on its square root and division, some 40 cycles, which then overlap with the buckets
 * between instead of stalling the sweep once per bucket; reads of x stay spread over
 * the sweep, for the prefetcher to keep ahead of. */
#define NORM_AHEAD 2u
#define NORM_AHEAD_NUMEL 2048u

static size_t bucket_len(const qsgd_job *q, size_t j)
{
    size_t first = j * q->bucket_size;
    return q->n - first < q->bucket_size ? q->n - first : q->bucket_size;
}

/* Buckets of up to this many elements go to the group kernels (qsgd_simd.h) where their
 * size is a multiple of the kernel's step. From 512 on, the per-bucket code below is as
 * fast: its two calls and its square root per bucket weigh little against the bucket. */
#define GROUP_BUCKET_MAX 256u

#if DR_HAVE_X86_SIMD
/* Bucket j's norm, then its levels (where a group kernel stops). */
static int encode_bucket(const qsgd_job *q, size_t j)
{
    size_t first = j * q->bucket_size;
    double ratio;
    int st = bucket_norm(q->simd, q->x + first, bucket_len(q, j), q->s, q->norms + 4 * j, &ratio);
    if (st == DR_OK)
        bucket_levels(q->simd, q->x + first, bucket_len(q, j), ratio, q->s, q->key, first,
                      q->levels + first * q->width, q->width);
    return st;
}

typedef size_t (*group_kernel)(const float *x, size_t count, size_t bucket_size, uint32_t s, uint64_t key,
                               size_t first, uint8_t *norms, uint8_t *levels, size_t width);

/* The group kernel for q's buckets, or NULL where the per-bucket code takes them. */
static group_kernel choose_group(const qsgd_job *q)
{
    if (q->bucket_size > GROUP_BUCKET_MAX)
        return NULL;
    if (q->simd >= DR_SIMD_AVX512 && q->bucket_size % 16u == 0)
        return dr_qsgd_buckets_avx512;
    if (q->simd >= DR_SIMD_AVX2 && q->bucket_size % 32u == 0)
        return dr_qsgd_buckets_avx2;
    return NULL;
}

/* Buckets [begin, end) by the group kernel, which takes whole buckets and stops where
 * the per-bucket code is needed: that code does the one bucket it stopped before (and a
 * short last bucket), then the kernel goes on. */
static int encode_grouped(const qsgd_job *q, group_kernel group, size_t begin, size_t end)
{
    size_t whole = q->n / q->bucket_size < end ? q->n / q->bucket_size : end, j = begin;
    while (j < end) {
        if (j < whole)
            j += group(q->x + j * q->bucket_size, whole - j, q->bucket_size, q->s, q->key, j * q->bucket_size,
                       q->norms + 4 * j, q->levels + j * q->bucket_size * q->width, q->width);
        if (j < end) {
            int st = encode_bucket(q, j++);
            if (st != DR_OK)
                return st;
        }
    }
    return DR_OK;
}
#endif

static int encode_buckets(void *ctx, size_t begin, size_t end)
{
    const qsgd_job *q = (const qsgd_job *)ctx;
    size_t ahead = q->bucket_size >= NORM_AHEAD_NUMEL ? 0 : NORM_AHEAD_NUMEL / q->bucket_size, j;
    double ratio[NORM_AHEAD + 1];
#if DR_HAVE_X86_SIMD
    group_kernel group = choose_group(q);
    if (group != NULL)
        return encode_grouped(q, group, begin, end);
#endif
    if (ahead > NORM_AHEAD)
        ahead = NORM_AHEAD;
    for (j = begin; j < end + ahead; j++) {
        if (j < end) {
            int st = bucket_norm(q->simd, q->x + j * q->bucket_size, bucket_len(q, j), q->s, q->norms + 4 * j,
                                 &ratio[j % (NORM_AHEAD + 1)]);
            if (st != DR_OK)
                return st;
        }
        if (j >= begin + ahead) {
            size_t at = j - ahead, first = at * q->bucket_size;
            bucket_levels(q->simd, q->x + first, bucket_len(q, at), ratio[at % (NORM_AHEAD + 1)], q->s, q->key,
                          first, q->levels + first * q->width, q->width);
        }
    }
    return DR_OK;
}

int dr_qsgd_encode(const float *x, size_t n, uint32_t quantum_num, uint32_t bucket_size,
                   uint64_t key, uint8_t dtype, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    qsgd_job q;
    uint64_t len[2];
    int st;
    if (quantum_num < 1 || quantum_num > DR_QSGD_MAX_S || bucket_size < 1)
        return DR_E_ARG;
    q.width = level_width(quantum_num);
    len[0] = 4u * (uint64_t)bucket_count(n, bucket_size);
    len[1] = (uint64_t)n * q.width;
    st = dr_qf_prepare(&f, DR_KIND_QSGD, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    f.params[0] = quantum_num;
    f.params[1] = bucket_size;
    q.x = x;
    q.n = n;
    q.s = quantum_num;
    q.bucket_size = bucket_size;
    q.key = key;
    q.norms = buf + f.section_off[0];
    q.levels = buf + f.section_off[1];
    q.simd = dr_simd_active();
    /* Buckets are independent (own norm, own counters): any cut gives the same bytes. */
    st = dr_parallel_for(bucket_count(n, bucket_size), dr_threads_for(n, DR_THREADS_MIN_NUMEL), encode_buckets, &q);
    if (st != DR_OK)
        return st;
    return dr_frame_seal(&f, buf, cap, written);
}

static int32_t level_at(const uint8_t *levels, size_t i, size_t width)
{
    int16_t v;
    if (width == 1)
        return (int8_t)levels[i];
    memcpy(&v, levels + 2 * i, 2);
    return v;
}

/* The decoder's counterpart of qsgd_job. */
typedef struct {
    const uint8_t *norms, *levels;
    float *out;
    size_t n, width;
    uint32_t s, bucket_size;
    int simd;
    int stream; /* the vector paths stream the output (stream_simd.h) */
} qsgd_decode_job;

static int decode_buckets(void *ctx, size_t begin, size_t end)
{
    const qsgd_decode_job *q = (const qsgd_decode_job *)ctx;
    size_t j = begin, i;
#if DR_HAVE_X86_SIMD
    /* Sixteen buckets' steps by one division and one call (dr_qsgd_scale_buckets_avx512):
     * 25.6M in buckets of 16 decoded in 5.9-6.1 ms where they took 8.4-8.7, of 32 in 5.5 where
     * 5.8-5.9 (from 64 on, the writes bound the decoder either way). */
    if (q->simd >= DR_SIMD_AVX512 && q->bucket_size % 16u == 0 && q->bucket_size <= GROUP_BUCKET_MAX) {
        size_t whole = q->n / q->bucket_size < end ? q->n / q->bucket_size : end;
        if (j < whole)
            j += dr_qsgd_scale_buckets_avx512(q->levels + j * q->bucket_size * q->width, whole - j, q->bucket_size,
                                              q->width, q->norms + 4 * j, q->s, q->out + j * q->bucket_size,
                                              q->stream);
    }
#endif
    for (; j < end; j++) {
        size_t first = j * q->bucket_size, m = q->n - first < q->bucket_size ? q->n - first : q->bucket_size;
        float step = dr_qf_get_f32(q->norms + 4 * j) / (float)q->s;
        i = 0;
#if DR_HAVE_X86_SIMD
        if (q->simd >= DR_SIMD_AVX512)
            i = dr_qsgd_scale_avx512(q->levels + first * q->width, m, q->width, step, q->out + first, q->stream);
        else if (q->simd >= DR_SIMD_AVX2)
            i = dr_qsgd_scale_avx2(q->levels + first * q->width, m, q->width, step, q->out + first, q->stream);
#endif
        for (i += first; i < first + m; i++)
            q->out[i] = step * (float)level_at(q->levels, i, q->width);
    }
#if DR_HAVE_X86_SIMD
    if (q->stream)
        dr_stream_fence();
#endif
    return DR_OK;
}

/* Whether bucket j's levels are all 0, as the encoder writes them where the norm is 0
 * (the norm is a double sum of squares: any non-zero float makes it positive). */
static int levels_zero(const qsgd_decode_job *q, size_t j)
{
    size_t first = j * q->bucket_size;
    size_t m = q->n - first < q->bucket_size ? q->n - first : q->bucket_size;
    return dr_qf_all_zero(q->levels + first * q->width, m * q->width);
}

/* DR_E_CORRUPT unless buckets [begin, end) all have a finite norm >= 0 and every level
 * in [-s, s], and a bucket of norm 0 only levels 0. */
static int check_buckets(void *ctx, size_t begin, size_t end)
{
    const qsgd_decode_job *q = (const qsgd_decode_job *)ctx;
    size_t first = begin * q->bucket_size, stop = end * q->bucket_size < q->n ? end * q->bucket_size : q->n;
    const uint8_t *levels = q->levels + first * q->width;
    size_t i = 0, m = stop - first, j;
    for (j = begin; j < end; j++) {
        float norm = dr_qf_get_f32(q->norms + 4 * j);
        if (!(norm >= 0.0f && isfinite(norm)) || (norm == 0.0f && !levels_zero(q, j)))
            return DR_E_CORRUPT;
    }
#if DR_HAVE_X86_SIMD
    if (q->simd >= DR_SIMD_AVX2 && !dr_qsgd_levels_in_range_avx2(levels, m, q->width, q->s, &i))
        return DR_E_CORRUPT;
#endif
    for (; i < m; i++) {
        int32_t level = level_at(levels, i, q->width);
        if (level > (int32_t)q->s || level < -(int32_t)q->s)
            return DR_E_CORRUPT;
    }
    return DR_OK;
}

static int check_then_decode(void *ctx, int step, size_t begin, size_t end)
{
    return step == 0 ? check_buckets(ctx, begin, end) : decode_buckets(ctx, begin, end);
}

int dr_qsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    uint32_t s, bucket_size;
    size_t nb, width;
    qsgd_decode_job q;
    int simd = dr_simd_active(), threads;
    int st = dr_qf_open(buf, len, DR_KIND_QSGD, n, 2, out, &f);
    if (st != DR_OK)
        return st;
    s = f.params[0];
    bucket_size = f.params[1];
    if (s < 1 || s > DR_QSGD_MAX_S || bucket_size < 1 || f.params[2] | f.params[3])
        return DR_E_FRAME_FIELD;
    nb = bucket_count(n, bucket_size);
    width = level_width(s);
    if (f.section_len[0] != 4u * (uint64_t)nb || f.section_len[1] != (uint64_t)n * width)
        return DR_E_FRAME_FIELD;
    q.n = n;
    q.width = width;
    q.s = s;
    q.bucket_size = bucket_size;
    q.norms = buf + f.section_off[0];
    q.levels = buf + f.section_off[1];
    q.out = out;
    q.simd = simd;
    q.stream = DR_HAVE_X86_SIMD && simd >= DR_SIMD_AVX2 && dr_stream_output(out, n);
    /* Every bucket is checked before any is decoded, so a refused frame leaves `out`
     * untouched: the check is the first step, split over the threads as the decoding,
     * the second, is. */
    threads = dr_threads_for(n, DR_THREADS_MIN_NUMEL);
    return dr_parallel_steps(nb, threads, 2, check_then_decode, NULL, &q);
}
