/* AVX2 and AVX-512 variants of the quantisers' sums: 32 double lanes either way (eight
 * registers of four on AVX2, four of eight on AVX-512), element i into lane i % 32, as
 * the scalar code does, so the sums are the same doubles on every path; the registers
 * are independent chains of adds, so a sweep is not bound by the add's latency.
 * Multiplies and adds stay separate instructions (the build passes -ffp-contract=off):
 * a fused multiply-add would round differently from the scalar code. */
#include "deepreduce.h"
#include "qstats_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* AVX2: lanes 4k..4k+3 in register k, k < 8. */
#define R2 (DR_QS_LANES / 4)
/* AVX-512: lanes 8k..8k+7 in register k, k < 4. */
#define R5 (DR_QS_LANES / 8)

DR_TARGET_AVX2 static __m256d term_avx2(int what, __m256d v, __m256d mean)
{
    const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    switch (what) {
    case DR_QS_SQUARES: return _mm256_mul_pd(v, v);
    case DR_QS_SUM: return v;
    case DR_QS_SQ_DEV: v = _mm256_sub_pd(v, mean); return _mm256_mul_pd(v, v);
    default: return _mm256_and_pd(v, abs_mask);
    }
}

/* The largest of tops[0..8) and *max_abs into *max_abs. (Plain code on a stored
 * vector: a call that passes a vector register leaves the upper register state dirty,
 * and the SSE code after it runs several times slower.) */
static void fold_max(const float *tops, float *max_abs)
{
    int j;
    for (j = 0; j < 8; j++)
        *max_abs = tops[j] > *max_abs ? tops[j] : *max_abs;
}

DR_TARGET_AVX2 size_t dr_qs_lanes_avx2(int what, const float *x, size_t n, double mean,
                                       dr_lanes *acc, float *max_abs)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256d m = _mm256_set1_pd(mean);
    __m256d a[R2];
    __m256 top = _mm256_set1_ps(*max_abs);
    float tops[8];
    size_t i = 0;
    int k;
    for (k = 0; k < R2; k++)
        a[k] = _mm256_loadu_pd(acc->lane + 4 * k);
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R2; k += 2) {
            __m256 v = _mm256_loadu_ps(x + i + 4 * k);
            a[k] = _mm256_add_pd(a[k], term_avx2(what, _mm256_cvtps_pd(_mm256_castps256_ps128(v)), m));
            a[k + 1] = _mm256_add_pd(a[k + 1], term_avx2(what, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m));
            if (what == DR_QS_SUM)
                top = _mm256_max_ps(_mm256_and_ps(v, abs_mask), top);
        }
    }
    for (k = 0; k < R2; k++)
        _mm256_storeu_pd(acc->lane + 4 * k, a[k]);
    _mm256_storeu_ps(tops, top);
    fold_max(tops, max_abs);
    return i;
}

DR_TARGET_AVX512 static __m512d term_avx512(int what, __m512d v, __m512d mean)
{
    switch (what) {
    case DR_QS_SQUARES: return _mm512_mul_pd(v, v);
    case DR_QS_SUM: return v;
    case DR_QS_SQ_DEV: v = _mm512_sub_pd(v, mean); return _mm512_mul_pd(v, v);
    default: return _mm512_abs_pd(v);
    }
}

DR_TARGET_AVX512 size_t dr_qs_lanes_avx512(int what, const float *x, size_t n, double mean,
                                           dr_lanes *acc, float *max_abs)
{
    const __m512d m = _mm512_set1_pd(mean);
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512d a[R5];
    __m512 top = _mm512_set1_ps(*max_abs);
    float tops[8];
    size_t i = 0;
    int k;
    for (k = 0; k < R5; k++)
        a[k] = _mm512_loadu_pd(acc->lane + 8 * k);
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R5; k += 2) {
            __m512 v = _mm512_loadu_ps(x + i + 8 * k);
            a[k] = _mm512_add_pd(a[k], term_avx512(what, _mm512_cvtps_pd(_mm512_castps512_ps256(v)), m));
            a[k + 1] = _mm512_add_pd(a[k + 1], term_avx512(what, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), m));
            if (what == DR_QS_SUM)
                top = _mm512_max_ps(_mm512_and_ps(v, abs_mask), top);
        }
    }
    for (k = 0; k < R5; k++)
        _mm512_storeu_pd(acc->lane + 8 * k, a[k]);
    _mm256_storeu_ps(tops, _mm256_max_ps(_mm512_castps512_ps256(top), _mm512_extractf32x8_ps(top, 1)));
    fold_max(tops, max_abs);
    return i;
}

DR_TARGET_AVX2 size_t dr_qs_shifted_avx2(const float *x, size_t n, double shift, dr_lanes *dev,
                                         dr_lanes *sq, float *max_abs)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256d vshift = _mm256_set1_pd(shift);
    __m256d d[R2], q[R2];
    __m256 top = _mm256_set1_ps(*max_abs);
    float tops[8];
    size_t i = 0;
    int k;
    for (k = 0; k < R2; k++) {
        d[k] = _mm256_loadu_pd(dev->lane + 4 * k);
        q[k] = _mm256_loadu_pd(sq->lane + 4 * k);
    }
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R2; k += 2) {
            __m256 v = _mm256_loadu_ps(x + i + 4 * k);
            __m256d lo = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), vshift);
            __m256d hi = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vshift);
            d[k] = _mm256_add_pd(d[k], lo);
            d[k + 1] = _mm256_add_pd(d[k + 1], hi);
            q[k] = _mm256_add_pd(q[k], _mm256_mul_pd(lo, lo));
            q[k + 1] = _mm256_add_pd(q[k + 1], _mm256_mul_pd(hi, hi));
            top = _mm256_max_ps(_mm256_and_ps(v, abs_mask), top);
        }
    }
    for (k = 0; k < R2; k++) {
        _mm256_storeu_pd(dev->lane + 4 * k, d[k]);
        _mm256_storeu_pd(sq->lane + 4 * k, q[k]);
    }
    _mm256_storeu_ps(tops, top);
    fold_max(tops, max_abs);
    return i;
}

DR_TARGET_AVX512 size_t dr_qs_shifted_avx512(const float *x, size_t n, double shift,
                                             dr_lanes *dev, dr_lanes *sq, float *max_abs)
{
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512d vshift = _mm512_set1_pd(shift);
    __m512d d[R5], q[R5];
    __m512 top = _mm512_set1_ps(*max_abs);
    float tops[8];
    size_t i = 0;
    int k;
    for (k = 0; k < R5; k++) {
        d[k] = _mm512_loadu_pd(dev->lane + 8 * k);
        q[k] = _mm512_loadu_pd(sq->lane + 8 * k);
    }
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R5; k += 2) {
            __m512 v = _mm512_loadu_ps(x + i + 8 * k);
            __m512d lo = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), vshift);
            __m512d hi = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)), vshift);
            d[k] = _mm512_add_pd(d[k], lo);
            d[k + 1] = _mm512_add_pd(d[k + 1], hi);
            q[k] = _mm512_add_pd(q[k], _mm512_mul_pd(lo, lo));
            q[k + 1] = _mm512_add_pd(q[k + 1], _mm512_mul_pd(hi, hi));
            top = _mm512_max_ps(_mm512_and_ps(v, abs_mask), top);
        }
    }
    for (k = 0; k < R5; k++) {
        _mm512_storeu_pd(dev->lane + 8 * k, d[k]);
        _mm512_storeu_pd(sq->lane + 8 * k, q[k]);
    }
    _mm256_storeu_ps(tops, _mm256_max_ps(_mm512_castps512_ps256(top), _mm512_extractf32x8_ps(top, 1)));
    fold_max(tops, max_abs);
    return i;
}

DR_TARGET_AVX2 size_t dr_qs_max_bits_avx2(const float *x, size_t n, uint32_t *top)
{
    /* Bits with the sign cleared are below 2^31: the signed max is the unsigned one. */
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i m0 = _mm256_set1_epi32((int)*top), m1 = m0;
    uint32_t lanes[8];
    size_t i = 0;
    int j;
    for (; i + 16 <= n; i += 16) {
        dr_read_ahead(x + i);
        m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), abs_mask));
        m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8)), abs_mask));
    }
    _mm256_storeu_si256((__m256i *)lanes, _mm256_max_epi32(m0, m1));
    for (j = 0; j < 8; j++)
        *top = lanes[j] > *top ? lanes[j] : *top;
    return i;
}

DR_TARGET_AVX512 size_t dr_qs_max_bits_avx512(const float *x, size_t n, uint32_t *top)
{
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    __m512i m0 = _mm512_set1_epi32((int)*top), m1 = m0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        m0 = _mm512_max_epi32(m0, _mm512_and_si512(_mm512_loadu_si512(x + i), abs_mask));
        m1 = _mm512_max_epi32(m1, _mm512_and_si512(_mm512_loadu_si512(x + i + 16), abs_mask));
    }
    *top = (uint32_t)_mm512_reduce_max_epi32(_mm512_max_epi32(m0, m1));
    return i;
}

DR_TARGET_AVX2 size_t dr_qs_split_avx2(const float *x, size_t n, dr_lanes *neg,
                                       dr_lanes *nonneg, size_t *count_neg)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256d ng[R2], ps[R2];
    size_t i = 0, count = 0;
    int k;
    for (k = 0; k < R2; k++) {
        ng[k] = _mm256_loadu_pd(neg->lane + 4 * k);
        ps[k] = _mm256_loadu_pd(nonneg->lane + 4 * k);
    }
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R2; k += 2) {
            __m256 v = _mm256_loadu_ps(x + i + 4 * k);
            /* The packing rule: x >= 0 (false for NaN). */
            __m256 ge = _mm256_cmp_ps(v, zero, _CMP_GE_OQ);
            __m256 pos = _mm256_and_ps(ge, v), negv = _mm256_andnot_ps(ge, v);
            ps[k] = _mm256_add_pd(ps[k], _mm256_cvtps_pd(_mm256_castps256_ps128(pos)));
            ps[k + 1] = _mm256_add_pd(ps[k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(pos, 1)));
            ng[k] = _mm256_add_pd(ng[k], _mm256_cvtps_pd(_mm256_castps256_ps128(negv)));
            ng[k + 1] = _mm256_add_pd(ng[k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(negv, 1)));
            count += 8u - (size_t)_mm_popcnt_u32((unsigned)_mm256_movemask_ps(ge));
        }
    }
    for (k = 0; k < R2; k++) {
        _mm256_storeu_pd(neg->lane + 4 * k, ng[k]);
        _mm256_storeu_pd(nonneg->lane + 4 * k, ps[k]);
    }
    *count_neg += count;
    return i;
}

DR_TARGET_AVX512 size_t dr_qs_split_avx512(const float *x, size_t n, dr_lanes *neg,
                                           dr_lanes *nonneg, size_t *count_neg)
{
    __m512d ng[R5], ps[R5];
    size_t i = 0, count = 0;
    int k;
    for (k = 0; k < R5; k++) {
        ng[k] = _mm512_loadu_pd(neg->lane + 8 * k);
        ps[k] = _mm512_loadu_pd(nonneg->lane + 8 * k);
    }
    for (; i + DR_QS_LANES <= n; i += DR_QS_LANES) {
        dr_read_ahead(x + i);
        dr_read_ahead(x + i + 16);
        for (k = 0; k < R5; k++) {
            __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8 * k));
            __mmask8 ge = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GE_OQ);
            ps[k] = _mm512_mask_add_pd(ps[k], ge, ps[k], v);
            ng[k] = _mm512_mask_add_pd(ng[k], (__mmask8)~ge, ng[k], v);
            count += 8u - (size_t)_mm_popcnt_u32((unsigned)ge);
        }
    }
    for (k = 0; k < R5; k++) {
        _mm512_storeu_pd(neg->lane + 8 * k, ng[k]);
        _mm512_storeu_pd(nonneg->lane + 8 * k, ps[k]);
    }
    *count_neg += count;
    return i;
}
#endif
