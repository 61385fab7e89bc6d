/* Internal: the frame functions for a codec that computes its sections' CRC itself,
 * inside the sweep that writes or reads them while the bytes are in cache (inceptionn,
 * the raw sparse frame), instead of a separate read of the whole frame. Every other
 * caller uses dr_frame_seal and dr_frame_parse, which compute and verify the CRC on
 * their own. Not public API. */
#ifndef DR_FRAME_FUSED_H
#define DR_FRAME_FUSED_H

#include "deepreduce.h"

/* dr_frame_seal for sections whose CRC the caller has computed: body_crc is
 * dr_crc32(0, ...) continued over every byte of the sections, in order. Writes the header
 * and a trailer equal to dr_frame_seal's (the header's CRC continued by body_crc). */
int dr_frame_seal_body_crc(const dr_frame *f, uint32_t body_crc, uint8_t *buf, size_t cap,
                           size_t *frame_size);

/* dr_frame_parse less the CRC: every other check, in the same order. The caller must
 * continue dr_crc32(0, buf, <header size>) over every section byte, compare the result
 * with the trailer (dr_frame_stored_crc) and refuse a mismatch with DR_E_FRAME_CHECKSUM
 * before it reports success. */
int dr_frame_parse_unverified(const uint8_t *buf, size_t len, dr_frame *out);

/* The CRC32 the trailer of the frame buf[0..len) holds (len >= DR_FRAME_TRAILER). */
uint32_t dr_frame_stored_crc(const uint8_t *buf, size_t len);

#endif
