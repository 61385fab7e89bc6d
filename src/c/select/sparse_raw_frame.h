/* Internal: what the encoders of the raw sparse frame share (sparse_raw.c), for those
 * that write its sections from other sources than index and value arrays
 * (dr_threshold_encode, straight from the tensor). */
#ifndef DR_SPARSE_RAW_FRAME_H
#define DR_SPARSE_RAW_FRAME_H

#include "deepreduce.h"

#include <stddef.h>
#include <stdint.h>

/* f filled in for r entries of a tensor of numel (dr_sparse_raw_layout's layout, the
 * sections' lengths and offsets) and *total = the frame's size, for dr_frame_seal_body_crc
 * once the sections are written. DR_E_ARG if r > numel, kind is not a dr_kind or dtype
 * not a dr_dtype, or as dr_frame_layout refuses. */
int dr_sparse_raw_prepare(uint8_t kind, uint8_t dtype, uint64_t numel, size_t r, dr_frame *f, size_t *total);

/* Whether the frame f lays out is large enough that its sections are better written past
 * the caches (dr_sparse_raw_copy's `stream`; dr_stream_fence after the last copy). */
int dr_sparse_raw_streams(const dr_frame *f);

/* len bytes from src to dst, streamed past the caches or not. */
void dr_sparse_raw_copy(uint8_t *dst, const void *src, size_t len, int stream);

#endif
