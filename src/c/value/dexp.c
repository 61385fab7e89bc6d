/* dexp: a double exponential a e^{px} + b e^{qx} fitted to the magnitudes sorted in
 * ascending order; the signs are the index side's (layout in deepreduce/value.h).
 *
 * Jacquelin's method ("Regressions et equations integrales", 2009) turns the non-linear
 * fit into two linear ones. A double exponential solves y'' = (p+q) y' - pq y; integrated
 * twice, y = A SS + B S + C x + D with S, SS the running integrals of y, A = -pq and
 * B = p + q. Least squares on that (S and SS by the trapezoid rule) gives p and q as the
 * roots of l^2 - B l - A, and a second least squares gives a and b. Both are solved by
 * Householder QR, streamed in blocks of rows, so nothing of size r is kept and the normal
 * equations' squared condition number never appears. */
#include "value_internal.h"

#include <math.h>
#include <string.h>

#define COEF_BYTES 32 /* a, b, p, q as float64 */
#define BLOCK 64       /* rows per least-squares update; values per fresh exp() */

/* ---- least squares by blocked Householder QR. [R | Q^T y] is updated with BLOCK rows at
 * a time: per row a few pipelined multiply-adds, instead of a chain of square roots and
 * divisions per row as with Givens rotations. Nothing of size r is kept. */

typedef struct {
    double r[4][5];        /* [R | Q^T y], R upper triangular in the first m columns */
    double colsq[4];       /* squared norm of each column of A, for the rank test */
    double rows[5][BLOCK]; /* rows not yet folded in, by column: a_1 .. a_m, then y */
    size_t m, pending;
} lsq;

static void lsq_init(lsq *ls, size_t m)
{
    memset(ls->r, 0, sizeof ls->r);
    memset(ls->colsq, 0, sizeof ls->colsq);
    ls->m = m;
    ls->pending = 0;
}

/* Triangularise [R; pending rows] column by column with Householder reflectors. */
static void lsq_flush(lsq *ls)
{
    size_t k, j, i, n = ls->pending, m = ls->m;
    for (k = 0; k < m; k++) {
        double alpha = ls->r[k][k], sigma = 0.0, beta, tau, scale;
        for (i = 0; i < n; i++)
            sigma += ls->rows[k][i] * ls->rows[k][i];
        if (sigma == 0.0)
            continue; /* nothing below the diagonal to annihilate */
        /* Reflector H = I - tau v v^T with v = (1, x / (alpha - beta)) maps (alpha, x) to
         * (beta, 0); beta takes the sign opposite to alpha so alpha - beta cannot cancel. */
        beta = sqrt(alpha * alpha + sigma);
        if (alpha >= 0.0)
            beta = -beta;
        tau = (beta - alpha) / beta;
        scale = 1.0 / (alpha - beta);
        for (i = 0; i < n; i++)
            ls->rows[k][i] *= scale; /* the tail of v */
        ls->r[k][k] = beta;
        for (j = k + 1; j <= m; j++) {
            double w = ls->r[k][j];
            for (i = 0; i < n; i++)
                w += ls->rows[k][i] * ls->rows[j][i];
            w *= tau;
            ls->r[k][j] -= w;
            for (i = 0; i < n; i++)
                ls->rows[j][i] -= w * ls->rows[k][i];
        }
    }
    ls->pending = 0;
}

static void lsq_add(lsq *ls, const double *row, double y)
{
    size_t j;
    for (j = 0; j < ls->m; j++) {
        ls->rows[j][ls->pending] = row[j];
        ls->colsq[j] += row[j] * row[j];
    }
    ls->rows[ls->m][ls->pending] = y;
    if (++ls->pending == BLOCK)
        lsq_flush(ls);
}

/* Back substitution. DR_E_NUMERIC if a column lies (relatively) within the span of the
 * ones before it, or the solution is not finite. */
static int lsq_solve(lsq *ls, double *x)
{
    size_t k, j, m = ls->m;
    lsq_flush(ls);
    for (k = m; k-- > 0;) {
        double sum = ls->r[k][m];
        if (!(fabs(ls->r[k][k]) > 1e-9 * sqrt(ls->colsq[k])))
            return DR_E_NUMERIC;
        for (j = k + 1; j < m; j++)
            sum -= ls->r[k][j] * x[j];
        x[k] = sum / ls->r[k][k];
        if (!isfinite(x[k]))
            return DR_E_NUMERIC;
    }
    return DR_OK;
}

/* ---- the model, walked identically by encoder and decoder */

/* x_j = j / (r - 1): the sorted curve always spans [0, 1], whatever r is. */
static double position(size_t j, size_t r)
{
    return r > 1 ? (double)j / (double)(r - 1) : 0.0;
}

/* e^{p x_j} and e^{q x_j} for j = 0, 1, ... in order: exp() afresh every BLOCK values and
 * a constant factor in between, so drift stays within BLOCK roundings. */
typedef struct {
    double p, q, step_p, step_q, ep, eq;
    size_t r;
} walker;

static void walk_init(walker *w, double p, double q, size_t r)
{
    double h = position(1, r);
    w->p = p;
    w->q = q;
    w->step_p = exp(p * h);
    w->step_q = exp(q * h);
    w->ep = w->eq = 1.0; /* the values at x_0 = 0 */
    w->r = r;
}

static void walk_to(walker *w, size_t j)
{
    if (j % BLOCK == 0) {
        w->ep = exp(w->p * position(j, w->r));
        w->eq = exp(w->q * position(j, w->r));
    } else {
        w->ep *= w->step_p;
        w->eq *= w->step_q;
    }
}

/* The magnitude a e^{px} + b e^{qx} at the walker's position, with c = (a, b, p, q); a
 * negative fit is clamped to 0 (magnitudes never are), NaN passes through for the caller
 * to refuse. */
static double model_at(const walker *w, const double *c)
{
    double y = c[0] * w->ep + c[1] * w->eq;
    return y < 0.0 ? 0.0 : y;
}

/* Sort keys hold the magnitude's bits above the sign bit (see the encoder). */
static double key_magnitude(uint32_t key)
{
    uint32_t u = key >> 1;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Jacquelin's fit of y_j = magnitude(keys[j]) / scale into c = (a, b, p, q) in scaled
 * units. DR_E_NUMERIC when it has no usable answer, for the caller to fall back. */
static int fit(const uint32_t *keys, size_t r, double scale, double *c)
{
    lsq ls;
    walker w;
    double abcd[4], disc, root, sum_pq, p, q, ab[2], s = 0.0, ss = 0.0, prev = 0.0;
    double h = position(1, r), inv_scale = 1.0 / scale;
    size_t j;

    lsq_init(&ls, 4);
    for (j = 0; j < r; j++) {
        double y = key_magnitude(keys[j]) * inv_scale, row[4];
        if (j > 0) { /* trapezoid steps of width h */
            double s_next = s + 0.5 * h * (y + prev);
            ss += 0.5 * h * (s + s_next);
            s = s_next;
        }
        row[0] = ss;
        row[1] = s;
        row[2] = (double)j * h;
        row[3] = 1.0;
        lsq_add(&ls, row, y);
        prev = y;
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
    walk_init(&w, p, q, r);
    for (j = 0; j < r; j++) {
        double row[2];
        walk_to(&w, j);
        row[0] = w.ep;
        row[1] = w.eq;
        if (!isfinite(row[0]) || !isfinite(row[1]))
            return DR_E_NUMERIC;
        lsq_add(&ls, row, key_magnitude(keys[j]) * inv_scale);
    }
    if (lsq_solve(&ls, ab) != DR_OK)
        return DR_E_NUMERIC;
    c[0] = ab[0];
    c[1] = ab[1];
    c[2] = p;
    c[3] = q;
    return DR_OK;
}

/* Coefficients for the sorted keys: the double exponential when it fits better than the
 * mean, else the constant mean (a = mean, b = p = q = 0). */
static void choose_model(const uint32_t *keys, size_t r, double *c)
{
    double scale, mean = 0.0, sse_fit = 0.0, sse_mean = 0.0, f[4];
    walker w;
    size_t j;
    c[0] = c[1] = c[2] = c[3] = 0.0;
    if (r == 0)
        return;
    /* Fit in units of the largest magnitude so that tiny or huge values stay O(1). */
    scale = key_magnitude(keys[r - 1]);
    if (scale == 0.0)
        return;
    for (j = 0; j < r; j++)
        mean += key_magnitude(keys[j]);
    mean /= (double)r;
    c[0] = mean;
    if (r < 4 || fit(keys, r, scale, f) != DR_OK)
        return;
    f[0] *= scale;
    f[1] *= scale;
    walk_init(&w, f[2], f[3], r);
    for (j = 0; j < r; j++) {
        double y = key_magnitude(keys[j]), e, at;
        float as_float;
        walk_to(&w, j);
        at = model_at(&w, f);
        /* A fit past float32's range at some position (finite values near FLT_MAX) is a
         * frame the decoder refuses: the mean then, as for a fit that errs more. */
        if (dr_value_to_float(at, &as_float) != DR_OK)
            return;
        e = at - y;
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
    return COEF_BYTES;
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
    int st;

    st = dr_value_sort_begin(val, r, perm_out, out, cap, written, work, &keys, &tmp_keys,
                             &tmp_perm);
    if (st != DR_OK)
        return st;
    need = dr_value_dexp_bound(r);
    if (cap < need)
        return DR_E_DST_TOO_SMALL;

    /* Key = magnitude bits, then the sign bit: ordered by |value| (the bits of a
     * non-negative float order like the number), equal magnitudes positive first, then in
     * input order. The sorted keys carry everything the fit needs, so no value is
     * gathered through perm. */
    for (j = 0; j < r; j++) {
        uint32_t u;
        memcpy(&u, &val[j], 4);
        keys[j] = (u << 1) | (u >> 31);
    }
    dr_value_radix_sort(keys, perm_out, tmp_keys, tmp_perm, r);
    choose_model(keys, r, c);

    memcpy(out, c, COEF_BYTES);
    *written = need;
    return DR_OK;
}

int dr_value_dexp_decode(const uint8_t *in, size_t len, size_t r, float *val_out)
{
    double c[4];
    walker w;
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
    walk_init(&w, c[2], c[3], r);
    for (j = 0; j < r; j++) {
        float f;
        walk_to(&w, j);
        if (dr_value_to_float(model_at(&w, c), &f) != DR_OK)
            return DR_E_CORRUPT;
        val_out[j] = f;
    }
    return DR_OK;
}
