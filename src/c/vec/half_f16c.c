/* F16C variants of the half conversions (AVX2-level CPUs all have F16C). */
#include "deepreduce.h"
#include "half_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_f32_to_f16_f16c(const float *x, uint16_t *out, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(out + i), h);
    }
    return i;
}

DR_TARGET_AVX2 size_t dr_f16_to_f32_f16c(const uint16_t *x, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + i));
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    return i;
}
#endif
