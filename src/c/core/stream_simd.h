/* Internal: how the vector kernels stream through memory.
 * - Non-temporal ("streamed") stores for their large outputs (the qsgd, natural, sign
 *   and 8-bit decoders, signum's momentum, bit unpacking). An output far larger than the
 *   caches is written past them, which spares reading its old lines first (a third of
 *   such a sweep's memory traffic); its consumer reads it from memory anyway. One rule
 *   for all of them: dr_stream_output.
 * - Reads asked for ahead (dr_read_ahead) in the sweeps that do real work per line. */
#ifndef DR_STREAM_SIMD_H
#define DR_STREAM_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* From this many floats (32 MiB, the L3 of the machine measured) an output is streamed:
 * a smaller one written through the cache is read back from it faster (qsgd's decode of
 * 4M entries: 0.24 ms cached, 0.51 ms streamed; of 12M: 1.93 and 1.44; of 25.6M: 4.2 and
 * 2.7). A build may set another (CMake's DEEPREDUCE_STREAM_MIN_N: the C tests under
 * sanitizers and qemu reach the streamed paths with smaller arrays). */
#ifndef DR_STREAM_MIN_N
#define DR_STREAM_MIN_N ((size_t)8 << 20)
#endif

/* Whether n floats at out are written streamed: large enough, and 16-byte aligned (the
 * stores are 16 bytes wide: NumPy promises that alignment, not 32). */
static inline int dr_stream_output(const float *out, size_t n)
{
    return n >= DR_STREAM_MIN_N && ((uintptr_t)out & 15u) == 0;
}

/* How many floats at out come before its first 64-byte line start (0 to 15, at most n).
 * A kernel that streams whole lines, one 512-bit store each (which must be aligned),
 * writes these first another way. */
static inline size_t dr_stream_lead(const float *out, size_t n)
{
    size_t lead = ((64u - ((uintptr_t)out & 63u)) & 63u) / sizeof *out;
    return lead < n ? lead : n;
}

/* How far ahead of a streaming read dr_read_ahead asks for lines. */
#define DR_READ_AHEAD 4096

/* Asks for the line DR_READ_AHEAD bytes past p (a hint: no fault, whatever the address).
 * A sweep that does more than a sum's work per line keeps fewer lines in flight than
 * the memory's latency asks for; on the Intel host of 2026-12-01 (a 14 GB/s streaming
 * read) AVX-512 sign packing of 25.6M floats took 9-11 ms, 1.3x a plain sum's read, and
 * 6.6-7.6 with a line asked for 4 KiB ahead. Called once per line read, or more. */
static inline void dr_read_ahead(const void *p)
{
#if defined(__GNUC__)
    /* By an integer: the address may lie past the end of p's array, where pointer
     * arithmetic would be undefined. */
    __builtin_prefetch((const void *)((uintptr_t)p + DR_READ_AHEAD));
#else
    (void)p;
#endif
}

/* Asks for the line DR_READ_AHEAD bytes past p, to be written (a hint, as dr_read_ahead).
 * For an output written through the cache by a kernel whose stores come in bursts:
 * INCEPTIONN's decoder writes a block's 4 KiB of floats in a tight loop after converting
 * its sections, and those stores waited on each line's read from memory. Called once per
 * line written. */
static inline void dr_write_ahead(const void *p)
{
#if defined(__GNUC__)
    __builtin_prefetch((const void *)((uintptr_t)p + DR_READ_AHEAD), 1);
#else
    (void)p;
#endif
}

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* 8 floats at out (16-byte aligned where stream is set), streamed or not. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE void dr_store8_avx2(float *out, __m256 v, int stream)
{
    if (stream) {
        _mm_stream_ps(out, _mm256_castps256_ps128(v));
        _mm_stream_ps(out + 4, _mm256_extractf128_ps(v, 1));
    } else {
        _mm256_storeu_ps(out, v);
    }
}

/* 16 floats at out (16-byte aligned where stream is set), streamed or not. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void dr_store16_avx512(float *out, __m512 v, int stream)
{
    if (stream) {
        _mm_stream_ps(out, _mm512_castps512_ps128(v));
        _mm_stream_ps(out + 4, _mm512_extractf32x4_ps(v, 1));
        _mm_stream_ps(out + 8, _mm512_extractf32x4_ps(v, 2));
        _mm_stream_ps(out + 12, _mm512_extractf32x4_ps(v, 3));
    } else {
        _mm512_storeu_ps(out, v);
    }
}

/* Streaming a block of 16-float vectors (or 32-bit fields) to an output that starts
 * anywhere, `lead` (dr_stream_lead) floats before a line start, as whole lines: each
 * vector after the first completes a line with the one before (dr_stream_line_avx512,
 * a two-register permute in dr_line_order_avx512's order: lanes lead.. of the earlier
 * vector, then lanes ..lead of the later). The first vector's lanes ..lead
 * (dr_stream_head_avx512) and the last one's lanes lead.. (dr_stream_tail_avx512)
 * share lines with what is around the block and go through the cache, each by a masked
 * store that stays within its line: one across two lines took Zen 4 hundreds of cycles
 * (inceptionn's decode of 25.6M floats, a block of 1,024 at a time: 18-20 ms against
 * 9.6-10.3). */
DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_line_order_avx512(size_t lead)
{
    return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32((int)lead));
}

/* out[0..lead) from the first vector. */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void dr_stream_head_avx512(float *out, size_t lead, __m512i order, __m512i first)
{
    if (lead > 0)
        _mm512_mask_storeu_epi32((void *)((uintptr_t)(out + lead) - 64), (__mmask16)(0xffffu << (16 - lead)),
                                 _mm512_permutexvar_epi32(order, first));
}

/* The line at out + at - 16 + lead, from `earlier` (out[at - 16..at)) and `later`
 * (out[at..at + 16)). */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void dr_stream_line_avx512(float *out, size_t at, size_t lead, __m512i order,
                                                            __m512i earlier, __m512i later)
{
    _mm512_stream_si512((void *)(out + at - 16 + lead), _mm512_permutex2var_epi32(earlier, order, later));
}

/* out[at + lead..at + 16) from the last vector, out[at..at + 16). */
DR_TARGET_AVX512 DR_ALWAYS_INLINE void dr_stream_tail_avx512(float *out, size_t at, size_t lead, __m512i order,
                                                            __m512i last)
{
    _mm512_mask_storeu_epi32((void *)(out + at + lead), (__mmask16)(0xffffu >> lead), _mm512_permutexvar_epi32(order, last));
}

/* After a kernel's streamed stores: they are visible before anyone reads the output.
 * SSE (every x86-64 CPU), so plain code calls it too. */
static inline void dr_stream_fence(void)
{
    _mm_sfence();
}
#endif

/* memcpy(dst, src, len) with dst's 16-byte-aligned middle streamed (SSE2, every x86-64
 * CPU; a plain memcpy elsewhere), for a part of an output that dr_stream_output would
 * stream. Call dr_stream_fence after the last part (x86). */
static inline void dr_stream_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
#if DR_HAVE_X86_SIMD
    size_t head = (16u - ((uintptr_t)dst & 15u)) & 15u, i;
    if (head > len)
        head = len;
    memcpy(dst, src, head);
    for (i = head; i + 16 <= len; i += 16)
        _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(const void *)(src + i)));
    memcpy(dst + i, src + i, len - i);
#else
    memcpy(dst, src, len);
#endif
}

#endif
