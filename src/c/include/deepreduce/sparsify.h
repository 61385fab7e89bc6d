/*
 * deepreduce/sparsify.h - adaptive sparsifiers of the GRACE set: DGC threshold estimation
 * from a sample, AdaComp-style (adaq) selection.
 *
 * Both estimate a magnitude threshold from a sample (1% of the tensor, or for adaq at large
 * ratios fewer: see there) and then correct it against exact counts over the whole
 * tensor, so their cost is a few streaming reads, never a sort.
 * Samples are positions drawn with replacement from the counter stream `key` (see
 * dr_rng_key): the same key gives the same selection on every rank and SIMD path.
 */
#ifndef DEEPREDUCE_SPARSIFY_H
#define DEEPREDUCE_SPARSIFY_H

/* ---------------------------------------------------------------------------- dgc */
/* Deep Gradient Compression's selection (Lin et al. 2018).
 *  1. Sample S = max(1, n/100) positions; thr = the kk-th largest |x| among them,
 *     kk = clamp(round(k*S/n), 1, S) (a NaN in the sample counts as 0).
 *  2. c = #{|x| >= thr} over the whole tensor (dr_threshold_count). While c is outside
 *     [lo, hi] = [k - floor(0.3k), k + floor(0.3k)] (that is [0.7k, 1.3k]), adjust thr at
 *     most DR_DGC_MAX_ADJUST times: by x1.3 (too many) or x0.7 (too few) until the
 *     target is bracketed, then by bisection of the bracket (GRACE only rescaled, which
 *     can oscillate around the band).
 *  3. If c is in [lo, hi]: the ascending indices with |x| >= thr (dr_threshold_select).
 *     Otherwise (data with few distinct magnitudes, e.g. mostly zeros): the exact top-k
 *     (dr_topk), so *count is always in [lo, hi] and never above dr_dgc_max_count(k).
 * idx_out has room for `cap` indices; DR_E_DST_TOO_SMALL if the selection is larger
 * (cap >= dr_dgc_max_count(k) always suffices). `work` holds dr_dgc_workspace_size(n)
 * bytes, aligned for a uint32. DR_E_ARG if k > n or n >= 2^32. k == 0 selects nothing. */
#define DR_DGC_MAX_ADJUST 10
size_t dr_dgc_workspace_size(size_t n);
size_t dr_dgc_max_count(size_t k);
int dr_dgc_select(const float *x, size_t n, size_t k, uint64_t key, uint32_t *idx_out,
                  size_t cap, size_t *count, void *work);

/* The same selection as dr_dgc_select with its values, val_out[j] = x[idx_out[j]], for
 * a finite x: DR_E_NUMERIC (the outputs then undefined) if x holds an Inf or a NaN. One
 * sweep of x where the sample is good: besides thr, the sample gives a cut below it (its
 * magnitude at about twice thr's rank), and one sweep collects the entries at or above the
 * cut with their values and finds the largest magnitude. The counts at thresholds at or
 * above the cut, and the selection, then read those candidates; a threshold below the
 * cut, or more candidates than their room, reads x again (and checks it for Inf/NaN first
 * when the sweep stopped early). A cut of zero (a tensor of mostly zeros) takes the
 * nonzero entries as candidates, and the exact top-k is dr_topk_sparsify's (fast on such
 * tensors too). val_out has room for `cap` values, as idx_out.
 * `work` holds dr_dgc_sparsify_workspace_size(n, k) bytes (0: k > n), aligned for a
 * uint32. k == 0 writes nothing and still refuses Inf/NaN. Otherwise as dr_dgc_select. */
size_t dr_dgc_sparsify_workspace_size(size_t n, size_t k);
int dr_dgc_sparsify(const float *x, size_t n, size_t k, uint64_t key, uint32_t *idx_out,
                    float *val_out, size_t cap, size_t *count, void *work);

/* --------------------------------------------------------------------------- adaq */
/* AdaComp-style quantised sparsification (after Chen et al. 2018 and GRACE's adaq): the
 * positive and the negative entries are treated apart. For the positives P (x > 0):
 * target t = ceil(|P|*ratio); S = min(max(1, n/100), ceil(2560/ratio)) positions are
 * sampled (a few thousand sampled selections place a threshold well inside the band;
 * fewer random reads at large ratios), of which Sp are positive; thr = the kk-th
 * largest of those Sp, kk = clamp(round(t*Sp/|P|), 1, Sp) (the largest positive when
 * Sp = 0), corrected as in dgc step 2 against #{x >= thr} with the same band around t.
 * The positives with x >= thr are sent as
 * indices plus one value, their mean: float32(sum / count), the sum in double as 16
 * partial sums, the entry at index i added to partial i % 16 in index order, the
 * partials then added pairwise (partial l += partial l + h for l < h, h = 8, 4, 2, 1;
 * the sum is partial 0), so that every path, scalar or vector, sends the same bits.
 * Likewise for the negatives (x < 0, by |x|).
 * Unlike dgc there is no exact fallback: a tensor whose magnitudes are few and
 * repeated may select more than 1.3t (every entry sharing the threshold's magnitude).
 * When the adjustments end below the band, the highest threshold tried that selected
 * more than 1.3t is used instead, so a side with entries always sends some (a side of
 * equal magnitudes sends all of them, never none).
 *
 * Frame: kind DR_KIND_ADAQ, raw codecs, numel = n, count = np + nn, params[1..3] zero,
 * params[0] the layout, whichever gives the smaller frame (the lists on a tie):
 *   DR_ADAQ_LISTS (0), 68 + 4(np + nn) bytes:
 *     section 0: mean_pos, mean_neg as float32 (0 for an empty side);
 *     section 1: np uint32 indices of the selected positives, strictly ascending;
 *     section 2: nn uint32 indices of the selected negatives, strictly ascending.
 *   DR_ADAQ_SIGN_MAP (1), 64 + ceil(n/4) bytes (a selection of more than about one entry
 *   in 16, as at GRACE's default ratio of 0.3):
 *     section 0: the means, as above;
 *     section 1: a 2-bit code per entry, entry i at bits 2(i%4) of byte i/4: 0 not
 *     sent, 1 a selected positive, 2 a selected negative (never 3); the last byte's
 *     bits past n clear.
 * Empty selections are legal.
 *
 * dr_adaq_encode: ratio in (0, 1]. `work` holds dr_adaq_workspace_size(n) bytes,
 * aligned for a uint32: 12 per sampled entry, plus, from 4096 entries, room for an eighth
 * of x as candidates (index and value): about 1.1n bytes in all, of which a 1% ratio
 * touches about 0.2n. The encoder reads x once, plus the sample and passes over the
 * candidates (entries past a cut drawn from the sample); the frame is what sweeps of x
 * per threshold tried would give, which it falls back to where the cut does not hold
 * the answer (large ratios, or ties that crowd the candidates). If cap is too small it returns DR_E_DST_TOO_SMALL with the
 * frame size needed in *written (cap >= dr_adaq_bound(n) always suffices).
 * DR_E_NUMERIC if x holds Inf/NaN.
 * dr_adaq_decode: writes all of out[0..n): mean_pos at the positive indices, mean_neg at
 * the negative ones, 0 elsewhere. Refuses indices >= n, lists not strictly ascending,
 * an index in both lists, a map with a code 3, bits set past n or a count of codes other
 * than the frame's count, mean_pos < 0, mean_neg > 0 or non-finite means, besides the
 * frame checks every decoder makes (see quant.h), all before writing but one: where
 * the lists select more than one entry in 64, an index in both lists is found while
 * out is written, block by block (one read of each list instead of two), so after that
 * DR_E_CORRUPT out[0..n) is unspecified.
 * dr_adaq_decode_add: the same checks, then adds mean_pos at the positive indices and
 * mean_neg at the negative ones to out, leaving the other entries as they are: on a
 * zeroed out (e.g. fresh pages from calloc, which need no clearing pass) it gives what
 * dr_adaq_decode gives (a zero's sign aside); on a running sum it accumulates a rank's payload. Refused frames
 * leave out untouched. */
#define DR_ADAQ_LISTS 0
#define DR_ADAQ_SIGN_MAP 1
size_t dr_adaq_workspace_size(size_t n);
size_t dr_adaq_bound(size_t n);
int dr_adaq_encode(const float *x, size_t n, float ratio, uint64_t key, uint8_t dtype,
                   void *work, uint8_t *buf, size_t cap, size_t *written);
int dr_adaq_decode(const uint8_t *buf, size_t len, float *out, size_t n);
int dr_adaq_decode_add(const uint8_t *buf, size_t len, float *out, size_t n);

#endif /* DEEPREDUCE_SPARSIFY_H */
