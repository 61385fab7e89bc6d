/* Signum: signSGD applied to a momentum the caller keeps; this file holds the momentum
 * update and the frame under its own kind. */
#include "qframe.h"

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
