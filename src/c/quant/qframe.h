/* Internal to src/c/quant: the frame plumbing every quantiser shares, so each quantiser
 * file holds only its own arithmetic. Not part of the public API. */
#ifndef DR_QFRAME_H
#define DR_QFRAME_H

#include "deepreduce.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

/* Check the arguments every encoder shares (x may be NULL only when n == 0), then lay
 * out a dense frame of `kind` in *f, zeroed first, with `nsections` sections of the
 * lengths section_len[]: fills *f (params left zero for the caller to set before
 * sealing) and section_off. DR_E_ARG for a bad argument or a section over 4 GiB,
 * DR_E_DST_TOO_SMALL if cap is short. */
int dr_qf_prepare(dr_frame *f, uint8_t kind, uint8_t dtype, const float *x, size_t n,
                  uint32_t nsections, const uint64_t *section_len, const uint8_t *buf,
                  size_t cap, const size_t *written);

/* Parse buf[0..len) as a dense frame of `kind` for n elements with `nsections`
 * sections (their lengths and the params are the caller's to check), with out usable
 * for n floats. */
int dr_qf_open(const uint8_t *buf, size_t len, uint8_t kind, size_t n, uint32_t nsections,
               const float *out, dr_frame *f);

/* What dr_qf_open checks once the frame is parsed (for a caller that parses it without
 * the CRC, frame_fused.h): DR_E_FRAME_CODEC unless *f is of `kind` with raw codecs,
 * DR_E_FRAME_FIELD unless it has `nsections` sections and numel = count = n, DR_E_ARG
 * for out NULL with n > 0. */
int dr_qf_check_dense(const dr_frame *f, uint8_t kind, size_t n, uint32_t nsections,
                      const float *out);

/* dr_qf_open for a kind without params: also DR_E_FRAME_FIELD unless every param is
 * zero and the sections have exactly the lengths section_len[0..nsections). */
int dr_qf_open_plain(const uint8_t *buf, size_t len, uint8_t kind, size_t n,
                     uint32_t nsections, const uint64_t *section_len, const float *out,
                     dr_frame *f);

/* dr_qf_open_plain for the layout efsignsgd, terngrad and eightbit share: section 0 one
 * float32 scale, section 1 code_bytes bytes of n codes of bits_per bits each. Then
 * DR_E_CORRUPT unless the scale is finite and >= 0 and the codes' padding bits are
 * clear; else *scale and *codes are set. */
int dr_qf_open_scaled(const uint8_t *buf, size_t len, uint8_t kind, size_t n,
                      uint64_t code_bytes, unsigned bits_per, const float *out, float *scale,
                      const uint8_t **codes);

/* The byte count of n 2-bit codes, ceil(n / 4). */
size_t dr_qf_crumb_bytes(size_t n);

/* Of n 2-bit codes (element i at bits 2(i%4) of codes[i/4]; dr_qf_crumb_bytes(n) bytes,
 * padding checked before): DR_E_CORRUPT if one is 3, which no encoder writes, else DR_OK
 * and, where nonzero is not NULL, in *nonzero how many are not 0. */
int dr_qf_crumbs_check(const uint8_t *codes, size_t n, size_t *nonzero);

/* out[i] = value[code i] for n 2-bit codes (checked before), or where `add` is set
 * out[i] += value[code i] where code i is not 0 (out[i] kept at code 0, -0.0 too). */
void dr_qf_crumb_values(const uint8_t *codes, size_t n, const float value[3], float *out, int add);

/* Whether the bits of the last byte past n bits of a bitmap of `bits_per` bits per
 * element are all zero (the encoders always clear them). */
int dr_qf_padding_clear(const uint8_t *bytes, size_t n, unsigned bits_per);

/* Whether bytes[0..n) hold `value` (the byte decoders' check for a code the encoder
 * never writes). */
int dr_qf_has_byte(const uint8_t *bytes, size_t n, uint8_t value);

/* Whether bytes[0..n) are all 0 (the codes of a scale or a norm of 0: the decoders'
 * check that a zero scale comes with nothing sent). */
int dr_qf_all_zero(const uint8_t *bytes, size_t n);

/* dr_pack_signs of x[0..n) into out; returns 1 if x is all finite, 0 if it holds an Inf
 * or a NaN (the bitmap is written either way). One sweep. */
int dr_qf_pack_signs_finite(const float *x, size_t n, uint8_t *out);

/* The sign-bitmap frame signsgd and signum share (kind tells them apart); DR_E_NUMERIC
 * for Inf/NaN in x. */
int dr_qf_sign_encode(uint8_t kind, const float *x, size_t n, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written);
int dr_qf_sign_decode(uint8_t kind, const uint8_t *buf, size_t len, float *out, size_t n);

static inline float dr_qf_get_f32(const uint8_t *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void dr_qf_put_f32(uint8_t *p, float v)
{
    memcpy(p, &v, sizeof v);
}

#endif
