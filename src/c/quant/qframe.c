/* Frame plumbing shared by the quantisers (see qframe.h). */
#include "qframe.h"

int dr_qf_prepare(dr_frame *f, uint8_t kind, uint8_t dtype, const float *x, size_t n,
                  uint32_t nsections, const uint8_t *buf, size_t cap, const size_t *written)
{
    size_t total;
    int st;
    if (buf == NULL || written == NULL || (n > 0 && x == NULL) || dtype > DR_DTYPE_FLOAT64)
        return DR_E_ARG;
    f->kind = kind;
    f->index_codec = DR_INDEX_RAW;
    f->value_codec = DR_VALUE_RAW;
    f->dtype = dtype;
    f->nsections = nsections;
    f->numel = n;
    f->count = n;
    st = dr_frame_layout(f, &total);
    if (st != DR_OK)
        return st;
    return cap < total ? DR_E_DST_TOO_SMALL : DR_OK;
}

int dr_qf_open(const uint8_t *buf, size_t len, uint8_t kind, size_t n, uint32_t nsections,
               const float *out, dr_frame *f)
{
    int st = dr_frame_parse(buf, len, f);
    if (st != DR_OK)
        return st;
    if (f->kind != kind || f->index_codec != DR_INDEX_RAW || f->value_codec != DR_VALUE_RAW)
        return DR_E_FRAME_CODEC;
    if (f->nsections != nsections || f->numel != (uint64_t)n || f->count != (uint64_t)n)
        return DR_E_FRAME_FIELD;
    if (n > 0 && out == NULL)
        return DR_E_ARG;
    return DR_OK;
}

size_t dr_qf_crumb_bytes(size_t n)
{
    return n / 4u + (n % 4u != 0);
}

int dr_qf_padding_clear(const uint8_t *bytes, size_t n, unsigned bits_per)
{
    unsigned per_byte = 8u / bits_per, used = (unsigned)(n % per_byte);
    if (used == 0)
        return 1;
    return (bytes[n / per_byte] >> (used * bits_per)) == 0;
}
