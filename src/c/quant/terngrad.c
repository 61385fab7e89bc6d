/* TernGrad: clip at 2.5 standard deviations, then round each value stochastically to
 * {-s, 0, +s} with s the largest clipped magnitude. Two bits per element.
 *
 * Two sweeps over x: the statistics (sums of deviations from a sample's mean, their
 * squares, and max |x|), then the codes (s needs no sweep of its own: the largest
 * clipped magnitude is min(max |x|, clip bound)). The AVX2/AVX-512 variants
 * (terngrad_simd.c) compute the same codes 8 or 16 at a time. */
#include "rng_inline.h"
#include "qframe.h"
#include "qstats.h"
#include "terngrad_simd.h"

#include <math.h>

enum { TERN_ZERO = 0, TERN_PLUS = 1, TERN_MINUS = 2 };

size_t dr_terngrad_size(size_t n)
{
    return dr_frame_header_size(2) + 4u + dr_qf_crumb_bytes(n) + DR_FRAME_TRAILER;
}

/* The mean of up to 256 evenly spaced elements: the shift that keeps the one-sweep
 * variance as accurate as the two-sweep one (the sums' cancellation is by the sample
 * mean's distance from the mean, a small fraction of sigma). */
static double sample_mean(const float *x, size_t n)
{
    size_t count = n < 256u ? n : 256u, stride = n / count, j;
    double sum = 0.0;
    for (j = 0; j < count; j++)
        sum += (double)x[j * stride];
    return sum / (double)count;
}

/* The clip bound 2.5*sigma, sigma the population standard deviation, in double from one
 * sweep; *max_abs gets max |x| from the same sweep. */
static float clip_bound(int simd, const float *x, size_t n, float *max_abs)
{
    double dev, sq, mean_dev, var;
    *max_abs = 0.0f;
    if (n == 0)
        return 0.0f;
    dr_qs_shifted_sums(simd, x, n, sample_mean(x, n), &dev, &sq, max_abs);
    mean_dev = dev / (double)n;
    var = sq / (double)n - mean_dev * mean_dev;
    /* Rounding can take a zero variance a hair below zero; NaN passes on (refused). */
    return (float)(2.5 * sqrt(var < 0.0 ? 0.0 : var));
}

int dr_terngrad_encode(const float *x, size_t n, uint64_t key, uint8_t dtype, uint8_t *buf,
                       size_t cap, size_t *written)
{
    dr_frame f;
    float c, s, max_abs;
    uint8_t *codes;
    size_t i = 0;
    int simd = dr_simd_active();
    const uint64_t len[2] = {4, dr_qf_crumb_bytes(n)};
    int st = dr_qf_prepare(&f, DR_KIND_TERNGRAD, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    c = clip_bound(simd, x, n, &max_abs);
    /* Inf/NaN in x make sigma NaN; a bound that merely overflows float means no clip. */
    if (isnan(c))
        return DR_E_NUMERIC;
    s = fminf(max_abs, c);
    dr_qf_put_f32(buf + f.section_off[0], s);
    codes = buf + f.section_off[1];
    if (s > 0.0f) {
#if DR_HAVE_X86_SIMD
        if (simd >= DR_SIMD_AVX512)
            i = dr_terngrad_codes_avx512(x, n, c, s, key, codes);
        else if (simd >= DR_SIMD_AVX2)
            i = dr_terngrad_codes_avx2(x, n, c, s, key, codes);
#endif
    }
    /* The vector prefix wrote whole bytes; the rest are OR-ed into from zero. */
    memset(codes + i / 4, 0, (size_t)f.section_len[1] - i / 4);
    if (s > 0.0f) {
        for (; i < n; i++) {
            /* P(nonzero) = |clip(x)|/s, as u*s < |clip(x)| (u <= 1 - 2^-24, so u*s < s
             * and |clip(x)| = s is always sent). The code is computed, not branched to:
             * both tests are coin tosses. */
            unsigned sent = dr_rng_u32_uniform(dr_rng_u32_fast(key, i)) * s < fminf(fabsf(x[i]), c);
            unsigned code = sent << (x[i] < 0.0f); /* TERN_PLUS or TERN_MINUS */
            codes[i / 4] |= (uint8_t)(code << (2 * (i % 4)));
        }
    }
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_terngrad_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    const uint8_t *codes;
    float s, value[3];
    size_t sent = 0;
    int st = dr_qf_open_scaled(buf, len, DR_KIND_TERNGRAD, n, dr_qf_crumb_bytes(n), 2, out, &s, &codes);
    if (st != DR_OK)
        return st;
    /* A scale of 0 (x all zeros) comes with every code 0: the codes are counted then. */
    st = dr_qf_crumbs_check(codes, n, s == 0.0f ? &sent : NULL);
    if (st != DR_OK)
        return st;
    if (sent > 0)
        return DR_E_CORRUPT;
    value[TERN_ZERO] = 0.0f;
    value[TERN_PLUS] = s;
    value[TERN_MINUS] = -s;
    dr_qf_crumb_values(codes, n, value, out, 0);
    return DR_OK;
}
