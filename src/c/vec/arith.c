/* Dense arithmetic, gathers and scatters. Loops are written so the compiler vectorises
 * them at -O2/-O3; every index is checked before anything is written. */
#include "deepreduce.h"
#include "simd_config.h"
#include "finite_bytes.h"

#include <math.h>
#include <string.h>

/* out = a x + b y, and whether an output had an all-ones exponent (Inf or NaN). Inlined
 * into both entry points: dr_axpby drops the unused test. */
DR_ALWAYS_INLINE uint32_t axpby(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    uint32_t nonfinite = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        float v = a * x[i] + b * y[i];
        uint32_t bits;
        out[i] = v;
        memcpy(&bits, &v, sizeof bits);
        nonfinite |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return nonfinite;
}

int dr_axpby(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    if (n > 0 && (x == NULL || y == NULL || out == NULL))
        return DR_E_ARG;
    (void)axpby(a, x, b, y, out, n);
    return DR_OK;
}

int dr_axpby_finite(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    if (n > 0 && (x == NULL || y == NULL || out == NULL))
        return DR_E_ARG;
    return axpby(a, x, b, y, out, n) ? 0 : 1;
}

int dr_zero(float *x, size_t n)
{
    if (n > 0 && x == NULL)
        return DR_E_ARG;
    if (n > 0)
        memset(x, 0, n * sizeof *x); /* all-zero bits are +0.0 */
    return DR_OK;
}

float dr_abs_max(const float *x, size_t n)
{
    float m = 0.0f;
    size_t i;
    for (i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        m = v > m ? v : m; /* a NaN compares false and is skipped */
    }
    return m;
}

/* The largest of the n float32 values' bits at p with the sign cleared: an all-ones
 * exponent (an infinity or a NaN) iff it is at least 0x7f800000. An integer max
 * vectorises without reassociating any float arithmetic; written once, compiled plain
 * and for AVX2. Read through a byte pointer, so that a frame's section at any alignment
 * may be passed. */
DR_ALWAYS_INLINE uint32_t max_abs_bits(const uint8_t *p, size_t n)
{
    uint32_t top = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, p + 4 * i, sizeof bits);
        bits &= 0x7fffffffu;
        top = bits > top ? bits : top;
    }
    return top;
}

static uint32_t max_abs_bits_plain(const uint8_t *p, size_t n)
{
    return max_abs_bits(p, n);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static uint32_t max_abs_bits_avx2(const uint8_t *p, size_t n)
{
    return max_abs_bits(p, n);
}
#endif

int dr_finite_bytes(const uint8_t *p, size_t n)
{
    uint32_t top;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        top = max_abs_bits_avx2(p, n);
    else
#endif
        top = max_abs_bits_plain(p, n);
    return top >= 0x7f800000u ? 0 : 1;
}

int dr_all_finite(const float *x, size_t n)
{
    if (n > 0 && x == NULL)
        return DR_E_ARG;
    return dr_finite_bytes((const uint8_t *)(const void *)x, n);
}

static int indices_in_range(const uint32_t *idx, size_t r, size_t n)
{
    uint32_t worst = 0;
    size_t j;
    for (j = 0; j < r; j++)
        worst = idx[j] > worst ? idx[j] : worst;
    return r == 0 || (size_t)worst < n;
}

int dr_gather(const float *dense, size_t n, const uint32_t *idx, size_t r, float *out)
{
    size_t j;
    if (r > 0 && (dense == NULL || idx == NULL || out == NULL))
        return DR_E_ARG;
    if (!indices_in_range(idx, r, n))
        return DR_E_CORRUPT;
    for (j = 0; j < r; j++)
        out[j] = dense[idx[j]];
    return DR_OK;
}

enum scatter_op { SCATTER_SET, SCATTER_ADD, SCATTER_ZERO };

/* The scatters' one body: check the pointers (val is unused by SCATTER_ZERO) and every
 * index, then dense[idx[j]] = val[j], += val[j] or = 0. */
static int scatter(enum scatter_op op, const uint32_t *idx, const float *val, size_t r,
                   float *dense, size_t n)
{
    size_t j;
    if (r > 0 && (dense == NULL || idx == NULL || (op != SCATTER_ZERO && val == NULL)))
        return DR_E_ARG;
    if (!indices_in_range(idx, r, n))
        return DR_E_CORRUPT;
    switch (op) {
    case SCATTER_SET:
        for (j = 0; j < r; j++)
            dense[idx[j]] = val[j];
        break;
    case SCATTER_ADD:
        for (j = 0; j < r; j++)
            dense[idx[j]] += val[j];
        break;
    case SCATTER_ZERO:
        for (j = 0; j < r; j++)
            dense[idx[j]] = 0.0f;
        break;
    }
    return DR_OK;
}

int dr_scatter(const uint32_t *idx, const float *val, size_t r, float *dense, size_t n)
{
    return scatter(SCATTER_SET, idx, val, r, dense, n);
}

int dr_scatter_add(const uint32_t *idx, const float *val, size_t r, float *dense, size_t n)
{
    return scatter(SCATTER_ADD, idx, val, r, dense, n);
}

int dr_zero_at(const uint32_t *idx, size_t r, float *dense, size_t n)
{
    return scatter(SCATTER_ZERO, idx, NULL, r, dense, n);
}
