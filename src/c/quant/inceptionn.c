/* INCEPTIONN-style error-bounded re-encoding: a 2-bit tag per element says whether the
 * value was dropped (below the bound), re-encoded as an 8-bit or 16-bit sign-magnitude
 * fixed-point number, or kept as float32. Fixed point with round-to-nearest bounds the
 * absolute error by half a step, and the steps are chosen so that half a step is at
 * most eps = 2^-b (rules in quant.h). The encoder classifies twice, once to size the
 * sections and once to fill them, so it needs no scratch. */
#include "inceptionn_simd.h"
#include "qframe.h"

#include <math.h>

enum { TAG_DROP = 0, TAG_8 = 1, TAG_16 = 2, TAG_32 = 3 };

typedef dr_inceptionn_bands bands;

/* The bit pattern of min(f, 1). */
static uint32_t capped_bits(float f)
{
    uint32_t u;
    f = f < 1.0f ? f : 1.0f;
    memcpy(&u, &f, sizeof u);
    return u;
}

static bands bands_for(uint32_t b)
{
    bands s;
    s.k8 = (int)b - 1;
    s.k16 = (int)b - 1 > 15 ? (int)b - 1 : 15;
    s.twice8 = ldexpf(1.0f, s.k8 + 1);
    s.twice16 = ldexpf(1.0f, s.k16 + 1);
    /* From fixed(): q8 > 0 <=> a*2^b >= 1, q8 <= 127 <=> a*2^b < 255, q16 <= 32767 <=>
     * a*2^(k16+1) < 65535 (each bound exact in float), all capped at 1 where float32
     * takes over; t16 is at least t8 (for b < 8 the 8-bit band reaches 1). */
    s.t0 = capped_bits(ldexpf(1.0f, -(int)b));
    s.t8 = capped_bits(ldexpf(255.0f, -(int)b));
    s.t16 = capped_bits(ldexpf(65535.0f, -(s.k16 + 1)));
    s.t16 = s.t16 > s.t8 ? s.t16 : s.t8;
    return s;
}

/* round(a*2^k) half up, from twice = 2^(k+1): a < 1, so y = a*twice is exact in float
 * and below 2^24, and floor(a*2^k + 1/2) = (floor(y) + 1) / 2 in integers. Exact, in
 * single precision and integers, so it vectorises 16 lanes wide. */
static uint32_t fixed(float a, float twice)
{
    return ((uint32_t)(a * twice) + 1u) >> 1;
}

/* The tag of v and, for tags 1 and 2, its magnitude in fixed point. Selects, not
 * branches: the band of a gradient entry is random, so a branch would mispredict often. */
static unsigned classify(float v, const bands *s, uint32_t *q)
{
    float a = fabsf(v);
    /* a < 1 whenever q8 or q16 is used; clamp a so the conversions stay in range. */
    float c = a < 1.0f ? a : 0.0f;
    uint32_t q8 = fixed(c, s->twice8), q16 = fixed(c, s->twice16);
    /* Tags by arithmetic on 0/1 flags: compilers turn chains of ?: back into branches. */
    unsigned big = a >= 1.0f, drop = q8 == 0, is8 = (q8 <= 127u) & !drop;
    unsigned t16 = TAG_16 + (q16 > 32767u);
    unsigned small = (1u - drop) * (is8 * TAG_8 + (1u - is8) * t16);
    *q = q16 ^ ((q8 ^ q16) & (0u - is8));
    return big * TAG_32 + (1u - big) * small;
}

/* yes ? a : b for pointers, by masks (no branch on a random condition). */
static uint8_t *pick(unsigned yes, uint8_t *a, uint8_t *b)
{
    uintptr_t m = (uintptr_t)0 - (uintptr_t)yes;
    return (uint8_t *)(((uintptr_t)a & m) | ((uintptr_t)b & ~m));
}

size_t dr_inceptionn_bound(size_t n)
{
    return dr_frame_header_size(4) + dr_qf_crumb_bytes(n) + 4u * n + DR_FRAME_TRAILER;
}

/* What dr_inceptionn_size and _encode share: check the arguments, then classify x (Inf
 * or NaN: DR_E_NUMERIC) into the four section lengths of its frame. */
static int plan(const float *x, size_t n, uint32_t bound_bits, bands *s, uint64_t *len)
{
    size_t count[4] = {0, 0, 0, 0}, i;
    if (bound_bits < 1 || bound_bits > DR_INCEPTIONN_MAX_BITS || (n > 0 && x == NULL))
        return DR_E_ARG;
    *s = bands_for(bound_bits);
    i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512)
        i = dr_inceptionn_count_avx512(x, n, s, count);
#endif
    for (; i < n; i++) {
        uint32_t q;
        if (!isfinite(x[i]))
            return DR_E_NUMERIC;
        count[classify(x[i], s, &q)]++;
    }
    len[0] = dr_qf_crumb_bytes(n);
    len[1] = count[TAG_8];
    len[2] = 2u * (uint64_t)count[TAG_16];
    len[3] = 4u * (uint64_t)count[TAG_32];
    return DR_OK;
}

int dr_inceptionn_size(const float *x, size_t n, uint32_t bound_bits, size_t *size)
{
    dr_frame f;
    bands s;
    int st;
    if (size == NULL)
        return DR_E_ARG;
    memset(&f, 0, sizeof f);
    f.nsections = 4;
    st = plan(x, n, bound_bits, &s, f.section_len);
    if (st != DR_OK)
        return st;
    return dr_frame_layout(&f, size);
}

int dr_inceptionn_encode(const float *x, size_t n, uint32_t bound_bits, uint8_t dtype,
                         uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    bands s;
    uint64_t len[4];
    size_t i, n8 = 0, n16 = 0, n32 = 0;
    uint8_t *tags, *p8, *p16, *p32;
    int st = plan(x, n, bound_bits, &s, len);
    if (st != DR_OK)
        return st;
    st = dr_qf_prepare(&f, DR_KIND_INCEPTIONN, dtype, x, n, 4, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    f.params[0] = bound_bits;
    tags = buf + f.section_off[0];
    p8 = buf + f.section_off[1];
    p16 = buf + f.section_off[2];
    p32 = buf + f.section_off[3];
    memset(tags, 0, (size_t)f.section_len[0]);
    i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512) {
        size_t cursor[3] = {0, 0, 0};
        const size_t total[3] = {(size_t)len[1], (size_t)len[2] / 2u, (size_t)len[3] / 4u};
        i = dr_inceptionn_fill_avx512(x, n, &s, tags, p8, p16, p32, total, cursor);
        n8 = cursor[0];
        n16 = cursor[1];
        n32 = cursor[2];
    }
#endif
    for (; i < n; i++) {
        /* Every element stores to all three sections, the sections it does not go to
         * through a scratch target, so that no branch depends on its tag. */
        uint8_t scratch[4];
        uint32_t q = 0, sign = x[i] < 0.0f;
        unsigned tag = classify(x[i], &s, &q);
        uint16_t v16 = (uint16_t)(sign << 15 | q);
        uint8_t *d8 = pick(tag == TAG_8, p8 + n8, scratch);
        uint8_t *d16 = pick(tag == TAG_16, p16 + 2 * n16, scratch);
        uint8_t *d32 = pick(tag == TAG_32, p32 + 4 * n32, scratch);
        tags[i / 4] |= (uint8_t)(tag << (2 * (i % 4)));
        *d8 = (uint8_t)(sign << 7 | (q & 0x7fu));
        memcpy(d16, &v16, 2);
        memcpy(d32, &x[i], 4);
        n8 += tag == TAG_8;
        n16 += tag == TAG_16;
        n32 += tag == TAG_32;
    }
    return dr_frame_seal(&f, buf, cap, written);
}

/* The decoder's checks: the tag counts 1..3 (padding tags are 0, so whole bytes count) match
 * the section lengths, no 8- or 16-bit entry has magnitude 0, no float32 entry is Inf or
 * NaN. Accumulated without branches, a word of tags at a time, so that it vectorises;
 * written once, compiled plain and for AVX2 (POPCNT). */
DR_ALWAYS_INLINE int check_sections(const uint8_t *tags, size_t nbytes, const dr_frame *f,
                                    const uint8_t *p8, const uint8_t *p16, const uint8_t *p32,
                                    size_t *count)
{
    const uint64_t low = 0x5555555555555555ull;
    size_t i;
    unsigned bad = 0;
    for (i = 0; i + 8 <= nbytes; i += 8) {
        uint64_t w, lo, hi;
        memcpy(&w, tags + i, 8);
        lo = w & low;
        hi = (w >> 1) & low;
        count[TAG_8] += (size_t)__builtin_popcountll(lo & ~hi);
        count[TAG_16] += (size_t)__builtin_popcountll(hi & ~lo);
        count[TAG_32] += (size_t)__builtin_popcountll(lo & hi);
    }
    for (; i < nbytes; i++) {
        unsigned k;
        for (k = 0; k < 4u; k++)
            count[(tags[i] >> (2u * k)) & 3u]++;
    }
    if (count[TAG_8] != f->section_len[1] || 2u * (uint64_t)count[TAG_16] != f->section_len[2] ||
        4u * (uint64_t)count[TAG_32] != f->section_len[3])
        return DR_E_FRAME_FIELD;
    for (i = 0; i < count[TAG_8]; i++)
        bad |= (p8[i] & 0x7fu) == 0;
    for (i = 0; i < count[TAG_16]; i++) {
        uint16_t v;
        memcpy(&v, p16 + 2 * i, 2);
        bad |= (v & 0x7fffu) == 0;
    }
    for (i = 0; i < count[TAG_32]; i++) {
        uint32_t u;
        memcpy(&u, p32 + 4 * i, 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u; /* Inf or NaN */
    }
    return bad ? DR_E_CORRUPT : DR_OK;
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static int check_sections_avx2(const uint8_t *tags, size_t nbytes, const dr_frame *f,
                                              const uint8_t *p8, const uint8_t *p16,
                                              const uint8_t *p32, size_t *count)
{
    return check_sections(tags, nbytes, f, p8, p16, p32, count);
}
#endif

int dr_inceptionn_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    bands s;
    size_t count[4] = {0, 0, 0, 0}, i, n8 = 0, n16 = 0, n32 = 0;
    const uint8_t *tags, *p8, *p16, *p32;
    float step8, step16;
    int st = dr_qf_open(buf, len, DR_KIND_INCEPTIONN, n, 4, out, &f);
    if (st != DR_OK)
        return st;
    if (f.params[0] < 1 || f.params[0] > DR_INCEPTIONN_MAX_BITS || f.params[1] | f.params[2] | f.params[3] ||
        f.section_len[0] != dr_qf_crumb_bytes(n) || f.section_len[2] % 2 || f.section_len[3] % 4)
        return DR_E_FRAME_FIELD;
    s = bands_for(f.params[0]);
    tags = buf + f.section_off[0];
    p8 = buf + f.section_off[1];
    p16 = buf + f.section_off[2];
    p32 = buf + f.section_off[3];
    if (!dr_qf_padding_clear(tags, n, 2))
        return DR_E_CORRUPT;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        st = check_sections_avx2(tags, dr_qf_crumb_bytes(n), &f, p8, p16, p32, count);
    else
#endif
        st = check_sections(tags, dr_qf_crumb_bytes(n), &f, p8, p16, p32, count);
    if (st != DR_OK)
        return st;
    step8 = ldexpf(1.0f, -s.k8);
    step16 = ldexpf(1.0f, -s.k16);
    /* Selects, not a switch: every element reads its candidate from each section (a
     * read at a section's end lands in the next section or the trailer, inside buf)
     * and keeps the one its tag names. */
    i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512) {
        size_t cursor[3] = {0, 0, 0};
        i = dr_inceptionn_values_avx512(tags, n, p8, p16, p32, step8, step16, count + 1, cursor, out);
        n8 = cursor[0];
        n16 = cursor[1];
        n32 = cursor[2];
    }
#endif
    for (; i < n; i++) {
        unsigned tag = (tags[i / 4] >> (2 * (i % 4))) & 3u;
        uint16_t v16;
        uint32_t b8, b16, b32;
        float v8 = (float)(p8[n8] & 0x7fu) * step8, v16f;
        memcpy(&v16, p16 + 2 * n16, 2);
        v16f = (float)(v16 & 0x7fffu) * step16;
        /* The magnitudes are positive: the sign is OR-ed into the float bits. */
        memcpy(&b8, &v8, 4);
        memcpy(&b16, &v16f, 4);
        memcpy(&b32, p32 + 4 * n32, 4);
        b8 |= (uint32_t)(p8[n8] & 0x80u) << 24;
        b16 |= (uint32_t)(v16 & 0x8000u) << 16;
        /* Masks rather than ?: on floats, which compilers turn back into branches. */
        b8 = (b8 & (0u - (uint32_t)(tag == TAG_8))) | (b16 & (0u - (uint32_t)(tag == TAG_16))) |
             (b32 & (0u - (uint32_t)(tag == TAG_32)));
        memcpy(&out[i], &b8, 4);
        n8 += tag == TAG_8;
        n16 += tag == TAG_16;
        n32 += tag == TAG_32;
    }
    return DR_OK;
}
