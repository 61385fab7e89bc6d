/* CRC-32 (zlib's polynomial, reflected) by carry-less multiplication: four 128-bit lanes
 * fold 64 bytes per step, then fold into one lane, then 128 -> 64 -> 32 bits and a
 * Barrett reduction (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", Intel 2009). The fold constants are x^(k) mod P for the distances the
 * folds span, bit-reflected, as that paper derives them. Same value as zlib's crc32 for
 * every input; the frames' CRC was a pass of its own over every payload with zlib. */
#include "deepreduce.h"
#include "crc32_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

#define DR_TARGET_CLMUL __attribute__((target("pclmul,sse4.1")))

DR_TARGET_CLMUL static __m128i fold(__m128i acc, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11));
}

DR_TARGET_CLMUL uint32_t dr_crc32_clmul(uint32_t state, const uint8_t *buf, size_t len)
{
    /* (x^(4*128+32) mod P, x^(4*128-32) mod P) and the one-lane pair, reflected. */
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009ell, 0x1751997d0ll);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124ll);
    const __m128i poly_mu = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1, x2, x3, x4, t;
    /* The caller passes len >= 64, a multiple of 16. */
    x1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)buf), _mm_cvtsi32_si128((int)state));
    x2 = _mm_loadu_si128((const __m128i *)(buf + 16));
    x3 = _mm_loadu_si128((const __m128i *)(buf + 32));
    x4 = _mm_loadu_si128((const __m128i *)(buf + 48));
    buf += 64;
    len -= 64;
    for (; len >= 64; buf += 64, len -= 64) {
        x1 = _mm_xor_si128(fold(x1, k1k2), _mm_loadu_si128((const __m128i *)buf));
        x2 = _mm_xor_si128(fold(x2, k1k2), _mm_loadu_si128((const __m128i *)(buf + 16)));
        x3 = _mm_xor_si128(fold(x3, k1k2), _mm_loadu_si128((const __m128i *)(buf + 32)));
        x4 = _mm_xor_si128(fold(x4, k1k2), _mm_loadu_si128((const __m128i *)(buf + 48)));
    }
    x1 = _mm_xor_si128(fold(x1, k3k4), x2);
    x1 = _mm_xor_si128(fold(x1, k3k4), x3);
    x1 = _mm_xor_si128(fold(x1, k3k4), x4);
    for (; len >= 16; buf += 16, len -= 16)
        x1 = _mm_xor_si128(fold(x1, k3k4), _mm_loadu_si128((const __m128i *)buf));
    /* 128 -> 64 bits (appending 32 zero bits), then 64 -> 32. */
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(k3k4, x1, 0x01), _mm_srli_si128(x1, 8));
    t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), t);
    /* Barrett reduction to the 32-bit remainder. */
    t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly_mu, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x1, t), 1);
}
#endif
