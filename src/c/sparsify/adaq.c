/* AdaComp-style selection: each sign gets its own threshold (from the sampled entries of
 * that sign, corrected against exact counts) and travels as indices plus one mean. */
#include "estimate.h"

#include <math.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

size_t dr_adaq_workspace_size(size_t n)
{
    return dr_sp_sample_size(n) * (sizeof(float) + sizeof(uint32_t));
}

size_t dr_adaq_bound(size_t n)
{
    return dr_frame_header_size(3) + 8u + 4u * n + DR_FRAME_TRAILER;
}

/* One sign's view of x: `sign` is +1 for the positives, -1 for the negatives, and an
 * entry belongs to the side when sign*x > 0. */
typedef struct {
    float sign;
    size_t total;  /* entries of this sign */
    float largest; /* their largest magnitude */
} side;

/* Entries of the side with magnitude >= thr. */
static size_t count_side(const float *x, size_t n, float sign, float thr)
{
    size_t i, c = 0;
    for (i = 0; i < n; i++) {
        float a = sign * x[i];
        c += (size_t)((a > 0.0f) & (a >= thr)); /* & not &&: no branch, vectorises */
    }
    return c;
}

/* The side's threshold: from its sampled magnitudes mag[0..m) (or its largest entry
 * when none was sampled), then corrected toward ceil(total*ratio) selected. */
static int side_threshold(const float *x, size_t n, const side *s, float ratio,
                          const float *mag, size_t m, uint32_t *rank_idx, float *thr_out,
                          size_t *selected)
{
    dr_sp_search search;
    size_t target, lo, hi, c;
    float thr = s->largest;
    int step, st;
    if (s->total == 0) {
        *thr_out = INFINITY;
        *selected = 0;
        return DR_OK;
    }
    target = (size_t)ceil((double)s->total * (double)ratio);
    if (m > 0) {
        st = dr_sp_kth_largest(mag, m, dr_sp_scaled_rank(target, m, s->total), rank_idx, &thr);
        if (st != DR_OK)
            return st;
    }
    dr_sp_band(target, &lo, &hi);
    dr_sp_search_init(&search);
    for (step = 0;; step++) {
        c = count_side(x, n, s->sign, thr);
        if ((c >= lo && c <= hi) || step == DR_DGC_MAX_ADJUST)
            break;
        thr = dr_sp_search_next(&search, thr, c, hi);
    }
    /* Still short of the band: ties move together (e.g. every entry of the side equal),
     * so no threshold reaches it and the search can end selecting nothing. A side that
     * never sends starves its error feedback forever, so fall back to the highest
     * threshold seen that selected too many. */
    if (c < lo && search.have_below) {
        thr = search.below;
        c = count_side(x, n, s->sign, thr);
    }
    *thr_out = thr;
    *selected = c;
    return DR_OK;
}

/* Move the positive samples to the front and the negative ones right after, as
 * magnitudes; zeros end up last. Returns the counts in *mp, *mn. */
static void split_sample(float *v, size_t m, size_t *mp, size_t *mn)
{
    size_t i, p = 0, q;
    for (i = 0; i < m; i++)
        if (v[i] > 0.0f) {
            float t = v[i];
            v[i] = v[p];
            v[p++] = t;
        }
    q = p;
    for (i = p; i < m; i++)
        if (v[i] < 0.0f) {
            float t = v[i];
            v[i] = v[q];
            v[q++] = -t;
        }
    *mp = p;
    *mn = q - p;
}

int dr_adaq_encode(const float *x, size_t n, float ratio, uint64_t key, uint8_t dtype,
                   void *work, uint8_t *buf, size_t cap, size_t *written)
{
    side pos = {1.0f, 0, 0.0f}, neg = {-1.0f, 0, 0.0f};
    float *sample = (float *)work, thr_pos, thr_neg, mean_pos, mean_neg;
    uint32_t *rank_idx;
    double sum_pos = 0.0, sum_neg = 0.0;
    size_t m, mp = 0, mn = 0, np, nn, i, total;
    dr_frame f;
    int st;
    if (written == NULL || buf == NULL || work == NULL || (n > 0 && x == NULL) ||
        !(ratio > 0.0f && ratio <= 1.0f) || dtype > DR_DTYPE_FLOAT64 || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    /* Counts and maxima by selects, not branches: the sign of a gradient is a coin toss.
     * Both maxima start at 0, so an entry of the other sign never moves them. Inf/NaN is
     * noted on the way (by its exponent bits) and refused after, so the loop vectorises. */
    {
        uint32_t non_finite = 0;
        for (i = 0; i < n; i++) {
            float v = x[i];
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            non_finite |= (u & 0x7f800000u) == 0x7f800000u;
            pos.total += (size_t)(v > 0.0f);
            neg.total += (size_t)(v < 0.0f);
            pos.largest = v > pos.largest ? v : pos.largest;
            neg.largest = -v > neg.largest ? -v : neg.largest;
        }
        if (non_finite)
            return DR_E_NUMERIC;
    }
    m = dr_sp_sample_size(n);
    rank_idx = (uint32_t *)(sample + m);
    if (n > 0) {
        dr_sp_sample(x, n, key, sample, m);
        split_sample(sample, m, &mp, &mn);
    }
    st = side_threshold(x, n, &pos, ratio, sample, mp, rank_idx, &thr_pos, &np);
    if (st == DR_OK)
        st = side_threshold(x, n, &neg, ratio, sample + mp, mn, rank_idx, &thr_neg, &nn);
    if (st != DR_OK)
        return st;

    memset(&f, 0, sizeof f);
    f.kind = DR_KIND_ADAQ;
    f.dtype = dtype;
    f.nsections = 3;
    f.numel = n;
    f.count = np + nn;
    f.section_len[0] = 8;
    f.section_len[1] = 4u * (uint64_t)np;
    f.section_len[2] = 4u * (uint64_t)nn;
    st = dr_frame_layout(&f, &total);
    if (st != DR_OK)
        return st;
    if (cap < total) {
        *written = total;
        return DR_E_DST_TOO_SMALL;
    }
    /* Indices go straight into the frame; uint32 stores are memcpy'd since the
     * section offsets need not be aligned. */
    np = nn = 0;
    for (i = 0; i < n; i++) {
        float v = x[i];
        uint32_t idx = (uint32_t)i;
        /* The rare test first: the sign alone is a coin toss the branch predictor
         * cannot learn. */
        if (v >= thr_pos && v > 0.0f) {
            memcpy(buf + f.section_off[1] + 4 * np++, &idx, 4);
            sum_pos += v;
        } else if (-v >= thr_neg && v < 0.0f) {
            memcpy(buf + f.section_off[2] + 4 * nn++, &idx, 4);
            sum_neg += v;
        }
    }
    mean_pos = np > 0 ? (float)(sum_pos / (double)np) : 0.0f;
    mean_neg = nn > 0 ? (float)(sum_neg / (double)nn) : 0.0f;
    memcpy(buf + f.section_off[0], &mean_pos, 4);
    memcpy(buf + f.section_off[0] + 4, &mean_neg, 4);
    return dr_frame_seal(&f, buf, cap, written);
}

/* Whether idx[0..r) are strictly ascending and below n. */
static int ascending_in_range(const uint8_t *p, size_t r, size_t n)
{
    uint32_t prev = 0, cur;
    size_t j;
    for (j = 0; j < r; j++) {
        memcpy(&cur, p + 4 * j, 4);
        if (cur >= n || (j > 0 && cur <= prev))
            return 0;
        prev = cur;
    }
    return 1;
}

/* Whether two strictly ascending lists share an index (a merge walk). */
static int overlap(const uint8_t *a, size_t ra, const uint8_t *b, size_t rb)
{
    size_t i = 0, j = 0;
    while (i < ra && j < rb) {
        uint32_t u, v;
        memcpy(&u, a + 4 * i, 4);
        memcpy(&v, b + 4 * j, 4);
        if (u == v)
            return 1;
        if (u < v)
            i++;
        else
            j++;
    }
    return 0;
}

int dr_adaq_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    size_t np, nn, j;
    float mean_pos, mean_neg;
    const uint8_t *ip, *in;
    int st = dr_frame_parse(buf, len, &f);
    if (st != DR_OK)
        return st;
    if (f.kind != DR_KIND_ADAQ || f.index_codec != DR_INDEX_RAW || f.value_codec != DR_VALUE_RAW)
        return DR_E_FRAME_CODEC;
    if (f.nsections != 3 || f.numel != (uint64_t)n || f.params[0] | f.params[1] | f.params[2] | f.params[3] ||
        f.section_len[0] != 8 || f.section_len[1] % 4 || f.section_len[2] % 4 ||
        f.count != (f.section_len[1] + f.section_len[2]) / 4)
        return DR_E_FRAME_FIELD;
    if (n > 0 && out == NULL)
        return DR_E_ARG;
    np = (size_t)f.section_len[1] / 4;
    nn = (size_t)f.section_len[2] / 4;
    memcpy(&mean_pos, buf + f.section_off[0], 4);
    memcpy(&mean_neg, buf + f.section_off[0] + 4, 4);
    ip = buf + f.section_off[1];
    in = buf + f.section_off[2];
    if (!(mean_pos >= 0.0f && isfinite(mean_pos)) || !(mean_neg <= 0.0f && isfinite(mean_neg)) ||
        !ascending_in_range(ip, np, n) || !ascending_in_range(in, nn, n) || overlap(ip, np, in, nn))
        return DR_E_CORRUPT;
    if (n > 0)
        memset(out, 0, n * sizeof *out);
    for (j = 0; j < np; j++) {
        uint32_t i;
        memcpy(&i, ip + 4 * j, 4);
        out[i] = mean_pos;
    }
    for (j = 0; j < nn; j++) {
        uint32_t i;
        memcpy(&i, in + 4 * j, 4);
        out[i] = mean_neg;
    }
    return DR_OK;
}
