/* AVX2 and AVX-512 variants of the quantisers' sums: eight double lanes either way (two
 * registers of four on AVX2, one of eight on AVX-512), element i into lane i % 8, as the
 * scalar code does, so the sums are the same doubles on every path. Multiplies and adds
 * stay separate instructions (the build passes -ffp-contract=off): a fused multiply-add
 * would round differently from the scalar code. */
#include "deepreduce.h"
#include "qstats_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

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

DR_TARGET_AVX2 size_t dr_qs_lanes_avx2(int what, const float *x, size_t n, double mean,
                                       dr_lanes *acc, float *max_abs)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256d m = _mm256_set1_pd(mean);
    __m256d lo = _mm256_loadu_pd(acc->lane), hi = _mm256_loadu_pd(acc->lane + 4);
    __m256 top = _mm256_set1_ps(*max_abs);
    float tops[8];
    size_t i = 0;
    int j;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        lo = _mm256_add_pd(lo, term_avx2(what, _mm256_cvtps_pd(_mm256_castps256_ps128(v)), m));
        hi = _mm256_add_pd(hi, term_avx2(what, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m));
        if (what == DR_QS_SUM)
            top = _mm256_max_ps(_mm256_and_ps(v, abs_mask), top);
    }
    _mm256_storeu_pd(acc->lane, lo);
    _mm256_storeu_pd(acc->lane + 4, hi);
    _mm256_storeu_ps(tops, top);
    for (j = 0; j < 8; j++)
        *max_abs = tops[j] > *max_abs ? tops[j] : *max_abs;
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
    /* One chain of adds: a second accumulator would change the order of the sums. */
    __m512d a = _mm512_loadu_pd(acc->lane);
    __m256 top = _mm256_set1_ps(*max_abs);
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    float tops[8];
    size_t i = 0;
    int j;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        a = _mm512_add_pd(a, term_avx512(what, _mm512_cvtps_pd(v), m));
        if (what == DR_QS_SUM)
            top = _mm256_max_ps(_mm256_and_ps(v, abs_mask), top);
    }
    _mm512_storeu_pd(acc->lane, a);
    _mm256_storeu_ps(tops, top);
    for (j = 0; j < 8; j++)
        *max_abs = tops[j] > *max_abs ? tops[j] : *max_abs;
    return i;
}

DR_TARGET_AVX2 size_t dr_qs_split_avx2(const float *x, size_t n, dr_lanes *neg,
                                       dr_lanes *nonneg, size_t *count_neg)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256d neg_lo = _mm256_loadu_pd(neg->lane), neg_hi = _mm256_loadu_pd(neg->lane + 4);
    __m256d pos_lo = _mm256_loadu_pd(nonneg->lane), pos_hi = _mm256_loadu_pd(nonneg->lane + 4);
    size_t i = 0, count = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        /* The packing rule: x >= 0 (false for NaN). */
        __m256 ge = _mm256_cmp_ps(v, zero, _CMP_GE_OQ);
        __m256 pos = _mm256_and_ps(ge, v), negv = _mm256_andnot_ps(ge, v);
        pos_lo = _mm256_add_pd(pos_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(pos)));
        pos_hi = _mm256_add_pd(pos_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(pos, 1)));
        neg_lo = _mm256_add_pd(neg_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(negv)));
        neg_hi = _mm256_add_pd(neg_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(negv, 1)));
        count += 8u - (size_t)_mm_popcnt_u32((unsigned)_mm256_movemask_ps(ge));
    }
    _mm256_storeu_pd(neg->lane, neg_lo);
    _mm256_storeu_pd(neg->lane + 4, neg_hi);
    _mm256_storeu_pd(nonneg->lane, pos_lo);
    _mm256_storeu_pd(nonneg->lane + 4, pos_hi);
    *count_neg += count;
    return i;
}

DR_TARGET_AVX512 size_t dr_qs_split_avx512(const float *x, size_t n, dr_lanes *neg,
                                           dr_lanes *nonneg, size_t *count_neg)
{
    __m512d negs = _mm512_loadu_pd(neg->lane), poss = _mm512_loadu_pd(nonneg->lane);
    size_t i = 0, count = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        __mmask8 ge = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GE_OQ);
        poss = _mm512_mask_add_pd(poss, ge, poss, v);
        negs = _mm512_mask_add_pd(negs, (__mmask8)~ge, negs, v);
        count += 8u - (size_t)_mm_popcnt_u32((unsigned)ge);
    }
    _mm512_storeu_pd(neg->lane, negs);
    _mm512_storeu_pd(nonneg->lane, poss);
    *count_neg += count;
    return i;
}
#endif
