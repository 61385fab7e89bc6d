/* Dense arithmetic, gathers and scatters. Loops are written so the compiler vectorises
 * them at -O2/-O3; every index is checked before anything is written. */
#include "deepreduce.h"
#include "simd_config.h"
#include "finite_bytes.h"
#include "stream_simd.h"

#include <math.h>
#include <string.h>

/* Whether the bits of f have an all-ones exponent (Inf or NaN). */
DR_ALWAYS_INLINE uint32_t nonfinite_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (bits & 0x7f800000u) == 0x7f800000u;
}

/* out = a x + b y, and whether an output had an all-ones exponent (Inf or NaN). Inlined
 * into both entry points (through axpby_any): dr_axpby drops the unused test. */
DR_ALWAYS_INLINE uint32_t axpby(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    uint32_t nonfinite = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        float v = a * x[i] + b * y[i];
        out[i] = v;
        nonfinite |= nonfinite_bits(v);
    }
    return nonfinite;
}

#if DR_HAVE_X86_SIMD
/* All ones in the lanes of v with an all-ones exponent (Inf or NaN), the vector form of
 * nonfinite_bits. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i nonfinite_lanes_avx2(__m256 v)
{
    const __m256i exponent = _mm256_set1_epi32(0x7f800000);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), exponent), exponent);
}

/* axpby with out streamed past the caches (out 16-byte aligned): the same operations per
 * lane (a product each, then their sum, rounded as the plain loop rounds them), eight
 * lanes at a time. */
DR_TARGET_AVX2 static uint32_t axpby_streamed_avx2(float a, const float *x, float b, const float *y, float *out,
                                                   size_t n)
{
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    __m256i nonfinite = _mm256_setzero_si256();
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 v = _mm256_add_ps(_mm256_mul_ps(va, _mm256_loadu_ps(x + i)), _mm256_mul_ps(vb, _mm256_loadu_ps(y + i)));
        dr_read_ahead(x + i);
        dr_read_ahead(y + i);
        nonfinite = _mm256_or_si256(nonfinite, nonfinite_lanes_avx2(v));
        dr_store8_avx2(out + i, v, 1);
    }
    dr_stream_fence();
    return (uint32_t)!_mm256_testz_si256(nonfinite, nonfinite) | axpby(a, x + i, b, y + i, out + i, n - i);
}

/* Whether the n floats at p and at q do not overlap. */
static int apart(const float *p, const float *q, size_t n)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return a + n * sizeof(float) <= b || b + n * sizeof(float) <= a;
}
#endif

/* axpby, streamed where out is a large output of its own (dr_stream_output): its old
 * lines are then not read before they are written (a third of the traffic; out of
 * place on 25.6M floats, 11.1 -> 8.5 ms). Where out is x or y those lines have just
 * been read, and streaming them measured slower (7.4 -> 7.8 ms). */
DR_ALWAYS_INLINE uint32_t axpby_any(float a, const float *x, float b, const float *y, float *out, size_t n)
{
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2 && dr_stream_output(out, n) && apart(out, x, n) && apart(out, y, n))
        return axpby_streamed_avx2(a, x, b, y, out, n);
#endif
    return axpby(a, x, b, y, out, n);
}

int dr_axpby(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    if (n > 0 && (x == NULL || y == NULL || out == NULL))
        return DR_E_ARG;
    (void)axpby_any(a, x, b, y, out, n);
    return DR_OK;
}

int dr_axpby_finite(float a, const float *x, float b, const float *y, float *out, size_t n)
{
    if (n > 0 && (x == NULL || y == NULL || out == NULL))
        return DR_E_ARG;
    return axpby_any(a, x, b, y, out, n) ? 0 : 1;
}

/* dr_dgc_accumulate's sweep, and whether a u or a v had an all-ones exponent; `first`
 * (u_old and v_old NULL): u = v = copy = g. */
DR_ALWAYS_INLINE uint32_t accumulate(float m, const float *u_old, const float *v_old, const float *g, float *u,
                                     float *v, float *copy, size_t n, int first)
{
    uint32_t nonfinite = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        float ui = first ? g[i] : m * u_old[i] + g[i], vi = first ? ui : v_old[i] + ui;
        u[i] = ui;
        v[i] = vi;
        copy[i] = vi;
        nonfinite |= nonfinite_bits(ui) | nonfinite_bits(vi);
    }
    return nonfinite;
}

#if DR_HAVE_X86_SIMD
/* accumulate with the three outputs streamed past the caches (each 16-byte aligned):
 * the same operations per lane, eight lanes at a time. */
DR_TARGET_AVX2 static uint32_t accumulate_streamed_avx2(float m, const float *u_old, const float *v_old,
                                                        const float *g, float *u, float *v, float *copy,
                                                        size_t n, int first)
{
    const __m256 vm = _mm256_set1_ps(m);
    __m256i nonfinite = _mm256_setzero_si256();
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 ui = _mm256_loadu_ps(g + i), vi = ui;
        if (!first) {
            ui = _mm256_add_ps(_mm256_mul_ps(vm, _mm256_loadu_ps(u_old + i)), ui);
            vi = _mm256_add_ps(_mm256_loadu_ps(v_old + i), ui);
        }
        nonfinite = _mm256_or_si256(nonfinite, _mm256_or_si256(nonfinite_lanes_avx2(ui), nonfinite_lanes_avx2(vi)));
        dr_store8_avx2(u + i, ui, 1);
        dr_store8_avx2(v + i, vi, 1);
        dr_store8_avx2(copy + i, vi, 1);
    }
    dr_stream_fence();
    return (uint32_t)!_mm256_testz_si256(nonfinite, nonfinite) |
           accumulate(m, first ? NULL : u_old + i, first ? NULL : v_old + i, g + i, u + i, v + i, copy + i,
                      n - i, first);
}

/* Whether the three outputs are streamed: each large, aligned and apart from every input. */
static int accumulate_streams(const float *u_old, const float *v_old, const float *g, float *u, float *v,
                              float *copy, size_t n)
{
    const float *out[3] = {u, v, copy};
    int k;
    for (k = 0; k < 3; k++)
        if (!dr_stream_output(out[k], n) || !apart(out[k], g, n) ||
            (u_old != NULL && (!apart(out[k], u_old, n) || !apart(out[k], v_old, n))))
            return 0;
    return 1;
}
#endif

int dr_dgc_accumulate(float m, const float *u_old, const float *v_old, const float *g, float *u, float *v,
                      float *copy, size_t n)
{
    int first = u_old == NULL;
    uint32_t nonfinite;
    if ((u_old == NULL) != (v_old == NULL) ||
        (n > 0 && (g == NULL || u == NULL || v == NULL || copy == NULL)))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2 && accumulate_streams(u_old, v_old, g, u, v, copy, n))
        nonfinite = accumulate_streamed_avx2(m, u_old, v_old, g, u, v, copy, n, first);
    else
#endif
        nonfinite = first ? accumulate(m, NULL, NULL, g, u, v, copy, n, 1)
                          : accumulate(m, u_old, v_old, g, u, v, copy, n, 0);
    return nonfinite ? 0 : 1;
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
