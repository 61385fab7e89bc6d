/* Internal: the vector variants of dr_topk_select's candidate sweep. Each takes whole
 * vectors of x[begin..n), appends the index and the value of every entry whose
 * magnitude key is at least tkey (NaN never) to idx[*count..] and val[*count..], in
 * ascending index order, and returns where it stopped: before n's last partial vector,
 * or earlier once *count passes cap - 16 (the AVX-512 one stores 16 lanes past
 * *count), which the caller then treats as an overflow. */
#ifndef DR_TOPK_SIMD_H
#define DR_TOPK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_topk_candidates_avx2(const float *x, size_t begin, size_t n, uint32_t tkey, uint32_t *idx,
                               float *val, size_t cap, size_t *count);
size_t dr_topk_candidates_avx512(const float *x, size_t begin, size_t n, uint32_t tkey, uint32_t *idx,
                                 float *val, size_t cap, size_t *count);
#endif

#endif
