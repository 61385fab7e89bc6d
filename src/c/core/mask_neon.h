/* Internal: which of 16 floats have a magnitude key in a range, as a 64-bit word (NEON),
 * shared by the compacting sweeps of top-k (select/topk_neon.c) and threshold
 * (select/threshold_neon.c). NEON has no movemask: the four lane masks are narrowed to
 * bytes (three unzips) and shifted into nibbles (one narrowing shift). */
#ifndef DR_MASK_NEON_H
#define DR_MASK_NEON_H

#include "simd_config.h"

#include <stdint.h>

#if DR_HAVE_NEON
#include <arm_neon.h>

/* Lanes of x[0..4) whose magnitude key (bits less the sign) lies in [low, high]. */
static inline uint32x4_t dr_in_range_neon(const float *x, uint32x4_t low, uint32x4_t high)
{
    uint32x4_t key = vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x)), vdupq_n_u32(0x7fffffffu));
    return vandq_u32(vcgeq_u32(key, low), vcleq_u32(key, high));
}

/* Entry j of x[0..16) in range sets bit 4j of the result (and no other bit): the set
 * bits' entries, in order, are ctz(bits) / 4 as bits &= bits - 1 walks them. */
static inline uint64_t dr_in_range_bits16_neon(const float *x, uint32x4_t low, uint32x4_t high)
{
    uint16x8_t first = vuzp1q_u16(vreinterpretq_u16_u32(dr_in_range_neon(x, low, high)),
                                  vreinterpretq_u16_u32(dr_in_range_neon(x + 4, low, high)));
    uint16x8_t second = vuzp1q_u16(vreinterpretq_u16_u32(dr_in_range_neon(x + 8, low, high)),
                                   vreinterpretq_u16_u32(dr_in_range_neon(x + 12, low, high)));
    uint8x16_t bytes = vuzp1q_u8(vreinterpretq_u8_u16(first), vreinterpretq_u8_u16(second));
    return vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(bytes), 4)), 0) &
           0x1111111111111111ull;
}
#endif

#endif
