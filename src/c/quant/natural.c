/* Natural compression: stochastic rounding of each value to a signed power of two,
 * done on the float bits so the rounding probability is exact (mantissa against 23
 * random bits) and the code is just the biased exponent shifted down. */
#include "natural_simd.h"
#include "rng_inline.h"
#include "qframe.h"
#include "size_math.h"

#include <math.h>
/* Float exponent field of code 127. */
#define NAT_EXP_MAX (127 + 127 - DR_NATURAL_CODE_OFFSET)

size_t dr_natural_size(size_t n)
{
    return dr_size_add(dr_frame_header_size(1) + DR_FRAME_TRAILER, n);
}

static uint8_t natural_code(float v, uint32_t r)
{
    uint32_t u, e, mant;
    unsigned code;
    memcpy(&u, &v, sizeof u);
    e = (u >> 23) & 0xffu;
    mant = u & 0x7fffffu;
    if (e >= NAT_EXP_MIN) {
        /* |v| = 2^e'(1 + mant/2^23): round up with probability mant/2^23 exactly. */
        code = e - (NAT_EXP_MIN - 1) + ((r >> 9) < mant);
        if (code > 127u)
            code = 127u; /* saturate at 2^63 */
    } else {
        /* Below the smallest power: 2^-63 with probability |v|/2^-63, else 0, as a 24-bit
         * draw against |v| * 2^87 < 2^24 (exact: a power-of-two scaling), which is
         * ceil(|v| * 2^87) / 2^24: at most 2^-24 of probability too high. */
        code = (float)(r >> 8) < fabsf(v) * 0x1p87f ? 1u : 0u;
    }
    return (uint8_t)(code == 0 ? 0u : code | ((u >> 24) & 0x80u));
}

int dr_natural_encode(const float *x, size_t n, uint64_t key, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written)
{
    dr_frame f;
    uint8_t *codes;
    size_t i = 0;
    int simd = dr_simd_active();
    const uint64_t len[1] = {n};
    int st = dr_qf_prepare(&f, DR_KIND_NATURAL, dtype, x, n, 1, len, buf, cap, written);
    if (st != DR_OK)
        return st;
    codes = buf + f.section_off[0];
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_natural_codes_avx512(x, n, key, codes);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_natural_codes_avx2(x, n, key, codes);
#else
    (void)simd;
#endif
    for (; i < n; i++) {
        if (!isfinite(x[i]))
            return DR_E_NUMERIC;
        codes[i] = natural_code(x[i], dr_rng_u32_fast(key, i));
    }
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_natural_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    const uint8_t *codes;
    size_t i;
    const uint64_t sections[1] = {n};
    int st = dr_qf_open_plain(buf, len, DR_KIND_NATURAL, n, 1, sections, out, &f);
    if (st != DR_OK)
        return st;
    codes = buf + f.section_off[0];
    if (dr_qf_has_byte(codes, n, 0x80u)) /* a signed zero the encoder never writes */
        return DR_E_CORRUPT;
    i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_natural_values_avx2(codes, n, out);
#endif
    for (; i < n; i++) {
        uint32_t c = codes[i] & 0x7fu;
        uint32_t u = c == 0 ? 0u : ((uint32_t)(codes[i] & 0x80u) << 24) | ((c + (NAT_EXP_MIN - 1)) << 23);
        memcpy(&out[i], &u, sizeof u);
    }
    return DR_OK;
}
