/* dexp: a double exponential a e^{px} + b e^{qx} fitted to the magnitudes sorted in
 * ascending order, signs sent as bits (layout in deepreduce/value.h).
 *
 * Jacquelin's method ("Regressions et equations integrales", 2009) turns the non-linear
 * fit into two linear ones. A double exponential solves y'' = (p+q) y' - pq y; integrated
 * twice, y = A SS + B S + C x + D with S, SS the running integrals of y, A = -pq and
 * B = p + q. Least squares on that (S and SS by the trapezoid rule) gives p and q as the
 * roots of l^2 - B l - A, and a second least squares gives a and b. Both are solved by
 * Givens QR, streamed row by row, so nothing of size r is kept and the normal equations'
 * squared condition number never appears. */
#include "value_internal.h"

#include <math.h>
#include <string.h>

#define COEF_BYTES 32 /* a, b, p, q as float64 */

/* ---- streamed least squares: R and Q^T y of [A | y] kept up to date one row at a time */

typedef struct {
    double r[4][4];   /* upper triangular R */
    double z[4];      /* Q^T y */
    double colsq[4];  /* squared norm of each column of A, for the rank test */
    size_t m;
} lsq;

static void lsq_init(lsq *ls, size_t m)
{
    memset(ls, 0, sizeof *ls);
    ls->m = m;
}

static void lsq_add(lsq *ls, const double *row, double y)
{
    double w[4];
    size_t j, k;
    for (j = 0; j < ls->m; j++) {
        w[j] = row[j];
        ls->colsq[j] += row[j] * row[j];
    }
    /* Rotate the new row into R, zeroing it left to right. */
    for (k = 0; k < ls->m; k++) {
        double a = ls->r[k][k], b = w[k], h, c, s, t;
        if (b == 0.0)
            continue;
        h = sqrt(a * a + b * b);
        c = a / h;
        s = b / h;
        ls->r[k][k] = h;
        for (j = k + 1; j < ls->m; j++) {
            t = ls->r[k][j];
            ls->r[k][j] = c * t + s * w[j];
            w[j] = c * w[j] - s * t;
        }
        t = ls->z[k];
        ls->z[k] = c * t + s * y;
        y = c * y - s * t;
    }
}

/* Back substitution. DR_E_NUMERIC if a column lies (relatively) within the span of the
 * ones before it, or the solution is not finite. */
static int lsq_solve(const lsq *ls, double *x)
{
    size_t k = ls->m, j;
    while (k-- > 0) {
        double sum = ls->z[k];
        if (!(ls->r[k][k] > 1e-9 * sqrt(ls->colsq[k])))
            return DR_E_NUMERIC;
        for (j = k + 1; j < ls->m; j++)
            sum -= ls->r[k][j] * x[j];
        x[k] = sum / ls->r[k][k];
        if (!isfinite(x[k]))
            return DR_E_NUMERIC;
    }
    return DR_OK;
}

/* ---- the model, evaluated identically by encoder and decoder */

/* x_j = j / (r - 1): the sorted curve always spans [0, 1], whatever r is. */
static double position(size_t j, size_t r)
{
    return r > 1 ? (double)j / (double)(r - 1) : 0.0;
}

/* The magnitude at x for coefficients (a, b, p, q); a negative fit is clamped to 0
 * (magnitudes are never negative), NaN passes through for the caller to refuse. */
static double model(const double *c, double x)
{
    double y = c[0] * exp(c[2] * x) + c[1] * exp(c[3] * x);
    return y < 0.0 ? 0.0 : y;
}

/* Jacquelin's fit of y_j = |val[perm[j]]| / scale into c = (a, b, p, q) in scaled units.
 * Returns DR_E_NUMERIC when it has no usable answer, for the caller to fall back. */
static int fit(const float *val, const uint32_t *perm, size_t r, double scale, double *c)
{
    lsq ls;
    double abcd[4], disc, root, sum_pq, p, q, ab[2], s = 0.0, ss = 0.0, prev = 0.0, xprev = 0.0;
    size_t j;

    lsq_init(&ls, 4);
    for (j = 0; j < r; j++) {
        double x = position(j, r), y = fabs((double)val[perm[j]]) / scale, row[4];
        if (j > 0) {
            double s_next = s + 0.5 * (y + prev) * (x - xprev);
            ss += 0.5 * (s + s_next) * (x - xprev);
            s = s_next;
        }
        row[0] = ss;
        row[1] = s;
        row[2] = x;
        row[3] = 1.0;
        lsq_add(&ls, row, y);
        prev = y;
        xprev = x;
    }
    if (lsq_solve(&ls, abcd) != DR_OK)
        return DR_E_NUMERIC;
    /* p, q = roots of l^2 - B l - A; real and distinct or the model does not apply. */
    disc = abcd[1] * abcd[1] + 4.0 * abcd[0];
    if (!(disc > 0.0))
        return DR_E_NUMERIC;
    root = sqrt(disc);
    /* The root without cancellation first, the other from the product pq = -A. */
    sum_pq = abcd[1] + (abcd[1] >= 0.0 ? root : -root);
    p = 0.5 * sum_pq;
    q = -2.0 * abcd[0] / sum_pq;
    if (!isfinite(p) || !isfinite(q) || p == q)
        return DR_E_NUMERIC;
    if (p > q) { /* one canonical order: p < q */
        double t = p;
        p = q;
        q = t;
    }

    lsq_init(&ls, 2);
    for (j = 0; j < r; j++) {
        double x = position(j, r), row[2];
        row[0] = exp(p * x);
        row[1] = exp(q * x);
        if (!isfinite(row[0]) || !isfinite(row[1]))
            return DR_E_NUMERIC;
        lsq_add(&ls, row, fabs((double)val[perm[j]]) / scale);
    }
    if (lsq_solve(&ls, ab) != DR_OK)
        return DR_E_NUMERIC;
    c[0] = ab[0];
    c[1] = ab[1];
    c[2] = p;
    c[3] = q;
    return DR_OK;
}

/* Coefficients for the sorted magnitudes: the double exponential when it fits better than
 * the mean, else the constant mean (a = mean, b = p = q = 0). */
static void choose_model(const float *val, const uint32_t *perm, size_t r, double *c)
{
    double scale, mean = 0.0, sse_fit = 0.0, sse_mean = 0.0, f[4];
    size_t j;
    c[0] = c[1] = c[2] = c[3] = 0.0;
    if (r == 0)
        return;
    /* Fit in units of the largest magnitude so that tiny or huge values stay O(1). */
    scale = fabs((double)val[perm[r - 1]]);
    if (scale == 0.0)
        return;
    for (j = 0; j < r; j++)
        mean += fabs((double)val[perm[j]]);
    mean /= (double)r;
    c[0] = mean;
    if (r < 4 || fit(val, perm, r, scale, f) != DR_OK)
        return;
    f[0] *= scale;
    f[1] *= scale;
    for (j = 0; j < r; j++) {
        double y = fabs((double)val[perm[j]]);
        double e = model(f, position(j, r)) - y;
        sse_fit += e * e;
        sse_mean += (y - mean) * (y - mean);
    }
    if (sse_fit <= sse_mean) /* false for a NaN fit */
        memcpy(c, f, sizeof f);
}

size_t dr_value_dexp_bound(size_t r)
{
    if (r > (size_t)UINT32_MAX)
        return 0;
    return COEF_BYTES + (r + 7u) / 8u;
}

size_t dr_value_dexp_workspace_size(size_t r)
{
    return dr_value_sort_scratch_size(r);
}

int dr_value_dexp_encode(const float *val, size_t r, uint32_t *perm_out, uint8_t *out,
                         size_t cap, size_t *written, void *work)
{
    uint32_t *keys, *tmp_keys, *tmp_perm;
    double c[4];
    size_t need, j;
    uint8_t *signs;
    int st;

    if (r > (size_t)UINT32_MAX || written == NULL || (r > 0 && (val == NULL || perm_out == NULL)) ||
        (out == NULL && cap > 0))
        return DR_E_ARG;
    st = dr_value_sort_scratch(work, r, &keys, &tmp_keys, &tmp_perm);
    if (st != DR_OK)
        return st;
    if (!dr_value_all_finite(val, r))
        return DR_E_NUMERIC;
    need = dr_value_dexp_bound(r);
    if (cap < need)
        return DR_E_DST_TOO_SMALL;

    /* The magnitude's bits order like the magnitude. */
    for (j = 0; j < r; j++) {
        uint32_t u;
        memcpy(&u, &val[j], 4);
        keys[j] = u & 0x7fffffffu;
    }
    dr_value_radix_sort(keys, perm_out, tmp_keys, tmp_perm, r);
    choose_model(val, perm_out, r, c);

    memcpy(out, c, COEF_BYTES);
    signs = out + COEF_BYTES;
    memset(signs, 0, need - COEF_BYTES);
    for (j = 0; j < r; j++)
        if (val[perm_out[j]] < 0.0f)
            signs[j / 8u] |= (uint8_t)(1u << (j % 8u));
    *written = need;
    return DR_OK;
}

int dr_value_dexp_decode(const uint8_t *in, size_t len, size_t r, float *val_out)
{
    double c[4];
    const uint8_t *signs;
    size_t need, j;

    if (r > (size_t)UINT32_MAX || (r > 0 && val_out == NULL) || (in == NULL && len > 0))
        return DR_E_ARG;
    need = dr_value_dexp_bound(r);
    if (len < need)
        return DR_E_FRAME_SHORT;
    if (len > need)
        return DR_E_FRAME_FIELD;
    memcpy(c, in, COEF_BYTES);
    for (j = 0; j < 4; j++)
        if (!isfinite(c[j]))
            return DR_E_CORRUPT;
    signs = in + COEF_BYTES;
    if (r % 8u != 0 && (signs[r / 8u] >> (r % 8u)) != 0)
        return DR_E_CORRUPT; /* padding bits are written as zero */
    for (j = 0; j < r; j++) {
        float f;
        if (dr_value_to_float(model(c, position(j, r)), &f) != DR_OK)
            return DR_E_CORRUPT;
        val_out[j] = (signs[j / 8u] >> (j % 8u)) & 1u ? -f : f;
    }
    return DR_OK;
}
