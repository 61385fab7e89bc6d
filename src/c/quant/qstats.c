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

static double lane_sum(int simd, int what, const float *x, size_t n, double mean, float *max_abs)
{
    dr_lanes acc;
    float top = 0.0f;
    size_t i;
    memset(&acc, 0, sizeof acc);
    i = simd_prefix(simd, what, x, n, mean, &acc, &top);
    for (; i < n; i++) {
        double v = x[i];
        switch (what) {
        case DR_QS_SQUARES: acc.lane[i % DR_QS_LANES] += v * v; break;
        case DR_QS_SUM: acc.lane[i % DR_QS_LANES] += v; break;
        case DR_QS_SQ_DEV: acc.lane[i % DR_QS_LANES] += (v - mean) * (v - mean); break;
        default: acc.lane[i % DR_QS_LANES] += fabs(v); break;
        }
        top = fabsf(x[i]) > top ? fabsf(x[i]) : top;
    }
    if (max_abs != NULL)
        *max_abs = top;
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
    float top = 0.0f;
    size_t i = 0;
    memset(&dev, 0, sizeof dev);
    memset(&sq, 0, sizeof sq);
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_qs_shifted_avx512(x, n, shift, &dev, &sq, &top);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_qs_shifted_avx2(x, n, shift, &dev, &sq, &top);
#else
    (void)simd;
#endif
    for (; i < n; i++) {
        double d = (double)x[i] - shift;
        dev.lane[i % DR_QS_LANES] += d;
        sq.lane[i % DR_QS_LANES] += d * d;
        top = fabsf(x[i]) > top ? fabsf(x[i]) : top;
    }
    *sum_dev = dr_lanes_total(&dev);
    *sum_sq_dev = dr_lanes_total(&sq);
    *max_abs = top;
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
    size_t i = 0, count = 0;
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
    for (; i < n; i++) {
        /* Selects rather than branches: the sign of a gradient is a coin toss. */
        int is_nonneg = x[i] >= 0.0f;
        nonneg.lane[i % DR_QS_LANES] += is_nonneg ? (double)x[i] : 0.0;
        neg.lane[i % DR_QS_LANES] += is_nonneg ? 0.0 : (double)x[i];
        count += (size_t)!is_nonneg;
    }
    *sum_neg = dr_lanes_total(&neg);
    *sum_nonneg = dr_lanes_total(&nonneg);
    *count_neg = count;
}
