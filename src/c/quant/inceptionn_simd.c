/* AVX-512 INCEPTIONN: classify() of inceptionn.c on 16 lanes (the fixed-point values in
 * double, as the scalar code computes them), tags interleaved from the lane masks with
 * PDEP (and split again with PEXT), section entries packed by compress and unpacked by
 * expand in registers, and moved with masked stores and loads of exactly the entries a
 * step has (never a byte past them: the fault-suppressing masked forms). */
#include "deepreduce.h"
#include "inceptionn_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* The mask of lanes 0..count-1 (count <= 16). */
static __mmask16 first_lanes(unsigned count)
{
    return (__mmask16)((1u << count) - 1u);
}

typedef struct {
    __mmask16 m8, m16, m32;
    __m512i q; /* the 8- or 16-bit magnitude, for m8 and m16 lanes */
} lanes16;

/* round(c * scale) half up, c < 1, as fixed() does. */
DR_TARGET_AVX512 static __m512i fixed16(__m512 c, __m512d scale)
{
    const __m512d half = _mm512_set1_pd(0.5);
    __m256i lo = _mm512_cvttpd_epu32(_mm512_add_pd(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(c)), scale), half));
    __m256i hi = _mm512_cvttpd_epu32(_mm512_add_pd(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1))), scale), half));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

DR_TARGET_AVX512 static lanes16 classify16(__m512 v, __m512d inv8, __m512d inv16)
{
    lanes16 r;
    __m512 a = _mm512_abs_ps(v);
    __mmask16 big = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_GE_OQ);
    __m512 c = _mm512_maskz_mov_ps((__mmask16)~big, a);
    __m512i q8 = fixed16(c, inv8), q16 = fixed16(c, inv16);
    __mmask16 drop = _mm512_cmpeq_epi32_mask(q8, _mm512_setzero_si512());
    __mmask16 is8 = _mm512_cmple_epu32_mask(q8, _mm512_set1_epi32(127)) & (__mmask16)~drop;
    __mmask16 fits16 = _mm512_cmple_epu32_mask(q16, _mm512_set1_epi32(32767));
    __mmask16 rest = (__mmask16)(~big & ~drop & ~is8);
    r.m8 = (__mmask16)(~big & is8);
    r.m16 = rest & fits16;
    r.m32 = big | (rest & (__mmask16)~fits16);
    r.q = _mm512_mask_mov_epi32(q16, is8, q8);
    return r;
}

DR_TARGET_AVX512 static __mmask16 non_finite16(__m512 v)
{
    const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
    return _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(v), exp_mask), exp_mask);
}

DR_TARGET_AVX512 size_t dr_inceptionn_count_avx512(const float *x, size_t n, double inv8,
                                                   double inv16, size_t *count)
{
    const __m512d s8 = _mm512_set1_pd(inv8), s16 = _mm512_set1_pd(inv16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        lanes16 l;
        if (non_finite16(v))
            break;
        l = classify16(v, s8, s16);
        count[1] += (size_t)_mm_popcnt_u32(l.m8);
        count[2] += (size_t)_mm_popcnt_u32(l.m16);
        count[3] += (size_t)_mm_popcnt_u32(l.m32);
        count[0] += 16u - (size_t)_mm_popcnt_u32((unsigned)(l.m8 | l.m16 | l.m32));
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_inceptionn_fill_avx512(const float *x, size_t n, double inv8,
                                                  double inv16, uint8_t *tags, uint8_t *p8,
                                                  uint8_t *p16, uint8_t *p32, size_t *cursor)
{
    const __m512d s8 = _mm512_set1_pd(inv8), s16 = _mm512_set1_pd(inv16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512i bits = _mm512_castps_si512(v), sign = _mm512_srli_epi32(bits, 31);
        lanes16 l = classify16(v, s8, s16);
        unsigned lo = (unsigned)(l.m8 | l.m32), hi = (unsigned)(l.m16 | l.m32);
        uint32_t t = _pdep_u32(lo, 0x55555555u) | _pdep_u32(hi, 0xaaaaaaaau);
        __m512i v8 = _mm512_or_si512(_mm512_slli_epi32(sign, 7), l.q);
        __m512i v16 = _mm512_or_si512(_mm512_slli_epi32(sign, 15), l.q);
        unsigned c8 = (unsigned)_mm_popcnt_u32(l.m8), c16 = (unsigned)_mm_popcnt_u32(l.m16);
        unsigned c32 = (unsigned)_mm_popcnt_u32(l.m32);
        memcpy(tags + i / 4, &t, 4);
        _mm_mask_storeu_epi8(p8 + cursor[0], first_lanes(c8),
                             _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(l.m8, v8)));
        _mm256_mask_storeu_epi16(p16 + 2 * cursor[1], first_lanes(c16),
                                 _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(l.m16, v16)));
        _mm512_mask_storeu_epi32(p32 + 4 * cursor[2], first_lanes(c32),
                                 _mm512_maskz_compress_epi32(l.m32, bits));
        cursor[0] += c8;
        cursor[1] += c16;
        cursor[2] += c32;
    }
    return i;
}

DR_TARGET_AVX512 size_t dr_inceptionn_values_avx512(const uint8_t *tags, size_t n,
                                                    const uint8_t *p8, const uint8_t *p16,
                                                    const uint8_t *p32, float step8,
                                                    float step16, size_t *cursor, float *out)
{
    const __m512 vs8 = _mm512_set1_ps(step8), vs16 = _mm512_set1_ps(step16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint32_t t;
        unsigned c8, c16, c32;
        __mmask16 lo, hi, m8, m16, m32;
        __m512i e8, e16, e32, b8, b16, r;
        memcpy(&t, tags + i / 4, 4);
        lo = (__mmask16)_pext_u32(t, 0x55555555u);
        hi = (__mmask16)_pext_u32(t, 0xaaaaaaaau);
        m8 = lo & (__mmask16)~hi;
        m16 = hi & (__mmask16)~lo;
        m32 = lo & hi;
        c8 = (unsigned)_mm_popcnt_u32(m8);
        c16 = (unsigned)_mm_popcnt_u32(m16);
        c32 = (unsigned)_mm_popcnt_u32(m32);
        e8 = _mm512_maskz_expand_epi32(m8, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(first_lanes(c8), p8 + cursor[0])));
        e16 = _mm512_maskz_expand_epi32(m16, _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(first_lanes(c16), p16 + 2 * cursor[1])));
        e32 = _mm512_maskz_expand_epi32(m32, _mm512_maskz_loadu_epi32(first_lanes(c32), p32 + 4 * cursor[2]));
        /* Magnitude times step, then the sign bit OR-ed in, as the scalar code does. */
        b8 = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e8, _mm512_set1_epi32(0x7f))), vs8));
        b8 = _mm512_or_si512(b8, _mm512_slli_epi32(_mm512_and_si512(e8, _mm512_set1_epi32(0x80)), 24));
        b16 = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e16, _mm512_set1_epi32(0x7fff))), vs16));
        b16 = _mm512_or_si512(b16, _mm512_slli_epi32(_mm512_and_si512(e16, _mm512_set1_epi32(0x8000)), 16));
        r = _mm512_maskz_mov_epi32(m8, b8);
        r = _mm512_mask_mov_epi32(r, m16, b16);
        r = _mm512_mask_mov_epi32(r, m32, e32);
        _mm512_storeu_si512((void *)(out + i), r);
        cursor[0] += c8;
        cursor[1] += c16;
        cursor[2] += c32;
    }
    return i;
}
#endif
