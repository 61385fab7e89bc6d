/* AVX-512 INCEPTIONN: classify() of inceptionn.c on 16 lanes (the fixed-point values in
 * single precision and integers, exact, as the scalar code computes them), tags interleaved from the lane masks with
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

/* The tags of 16 magnitude patterns by three compares with the bands' thresholds, and
 * each 8- or 16-bit lane's fixed-point magnitude: round(a * 2^k) half up computed, as
 * fixed() does, as (trunc(a * 2^(k+1)) + 1) / 2, with the lane's own 2^(k+1). */
DR_TARGET_AVX512 static lanes16 classify16(__m512i mag, const dr_inceptionn_bands *s)
{
    lanes16 r;
    __mmask16 ge0 = _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32((int32_t)s->t0));
    __mmask16 ge8 = _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32((int32_t)s->t8));
    __mmask16 ge16 = _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32((int32_t)s->t16));
    __m512 twice = _mm512_mask_blend_ps((__mmask16)(ge0 & ~ge8), _mm512_set1_ps(s->twice16), _mm512_set1_ps(s->twice8));
    r.m8 = (__mmask16)(ge0 & ~ge8);
    r.m16 = (__mmask16)(ge8 & ~ge16);
    r.m32 = ge16;
    /* Float32 lanes may overflow the conversion; their q is never used. */
    r.q = _mm512_srli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(_mm512_mul_ps(_mm512_castsi512_ps(mag), twice)),
                                             _mm512_set1_epi32(1)), 1);
    return r;
}

DR_TARGET_AVX512 size_t dr_inceptionn_count_avx512(const float *x, size_t n, const dr_inceptionn_bands *s,
                                                   size_t *count)
{
    /* Per lane, how many magnitudes reach each threshold; the largest magnitude pattern
     * tells Inf/NaN apart at the end (no branch per step). */
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
    const __m512i t0 = _mm512_set1_epi32((int32_t)s->t0), t8 = _mm512_set1_epi32((int32_t)s->t8);
    const __m512i t16 = _mm512_set1_epi32((int32_t)s->t16);
    __m512i ge0 = _mm512_setzero_si512(), ge8 = ge0, ge16 = ge0, top = ge0;
    size_t i = 0, reach0, reach8, reach16;
    for (; i + 16 <= n; i += 16) {
        __m512i mag = _mm512_and_si512(_mm512_loadu_si512(x + i), abs_mask);
        top = _mm512_max_epu32(top, mag);
        ge0 = _mm512_mask_add_epi32(ge0, _mm512_cmpge_epu32_mask(mag, t0), ge0, one);
        ge8 = _mm512_mask_add_epi32(ge8, _mm512_cmpge_epu32_mask(mag, t8), ge8, one);
        ge16 = _mm512_mask_add_epi32(ge16, _mm512_cmpge_epu32_mask(mag, t16), ge16, one);
    }
    if (_mm512_reduce_max_epu32(top) >= 0x7f800000u)
        return 0;
    /* Lanes count at most n/16 < 2^28 each, their sum below 2^32. */
    reach0 = (uint32_t)_mm512_reduce_add_epi32(ge0);
    reach8 = (uint32_t)_mm512_reduce_add_epi32(ge8);
    reach16 = (uint32_t)_mm512_reduce_add_epi32(ge16);
    count[0] += i - reach0;
    count[1] += reach0 - reach8;
    count[2] += reach8 - reach16;
    count[3] += reach16;
    return i;
}

DR_TARGET_AVX512 size_t dr_inceptionn_fill_avx512(const float *x, size_t n, const dr_inceptionn_bands *s,
                                                  uint8_t *tags, uint8_t *p8,
                                                  uint8_t *p16, uint8_t *p32, const size_t *total,
                                                  size_t *cursor)
{
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    /* The cursors in locals: through the pointer, every store to a section could alias
     * them, and the compiler would reload them per step. */
    size_t i = 0, at[3];
    memcpy(at, cursor, sizeof at);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512i bits = _mm512_castps_si512(v), sign = _mm512_srli_epi32(bits, 31);
        lanes16 l = classify16(_mm512_and_si512(bits, abs_mask), s);
        unsigned lo = (unsigned)(l.m8 | l.m32), hi = (unsigned)(l.m16 | l.m32);
        uint32_t t = _pdep_u32(lo, 0x55555555u) | _pdep_u32(hi, 0xaaaaaaaau);
        __m512i v8 = _mm512_or_si512(_mm512_slli_epi32(sign, 7), l.q);
        __m512i v16 = _mm512_or_si512(_mm512_slli_epi32(sign, 15), l.q);
        unsigned c8 = (unsigned)_mm_popcnt_u32(l.m8), c16 = (unsigned)_mm_popcnt_u32(l.m16);
        unsigned c32 = (unsigned)_mm_popcnt_u32(l.m32);
        __m128i e8 = _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(l.m8, v8));
        __m256i e16 = _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(l.m16, v16));
        __m512i e32 = _mm512_maskz_compress_epi32(l.m32, bits);
        memcpy(tags + i / 4, &t, 4);
        /* Whole stores while 16 entries fit before the section's end (the lanes past
         * the step's entries are overwritten by the next step's), masked ones after. */
        if (at[0] + 16 <= total[0])
            _mm_storeu_si128((__m128i *)(void *)(p8 + at[0]), e8);
        else
            _mm_mask_storeu_epi8(p8 + at[0], first_lanes(c8), e8);
        if (at[1] + 16 <= total[1])
            _mm256_storeu_si256((__m256i *)(void *)(p16 + 2 * at[1]), e16);
        else
            _mm256_mask_storeu_epi16(p16 + 2 * at[1], first_lanes(c16), e16);
        if (at[2] + 16 <= total[2])
            _mm512_storeu_si512(p32 + 4 * at[2], e32);
        else
            _mm512_mask_storeu_epi32(p32 + 4 * at[2], first_lanes(c32), e32);
        at[0] += c8;
        at[1] += c16;
        at[2] += c32;
    }
    memcpy(cursor, at, sizeof at);
    return i;
}

DR_TARGET_AVX512 size_t dr_inceptionn_values_avx512(const uint8_t *tags, size_t n,
                                                    const uint8_t *p8, const uint8_t *p16,
                                                    const uint8_t *p32, float step8,
                                                    float step16, const size_t *total, size_t *cursor,
                                                    float *out)
{
    const __m512 vs8 = _mm512_set1_ps(step8), vs16 = _mm512_set1_ps(step16);
    size_t i = 0, at[3]; /* as in fill */
    memcpy(at, cursor, sizeof at);
    for (; i + 16 <= n; i += 16) {
        uint32_t t;
        unsigned c8, c16, c32;
        __mmask16 lo, hi, m8, m16, m32;
        __m128i l8;
        __m256i l16;
        __m512i l32, e8, e16, e32, b8, b16, r;
        memcpy(&t, tags + i / 4, 4);
        lo = (__mmask16)_pext_u32(t, 0x55555555u);
        hi = (__mmask16)_pext_u32(t, 0xaaaaaaaau);
        m8 = lo & (__mmask16)~hi;
        m16 = hi & (__mmask16)~lo;
        m32 = lo & hi;
        c8 = (unsigned)_mm_popcnt_u32(m8);
        c16 = (unsigned)_mm_popcnt_u32(m16);
        c32 = (unsigned)_mm_popcnt_u32(m32);
        /* Whole loads while 16 entries fit before the section's end (expand takes only
         * the step's entries), masked ones after. */
        l8 = at[0] + 16 <= total[0] ? _mm_loadu_si128((const __m128i *)(const void *)(p8 + at[0]))
                                 : _mm_maskz_loadu_epi8(first_lanes(c8), p8 + at[0]);
        l16 = at[1] + 16 <= total[1] ? _mm256_loadu_si256((const __m256i *)(const void *)(p16 + 2 * at[1]))
                                   : _mm256_maskz_loadu_epi16(first_lanes(c16), p16 + 2 * at[1]);
        l32 = at[2] + 16 <= total[2] ? _mm512_loadu_si512(p32 + 4 * at[2])
                                   : _mm512_maskz_loadu_epi32(first_lanes(c32), p32 + 4 * at[2]);
        e8 = _mm512_maskz_expand_epi32(m8, _mm512_cvtepu8_epi32(l8));
        e16 = _mm512_maskz_expand_epi32(m16, _mm512_cvtepu16_epi32(l16));
        e32 = _mm512_maskz_expand_epi32(m32, l32);
        /* Magnitude times step, then the sign bit OR-ed in, as the scalar code does. */
        b8 = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e8, _mm512_set1_epi32(0x7f))), vs8));
        b8 = _mm512_or_si512(b8, _mm512_slli_epi32(_mm512_and_si512(e8, _mm512_set1_epi32(0x80)), 24));
        b16 = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e16, _mm512_set1_epi32(0x7fff))), vs16));
        b16 = _mm512_or_si512(b16, _mm512_slli_epi32(_mm512_and_si512(e16, _mm512_set1_epi32(0x8000)), 16));
        r = _mm512_maskz_mov_epi32(m8, b8);
        r = _mm512_mask_mov_epi32(r, m16, b16);
        r = _mm512_mask_mov_epi32(r, m32, e32);
        _mm512_storeu_si512((void *)(out + i), r);
        at[0] += c8;
        at[1] += c16;
        at[2] += c32;
    }
    memcpy(cursor, at, sizeof at);
    return i;
}
#endif
