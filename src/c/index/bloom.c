/* DeepReduce's Bloom filter index codec: sizing, the filter, the positive set P of a
 * filter over 0..d-1, and the policies that pick from P the indices both sides use.
 * Hashes are computed on the fly (the original precomputed a 1 GB table). */
#include "bitio.h"
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

int dr_bloom_encode(const uint32_t *idx, size_t r, uint32_t m_bits, uint32_t k_hash,
                    uint8_t *filter_out, size_t cap)
{
    size_t j, size = dr_bloom_size(m_bits);
    uint32_t s;
    if (k_hash == 0 || k_hash > DR_BLOOM_MAX_HASHES || (r > 0 && (idx == NULL || m_bits == 0)) ||
        (size > 0 && filter_out == NULL))
        return DR_E_ARG;
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    if (size > 0)
        memset(filter_out, 0, size);
    for (j = 0; j < r; j++)
        for (s = 0; s < k_hash; s++) {
            uint32_t b = dr_murmur3_u32(idx[j], s) % m_bits;
            filter_out[b >> 3] |= (uint8_t)(1u << (b & 7u));
        }
    return DR_OK;
}

int dr_bloom_positives(const uint8_t *filter, size_t len, uint32_t m_bits, uint32_t k_hash,
                       size_t d, uint32_t *pos_out, size_t cap, size_t *npos)
{
    uint64_t i;
    size_t count = 0;
    if (k_hash == 0 || k_hash > DR_BLOOM_MAX_HASHES || (uint64_t)d > DR_INDEX_D_LIMIT ||
        npos == NULL || (cap > 0 && pos_out == NULL) || (len > 0 && filter == NULL))
        return DR_E_ARG;
    if (len != dr_bloom_size(m_bits) || ((m_bits & 7u) != 0 && (filter[len - 1] >> (m_bits & 7u)) != 0))
        return DR_E_CORRUPT;
    if (m_bits > 0) {
        for (i = 0; i < (uint64_t)d; i++) {
            uint32_t s = 0;
            while (s < k_hash && bloom_bit(filter, dr_murmur3_u32((uint32_t)i, s) % m_bits))
                s++;
            if (s == k_hash) {
                if (count < cap)
                    pos_out[count] = (uint32_t)i;
                count++;
            }
        }
    }
    *npos = count;
    return count > cap ? DR_E_DST_TOO_SMALL : DR_OK;
}

/* ---------------------------------------------------------------- conflict sets (P2) */

#define NO_BIT UINT32_MAX /* a repeated hash of the same positive */

typedef struct {
    uint64_t tie;
    uint32_t u;   /* unpicked members of the bit's conflict set */
    uint32_t bit;
} cs_entry;

/* The scratch of the conflict-set policy, carved from the caller's workspace. Member
 * lists are in CSR form: the set of bit b is members[start[b] .. start[b + 1]). */
typedef struct {
    cs_entry *order;   /* min(m, npos*k) */
    uint32_t *hbits;   /* npos * k: the distinct bits of positive j at [j*k, j*k + k) */
    uint32_t *start;   /* m + 1 */
    uint32_t *members; /* npos * k */
    uint8_t *picked;   /* npos */
    uint8_t *hit;      /* m */
} cs_work;

static uint64_t cs_layout(size_t npos, uint32_t m, uint32_t k, void *work, cs_work *w)
{
    uint64_t slots = (uint64_t)npos * k, entries = slots < m ? slots : m;
    uint64_t off_h = entries * sizeof(cs_entry);
    uint64_t off_s = off_h + slots * 4u;
    uint64_t off_m = off_s + ((uint64_t)m + 1u) * 4u;
    uint64_t off_p = off_m + slots * 4u;
    uint64_t off_hit = off_p + npos;
    if (w != NULL) {
        uint8_t *base = (uint8_t *)work;
        w->order = (cs_entry *)(void *)base;
        w->hbits = (uint32_t *)(void *)(base + off_h);
        w->start = (uint32_t *)(void *)(base + off_s);
        w->members = (uint32_t *)(void *)(base + off_m);
        w->picked = base + off_p;
        w->hit = base + off_hit;
    }
    return off_hit + m;
}

static int cs_less(const cs_entry *a, const cs_entry *b)
{
    if (a->u != b->u)
        return a->u < b->u;
    if (a->tie != b->tie)
        return a->tie < b->tie;
    return a->bit < b->bit;
}

/* Heapsort: in place, no allocation; the keys are distinct (bit), so any correct sort
 * gives the same order. */
static void cs_sift(cs_entry *e, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2u * root + 1u;
        cs_entry t;
        if (child >= n)
            return;
        if (child + 1u < n && cs_less(&e[child], &e[child + 1u]))
            child++;
        if (!cs_less(&e[root], &e[child]))
            return;
        t = e[root];
        e[root] = e[child];
        e[child] = t;
        root = child;
    }
}

static void cs_sort(cs_entry *e, size_t n)
{
    size_t i;
    for (i = n / 2u; i-- > 0;)
        cs_sift(e, i, n);
    for (i = n; i-- > 1u;) {
        cs_entry t = e[0];
        e[0] = e[i];
        e[i] = t;
        cs_sift(e, 0, i);
    }
}

/* Hash every positive once and group the positives by bit (members ascending). */
static void cs_group(const uint32_t *positives, size_t npos, uint32_t m, uint32_t k,
                     cs_work *w)
{
    size_t j;
    uint32_t s, b, total = 0;
    memset(w->start, 0, ((size_t)m + 1u) * sizeof(uint32_t));
    memset(w->hit, 0, m);
    for (j = 0; j < npos; j++) {
        uint32_t *hb = w->hbits + j * k;
        for (s = 0; s < k; s++) {
            b = dr_murmur3_u32(positives[j], s) % m;
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

static void cs_select(const uint32_t *positives, size_t npos, size_t target, uint32_t m,
                      uint32_t k, uint64_t key, uint32_t *idx_out, cs_work *w)
{
    size_t picked = 0, j, out = 0;
    uint64_t t;
    cs_group(positives, npos, m, k, w);
    memset(w->picked, 0, npos);
    for (t = 0; picked < target; t++) {
        size_t n = 0, e;
        uint32_t b;
        for (b = 0; b < m; b++) {
            uint32_t u = 0, i;
            for (i = w->start[b]; i < w->start[b + 1u]; i++)
                u += (uint32_t)(w->picked[w->members[i]] == 0);
            if (u > 0) {
                w->order[n].tie = dr_rng_u64(key, (t << 33) + b);
                w->order[n].u = u;
                w->order[n].bit = b;
                n++;
            }
        }
        cs_sort(w->order, n);
        memset(w->hit, 0, m);
        for (e = 0; e < n && picked < target; e++) {
            const cs_entry *c = &w->order[e];
            uint64_t pick;
            uint32_t i, s;
            if (w->hit[c->bit])
                continue;
            /* No member of an unhit set was picked this round: u is still current. */
            pick = ((dr_rng_u64(key, (t << 33) + (1ull << 32) + c->bit) >> 32) * c->u) >> 32;
            for (i = w->start[c->bit];; i++)
                if (w->picked[w->members[i]] == 0 && pick-- == 0)
                    break;
            j = w->members[i];
            w->picked[j] = 1;
            picked++;
            for (s = 0; s < k; s++)
                if (w->hbits[j * k + s] != NO_BIT)
                    w->hit[w->hbits[j * k + s]] = 1;
        }
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
    int st;
    if (policy < 0 || policy >= DR_BLOOM_POLICY_COUNT_ || k_hash == 0 ||
        k_hash > DR_BLOOM_MAX_HASHES || (npos > 0 && (positives == NULL || m_bits == 0)) ||
        (uint64_t)npos > UINT32_MAX || r_out == NULL || (target > 0 && idx_out == NULL))
        return DR_E_ARG;
    for (j = 1; j < npos; j++)
        if (positives[j] <= positives[j - 1])
            return DR_E_ARG;
    if (target < npos && policy != DR_BLOOM_LEFTMOST && work == NULL)
        return DR_E_ARG;
    /* Conflict-set member lists are indexed by uint32. */
    if (policy == DR_BLOOM_CONFLICT_SETS && (uint64_t)npos * k_hash > UINT32_MAX)
        return DR_E_ARG;
    if (target == npos || policy == DR_BLOOM_LEFTMOST) {
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
