/* Internal: codes through a table. 2-bit codes (terngrad, adaq's sign map) by a lane
 * permute; byte codes, shared by the 8-bit and sketch decoders: byte
 * planes of a 256-entry table looked up by byte permutes (AVX-512 VBMI), a 128-entry
 * table in vector registers (AVX-512 without VBMI), and a 256-entry one read from memory
 * for outputs far past the caches (AVX2). */
#ifndef DR_LOOKUP_SIMD_H
#define DR_LOOKUP_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* t[idx & 127] for each lane, the 128-entry table in eight registers t[0..8): permutes
 * over pairs of registers, then selects by bits 5 and 6 of the index. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512 dr_lookup128_avx512(const __m512 *t, __m512i idx)
{
    const __m512i bit5 = _mm512_set1_epi32(32), bit6 = _mm512_set1_epi32(64);
    __mmask16 hi32 = _mm512_test_epi32_mask(idx, bit5);
    __m512 a = _mm512_mask_mov_ps(_mm512_permutex2var_ps(t[0], idx, t[1]), hi32,
                                  _mm512_permutex2var_ps(t[2], idx, t[3]));
    __m512 b = _mm512_mask_mov_ps(_mm512_permutex2var_ps(t[4], idx, t[5]), hi32,
                                  _mm512_permutex2var_ps(t[6], idx, t[7]));
    return _mm512_mask_mov_ps(a, _mm512_test_epi32_mask(idx, bit6), b);
}

/* out[i] = table[codes[i] & 127], negated where bit 7 of codes[i] is set, for a prefix of
 * whole groups of 16; returns its length (the 8-bit decoder's values, a signed code). */
size_t dr_signed_lookup128_avx512(const uint8_t *codes, size_t n, const float *table, float *out);

/* out[i] = table[codes[i]] (256 floats; every code below `entries`, at most 256) for
 * [0, the returned length), 64 codes a step, by VBMI byte permutes: the table as four
 * planes of bytes (byte j of every entry), each looked up for 64 codes at once from two
 * registers per 128 entries, and the bytes interleaved back into floats: about 18
 * vector operations per 64 codes of a 128-entry table and 27 of a 256-entry one, loads
 * and stores included, where 16-lane float lookups take about 44 and 88. Streams the
 * output where dr_stream_output holds, a whole cache line per store. Needs
 * dr_cpu_has_vbmi(). */
size_t dr_lookup_planes_avx512(const uint8_t *codes, size_t n, const float *table, uint32_t entries,
                               float *out);

/* out[i] = table[codes[i]] (256 entries) by 16-byte non-temporal stores, for a prefix of
 * whole groups of 4; returns its length. For outputs where dr_stream_output holds (far
 * past the caches, 16-byte aligned). Four plain loads per store: on the development
 * machine's core they beat a gather, and GCC's own vectorisation of the scalar loop
 * (bytes widened, lanes extracted one by one) took 12.3 ms against 7.5-8.6 ms here for
 * the sketch's 25.6M values. */
size_t dr_lookup256_stream_avx2(const uint8_t *codes, size_t n, const float *table, float *out);

/* 2-bit codes (element i at bits 2(i%4) of codes[i/4], none of them 3) through value[0..3):
 * out[i] = value[code i], streamed where dr_stream_output holds; or, where `add` is set,
 * out[i] += value[code i] where code i is not 0 (out[i] kept as it is at code 0, -0.0
 * too; never streamed). For a prefix of whole groups of 8 elements; returns its length.
 * Shared by terngrad's decoder and adaq's sign map, and taken on AVX-512 CPUs too: a
 * 16-lane form measured the same (the decode is bound by its stores: 3.93-4.20 against
 * 3.94-4.07 ms for terngrad's 25.6M on the Zen 4 host). */
size_t dr_crumb_lookup_avx2(const uint8_t *codes, size_t n, const float *value, float *out, int add);

/* Over whole 32-byte groups of codes[0..nbytes) of 2-bit codes: ORs 1 into *threes where
 * one of them is 3, adds to *nonzero how many are not 0, and returns the bytes it covered
 * (qframe.c: dr_qf_crumbs_check). */
size_t dr_crumb_census_avx2(const uint8_t *codes, size_t nbytes, unsigned *threes, size_t *nonzero);
#endif

#endif
