/* Internal: the vector variants of dr_topk_select's kernels.
 *
 * The candidate sweeps (AVX2, AVX-512; NEON in 16-entry blocks). Each takes whole
 * vectors of x[begin..n), appends the index and the value of every entry whose
 * magnitude key is at least tkey (NaN never) to idx[*count..] and val[*count..], in
 * ascending index order, and returns where it stopped: before n's last partial vector,
 * or earlier once *count passes cap - 16 (the AVX-512 one stores 16 lanes past
 * *count), which the caller then treats as an overflow. Each also raises *top to the
 * largest magnitude key it swept, NaN's included (one max per vector: a key of
 * 0x7f800000 or more says x holds an Inf or a NaN, which dr_topk_sparsify refuses
 * without a pass of its own). */
#ifndef DR_TOPK_SIMD_H
#define DR_TOPK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
size_t dr_topk_candidates_avx2(const float *x, size_t begin, size_t n, uint32_t tkey, uint32_t *idx,
                               float *val, size_t cap, size_t *count, uint32_t *top);
size_t dr_topk_candidates_avx512(const float *x, size_t begin, size_t n, uint32_t tkey, uint32_t *idx,
                                 float *val, size_t cap, size_t *count, uint32_t *top);

/* The top radix level's histogram of candidates, whose keys are all at least the key of
 * bucket `base` (the threshold's): hist[key >> shift] += 1 for every magnitude key (NaN
 * as 0) of the whole vectors of x[0..n). The TOP_WINDOW buckets from base are counted
 * in registers, a compare and a masked add per bucket and vector, where the scalar
 * loop's read-modify-writes of the few buckets that candidates share wait on each
 * other; keys beyond them are counted one by one. Returns where it stopped. */
#define TOP_WINDOW 16u
size_t dr_topk_top_level_avx512(const float *x, size_t n, unsigned shift, uint32_t base, uint32_t *hist);

/* A lower radix level's histogram: over the whole vectors of x[0..n), hist[(key >> shift)
 * & bucket_mask] += 1 for every magnitude key (NaN as 0) with (key & above_mask) ==
 * prefix. The keys that match, found by a vector compare, are appended to a buffer of
 * the kernel's (a batch of entries at a time, compressed in registers, no branch per
 * vector) and then counted one by one, so that a level where few match (the last: one
 * bucket of 2048 of the one before) costs little more than reading the keys. Returns
 * where it stopped (n less its partial vector). */
size_t dr_topk_level_avx512(const float *x, size_t n, unsigned shift, uint32_t bucket_mask,
                            uint32_t above_mask, uint32_t prefix, uint32_t *hist);
/* The same with AVX2's 8 lanes (packed by a permutation from a table). */
size_t dr_topk_level_avx2(const float *x, size_t n, unsigned shift, uint32_t bucket_mask,
                          uint32_t above_mask, uint32_t prefix, uint32_t *hist);

/* The last pass of the select as write_answers in topk.c defines it, whole vectors at a
 * time while 16 more answers fit in idx_out[0..k): each vector's candidates above kth,
 * and of those equal to it the first while fewer than `ties` have been met, appended in
 * order, with their values into val_out where it is not NULL (cand_idx NULL: the
 * indices are the positions in cand_val). Returns where it stopped in the candidates;
 * *out and *ties_taken (candidates equal to kth met so far) carry the scalar loop's
 * state on. */
size_t dr_topk_write_avx512(const uint32_t *cand_idx, const float *cand_val, size_t count, size_t k,
                            uint32_t kth, size_t ties, uint32_t *idx_out, float *val_out, size_t *out,
                            size_t *ties_taken);
/* The same with AVX2's 8 lanes, while 8 more answers fit. */
size_t dr_topk_write_avx2(const uint32_t *cand_idx, const float *cand_val, size_t count, size_t k,
                          uint32_t kth, size_t ties, uint32_t *idx_out, float *val_out, size_t *out,
                          size_t *ties_taken);
#endif

#if DR_HAVE_NEON
size_t dr_topk_candidates_neon(const float *x, size_t begin, size_t n, uint32_t tkey, uint32_t *idx,
                               float *val, size_t cap, size_t *count, uint32_t *top);
#endif

#endif
