/* AdaComp-style selection: each sign gets its own threshold (from the sampled entries of
 * that sign, corrected against exact counts) and travels as indices plus one mean.
 *
 * Where the time goes: the thresholds' counts and the selection would each be a sweep of
 * x (five or more in all). Instead, before touching x, each sign's sample gives a cut
 * well below the threshold the search will start from (the sampled magnitude at about
 * twice the target's rank), and ONE sweep of x counts the signs, finds their maxima and
 * Inf/NaN, and appends every entry at or beyond its sign's cut (a candidate: index and
 * value, in index order; ~2x the selection) to the workspace. Every count at a threshold
 * at or above the cut is then a count over the candidates, and so is the selection, in
 * the same index order: the frame is bit for bit what full sweeps give. A threshold the
 * search sends below a cut (the sample misled it by far more than the band), a side that
 * had no sample, and a cut that would take too many candidates fall back to sweeps of x.
 * Where no cut is taken (large ratios: the candidates would not fit), the one sweep
 * counts each side at its first threshold instead (see `side`), so the first counts
 * need no sweep of their own. The selection travels as two index lists, or, where that
 * frame is smaller (a dense selection), as a 2-bit sign map (sparsify.h), coded by the
 * sweep that would have staged the lists. */
#include "adaq_simd.h"
#include "estimate.h"
#include "stream_simd.h"
#include "../quant/qframe.h"
#include "size_math.h"

#include <math.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

/* Room for candidates: an eighth of the tensor (a 1% selection takes about 2%); none
 * below 4096 entries, where sweeping x per count costs little. */
static size_t candidate_cap(size_t n)
{
    return n >= 4096u ? n / 8u : 0u;
}

size_t dr_adaq_workspace_size(size_t n)
{
    /* The sample, the ranks dr_topk writes, each side's largest sampled magnitudes,
     * then the candidates' indices and values. */
    return dr_sp_sample_size(n) * (2u * sizeof(float) + sizeof(uint32_t)) +
           candidate_cap(n) * (sizeof(uint32_t) + sizeof(float));
}

size_t dr_adaq_bound(size_t n)
{
    return dr_size_add(dr_frame_header_size(3) + 8u + DR_FRAME_TRAILER, dr_size_mul(4u, n));
}

/* One sign's view of x: `sign` is +1 for the positives, -1 for the negatives, and an
 * entry belongs to the side when sign*x > 0. */
typedef struct {
    float sign;
    size_t total;      /* entries of this sign */
    float largest;     /* their largest magnitude */
    const float *mag;  /* the side's sampled magnitudes mag[0..m) */
    size_t m;
    float *top;        /* the side's r largest sampled magnitudes, unordered, when cut */
    size_t r;
    int has_cut;       /* whether the candidates hold every entry of the side with */
    float cut;         /* magnitude >= cut (> 0) */
    /* Where no cut is taken, the sweep counts at the side's first threshold: the sampled
     * magnitude at rank kk = round(ceil(total*ratio) * m / total) (first_threshold),
     * where the total is the sweep's own result. For a total much larger than m, kk is
     * round(ratio*m) or one more (the ceil adds less than m/total to the product), so
     * the sweep counts at both; any other kk is counted after the sweep, as before. */
    size_t probe_rank;     /* the first of the two ranks (0: no probes) */
    float probe_thr[2];    /* the sampled magnitudes at probe_rank and probe_rank + 1 */
    size_t probe_count[2]; /* the side's entries with magnitude >= probe_thr[j] */
} side;

/* What the counts and the selection read: x itself, and the candidates. */
typedef struct {
    const float *x;
    size_t n;
    const uint32_t *cand_idx;
    const float *cand_val;
    size_t ncand;
} source;

/* Entries of the side with magnitude >= thr in v[0..n). */
static size_t count_side(const float *v, size_t n, float sign, float thr)
{
    size_t i;
    uint32_t c = 0; /* n <= UINT32_MAX; 32-bit lanes where size_t took 64 */
    for (i = 0; i < n; i++) {
        float a = sign * v[i];
        c += (uint32_t)((a > 0.0f) & (a >= thr)); /* & not &&: no branch, vectorises */
    }
    return c;
}

/* Sampled entries the selections should hold: a few thousand place a threshold within a
 * few percent of its target rank (the relative error of a count estimated from j
 * sampled selections is about 1/sqrt(j)), well inside the band of 30%. */
#define SAMPLED_SELECTIONS 2560u

/* The sample's size: 1% of n (dgc's), or fewer where a large ratio reaches
 * SAMPLED_SELECTIONS with fewer (each sampled entry is a cache and TLB miss: 255k of
 * them took 3-4 ms of a 25.6M encode at ratio 0.3, which 8.5k place as well). */
static size_t sample_size(size_t n, float ratio)
{
    size_t m = dr_sp_sample_size(n);
    /* In double: at a tiny ratio the quotient overflows a size_t. */
    double enough = ceil((double)SAMPLED_SELECTIONS / (double)ratio);
    return (double)m < enough ? m : (size_t)enough;
}

/* The entries the side should select: ceil(total*ratio). */
static size_t target_of(const side *s, float ratio)
{
    return (size_t)ceil((double)s->total * (double)ratio);
}

/* Whether the side's count at thr must sweep x: the candidates do not hold every entry
 * it counts. */
static int counts_from_x(const side *s, float thr)
{
    return s->total > 0 && !(s->has_cut && thr >= s->cut);
}

/* The same count, over the candidates when they hold every entry it counts (none for an
 * empty side). */
static size_t count_at(const source *src, const side *s, float thr)
{
    if (s->total == 0)
        return 0;
    if (!counts_from_x(s, thr))
        return count_side(src->cand_val, src->ncand, s->sign, thr);
    return count_side(src->x, src->n, s->sign, thr);
}

/* count_side for both sides in one sweep of x (the first counts of a large ratio, where
 * there are no candidates and each count would be a sweep of its own). */
static void count_both(const float *x, size_t n, float thr_pos, float thr_neg, size_t *cp,
                       size_t *cn)
{
    size_t i;
    uint32_t p = 0, q = 0;
    for (i = 0; i < n; i++) {
        float a = x[i], b = -x[i];
        p += (uint32_t)((a > 0.0f) & (a >= thr_pos));
        q += (uint32_t)((b > 0.0f) & (b >= thr_neg));
    }
    *cp = p;
    *cn = q;
}

/* The side's first threshold: its sampled magnitude at the target's rank, or its largest
 * entry when none was sampled (+Inf for an empty side); and in *count the side's count
 * there when the sweep made it at a probe, else SIZE_MAX. */
static int first_threshold(const side *s, float ratio, uint32_t *rank_idx, float *thr, size_t *count)
{
    size_t kk;
    *thr = s->total == 0 ? INFINITY : s->largest;
    *count = SIZE_MAX;
    if (s->total == 0 || s->m == 0)
        return DR_OK;
    kk = dr_sp_scaled_rank(target_of(s, ratio), s->m, s->total);
    if (s->probe_rank != 0 && kk >= s->probe_rank && kk - s->probe_rank < 2) {
        *thr = s->probe_thr[kk - s->probe_rank];
        *count = s->probe_count[kk - s->probe_rank];
        return DR_OK;
    }
    /* The kk-th largest sample is among the r largest when kk <= r. */
    return s->has_cut && kk <= s->r ? dr_sp_kth_largest(s->top, s->r, kk, rank_idx, thr)
                                    : dr_sp_kth_largest(s->mag, s->m, kk, rank_idx, thr);
}

/* The side's threshold, corrected from *thr (which selects *selected entries) toward
 * ceil(total*ratio) selected. */
static void correct_threshold(const source *src, const side *s, float ratio, float *thr,
                              size_t *selected)
{
    dr_sp_search search;
    size_t lo, hi, c = *selected;
    int step;
    dr_sp_band(target_of(s, ratio), &lo, &hi);
    dr_sp_search_init(&search);
    for (step = 0; !(c >= lo && c <= hi) && step < DR_DGC_MAX_ADJUST; step++) {
        *thr = dr_sp_search_next(&search, *thr, c, hi);
        c = count_at(src, s, *thr);
    }
    /* Still short of the band: ties move together (e.g. every entry of the side equal),
     * so no threshold reaches it and the search can end selecting nothing. A side that
     * never sends starves its error feedback forever, so fall back to the highest
     * threshold seen that selected too many. */
    if (c < lo && search.have_below) {
        *thr = search.below;
        c = count_at(src, s, *thr);
    }
    *selected = c;
}

/* Move the positive samples to the front and the negative ones right after, as
 * magnitudes, through `spare` (room for m); zeros are dropped. Without a branch per
 * sample (its sign is a coin toss): each is stored on both sides and kept on one.
 * Returns the counts in *mp, *mn. */
static void split_sample(float *v, size_t m, float *spare, size_t *mp, size_t *mn)
{
    size_t i, p = 0, q = 0;
    for (i = 0; i < m; i++) {
        float s = v[i];
        v[p] = s; /* p <= i: v[i] is read before it is overwritten */
        spare[q] = -s;
        p += (size_t)(s > 0.0f);
        q += (size_t)(s < 0.0f);
    }
    memcpy(v + p, spare, q * sizeof *v);
    *mp = p;
    *mn = q;
}

/* How many of the side's largest samples to keep for its cut: about twice the rank the
 * search starts from (ceil(ratio*m), give or take the rounding of the sign's true count)
 * plus a margin, so the true threshold is above the cut unless the sample is off by far
 * more than the band allows. */
static size_t cut_rank(const side *s, float ratio)
{
    size_t r = 2u * (size_t)ceil((double)s->m * (double)ratio) + 16u;
    return r < s->m ? r : s->m;
}

/* The side's cut: its r largest samples into s->top, the least of them. */
static int take_cut(side *s, uint32_t *rank_idx)
{
    size_t j;
    int st = dr_topk(s->mag, s->m, s->r, rank_idx);
    if (st != DR_OK)
        return st;
    s->cut = INFINITY;
    for (j = 0; j < s->r; j++) {
        s->top[j] = s->mag[rank_idx[j]];
        s->cut = s->top[j] < s->cut ? s->top[j] : s->cut;
    }
    s->has_cut = 1;
    return DR_OK;
}

/* The side's probes (see `side`): the sampled magnitudes at ranks kk = round(ratio*m)
 * and kk + 1 (kk when kk = m), from one selection of the kk + 1 largest: the least of
 * them and the least but one. */
static int take_probes(side *s, float ratio, uint32_t *rank_idx)
{
    size_t kk, k1, j;
    float least = INFINITY, second = INFINITY;
    int st;
    if (s->m == 0)
        return DR_OK;
    kk = (size_t)((double)ratio * (double)s->m + 0.5);
    kk = kk < 1u ? 1u : (kk > s->m ? s->m : kk);
    k1 = kk < s->m ? kk + 1 : kk;
    st = dr_topk(s->mag, s->m, k1, rank_idx);
    if (st != DR_OK)
        return st;
    for (j = 0; j < k1; j++) {
        float v = s->mag[rank_idx[j]];
        second = v < least ? least : (v < second ? v : second);
        least = v < least ? v : least;
    }
    s->probe_rank = kk;
    s->probe_thr[0] = k1 > kk ? second : least;
    s->probe_thr[1] = least;
    return DR_OK;
}

/* One entry's part of the tally, from its bit pattern u. */
static void tally_entry(dr_adaq_tally *t, uint32_t u)
{
    t->pos += (size_t)((int32_t)u > 0);
    t->neg += (size_t)(u > 0x80000000u);
    t->smax = (int32_t)u > t->smax ? (int32_t)u : t->smax;
    t->umax = u > t->umax ? u : t->umax;
}

/* The sweep: tally the signs and append the candidates (bit patterns at or beyond pkey
 * or nkey, see adaq_simd.h). Returns 0 when the candidates outgrew cap (the tally is
 * still whole). */
static int sweep(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint32_t *idx, float *val,
                 size_t cap, size_t *count, dr_adaq_tally *t)
{
    size_t i = 0, c = 0;
    int fits = 1;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_adaq_sweep_avx512(x, n, pkey, nkey, idx, val, cap, &c, t);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_adaq_sweep_avx2(x, n, pkey, nkey, idx, val, cap, &c, t);
#endif
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        tally_entry(t, u);
        if ((int32_t)u >= (int32_t)pkey || u >= nkey) {
            if (c == cap)
                fits = 0;
            else {
                idx[c] = (uint32_t)i;
                val[c++] = x[i];
            }
        }
    }
    *count = c;
    return fits;
}

/* A float from its bit pattern. */
static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The least pattern a side takes at threshold thr, for x without Inf/NaN (adaq_simd.h:
 * the positives taken are (int32)u >= (int32)key, the negatives u >= 0x80000000 | key):
 * thr's own bits, or those of the least positive float when thr <= 0 (every entry of
 * the side, as the float compares v > 0 && v >= thr take; never a zero). */
static uint32_t taken_key(float thr)
{
    uint32_t u = 1u;
    if (thr > 0.0f)
        memcpy(&u, &thr, sizeof u);
    return u;
}

/* Keys that take no finite entry: only NaN patterns reach them, and a tensor with NaN is
 * refused after the sweep. */
#define NO_POSITIVE_KEY 0x7fffffffu
#define NO_NEGATIVE_KEY 0xffffffffu

/* The sweep where no cut is taken: the tally, and each side's counts at its probes. */
static void count_sweep(const float *x, size_t n, side *pos, side *neg, dr_adaq_tally *t)
{
    uint32_t key[DR_ADAQ_PROBES] = {NO_POSITIVE_KEY, NO_POSITIVE_KEY, NO_NEGATIVE_KEY, NO_NEGATIVE_KEY};
    size_t at[DR_ADAQ_PROBES] = {0, 0, 0, 0}, i = 0;
    int p;
    if (pos->probe_rank != 0) {
        key[0] = taken_key(pos->probe_thr[0]);
        key[1] = taken_key(pos->probe_thr[1]);
    }
    if (neg->probe_rank != 0) {
        key[2] = 0x80000000u | taken_key(neg->probe_thr[0]);
        key[3] = 0x80000000u | taken_key(neg->probe_thr[1]);
    }
#if DR_HAVE_X86_SIMD
    {
        int simd = dr_simd_active();
        if (simd >= DR_SIMD_AVX512)
            i = dr_adaq_count_avx512(x, n, key, t, at);
        else if (simd >= DR_SIMD_AVX2)
            i = dr_adaq_count_avx2(x, n, key, t, at);
    }
#endif
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        tally_entry(t, u);
        for (p = 0; p < DR_ADAQ_PROBES; p++)
            at[p] += (size_t)(p < 2 ? (int32_t)u >= (int32_t)key[p] : u >= key[p]);
    }
    pos->probe_count[0] = at[0];
    pos->probe_count[1] = at[1];
    neg->probe_count[0] = at[2];
    neg->probe_count[1] = at[3];
}

/* v as a double where take is 1, +0.0 where it is 0, without a branch. Adding +0.0
 * leaves a partial sum of one sign as it was (it is never -0.0), so a sum gets the same
 * bits whether the entries not taken are skipped or added as +0.0. */
static double masked(float v, size_t take)
{
    double d = (double)v;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    u &= (uint64_t)0 - (uint64_t)take;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The lanes' partial sums added pairwise (sparsify.h: partial l += partial l + h for
 * l < h, h = 8, 4, 2, 1). */
static double lanes_total(double *sum)
{
    unsigned h, l;
    for (h = DR_ADAQ_LANES / 2; h > 0; h /= 2)
        for (l = 0; l < h; l++)
            sum[l] += sum[l + h];
    return sum[0];
}

/* Both sides' selections among the candidates: the indices written to dst_pos and
 * dst_neg in index order, their counts to *np and *nn, their values added to the lanes'
 * partial sums psum and nsum (as full sweeps of x add them). One pass without a branch
 * per candidate: each candidate's index is stored at both sides' next slots and a slot
 * is kept only when taken. So the stores past a side's last entry land on the slot after
 * it: for the negatives the trailer (sealed after), for the positives the negatives'
 * first slot (section 2 follows section 1 directly), put back at the end. */
static void take_candidates(const source *src, uint32_t pkey, uint32_t nkey, uint8_t *dst_pos,
                            uint8_t *dst_neg, size_t *np, size_t *nn, double *psum, double *nsum)
{
    size_t j, kp = 0, kn = 0;
    uint32_t first_neg = 0;
    for (j = 0; j < src->ncand; j++) {
        float v = src->cand_val[j];
        uint32_t idx = src->cand_idx[j], u;
        size_t tp, tn;
        memcpy(&u, &v, sizeof u);
        tp = (size_t)((int32_t)u >= (int32_t)pkey);
        tn = (size_t)(u >= nkey);
        memcpy(dst_pos + 4 * kp, &idx, 4);
        memcpy(dst_neg + 4 * kn, &idx, 4);
        first_neg = kn == 0 ? idx : first_neg;
        kp += tp;
        kn += tn;
        psum[idx % DR_ADAQ_LANES] += masked(v, tp);
        nsum[idx % DR_ADAQ_LANES] += masked(v, tn);
    }
    if (kn > 0)
        memcpy(dst_neg, &first_neg, 4);
    *np = kp;
    *nn = kn;
}

/* Entries per block of take_swept: its staged indices sit in arrays on the stack, with
 * room for a vector's stores past the last. */
#define TAKE_BLOCK 512
#define TAKE_ROOM (TAKE_BLOCK + 16)

/* Both sides' selections swept from x itself, where no cut holds them (large ratios),
 * with what take_candidates writes. Block by block, each entry's index is staged at
 * both sides' next slots and a slot is kept only when taken, without a branch, and its
 * value added to its lane's partial sum (+0.0 when not taken); then each side's slots
 * are copied out. The vector paths stage and add whole vectors of a block the same way
 * (adaq_simd.h). (An element-by-element loop with a branch per entry mispredicted on
 * most of the entries a large ratio takes: a 30% selection of 25.6M N(0,1) floats, 140
 * ms, when such a selection still sent lists; one sum per side in index order made each
 * addition wait for the one before.) */
static void take_swept(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint8_t *dst_pos,
                       uint8_t *dst_neg, size_t *np, size_t *nn, double *psum, double *nsum)
{
    uint32_t pidx[TAKE_ROOM], nidx[TAKE_ROOM];
    size_t start, j, kp, kn, tp = 0, tn = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
#endif
    for (start = 0; start < n; start += TAKE_BLOCK) {
        size_t len = n - start < TAKE_BLOCK ? n - start : TAKE_BLOCK;
        kp = kn = 0;
        j = 0;
#if DR_HAVE_X86_SIMD
        if (simd >= DR_SIMD_AVX512)
            j = dr_adaq_stage_avx512(x + start, start, len, pkey, nkey, pidx, &kp, psum, nidx, &kn, nsum);
        else if (simd >= DR_SIMD_AVX2)
            j = dr_adaq_stage_avx2(x + start, start, len, pkey, nkey, pidx, &kp, psum, nidx, &kn, nsum);
#endif
        for (; j < len; j++) {
            float v = x[start + j];
            size_t i = start + j, taken_p, taken_n;
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            taken_p = (size_t)((int32_t)u >= (int32_t)pkey);
            taken_n = (size_t)(u >= nkey);
            pidx[kp] = nidx[kn] = (uint32_t)i;
            kp += taken_p;
            kn += taken_n;
            psum[i % DR_ADAQ_LANES] += masked(v, taken_p);
            nsum[i % DR_ADAQ_LANES] += masked(v, taken_n);
        }
        memcpy(dst_pos + 4 * tp, pidx, 4 * kp);
        memcpy(dst_neg + 4 * tn, nidx, 4 * kn);
        tp += kp;
        tn += kn;
    }
    *np = tp;
    *nn = tn;
}

/* Both sides' selections as the sign map (sparsify.h) in codes[0..ceil(n/4)), from a
 * sweep of x, with the sums take_swept adds. The vector paths code whole vectors; the
 * rest of the entries are OR-ed into cleared bytes here. (Where a selection is dense the
 * map is the smaller frame, and its sweep appends nothing: at 0.3 of 25.6M N(0,1) floats
 * 29.7 MB of lists became 6.4 MB of codes.) */
static void take_map(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint8_t *codes, double *psum,
                     double *nsum)
{
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        i = dr_adaq_map_avx512(x, n, pkey, nkey, codes, psum, nsum);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_adaq_map_avx2(x, n, pkey, nkey, codes, psum, nsum);
#endif
    memset(codes + i / 4, 0, dr_qf_crumb_bytes(n) - i / 4);
    for (; i < n; i++) {
        float v = x[i];
        uint32_t u;
        size_t taken_p, taken_n;
        memcpy(&u, &v, sizeof u);
        taken_p = (size_t)((int32_t)u >= (int32_t)pkey);
        taken_n = (size_t)(u >= nkey);
        codes[i / 4] |= (uint8_t)((taken_p | taken_n << 1) << (2 * (i % 4)));
        psum[i % DR_ADAQ_LANES] += masked(v, taken_p);
        nsum[i % DR_ADAQ_LANES] += masked(v, taken_n);
    }
}

/* Both sides' selections (magnitude >= their thresholds) written to the frame f lays out
 * in buf, and their sums (sparsify.h) to *sum_pos and *sum_neg. The lists, with their
 * lengths in *np and *nn: from the candidates where both sides' cuts hold their
 * selections, else from a sweep of x; the sign map from a sweep of x. */
static void take(const source *src, int from_candidates, float thr_pos, float thr_neg, const dr_frame *f,
                 uint8_t *buf, size_t *np, size_t *nn, double *sum_pos, double *sum_neg)
{
    double psum[DR_ADAQ_LANES] = {0}, nsum[DR_ADAQ_LANES] = {0};
    uint32_t pkey = taken_key(thr_pos), nkey = 0x80000000u | taken_key(thr_neg);
    uint8_t *first = buf + f->section_off[1], *second = buf + f->section_off[2];
    if (f->params[0] == DR_ADAQ_SIGN_MAP)
        take_map(src->x, src->n, pkey, nkey, first, psum, nsum);
    else if (from_candidates)
        take_candidates(src, pkey, nkey, first, second, np, nn, psum, nsum);
    else
        take_swept(src->x, src->n, pkey, nkey, first, second, np, nn, psum, nsum);
    *sum_pos = lanes_total(psum);
    *sum_neg = lanes_total(nsum);
}

/* Lays out the frame of a selection of np positives and nn negatives in *f: the sign map
 * where its frame is smaller than the lists' (sparsify.h), else the lists. */
static int adaq_layout(dr_frame *f, uint8_t dtype, size_t n, size_t np, size_t nn, size_t *total)
{
    size_t lists = dr_frame_header_size(3) + 4u * (np + nn), map = dr_frame_header_size(2) + dr_qf_crumb_bytes(n);
    memset(f, 0, sizeof *f);
    f->kind = DR_KIND_ADAQ;
    f->dtype = dtype;
    f->numel = n;
    f->count = np + nn;
    f->section_len[0] = 8;
    if (map < lists) {
        f->params[0] = DR_ADAQ_SIGN_MAP;
        f->nsections = 2;
        f->section_len[1] = dr_qf_crumb_bytes(n);
    } else {
        f->params[0] = DR_ADAQ_LISTS;
        f->nsections = 3;
        f->section_len[1] = 4u * (uint64_t)np;
        f->section_len[2] = 4u * (uint64_t)nn;
    }
    return dr_frame_layout(f, total);
}

int dr_adaq_encode(const float *x, size_t n, float ratio, uint64_t key, uint8_t dtype,
                   void *work, uint8_t *buf, size_t cap, size_t *written)
{
    side pos, neg;
    source src;
    dr_adaq_tally tally = {0, 0, 0, 0};
    float *sample = (float *)work, thr_pos, thr_neg, mean_pos, mean_neg;
    uint32_t *rank_idx, pkey = NO_POSITIVE_KEY, nkey = NO_NEGATIVE_KEY; /* no candidates */
    double sum_pos = 0.0, sum_neg = 0.0;
    size_t m, mp = 0, mn = 0, np, nn, total, ncap;
    dr_frame f;
    int st, cut;
    if (written == NULL || buf == NULL || work == NULL || (n > 0 && x == NULL) ||
        !(ratio > 0.0f && ratio <= 1.0f) || dtype > DR_DTYPE_FLOAT64 || n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    m = sample_size(n, ratio);
    rank_idx = (uint32_t *)(sample + m);
    ncap = candidate_cap(n);
    if (n > 0) {
        dr_random_sample(x, n, key, sample, m);
        split_sample(sample, m, (float *)(rank_idx + m), &mp, &mn);
    }
    memset(&pos, 0, sizeof pos);
    memset(&neg, 0, sizeof neg);
    pos.sign = 1.0f;
    neg.sign = -1.0f;
    pos.mag = sample;
    pos.m = mp;
    pos.top = (float *)(rank_idx + m);
    neg.mag = sample + mp;
    neg.m = mn;
    neg.top = pos.top + mp;
    pos.r = cut_rank(&pos, ratio);
    neg.r = cut_rank(&neg, ratio);
    /* Cut only when the candidates expected (r of m samples stand for r*n/m entries)
     * fill at most half the room: a large ratio probes its first counts instead. */
    cut = (double)(pos.r + neg.r) * ((double)n / (double)m) <= 0.5 * (double)ncap;
    if (cut) {
        if (pos.m > 0) {
            st = take_cut(&pos, rank_idx);
            if (st != DR_OK)
                return st;
            memcpy(&pkey, &pos.cut, sizeof pkey);
        }
        if (neg.m > 0) {
            st = take_cut(&neg, rank_idx);
            if (st != DR_OK)
                return st;
            memcpy(&nkey, &neg.cut, sizeof nkey);
            nkey |= 0x80000000u;
        }
    } else {
        st = take_probes(&pos, ratio, rank_idx);
        if (st == DR_OK)
            st = take_probes(&neg, ratio, rank_idx);
        if (st != DR_OK)
            return st;
    }
    src.x = x;
    src.n = n;
    src.cand_idx = (uint32_t *)(pos.top + m);
    src.cand_val = (float *)(src.cand_idx + ncap);
    src.ncand = 0;
    if (!cut)
        count_sweep(x, n, &pos, &neg, &tally);
    else if (!sweep(x, n, pkey, nkey, (uint32_t *)src.cand_idx, (float *)src.cand_val, ncap,
                    &src.ncand, &tally))
        pos.has_cut = neg.has_cut = 0;
    /* Inf/NaN: a positive pattern at or past +Inf's is the largest as int32, a negative
     * one at or past -Inf's the largest as uint32. */
    if (tally.smax >= 0x7f800000 || tally.umax >= 0xff800000u)
        return DR_E_NUMERIC;
    pos.total = tally.pos;
    neg.total = tally.neg;
    pos.largest = from_bits((uint32_t)tally.smax);
    neg.largest = tally.umax > 0x80000000u ? from_bits(tally.umax & 0x7fffffffu) : 0.0f;

    st = first_threshold(&pos, ratio, rank_idx, &thr_pos, &np);
    if (st == DR_OK)
        st = first_threshold(&neg, ratio, rank_idx, &thr_neg, &nn);
    if (st != DR_OK)
        return st;
    if (np == SIZE_MAX && nn == SIZE_MAX && counts_from_x(&pos, thr_pos) && counts_from_x(&neg, thr_neg)) {
        count_both(x, n, thr_pos, thr_neg, &np, &nn);
    } else {
        np = np == SIZE_MAX ? count_at(&src, &pos, thr_pos) : np;
        nn = nn == SIZE_MAX ? count_at(&src, &neg, thr_neg) : nn;
    }
    correct_threshold(&src, &pos, ratio, &thr_pos, &np);
    correct_threshold(&src, &neg, ratio, &thr_neg, &nn);

    st = adaq_layout(&f, dtype, n, np, nn, &total);
    if (st != DR_OK)
        return st;
    if (cap < total) {
        *written = total;
        return DR_E_DST_TOO_SMALL;
    }
    take(&src,
         (pos.total == 0 || (pos.has_cut && thr_pos >= pos.cut)) &&
             (neg.total == 0 || (neg.has_cut && thr_neg >= neg.cut)),
         thr_pos, thr_neg, &f, buf, &np, &nn, &sum_pos, &sum_neg);
    mean_pos = np > 0 ? (float)(sum_pos / (double)np) : 0.0f;
    mean_neg = nn > 0 ? (float)(sum_neg / (double)nn) : 0.0f;
    memcpy(buf + f.section_off[0], &mean_pos, 4);
    memcpy(buf + f.section_off[0] + 4, &mean_neg, 4);
    return dr_frame_seal(&f, buf, cap, written);
}

static uint32_t index_at(const uint8_t *p, size_t j)
{
    uint32_t v;
    memcpy(&v, p + 4 * j, 4);
    return v;
}

/* Whether idx[0..r) are strictly ascending and below n: the last below n, and each above
 * the one before, by an OR with no early exit (the loop vectorises). */
static int ascending_in_range(const uint8_t *p, size_t r, size_t n)
{
    uint32_t descents = 0;
    size_t j;
    for (j = 1; j < r; j++)
        descents |= (uint32_t)(index_at(p, j) <= index_at(p, j - 1));
    return r == 0 || (descents == 0 && index_at(p, r - 1) < n);
}

/* The first j in [i, r) with list[j] >= end, for a strictly ascending list whose entries
 * from i on are >= end - span (so at most `span` of them are below end). A step of 16
 * entries (a cache line) needs a look at its last entry only, then single steps: the
 * list is read in order, as the loop that then walks the same entries reads it. (A
 * binary search missed the cache on most of its looks: 15 ms of a 25.6M decode.) */
static size_t first_at_or_past(const uint8_t *list, size_t i, size_t r, uint64_t end, size_t span)
{
    size_t hi = r - i < span ? r : i + span;
    while (i + 16 <= hi && index_at(list, i + 15) < end)
        i += 16;
    while (i < hi && index_at(list, i) < end)
        i++;
    return i;
}

/* Indices covered by one window of overlap's byte map (16 KB: it stays in L1). */
#define OVERLAP_WINDOW 16384u

/* Whether two strictly ascending lists (checked before) share an index. Window by window
 * (aligned to OVERLAP_WINDOW, starting at the lower of the lists' next entries, so a
 * sparse list skips empty windows), a's entries mark a byte map and b's read it: a store
 * or a load per entry with no chain between entries, the window's entries found by a
 * search for its end. (A merge walk of the two lists made each step wait for the load of
 * the step before: about 8 cycles per entry, 20 ms for adaq at 0.3 of 25.6M when that
 * still sent lists; a bit map made neighbours in one word wait on each other's store.) */
static int overlap(const uint8_t *a, size_t ra, const uint8_t *b, size_t rb)
{
    uint8_t marked[OVERLAP_WINDOW];
    size_t i = 0, j = 0, k;
    uint8_t shared = 0;
    while (i < ra && j < rb && !shared) {
        uint32_t u = index_at(a, i), v = index_at(b, j);
        uint32_t base = (u < v ? u : v) & ~(OVERLAP_WINDOW - 1u);
        uint64_t end = (uint64_t)base + OVERLAP_WINDOW;
        size_t i_end = first_at_or_past(a, i, ra, end, OVERLAP_WINDOW);
        size_t j_end = first_at_or_past(b, j, rb, end, OVERLAP_WINDOW);
        memset(marked, 0, sizeof marked);
        for (k = i; k < i_end; k++)
            marked[index_at(a, k) - base] = 1;
        for (k = j; k < j_end; k++)
            shared |= marked[index_at(b, k) - base];
        i = i_end;
        j = j_end;
    }
    return shared;
}

/* A frame's parts, after every check the decoders make but the lists' overlap. */
typedef struct {
    size_t np, nn;
    float mean_pos, mean_neg;
    const uint8_t *ip, *in; /* the positives' and negatives' indices (DR_ADAQ_LISTS) */
    const uint8_t *map;     /* the sign map (DR_ADAQ_SIGN_MAP), else NULL */
} adaq_parts;

/* The sign map's checks, once its frame's fields are: DR_E_CORRUPT for bits set past n,
 * a code 3, or a count of codes other than the frame's. */
static int check_map(const uint8_t *map, size_t n, uint64_t count)
{
    size_t sent;
    if (!dr_qf_padding_clear(map, n, 2))
        return DR_E_CORRUPT;
    if (dr_qf_crumbs_check(map, n, &sent) != DR_OK || (uint64_t)sent != count)
        return DR_E_CORRUPT;
    return DR_OK;
}

static int adaq_parse(const uint8_t *buf, size_t len, const float *out, size_t n, adaq_parts *p)
{
    dr_frame f;
    int st = dr_frame_parse(buf, len, &f);
    if (st != DR_OK)
        return st;
    if (f.kind != DR_KIND_ADAQ || f.index_codec != DR_INDEX_RAW || f.value_codec != DR_VALUE_RAW)
        return DR_E_FRAME_CODEC;
    if (f.numel != (uint64_t)n || f.params[1] | f.params[2] | f.params[3] || f.section_len[0] != 8)
        return DR_E_FRAME_FIELD;
    if (f.params[0] == DR_ADAQ_LISTS) {
        if (f.nsections != 3 || f.section_len[1] % 4 || f.section_len[2] % 4 ||
            f.count != (f.section_len[1] + f.section_len[2]) / 4)
            return DR_E_FRAME_FIELD;
    } else if (f.params[0] != DR_ADAQ_SIGN_MAP || f.nsections != 2 ||
               f.section_len[1] != (uint64_t)dr_qf_crumb_bytes(n) || f.count > f.numel) {
        return DR_E_FRAME_FIELD;
    }
    if (n > 0 && out == NULL)
        return DR_E_ARG;
    memcpy(&p->mean_pos, buf + f.section_off[0], 4);
    memcpy(&p->mean_neg, buf + f.section_off[0] + 4, 4);
    if (!(p->mean_pos >= 0.0f && isfinite(p->mean_pos)) || !(p->mean_neg <= 0.0f && isfinite(p->mean_neg)))
        return DR_E_CORRUPT;
    if (f.params[0] == DR_ADAQ_SIGN_MAP) {
        p->np = p->nn = 0;
        p->ip = p->in = NULL;
        p->map = buf + f.section_off[1];
        return check_map(p->map, n, f.count);
    }
    p->map = NULL;
    p->np = (size_t)f.section_len[1] / 4;
    p->nn = (size_t)f.section_len[2] / 4;
    p->ip = buf + f.section_off[1];
    p->in = buf + f.section_off[2];
    if (!ascending_in_range(p->ip, p->np, n) || !ascending_in_range(p->in, p->nn, n))
        return DR_E_CORRUPT;
    return DR_OK;
}

/* What write_lists does to out. */
typedef enum { PUT, ADD } write_mode;

/* Indices per block of the decoders' writes (16 KB of out: in L1 while both lists reach
 * it). */
#define WRITE_BLOCK 4096u

/* out[list[i]] = v (PUT) or += v (ADD) for list[i..end_i); base is out's index 0. */
static void write_side(float *out, const uint8_t *list, size_t i, size_t end_i, float v,
                       write_mode mode)
{
    if (mode == ADD)
        for (; i < end_i; i++)
            out[index_at(list, i)] += v;
    else
        for (; i < end_i; i++)
            out[index_at(list, i)] = v;
}

/* out[i] = mean_pos / mean_neg at the lists' indices (PUT) or += (ADD), block by block of
 * out: both lists' entries in a block land while its lines are in cache, where a walk of
 * one list and then the other read and wrote every line of a dense selection twice. */
static void write_lists(float *out, size_t n, const adaq_parts *p, write_mode mode)
{
    size_t base, i = 0, j = 0;
    for (base = 0; base < n && (i < p->np || j < p->nn); base += WRITE_BLOCK) {
        uint64_t end = (uint64_t)base + WRITE_BLOCK;
        size_t i_end = first_at_or_past(p->ip, i, p->np, end, WRITE_BLOCK);
        size_t j_end = first_at_or_past(p->in, j, p->nn, end, WRITE_BLOCK);
        write_side(out, p->ip, i, i_end, p->mean_pos, mode);
        write_side(out, p->in, j, j_end, p->mean_neg, mode);
        i = i_end;
        j = j_end;
    }
}

/* out[t] = value[mark[t]] for t < len (marks 0, 1 or 2), streamed where `stream` is set
 * (out 16-byte aligned) by the vector paths. */
static void expand_marks(const uint8_t *mark, size_t len, const float *value, float *out, int stream)
{
    size_t t = 0;
#if DR_HAVE_X86_SIMD
    int simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512)
        t = dr_adaq_expand_avx512(mark, len, value, out, stream);
    else if (simd >= DR_SIMD_AVX2)
        t = dr_adaq_expand_avx2(mark, len, value, out, stream);
#else
    (void)stream; /* the loop below stores through the cache */
#endif
    for (; t < len; t++)
        out[t] = value[mark[t]];
}

/* dr_adaq_decode of a dense selection, checking the lists' overlap as it writes: block
 * by block, a byte per entry says which list holds it (cleared, 1 at the positives'
 * indices, then 2 at the negatives', each looking at what it replaces), and the marks
 * are expanded to out (0, mean_pos or mean_neg), streamed past the cache when out is
 * large. Returns whether the lists share an index; out is then unspecified. One read of
 * each list where a check before the writes read them again, and a quarter of the
 * bytes cleared and read back that a block of floats built in cache took (25.6M at
 * 0.3, when that still sent lists: 13 ms with a check first; 10.3 with the block of
 * floats; 6.7 with the marks). Lists this dense are now sent from one entry in 64 to
 * about one in 16; denser selections send the sign map. */
static int write_dense_checked(float *out, size_t n, const adaq_parts *p)
{
    uint8_t mark[WRITE_BLOCK], replaced = 0;
    float value[3] = {0.0f, p->mean_pos, p->mean_neg}; /* by mark */
    size_t base, i = 0, j = 0, k;
    int stream = dr_stream_output(out, n);
    for (base = 0; base < n; base += WRITE_BLOCK) {
        size_t len = n - base < WRITE_BLOCK ? n - base : WRITE_BLOCK;
        uint64_t end = (uint64_t)base + len;
        size_t i_end = first_at_or_past(p->ip, i, p->np, end, WRITE_BLOCK);
        size_t j_end = first_at_or_past(p->in, j, p->nn, end, WRITE_BLOCK);
        memset(mark, 0, len);
        for (k = i; k < i_end; k++)
            mark[index_at(p->ip, k) - base] = 1;
        for (k = j; k < j_end; k++) {
            uint8_t *slot = mark + (index_at(p->in, k) - base);
            replaced |= *slot;
            *slot = 2;
        }
        expand_marks(mark, len, value, out + base, stream);
        i = i_end;
        j = j_end;
    }
#if DR_HAVE_X86_SIMD
    if (stream)
        dr_stream_fence();
#endif
    return replaced != 0;
}

/* Below one selected entry per SPARSE_SPACING elements (about 1.6%), dr_adaq_decode
 * clears out in one go and then writes the entries: the clear streams past the cache and
 * the entries touch few lines. Above it, each block is marked in cache and expanded. */
#define SPARSE_SPACING 64u

/* out[i] = (PUT) or += (ADD) the mean of entry i's code in the sign map. */
static void write_map(float *out, size_t n, const adaq_parts *p, write_mode mode)
{
    const float value[3] = {0.0f, p->mean_pos, p->mean_neg}; /* by code */
    dr_qf_crumb_values(p->map, n, value, out, mode == ADD);
}

int dr_adaq_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    adaq_parts p;
    int st = adaq_parse(buf, len, out, n, &p);
    if (st != DR_OK)
        return st;
    if (p.map != NULL) {
        write_map(out, n, &p, PUT);
        return DR_OK;
    }
    if ((p.np + p.nn) * SPARSE_SPACING >= n)
        return write_dense_checked(out, n, &p) ? DR_E_CORRUPT : DR_OK;
    if (overlap(p.ip, p.np, p.in, p.nn))
        return DR_E_CORRUPT;
    dr_zero(out, n);
    write_lists(out, n, &p, PUT);
    return DR_OK;
}

int dr_adaq_decode_add(const uint8_t *buf, size_t len, float *out, size_t n)
{
    adaq_parts p;
    int st = adaq_parse(buf, len, out, n, &p);
    if (st != DR_OK)
        return st;
    if (p.map != NULL) {
        write_map(out, n, &p, ADD);
        return DR_OK;
    }
    if (overlap(p.ip, p.np, p.in, p.nn))
        return DR_E_CORRUPT;
    write_lists(out, n, &p, ADD);
    return DR_OK;
}
