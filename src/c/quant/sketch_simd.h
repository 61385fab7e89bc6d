/* Internal: the AVX-512 variant of the sketch's bin search. It finds the bins of a prefix
 * of whole vectors of x (find_bin of sketch.c on order_key(x[i])), writes them to index
 * (width 1 or 2 bytes each) and returns the prefix length. It keeps the edges in
 * registers and does nothing (returns 0) when p > 256. */
#ifndef DR_SKETCH_SIMD_H
#define DR_SKETCH_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_sketch_bins_avx512(const float *x, size_t n, const uint32_t *edges, uint32_t p,
                             uint32_t last, uint8_t *index, size_t width);
#endif

#endif
