/*
 * deepreduce/spardl.h - the arithmetic of SparDL's sparse all-reduce (SPEC section 6):
 * one block's top-k packed into a frame, a received frame unpacked, and the merge and
 * re-selection of sorted (index, value) lists. The schedule (who sends which block to
 * whom) is the caller's.
 *
 * Block frame: kind DR_KIND_SPARDL, value codec raw float32, index codec one of
 * DR_INDEX_RAW / EF / RICE / VARINT, numel = the block size B, count = r entries,
 * params[0] = a tag the caller chooses (block number, team number) and checks on
 * receipt, params[1..3] = 0. Section 0 = the r ascending indices (< B) coded by the
 * index codec, section 1 = the r float32 values. A message may hold several frames back
 * to back; dr_spardl_frame_length walks them.
 */
#ifndef DEEPREDUCE_SPARDL_H
#define DEEPREDUCE_SPARDL_H

/* Bytes of the largest block frame for a block of B entries carrying at most k
 * (k <= B) with this index codec; 0 for an index codec not listed above. */
size_t dr_spardl_frame_bound(size_t block, size_t k, int index_codec);

/* Scratch bytes dr_spardl_select_encode needs for a block of B entries and budget k. */
size_t dr_spardl_workspace_size(size_t block, size_t k);

/* Select the min(k, B) entries of largest |block[i]| (dr_topk_select's set: ties to the
 * lower index), leave out those that are exactly zero (nothing to send), frame them,
 * and set the sent entries of `block` to zero: what is left in `block` is what this hop
 * keeps back. The frame goes to out[0..*written); `work` holds
 * dr_spardl_workspace_size(B, k) bytes, aligned as malloc aligns. DR_E_ARG for an
 * unknown index codec, B = 0 or B >= 2^32; DR_E_DST_TOO_SMALL (block untouched) if cap is
 * below what the frame needs (never more than dr_spardl_frame_bound). */
int dr_spardl_select_encode(float *block, size_t B, size_t k, int index_codec, uint32_t tag,
                            uint8_t *out, size_t cap, size_t *written, void *work);

/* The length of the frame that starts at buf[0..len), read from its header alone (the
 * frame is checked by dr_spardl_decode). DR_E_FRAME_SHORT if the header or the frame
 * it declares runs past len, DR_E_FRAME_MAGIC / DR_E_FRAME_FIELD for a foreign header. */
int dr_spardl_frame_length(const uint8_t *buf, size_t len, size_t *frame_len);

/* Decode exactly one block frame buf[0..len) for a block of B entries: the frame must
 * be a SparDL block frame with numel B, tag `expected_tag`, at most `cap` entries, and
 * strictly ascending indices < B. Writes idx_out[0..*count) and val_out[0..*count). */
int dr_spardl_decode(const uint8_t *buf, size_t len, size_t B, uint32_t expected_tag,
                     uint32_t *idx_out, float *val_out, size_t cap, size_t *count);

/* Merge two lists of strictly ascending indices, adding the values of an index in
 * both (a's value + b's value, in that order, so every rank that merges the same lists
 * in the same order gets the same bits). Writes io/vo[0..*n_out), at most na + nb; the
 * outputs must not overlap the inputs. DR_E_ARG if an input does not ascend strictly. */
int dr_sparse_merge_add(const uint32_t *ia, const float *va, size_t na, const uint32_t *ib,
                        const float *vb, size_t nb, uint32_t *io, float *vo, size_t *n_out);

/* Keep, in place and in their order, the min(k, n) entries of largest |val| of the list
 * (idx, val)[0..n) (ties to the earlier entry); *n_out gets how many remain. `work` holds
 * k uint32. */
int dr_sparse_keep_topk(uint32_t *idx, float *val, size_t n, size_t k, size_t *n_out,
                        uint32_t *work);

#endif /* DEEPREDUCE_SPARDL_H */
