/* The table lookups of lookup_simd.h that loop over a whole array. */
#include "deepreduce.h"
#include "lookup_simd.h"

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX512 size_t dr_signed_lookup128_avx512(const uint8_t *codes, size_t n, const float *table,
                                                   float *out)
{
    /* Past the caches, four 16-byte non-temporal stores per vector (NumPy promises
     * 16-byte alignment) spare reading the output's old lines first: a fifth of the
     * sweep's time at 25.6M elements. */
    const int stream = n >= DR_LOOKUP_STREAM_MIN_N && ((uintptr_t)out & 15u) == 0;
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
        if (stream) {
            _mm_stream_ps(out + i, _mm512_castps512_ps128(v));
            _mm_stream_ps(out + i + 4, _mm512_extractf32x4_ps(v, 1));
            _mm_stream_ps(out + i + 8, _mm512_extractf32x4_ps(v, 2));
            _mm_stream_ps(out + i + 12, _mm512_extractf32x4_ps(v, 3));
        } else {
            _mm512_storeu_ps(out + i, v);
        }
    }
    if (stream)
        _mm_sfence(); /* the streamed stores are visible before anyone reads out */
    return i;
}
#endif
