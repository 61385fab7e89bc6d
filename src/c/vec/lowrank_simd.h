/* Internal: the AVX2 variant of one row of dr_lowrank_product. */
#ifndef DR_LOWRANK_SIMD_H
#define DR_LOWRANK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* For the prefix of whole 8-column groups of one row: out[j] = v[j] (minuend NULL) or
 * minuend[j] - v[j], v[j] = prow[0]*qt[j] + prow[1]*qt[cols + j] + ... as lowrank.c's
 * scalar loop computes it. Streams out when `stream` is set (out 16-byte aligned).
 * Returns the columns done; *top keeps the largest sign-cleared bit pattern written
 * (an Inf or a NaN iff above 0x7f7fffff). */
size_t dr_lowrank_row_avx2(const float *prow, const float *qt, size_t cols, size_t rank,
                           const float *minuend, float *out, int stream, uint32_t *top);
#endif

#endif
