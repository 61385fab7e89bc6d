/* Dettmers' 8-bit approximation: sign + the nearest of 128 magnitudes of a dynamic tree
 * (a decimal exponent in unary, then linear steps inside the decade), times max|x|.
 * The table is a pure function of the code, built on the stack per call from exact
 * double arithmetic, so every platform gets the same float32 values.
 * The code of x is nearest(|x| / max), defined below. For tensors of a few thousand
 * elements and more, the encoder first finds where each code begins (bound[], from
 * nearest() itself), then codes each element from its bit pattern without dividing:
 * AVX-512 by a per-decade linear estimate settled by one compare with a bound (the
 * guess), AVX2 and scalar by a table over the pattern's top 16 bits (the buckets). Both
 * are exact by construction and checked when built, so every path writes the same
 * bytes. */
#include "eightbit_simd.h"
#include "lookup_simd.h"
#include "qframe.h"
#include "qstats.h"
#include "stream_simd.h"
#include "size_math.h"

#include <math.h>

size_t dr_eightbit_size(size_t n)
{
    return dr_size_add(dr_frame_header_size(2) + 4u + DR_FRAME_TRAILER, n);
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
 * before: about 127 * 31 calls of nearest(). */
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

/* The buckets from bound[1]'s (less one) to the scale's: 2^21 (the ratio of 1 to half the
 * least entry, 1e-6) spans at most 22 exponents of 128 buckets, plus one. */
#define DR_EIGHTBIT_BUCKETS (24u * 128u)

/* The code as a function of the magnitude's bit pattern m is a staircase whose steps are
 * the bounds. Cut the patterns into buckets of 2^16 (the exponent and the top 7 mantissa
 * bits, a relative width of at most 1/128) and each bucket holds at most one step: the
 * narrowest relative gap between codes, at the top decade, is 0.9/64 (1.4%). Entry b,
 * for the patterns (base + b) << 16 onwards, is (c0 << 16) + 2^16 - t where c0 is the
 * code at the bucket's start and t (1..2^16 - 1) how far into it the next code begins, or
 * just c0 << 16 when the next code begins past the bucket; then
 *     code = (entry + (m & 0xffff)) >> 16,
 * the carry adding the step. Bucket 0 ends at or below bound[1], so it is all zeros and
 * the magnitudes below it clamp into it. Returns the bucket count, or 0 where a bucket
 * would hold two steps or the table would not fit (scales near the subnormals, whose
 * buckets are wider): those take nearest() per element. */
static uint32_t code_buckets(const uint32_t *bound, uint32_t top, uint32_t *entry, uint32_t *base)
{
    uint32_t b, count, c = 0;
    if (bound[1] < 0x10000u)
        return 0;
    *base = (bound[1] >> 16) - 1u;
    count = (top >> 16) - *base + 1u;
    if (count > DR_EIGHTBIT_BUCKETS)
        return 0;
    for (b = 0; b < count; b++) {
        uint32_t start = (*base + b) << 16;
        while (c < 127 && bound[c + 1] <= start)
            c++;
        entry[b] = c << 16;
        if (c < 127 && bound[c + 1] - start < 0x10000u) {
            if (c < 126 && bound[c + 2] - start < 0x10000u)
                return 0;
            entry[b] += 0x10000u - (bound[c + 1] - start);
        }
    }
    return count;
}

#if DR_HAVE_X86_SIMD
/* The guess of eightbit_simd.h for one pattern m, as the AVX-512 lanes compute it
 * (fmaf rounds once, as the vector fused multiply-add does); past the int range (which
 * the check below would refuse) INT32_MAX. */
static int32_t guess_estimate(const dr_eightbit_guess *g, uint32_t m)
{
    uint32_t e = m >> 23 > g->binade0 ? (m >> 23) - g->binade0 : 0u;
    uint32_t z = (g->split[e] - (m & 0x7fffffu)) >> 24;
    float y;
    memcpy(&y, &m, sizeof y);
    y = fmaf(y, g->slope[z], g->offset[z]);
    return y < 2147483648.0f ? (int32_t)y : INT32_MAX;
}

/* The guess for a scale (top: its bit pattern) and its bounds. Inside decade z (a = y /
 * scale in (10^-z-1, 10^-z]) the codes' midpoints are evenly spaced: code 2^f - 1 +
 * round(t), t = (a 10^z - 0.1) 2^f / 0.9 (decade 6 runs from 0: round(a 10^6)), so the
 * estimate is that, less 1/32 so that rounding (a few ulps of y) only ever makes it one
 * low. The decade comes from the binade: 10^-z * scale for z = 1..6 are the powers;
 * each binade has its top's decade and one more below a power inside it. Then it checks
 * that the estimate is the code or one below for every m in [0, top]: between the
 * bounds, the binades' starts and the powers the decade is fixed, so the estimate rises
 * with m there and its ends decide. Returns 1, or 0 where the scale is too close to the
 * subnormals for the binades to fit (or the check fails, which the margin rules out):
 * those take the buckets. */
static int build_guess(const uint32_t *bound, float scale, uint32_t top, dr_eightbit_guess *g)
{
    static const double delta = 1.0 / 32.0;
    uint32_t cut[128 + 64], power[7], count = 0, e, c, k, z, lo;
    for (k = 1; k <= 6u; k++) {
        float p = (float)(pow(10.0, -(double)k) * (double)scale);
        memcpy(power + k, &p, sizeof *power);
    }
    if (power[6] >> 23 < 2u || (top >> 23) - ((power[6] >> 23) - 1u) >= 32u)
        return 0;
    g->binade0 = (power[6] >> 23) - 1u; /* wholly below 10^-6 * scale, but for rounding */
    for (e = 0; e < 32u; e++) {
        uint32_t start = (g->binade0 + e) << 23, zhi = 0, split = 0;
        for (k = 1; k <= 6u; k++) {
            zhi += power[k] >= start + (1u << 23); /* at or above the binade's end */
            if (power[k] >> 23 == g->binade0 + e && (power[k] & 0x7fffffu) != 0)
                split = power[k] & 0x7fffffu;
        }
        g->split[e] = split ? ((zhi + 1u) << 24) + split - 1u : (zhi << 24) + 0xffffffu;
        if (g->binade0 + e <= top >> 23) {
            cut[count++] = e == 0 ? 0u : start;
            if (split)
                cut[count++] = start + split;
        }
    }
    for (z = 0; z < 16u; z++) {
        double width = (double)(1u << (z < 6u ? 6u - z : 0u)), up = pow(10.0, (double)(z < 6u ? z : 6u));
        g->slope[z] = (float)(z < 6u ? up * width / (0.9 * (double)scale) : up / (double)scale);
        g->offset[z] = (float)(z < 6u ? width - 0.5 - 0.1 * width / 0.9 - delta : 0.5 - delta);
    }
    for (c = 0; c < 127u; c++)
        g->next[c] = bound[c + 1];
    g->next[127] = UINT32_MAX;
    /* The cuts: binade starts and powers (already rising), then the bounds merged in. */
    for (c = 1; c < 128u; c++) {
        uint32_t at = count++;
        while (at > 0 && cut[at - 1] > bound[c]) {
            cut[at] = cut[at - 1];
            at--;
        }
        cut[at] = bound[c];
    }
    for (k = 0, c = 0; k < count; k++) {
        uint32_t hi;
        lo = cut[k];
        if (lo > top)
            break;
        hi = k + 1 < count && cut[k + 1] <= top ? cut[k + 1] - (cut[k + 1] > lo) : top;
        if (hi < lo)
            continue;
        while (c < 127u && bound[c + 1] <= lo)
            c++;
        if (guess_estimate(g, lo) < (int32_t)(c > 0 ? c - 1 : 0) || guess_estimate(g, hi) > (int32_t)c)
            return 0;
    }
    return 1;
}
#endif

/* The byte for x (its bit pattern u) with magnitude code c: the sign bit for nonzero codes
 * of negative x. Without branches (the signs of gradients are coin flips): bit 7 of c +
 * 127 is set for c in 1..127, and bit 7 of u >> 24 is the sign. */
static uint8_t signed_code(uint32_t u, uint32_t c)
{
    return (uint8_t)(c | ((c + 127u) & (u >> 24) & 0x80u));
}

/* x[i]'s bit pattern. */
static uint32_t bits_at(const float *x, size_t i)
{
    uint32_t u;
    memcpy(&u, x + i, sizeof u);
    return u;
}

/* codes[i] from the buckets: whole vectors on the SIMD paths, the rest here. */
static void bucket_codes(int simd, const float *x, size_t n, const uint32_t *entry,
                         uint32_t base, uint8_t *codes)
{
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2)
        i = dr_eightbit_codes_avx2(x, n, entry, base, codes);
#else
    (void)simd;
#endif
    for (; i < n; i++) {
        uint32_t u = bits_at(x, i), m = u & 0x7fffffffu;
        uint32_t b = m >> 16 > base ? (m >> 16) - base : 0u;
        codes[i] = signed_code(u, (entry[b] + (m & 0xffffu)) >> 16);
    }
}

int dr_eightbit_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                       size_t *written)
{
    dr_frame f;
    float table[128], steps[7], scale;
    uint32_t bound[128], bucket[DR_EIGHTBIT_BUCKETS], base = 0;
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
    /* The bounds cost about 4000 calls of nearest(): worth it from a few thousand
     * elements, after which each element takes a few integer operations. */
    if (scale > 0.0f && n >= 4096u) {
        code_bounds(table, steps, scale, bound);
#if DR_HAVE_X86_SIMD
        dr_eightbit_guess guess;
        if (simd >= DR_SIMD_AVX512 && dr_cpu_has_vbmi() && build_guess(bound, scale, top, &guess)) {
            i = dr_eightbit_guess_avx512(x, n, &guess, codes);
            for (; i < n; i++)
                codes[i] = signed_code(bits_at(x, i), nearest(table, steps, fabsf(x[i]) / scale));
            return dr_frame_seal(&f, buf, cap, written);
        }
#endif
        if (code_buckets(bound, top, bucket, &base) > 0) {
            bucket_codes(simd, x, n, bucket, base, codes);
            return dr_frame_seal(&f, buf, cap, written);
        }
    }
    for (i = 0; i < n; i++)
        codes[i] = signed_code(bits_at(x, i), scale > 0.0f ? nearest(table, steps, fabsf(x[i]) / scale) : 0u);
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_eightbit_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    float table[128], value[256], scale;
    const uint8_t *codes;
    size_t i;
    unsigned c;
#if DR_HAVE_X86_SIMD
    int simd;
#endif
    /* Byte codes have no padding bits to check. */
    int st = dr_qf_open_scaled(buf, len, DR_KIND_EIGHTBIT, n, n, 8, out, &scale, &codes);
    if (st != DR_OK)
        return st;
    if (dr_qf_has_byte(codes, n, 0x80u)) /* a signed zero the encoder never writes */
        return DR_E_CORRUPT;
    if (scale == 0.0f && !dr_qf_all_zero(codes, n)) /* a scale of 0: x was all zeros */
        return DR_E_CORRUPT;
    build_table(table);
    /* The magnitudes times the scale once, not per element: the same products; and a
     * table of both signs for the paths that read one entry per element (faster on this
     * core than AVX2's gathers). */
    for (c = 0; c < 128; c++) {
        table[c] *= scale;
        value[c] = table[c];
        value[c | 0x80u] = -table[c];
    }
    i = 0;
#if DR_HAVE_X86_SIMD
    simd = dr_simd_active();
    if (simd >= DR_SIMD_AVX512 && dr_cpu_has_vbmi())
        i = dr_lookup_planes_avx512(codes, n, value, 256u, out);
    else if (simd >= DR_SIMD_AVX512)
        i = dr_signed_lookup128_avx512(codes, n, table, out);
    else if (simd >= DR_SIMD_AVX2 && dr_stream_output(out, n))
        i = dr_lookup256_stream_avx2(codes, n, value, out);
#endif
    for (; i < n; i++)
        out[i] = value[codes[i]];
    return DR_OK;
}
