/* The table lookups of lookup_simd.h that loop over a whole array. */
#include "deepreduce.h"
#include "lookup_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX512 size_t dr_signed_lookup128_avx512(const uint8_t *codes, size_t n, const float *table,
                                                   float *out)
{
    /* Streaming the output spared a fifth of the sweep's time at 25.6M elements. */
    const int stream = dr_stream_output(out, n);
    __m512 t[8];
    size_t i = 0;
    int k;
    for (k = 0; k < 8; k++)
        t[k] = _mm512_loadu_ps(table + 16 * k);
    for (; i + 16 <= n; i += 16) {
        __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes + i)));
        /* Bit 7 of the code moved to the float's sign bit: -v as the scalar code's (a
         * code below 128 keeps its value's sign). */
        __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24);
        __m512 v = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(dr_lookup128_avx512(t, c)), sign));
        dr_store16_avx512(out + i, v, stream);
    }
    if (stream)
        dr_stream_fence();
    return i;
}

DR_TARGET_AVX2 size_t dr_lookup256_stream_avx2(const uint8_t *codes, size_t n, const float *table, float *out)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(out + i, _mm_setr_ps(table[codes[i]], table[codes[i + 1]], table[codes[i + 2]], table[codes[i + 3]]));
    dr_stream_fence();
    return i;
}
#endif
