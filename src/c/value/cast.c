/* fp16 and bf16: the two cast codecs, one parameterised body (layout in
 * deepreduce/value.h). Conversion is vec.h's, F16C path included; this file adds the
 * section handling, saturation, and the refusal of non-finite halves. */
#include "value_internal.h"

#include <string.h>

/* Values per round trip through the stack buffer: the output may be unaligned for
 * uint16_t, so conversions go through an aligned buffer. */
#define CHUNK 256

typedef struct {
    int (*to_half)(const float *, uint16_t *, size_t);
    int (*from_half)(const uint16_t *, float *, size_t);
    uint16_t exp_mask; /* exponent field: all ones means infinity or NaN */
    uint16_t max_finite; /* largest finite magnitude */
} cast_format;

static const cast_format fp16_format = {dr_f32_to_f16, dr_f16_to_f32, 0x7c00u, 0x7bffu};
static const cast_format bf16_format = {dr_f32_to_bf16, dr_bf16_to_f32, 0x7f80u, 0x7f7fu};

static size_t cast_bound(size_t r)
{
    return r > (size_t)UINT32_MAX ? 0 : 2u * r;
}

static int cast_encode(const cast_format *fmt, const float *val, size_t r, uint8_t *out,
                       size_t cap, size_t *written)
{
    uint16_t buf[CHUNK];
    size_t done, i;
    if (r > (size_t)UINT32_MAX || written == NULL || (r > 0 && val == NULL) ||
        (out == NULL && cap > 0))
        return DR_E_ARG;
    if (!dr_value_all_finite(val, r))
        return DR_E_NUMERIC;
    if (cap < 2u * r)
        return DR_E_DST_TOO_SMALL;
    for (done = 0; done < r; done += CHUNK) {
        size_t n = r - done < CHUNK ? r - done : CHUNK;
        fmt->to_half(val + done, buf, n);
        /* The input is finite, so an infinity here is an overflow: saturate it. */
        for (i = 0; i < n; i++)
            if ((buf[i] & 0x7fffu) == fmt->exp_mask)
                buf[i] = (uint16_t)((buf[i] & 0x8000u) | fmt->max_finite);
        memcpy(out + 2u * done, buf, 2u * n);
    }
    *written = 2u * r;
    return DR_OK;
}

static int cast_decode(const cast_format *fmt, const uint8_t *in, size_t len, size_t r,
                       float *val_out)
{
    uint16_t buf[CHUNK];
    size_t done, i;
    if (r > (size_t)UINT32_MAX || (r > 0 && val_out == NULL) || (in == NULL && len > 0))
        return DR_E_ARG;
    if (len < 2u * r)
        return DR_E_FRAME_SHORT;
    if (len > 2u * r)
        return DR_E_FRAME_FIELD;
    for (done = 0; done < r; done += CHUNK) {
        size_t n = r - done < CHUNK ? r - done : CHUNK;
        memcpy(buf, in + 2u * done, 2u * n);
        for (i = 0; i < n; i++)
            if ((buf[i] & fmt->exp_mask) == fmt->exp_mask)
                return DR_E_CORRUPT;
        fmt->from_half(buf, val_out + done, n);
    }
    return DR_OK;
}

size_t dr_value_fp16_bound(size_t r)
{
    return cast_bound(r);
}

int dr_value_fp16_encode(const float *val, size_t r, uint8_t *out, size_t cap, size_t *written)
{
    return cast_encode(&fp16_format, val, r, out, cap, written);
}

int dr_value_fp16_decode(const uint8_t *in, size_t len, size_t r, float *val_out)
{
    return cast_decode(&fp16_format, in, len, r, val_out);
}

size_t dr_value_bf16_bound(size_t r)
{
    return cast_bound(r);
}

int dr_value_bf16_encode(const float *val, size_t r, uint8_t *out, size_t cap, size_t *written)
{
    return cast_encode(&bf16_format, val, r, out, cap, written);
}

int dr_value_bf16_decode(const uint8_t *in, size_t len, size_t r, float *val_out)
{
    return cast_decode(&bf16_format, in, len, r, val_out);
}
