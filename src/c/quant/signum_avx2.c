/* AVX2 signum sweep: eight momenta per step, computed as the scalar loop computes them
 * (two products, then their sum: the core builds with -ffp-contract=off, so no fused
 * multiply-add on either path), their signs movemasked into one bitmap byte, and their
 * largest sign-cleared bit pattern kept to tell an Inf or a NaN. */
#include "deepreduce.h"
#include "signum_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* Eight momenta at i: stored, their signs' byte written, their largest bit pattern kept. */
DR_TARGET_AVX2 static inline __attribute__((always_inline)) void
signum8(float *m_new, const float *m_old, const float *g, size_t i, __m256 va, __m256 vb,
        uint8_t *bits, __m256i *top, int stream)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256 m = _mm256_loadu_ps(g + i);
    if (m_old != NULL)
        m = _mm256_add_ps(_mm256_mul_ps(va, m), _mm256_mul_ps(vb, _mm256_loadu_ps(m_old + i)));
    dr_store8_avx2(m_new + i, m, stream);
    *top = _mm256_max_epi32(*top, _mm256_and_si256(_mm256_castps_si256(m), abs_mask));
    bits[i / 8] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GE_OQ));
}

DR_TARGET_AVX2 size_t dr_signum_fused_avx2(float *m_new, const float *m_old, const float *g,
                                           size_t n, float a, float beta, uint8_t *bits,
                                           uint32_t *nonfinite, int stream)
{
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(beta);
    __m256i top = _mm256_setzero_si256();
    size_t i = 0;
    /* A line of each input per step, asked for ahead (dr_read_ahead). */
    for (; i + 16 <= n; i += 16) {
        dr_read_ahead(g + i);
        if (m_old != NULL)
            dr_read_ahead(m_old + i);
        signum8(m_new, m_old, g, i, va, vb, bits, &top, stream);
        signum8(m_new, m_old, g, i + 8, va, vb, bits, &top, stream);
    }
    for (; i + 8 <= n; i += 8)
        signum8(m_new, m_old, g, i, va, vb, bits, &top, stream);
    if (stream)
        dr_stream_fence();
    *nonfinite |= (uint32_t)!_mm256_testz_si256(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x7f7fffff)),
                                                _mm256_set1_epi32(-1));
    return i;
}
#endif
