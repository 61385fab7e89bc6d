/* AVX-512 INCEPTIONN: classify() of inceptionn.c on 16 lanes (the fixed-point values in
 * single precision and integers, exact, as the scalar code computes them), tags
 * interleaved from the lane masks with PDEP (and split again with PEXT), section entries
 * packed by compress and unpacked by expand in registers and moved by whole-vector stores
 * and loads (the lanes past a step's entries are overwritten by the next step's, or read
 * and ignored). */
#include "deepreduce.h"
#include "inceptionn_simd.h"
#include "lane_tables.h"
#include "stream_simd.h"

#include <string.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

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
        dr_read_ahead(x + i);
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

DR_TARGET_AVX512 size_t dr_inceptionn_block_avx512(const float *x, const dr_inceptionn_bands *s,
                                                   uint8_t *dst)
{
    enum { B = DR_INCEPTIONN_BLOCK };
    /* The 16- and 8-bit entries wait here until the float32s' length, which places them,
     * is known; 64 bytes to spare for the last whole-vector stores. */
    uint8_t stage16[2 * B + 64], stage8[B + 64];
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    const __m512i t0 = _mm512_set1_epi32((int32_t)s->t0), t8 = _mm512_set1_epi32((int32_t)s->t8);
    const __m512i t16 = _mm512_set1_epi32((int32_t)s->t16);
    const __m512i sign8 = _mm512_set1_epi32(0x80), sign16 = _mm512_set1_epi32(0x8000);
    /* 2^k (half of twice, exact) and the 1/2 of round half up. */
    const __m512 scale8 = _mm512_set1_ps(0.5f * s->twice8), scale16 = _mm512_set1_ps(0.5f * s->twice16);
    const __m512 half = _mm512_set1_ps(0.5f);
    uint8_t *p32 = dst + B / 4;
    __m512i top = _mm512_setzero_si512();
    size_t i, n8 = 0, n16 = 0, n32 = 0;
    for (i = 0; i < B; i += 16) {
        dr_read_ahead(x + i);
        __m512i bits = _mm512_loadu_si512(x + i), mag = _mm512_and_si512(bits, abs_mask), q;
        __mmask16 ge0 = _mm512_cmpge_epu32_mask(mag, t0), ge8 = _mm512_cmpge_epu32_mask(mag, t8);
        __mmask16 ge16 = _mm512_cmpge_epu32_mask(mag, t16), neg = _mm512_movepi32_mask(bits);
        __mmask16 m8 = _kandn_mask16(ge8, ge0), m16 = _kandn_mask16(ge16, ge8);
        /* The tag is how many thresholds are reached: its low bit is their parity, its
         * high bit whether t8 is. */
        uint32_t lo = _cvtmask16_u32(_kxor_mask16(_kxor_mask16(ge0, ge8), ge16)), hi = _cvtmask16_u32(ge8);
        uint32_t t = _pdep_u32(lo, 0x55555555u) | _pdep_u32(hi, 0xaaaaaaaau);
        /* round(a * 2^k) half up = floor(a * 2^k + 1/2): one rounding down, which keeps
         * the floor since every integer below 2^24 is a float (fixed() gets the same
         * integer another way). Float32 lanes may overflow the conversion: their q is
         * never used. */
        q = _mm512_cvttps_epi32(_mm512_fmadd_round_ps(_mm512_castsi512_ps(mag), _mm512_mask_blend_ps(m8, scale16, scale8),
                                                      half, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
        top = _mm512_max_epu32(top, mag);
        memcpy(dst + i / 4, &t, 4);
        /* q with the sign bit at bit 7 or 15. */
        _mm_storeu_si128((__m128i *)(void *)(stage8 + n8),
                         _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(m8, _mm512_mask_or_epi32(q, neg, q, sign8))));
        _mm256_storeu_si256((__m256i *)(void *)(stage16 + 2 * n16),
                            _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(m16, _mm512_mask_or_epi32(q, neg, q, sign16))));
        _mm512_storeu_si512(p32 + 4 * n32, _mm512_maskz_compress_epi32(ge16, bits));
        n8 += (unsigned)_mm_popcnt_u32(lo & ~hi);
        n16 += (unsigned)_mm_popcnt_u32(hi & ~lo);
        n32 += (unsigned)_mm_popcnt_u32(lo & hi);
    }
    if (_mm512_reduce_max_epu32(top) >= 0x7f800000u)
        return 0;
    memcpy(p32 + 4 * n32, stage16, 2 * n16);
    memcpy(p32 + 4 * n32 + 2 * n16, stage8, n8);
    return B / 4 + 4 * n32 + 2 * n16 + n8;
}

DR_TARGET_AVX512 void dr_inceptionn_count_block_avx512(const uint8_t *tags, size_t *count)
{
    /* For each nibble (two tags), how many of its tags are 1, 2 or 3: byte tables looked up
     * for both nibbles of every byte; a byte's sums stay below 256 (at most 4 per
     * vector, 16 vectors), added up by PSADBW at the end. */
    const __m512i by1 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 0, 0, 1, 2, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0));
    const __m512i by2 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 2, 1, 0, 0, 1, 0));
    const __m512i by3 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 2));
    const __m512i nibble = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    __m512i c1 = zero, c2 = zero, c3 = zero;
    size_t k;
    for (k = 0; k < DR_INCEPTIONN_BLOCK / 4; k += 64) {
        __m512i w = _mm512_loadu_si512(tags + k), lo = _mm512_and_si512(w, nibble);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), nibble);
        c1 = _mm512_add_epi8(c1, _mm512_add_epi8(_mm512_shuffle_epi8(by1, lo), _mm512_shuffle_epi8(by1, hi)));
        c2 = _mm512_add_epi8(c2, _mm512_add_epi8(_mm512_shuffle_epi8(by2, lo), _mm512_shuffle_epi8(by2, hi)));
        c3 = _mm512_add_epi8(c3, _mm512_add_epi8(_mm512_shuffle_epi8(by3, lo), _mm512_shuffle_epi8(by3, hi)));
    }
    count[1] += (size_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(c1, zero));
    count[2] += (size_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(c2, zero));
    count[3] += (size_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(c3, zero));
}

/* Entries of one 8- or 16-bit section (e, zero-extended) as the floats they stand for:
 * (e & mag) * step with e's top bit, moved up by `shift` to bit 31, as the sign. */
DR_TARGET_AVX512 static inline __m512i sign_magnitude_floats(__m512i e, __m512i mag, __m512 step, int shift)
{
    __m512i r = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e, mag)), step));
    return _mm512_ternarylogic_epi32(r, _mm512_sll_epi32(e, _mm_cvtsi32_si128(shift)),
                                     _mm512_set1_epi32((int32_t)0x80000000u), 0xf8);
}

/* The lanes of a section's vector at entry k that hold entries (count in all). */
static inline __mmask16 section_lanes(size_t k, size_t count)
{
    return (__mmask16)(count - k >= 16 ? 0xffffu : (1u << (count - k)) - 1u);
}

DR_TARGET_AVX512 unsigned dr_inceptionn_block_decode_avx512(const uint8_t *src, const size_t *count,
                                                            float step8, float step16, float *out, int stream)
{
    enum { B = DR_INCEPTIONN_BLOCK };
    /* Each narrow section's values, in its own order: converted a vector of entries at a
     * time, where a conversion per vector of elements did the work for every lane and kept
     * one width's lanes (a third of them). 16 lanes to spare for the last vector. */
    uint32_t stage8[B + 16] __attribute__((aligned(64))), stage16[B + 16] __attribute__((aligned(64)));
    const __m512 vs8 = _mm512_set1_ps(step8), vs16 = _mm512_set1_ps(step16);
    const __m512i mag8 = _mm512_set1_epi32(0x7f), mag16 = _mm512_set1_epi32(0x7fff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000);
    const uint8_t *p32 = src + B / 4, *p16 = p32 + 4 * count[3], *p8 = p16 + 2 * count[2];
    size_t i, k, n8 = 0, n16 = 0, n32 = 0, lead;
    __m512i least = _mm512_set1_epi32(1), top = _mm512_setzero_si512(), line_order;
    __m512i earlier = _mm512_setzero_si512(); /* the step before's vector, when streamed */
    /* What the encoder never writes, an 8- or 16-bit magnitude 0 or an Inf or NaN, shows
     * in the least such magnitude and the largest float32 exponent field. Whole loads:
     * the last reads up to 15 entries past its section, inside the 64 bytes the caller
     * leaves past the block, and its lanes past the section are left out. */
    for (k = 0; k < count[1]; k += 16) {
        __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p8 + k)));
        least = _mm512_mask_min_epu32(least, section_lanes(k, count[1]), least, _mm512_and_si512(e, mag8));
        _mm512_store_si512((void *)(stage8 + k), sign_magnitude_floats(e, mag8, vs8, 24));
    }
    /* The expands' whole loads read up to 15 lanes past the values, never used: zeros. */
    _mm512_store_si512((void *)(stage8 + k), _mm512_setzero_si512());
    for (k = 0; k < count[2]; k += 16) {
        __m512i e = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p16 + 2 * k)));
        least = _mm512_mask_min_epu32(least, section_lanes(k, count[2]), least, _mm512_and_si512(e, mag16));
        _mm512_store_si512((void *)(stage16 + k), sign_magnitude_floats(e, mag16, vs16, 16));
    }
    _mm512_store_si512((void *)(stage16 + k), _mm512_setzero_si512());
    for (k = 0; k < count[3]; k += 16)
        top = _mm512_mask_max_epu32(top, section_lanes(k, count[3]), top,
                                    _mm512_and_si512(_mm512_loadu_si512(p32 + 4 * k), inf));
    /* Streamed, each step's vector completes one of out's lines with the step before's
     * (stream_simd.h), and the block's first and last floats go through the cache. */
    lead = dr_stream_lead(out, B);
    line_order = dr_line_order_avx512(lead);
    /* The last line, shared with the next block, is written through the cache: asked for
     * now, or its store waits on its read from memory with the streamed ones behind it. */
    if (stream)
        __builtin_prefetch(out + B - 1, 1);
    /* Each step's lanes take their width's next values by expands (zeroing: a merging
     * expand waits on its destination and is slower on the development machine's AMD
     * (Zen 5) core); a dropped lane is 0 in all three. */
    for (i = 0; i < B; i += 16) {
        uint32_t t, lo, hi, w8, w16, w32;
        __m512i v8, v16, l32, v;
        memcpy(&t, src + i / 4, 4);
        if (!stream)
            dr_write_ahead(out + i);
        lo = _pext_u32(t, 0x55555555u);
        hi = _pext_u32(t, 0xaaaaaaaau);
        w8 = lo & ~hi;
        w16 = hi & ~lo;
        w32 = lo & hi;
        v8 = _mm512_maskz_expand_epi32(_cvtu32_mask16(w8), _mm512_loadu_si512(stage8 + n8));
        v16 = _mm512_maskz_expand_epi32(_cvtu32_mask16(w16), _mm512_loadu_si512(stage16 + n16));
        l32 = _mm512_loadu_si512(p32 + 4 * n32);
        /* Keeps the load a load of its own: folded into the expand (VPEXPANDD from memory),
         * it is several times slower on the development machine's AMD (Zen 5) core. */
        __asm__("" : "+v"(l32));
        v = _mm512_ternarylogic_epi32(v8, v16, _mm512_maskz_expand_epi32(_cvtu32_mask16(w32), l32), 0xfe);
        if (!stream)
            _mm512_storeu_si512((void *)(out + i), v);
        else if (i > 0)
            dr_stream_line_avx512(out, i, lead, line_order, earlier, v);
        else
            dr_stream_head_avx512(out, lead, line_order, v);
        earlier = v;
        n8 += (unsigned)_mm_popcnt_u32(w8);
        n16 += (unsigned)_mm_popcnt_u32(w16);
        n32 += (unsigned)_mm_popcnt_u32(w32);
    }
    if (stream)
        dr_stream_tail_avx512(out, B - 16, lead, line_order, earlier);
    return _mm512_reduce_min_epu32(least) == 0 || _mm512_reduce_max_epu32(top) == 0x7f800000u;
}
/* ------------------------------------------------------------------------------ AVX2 */
/* Eight lanes per step; the encoder packs entries by lane permutations, the decoder
 * spreads them by byte shuffles, both read from the lane tables (lane_tables.h: no PDEP
 * or PEXT, which AMD before Zen 3 microcodes). */

/* The permutation that packs the lanes set in the 8-bit mask m to the low lanes, in order. */
DR_TARGET_AVX2 static __m256i pack_order(unsigned m)
{
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)dr_pack_lanes8[m]));
}

DR_TARGET_AVX2 size_t dr_inceptionn_block_avx2(const float *x, const dr_inceptionn_bands *s, uint8_t *dst)
{
    enum { B = DR_INCEPTIONN_BLOCK };
    uint8_t stage16[2 * B + 64], stage8[B + 64]; /* as in dr_inceptionn_block_avx512 */
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), one = _mm256_set1_epi32(1);
    /* mag >= t as mag > t - 1: the patterns are below 2^31, so signed compares order them. */
    const __m256i t0 = _mm256_set1_epi32((int32_t)s->t0 - 1), t8 = _mm256_set1_epi32((int32_t)s->t8 - 1);
    const __m256i t16 = _mm256_set1_epi32((int32_t)s->t16 - 1);
    const __m256i sign8 = _mm256_set1_epi32(0x80), sign16 = _mm256_set1_epi32(0x8000);
    const __m256 twice8 = _mm256_set1_ps(s->twice8), twice16 = _mm256_set1_ps(s->twice16);
    /* Each lane's low byte, or low two bytes, to the front of its 128-bit half. */
    const __m256i low8 = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i low16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                           0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    uint8_t *p32 = dst + B / 4;
    __m256i top = _mm256_setzero_si256();
    size_t i, n8 = 0, n16 = 0, n32 = 0;
    for (i = 0; i < B; i += 8) {
        dr_read_ahead(x + i);
        __m256i bits = _mm256_loadu_si256((const __m256i *)(const void *)(x + i));
        __m256i mag = _mm256_and_si256(bits, abs_mask);
        __m256i ge0 = _mm256_cmpgt_epi32(mag, t0), ge8 = _mm256_cmpgt_epi32(mag, t8);
        __m256i ge16 = _mm256_cmpgt_epi32(mag, t16), is8 = _mm256_andnot_si256(ge8, ge0), q, v8, v16, w;
        unsigned g0 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ge0));
        unsigned g8 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ge8));
        unsigned g16 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ge16));
        unsigned m8 = g0 & ~g8, m16 = g8 & ~g16;
        /* The tags as in the AVX-512 code: low bit the parity, high bit t8 reached. */
        uint16_t t = (uint16_t)dr_interleave_bits8(g0 ^ g8 ^ g16, g8);
        uint64_t b8;
        /* fixed() of the scalar code, lane by lane. */
        q = _mm256_srli_epi32(
            _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(mag),
                                                               _mm256_blendv_ps(twice16, twice8, _mm256_castsi256_ps(is8)))),
                             one),
            1);
        top = _mm256_max_epu32(top, mag);
        v8 = _mm256_or_si256(q, _mm256_and_si256(_mm256_srli_epi32(bits, 24), sign8));
        v16 = _mm256_or_si256(q, _mm256_and_si256(_mm256_srli_epi32(bits, 16), sign16));
        memcpy(dst + i / 4, &t, 2);
        /* 8-bit entries: the lanes' low bytes in a word, packed by a byte shuffle. */
        w = _mm256_shuffle_epi8(v8, low8);
        b8 = (uint64_t)_mm_cvtsi128_si64(_mm_shuffle_epi8(
            _mm_cvtsi64_si128((long long)((uint64_t)(uint32_t)_mm256_cvtsi256_si32(w) |
                                          (uint64_t)(uint32_t)_mm256_extract_epi32(w, 4) << 32)),
            _mm_cvtsi64_si128((long long)dr_pack_lanes8[m8])));
        memcpy(stage8 + n8, &b8, 8);
        w = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(v16, pack_order(m16)), low16);
        _mm_storeu_si128((__m128i *)(void *)(stage16 + 2 * n16), _mm256_castsi256_si128(_mm256_permute4x64_epi64(w, 0x08)));
        _mm256_storeu_si256((__m256i *)(void *)(p32 + 4 * n32), _mm256_permutevar8x32_epi32(bits, pack_order(g16)));
        n8 += (unsigned)_mm_popcnt_u32(m8);
        n16 += (unsigned)_mm_popcnt_u32(m16);
        n32 += (unsigned)_mm_popcnt_u32(g16);
    }
    {
        uint32_t lane[8], most = 0;
        int j;
        _mm256_storeu_si256((__m256i *)(void *)lane, top);
        for (j = 0; j < 8; j++)
            most = lane[j] > most ? lane[j] : most;
        if (most >= 0x7f800000u)
            return 0;
    }
    memcpy(p32 + 4 * n32, stage16, 2 * n16);
    memcpy(p32 + 4 * n32 + 2 * n16, stage8, n8);
    return B / 4 + 4 * n32 + 2 * n16 + n8;
}

/* Two 16-byte loads as one vector: lo in the low half, hi in the high. */
DR_TARGET_AVX2 static __m256i halves(const void *lo, const void *hi)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                   _mm_loadu_si128((const __m128i *)hi), 1);
}

/* Whether a block's sections hold an entry the encoder cannot write: an Inf or NaN among
 * its n32 float32s, a magnitude 0 among its n16 uint16s or n8 bytes. Whole vectors, then
 * the rest one by one. */
DR_TARGET_AVX2 static unsigned sections_bad(const uint8_t *p32, size_t n32, const uint8_t *p16, size_t n16,
                                            const uint8_t *p8, size_t n8)
{
    const __m256i inf = _mm256_set1_epi32(0x7f800000), mag16 = _mm256_set1_epi16(0x7fff);
    const __m256i mag8 = _mm256_set1_epi8(0x7f), zero = _mm256_setzero_si256();
    __m256i found = zero;
    unsigned bad = 0;
    size_t k;
    for (k = 0; k + 8 <= n32; k += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(p32 + 4 * k));
        found = _mm256_or_si256(found, _mm256_cmpeq_epi32(_mm256_and_si256(u, inf), inf));
    }
    for (; k < n32; k++) {
        uint32_t u;
        memcpy(&u, p32 + 4 * k, 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    for (k = 0; k + 16 <= n16; k += 16) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(p16 + 2 * k));
        found = _mm256_or_si256(found, _mm256_cmpeq_epi16(_mm256_and_si256(u, mag16), zero));
    }
    for (; k < n16; k++) {
        uint16_t u;
        memcpy(&u, p16 + 2 * k, 2);
        bad |= (u & 0x7fffu) == 0;
    }
    for (k = 0; k + 32 <= n8; k += 32) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(p8 + k));
        found = _mm256_or_si256(found, _mm256_cmpeq_epi8(_mm256_and_si256(u, mag8), zero));
    }
    for (; k < n8; k++)
        bad |= (p8[k] & 0x7fu) == 0;
    return bad | !_mm256_testz_si256(found, found);
}

/* Each half of a step is four lanes, one tag byte: dr_crumb_fields says which lanes take
 * which width and how many bytes each width's entries take, and a pshufb order from
 * dr_crumb_spread moves each width's packed entries to the top of their lanes (zeros
 * elsewhere). No lane-crossing permutes: VPERMD costs several adds on AMD before Zen 2,
 * where the permutes of the former loop took most of its time. With the 8- or 16-bit
 * entry at the top of its lane, the lane less its sign bit is q 2^24 or q 2^16, exact in
 * float, and times step 2^-24 or 2^-16 (exact powers of two, normal for every bound) it
 * is the scalar code's q step, bit for bit. */
DR_TARGET_AVX2 unsigned dr_inceptionn_block_decode_avx2(const uint8_t *src, const size_t *count, float step8,
                                                        float step16, float *out, int stream)
{
    enum { B = DR_INCEPTIONN_BLOCK };
    const __m256 vs8 = _mm256_set1_ps(step8 * 0x1p-24f), vs16 = _mm256_set1_ps(step16 * 0x1p-16f);
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), zero = _mm256_setzero_si256();
    const uint8_t *p32 = src + B / 4, *p16 = p32 + 4 * count[3], *p8 = p16 + 2 * count[2];
    const uint8_t *at8 = p8, *at16 = p16, *at32 = p32;
    const uint8_t *spread8 = dr_crumb_spread[0][0], *spread16 = dr_crumb_spread[1][0];
    const uint8_t *spread32 = dr_crumb_spread[2][0];
    size_t i;
    for (i = 0; i < B; i += 8) {
        const uint8_t *lo = dr_crumb_fields[src[i / 4]], *hi = dr_crumb_fields[src[i / 4 + 1]];
        __m256i e8 = _mm256_shuffle_epi8(halves(at8, at8 + lo[3]), halves(spread8 + lo[0], spread8 + hi[0]));
        __m256i e16 = _mm256_shuffle_epi8(halves(at16, at16 + lo[4]), halves(spread16 + lo[1], spread16 + hi[1]));
        __m256i e32 = _mm256_shuffle_epi8(halves(at32, at32 + lo[5]), halves(spread32 + lo[2], spread32 + hi[2]));
        /* The 8- and 16-bit entries share one vector; a lane with no 8-bit entry (e8 0
         * there) takes the 16-bit step, and with neither its magnitude is 0. */
        __m256i e = _mm256_or_si256(e8, e16);
        __m256 step = _mm256_blendv_ps(vs8, vs16, _mm256_castsi256_ps(_mm256_cmpeq_epi32(e8, zero)));
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(e, magnitude)), step);
        dr_store8_avx2(out + i,
                       _mm256_castsi256_ps(_mm256_or_si256(
                           _mm256_or_si256(_mm256_castps_si256(v), _mm256_andnot_si256(magnitude, e)), e32)),
                       stream);
        at8 += (size_t)lo[3] + hi[3];
        at16 += (size_t)lo[4] + hi[4];
        at32 += (size_t)lo[5] + hi[5];
    }
    return sections_bad(p32, count[3], p16, count[2], p8, count[1]);
}
#endif
