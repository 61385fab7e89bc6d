/* CRC-32 (zlib's polynomial, reflected) by carry-less multiplication: four 128-bit lanes
 * fold 64 bytes per step, then fold into one lane, then 128 -> 64 -> 32 bits and a
 * Barrett reduction (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", Intel 2009). The fold constants are x^(k) mod P for the distances the
 * folds span, bit-reflected, as that paper derives them. Same value as zlib's crc32 for
 * every input; the frames' CRC was a pass of its own over every payload with zlib. Where
 * the CPU has VPCLMULQDQ the bulk folds 256 bytes per step in four 512-bit registers on
 * AVX-512, 128 bytes in four 256-bit ones on AVX2 (the same algebra, lanes farther apart). */
#include "deepreduce.h"
#include "crc32_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

#define DR_TARGET_CLMUL __attribute__((target("pclmul,sse4.1")))
#define DR_TARGET_VPCLMUL __attribute__((target("vpclmulqdq,avx512f,avx512vl,avx512bw,pclmul,sse4.1")))
#define DR_TARGET_VPCLMUL256 __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))

DR_TARGET_CLMUL static __m128i fold(__m128i acc, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11));
}

DR_TARGET_VPCLMUL256 static __m256i fold256(__m256i acc, __m256i k)
{
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(acc, k, 0x00), _mm256_clmulepi64_epi128(acc, k, 0x11));
}

DR_TARGET_VPCLMUL static __m512i fold512(__m512i acc, __m512i k)
{
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11));
}

/* The 64-byte blocks left, then one lane, 16-byte blocks and the reductions, from the
 * four lanes x1..x4 of the block before buf (len a multiple of 16). */
DR_TARGET_CLMUL static uint32_t finish(__m128i x1, __m128i x2, __m128i x3, __m128i x4,
                                       const uint8_t *buf, size_t len)
{
    /* (x^(4*128+32) mod P, x^(4*128-32) mod P) and the one-lane pair, reflected. */
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009ell, 0x1751997d0ll);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124ll);
    const __m128i poly_mu = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i t;
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

/* VPCLMULQDQ on AVX-512: four 512-bit registers fold 256 bytes per step (sixteen 128-bit
 * lanes, each folded over 2048 bits), then fold into one register, whose four lanes are
 * finish()'s x1..x4. len >= 256. */
DR_TARGET_VPCLMUL static uint32_t crc_vpclmul(uint32_t state, const uint8_t *buf, size_t len)
{
    /* (x^(2048+32) mod P, x^(2048-32) mod P), and the 512-bit pair k1k2, reflected, in
     * every lane. */
    const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430ll, 0x11542778all));
    const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll));
    __m512i z[4];
    __m128i x1, x2, x3, x4;
    int k;
    for (k = 0; k < 4; k++)
        z[k] = _mm512_loadu_si512(buf + 64 * k);
    z[0] = _mm512_xor_si512(z[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state)));
    for (buf += 256, len -= 256; len >= 256; buf += 256, len -= 256)
        for (k = 0; k < 4; k++)
            z[k] = _mm512_xor_si512(fold512(z[k], k2048), _mm512_loadu_si512(buf + 64 * k));
    for (k = 1; k < 4; k++)
        z[0] = _mm512_xor_si512(fold512(z[0], k512), z[k]);
    x1 = _mm512_castsi512_si128(z[0]);
    x2 = _mm512_extracti32x4_epi32(z[0], 1);
    x3 = _mm512_extracti32x4_epi32(z[0], 2);
    x4 = _mm512_extracti32x4_epi32(z[0], 3);
    /* finish() is SSE code: leave no dirty upper register state to it or to the caller
     * (the compiler leaves it out on this tail call, and legacy SSE code after it then
     * runs several times slower). */
    _mm256_zeroupper();
    return finish(x1, x2, x3, x4, buf, len);
}

/* VPCLMULQDQ on 256-bit registers (AVX2 CPUs that have it): four registers fold 128
 * bytes per step (lanes 1024 bits apart), then pairs 64 bytes apart fold into two, whose
 * four lanes are finish()'s x1..x4. len >= 128. */
DR_TARGET_VPCLMUL256 static uint32_t crc_vpclmul256(uint32_t state, const uint8_t *buf, size_t len)
{
    /* (x^(1024+32) mod P, x^(1024-32) mod P) and k1k2, reflected, in both lanes. */
    const __m256i k1024 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x14a7fe880ll, 0x1e88ef372ll));
    const __m256i k512 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll));
    __m256i y[4];
    __m128i x1, x2, x3, x4;
    int k;
    for (k = 0; k < 4; k++)
        y[k] = _mm256_loadu_si256((const __m256i *)(const void *)(buf + 32 * k));
    y[0] = _mm256_xor_si256(y[0], _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)state)));
    for (buf += 128, len -= 128; len >= 128; buf += 128, len -= 128)
        for (k = 0; k < 4; k++)
            y[k] = _mm256_xor_si256(fold256(y[k], k1024), _mm256_loadu_si256((const __m256i *)(const void *)(buf + 32 * k)));
    y[0] = _mm256_xor_si256(fold256(y[0], k512), y[2]);
    y[1] = _mm256_xor_si256(fold256(y[1], k512), y[3]);
    x1 = _mm256_castsi256_si128(y[0]);
    x2 = _mm256_extracti128_si256(y[0], 1);
    x3 = _mm256_castsi256_si128(y[1]);
    x4 = _mm256_extracti128_si256(y[1], 1);
    _mm256_zeroupper(); /* as in crc_vpclmul */
    return finish(x1, x2, x3, x4, buf, len);
}

DR_TARGET_CLMUL uint32_t dr_crc32_clmul(int simd, uint32_t state, const uint8_t *buf, size_t len)
{
    /* The caller passes len >= 64, a multiple of 16. */
    if (len >= 256u && simd >= DR_SIMD_AVX2 && __builtin_cpu_supports("vpclmulqdq"))
        return simd >= DR_SIMD_AVX512 ? crc_vpclmul(state, buf, len) : crc_vpclmul256(state, buf, len);
    return finish(_mm_xor_si128(_mm_loadu_si128((const __m128i *)buf), _mm_cvtsi32_si128((int)state)),
                  _mm_loadu_si128((const __m128i *)(buf + 16)), _mm_loadu_si128((const __m128i *)(buf + 32)),
                  _mm_loadu_si128((const __m128i *)(buf + 48)), buf + 64, len - 64);
}
#endif
