/* signSGD: one sign bit per element, and the majority vote that aggregates it. The
 * sign-bitmap frame is shared with signum (see qframe.h), which differs only in kind. */
#include "qframe.h"

int dr_qf_sign_encode(uint8_t kind, const float *x, size_t n, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written)
{
    dr_frame f;
    const uint64_t len[1] = {dr_sign_bytes(n)};
    int st = dr_qf_prepare(&f, kind, dtype, x, n, 1, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    if (!dr_qf_pack_signs_finite(x, n, buf + f.section_off[0]))
        return DR_E_NUMERIC;
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_qf_sign_decode(uint8_t kind, const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    const uint8_t *bits;
    const uint64_t sections[1] = {dr_sign_bytes(n)};
    int st = dr_qf_open_plain(buf, len, kind, n, 1, sections, out, &f);
    if (st != DR_OK)
        return st;
    bits = buf + f.section_off[0];
    if (!dr_qf_padding_clear(bits, n, 1))
        return DR_E_CORRUPT;
    return dr_unpack_signs(bits, n, -1.0f, 1.0f, out);
}

size_t dr_signsgd_size(size_t n)
{
    return dr_frame_header_size(1) + dr_sign_bytes(n) + DR_FRAME_TRAILER;
}

int dr_signsgd_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                      size_t *written)
{
    return dr_qf_sign_encode(DR_KIND_SIGNSGD, x, n, dtype, buf, cap, written);
}

int dr_signsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    return dr_qf_sign_decode(DR_KIND_SIGNSGD, buf, len, out, n);
}

int dr_sign_vote(float *sum_inout, size_t n)
{
    size_t i;
    if (n > 0 && sum_inout == NULL)
        return DR_E_ARG;
    /* Selects, not branches: the signs of a sum are random, so a branch per element
     * would mispredict half the time; this form the compiler turns into vector blends. */
    for (i = 0; i < n; i++) {
        const float s = sum_inout[i];
        const float vote = s >= 0.0f ? 1.0f : -1.0f;
        /* NaN stays NaN: a rank's non-finite gradient must reach the optimizer. */
        sum_inout[i] = s == s ? vote : s;
    }
    return DR_OK;
}
