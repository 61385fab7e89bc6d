/*
 * deepreduce/select.h - choosing which entries of a gradient to send:
 * exact top-k, thresholds, reproducible random subsets, and the raw sparse frame.
 *
 * Every selector returns indices in ascending order, so index codecs see sorted input
 * and every rank produces the same bytes for the same gradient.
 */
#ifndef DEEPREDUCE_SELECT_H
#define DEEPREDUCE_SELECT_H

/* The k entries of largest magnitude |x[i]|, as ascending indices in idx_out[0..k).
 * Ties at the k-th magnitude go to the lowest indices. NaN counts as magnitude zero.
 * Exact; radix select over the float bits in four streaming passes, no allocation. DR_E_ARG if k > n or n >= 2^32. k == 0 writes nothing. */
int dr_topk(const float *x, size_t n, size_t k, uint32_t *idx_out);

/* Scratch bytes dr_topk_select needs for a tensor of n entries and k selected. */
size_t dr_topk_workspace_size(size_t n, size_t k);

/* Exactly dr_topk's answer (the same indices, bit for bit), faster: from 8,192 entries
 * a threshold estimated from a sample of |x| bounds the candidates, one vectorised pass
 * collects them, and the radix select runs over the candidates only. Below 8,192 entries,
 * and where the estimate misses (too few or too many candidates), an exact histogram of
 * the keys' top radix level sets the threshold instead (the bucket that holds the k-th
 * key), so the result never depends on the sample; dr_topk's own passes answer only
 * where the k-th magnitude is 0 or a denormal below 2^-128. On tensors of at least 2 * DR_THREADS_MIN_NUMEL
 * entries the work is split over up to dr_thread_count() threads (at most 8), with the
 * same answer for every count. `work` holds dr_topk_workspace_size(n, k) bytes, aligned
 * as malloc aligns. */
int dr_topk_select(const float *x, size_t n, size_t k, uint32_t *idx_out, void *work);

/* A sparsifier's top-k: dr_topk_select's indices in idx_out[0..k) and their values,
 * val_out[j] = x[idx_out[j]] (the sweep collects them with its candidates, so there is
 * no gather afterwards), for a finite x: DR_E_NUMERIC (the outputs then undefined) if x
 * holds an Inf or a NaN. The sweep keeps the largest magnitude it reads, so that refusal
 * costs no pass of its own (dr_topk's path, for a k-th magnitude of 0 or below 2^-128,
 * checks first with a pass). k == 0 writes nothing
 * and still refuses Inf/NaN. Otherwise as dr_topk_select (same `work`, DR_E_ARG). */
int dr_topk_sparsify(const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out, void *work);

/* Scratch bytes dr_topk_residual_encode needs for a tensor of n entries and k selected. */
size_t dr_topk_residual_workspace_size(size_t n, size_t k);

/* A residual memory's step in front of the top-k sparsifier, in one call (a Python step
 * made about ninety calls around these kernels):
 *   1. the compensated tensor c = beta * residual + gamma * grad, as dr_axpby writes it,
 *      into kept[0..n); where residual is NULL (the memory's first step, e = 0),
 *      c = gamma * grad as dr_axpby(0, grad, gamma, grad) writes it (grad's bits where
 *      gamma is 1);
 *   2. c's k entries of largest magnitude, dr_topk_sparsify's, framed as
 *      dr_sparse_raw_encode frames them (sparsifier `kind`, float32 values) into
 *      buf[0..cap), its length in *written;
 *   3. kept's selected entries set to +0.0 (dr_zero_at): kept then holds what the frame
 *      does not carry, the residual for the next step.
 * The same bits as those four calls in turn. kept may be residual itself; it must not
 * overlap grad. `work` holds dr_topk_residual_workspace_size(n, k) bytes, aligned as
 * malloc aligns. DR_E_NUMERIC if c holds an Inf or a NaN (a tensor that the memory must
 * not keep: kept and buf are undefined then), DR_E_DST_TOO_SMALL if cap is under
 * dr_sparse_raw_frame_size(n, k), DR_E_ARG if k > n, n >= 2^32, kind is not a dr_kind, buf,
 * written or work is NULL, or grad or kept is NULL with n > 0; nothing is written on
 * either refusal. */
int dr_topk_residual_encode(const float *residual, float beta, const float *grad, float gamma, size_t n,
                            size_t k, float *kept, uint8_t kind, uint8_t *buf, size_t cap, size_t *written,
                            void *work);

/* The magnitude dr_topk_select sweeps x with, into *t: from a sample of 1,024 runs of 16
 * consecutive entries (one run at a random offset in each 1,024th of x, the same offsets
 * for every call on n entries; below 131,072 entries, one run in each 128 entries), the
 * sample's magnitude that about k/n of it reaches, taken
 * lower by three standard deviations of that count. The deviation is measured on the
 * sample itself (from neighbouring runs' counts), so entries whose magnitudes come in
 * clusters (a channel of large gradients) widen the margin, and scales that vary from
 * layer to layer do not. dr_topk_select keeps to the sampled path when at least k and at
 * most min(2k + 65,536, n) entries reach *t (dr_threshold_count counts them) and otherwise
 * falls back to the exact top level: this says how often that happens on a caller's data.
 * *t = 0 where dr_topk_select takes the exact top level at once (n < 8,192). `work` as
 * for dr_topk_select; DR_E_ARG as dr_topk_select's. */
int dr_topk_threshold_estimate(const float *x, size_t n, size_t k, void *work, float *t);

/* Number of entries with |x[i]| >= t (t >= 0; NaN entries never count). */
int dr_threshold_count(const float *x, size_t n, float t, size_t *count);

/* Ascending indices of the entries with |x[i]| >= t, written to idx_out[0..*count), in
 * one sweep of x. DR_E_DST_TOO_SMALL if more than `cap` entries qualify (then *count
 * holds how many, and idx_out[0..cap) the first cap of them). */
int dr_threshold_select(const float *x, size_t n, float t, uint32_t *idx_out, size_t cap,
                        size_t *count);

/* A sparsifier's threshold selection: dr_threshold_select's indices with their values,
 * val_out[j] = x[idx_out[j]], for a finite x, in one sweep that also keeps the largest
 * magnitude: DR_E_NUMERIC (the outputs then undefined) if x holds an Inf or a NaN.
 * DR_E_DST_TOO_SMALL if more than `cap` entries qualify: the sweep stops where the room
 * ends, and a count (and, for the refusal, a check) of x puts in *count how many qualify,
 * so a second call with that much room succeeds. DR_E_ARG as dr_threshold_select's, or
 * val_out NULL with cap > 0. */
int dr_threshold_sparsify(const float *x, size_t n, float t, uint32_t *idx_out, float *val_out,
                          size_t cap, size_t *count);

/* The raw sparse frame (sparsifier `kind`, float32 values) of dr_threshold_sparsify's
 * selection of x, the same bytes as dr_sparse_raw_encode makes of it, in one call and
 * without the index and value arrays: one sweep of x writes the bitmap layout's
 * sections (the bitmap straight from the comparisons, the values a block at a time,
 * folded into the CRC while in cache), where the two calls wrote and read back eight
 * bytes per entry. For a dense selection, which the bitmap layout is for. Where the
 * count takes the lists layout (one entry in 32 or fewer), or cap has no room for the
 * bitmap, a second sweep (a count, then) writes the lists: for a sparse selection
 * dr_threshold_sparsify and dr_sparse_raw_encode read x once. *count = the entries it
 * sends, *written = the frame's size, dr_sparse_raw_frame_size(n, *count). Refusals
 * (buf's contents then undefined):
 * DR_E_DST_TOO_SMALL if cap is under the frame's size (*written then holds that size),
 * DR_E_NUMERIC if x holds an Inf or a NaN, DR_E_ARG as dr_threshold_sparsify's, for kind
 * not a dr_kind, for buf, written or count NULL, or where x changed between the sweeps. */
int dr_threshold_encode(uint8_t kind, const float *x, size_t n, float t, uint8_t *buf, size_t cap,
                        size_t *written, size_t *count);

/* out[i] = +0.0 where |x[i]| >= t (NaN never), x[i] elsewhere: x less the entries a
 * threshold frame of x sends, which a residual memory keeps. out may be x. DR_E_ARG if t
 * is negative or NaN, or x or out is NULL with n > 0. */
int dr_threshold_zero(const float *x, size_t n, float t, float *out);

/* Scratch bytes dr_randomk needs for a tensor of n entries. */
size_t dr_randomk_workspace_size(size_t n);

/* k distinct indices drawn uniformly from [0, n) by the stream `key` (see
 * dr_rng_key), in ascending order. Same key, n and k: same indices on every rank.
 * `work` holds dr_randomk_workspace_size(n) bytes. DR_E_ARG if k > n. */
int dr_randomk(uint64_t key, size_t n, size_t k, uint32_t *idx_out, void *work);

/* A random-k sparsifier's draw: dr_randomk's indices (the same ones) with their values,
 * val_out[j] = x[idx_out[j]], read in one sweep of x that also checks it: DR_E_NUMERIC if
 * x holds an Inf or a NaN (idx_out is written all the same; val_out is then undefined).
 * `work` as dr_randomk's. DR_E_ARG as dr_randomk's, or x NULL with n > 0, or val_out
 * NULL with k > 0. */
int dr_randomk_sparsify(uint64_t key, const float *x, size_t n, size_t k, uint32_t *idx_out, float *val_out,
                        void *work);

/* ------------------------------------------------------------------ raw sparse frames */
/* A sparse frame with plain sections, in the layout of the two (params[0]) that takes
 * fewer bytes for r entries of numel (the lists on a tie; dr_sparse_raw_layout):
 *   DR_SPARSE_LISTS (0), 8r bytes of sections: section 0 = the r indices, uint32,
 *     strictly ascending; section 1 = their r float32 values.
 *   DR_SPARSE_BITMAP (1), ceil(numel/8) + 4r bytes (where more than one entry in 32 is
 *     sent: GRACE's default top-k ratio of 0.3 sends 1.33 numel bytes where the lists took
 *     2.4 numel): section 0 = one bit per entry of the dense tensor, set where the entry
 *     is sent (entry i at bit i % 8 of byte i / 8; the bits past numel clear); section 1 =
 *     the r values in index order.
 * Values may hold any bit pattern (NaN and Inf pass through). Kind tells which sparsifier
 * made the frame; params[1..3] are zero. */
#define DR_SPARSE_LISTS 0
#define DR_SPARSE_BITMAP 1

/* The layout dr_sparse_raw_encode writes for r entries of a tensor of numel. */
int dr_sparse_raw_layout(uint64_t numel, size_t r);

/* Bytes a raw sparse frame of r entries takes at most, whatever numel (the lists'): a
 * buffer this large takes any frame of r entries. */
size_t dr_sparse_raw_size(size_t r);

/* Bytes the raw sparse frame of r entries of a tensor of numel takes (the smaller
 * layout's; 0 for r > numel, which no frame holds). */
size_t dr_sparse_raw_frame_size(uint64_t numel, size_t r);

/* Frame (idx[j], val[j]) for j < r of a dense tensor of `numel` entries, in the layout
 * dr_sparse_raw_layout gives; *written = dr_sparse_raw_frame_size(numel, r). DR_E_ARG if
 * the indices are not strictly ascending or not below numel (the order is checked as the
 * indices are read: buf's contents are undefined after that refusal), DR_E_DST_TOO_SMALL
 * if cap is under the frame's size. */
int dr_sparse_raw_encode(uint8_t kind, uint8_t dtype, uint64_t numel, const uint32_t *idx,
                         const float *val, size_t r, uint8_t *buf, size_t cap, size_t *written);

/* Parse a raw sparse frame made by sparsifier `kind` and write its entries into
 * dense[0..n) (dense[idx] = val; entries not named are left as they are). Refuses
 * (DR_E_FRAME_CODEC) a frame of another kind or with non-raw codecs, (DR_E_FRAME_FIELD)
 * one whose numel is not n, whose layout is not the one dr_sparse_raw_layout gives for
 * its count, whose section lengths are not that layout's or whose params[1..3] are not
 * zero, and (DR_E_CORRUPT) indices that are out of range, repeated or not ascending, or
 * a bitmap with bits set past n or other than `count` bits set; dense is untouched then.
 * Where `finite` is not NULL, *finite is set on DR_OK: 1 if every entry the frame wrote
 * is finite, 0 if one is Inf or NaN (so a caller learns whether its result is finite
 * without a sweep of dense). Time O(len), no memory. */
int dr_sparse_raw_decode(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                         int *finite);

/* As dr_sparse_raw_decode, but adds: dense[idx] += val, and where dense[idx] is a NaN it
 * stays that NaN (quieted), whatever val is, on every path. A communicator sums every
 * rank's frame into one zeroed tensor this way (rank by rank, so the sum's rounding is
 * that of adding the decoded tensors in rank order), instead of a dense tensor per rank.
 * The same refusals, checked before anything is added. *finite (if `finite` is not
 * NULL) says whether every sum the frame wrote is finite: an Inf or a NaN stays one
 * under later additions, so a sum of frames into zeros is finite exactly where every
 * call said 1. Time O(len), no memory. */
int dr_sparse_raw_decode_add(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                             int *finite);

/* One rank's frame as the whole dense tensor: dense[0..n) becomes the frame's entries
 * and +0.0 elsewhere (dense's old contents do not matter), *finite as
 * dr_sparse_raw_decode sets it; or, where buf is the non-finite marker of `kind` for n
 * entries (dr_frame_is_nonfinite), NaN in every entry and *finite = 0. The same bits as
 * dr_zero then dr_sparse_raw_decode, or as a NaN fill, in one call (a one-rank step
 * decodes this way). The refusals of dr_frame_is_nonfinite, then of
 * dr_sparse_raw_decode, and DR_E_ARG for a NULL finite; dense is untouched on each.
 * Time O(n + len), no memory. */
int dr_sparse_raw_decode_dense(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                               int *finite);

#endif /* DEEPREDUCE_SELECT_H */
