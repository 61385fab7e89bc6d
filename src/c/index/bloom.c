/* DeepReduce's Bloom filter index codec: sizing, the filter, the positive set P of a
 * filter over 0..d-1, and the policies that pick from P the indices both sides use.
 * Hashes are computed on the fly (the original precomputed a 1 GB table). */
#include "rng_inline.h"
#include "bitio.h"
#include "bloom_simd.h"
#include "murmur3.h"

#include <math.h>

int dr_bloom_params(size_t r, double fpr, uint32_t *k_hash, uint32_t *m_bits)
{
    double bits, m;
    if (!(fpr > 0.0 && fpr < 1.0) || k_hash == NULL || m_bits == NULL)
        return DR_E_ARG;
    bits = log2(1.0 / fpr);
    if (!(ceil(bits) <= DR_BLOOM_MAX_HASHES))
        return DR_E_ARG;
    m = ceil(bits * (double)r / log(2.0));
    if (!(m <= (double)UINT32_MAX))
        return DR_E_ARG;
    *k_hash = (uint32_t)ceil(bits);
    *m_bits = (uint32_t)m;
    return DR_OK;
}

size_t dr_bloom_size(uint32_t m_bits)
{
    return ((size_t)m_bits + 7u) / 8u;
}

static int bloom_bit(const uint8_t *filter, uint32_t b)
{
    return (filter[b >> 3] >> (b & 7u)) & 1u;
}

/* The reciprocal for bloom_hash: floor((2^64 - 1) / m) + 1, mod 2^64 (0 for m = 1,
 * which still gives a mod 1 = 0). */
static uint64_t bloom_recip(uint32_t m)
{
    return UINT64_MAX / m + 1u;
}

/* Hash s of index i, mod m, without a division: Lemire, Kaser and Kurz (2019) show
 * a mod m = ((M * a mod 2^64) * m) >> 64 exactly for all 32-bit a and m. The 64x32
 * high product is built from two 32x32 products, so no 128-bit type is needed. */
static inline uint32_t bloom_hash(uint32_t i, uint32_t s, uint64_t recip, uint32_t m)
{
    uint64_t low = recip * dr_murmur3_u32(i, s);
    return (uint32_t)(((low >> 32) * m + (((low & 0xffffffffu) * m) >> 32)) >> 32);
}

int dr_bloom_encode(const uint32_t *idx, size_t r, uint32_t m_bits, uint32_t k_hash,
                    uint8_t *filter_out, size_t cap)
{
    size_t j, size = dr_bloom_size(m_bits);
    uint64_t recip;
    uint32_t s;
    if (k_hash == 0 || k_hash > DR_BLOOM_MAX_HASHES || (r > 0 && (idx == NULL || m_bits == 0)) ||
        (size > 0 && filter_out == NULL))
        return DR_E_ARG;
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    if (size == 0)
        return DR_OK;
    memset(filter_out, 0, size);
    recip = bloom_recip(m_bits);
    for (j = 0; j < r; j++)
        for (s = 0; s < k_hash; s++) {
            uint32_t b = bloom_hash(idx[j], s, recip, m_bits);
            filter_out[b >> 3] |= (uint8_t)(1u << (b & 7u));
        }
    return DR_OK;
}

#define SCAN_BLOCK 512

/* Copy to dst, in order, the candidates whose hash s hits a set bit. Compaction
 * without a branch lets the hashes of many candidates overlap in the pipeline. */
static uint32_t bloom_pass(const uint32_t *cand, uint32_t *dst, uint32_t n, uint32_t s,
                           const uint8_t *filter, uint64_t recip, uint32_t m, int simd)
{
    uint32_t t = 0, kept = 0;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2)
        t = dr_bloom_pass_avx2(cand, dst, n, s, filter, recip, m, &kept);
#else
    (void)simd;
#endif
    for (; t < n; t++) {
        uint32_t i = cand[t];
        dst[kept] = i;
        kept += (uint32_t)bloom_bit(filter, bloom_hash(i, s, recip, m));
    }
    return kept;
}

/* The hash budget of a scan that may find up to cap positives (see deepreduce/index.h):
 * 4 per position and k_hash per positive, plus a constant that covers small d. */
static uint64_t scan_budget(size_t d, uint32_t k_hash, size_t cap)
{
    uint64_t positives = cap < d ? (uint64_t)cap : (uint64_t)d;
    return 4u * (uint64_t)d + (uint64_t)k_hash * positives + 4096u;
}

static int bloom_filter_valid(const uint8_t *filter, size_t len, uint32_t m_bits)
{
    return len == dr_bloom_size(m_bits) &&
           ((m_bits & 7u) == 0 || (filter[len - 1] >> (m_bits & 7u)) == 0);
}

int dr_bloom_positives(const uint8_t *filter, size_t len, uint32_t m_bits, uint32_t k_hash,
                       size_t d, uint32_t *pos_out, size_t cap, size_t *npos)
{
    uint32_t cand[2][SCAN_BLOCK];
    uint64_t base, recip, budget, spent = 0;
    size_t count = 0;
    int simd;
    if (k_hash == 0 || k_hash > DR_BLOOM_MAX_HASHES || (uint64_t)d > DR_INDEX_D_LIMIT ||
        npos == NULL || (cap > 0 && pos_out == NULL) || (len > 0 && filter == NULL))
        return DR_E_ARG;
    if (!bloom_filter_valid(filter, len, m_bits))
        return DR_E_CORRUPT;
    *npos = 0;
    if (m_bits == 0 || cap == 0)
        return DR_OK;
    simd = dr_simd_active();
    recip = bloom_recip(m_bits);
    budget = scan_budget(d, k_hash, cap);
    /* Hash by hash over a block of positions rather than position by position: the
     * same set as testing each position up to its first clear bit, without a
     * coin-flip branch per test. */
    for (base = 0; base < (uint64_t)d && count < cap; base += SCAN_BLOCK) {
        uint64_t left = (uint64_t)d - base;
        uint32_t t, s, alive = left < SCAN_BLOCK ? (uint32_t)left : SCAN_BLOCK;
        if (spent > budget)
            return DR_E_CORRUPT;
        for (t = 0; t < alive; t++)
            cand[0][t] = (uint32_t)(base + t);
        for (s = 0; s < k_hash && alive > 0; s++) {
            spent += alive;
            alive = bloom_pass(cand[s & 1u], cand[(s & 1u) ^ 1u], alive, s, filter, recip,
                               m_bits, simd);
        }
        for (t = 0; t < alive && count < cap; t++, count++)
            pos_out[count] = cand[s & 1u][t];
    }
    *npos = count;
    return DR_OK;
}

/* Probability that a position outside the inserted set is positive when `set` of the m
 * filter bits are set: its k hashes land on j distinct bits with the occupancy
 * probabilities occ[j], and j distinct bits are all set with probability
 * C(set, j) / C(m, j). */
static double false_positive_rate(uint64_t set, uint32_t m, uint32_t k)
{
    double occ[DR_BLOOM_MAX_HASHES + 1], rate = 0.0, all_set = 1.0;
    uint32_t t, j;
    memset(occ, 0, sizeof occ);
    occ[0] = 1.0;
    for (t = 0; t < k; t++) {
        for (j = t + 1u; j > 0; j--)
            occ[j] = (occ[j] * j + occ[j - 1u] * ((double)m - (j - 1u))) / m;
        occ[0] = 0.0;
    }
    for (j = 1; j <= k && j <= m; j++) {
        all_set *= ((double)set - (j - 1u)) / ((double)m - (j - 1u));
        if (all_set <= 0.0)
            break;
        rate += occ[j] * all_set;
    }
    return rate;
}

int dr_bloom_positives_limit(const uint8_t *filter, size_t len, uint32_t m_bits,
                             uint32_t k_hash, size_t d, size_t r, size_t *limit)
{
    uint64_t set = 0;
    double mean, most;
    size_t i;
    if (k_hash == 0 || k_hash > DR_BLOOM_MAX_HASHES || (uint64_t)d > DR_INDEX_D_LIMIT ||
        r > d || limit == NULL || (len > 0 && filter == NULL))
        return DR_E_ARG;
    if (!bloom_filter_valid(filter, len, m_bits))
        return DR_E_CORRUPT;
    for (i = 0; i < len; i++) {
        uint32_t byte = filter[i];
        while (byte != 0) {
            set += byte & 1u;
            byte >>= 1;
        }
    }
    /* r indices set at most r * k_hash bits; an empty filter holds nothing; and
     * dr_bloom_params never sizes a filter of r indices and k_hash hashes below
     * (k_hash - 1) r / ln 2 bits (its log2(1/fpr) exceeds k_hash - 1), so at most about
     * ln 2 k/(k-1) of the bits are set (float slack: one part in 10^9, one bit). */
    if (set > (uint64_t)r * k_hash || (m_bits == 0 && r > 0) ||
        (double)m_bits + 1.0 < (double)(k_hash - 1u) * (double)r / log(2.0) * (1.0 - 1e-9))
        return DR_E_CORRUPT;
    if (m_bits == 0) {
        *limit = 0;
        return DR_OK;
    }
    mean = (double)(d - r) * false_positive_rate(set, m_bits, k_hash);
    most = (double)r + 2.0 * mean + 10.0 * sqrt(mean) + 32.0;
    *limit = most >= (double)d ? d : (size_t)most;
    return DR_OK;
}

/* ---------------------------------------------------------------- conflict sets (P2) */

#define NO_BIT UINT32_MAX /* a repeated hash of the same positive */

/* The scratch of the conflict-set policy, carved from the caller's workspace (uint32
 * arrays first, so every one is aligned). Member lists are in CSR form: the set of bit
 * b is members[start[b] .. start[b + 1]). */
typedef struct {
    uint32_t *hbits;   /* npos * k: the distinct bits of positive j at [j*k, j*k + k) */
    uint32_t *members; /* npos * k */
    uint32_t *start;   /* m + 1 */
    uint32_t *unpicked;/* m: u_b, this round */
    uint32_t *order;   /* m: the bits of this round, in visiting order */
    uint32_t *bucket;  /* npos + 2: counting-sort offsets by u */
    uint8_t *picked;   /* npos */
    uint8_t *hit;      /* m */
} cs_work;

static uint64_t cs_layout(size_t npos, uint32_t m, uint32_t k, void *work, cs_work *w)
{
    uint64_t slots = (uint64_t)npos * k;
    uint64_t off_mem = slots * 4u;
    uint64_t off_start = off_mem + slots * 4u;
    uint64_t off_u = off_start + ((uint64_t)m + 1u) * 4u;
    uint64_t off_order = off_u + (uint64_t)m * 4u;
    uint64_t off_bucket = off_order + (uint64_t)m * 4u;
    uint64_t off_picked = off_bucket + ((uint64_t)npos + 2u) * 4u;
    uint64_t off_hit = off_picked + npos;
    if (w != NULL) {
        uint8_t *base = (uint8_t *)work;
        w->hbits = (uint32_t *)(void *)base;
        w->members = (uint32_t *)(void *)(base + off_mem);
        w->start = (uint32_t *)(void *)(base + off_start);
        w->unpicked = (uint32_t *)(void *)(base + off_u);
        w->order = (uint32_t *)(void *)(base + off_order);
        w->bucket = (uint32_t *)(void *)(base + off_bucket);
        w->picked = base + off_picked;
        w->hit = base + off_hit;
    }
    return off_hit + m;
}

/* Hash every positive once and group the positives by bit (members ascending). */
static void cs_group(const uint32_t *positives, size_t npos, uint32_t m, uint32_t k,
                     cs_work *w)
{
    size_t j;
    uint32_t s, b, total = 0;
    uint64_t recip = bloom_recip(m);
    memset(w->start, 0, ((size_t)m + 1u) * sizeof(uint32_t));
    memset(w->hit, 0, m);
    for (j = 0; j < npos; j++) {
        uint32_t *hb = w->hbits + j * k;
        for (s = 0; s < k; s++) {
            b = bloom_hash(positives[j], s, recip, m);
            hb[s] = w->hit[b] ? NO_BIT : b;
            if (!w->hit[b]) {
                w->hit[b] = 1;
                w->start[b]++;
            }
        }
        for (s = 0; s < k; s++)
            if (hb[s] != NO_BIT)
                w->hit[hb[s]] = 0;
    }
    /* Counts to block ends, then fill backwards so each start[b] steps down to its
     * block's beginning while members stay ascending. */
    for (b = 0; b < m; b++) {
        total += w->start[b];
        w->start[b] = total;
    }
    w->start[m] = total;
    for (j = npos; j-- > 0;)
        for (s = 0; s < k; s++) {
            b = w->hbits[j * k + s];
            if (b != NO_BIT)
                w->members[--w->start[b]] = (uint32_t)j;
        }
}

/* This round's visiting order (rule in deepreduce/index.h): a counting sort by u_b,
 * stable over the bits taken from the rotation offset o upwards, wrapping. Returns
 * how many bits have u_b > 0. */
static size_t cs_order(uint32_t m, uint64_t key, uint64_t t, cs_work *w)
{
    uint32_t b, i, o, max_u = 0, u, n;
    for (b = 0; b < m; b++) {
        u = 0;
        for (i = w->start[b]; i < w->start[b + 1u]; i++)
            u += (uint32_t)(w->picked[w->members[i]] == 0);
        w->unpicked[b] = u;
        if (u > max_u)
            max_u = u;
    }
    memset(w->bucket, 0, ((size_t)max_u + 2u) * sizeof(uint32_t));
    for (b = 0; b < m; b++)
        w->bucket[w->unpicked[b] + 1u]++;
    /* bucket[u] becomes the first slot of size u, with sets of size 0 left out. */
    w->bucket[1] = 0;
    for (u = 2; u <= max_u + 1u; u++)
        w->bucket[u] += w->bucket[u - 1u];
    n = w->bucket[max_u + 1u];
    o = (uint32_t)(((dr_rng_u64_fast(key, 2u * t) >> 32) * m) >> 32);
    for (i = 0, b = o; i < m; i++, b = b + 1u == m ? 0 : b + 1u)
        if (w->unpicked[b] > 0)
            w->order[w->bucket[w->unpicked[b]]++] = b;
    return n;
}

static void cs_select(const uint32_t *positives, size_t npos, size_t target, uint32_t m,
                      uint32_t k, uint64_t key, uint32_t *idx_out, cs_work *w)
{
    size_t picked = 0, j, out = 0;
    uint64_t t;
    cs_group(positives, npos, m, k, w);
    memset(w->picked, 0, npos);
    for (t = 0; picked < target && t < DR_BLOOM_CS_MAX_ROUNDS; t++) {
        size_t n = cs_order(m, key, t, w), e;
        memset(w->hit, 0, m);
        for (e = 0; e < n && picked < target; e++) {
            uint32_t b = w->order[e], i, s;
            uint64_t c;
            if (w->hit[b])
                continue;
            /* No member of an unhit set was picked this round: u_b is still current. */
            c = ((dr_rng_u64_fast(key, ((2u * t + 1u) << 32) + b) >> 32) * w->unpicked[b]) >> 32;
            for (i = w->start[b];; i++)
                if (w->picked[w->members[i]] == 0 && c-- == 0)
                    break;
            j = w->members[i];
            w->picked[j] = 1;
            picked++;
            for (s = 0; s < k; s++)
                if (w->hbits[j * k + s] != NO_BIT)
                    w->hit[w->hbits[j * k + s]] = 1;
        }
    }
    /* Past the last round, the leftmost positives not yet picked. */
    for (j = 0; j < npos && picked < target; j++)
        if (!w->picked[j]) {
            w->picked[j] = 1;
            picked++;
        }
    for (j = 0; j < npos; j++)
        if (w->picked[j])
            idx_out[out++] = positives[j];
}

/* ------------------------------------------------------------------------ policies */

size_t dr_bloom_select_workspace_size(int policy, size_t npos, uint32_t m_bits,
                                      uint32_t k_hash)
{
    if (policy == DR_BLOOM_RANDOM)
        return dr_randomk_workspace_size(npos);
    if (policy == DR_BLOOM_CONFLICT_SETS)
        return dr_sat_size(cs_layout(npos, m_bits, k_hash, NULL, NULL));
    return 0;
}

int dr_bloom_select(int policy, const uint32_t *positives, size_t npos, size_t r,
                    uint32_t m_bits, uint32_t k_hash, uint64_t key, uint32_t *idx_out,
                    size_t *r_out, void *work)
{
    size_t j, target = policy == DR_BLOOM_P0 || r > npos ? npos : r;
    int st, leftmost = policy == DR_BLOOM_LEFTMOST || policy == DR_BLOOM_NAIVE;
    if (policy < 0 || policy >= DR_BLOOM_POLICY_COUNT_ || k_hash == 0 ||
        k_hash > DR_BLOOM_MAX_HASHES || (npos > 0 && (positives == NULL || m_bits == 0)) ||
        (uint64_t)npos > UINT32_MAX || r_out == NULL || (target > 0 && idx_out == NULL))
        return DR_E_ARG;
    /* Conflict-set member lists are indexed by uint32. */
    if ((target < npos && !leftmost && work == NULL) ||
        (policy == DR_BLOOM_CONFLICT_SETS && (uint64_t)npos * k_hash > UINT32_MAX))
        return DR_E_ARG;
    for (j = 1; j < npos; j++)
        if (positives[j] <= positives[j - 1])
            return DR_E_ARG;
    if (target == npos || leftmost) {
        if (target > 0)
            memcpy(idx_out, positives, target * sizeof *idx_out);
    } else if (policy == DR_BLOOM_RANDOM) {
        st = dr_randomk(key, npos, target, idx_out, work);
        if (st != DR_OK)
            return st;
        /* Positions ascend, so the chosen indices do too. */
        for (j = 0; j < target; j++)
            idx_out[j] = positives[idx_out[j]];
    } else {
        cs_work w;
        cs_layout(npos, m_bits, k_hash, work, &w);
        cs_select(positives, npos, target, m_bits, k_hash, key, idx_out, &w);
    }
    *r_out = target;
    return DR_OK;
}
