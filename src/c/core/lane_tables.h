/* Internal: what the AVX2 kernels did with BMI2's PDEP and PEXT, without them. Those two
 * are microcoded on AMD before Zen 3 (Zen 1 and 2, which report BMI2 and run the AVX2
 * path): tens to hundreds of cycles each, data-dependent, where Intel and Zen 3 on take
 * one. So the AVX2 kernels spread bits and take lane permutations and byte shuffles from
 * tables (three of 2 KB, 768 and 512 bytes); the AVX-512 kernels, on CPUs where PDEP is
 * fast, keep it.
 *
 * The tables, in lane_tables.c, were written by:
 *   pack(m)   = bytes [lanes l with bit l of m set, ascending] + [0x80] * (8 - popcount(m))
 *   expand(m) = bytes [popcount(m & (2^l - 1)) if bit l of m is set else 0x80, l = 0..7]
 * each entry a little-endian uint64 (byte j at bits 8j..8j+7),
 *   even(m)   = sum of (bit i of m) << 2i, a uint16,
 * and dr_crumb_fields and dr_crumb_spread as their comments below say. */
#ifndef DR_LANE_TABLES_H
#define DR_LANE_TABLES_H

#include <stdint.h>

/* Byte j: the lane of the j-th set bit of the index, 0x80 past the last. As a vpermd
 * order (bytes widened to lanes) it packs the set lanes to the front, in order, and fills
 * the rest from lane 0, as _pext_u64(0x0706050403020100, bytes of m) did; as a pshufb
 * order it packs the set bytes and zeroes the rest, as PEXT on the bytes did. */
extern const uint64_t dr_pack_lanes8[256];

/* Byte l: the rank among the index's set bits of bit l where it is set, 0x80 where not.
 * As a vpermd order (bytes widened to lanes) it spreads the first popcount(m) lanes to
 * the set ones, in order, as VPEXPANDD does, and its top bit marks the lanes to clear. */
extern const uint64_t dr_expand_lanes8[256];

/* Bit i of the index at bit 2i: _pdep_u32(m, 0x5555). */
extern const uint16_t dr_even_spread8[256];

/* _pdep_u32(a, 0x5555) | _pdep_u32(b, 0xaaaa) for 8-bit a and b: bit i of a to bit 2i,
 * bit i of b to bit 2i + 1. (Two table reads: the shifts and masks that spread a byte
 * took terngrad's AVX2 encoder from 13.5 to 17 ms at 25.6M elements.) */
static inline uint32_t dr_interleave_bits8(uint32_t a, uint32_t b)
{
    return dr_even_spread8[a & 0xffu] | (uint32_t)dr_even_spread8[b & 0xffu] << 1;
}

/* Per byte of inceptionn tags (four 2-bit tags, lane l's at bits 2l..2l+1), in bytes
 * that a kernel reads straight into an address (no shifts or masks to take them apart:
 * the AVX2 decoder's extraction of the nibbles of a packed word was half its
 * instructions): bytes 0-2, for tags 1, 2, 3, 16 x the 4-bit mask of the lanes with that
 * tag (the byte offset of its row in dr_crumb_spread[width]); bytes 3-5 the bytes those
 * lanes' entries take (one, two and four each); bytes 6-7 zero. */
extern const uint8_t dr_crumb_fields[256][8];

/* Row w = 0, 1, 2 for entries of 1, 2, 4 bytes, column a 4-bit lane mask m: a pshufb
 * order that moves the j-th of a run of packed entries to the top bytes of the 32-bit
 * lane of the j-th set bit of m (the entry's byte i to byte 4l + 4 - width + i) and
 * zeroes every other byte (0x80). */
extern const uint8_t dr_crumb_spread[3][16][16];

#endif
