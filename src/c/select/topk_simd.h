/* Internal: the vector variants of dr_topk_select's candidate sweep. Each takes a prefix
 * of whole vectors of x, appends the index and the value of every entry whose magnitude
 * key is at least tkey (NaN never) to idx[*count..] and val[*count..], in ascending
 * index order, and returns the prefix length. They stop early, returning fewer than a
 * whole prefix, once *count passes cap - 16 (the AVX-512 one stores 16 lanes past
 * *count): the caller then treats the sweep as overflowed. */
#ifndef DR_TOPK_SIMD_H
#define DR_TOPK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_topk_candidates_avx2(const float *x, size_t n, uint32_t tkey, uint32_t *idx, float *val,
                               size_t cap, size_t *count);
size_t dr_topk_candidates_avx512(const float *x, size_t n, uint32_t tkey, uint32_t *idx,
                                 float *val, size_t cap, size_t *count);
#endif

#endif
