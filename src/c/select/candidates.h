/* Internal to src/c: the candidate sweep that dr_topk_select and dr_dgc_sparsify share.
 * Not part of the public API. */
#ifndef DR_CANDIDATES_H
#define DR_CANDIDATES_H

#include <stddef.h>
#include <stdint.h>

/* The least raw magnitude key that is not finite (an infinity's; NaN's are above). */
#define DR_NONFINITE_KEY 0x7f800000u

/* The candidates among x[begin..end): the index and value of every entry whose magnitude
 * key (its bits less the sign) is >= tkey, NaN never, in index order, into
 * idx/val[0..cap), in one sweep (AVX-512, AVX2 or NEON where the machine has them).
 * Returns their count, or cap + 1 if they do not fit (the sweep stops there and *top is
 * not complete). *top: the largest raw magnitude key of x[begin..end), NaN's included,
 * so *top >= DR_NONFINITE_KEY says x holds an Inf or a NaN. */
size_t dr_collect_candidates(const float *x, size_t begin, size_t end, uint32_t tkey, uint32_t *idx,
                             float *val, size_t cap, uint32_t *top);

/* Of `count` candidates (as dr_collect_candidates wrote them), every one whose magnitude
 * key is >= tkey, index and value, in order, into idx_out/val_out[0..taken), where
 * `taken` is their number, counted before (no more than that is written). */
void dr_take_candidates(const uint32_t *cand_idx, const float *cand_val, size_t count, uint32_t tkey,
                        size_t taken, uint32_t *idx_out, float *val_out);

#endif
