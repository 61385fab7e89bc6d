/* Internal: the hardware CRC-32 paths, crc32_clmul.c (x86) and crc32_arm.c (64-bit ARM).
 * Each takes and returns the raw register (zlib's crc32 value with both ends inverted)
 * over buf[0..len). */
#ifndef DR_CRC32_SIMD_H
#define DR_CRC32_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* len >= 64 and a multiple of 16; the CPU has PCLMULQDQ (every AVX2 CPU does). `simd`
 * is the caller's dr_simd_active(): from AVX2 on, the folds take 256- or 512-bit lanes
 * where the CPU has VPCLMULQDQ (the caller reads the level once, where a frame's CRC is
 * taken in several calls). */
uint32_t dr_crc32_clmul(int simd, uint32_t state, const uint8_t *buf, size_t len);
#endif

#if DR_HAVE_NEON
/* Whether this CPU has the CRC32 instructions (and is little-endian): the condition for
 * calling dr_crc32_arm. */
int dr_crc32_arm_supported(void);
/* Any len. */
uint32_t dr_crc32_arm(uint32_t state, const uint8_t *buf, size_t len);
#endif

#endif
