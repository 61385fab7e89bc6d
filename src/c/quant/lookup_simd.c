/* The table lookups of lookup_simd.h that loop over a whole array. */
#include "deepreduce.h"
#include "lookup_simd.h"
#include "stream_simd.h"

#include <string.h>

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

/* The 64 codes at codes, their dwords reordered so that the unpacks in
 * dr_lookup_planes_avx512 leave vector r holding the values of codes 16r..16r+15. The
 * unpacks interleave within 128-bit lanes, so vector r lane L (4 floats) would take the
 * codes of dword 4L + r; dword 4r + L is moved there. */
DR_TARGET_AVX512_VBMI DR_ALWAYS_INLINE __m512i planes_order(const uint8_t *codes)
{
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_epi32(order, _mm512_loadu_si512((const void *)codes));
}

DR_TARGET_AVX512_VBMI size_t dr_lookup_planes_avx512(const uint8_t *codes, size_t n, const float *table,
                                                     uint32_t entries, float *out)
{
    const int stream = dr_stream_output(out, n);
    uint8_t bytes[4][256];
    __m512i plane[4][4]; /* byte j of the entries 0-63, 64-127, 128-191, 192-255 */
    size_t i = 0;
    int j, r;
    uint32_t c;
    for (c = 0; c < 256u; c++) {
        uint32_t u;
        memcpy(&u, table + c, 4);
        for (j = 0; j < 4; j++)
            bytes[j][c] = (uint8_t)(u >> (8 * j));
    }
    for (j = 0; j < 4; j++)
        for (r = 0; r < 4; r++)
            plane[j][r] = _mm512_loadu_si512((const void *)(bytes[j] + 64 * r));
    /* Streamed, the stores go a whole line each: the floats before out's first line
     * start are read from the table one by one. */
    if (stream)
        for (; i < dr_stream_lead(out, n); i++)
            out[i] = table[codes[i]];
    for (; i + 64 <= n; i += 64) {
        __m512i k = planes_order(codes + i), p[4], lo, hi, v[4];
        /* Byte j of each code's entry; a permute reads bits 0-6 of the code, bit 7 picks
         * the half of the table. */
        if (entries <= 128u) {
            for (j = 0; j < 4; j++)
                p[j] = _mm512_permutex2var_epi8(plane[j][0], k, plane[j][1]);
        } else {
            __mmask64 upper = _mm512_movepi8_mask(k);
            for (j = 0; j < 4; j++)
                p[j] = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(plane[j][0], k, plane[j][1]),
                                              _mm512_permutex2var_epi8(plane[j][2], k, plane[j][3]));
        }
        /* Bytes 0 and 1, 2 and 3 to words, words to dwords: the floats. */
        lo = _mm512_unpacklo_epi8(p[0], p[1]);
        hi = _mm512_unpackhi_epi8(p[0], p[1]);
        p[0] = _mm512_unpacklo_epi8(p[2], p[3]);
        p[1] = _mm512_unpackhi_epi8(p[2], p[3]);
        v[0] = _mm512_unpacklo_epi16(lo, p[0]);
        v[1] = _mm512_unpackhi_epi16(lo, p[0]);
        v[2] = _mm512_unpacklo_epi16(hi, p[1]);
        v[3] = _mm512_unpackhi_epi16(hi, p[1]);
        for (r = 0; r < 4; r++) {
            if (stream)
                _mm512_stream_si512((void *)(out + i + 16 * r), v[r]);
            else
                _mm512_storeu_si512((void *)(out + i + 16 * r), v[r]);
        }
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

DR_TARGET_AVX2 size_t dr_crumb_lookup_avx2(const uint8_t *codes, size_t n, const float *value, float *out, int add)
{
    /* Lane j's code by a shift of the group's 16 bits by 2j. */
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), three = _mm256_set1_epi32(3);
    const __m256 table = _mm256_setr_ps(value[0], value[1], value[2], 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    const int stream = !add && dr_stream_output(out, n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16_t group;
        __m256i code;
        __m256 v;
        memcpy(&group, codes + i / 4, 2);
        code = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(group), shift), three);
        v = _mm256_permutevar8x32_ps(table, code);
        if (add) {
            __m256 sent = _mm256_castsi256_ps(_mm256_cmpgt_epi32(code, _mm256_setzero_si256()));
            v = _mm256_blendv_ps(_mm256_loadu_ps(out + i), _mm256_add_ps(_mm256_loadu_ps(out + i), v), sent);
        }
        dr_store8_avx2(out + i, v, stream);
    }
    if (stream)
        dr_stream_fence();
    return i;
}

DR_TARGET_AVX2 size_t dr_crumb_census_avx2(const uint8_t *codes, size_t nbytes, unsigned *threes, size_t *nonzero)
{
    /* Per byte: bit 2k of v & (v >> 1) is set where code k is 3, bit 2k of v | (v >> 1)
     * where it is not 0 (a 16-bit shift moves no bit into a byte's even positions), the
     * latter's bits summed per byte and the bytes per 64-bit lane (PSADBW). */
    const __m256i low = _mm256_set1_epi8(0x55), pairs = _mm256_set1_epi8(0x33), nibbles = _mm256_set1_epi8(0x0f);
    __m256i three = _mm256_setzero_si256(), total = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= nbytes; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(codes + i)), half = _mm256_srli_epi16(v, 1);
        __m256i sent = _mm256_and_si256(_mm256_or_si256(v, half), low);
        three = _mm256_or_si256(three, _mm256_and_si256(v, half));
        sent = _mm256_add_epi8(_mm256_and_si256(sent, pairs), _mm256_and_si256(_mm256_srli_epi16(sent, 2), pairs));
        sent = _mm256_and_si256(_mm256_add_epi8(sent, _mm256_srli_epi16(sent, 4)), nibbles);
        total = _mm256_add_epi64(total, _mm256_sad_epu8(sent, _mm256_setzero_si256()));
    }
    three = _mm256_and_si256(three, low);
    *threes |= (unsigned)!_mm256_testz_si256(three, three);
    *nonzero += (size_t)(_mm256_extract_epi64(total, 0) + _mm256_extract_epi64(total, 1) +
                         _mm256_extract_epi64(total, 2) + _mm256_extract_epi64(total, 3));
    return i;
}
#endif
