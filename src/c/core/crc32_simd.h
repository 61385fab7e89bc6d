/* Internal: the carry-less-multiply CRC-32 of crc32_clmul.c. It takes and returns the
 * raw register (zlib's crc32 value with both ends inverted) over buf[0..len), len >= 64
 * and a multiple of 16. */
#ifndef DR_CRC32_SIMD_H
#define DR_CRC32_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
uint32_t dr_crc32_clmul(uint32_t state, const uint8_t *buf, size_t len);
#endif

#endif
