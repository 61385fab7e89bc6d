/* Internal: what the AVX2 kernels did with BMI2's PDEP and PEXT, without them. Those two
 * are microcoded on AMD before Zen 3 (Zen 1 and 2, which report BMI2 and run the AVX2
 * path): tens to hundreds of cycles each, data-dependent, where Intel and Zen 3 on take
 * one. So the AVX2 kernels spread bits and take lane permutations from tables (two of
 * 2 KB, one of 512 bytes) and gather bits by shifts and masks; the AVX-512 kernels, on
 * CPUs where PDEP is fast, keep it.
 *
 * The tables, in lane_tables.c, were written by:
 *   pack(m)   = bytes [lanes l with bit l of m set, ascending] + [0x80] * (8 - popcount(m))
 *   spread(m) = bytes [popcount(m & ((1 << l) - 1)) if bit l of m else 0 for l in 0..7]
 * each entry a little-endian uint64 (byte j at bits 8j..8j+7), and
 *   even(m)   = sum of (bit i of m) << 2i, a uint16. */
#ifndef DR_LANE_TABLES_H
#define DR_LANE_TABLES_H

#include <stdint.h>

/* Byte j: the lane of the j-th set bit of the index, 0x80 past the last. As a vpermd
 * order (bytes widened to lanes) it packs the set lanes to the front, in order, and fills
 * the rest from lane 0, as _pext_u64(0x0706050403020100, bytes of m) did; as a pshufb
 * order it packs the set bytes and zeroes the rest, as PEXT on the bytes did. */
extern const uint64_t dr_pack_lanes8[256];

/* Byte l: for a set bit l of the index, the number of set bits below it, else 0. As a
 * vpermd order it spreads the low lanes to the set lanes, in order (lanes not set get
 * lane 0, which the caller clears), as _pdep_u64(0x0706050403020100, bytes of m) did. */
extern const uint64_t dr_spread_lanes8[256];

/* Bit i of the index at bit 2i: _pdep_u32(m, 0x5555). */
extern const uint16_t dr_even_spread8[256];

/* _pdep_u32(a, 0x5555) | _pdep_u32(b, 0xaaaa) for 8-bit a and b: bit i of a to bit 2i,
 * bit i of b to bit 2i + 1. (Two table reads: the shifts and masks that spread a byte
 * took terngrad's AVX2 encoder from 13.5 to 17 ms at 25.6M elements.) */
static inline uint32_t dr_interleave_bits8(uint32_t a, uint32_t b)
{
    return dr_even_spread8[a & 0xffu] | (uint32_t)dr_even_spread8[b & 0xffu] << 1;
}

/* _pext_u32(t, 0x5555) for 16-bit t: bit 2i of t to bit i. */
static inline uint32_t dr_even_bits16(uint32_t t)
{
    uint32_t x = t & 0x5555u;
    x = (x | x >> 1) & 0x3333u;
    x = (x | x >> 2) & 0x0f0fu;
    return (x | x >> 4) & 0x00ffu;
}

#endif
