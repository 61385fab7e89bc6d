/* Frame plumbing shared by the quantisers (see qframe.h). */
#include "qframe.h"
#include "lookup_simd.h"

#include <math.h>
#include <string.h>

int dr_qf_prepare(dr_frame *f, uint8_t kind, uint8_t dtype, const float *x, size_t n,
                  uint32_t nsections, const uint64_t *section_len, const uint8_t *buf,
                  size_t cap, const size_t *written)
{
    size_t total;
    uint32_t i;
    int st;
    memset(f, 0, sizeof *f);
    if (buf == NULL || written == NULL || (n > 0 && x == NULL) || dtype > DR_DTYPE_FLOAT64)
        return DR_E_ARG;
    for (i = 0; i < nsections; i++)
        f->section_len[i] = section_len[i];
    f->kind = kind;
    f->index_codec = DR_INDEX_RAW;
    f->value_codec = DR_VALUE_RAW;
    f->dtype = dtype;
    f->nsections = nsections;
    f->numel = n;
    f->count = n;
    st = dr_frame_layout(f, &total);
    if (st != DR_OK)
        return st;
    return cap < total ? DR_E_DST_TOO_SMALL : DR_OK;
}

int dr_qf_check_dense(const dr_frame *f, uint8_t kind, size_t n, uint32_t nsections,
                      const float *out)
{
    if (f->kind != kind || f->index_codec != DR_INDEX_RAW || f->value_codec != DR_VALUE_RAW)
        return DR_E_FRAME_CODEC;
    if (f->nsections != nsections || f->numel != (uint64_t)n || f->count != (uint64_t)n)
        return DR_E_FRAME_FIELD;
    if (n > 0 && out == NULL)
        return DR_E_ARG;
    return DR_OK;
}

int dr_qf_open(const uint8_t *buf, size_t len, uint8_t kind, size_t n, uint32_t nsections,
               const float *out, dr_frame *f)
{
    int st = dr_frame_parse(buf, len, f);
    return st != DR_OK ? st : dr_qf_check_dense(f, kind, n, nsections, out);
}

int dr_qf_open_plain(const uint8_t *buf, size_t len, uint8_t kind, size_t n,
                     uint32_t nsections, const uint64_t *section_len, const float *out,
                     dr_frame *f)
{
    uint32_t i;
    int st = dr_qf_open(buf, len, kind, n, nsections, out, f);
    if (st != DR_OK)
        return st;
    if (f->params[0] | f->params[1] | f->params[2] | f->params[3])
        return DR_E_FRAME_FIELD;
    for (i = 0; i < nsections; i++)
        if (f->section_len[i] != section_len[i])
            return DR_E_FRAME_FIELD;
    return DR_OK;
}

int dr_qf_open_scaled(const uint8_t *buf, size_t len, uint8_t kind, size_t n,
                      uint64_t code_bytes, unsigned bits_per, const float *out, float *scale,
                      const uint8_t **codes)
{
    dr_frame f;
    const uint64_t sections[2] = {4, code_bytes};
    int st = dr_qf_open_plain(buf, len, kind, n, 2, sections, out, &f);
    if (st != DR_OK)
        return st;
    *scale = dr_qf_get_f32(buf + f.section_off[0]);
    *codes = buf + f.section_off[1];
    if (!(*scale >= 0.0f && isfinite(*scale)) || !dr_qf_padding_clear(*codes, n, bits_per))
        return DR_E_CORRUPT;
    return DR_OK;
}

size_t dr_qf_crumb_bytes(size_t n)
{
    return n / 4u + (n % 4u != 0);
}

/* Words of crumbs counted into one set of byte counters: at most 4 per byte a word, so
 * 63 words keep each byte below 256. */
#define CRUMB_WORDS_PER_FOLD 63u

int dr_qf_crumbs_check(const uint8_t *codes, size_t n, size_t *nonzero)
{
    const uint64_t low = 0x5555555555555555u, pairs = 0x3333333333333333u, nibbles = 0x0f0f0f0f0f0f0f0fu;
    const uint64_t bytes16 = 0x00ff00ff00ff00ffu;
    size_t nbytes = dr_qf_crumb_bytes(n), i = 0, count = 0;
    uint64_t threes = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2) {
        unsigned any = 0;
        i = dr_crumb_census_avx2(codes, nbytes, &any, &count);
        threes = any; /* bit 0: a code 3 */
    }
#endif
    /* Eight bytes at a time without a branch: bit 2k of w & (w >> 1) is set where crumb
     * k is 3, bit 2k of w | (w >> 1) where it is not 0; the latter's bits summed per
     * byte by SWAR steps, the bytes then folded into the count. */
    while (nbytes - i >= 8) {
        uint64_t per_byte = 0, folded;
        size_t words = (nbytes - i) / 8, w;
        if (words > CRUMB_WORDS_PER_FOLD)
            words = CRUMB_WORDS_PER_FOLD;
        for (w = 0; w < words; w++, i += 8) {
            uint64_t v, sent;
            memcpy(&v, codes + i, 8);
            threes |= v & (v >> 1);
            sent = (v | (v >> 1)) & low;
            sent = (sent & pairs) + ((sent >> 2) & pairs);
            per_byte += (sent + (sent >> 4)) & nibbles;
        }
        folded = (per_byte & bytes16) + ((per_byte >> 8) & bytes16);
        count += (size_t)((folded * 0x0001000100010001u) >> 48);
    }
    for (; i < nbytes; i++) {
        unsigned b = codes[i], sent = (b | (b >> 1)) & 0x55u;
        threes |= b & (b >> 1);
        count += (sent & 1u) + (sent >> 2 & 1u) + (sent >> 4 & 1u) + (sent >> 6 & 1u);
    }
    if (threes & low)
        return DR_E_CORRUPT;
    if (nonzero != NULL)
        *nonzero = count;
    return DR_OK;
}

void dr_qf_crumb_values(const uint8_t *codes, size_t n, const float value[3], float *out, int add)
{
    size_t i = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_crumb_lookup_avx2(codes, n, value, out, add);
#endif
    for (; i < n; i++) {
        unsigned code = (codes[i / 4] >> (2 * (i % 4))) & 3u;
        if (!add)
            out[i] = value[code];
        else if (code != 0)
            out[i] += value[code];
    }
}

int dr_qf_padding_clear(const uint8_t *bytes, size_t n, unsigned bits_per)
{
    unsigned per_byte = 8u / bits_per, used = (unsigned)(n % per_byte);
    if (used == 0)
        return 1;
    return (bytes[n / per_byte] >> (used * bits_per)) == 0;
}

int dr_qf_all_zero(const uint8_t *bytes, size_t n)
{
    uint8_t any = 0;
    size_t i;
    for (i = 0; i < n; i++) /* no early exit: the loop vectorises */
        any |= bytes[i];
    return any == 0;
}

int dr_qf_has_byte(const uint8_t *bytes, size_t n, uint8_t value)
{
    /* memchr is vectorised by the C library. */
    return n > 0 && memchr(bytes, value, n) != NULL;
}
