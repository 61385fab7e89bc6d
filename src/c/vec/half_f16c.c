/* F16C variants of the half conversions (AVX2-level CPUs all have F16C). */
#include "deepreduce.h"
#include "half_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_f32_to_f16_f16c(const float *x, uint16_t *out, size_t n, int stream)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        dr_read_ahead(x + i);
        if (stream)
            _mm_stream_si128((__m128i *)(void *)(out + i), h);
        else
            _mm_storeu_si128((__m128i *)(void *)(out + i), h);
    }
    if (stream)
        dr_stream_fence();
    return i;
}

DR_TARGET_AVX2 size_t dr_f16_to_f32_f16c(const uint16_t *x, float *out, size_t n, int stream,
                                          uint16_t *top)
{
    const __m128i magnitude = _mm_set1_epi16(0x7fff);
    __m128i largest = _mm_setzero_si128();
    uint16_t lanes[8];
    size_t i = 0, l;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + i));
        largest = _mm_max_epu16(largest, _mm_and_si128(h, magnitude));
        dr_store8_avx2(out + i, _mm256_cvtph_ps(h), stream);
    }
    if (stream)
        dr_stream_fence();
    _mm_storeu_si128((__m128i *)(void *)lanes, largest);
    for (l = 0; l < 8; l++)
        *top = lanes[l] > *top ? lanes[l] : *top;
    return i;
}
#endif
