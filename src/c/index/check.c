/* The encoders' check of an index set (bitio.h), written once and compiled twice
 * (simd_config.h): the AVX2 build's loop vectorises twice as wide. */
#include "bitio.h"
#include "simd_config.h"

/* No early exit: the loop vectorises (an exit per pair kept it scalar, a fifth of an
 * encode). */
DR_ALWAYS_INLINE uint32_t descending(const uint32_t *idx, size_t r)
{
    size_t j;
    uint32_t bad = 0;
    for (j = 1; j < r; j++)
        bad |= (uint32_t)(idx[j] <= idx[j - 1]);
    return bad;
}

static uint32_t descending_plain(const uint32_t *idx, size_t r)
{
    return descending(idx, r);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static uint32_t descending_avx2(const uint32_t *idx, size_t r)
{
    return descending(idx, r);
}
#endif

uint32_t dr_index_descending(const uint32_t *idx, size_t r)
{
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        return descending_avx2(idx, r);
#endif
    return descending_plain(idx, r);
}
