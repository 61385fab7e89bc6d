/* Internal: the AVX2 bit unpacker. It unpacks a prefix of whole groups of 8 fields
 * (bits <= 25) of in[0..len) into out and returns how many fields it did; the caller
 * finishes the rest with the scalar code. */
#ifndef DR_BITPACK_SIMD_H
#define DR_BITPACK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_bitunpack_avx2(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);
#endif

#endif
