/* Dettmers' 8-bit approximation: sign + the nearest of 128 magnitudes of a dynamic tree
 * (a decimal exponent in unary, then linear steps inside the decade), times max|x|.
 * The table is a pure function of the code, built on the stack per call from exact
 * double arithmetic, so every platform gets the same float32 values. */
#include "eightbit_simd.h"
#include "lookup_simd.h"
#include "qframe.h"
#include "qstats.h"

#include <math.h>

size_t dr_eightbit_size(size_t n)
{
    return dr_frame_header_size(2) + 4u + n + DR_FRAME_TRAILER;
}

static void build_table(float *table)
{
    static const double decade[7] = {1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
    unsigned c;
    table[0] = 0.0f;
    for (c = 1; c < 128; c++) {
        unsigned z = 0, f, j;
        while (!(c & (0x40u >> z)))
            z++;
        f = 6u - z;
        j = c & ((1u << f) - 1u);
        table[c] = (float)(decade[z] * (0.1 + 0.9 * (double)(j + 1) / (double)(1u << f)));
    }
}

int dr_eightbit_table(float *table)
{
    if (table == NULL)
        return DR_E_ARG;
    build_table(table);
    return DR_OK;
}

/* The index of the table entry nearest to a in [0, 1], ties to the lower one.
 * The decade z is the number of powers 10^-1..10^-6 at or above a (independent
 * compares, no chain); inside it the entries are evenly spaced, so the code follows by
 * inverting T[2^f + j] = 10^-z*(0.1 + 0.9(j + 1)/2^f), j = -1 being the decade below's
 * top. Float rounding can put that estimate one step off, so the neighbours are
 * compared against the exact table to settle it. */
static const float decade_up[7] = {1.0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f};

/* The steps per decade, 2^f / 0.9 in float, f = 6 - z. */
static void decade_steps(float *steps)
{
    unsigned z;
    for (z = 0; z < 7u; z++)
        steps[z] = (float)(1u << (6u - z)) / 0.9f;
}

static unsigned nearest(const float *table, const float *steps, float a)
{
    unsigned z = (a <= 1e-1f) + (a <= 1e-2f) + (a <= 1e-3f) + (a <= 1e-4f) + (a <= 1e-5f) +
                 (a <= 1e-6f);
    unsigned f = 6u - z, c, best;
    float t = (a * decade_up[z] - 0.1f) * steps[z]; /* j + 1, in (-0.12, 2^f] */
    float d_best;
    int j1 = (int)(t + 0.5f + 1.0f) - 1; /* round(t), t + 1.5 > 0 */
    j1 = j1 < 0 ? 0 : (j1 > (1 << f) ? 1 << f : j1);
    c = (1u << f) - 1u + (unsigned)j1;
    best = c;
    d_best = fabsf(a - table[c]);
    if (c > 0 && fabsf(a - table[c - 1]) <= d_best) {
        best = c - 1;
        d_best = fabsf(a - table[c - 1]);
    }
    if (c < 127 && fabsf(table[c + 1] - a) < d_best)
        best = c + 1;
    return best;
}

/* bound[c]: the bit pattern of the least magnitude y in [0, scale] coded c or above,
 * nearest(y / scale) >= c (bound[0] = 0). Codes rise with the magnitude (y / scale rounds
 * monotonically, and the nearest entry of a rising table, ties to the lower, only moves
 * up), so each is found by bisection over the bit patterns, starting from the one
 * before: about 127 * 31 calls of nearest(). The AVX-512 search compares magnitudes with
 * these rather than dividing. */
static void code_bounds(const float *table, const float *steps, float scale, uint32_t *bound)
{
    uint32_t top, c;
    memcpy(&top, &scale, sizeof top);
    bound[0] = 0;
    for (c = 1; c < 128; c++) {
        uint32_t lo = bound[c - 1], hi = top; /* nearest(scale / scale) = 127 >= c */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2u;
            float y;
            memcpy(&y, &mid, sizeof y);
            if (nearest(table, steps, y / scale) >= c)
                hi = mid;
            else
                lo = mid + 1u;
        }
        bound[c] = lo;
    }
}

int dr_eightbit_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                       size_t *written)
{
    dr_frame f;
    float table[128], steps[7], scale;
    uint32_t bound[128];
    uint8_t *codes;
    uint32_t top;
    size_t i;
    int simd = dr_simd_active();
    const uint64_t len[2] = {4, n};
    int st = dr_qf_prepare(&f, DR_KIND_EIGHTBIT, dtype, x, n, 2, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    top = dr_qs_max_abs_bits(simd, x, n);
    if (top >= 0x7f800000u) /* Inf or NaN */
        return DR_E_NUMERIC;
    memcpy(&scale, &top, sizeof scale);
    build_table(table);
    decade_steps(steps);
    dr_qf_put_f32(buf + f.section_off[0], scale);
    codes = buf + f.section_off[1];
    i = 0;
#if DR_HAVE_X86_SIMD
    /* The bounds cost about 4000 calls of nearest(): worth it from a few thousand
     * elements. Tiny scales (near the subnormals) keep the scalar search. */
    if (scale >= 1e-30f && n >= 4096u && simd >= DR_SIMD_AVX512) {
        code_bounds(table, steps, scale, bound);
        i = dr_eightbit_codes_avx512(x, n, 1.0f / scale, bound, decade_up, steps, codes);
    } else if (scale > 0.0f && simd >= DR_SIMD_AVX2)
        i = dr_eightbit_codes_avx2(x, n, scale, table, decade_up, steps, codes);
#endif
    for (; i < n; i++) {
        unsigned c = scale > 0.0f ? nearest(table, steps, fabsf(x[i]) / scale) : 0u;
        codes[i] = (uint8_t)(c == 0 ? 0u : c | (x[i] < 0.0f ? 0x80u : 0u));
    }
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_eightbit_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    float table[128], scale;
    const uint8_t *codes;
    size_t i;
    /* Byte codes have no padding bits to check. */
    int st = dr_qf_open_scaled(buf, len, DR_KIND_EIGHTBIT, n, n, 8, out, &scale, &codes);
    if (st != DR_OK)
        return st;
    if (dr_qf_has_byte(codes, n, 0x80u)) /* a signed zero the encoder never writes */
        return DR_E_CORRUPT;
    build_table(table);
    /* The magnitudes times the scale once, not per element: the same products. */
    for (i = 0; i < 128; i++)
        table[i] *= scale;
    i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512)
        i = dr_signed_lookup128_avx512(codes, n, table, out);
    else if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_eightbit_values_avx2(codes, n, table, out);
#endif
    for (; i < n; i++) {
        float v = table[codes[i] & 0x7fu];
        out[i] = codes[i] & 0x80u ? -v : v;
    }
    return DR_OK;
}
