/* 1-bit SGD: the sign bitmap plus one representative value per side, the mean of the
 * negatives and the mean of the non-negatives, so each side keeps its sum. */
#include "qframe.h"
#include "qstats.h"

#include <math.h>

size_t dr_onebit_size(size_t n)
{
    return dr_frame_header_size(2) + 8u + dr_sign_bytes(n) + DR_FRAME_TRAILER;
}

int dr_onebit_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                     size_t *written)
{
    dr_frame f;
    double sum_neg, sum_nonneg;
    size_t count_neg;
    float mean_neg, mean_nonneg;
    const uint64_t len[2] = {8, dr_sign_bytes(n)};
    int st = dr_qf_prepare(&f, DR_KIND_ONEBIT, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    /* The split is the packing rule (x >= 0 sets the bit), so a NaN falls on the
     * negative side and poisons its mean, which is caught below. */
    dr_qs_split_sums(dr_simd_active(), x, n, &sum_neg, &sum_nonneg, &count_neg);
    mean_neg = count_neg > 0 ? (float)(sum_neg / (double)count_neg) : 0.0f;
    mean_nonneg = n > count_neg ? (float)(sum_nonneg / (double)(n - count_neg)) : 0.0f;
    if (!isfinite(mean_neg) || !isfinite(mean_nonneg))
        return DR_E_NUMERIC;
    dr_qf_put_f32(buf + f.section_off[0], mean_neg);
    dr_qf_put_f32(buf + f.section_off[0] + 4, mean_nonneg);
    dr_pack_signs(x, n, buf + f.section_off[1]);
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_onebit_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    const uint8_t *bits;
    float mean_neg, mean_nonneg;
    const uint64_t sections[2] = {8, dr_sign_bytes(n)};
    int st = dr_qf_open_plain(buf, len, DR_KIND_ONEBIT, n, 2, sections, out, &f);
    if (st != DR_OK)
        return st;
    mean_neg = dr_qf_get_f32(buf + f.section_off[0]);
    mean_nonneg = dr_qf_get_f32(buf + f.section_off[0] + 4);
    bits = buf + f.section_off[1];
    if (!(mean_neg <= 0.0f && isfinite(mean_neg)) ||
        !(mean_nonneg >= 0.0f && isfinite(mean_nonneg)) || !dr_qf_padding_clear(bits, n, 1))
        return DR_E_CORRUPT;
    /* Bit clear = the element was negative: it gets the negatives' mean. */
    return dr_unpack_signs(bits, n, mean_neg, mean_nonneg, out);
}
