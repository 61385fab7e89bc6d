/* Signum: signSGD applied to a momentum the caller keeps; this file holds the momentum
 * update and the frame under its own kind. */
#include "qframe.h"
#include "signs_simd.h"
#include "signum_simd.h"
#include "stream_simd.h"

/* Elements per block of the scalar fused update-and-pack sweep: a block of m_new
 * (8 KiB) is still in L1 when its signs are packed, so m_new is not read back from
 * memory. A multiple of 8, so every block but the last fills whole bitmap bytes. */
#define FUSED_BLOCK 2048u

size_t dr_signum_size(size_t n)
{
    return dr_signsgd_size(n);
}

int dr_signum_encode(const float *m, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                     size_t *written)
{
    return dr_qf_sign_encode(DR_KIND_SIGNUM, m, n, dtype, buf, cap, written);
}

int dr_signum_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    return dr_qf_sign_decode(DR_KIND_SIGNUM, buf, len, out, n);
}

int dr_signum_momentum_into(float *m_new, const float *m_old, const float *g, size_t n,
                            float beta)
{
    size_t i;
    float a = 1.0f - beta;
    if ((n > 0 && (m_new == NULL || m_old == NULL || g == NULL)) || !(beta >= 0.0f && beta <= 1.0f))
        return DR_E_ARG;
    for (i = 0; i < n; i++)
        m_new[i] = a * g[i] + beta * m_old[i];
    return DR_OK;
}

int dr_signum_momentum(float *m, const float *g, size_t n, float beta, int first)
{
    if ((n > 0 && (m == NULL || g == NULL)) || !(beta >= 0.0f && beta <= 1.0f))
        return DR_E_ARG;
    if (first) {
        memcpy(m, g, n * sizeof *m);
        return DR_OK;
    }
    return dr_signum_momentum_into(m, m, g, n, beta);
}

int dr_signum_momentum_encode(float *m_new, const float *m_old, const float *g, size_t n,
                              float beta, uint8_t dtype, uint8_t *buf, size_t cap,
                              size_t *written)
{
    dr_frame f;
    const uint64_t len[1] = {dr_sign_bytes(n)};
    uint8_t *bits;
    size_t start;
    int finite = 1, st;
    if ((n > 0 && (m_new == NULL || g == NULL)) || !(beta >= 0.0f && beta <= 1.0f))
        return DR_E_ARG;
    st = dr_qf_prepare(&f, DR_KIND_SIGNUM, dtype, g, n, 1, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    bits = buf + f.section_off[0];
    start = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2) {
        uint32_t nonfinite = 0;
        start = dr_signum_fused_avx2(m_new, m_old, g, n, 1.0f - beta, beta, bits, &nonfinite,
                                     dr_stream_output(m_new, n));
        finite = !nonfinite;
    }
#endif
    /* The scalar path, and the vector path's tail (fewer than 8 elements). */
    for (; start < n; start += FUSED_BLOCK) {
        size_t count = n - start < FUSED_BLOCK ? n - start : FUSED_BLOCK;
        if (m_old == NULL)
            memmove(m_new + start, g + start, count * sizeof *m_new);
        else
            dr_signum_momentum_into(m_new + start, m_old + start, g + start, count, beta);
        finite &= dr_qf_pack_signs_finite(m_new + start, count, bits + start / 8u);
    }
    if (!finite)
        return DR_E_NUMERIC;
    return dr_frame_seal(&f, buf, cap, written);
}
