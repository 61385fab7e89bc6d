/* polyfit: piecewise least-squares polynomials over the values sorted in descending order,
 * with free knots (layout and the two knot rules in deepreduce/value.h).
 *
 * Knots are found on the sorted keys in place (no buffer beyond the sort's), one chord
 * scan per knot. Each piece is fitted in the basis of Gram polynomials, which are
 * orthogonal over the piece's own equispaced points. The least-squares problem is then diagonal: every
 * coefficient is one inner product, so the fit costs O(degree) per value and has no
 * system to be ill-conditioned (the original solved normal equations in raw x, singular
 * for long segments). The decoder evaluates the same recurrence, so the coefficients
 * never need to be turned into another basis. */
#include "value_internal.h"

#include <math.h>
#include <string.h>

static int params_ok(uint32_t degree, uint32_t flags)
{
    return degree <= DR_POLYFIT_MAX_DEGREE &&
           (flags & ~(uint32_t)(DR_POLYFIT_COEF_F32 | DR_POLYFIT_KNOTS_REFERENCE)) == 0;
}

static size_t coef_width(uint32_t flags)
{
    return (flags & DR_POLYFIT_COEF_F32) ? 4u : 8u;
}

/* npos (4 bytes), the two piece counts (1 byte each). */
#define HEAD_BYTES 6u

size_t dr_value_polyfit_bound(size_t r, uint32_t degree, uint32_t flags)
{
    size_t most = 2u * DR_POLYFIT_MAX_PIECES * (size_t)(degree + 1u);
    if (!params_ok(degree, flags) || r > (size_t)UINT32_MAX)
        return 0;
    return HEAD_BYTES + 4u * 2u * (DR_POLYFIT_MAX_PIECES - 1u) + coef_width(flags) * (r < most ? r : most);
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

/* ---- knots. One side of the sorted values (the positives, or the rest) is y_0..y_{l-1},
 * read from the sorted keys in place. A side is cut into pieces; the pieces of both
 * sides are fitted alike. */
typedef struct {
    const uint32_t *keys; /* the side's sorted keys, descending value order */
    uint32_t l;
    int positive; /* the positives, whose ascending magnitude is the reverse order */
} side_t;

static double side_y(const side_t *s, uint32_t i)
{
    return key_value(s->keys[i]);
}

/* The point of y[a..b) farthest (squared) from the chord through its two ends, among
 * the points at least `margin` from either end; *dist gets its distance, -1 if none. */
static uint32_t chord_farthest(const side_t *s, uint32_t a, uint32_t b, uint32_t margin, double *dist)
{
    double ya = side_y(s, a), slope = (side_y(s, b - 1) - ya) / ((double)(b - a) - 1.0);
    uint32_t i, best = 0;
    *dist = -1.0;
    if (b - a < 2u * margin || b - a < 3u)
        return 0;
    for (i = a + margin; i + margin <= b; i++) {
        double e = ya + slope * (double)(i - a) - side_y(s, i);
        if (e * e > *dist) {
            *dist = e * e;
            best = i;
        }
    }
    return best;
}

/* The paper's rule (DeepReduce §5): p = ceil(sqrt(2 M)) knots with
 * M = |(y_0 - y_1) - (y_{l-2} - y_{l-1})|, placed one at a time: each knot goes to the
 * point farthest from the chord of its piece, in the piece where that distance is
 * largest, never leaving a piece of fewer than degree + 1 points. Writes the piece
 * lengths, in order, to len_out; returns how many. */
static size_t knots_paper(const side_t *s, uint32_t degree, uint32_t *len_out)
{
    uint32_t start[DR_POLYFIT_MAX_PIECES];
    size_t n = 1, want = 0, i;
    double m = 0.0, t;
    if (s->l == 0)
        return 0;
    if (s->l >= 2)
        m = fabs((side_y(s, 0) - side_y(s, 1)) - (side_y(s, s->l - 2) - side_y(s, s->l - 1)));
    t = sqrt(2.0 * m);
    want = t >= (double)(DR_POLYFIT_MAX_PIECES - 1) ? DR_POLYFIT_MAX_PIECES - 1 : (size_t)ceil(t);
    start[0] = 0;
    len_out[0] = s->l;
    while (n - 1 < want) {
        double best = -1.0;
        size_t at = 0;
        uint32_t knot = 0;
        for (i = 0; i < n; i++) {
            double dist;
            uint32_t k = chord_farthest(s, start[i], start[i] + len_out[i], degree + 1u, &dist);
            if (dist > best) {
                best = dist;
                at = i;
                knot = k;
            }
        }
        if (best < 0.0)
            break; /* no piece can be cut further */
        memmove(&start[at + 1], &start[at], (n - at) * sizeof *start);
        memmove(&len_out[at + 1], &len_out[at], (n - at) * sizeof *len_out);
        len_out[at] = knot - start[at];
        start[at + 1] = knot;
        len_out[at + 1] -= len_out[at];
        n++;
    }
    return n;
}

/* DeepReduce's reference polyfit_cpu (find_breaks): on the side in ascending magnitude,
 * up to 5 times cut the rest after the last cut at its point farthest from its chord,
 * while at least 100 points would remain after the cut (and the cut moves). Writes the
 * piece lengths in descending value order; returns how many. */
static size_t knots_reference(const side_t *s, uint32_t *len_out)
{
    enum { BREAKS = 5, MIN_REST = 20 * BREAKS };
    uint32_t cut[BREAKS + 1], at = 0, i;
    size_t n = 0, j;
    /* Ascending magnitude: the positives reversed; the rest as they are. */
    int positive = s->positive;
    if (s->l == 0)
        return 0;
    for (j = 0; j < BREAKS && s->l - at >= MIN_REST; j++) {
        /* Distances along the ascending curve from position `at` to the end. */
        uint32_t len = s->l - at, best = 0;
        double y0, y1, slope, worst = -1.0;
        y0 = side_y(s, positive ? s->l - 1 - at : at);
        y1 = side_y(s, positive ? 0 : s->l - 1);
        slope = (y1 - y0) / ((double)len - 1.0);
        for (i = 0; i < len; i++) {
            uint32_t q = at + i;
            double e = fabs(y0 + slope * (double)i - side_y(s, positive ? s->l - 1 - q : q));
            if (e > worst) {
                worst = e;
                best = i;
            }
        }
        if (best == 0 || s->l - (at + best) < MIN_REST)
            break;
        at += best;
        cut[n++] = at;
    }
    /* Cuts at ascending positions c give pieces [0, c_0), [c_0, c_1), ..., [c_last, l). */
    cut[n] = s->l;
    for (j = 0; j <= n; j++)
        len_out[j] = cut[j] - (j ? cut[j - 1] : 0u);
    if (positive) /* back to descending value order */
        for (j = 0; j < (n + 1) / 2; j++) {
            uint32_t tmp = len_out[j];
            len_out[j] = len_out[n - j];
            len_out[n - j] = tmp;
        }
    return n + 1;
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

/* The fit of one piece of n values y[0..n): m = min(degree + 1, n) coefficients of the
 * Gram polynomials, written at p in w bytes each. DR_E_NUMERIC if one overflows float32
 * where w == 4. */
static int fit_piece(const uint32_t *keys, uint32_t n, uint32_t degree, size_t w, uint8_t *p)
{
    double g[DR_POLYFIT_MAX_DEGREE + 1], beta[DR_POLYFIT_MAX_DEGREE + 1] = {0},
        num[DR_POLYFIT_MAX_DEGREE + 1] = {0}, den[DR_POLYFIT_MAX_DEGREE + 1] = {0};
    size_t m = segment_coefs(n, degree), k;
    double inv_nm1 = n > 1 ? 1.0 / ((double)n - 1.0) : 0.0;
    uint32_t j;
    gram_betas(n, m, beta);
    for (j = 0; j < n; j++) {
        /* The sorted keys give the values back without a gather through perm. */
        double y = key_value(keys[j]);
        gram_basis(m, beta, gram_t(n, j, inv_nm1), g);
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
    return DR_OK;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Section bytes for pieces len[0..n) (the lengths of all but each side's last travel). */
static size_t section_size(const uint32_t *len, size_t n, size_t sides, uint32_t degree, size_t w)
{
    size_t i, coefs = 0;
    for (i = 0; i < n; i++)
        coefs += segment_coefs(len[i], degree);
    return HEAD_BYTES + 4u * (n - sides) + w * coefs;
}

int dr_value_polyfit_encode(const float *val, size_t r, uint32_t degree, uint32_t flags,
                            uint32_t *perm_out, uint8_t *out, size_t cap, size_t *written,
                            void *work)
{
    uint32_t len[2 * DR_POLYFIT_MAX_PIECES];
    uint32_t *keys, *tmp_keys, *tmp_perm;
    size_t w = coef_width(flags), npos = 0, need, i, np, nn, pos = 0;
    side_t side[2];
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

    side[0].keys = keys;
    side[0].l = (uint32_t)npos;
    side[0].positive = 1;
    side[1].keys = keys + npos;
    side[1].l = (uint32_t)(r - npos);
    side[1].positive = 0;
    if (flags & DR_POLYFIT_KNOTS_REFERENCE) {
        np = knots_reference(&side[0], len);
        nn = knots_reference(&side[1], len + np);
    } else {
        np = knots_paper(&side[0], degree, len);
        nn = knots_paper(&side[1], degree, len + np);
    }
    need = section_size(len, np + nn, (np > 0) + (nn > 0), degree, w);
    if (cap < need)
        return DR_E_DST_TOO_SMALL;
    put_u32(out, (uint32_t)npos);
    out[4] = (uint8_t)np;
    out[5] = (uint8_t)nn;
    p = out + HEAD_BYTES;
    for (i = 0; i < np + nn; i++)
        if (i + 1 != np && i + 1 != np + nn) { /* each side's last length is implied */
            put_u32(p, len[i]);
            p += 4;
        }
    for (i = 0; i < np + nn; i++) {
        if (fit_piece(keys + pos, len[i], degree, w, p) != DR_OK)
            return DR_E_NUMERIC;
        p += w * segment_coefs(len[i], degree);
        pos += len[i];
    }
    *written = need;
    return DR_OK;
}

/* Reads the piece counts and lengths of one side of l values from *p (advancing it):
 * count pieces, all but the last listed, each >= 1, adding up to l. */
static int read_side(const uint8_t **p, const uint8_t *end, uint32_t count, uint32_t l,
                     uint32_t *len_out)
{
    uint64_t sum = 0;
    uint32_t i;
    if (count > DR_POLYFIT_MAX_PIECES || (count == 0) != (l == 0))
        return DR_E_CORRUPT;
    for (i = 0; i + 1 < count; i++) {
        if ((size_t)(end - *p) < 4)
            return DR_E_FRAME_SHORT;
        len_out[i] = get_u32(*p);
        *p += 4;
        sum += len_out[i];
        if (len_out[i] == 0 || sum >= l)
            return DR_E_CORRUPT;
    }
    if (count > 0)
        len_out[count - 1] = (uint32_t)(l - sum);
    return DR_OK;
}

int dr_value_polyfit_decode(const uint8_t *in, size_t len, size_t r, uint32_t degree,
                            uint32_t flags, float *val_out)
{
    uint32_t seg[2 * DR_POLYFIT_MAX_PIECES], npos;
    size_t w = coef_width(flags), nseg, need, s, pos = 0;
    const uint8_t *p;
    int st;

    if (!params_ok(degree, flags) || r > (size_t)UINT32_MAX || (r > 0 && val_out == NULL) ||
        (in == NULL && len > 0))
        return DR_E_ARG;
    if (len < HEAD_BYTES)
        return DR_E_FRAME_SHORT;
    npos = get_u32(in);
    if (npos > r)
        return DR_E_CORRUPT;
    p = in + HEAD_BYTES;
    st = read_side(&p, in + len, in[4], npos, seg);
    if (st == DR_OK)
        st = read_side(&p, in + len, in[5], (uint32_t)(r - npos), seg + in[4]);
    if (st != DR_OK)
        return st;
    nseg = (size_t)in[4] + in[5];
    need = section_size(seg, nseg, (in[4] > 0) + (in[5] > 0), degree, w);
    if (len < need)
        return DR_E_FRAME_SHORT;
    if (len > need)
        return DR_E_FRAME_FIELD;

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
