/* AVX2 and AVX-512 qsgd: the levels of 8 or 16 elements per step, in float exactly as
 * the scalar code computes them (|x| * ratio, floor, one 24-bit uniform per element from
 * the vector generator against the fraction, clamp to s, sign), so every level is the
 * same integer. */
#include "deepreduce.h"
#include "qsgd_simd.h"
#include "rng_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>
#include <float.h>

/* The levels of 8 elements in int32 lanes, from their 8 draws. */
DR_TARGET_AVX2 static inline __m256i levels8_avx2(__m256 x, __m256i draws, __m256 ratio, __m256i s)
{
    __m256 a = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), ratio);
    __m256 fl = _mm256_floor_ps(a);
    /* up is all ones (-1) where the draw rounds up: subtracting it adds one. */
    __m256i up = _mm256_castps_si256(_mm256_cmp_ps(dr_rng32_uniform_avx2(draws), _mm256_sub_ps(a, fl), _CMP_LT_OQ));
    __m256i lev = _mm256_min_epi32(_mm256_sub_epi32(_mm256_cvttps_epi32(fl), up), s);
    /* Negated where x's sign bit is set. sign_epi32 zeroes where x's bits are zero, at
     * +0.0, whose level is 0 anyway; -0.0's is 0 negated. */
    return _mm256_sign_epi32(lev, _mm256_castps_si256(x));
}

/* The levels of b[0..m) with the draws of r onwards, m below r's next multiple of 2^32;
 * returns the prefix done: whole steps of 32 (and a last 16) at width 1, of 8 at width 2. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) size_t
levels_run_avx2(const float *b, size_t m, __m256 vratio, __m256i vs, dr_rng32_avx2 *r, uint8_t *levels, size_t width)
{
    size_t i = 0;
    /* One loop per width: a test of it per step cost as much as the packing. */
    if (width == 1) {
        /* 32 levels per step: four generator chains in flight, and one pass of packs
         * and one permute for all of them. |level| <= 127 here: the saturating packs
         * never saturate; the permute undoes the in-lane order of the packs. */
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; i + 32 <= m; i += 32) {
            dr_read_ahead(b + i);
            dr_read_ahead(b + i + 16);
            __m256i l0 = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i l1 = levels8_avx2(_mm256_loadu_ps(b + i + 8), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i l2 = levels8_avx2(_mm256_loadu_ps(b + i + 16), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i l3 = levels8_avx2(_mm256_loadu_ps(b + i + 24), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(l0, l1), _mm256_packs_epi32(l2, l3));
            _mm256_storeu_si256((__m256i *)(levels + i), _mm256_permutevar8x32_epi32(bytes, order));
        }
        if (i + 16 <= m) {
            __m256i l0 = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i l1 = levels8_avx2(_mm256_loadu_ps(b + i + 8), dr_rng32_avx2_next_within(r), vratio, vs);
            __m256i w = _mm256_packs_epi32(l0, l1);
            __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w, w), order);
            _mm_storeu_si128((__m128i *)(levels + i), _mm256_castsi256_si128(bytes));
            i += 16;
        }
    } else {
        for (; i + 8 <= m; i += 8) {
            dr_read_ahead(b + i);
            __m256i lev = levels8_avx2(_mm256_loadu_ps(b + i), dr_rng32_avx2_next_within(r), vratio, vs);
            _mm_storeu_si128((__m128i *)(levels + 2 * i),
                             _mm_packs_epi32(_mm256_castsi256_si128(lev), _mm256_extracti128_si256(lev, 1)));
        }
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_qsgd_levels_avx2(const float *b, size_t m, float ratio, uint32_t s,
                                          uint64_t key, size_t first, uint8_t *levels,
                                          size_t width)
{
    dr_rng32_avx2 r = dr_rng32_avx2_start(key, first);
    /* A bucket across a multiple of 2^32 of the counter leaves the rest to the caller. */
    return levels_run_avx2(b, dr_rng32_draws_within(first, m), _mm256_set1_ps(ratio), _mm256_set1_epi32((int)s),
                           &r, levels, width);
}

/* The group kernels (dr_qsgd_buckets_*) encode buckets GROUP at a time: their sums of
 * squares, then their norms and ratios by vector square roots and divisions, then their
 * levels, with the next group's sums read between the levels, bucket by bucket, so that
 * reads from memory overlap the levels' arithmetic (a group's sums read all at once made
 * buckets of 512 1.15x as slow). Bucket by bucket, the sweep waited on each bucket's
 * square root and division and paid two calls and a generator start per bucket: 25.6M
 * in buckets of 128 encoded in 12.8-13.4 ms on AVX-512 and 14.6-15.0 on AVX2, now in
 * 11.6-12.1 and 12.7-13.0 (Zen 4, one thread; docs/performance.md). */
#define GROUP 8

/* The norms (to norms[4k..), k < g) and ratios s / norm (float, 0 for a zero norm) of g
 * buckets from their sums of squares sq[0..g), as bucket_norm in qsgd.c computes them.
 * Returns 0, having written nothing, where one of them needs that code: a sum past
 * DBL_MAX (an Inf or a NaN in x, which it reports) or a ratio beyond float (a norm
 * below about s * 1e-38, whose levels take double arithmetic). */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) int group_norms(const double *sq, size_t g, uint32_t s,
                                                                          uint8_t *norms, float *ratio)
{
    const __m256d finite_max = _mm256_set1_pd(DBL_MAX), float_max = _mm256_set1_pd((double)FLT_MAX);
    const __m256d vs = _mm256_set1_pd((double)s), zero = _mm256_setzero_pd();
    double live[GROUP] = {0}; /* zero past g: a zero bucket's */
    float norm32[GROUP];
    size_t h;
    /* Fixed sizes where the group is whole: a copy of g entries was a call to memcpy. */
    if (g == GROUP)
        memcpy(live, sq, sizeof live);
    else
        for (h = 0; h < g; h++)
            live[h] = sq[h];
    for (h = 0; h < GROUP; h += 4) {
        __m256d q = _mm256_loadu_pd(live + h), root, norm, quot;
        __m128 narrow;
        if (_mm256_movemask_pd(_mm256_cmp_pd(q, finite_max, _CMP_LE_OQ)) != 0xf)
            return 0;
        /* Past FLT_MAX the norm is sent as FLT_MAX, still >= every |x|. */
        root = _mm256_sqrt_pd(q);
        norm = _mm256_blendv_pd(float_max, root, _mm256_cmp_pd(root, float_max, _CMP_LT_OQ));
        narrow = _mm256_cvtpd_ps(norm);
        norm = _mm256_cvtps_pd(narrow);
        quot = _mm256_and_pd(_mm256_div_pd(vs, norm), _mm256_cmp_pd(norm, zero, _CMP_GT_OQ));
        if (_mm256_movemask_pd(_mm256_cmp_pd(quot, float_max, _CMP_GT_OQ)) != 0)
            return 0;
        _mm_storeu_ps(norm32 + h, narrow);
        _mm_storeu_ps(ratio + h, _mm256_cvtpd_ps(quot));
    }
    if (g == GROUP)
        memcpy(norms, norm32, sizeof norm32);
    else
        for (h = 0; h < g; h++)
            memcpy(norms + 4 * h, norm32 + h, 4);
    return 1;
}

/* The walk over the buckets that dr_qsgd_buckets_avx512 and _avx2 share, written once:
 * in a function with their parameters and a generator `r` started at `first`, it runs
 * SUM_SQUARES(b, m) for a bucket's sum of squares and LEVELS(b, ratio, out) for its
 * levels, and returns how many buckets it did (qsgd_simd.h). The next group's sums are
 * taken bucket by bucket between this group's levels. */
#define QSGD_GROUP_WALK(SUM_SQUARES, LEVELS)                                                            \
    do {                                                                                                \
        size_t within = dr_rng32_draws_within(first, count * bucket_size) / bucket_size, done = 0, k;  \
        size_t g = within < GROUP ? within : GROUP;                                                     \
        double sq[GROUP];                                                                               \
        float ratio[GROUP];                                                                             \
        for (k = 0; k < g; k++)                                                                         \
            sq[k] = SUM_SQUARES(x + k * bucket_size, bucket_size);                                      \
        while (g > 0 && group_norms(sq, g, s, norms + 4 * done, ratio)) {                               \
            size_t later = within - done - g < GROUP ? within - done - g : GROUP;                        \
            for (k = 0; k < g; k++) {                                                                   \
                const float *b = x + (done + k) * bucket_size;                                          \
                if (k < later)                                                                          \
                    sq[k] = SUM_SQUARES(b + g * bucket_size, bucket_size);                              \
                LEVELS(b, ratio[k], levels + (done + k) * bucket_size * width);                         \
            }                                                                                           \
            done += g;                                                                                  \
            g = later;                                                                                  \
        }                                                                                               \
        return done;                                                                                    \
    } while (0)

/* The levels of the 16 elements x with their 16 draws, for a = |x| * ratio. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) __m512i
levels16_avx512(__m512 x, __m512i draws, __m512 ratio, __m512i s)
{
    __m512 a = _mm512_mul_ps(_mm512_abs_ps(x), ratio);
    __m512 fl = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __mmask16 up = _mm512_cmp_ps_mask(dr_rng32_uniform_avx512(draws), _mm512_sub_ps(a, fl), _CMP_LT_OQ);
    __m512i lev = _mm512_cvttps_epi32(fl);
    lev = _mm512_min_epi32(_mm512_mask_add_epi32(lev, up, lev, _mm512_set1_epi32(1)), s);
    return _mm512_mask_sub_epi32(lev, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ),
                                 _mm512_setzero_si512(), lev);
}

DR_TARGET_AVX512 static inline __attribute__((always_inline)) void store_levels16(uint8_t *levels, __m512i lev,
                                                                                size_t width)
{
    if (width == 1)
        _mm_storeu_si128((__m128i *)levels, _mm512_cvtepi32_epi8(lev));
    else
        _mm256_storeu_si256((__m256i *)levels, _mm512_cvtepi32_epi16(lev));
}

DR_TARGET_AVX512 size_t dr_qsgd_levels_avx512(const float *b, size_t m, float ratio,
                                              uint32_t s, uint64_t key, size_t first,
                                              uint8_t *levels, size_t width)
{
    dr_rng32_avx512 r = dr_rng32_avx512_start(key, first);
    const __m512 vratio = _mm512_set1_ps(ratio);
    const __m512i vs = _mm512_set1_epi32((int)s);
    size_t i = 0, within = dr_rng32_draws_within(first, m); /* as on AVX2 */
    for (; i + 16 <= within; i += 16) {
        __m512 x = _mm512_loadu_ps(b + i);
        dr_read_ahead(b + i);
        store_levels16(levels + i * width, levels16_avx512(x, dr_rng32_avx512_next_within(&r), vratio, vs), width);
    }
    return i;
}

DR_TARGET_AVX512 static inline __attribute__((always_inline)) double sum_squares_avx512(const float *b, size_t m)
{
    __m512d a[4], t;
    __m256d h;
    __m128d q;
    size_t i = 0;
    int k;
    for (k = 0; k < 4; k++)
        a[k] = _mm512_setzero_pd();
    /* Lane i % 32 as qstats; the tail by zero-filling loads: adding +0.0 to a sum of
     * squares (never -0.0) leaves it as it was. */
    for (; i < m; i += 32) {
        dr_read_ahead(b + i);
        if (i + 16 < m) /* b + i + 16 must stay inside the array (pointer arithmetic) */
            dr_read_ahead(b + i + 16);
        for (k = 0; k < 4; k++) {
            size_t at = i + 8u * (size_t)k;
            __mmask8 live = at >= m ? 0 : m - at >= 8 ? 0xff : (__mmask8)((1u << (m - at)) - 1u);
            __m256 f;
            /* Whole vectors by plain loads: here a masked load waits for the stores before
             * it (the levels of the buckets before), which cost a third of the encode. */
            if (live == 0xff)
                f = _mm256_loadu_ps(b + at);
            else
                f = _mm256_maskz_loadu_ps(live, b + (at < m ? at : 0));
            __m512d v = _mm512_cvtps_pd(f);
            a[k] = _mm512_add_pd(a[k], _mm512_mul_pd(v, v));
        }
    }
    /* dr_lanes_total's order: fold 32 -> 8, then ((m0+m4)+(m2+m6)) + ((m1+m5)+(m3+m7)). */
    t = _mm512_add_pd(_mm512_add_pd(a[0], a[1]), _mm512_add_pd(a[2], a[3]));
    h = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}

DR_TARGET_AVX512 double dr_qsgd_sum_squares_avx512(const float *b, size_t m)
{
    return sum_squares_avx512(b, m);
}

/* One bucket's levels for QSGD_GROUP_WALK, the generator continuing across buckets. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) void
bucket_levels_avx512(const float *b, size_t m, float ratio, __m512i s, dr_rng32_avx512 *r, uint8_t *out, size_t width)
{
    const __m512 vratio = _mm512_set1_ps(ratio);
    size_t i;
    for (i = 0; i < m; i += 16)
        store_levels16(out + i * width,
                       levels16_avx512(_mm512_loadu_ps(b + i), dr_rng32_avx512_next_within(r), vratio, s), width);
}

DR_TARGET_AVX512 size_t dr_qsgd_buckets_avx512(const float *x, size_t count, size_t bucket_size, uint32_t s,
                                               uint64_t key, size_t first, uint8_t *norms, uint8_t *levels,
                                               size_t width)
{
    const __m512i vs = _mm512_set1_epi32((int)s);
    dr_rng32_avx512 r = dr_rng32_avx512_start(key, first);
#define LEVELS_AVX512(b, ratio, out) bucket_levels_avx512(b, bucket_size, ratio, vs, &r, out, width)
    QSGD_GROUP_WALK(sum_squares_avx512, LEVELS_AVX512);
#undef LEVELS_AVX512
}

DR_TARGET_AVX2 static inline __attribute__((always_inline)) double sum_squares_avx2(const float *b, size_t m)
{
    /* Lanes 4r..4r+3 in register r, r < 8; m is a multiple of 32. */
    __m256d a[8], t0, t1, t;
    __m128d q;
    size_t i;
    int r;
    for (r = 0; r < 8; r++)
        a[r] = _mm256_setzero_pd();
    for (i = 0; i < m; i += 32) {
        dr_read_ahead(b + i);
        dr_read_ahead(b + i + 16);
        for (r = 0; r < 8; r++) {
            /* 4 floats a load: converted from memory, no extract of a high half. */
            __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4 * r));
            a[r] = _mm256_add_pd(a[r], _mm256_mul_pd(v, v));
        }
    }
    /* dr_lanes_total's order: m_j = (l_j + l_j+8) + (l_j+16 + l_j+24), j < 8 (registers
     * r and r + 2, r + 4, r + 6), then ((m0+m4) + (m2+m6)) + ((m1+m5) + (m3+m7)). */
    t0 = _mm256_add_pd(_mm256_add_pd(a[0], a[2]), _mm256_add_pd(a[4], a[6])); /* m0..m3 */
    t1 = _mm256_add_pd(_mm256_add_pd(a[1], a[3]), _mm256_add_pd(a[5], a[7])); /* m4..m7 */
    t = _mm256_add_pd(t0, t1); /* m0+m4, m1+m5, m2+m6, m3+m7 */
    q = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1)); /* (m0+m4)+(m2+m6), (m1+m5)+(m3+m7) */
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}

DR_TARGET_AVX2 double dr_qsgd_sum_squares_avx2(const float *b, size_t m)
{
    return sum_squares_avx2(b, m);
}

DR_TARGET_AVX2 size_t dr_qsgd_buckets_avx2(const float *x, size_t count, size_t bucket_size, uint32_t s,
                                            uint64_t key, size_t first, uint8_t *norms, uint8_t *levels, size_t width)
{
    const __m256i vs = _mm256_set1_epi32((int)s);
    dr_rng32_avx2 r = dr_rng32_avx2_start(key, first);
#define LEVELS_AVX2(b, ratio, out) levels_run_avx2(b, bucket_size, _mm256_set1_ps(ratio), vs, &r, out, width)
    QSGD_GROUP_WALK(sum_squares_avx2, LEVELS_AVX2);
#undef LEVELS_AVX2
}

DR_TARGET_AVX2 size_t dr_qsgd_scale_avx2(const uint8_t *levels, size_t m, size_t width,
                                         float step, float *out, int stream)
{
    const __m256 vstep = _mm256_set1_ps(step);
    size_t i = 0;
    stream &= ((uintptr_t)out & 15u) == 0;
    for (; i + 8 <= m; i += 8) {
        __m256i l = width == 1 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(levels + i)))
                               : _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(levels + 2 * i)));
        dr_store8_avx2(out + i, _mm256_mul_ps(vstep, _mm256_cvtepi32_ps(l)), stream);
    }
    return i;
}

/* out[i] = step * level i for the whole vectors of levels[0..m); returns their length. */
DR_TARGET_AVX512 static inline __attribute__((always_inline)) size_t
scale_run_avx512(const uint8_t *levels, size_t m, size_t width, __m512 step, float *out, int stream)
{
    size_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m512i l = width == 1 ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(levels + i)))
                               : _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(levels + 2 * i)));
        __m512 v = _mm512_mul_ps(step, _mm512_cvtepi32_ps(l));
        dr_store8_avx2(out + i, _mm512_castps512_ps256(v), stream);
        dr_store8_avx2(out + i + 8, _mm512_extractf32x8_ps(v, 1), stream);
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_qsgd_scale_avx512(const uint8_t *levels, size_t m, size_t width,
                                             float step, float *out, int stream)
{
    return scale_run_avx512(levels, m, width, _mm512_set1_ps(step), out, stream & (((uintptr_t)out & 15u) == 0));
}

DR_TARGET_AVX512 size_t dr_qsgd_scale_buckets_avx512(const uint8_t *levels, size_t count, size_t bucket_size,
                                                     size_t width, const uint8_t *norms, uint32_t s, float *out,
                                                     int stream)
{
    const __m512 vs = _mm512_set1_ps((float)s);
    size_t done, k;
    stream &= ((uintptr_t)out & 15u) == 0;
    /* Sixteen buckets' steps norm / s by one division, as decode_buckets in qsgd.c
     * divides each bucket's. */
    for (done = 0; done < count; done += 16) {
        size_t g = count - done < 16 ? count - done : 16;
        float step[16];
        _mm512_storeu_ps(step, _mm512_div_ps(_mm512_maskz_loadu_ps((__mmask16)((1u << g) - 1u), norms + 4 * done), vs));
        for (k = 0; k < g; k++)
            scale_run_avx512(levels + (done + k) * bucket_size * width, bucket_size, width, _mm512_set1_ps(step[k]),
                             out + (done + k) * bucket_size, stream);
    }
    return count;
}

DR_TARGET_AVX2 int dr_qsgd_levels_in_range_avx2(const uint8_t *levels, size_t n, size_t width,
                                                uint32_t s, size_t *done)
{
    __m256i bad = _mm256_setzero_si256();
    size_t i = 0, bytes = n * width;
    if (width == 1) {
        /* s < 128 here, so the bounds fit int8. */
        const __m256i hi = _mm256_set1_epi8((char)s), lo = _mm256_set1_epi8((char)-(int)s);
        for (; i + 32 <= bytes; i += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(levels + i));
            bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi8(v, hi), _mm256_cmpgt_epi8(lo, v)));
        }
    } else {
        const __m256i hi = _mm256_set1_epi16((short)s), lo = _mm256_set1_epi16((short)-(int)s);
        for (; i + 32 <= bytes; i += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(levels + i));
            bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi16(v, hi), _mm256_cmpgt_epi16(lo, v)));
        }
    }
    *done = i / width;
    return _mm256_testz_si256(bad, bad);
}
#endif
