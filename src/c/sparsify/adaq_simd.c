/* AVX2 and AVX-512 variants of adaq's sweep (adaq_simd.h): per vector, the signs'
 * counts and maxima on the integer patterns and the candidates' indices and values
 * appended in lane order, without a branch per lane (AVX-512: compressed in registers
 * and stored whole; AVX2: permuted by a table of left-packing orders and stored whole),
 * the count advanced by the mask's popcount; or, where nothing is appended, counts at
 * four keys. Then the staging of the selections or their map of codes, and the dense
 * decoder's expansion of its marks (a table lookup per lane by a permute). */
#include "adaq_simd.h"
#include "append_simd.h"
#include "lane_tables.h"
#include "stream_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* The count a vector of compare results added up: each lane holds minus its count. */
DR_TARGET_AVX2 static size_t lanes_count_avx2(__m256i minus_count)
{
    uint32_t lane[8];
    size_t total = 0;
    int j;
    _mm256_storeu_si256((__m256i *)(void *)lane, _mm256_sub_epi32(_mm256_setzero_si256(), minus_count));
    for (j = 0; j < 8; j++)
        total += lane[j];
    return total;
}

/* Adds a loop's lanes to *t: the signs' counts (as lanes_count_avx2 reads them) and the
 * patterns' maxima, as int32 and as uint32. */
DR_TARGET_AVX2 static void tally_lanes_avx2(dr_adaq_tally *t, __m256i npos, __m256i nneg, __m256i smax,
                                            __m256i umax)
{
    uint32_t lane[8];
    int j;
    t->pos += lanes_count_avx2(npos);
    t->neg += lanes_count_avx2(nneg);
    _mm256_storeu_si256((__m256i *)(void *)lane, smax);
    for (j = 0; j < 8; j++)
        t->smax = (int32_t)lane[j] > t->smax ? (int32_t)lane[j] : t->smax;
    _mm256_storeu_si256((__m256i *)(void *)lane, umax);
    for (j = 0; j < 8; j++)
        t->umax = lane[j] > t->umax ? lane[j] : t->umax;
}

DR_TARGET_AVX2 size_t dr_adaq_sweep_avx2(const float *x, size_t n, uint32_t pkey, uint32_t nkey,
                                         uint32_t *idx, float *val, size_t cap, size_t *count,
                                         dr_adaq_tally *t)
{
    /* AVX2 compares only signed lanes: u >= nkey unsigned is (u ^ 2^31) >= (nkey ^ 2^31)
     * signed, and (u ^ 2^31) is a negative entry's magnitude pattern. "a >= b" is
     * "a > b - 1", exact since pkey, nkey ^ 2^31 > 0. */
    const __m256i flip = _mm256_set1_epi32(INT32_MIN), zero = _mm256_setzero_si256();
    const __m256i pbelow = _mm256_set1_epi32((int32_t)pkey - 1);
    const __m256i nbelow = _mm256_set1_epi32((int32_t)(nkey ^ 0x80000000u) - 1);
    __m256i smax = _mm256_set1_epi32(t->smax), umax = _mm256_set1_epi32((int32_t)t->umax);
    __m256i npos = zero, nneg = zero; /* per lane, minus the count (compares give -1) */
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    size_t i = 0, c = *count;
    for (; i + 8 <= n && c + 8 <= cap; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        dr_read_ahead(x + i);
        __m256i mag = _mm256_xor_si256(u, flip);
        __m256i cand = _mm256_or_si256(_mm256_cmpgt_epi32(u, pbelow), _mm256_cmpgt_epi32(mag, nbelow));
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(cand));
        npos = _mm256_add_epi32(npos, _mm256_cmpgt_epi32(u, zero));
        nneg = _mm256_add_epi32(nneg, _mm256_cmpgt_epi32(mag, zero));
        smax = _mm256_max_epi32(smax, u);
        umax = _mm256_max_epu32(umax, u);
        c += dr_append_avx2(m, lanes, u, idx + c, val + c);
        lanes = _mm256_add_epi32(lanes, step);
    }
    tally_lanes_avx2(t, npos, nneg, smax, umax);
    *count = c;
    return i;
}

DR_TARGET_AVX2 size_t dr_adaq_count_avx2(const float *x, size_t n, const uint32_t *key, dr_adaq_tally *t,
                                         size_t *at)
{
    /* Signed compares, as in the sweep: a positive key's "u >= key" is "u > key - 1", a
     * negative key's is "(u ^ 2^31) > (key ^ 2^31) - 1". */
    const __m256i flip = _mm256_set1_epi32(INT32_MIN), zero = _mm256_setzero_si256();
    const __m256i below0 = _mm256_set1_epi32((int32_t)key[0] - 1);
    const __m256i below1 = _mm256_set1_epi32((int32_t)key[1] - 1);
    const __m256i below2 = _mm256_set1_epi32((int32_t)(key[2] ^ 0x80000000u) - 1);
    const __m256i below3 = _mm256_set1_epi32((int32_t)(key[3] ^ 0x80000000u) - 1);
    __m256i smax = _mm256_set1_epi32(t->smax), umax = _mm256_set1_epi32((int32_t)t->umax);
    __m256i npos = zero, nneg = zero, at0 = zero, at1 = zero, at2 = zero, at3 = zero; /* minus */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        __m256i mag = _mm256_xor_si256(u, flip);
        dr_read_ahead(x + i);
        npos = _mm256_add_epi32(npos, _mm256_cmpgt_epi32(u, zero));
        nneg = _mm256_add_epi32(nneg, _mm256_cmpgt_epi32(mag, zero));
        at0 = _mm256_add_epi32(at0, _mm256_cmpgt_epi32(u, below0));
        at1 = _mm256_add_epi32(at1, _mm256_cmpgt_epi32(u, below1));
        at2 = _mm256_add_epi32(at2, _mm256_cmpgt_epi32(mag, below2));
        at3 = _mm256_add_epi32(at3, _mm256_cmpgt_epi32(mag, below3));
        smax = _mm256_max_epi32(smax, u);
        umax = _mm256_max_epu32(umax, u);
    }
    tally_lanes_avx2(t, npos, nneg, smax, umax);
    at[0] += lanes_count_avx2(at0);
    at[1] += lanes_count_avx2(at1);
    at[2] += lanes_count_avx2(at2);
    at[3] += lanes_count_avx2(at3);
    return i;
}

/* Adds a loop's lanes to *t: the signs' counts and the patterns' maxima. */
DR_TARGET_AVX512 static void tally_lanes_avx512(dr_adaq_tally *t, __m512i npos, __m512i nneg, __m512i smax,
                                                __m512i umax)
{
    int32_t s = _mm512_reduce_max_epi32(smax);
    uint32_t v = _mm512_reduce_max_epu32(umax);
    t->pos += (uint32_t)_mm512_reduce_add_epi32(npos);
    t->neg += (uint32_t)_mm512_reduce_add_epi32(nneg);
    t->smax = s > t->smax ? s : t->smax;
    t->umax = v > t->umax ? v : t->umax;
}

DR_TARGET_AVX512 size_t dr_adaq_sweep_avx512(const float *x, size_t n, uint32_t pkey, uint32_t nkey,
                                             uint32_t *idx, float *val, size_t cap, size_t *count,
                                             dr_adaq_tally *t)
{
    const __m512i pk = _mm512_set1_epi32((int32_t)pkey), nk = _mm512_set1_epi32((int32_t)nkey);
    const __m512i zero = _mm512_setzero_si512(), negzero = _mm512_set1_epi32(INT32_MIN);
    const __m512i one = _mm512_set1_epi32(1), step = _mm512_set1_epi32(16);
    __m512i smax = _mm512_set1_epi32(t->smax), umax = _mm512_set1_epi32((int32_t)t->umax);
    __m512i npos = zero, nneg = zero;
    __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t i = 0, c = *count;
    for (; i + 16 <= n && c + 16 <= cap; i += 16) {
        __m512i u = _mm512_loadu_si512(x + i);
        dr_read_ahead(x + i);
        __mmask16 m = _mm512_cmpge_epi32_mask(u, pk) | _mm512_cmpge_epu32_mask(u, nk);
        npos = _mm512_mask_add_epi32(npos, _mm512_cmpgt_epi32_mask(u, zero), npos, one);
        nneg = _mm512_mask_add_epi32(nneg, _mm512_cmpgt_epu32_mask(u, negzero), nneg, one);
        smax = _mm512_max_epi32(smax, u);
        umax = _mm512_max_epu32(umax, u);
        c += dr_append_avx512(m, lanes, u, idx + c, val + c);
        lanes = _mm512_add_epi32(lanes, step);
    }
    tally_lanes_avx512(t, npos, nneg, smax, umax);
    *count = c;
    return i;
}

DR_TARGET_AVX512 size_t dr_adaq_count_avx512(const float *x, size_t n, const uint32_t *key,
                                             dr_adaq_tally *t, size_t *at)
{
    const __m512i k0 = _mm512_set1_epi32((int32_t)key[0]), k1 = _mm512_set1_epi32((int32_t)key[1]);
    const __m512i k2 = _mm512_set1_epi32((int32_t)key[2]), k3 = _mm512_set1_epi32((int32_t)key[3]);
    const __m512i zero = _mm512_setzero_si512(), negzero = _mm512_set1_epi32(INT32_MIN);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i smax = _mm512_set1_epi32(t->smax), umax = _mm512_set1_epi32((int32_t)t->umax);
    __m512i npos = zero, nneg = zero, at0 = zero, at1 = zero, at2 = zero, at3 = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512(x + i);
        dr_read_ahead(x + i);
        npos = _mm512_mask_add_epi32(npos, _mm512_cmpgt_epi32_mask(u, zero), npos, one);
        nneg = _mm512_mask_add_epi32(nneg, _mm512_cmpgt_epu32_mask(u, negzero), nneg, one);
        at0 = _mm512_mask_add_epi32(at0, _mm512_cmpge_epi32_mask(u, k0), at0, one);
        at1 = _mm512_mask_add_epi32(at1, _mm512_cmpge_epi32_mask(u, k1), at1, one);
        at2 = _mm512_mask_add_epi32(at2, _mm512_cmpge_epu32_mask(u, k2), at2, one);
        at3 = _mm512_mask_add_epi32(at3, _mm512_cmpge_epu32_mask(u, k3), at3, one);
        smax = _mm512_max_epi32(smax, u);
        umax = _mm512_max_epu32(umax, u);
    }
    tally_lanes_avx512(t, npos, nneg, smax, umax);
    at[0] += (uint32_t)_mm512_reduce_add_epi32(at0);
    at[1] += (uint32_t)_mm512_reduce_add_epi32(at1);
    at[2] += (uint32_t)_mm512_reduce_add_epi32(at2);
    at[3] += (uint32_t)_mm512_reduce_add_epi32(at3);
    return i;
}

/* sum[0..4) += the four floats of v as doubles where their lanes of the compare `taken`
 * are set, +0.0 elsewhere (a partial sum of one sign is never -0.0, so adding +0.0
 * leaves it as it was, as the scalar loop's masked add does). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256d add_taken_avx2(__m256d sum, __m128 v, __m128i taken)
{
    __m256d keep = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(taken));
    return _mm256_add_pd(sum, _mm256_and_pd(_mm256_cvtps_pd(v), keep));
}

/* Both sides' take of one AVX2 vector u of the staging (adaq_simd.h): in *mp and *mn the
 * lanes the positives and the negatives take (bit j: lane j), and their values added to
 * the sides' partial sums ps[0..2) and ns[0..2) (four lanes each). Signed compares only,
 * as in the sweep: "a >= b" is "a > b - 1" (pkey >= 1 and nkey ^ 2^31 >= 1), and u >=
 * nkey unsigned is (u ^ 2^31) >= (nkey ^ 2^31) signed: pbelow = pkey - 1, nbelow =
 * (nkey ^ 2^31) - 1. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE void take8_avx2(__m256i u, __m256i pbelow, __m256i nbelow, __m256d *ps,
                                                __m256d *ns, unsigned *mp, unsigned *mn)
{
    __m256i tp = _mm256_cmpgt_epi32(u, pbelow);
    __m256i tn = _mm256_cmpgt_epi32(_mm256_xor_si256(u, _mm256_set1_epi32(INT32_MIN)), nbelow);
    __m256 v = _mm256_castsi256_ps(u);
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    *mp = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(tp));
    *mn = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(tn));
    ps[0] = add_taken_avx2(ps[0], lo, _mm256_castsi256_si128(tp));
    ps[1] = add_taken_avx2(ps[1], hi, _mm256_extracti128_si256(tp, 1));
    ns[0] = add_taken_avx2(ns[0], lo, _mm256_castsi256_si128(tn));
    ns[1] = add_taken_avx2(ns[1], hi, _mm256_extracti128_si256(tn, 1));
}

/* The keys of take8_avx2: pbelow, then nbelow. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i below_avx2(uint32_t key, uint32_t flip)
{
    return _mm256_set1_epi32((int32_t)(key ^ flip) - 1);
}

/* The sides' partial sums 4h..4h+3 in ps[h] and ns[h], from psum and nsum, and back. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE void load_sums_avx2(__m256d *ps, __m256d *ns, const double *psum,
                                                    const double *nsum)
{
    int h;
    for (h = 0; h < 4; h++) {
        ps[h] = _mm256_loadu_pd(psum + 4 * h);
        ns[h] = _mm256_loadu_pd(nsum + 4 * h);
    }
}

DR_TARGET_AVX2 DR_ALWAYS_INLINE void store_sums_avx2(const __m256d *ps, const __m256d *ns, double *psum,
                                                     double *nsum)
{
    int h;
    for (h = 0; h < 4; h++) {
        _mm256_storeu_pd(psum + 4 * h, ps[h]);
        _mm256_storeu_pd(nsum + 4 * h, ns[h]);
    }
}

DR_TARGET_AVX2 size_t dr_adaq_stage_avx2(const float *x, size_t start, size_t len, uint32_t pkey,
                                         uint32_t nkey, uint32_t *pidx, size_t *kp, double *psum,
                                         uint32_t *nidx, size_t *kn, double *nsum)
{
    const __m256i pbelow = below_avx2(pkey, 0), nbelow = below_avx2(nkey, 0x80000000u);
    const __m256i step = _mm256_set1_epi32(8);
    __m256i lanes = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int32_t)start));
    __m256d ps[4], ns[4];
    size_t i = 0, p = *kp, q = *kn;
    int h;
    load_sums_avx2(ps, ns, psum, nsum);
    /* Two vectors a step: the first adds into partial sums 0..7, the second 8..15. */
    for (; i + 16 <= len; i += 16) {
        dr_read_ahead(x + i);
        for (h = 0; h < 2; h++) {
            unsigned mp, mn;
            take8_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(x + i + 8 * h)), pbelow, nbelow,
                       ps + 2 * h, ns + 2 * h, &mp, &mn);
            p += dr_append_avx2(mp, lanes, lanes, pidx + p, NULL);
            q += dr_append_avx2(mn, lanes, lanes, nidx + q, NULL);
            lanes = _mm256_add_epi32(lanes, step);
        }
    }
    store_sums_avx2(ps, ns, psum, nsum);
    *kp = p;
    *kn = q;
    return i;
}

DR_TARGET_AVX2 size_t dr_adaq_map_avx2(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint8_t *codes,
                                       double *psum, double *nsum)
{
    const __m256i pbelow = below_avx2(pkey, 0), nbelow = below_avx2(nkey, 0x80000000u);
    __m256d ps[4], ns[4];
    size_t i = 0;
    int h;
    load_sums_avx2(ps, ns, psum, nsum);
    for (; i + 16 <= n; i += 16) {
        dr_read_ahead(x + i);
        for (h = 0; h < 2; h++) {
            unsigned mp, mn;
            uint16_t bits;
            take8_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(x + i + 8 * h)), pbelow, nbelow,
                       ps + 2 * h, ns + 2 * h, &mp, &mn);
            bits = (uint16_t)dr_interleave_bits8(mp, mn);
            memcpy(codes + (i + 8 * h) / 4, &bits, 2); /* little-endian, as x86 is */
        }
    }
    store_sums_avx2(ps, ns, psum, nsum);
    return i;
}

/* Both sides' take of one AVX-512 vector u of the staging (adaq_simd.h): in *mp and *mn
 * the lanes the positives and the negatives take, and their values added to the sides'
 * partial sums sum[0] (lanes 0-7) and sum[1] (8-15) of the positives, sum[2] and sum[3]
 * of the negatives. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void take16_avx512(__m512i u, __m512i pk, __m512i nk, __m512d *sum,
                                                     __mmask16 *mp, __mmask16 *mn)
{
    __m512 v = _mm512_castsi512_ps(u);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    *mp = _mm512_cmpge_epi32_mask(u, pk);
    *mn = _mm512_cmpge_epu32_mask(u, nk);
    sum[0] = _mm512_mask_add_pd(sum[0], (__mmask8)*mp, sum[0], lo);
    sum[1] = _mm512_mask_add_pd(sum[1], (__mmask8)(*mp >> 8), sum[1], hi);
    sum[2] = _mm512_mask_add_pd(sum[2], (__mmask8)*mn, sum[2], lo);
    sum[3] = _mm512_mask_add_pd(sum[3], (__mmask8)(*mn >> 8), sum[3], hi);
}

/* The partial sums of take16_avx512 from psum and nsum, and back. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void load_sums_avx512(__m512d *sum, const double *psum, const double *nsum)
{
    sum[0] = _mm512_loadu_pd(psum);
    sum[1] = _mm512_loadu_pd(psum + 8);
    sum[2] = _mm512_loadu_pd(nsum);
    sum[3] = _mm512_loadu_pd(nsum + 8);
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE void store_sums_avx512(const __m512d *sum, double *psum, double *nsum)
{
    _mm512_storeu_pd(psum, sum[0]);
    _mm512_storeu_pd(psum + 8, sum[1]);
    _mm512_storeu_pd(nsum, sum[2]);
    _mm512_storeu_pd(nsum + 8, sum[3]);
}

DR_TARGET_AVX512 size_t dr_adaq_stage_avx512(const float *x, size_t start, size_t len, uint32_t pkey,
                                             uint32_t nkey, uint32_t *pidx, size_t *kp, double *psum,
                                             uint32_t *nidx, size_t *kn, double *nsum)
{
    const __m512i pk = _mm512_set1_epi32((int32_t)pkey), nk = _mm512_set1_epi32((int32_t)nkey);
    const __m512i step = _mm512_set1_epi32(16);
    __m512i lanes = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                     _mm512_set1_epi32((int32_t)start));
    __m512d sum[4];
    size_t i = 0, p = *kp, q = *kn;
    load_sums_avx512(sum, psum, nsum);
    for (; i + 16 <= len; i += 16) {
        __m512i u = _mm512_loadu_si512(x + i);
        __mmask16 mp, mn;
        dr_read_ahead(x + i);
        take16_avx512(u, pk, nk, sum, &mp, &mn);
        p += dr_append_avx512(mp, lanes, u, pidx + p, NULL);
        q += dr_append_avx512(mn, lanes, u, nidx + q, NULL);
        lanes = _mm512_add_epi32(lanes, step);
    }
    store_sums_avx512(sum, psum, nsum);
    *kp = p;
    *kn = q;
    return i;
}

DR_TARGET_AVX512 size_t dr_adaq_map_avx512(const float *x, size_t n, uint32_t pkey, uint32_t nkey,
                                           uint8_t *codes, double *psum, double *nsum)
{
    const __m512i pk = _mm512_set1_epi32((int32_t)pkey), nk = _mm512_set1_epi32((int32_t)nkey);
    __m512d sum[4];
    size_t i = 0;
    load_sums_avx512(sum, psum, nsum);
    for (; i + 16 <= n; i += 16) {
        __mmask16 mp, mn;
        uint32_t bits;
        dr_read_ahead(x + i);
        take16_avx512(_mm512_loadu_si512(x + i), pk, nk, sum, &mp, &mn);
        bits = _pdep_u32(mp, 0x55555555u) | _pdep_u32(mn, 0xaaaaaaaau);
        memcpy(codes + i / 4, &bits, 4); /* little-endian, as x86 is */
    }
    store_sums_avx512(sum, psum, nsum);
    return i;
}

DR_TARGET_AVX2 size_t dr_adaq_expand_avx2(const uint8_t *mark, size_t len, const float *value, float *out,
                                          int stream)
{
    const __m256 table = _mm256_setr_ps(value[0], value[1], value[2], 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    size_t t = 0;
    for (; t + 8 <= len; t += 8) {
        __m256i m = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(mark + t)));
        dr_store8_avx2(out + t, _mm256_permutevar8x32_ps(table, m), stream);
    }
    return t;
}

/* The floats of marks mark[0..16) by `table` (value by mark). */
DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512 marked_values_avx512(const uint8_t *mark, __m512 table)
{
    return _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)mark)), table);
}

DR_TARGET_AVX512 size_t dr_adaq_expand_avx512(const uint8_t *mark, size_t len, const float *value,
                                              float *out, int stream)
{
    const __m512 table = _mm512_maskz_loadu_ps(0x7, value);
    size_t t = 0, q;
    if (!stream) {
        for (; t + 16 <= len; t += 16)
            _mm512_storeu_ps(out + t, marked_values_avx512(mark + t, table));
        return t;
    }
    /* Whole lines streamed a vector at a time (a quarter of the store instructions of
     * 16-byte streams); the floats before out's first line start (out is 16-byte
     * aligned: a multiple of 4) streamed 16 bytes at a time. */
    q = dr_stream_lead(out, len);
    if (q > 0 && len >= 16) {
        __m512 v = marked_values_avx512(mark, table);
        for (; t < q; t += 4)
            _mm_stream_ps(out + t, _mm512_castps512_ps128(_mm512_maskz_compress_ps((__mmask16)(0xfu << t), v)));
    }
    for (; t + 16 <= len; t += 16)
        _mm512_stream_ps(out + t, marked_values_avx512(mark + t, table));
    return t;
}
#endif
