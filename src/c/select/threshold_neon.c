/* The NEON (64-bit ARM) threshold select: as threshold_simd.c, sixteen magnitude keys
 * compared at once (core/mask_neon.h) and the passing entries' indices written in
 * ascending order by walking the word's set bits, where the scalar loop branches on
 * every entry (a coin toss at the densities threshold is used at). */
#include "threshold_simd.h"
#include "mask_neon.h"

#if DR_HAVE_NEON
size_t dr_threshold_select_neon(const float *x, size_t n, uint32_t tkey, uint32_t *idx_out, size_t cap,
                                size_t *count)
{
    /* magnitude keys from the threshold's to the infinities' (NaN above) */
    const uint32x4_t low = vdupq_n_u32(tkey), high = vdupq_n_u32(0x7f800000u);
    size_t i = 0, c = *count;
    for (; i + 16 <= n; i += 16) {
        uint64_t bits = dr_in_range_bits16_neon(x + i, low, high);
        while (bits != 0) {
            if (c < cap)
                idx_out[c] = (uint32_t)(i + ((unsigned)__builtin_ctzll(bits) >> 2));
            c++;
            bits &= bits - 1u;
        }
    }
    *count = c;
    return i;
}
#endif
