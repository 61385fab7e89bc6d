/* The quantisers' sums in a fixed lane order (see qstats.h). */
#include "deepreduce.h"
#include "qstats_simd.h"

#include <math.h>
#include <string.h>

double dr_lanes_total(const dr_lanes *a)
{
    const double *l = a->lane;
    double m[8];
    int j;
    for (j = 0; j < 8; j++)
        m[j] = (l[j] + l[j + 8]) + (l[j + 16] + l[j + 24]);
    return ((m[0] + m[4]) + (m[2] + m[6])) + ((m[1] + m[5]) + (m[3] + m[7]));
}

/* |v| as an integer that orders like it, NaN as 0 (which `|v| > top` would skip too): the
 * scalar loops take the largest magnitude as the largest of these, a max the compiler
 * vectorises, where a float max it keeps scalar (it cannot reorder one over NaN and
 * signed zeros). */
static uint32_t magnitude_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0x7fffffffu;
    return u & (0u - (uint32_t)(u <= 0x7f800000u)); /* a mask, not a select: see above */
}

static float float_of_bits(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* How many elements from i on (at most n - i) reach the next lane boundary: the scalar
 * loops below take x in such runs, element i + j of a run adding to lane i % DR_QS_LANES
 * + j, which is the same per-lane order as one element at a time, in a loop the compiler
 * vectorises (NEON on 64-bit ARM, SSE2 on x86) where `lane[i % DR_QS_LANES]` it did not. */
static size_t lane_run(size_t i, size_t n)
{
    size_t to_boundary = DR_QS_LANES - i % DR_QS_LANES;
    return to_boundary < n - i ? to_boundary : n - i;
}

/* The vector prefix at the active SIMD level; returns how many elements it took. */
static size_t simd_prefix(int simd, int what, const float *x, size_t n, double mean,
                          dr_lanes *acc, float *max_abs)
{
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        return dr_qs_lanes_avx512(what, x, n, mean, acc, max_abs);
    if (simd >= DR_SIMD_AVX2)
        return dr_qs_lanes_avx2(what, x, n, mean, acc, max_abs);
#else
    (void)simd, (void)what, (void)x, (void)n, (void)mean, (void)acc, (void)max_abs;
#endif
    return 0;
}

/* Inlined into each caller, so that `what` is a constant there and the switch leaves the
 * loop. */
DR_ALWAYS_INLINE double lane_sum(int simd, int what, const float *x, size_t n, double mean, float *max_abs)
{
    dr_lanes acc;
    float prefix_top = 0.0f;
    uint32_t top;
    size_t i, run;
    memset(&acc, 0, sizeof acc);
    i = simd_prefix(simd, what, x, n, mean, &acc, &prefix_top);
    top = magnitude_bits(prefix_top);
    for (; i < n; i += run) {
        size_t at = i % DR_QS_LANES, j;
        run = lane_run(i, n);
        for (j = 0; j < run; j++) {
            double v = x[i + j];
            switch (what) {
            case DR_QS_SQUARES: acc.lane[at + j] += v * v; break;
            case DR_QS_SUM: acc.lane[at + j] += v; break;
            case DR_QS_SQ_DEV: acc.lane[at + j] += (v - mean) * (v - mean); break;
            default: acc.lane[at + j] += fabs(v); break;
            }
            top = magnitude_bits(x[i + j]) > top ? magnitude_bits(x[i + j]) : top;
        }
    }
    if (max_abs != NULL)
        *max_abs = float_of_bits(top);
    return dr_lanes_total(&acc);
}

double dr_qs_sum_squares(int simd, const float *x, size_t n)
{
    return lane_sum(simd, DR_QS_SQUARES, x, n, 0.0, NULL);
}

double dr_qs_sum_max_abs(int simd, const float *x, size_t n, float *max_abs)
{
    return lane_sum(simd, DR_QS_SUM, x, n, 0.0, max_abs);
}

double dr_qs_sum_sq_dev(int simd, const float *x, size_t n, double mean)
{
    return lane_sum(simd, DR_QS_SQ_DEV, x, n, mean, NULL);
}

void dr_qs_shifted_sums(int simd, const float *x, size_t n, double shift, double *sum_dev,
                        double *sum_sq_dev, float *max_abs)
{
    dr_lanes dev, sq;
    uint32_t top;
    size_t i = 0, run;
    memset(&dev, 0, sizeof dev);
    memset(&sq, 0, sizeof sq);
    *max_abs = 0.0f;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_qs_shifted_avx512(x, n, shift, &dev, &sq, max_abs);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_qs_shifted_avx2(x, n, shift, &dev, &sq, max_abs);
#else
    (void)simd;
#endif
    top = magnitude_bits(*max_abs);
    for (; i < n; i += run) {
        size_t at = i % DR_QS_LANES, j;
        run = lane_run(i, n);
        for (j = 0; j < run; j++) {
            double d = (double)x[i + j] - shift;
            dev.lane[at + j] += d;
            sq.lane[at + j] += d * d;
            top = magnitude_bits(x[i + j]) > top ? magnitude_bits(x[i + j]) : top;
        }
    }
    *sum_dev = dr_lanes_total(&dev);
    *sum_sq_dev = dr_lanes_total(&sq);
    *max_abs = float_of_bits(top);
}

uint32_t dr_qs_max_abs_bits(int simd, const float *x, size_t n)
{
    uint32_t top = 0;
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_qs_max_bits_avx512(x, n, &top);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_qs_max_bits_avx2(x, n, &top);
#else
    (void)simd;
#endif
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        u &= 0x7fffffffu;
        top = u > top ? u : top;
    }
    return top;
}

double dr_qs_sum_abs(int simd, const float *x, size_t n)
{
    return lane_sum(simd, DR_QS_ABS, x, n, 0.0, NULL);
}

void dr_qs_split_sums(int simd, const float *x, size_t n, double *sum_neg, double *sum_nonneg,
                      size_t *count_neg)
{
    dr_lanes neg, nonneg;
    size_t i = 0, count = 0, run;
    memset(&neg, 0, sizeof neg);
    memset(&nonneg, 0, sizeof nonneg);
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_qs_split_avx512(x, n, &neg, &nonneg, &count);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_qs_split_avx2(x, n, &neg, &nonneg, &count);
#else
    (void)simd;
#endif
    for (; i < n; i += run) {
        size_t at = i % DR_QS_LANES, j;
        run = lane_run(i, n);
        for (j = 0; j < run; j++) {
            /* Selects rather than branches: the sign of a gradient is a coin toss. */
            double v = x[i + j];
            int is_nonneg = v >= 0.0;
            nonneg.lane[at + j] += is_nonneg ? v : 0.0;
            neg.lane[at + j] += is_nonneg ? 0.0 : v;
            count += (size_t)!is_nonneg;
        }
    }
    *sum_neg = dr_lanes_total(&neg);
    *sum_nonneg = dr_lanes_total(&nonneg);
    *count_neg = count;
}
