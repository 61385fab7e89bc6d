/* Internal: the AVX2 variant of signum's fused momentum-and-pack sweep. */
#ifndef DR_SIGNUM_SIMD_H
#define DR_SIGNUM_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
/* For a prefix of whole 8-element groups: m_new = a*g + beta*m_old (m_new = g when m_old
 * is NULL), bits[i/8] = the signs of m_new as dr_pack_signs packs them, and *nonfinite
 * set nonzero if that prefix of m_new holds an Inf or a NaN. With `stream` nonzero
 * (dr_stream_output(m_new, n), stream_simd.h), m_new is written with non-temporal
 * stores. Returns the elements done. */
size_t dr_signum_fused_avx2(float *m_new, const float *m_old, const float *g, size_t n,
                            float a, float beta, uint8_t *bits, uint32_t *nonfinite,
                            int stream);
#endif

#endif
