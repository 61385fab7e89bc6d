/* 3LC: three-value quantisation, five trits per byte, zero runs collapsed (quant.h). */
#include "qframe.h"

#include <float.h>
#include <math.h>

enum {
    TRITS_PER_BYTE = 5,
    ALL_ZERO_BYTE = 121, /* five 0 trits: (0+1)(1+3+9+27+81) */
    LAST_GROUP_BYTE = 242,
    RUN_BASE = 243,      /* RUN_BASE + (run - 2) stands for run all-zero bytes */
    RUN_MIN = 2,
    RUN_MAX = 14
};

static size_t group_count(size_t n)
{
    return n / TRITS_PER_BYTE + (n % TRITS_PER_BYTE != 0);
}

size_t dr_threelc_bound(size_t n)
{
    return dr_frame_header_size(2) + 4u + group_count(n) + DR_FRAME_TRAILER;
}

/* Flush a run of all-zero bytes as run bytes of at most RUN_MAX, a lone one as itself. */
static uint8_t *flush_zero_run(uint8_t *p, size_t run)
{
    while (run >= RUN_MIN) {
        size_t take = run < RUN_MAX ? run : RUN_MAX;
        *p++ = (uint8_t)(RUN_BASE + (take - RUN_MIN));
        run -= take;
    }
    if (run == 1)
        *p++ = ALL_ZERO_BYTE;
    return p;
}

int dr_threelc_encode(const float *x, size_t n, float sparsity, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written)
{
    dr_frame f;
    const uint64_t len[2] = {4, group_count(n)};
    float max_abs = 0.0f, m, half;
    size_t i, g, run = 0;
    uint8_t *start, *p;
    uint32_t sparsity_bits;
    int st;
    if (!(sparsity >= 1.0f && sparsity < 2.0f))
        return DR_E_ARG;
    st = dr_qf_prepare(&f, DR_KIND_THREELC, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    for (i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (!(a <= FLT_MAX))
            return DR_E_NUMERIC;
        max_abs = a > max_abs ? a : max_abs;
    }
    m = max_abs * sparsity;
    if (!isfinite(m))
        return DR_E_NUMERIC;
    half = 0.5f * m;
    start = p = buf + f.section_off[1];
    for (g = 0; g < group_count(n); g++) {
        unsigned byte = 0, weight = 1, j;
        for (j = 0; j < TRITS_PER_BYTE; j++, weight *= 3) {
            size_t k = g * TRITS_PER_BYTE + j;
            unsigned t = 1; /* the 0 trit, also past n */
            if (k < n && m > 0.0f)
                t = x[k] >= half ? 2u : x[k] <= -half ? 0u : 1u;
            byte += t * weight;
        }
        if (byte == ALL_ZERO_BYTE) {
            run++;
            continue;
        }
        p = flush_zero_run(p, run);
        run = 0;
        *p++ = (uint8_t)byte;
    }
    p = flush_zero_run(p, run);
    f.section_len[1] = (uint64_t)(p - start);
    memcpy(&sparsity_bits, &sparsity, sizeof sparsity_bits);
    f.params[0] = sparsity_bits;
    dr_qf_put_f32(buf + f.section_off[0], m);
    return dr_frame_seal(&f, buf, cap, written);
}

/* Whether the group stream [p, end) is one the encoder writes for n elements (in
 * `groups` groups): its bytes and runs cover every group exactly once, a trit past n is
 * 0, and where M is 0 (`all_zero`: x was all zeros) every trit is. Checked before any
 * write, so that a refused frame leaves out as it was. */
static int stream_sound(const uint8_t *p, const uint8_t *end, size_t n, size_t groups, int all_zero)
{
    size_t g = 0;
    for (; p < end; p++) {
        if (*p >= RUN_BASE) {
            size_t run = (size_t)(*p - RUN_BASE) + RUN_MIN;
            if (run > groups - g)
                return 0;
            g += run;
        } else {
            unsigned byte = *p, j;
            if (g == groups || (all_zero && byte != ALL_ZERO_BYTE))
                return 0;
            if (g + 1 == groups) /* the last group: its trits past n */
                for (j = 0; j < TRITS_PER_BYTE; j++, byte /= 3)
                    if (g * TRITS_PER_BYTE + j >= n && byte % 3 != 1)
                        return 0;
            g++;
        }
    }
    return g == groups;
}

int dr_threelc_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    const uint8_t *p, *end;
    size_t groups = group_count(n), g = 0, i;
    float m, value[3];
    int st = dr_qf_open(buf, len, DR_KIND_THREELC, n, 2, out, &f);
    if (st != DR_OK)
        return st;
    if (f.section_len[0] != 4 || f.section_len[1] > groups || (f.params[1] | f.params[2] | f.params[3]) != 0)
        return DR_E_FRAME_FIELD;
    m = dr_qf_get_f32(buf + f.section_off[0]);
    if (!(m >= 0.0f) || !isfinite(m))
        return DR_E_CORRUPT;
    value[0] = -m;
    value[1] = 0.0f;
    value[2] = m;
    p = buf + f.section_off[1];
    end = p + f.section_len[1];
    if (!stream_sound(p, end, n, groups, m == 0.0f))
        return DR_E_CORRUPT;
    /* Every byte is a group or a run of groups (stream_sound: they fit, and end at n). */
    for (; p < end; p++) {
        if (*p >= RUN_BASE) {
            size_t run = (size_t)(*p - RUN_BASE) + RUN_MIN;
            size_t last = (g + run) * TRITS_PER_BYTE < n ? (g + run) * TRITS_PER_BYTE : n;
            for (i = g * TRITS_PER_BYTE; i < last; i++)
                out[i] = 0.0f;
            g += run;
        } else {
            unsigned byte = *p, j;
            for (j = 0; j < TRITS_PER_BYTE && g * TRITS_PER_BYTE + j < n; j++, byte /= 3)
                out[g * TRITS_PER_BYTE + j] = value[byte % 3];
            g++;
        }
    }
    return DR_OK;
}
