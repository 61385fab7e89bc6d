/* EF-signSGD: the sign bitmap scaled by mean|x|, so the decoded tensor has the input's
 * l1 norm; the caller's error-feedback memory absorbs the rest. */
#include "qframe.h"
#include "qstats.h"

#include <math.h>

size_t dr_efsignsgd_size(size_t n)
{
    return dr_frame_header_size(2) + 4u + dr_sign_bytes(n) + DR_FRAME_TRAILER;
}

int dr_efsignsgd_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                        size_t *written)
{
    dr_frame f;
    double sum;
    float mean;
    const uint64_t len[2] = {4, dr_sign_bytes(n)};
    int st = dr_qf_prepare(&f, DR_KIND_EFSIGNSGD, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    sum = dr_qs_sum_abs(dr_simd_active(), x, n);
    mean = n > 0 ? (float)(sum / (double)n) : 0.0f;
    if (!isfinite(mean))
        return DR_E_NUMERIC;
    dr_qf_put_f32(buf + f.section_off[0], mean);
    dr_pack_signs(x, n, buf + f.section_off[1]);
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_efsignsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    const uint8_t *bits;
    float mean;
    int st = dr_qf_open_scaled(buf, len, DR_KIND_EFSIGNSGD, n, dr_sign_bytes(n), 1, out,
                               &mean, &bits);
    if (st != DR_OK)
        return st;
    return dr_unpack_signs(bits, n, -mean, mean, out);
}
