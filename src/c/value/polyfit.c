/* polyfit: piecewise least-squares polynomials over the values sorted in descending order
 * (layout and segment rule in deepreduce/value.h).
 *
 * Each segment is fitted in the basis of Gram polynomials, which are orthogonal over the
 * segment's own equispaced points. The least-squares problem is then diagonal: every
 * coefficient is one inner product, so the fit costs O(degree) per value and has no
 * system to be ill-conditioned (the original solved normal equations in raw x, singular
 * for long segments). The decoder evaluates the same recurrence, so the coefficients
 * never need to be turned into another basis. */
#include "value_internal.h"

#include <math.h>
#include <string.h>

static const uint32_t segment_divisor[10] = {5, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000};

int dr_value_polyfit_segments(size_t r, size_t npos, uint32_t *len_out, size_t *nseg)
{
    uint32_t pos[10], neg[10];
    size_t npl = 0, nnl = 0, nneg, i, k = 0;
    uint64_t pos_sum = 0, neg_sum = 0;
    if (len_out == NULL || nseg == NULL || npos > r || r > (size_t)UINT32_MAX)
        return DR_E_ARG;
    nneg = r - npos;
    for (i = 0; i < 10; i++) {
        if (npos / segment_divisor[i] > 30) {
            pos[npl] = (uint32_t)(npos / segment_divisor[i]);
            pos_sum += pos[npl++];
        }
        if (nneg / segment_divisor[i] > 30) {
            neg[nnl] = (uint32_t)(nneg / segment_divisor[i]);
            neg_sum += neg[nnl++];
        }
    }
    /* The divisors' reciprocals sum to about 0.35, so the middle segments are never negative. */
    for (i = npl; i > 0; i--)
        len_out[k++] = pos[i - 1];
    len_out[k++] = (uint32_t)(npos - pos_sum);
    len_out[k++] = (uint32_t)(nneg - neg_sum);
    for (i = 0; i < nnl; i++)
        len_out[k++] = neg[i];
    *nseg = k;
    return DR_OK;
}

static int params_ok(uint32_t degree, uint32_t flags)
{
    return degree <= DR_POLYFIT_MAX_DEGREE && (flags & ~(uint32_t)DR_POLYFIT_COEF_F32) == 0;
}

static size_t coef_width(uint32_t flags)
{
    return (flags & DR_POLYFIT_COEF_F32) ? 4u : 8u;
}

size_t dr_value_polyfit_bound(size_t r, uint32_t degree, uint32_t flags)
{
    size_t most = (size_t)DR_POLYFIT_MAX_SEGMENTS * (degree + 1u);
    if (!params_ok(degree, flags) || r > (size_t)UINT32_MAX)
        return 0;
    return coef_width(flags) * (1u + (r < most ? r : most));
}

size_t dr_value_polyfit_workspace_size(size_t r)
{
    return dr_value_sort_scratch_size(r);
}

/* Coefficients a segment of n values sends. */
static size_t segment_coefs(uint32_t n, uint32_t degree)
{
    return n < degree + 1u ? n : degree + 1u;
}

/* The recurrence constants beta[k] = k^2 (n^2 - k^2) / ((n-1)^2 (4k^2 - 1)), k = 1..m-2,
 * of the Gram polynomials on n points. */
static void gram_betas(uint32_t n, size_t m, double *beta)
{
    double nm1 = (double)n - 1.0, nn = (double)n * (double)n;
    size_t k;
    for (k = 1; k + 1 < m; k++) {
        double kk = (double)k * (double)k;
        beta[k] = kk * (nn - kk) / (nm1 * nm1 * (4.0 * kk - 1.0));
    }
}

/* t_i = (2i - (n-1)) / (n-1), the position of point i of n in [-1, 1] (n >= 2). */
static double gram_t(uint32_t n, uint32_t i, double inv_nm1)
{
    return (2.0 * (double)i - ((double)n - 1.0)) * inv_nm1;
}

/* g_0..g_{m-1} at t, into g[] (forward recurrence: the encoder needs every g_k). */
static void gram_basis(size_t m, const double *beta, double t, double *g)
{
    size_t k;
    g[0] = 1.0;
    if (m < 2)
        return;
    g[1] = t;
    for (k = 1; k + 1 < m; k++)
        g[k + 1] = t * g[k] - beta[k] * g[k - 1];
}

/* sum_k c_k g_k(t) by Clenshaw's backward recurrence: b_k = c_k + t b_{k+1} - beta_{k+1}
 * b_{k+2}, and the sum is b_0 because g_1 = t g_0. No g_k is formed. */
static double gram_sum(size_t m, const double *beta, const double *c, double t)
{
    double b1 = 0.0, b2 = 0.0;
    size_t k = m;
    while (k-- > 1) {
        /* b2 = b_{k+2} is still 0 when k + 2 >= m, where beta[k+1] is not defined. */
        double b0 = c[k] + t * b1 - (k + 2 < m ? beta[k + 1] * b2 : 0.0);
        b2 = b1;
        b1 = b0;
    }
    return c[0] + t * b1 - (m > 2 ? beta[1] * b2 : 0.0);
}

/* The value whose sort key is `key` (the inverse of the encoder's map). */
static double key_value(uint32_t key)
{
    uint32_t u = (key & 0x80000000u) ? key : ~key & 0x7fffffffu;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Writes c in w bytes; DR_E_NUMERIC if it does not fit a float32 when w == 4. */
static int put_coef(uint8_t *p, double c, size_t w)
{
    float f;
    if (w == 8) {
        memcpy(p, &c, 8);
        return DR_OK;
    }
    if (dr_value_to_float(c, &f) != DR_OK)
        return DR_E_NUMERIC;
    memcpy(p, &f, 4);
    return DR_OK;
}

static double get_coef(const uint8_t *p, size_t w)
{
    if (w == 8) {
        double c;
        memcpy(&c, p, 8);
        return c;
    } else {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
}

/* The section size for (r, npos), 0 if it would not fit a size_t. */
static size_t section_size(size_t r, size_t npos, uint32_t degree, size_t w)
{
    uint32_t len[DR_POLYFIT_MAX_SEGMENTS];
    size_t nseg = 0, s, coefs = 1;
    if (dr_value_polyfit_segments(r, npos, len, &nseg) != DR_OK)
        return 0;
    for (s = 0; s < nseg; s++)
        coefs += segment_coefs(len[s], degree);
    return coefs * w;
}

int dr_value_polyfit_encode(const float *val, size_t r, uint32_t degree, uint32_t flags,
                            uint32_t *perm_out, uint8_t *out, size_t cap, size_t *written,
                            void *work)
{
    uint32_t len[DR_POLYFIT_MAX_SEGMENTS];
    uint32_t *keys, *tmp_keys, *tmp_perm;
    size_t w = coef_width(flags), nseg = 0, npos = 0, need, i, s, pos = 0;
    uint8_t *p;
    int st;

    if (!params_ok(degree, flags))
        return DR_E_ARG;
    st = dr_value_sort_begin(val, r, perm_out, out, cap, written, work, &keys, &tmp_keys,
                             &tmp_perm);
    if (st != DR_OK)
        return st;

    /* Keys whose ascending order is descending value order: the usual order-preserving
     * map of float bits (flip all bits of negatives, set the sign of the rest), inverted. */
    for (i = 0; i < r; i++) {
        uint32_t u;
        memcpy(&u, &val[i], 4);
        keys[i] = (u & 0x80000000u) ? u : ~(u | 0x80000000u);
        npos += val[i] > 0.0f;
    }
    dr_value_radix_sort(keys, perm_out, tmp_keys, tmp_perm, r);

    need = section_size(r, npos, degree, w);
    if (cap < need)
        return DR_E_DST_TOO_SMALL;
    dr_value_polyfit_segments(r, npos, len, &nseg);
    if (w == 8) {
        uint64_t n64 = npos;
        memcpy(out, &n64, 8);
    } else {
        uint32_t n32 = (uint32_t)npos;
        memcpy(out, &n32, 4);
    }
    p = out + w;

    for (s = 0; s < nseg; s++) {
        double g[DR_POLYFIT_MAX_DEGREE + 1], beta[DR_POLYFIT_MAX_DEGREE + 1] = {0},
            num[DR_POLYFIT_MAX_DEGREE + 1] = {0}, den[DR_POLYFIT_MAX_DEGREE + 1] = {0};
        size_t m = segment_coefs(len[s], degree), k;
        double inv_nm1 = len[s] > 1 ? 1.0 / ((double)len[s] - 1.0) : 0.0;
        uint32_t j;
        gram_betas(len[s], m, beta);
        for (j = 0; j < len[s]; j++) {
            /* The sorted keys give the values back without a gather through perm. */
            double y = key_value(keys[pos + j]);
            gram_basis(m, beta, gram_t(len[s], j, inv_nm1), g);
            for (k = 0; k < m; k++) {
                num[k] += y * g[k];
                den[k] += g[k] * g[k];
            }
        }
        for (k = 0; k < m; k++) {
            /* den[k] > 0: g_k with k < n is a non-zero polynomial of degree < n, so it
             * cannot vanish on all n points. */
            if (put_coef(p, num[k] / den[k], w) != DR_OK)
                return DR_E_NUMERIC;
            p += w;
        }
        pos += len[s];
    }
    *written = need;
    return DR_OK;
}

int dr_value_polyfit_decode(const uint8_t *in, size_t len, size_t r, uint32_t degree,
                            uint32_t flags, float *val_out)
{
    uint32_t seg[DR_POLYFIT_MAX_SEGMENTS];
    size_t w = coef_width(flags), nseg = 0, npos, need, s, pos = 0;
    const uint8_t *p;

    if (!params_ok(degree, flags) || r > (size_t)UINT32_MAX || (r > 0 && val_out == NULL) ||
        (in == NULL && len > 0))
        return DR_E_ARG;
    if (len < w)
        return DR_E_FRAME_SHORT;
    if (w == 8) {
        uint64_t n64;
        memcpy(&n64, in, 8);
        if (n64 > r)
            return DR_E_CORRUPT;
        npos = (size_t)n64;
    } else {
        uint32_t n32;
        memcpy(&n32, in, 4);
        if (n32 > r)
            return DR_E_CORRUPT;
        npos = n32;
    }
    need = section_size(r, npos, degree, w);
    if (len < need)
        return DR_E_FRAME_SHORT;
    if (len > need)
        return DR_E_FRAME_FIELD;
    dr_value_polyfit_segments(r, npos, seg, &nseg);
    p = in + w;

    for (s = 0; s < nseg; s++) {
        double c[DR_POLYFIT_MAX_DEGREE + 1], beta[DR_POLYFIT_MAX_DEGREE + 1] = {0};
        double inv_nm1 = seg[s] > 1 ? 1.0 / ((double)seg[s] - 1.0) : 0.0;
        size_t m = segment_coefs(seg[s], degree), k;
        uint32_t j;
        gram_betas(seg[s], m, beta);
        for (k = 0; k < m; k++) {
            c[k] = get_coef(p, w);
            p += w;
            if (!isfinite(c[k]))
                return DR_E_CORRUPT;
        }
        for (j = 0; j < seg[s]; j++) {
            double y = gram_sum(m, beta, c, gram_t(seg[s], j, inv_nm1));
            /* Finite coefficients can still sum past the float range. */
            if (dr_value_to_float(y, &val_out[pos + j]) != DR_OK)
                return DR_E_CORRUPT;
        }
        pos += seg[s];
    }
    return DR_OK;
}
