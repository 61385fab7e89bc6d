/* Elias-Fano coding of a sorted index set: each index splits into l low bits, stored
 * verbatim, and a high part, stored as a unary-coded increment in a bit vector of about
 * 2r bits. With l = floor(log2(d / r)) the size is within 2 bits per index of the
 * information-theoretic floor, and decoding is a bit-unpack plus a scan of set bits. */
#include "bitio.h"
#include "simd_config.h"
#include "unary_simd.h"

/* For each byte value, the positions (0..7) of its set bits, ascending, one per byte
 * from the low byte up: the upper vector (and rice's unary one) is decoded a byte at a
 * time through it. */
const uint64_t dr_byte_ones[256] = {
    0x0u, 0x0u, 0x1u, 0x100u,
    0x2u, 0x200u, 0x201u, 0x20100u,
    0x3u, 0x300u, 0x301u, 0x30100u,
    0x302u, 0x30200u, 0x30201u, 0x3020100u,
    0x4u, 0x400u, 0x401u, 0x40100u,
    0x402u, 0x40200u, 0x40201u, 0x4020100u,
    0x403u, 0x40300u, 0x40301u, 0x4030100u,
    0x40302u, 0x4030200u, 0x4030201u, 0x403020100ull,
    0x5u, 0x500u, 0x501u, 0x50100u,
    0x502u, 0x50200u, 0x50201u, 0x5020100u,
    0x503u, 0x50300u, 0x50301u, 0x5030100u,
    0x50302u, 0x5030200u, 0x5030201u, 0x503020100ull,
    0x504u, 0x50400u, 0x50401u, 0x5040100u,
    0x50402u, 0x5040200u, 0x5040201u, 0x504020100ull,
    0x50403u, 0x5040300u, 0x5040301u, 0x504030100ull,
    0x5040302u, 0x504030200ull, 0x504030201ull, 0x50403020100ull,
    0x6u, 0x600u, 0x601u, 0x60100u,
    0x602u, 0x60200u, 0x60201u, 0x6020100u,
    0x603u, 0x60300u, 0x60301u, 0x6030100u,
    0x60302u, 0x6030200u, 0x6030201u, 0x603020100ull,
    0x604u, 0x60400u, 0x60401u, 0x6040100u,
    0x60402u, 0x6040200u, 0x6040201u, 0x604020100ull,
    0x60403u, 0x6040300u, 0x6040301u, 0x604030100ull,
    0x6040302u, 0x604030200ull, 0x604030201ull, 0x60403020100ull,
    0x605u, 0x60500u, 0x60501u, 0x6050100u,
    0x60502u, 0x6050200u, 0x6050201u, 0x605020100ull,
    0x60503u, 0x6050300u, 0x6050301u, 0x605030100ull,
    0x6050302u, 0x605030200ull, 0x605030201ull, 0x60503020100ull,
    0x60504u, 0x6050400u, 0x6050401u, 0x605040100ull,
    0x6050402u, 0x605040200ull, 0x605040201ull, 0x60504020100ull,
    0x6050403u, 0x605040300ull, 0x605040301ull, 0x60504030100ull,
    0x605040302ull, 0x60504030200ull, 0x60504030201ull, 0x6050403020100ull,
    0x7u, 0x700u, 0x701u, 0x70100u,
    0x702u, 0x70200u, 0x70201u, 0x7020100u,
    0x703u, 0x70300u, 0x70301u, 0x7030100u,
    0x70302u, 0x7030200u, 0x7030201u, 0x703020100ull,
    0x704u, 0x70400u, 0x70401u, 0x7040100u,
    0x70402u, 0x7040200u, 0x7040201u, 0x704020100ull,
    0x70403u, 0x7040300u, 0x7040301u, 0x704030100ull,
    0x7040302u, 0x704030200ull, 0x704030201ull, 0x70403020100ull,
    0x705u, 0x70500u, 0x70501u, 0x7050100u,
    0x70502u, 0x7050200u, 0x7050201u, 0x705020100ull,
    0x70503u, 0x7050300u, 0x7050301u, 0x705030100ull,
    0x7050302u, 0x705030200ull, 0x705030201ull, 0x70503020100ull,
    0x70504u, 0x7050400u, 0x7050401u, 0x705040100ull,
    0x7050402u, 0x705040200ull, 0x705040201ull, 0x70504020100ull,
    0x7050403u, 0x705040300ull, 0x705040301ull, 0x70504030100ull,
    0x705040302ull, 0x70504030200ull, 0x70504030201ull, 0x7050403020100ull,
    0x706u, 0x70600u, 0x70601u, 0x7060100u,
    0x70602u, 0x7060200u, 0x7060201u, 0x706020100ull,
    0x70603u, 0x7060300u, 0x7060301u, 0x706030100ull,
    0x7060302u, 0x706030200ull, 0x706030201ull, 0x70603020100ull,
    0x70604u, 0x7060400u, 0x7060401u, 0x706040100ull,
    0x7060402u, 0x706040200ull, 0x706040201ull, 0x70604020100ull,
    0x7060403u, 0x706040300ull, 0x706040301ull, 0x70604030100ull,
    0x706040302ull, 0x70604030200ull, 0x70604030201ull, 0x7060403020100ull,
    0x70605u, 0x7060500u, 0x7060501u, 0x706050100ull,
    0x7060502u, 0x706050200ull, 0x706050201ull, 0x70605020100ull,
    0x7060503u, 0x706050300ull, 0x706050301ull, 0x70605030100ull,
    0x706050302ull, 0x70605030200ull, 0x70605030201ull, 0x7060503020100ull,
    0x7060504u, 0x706050400ull, 0x706050401ull, 0x70605040100ull,
    0x706050402ull, 0x70605040200ull, 0x70605040201ull, 0x7060504020100ull,
    0x706050403ull, 0x70605040300ull, 0x70605040301ull, 0x7060504030100ull,
    0x70605040302ull, 0x7060504030200ull, 0x7060504030201ull, 0x706050403020100ull,
};

/* The l that minimises r*l + (d >> l): the largest l with r << l <= d. */
static unsigned ef_low_bits(size_t d, size_t r)
{
    unsigned l = 0;
    if (r == 0)
        return 0;
    while (l < 32u && ((uint64_t)r << (l + 1u)) <= (uint64_t)d)
        l++;
    return l;
}

static uint64_t ef_size(uint64_t r, unsigned l, uint64_t high_last)
{
    uint64_t upper_bits = r == 0 ? 0 : high_last + r;
    return 1u + (uint64_t)dr_bitpack_size((size_t)r, l) + (upper_bits + 7u) / 8u;
}

size_t dr_index_ef_bound(size_t d, size_t r)
{
    unsigned l = ef_low_bits(d, r);
    if (r > d)
        return 0;
    return dr_sat_size(ef_size(r, l, r == 0 ? 0 : ((uint64_t)d - 1u) >> l));
}

/* The bound grows with r while l stays; l only falls as r grows, and the run of each
 * larger l ends at d >> l (the largest r' with r' << l <= d). */
size_t dr_index_ef_bound_upto(size_t d, size_t r)
{
    size_t best, end;
    unsigned l;
    if (r > d) /* a section holds at most d indices */
        r = d;
    best = dr_index_ef_bound(d, r);
    if (r == 0)
        return best;
    for (l = ef_low_bits(d, r) + 1u; l <= 32u && (end = (size_t)((uint64_t)d >> l)) > 0; l++) {
        size_t run_end = dr_index_ef_bound(d, end);
        if (run_end > best)
            best = run_end;
    }
    return best;
}

int dr_index_ef_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                       size_t *written)
{
    dr_bitwriter w;
    dr_onewriter ones;
    size_t j = 0, size, low_bytes, upper_len;
    unsigned l;
    uint32_t low_mask;
    uint8_t *upper;
    int simd = dr_simd_active(), upper_done = 0;
    /* AVX-512's sweep of the upper vector checks the set as it goes (a step's indices
     * before its ones), where the other paths check it first: one read of the set fewer.
     * A set that does not ascend is then refused with part of the section written; a
     * short cap is refused, after a check of the set (DR_E_ARG first), before anything is
     * written. */
    int checks_as_it_goes = DR_HAVE_X86_SIMD && simd >= DR_SIMD_AVX512 && r > 0;
    if (dr_index_check_args(idx, r, d, out, written) != DR_OK ||
        (r > 0 && (uint64_t)idx[r - 1] >= (uint64_t)d) || (!checks_as_it_goes && dr_index_descending(idx, r)))
        return DR_E_ARG;
    l = ef_low_bits(d, r);
    size = (size_t)ef_size(r, l, r == 0 ? 0 : (uint64_t)idx[r - 1] >> l);
    if (cap < size)
        return checks_as_it_goes && dr_index_descending(idx, r) ? DR_E_ARG : DR_E_DST_TOO_SMALL;
    out[0] = (uint8_t)l;
    low_mask = l == 32u ? UINT32_MAX : (1u << l) - 1u;
    low_bytes = dr_bitpack_size(r, l);
    /* The upper vector: the one of index j at bit high_j + j, set in the zeroed vector
     * (AVX-512: 16 ones per step, the set checked as they come, then the low fields in a
     * sweep of their own; AVX2: 8, in one sweep with the low fields). Zeroed before the
     * low fields are written, so that no low field's store may reach it: the group
     * stores stay in low_bytes. */
    upper = out + 1 + low_bytes;
    upper_len = size - 1u - low_bytes;
    memset(upper, 0, upper_len);
    dr_bw_init(&w, out + 1);
#if DR_HAVE_X86_SIMD
    if (checks_as_it_goes) {
        if (!dr_ef_upper_avx512(idx, r, l, upper, upper_len))
            return DR_E_ARG;
        if (l > 0)
            j = dr_ef_lows_avx512(idx, r, l, &w, low_bytes);
        upper_done = 1;
    } else if (simd >= DR_SIMD_AVX2) {
        j = dr_ef_sweep_avx2(idx, r, l, &w, low_bytes, upper, upper_len);
        upper_done = 1;
    }
#else
    (void)simd;
#endif
    if (l > 0) {
        /* Groups of 56 / l fields, one store each, while 8 bytes of the section remain;
         * then a field at a time. */
        unsigned group = 56u / l, k;
        for (; j + group <= r && w.pos + 8u <= low_bytes; j += group) {
            uint64_t fields = 0;
            for (k = 0; k < group; k++)
                fields |= (uint64_t)(idx[j + k] & low_mask) << (k * l);
            dr_bw_put56(&w, fields, group * l);
        }
        for (; j < r; j++)
            dr_bw_put(&w, idx[j] & low_mask, l);
        dr_bw_finish(&w);
    }
    if (!upper_done) {
        dr_ow_init(&ones, upper, upper_len);
        for (j = 0; j < r; j++)
            dr_ow_set(&ones, ((uint64_t)idx[j] >> l) + j);
        dr_ow_flush(&ones);
    }
    *written = size;
    return DR_OK;
}

/* The portable upper sweep: for the j-th one at bit p, idx_out[j] |= (p - j) << l, a
 * 64-bit word at a time (its popcount bounds the ones against r once per word, its
 * highest bit is the last one so far). Returns the ones, SIZE_MAX past r. */
DR_ALWAYS_INLINE size_t ef_highs(const uint8_t *upper, size_t upper_len, size_t r, unsigned l,
                                 uint32_t *idx_out, uint64_t *last_one)
{
    size_t j = 0, off;
    for (off = 0; off < upper_len; off += 8u) {
        uint64_t base = (uint64_t)off * 8u;
        uint8_t pos[64 + 8];
        size_t ones = dr_unary_word(upper, upper_len, off, r - j, pos, last_one), k;
        if (ones == SIZE_MAX)
            return SIZE_MAX;
        /* high = base + pos - j for each one: the loop vectorises. Truncating
         * high << l to 32 bits is exact once the caller's range check holds. */
        for (k = 0; k < ones; k++)
            idx_out[j + k] |= (uint32_t)((base + pos[k] - (j + k)) << l);
        j += ones;
    }
    return j;
}

/* The checks after a decode's sweeps: exactly r ones, the vector ending in the byte of
 * the last one, the indices ascending (`descending` zero), and the last index below d.
 * The range check needs only the last index, since high_j never decreases: high_last <=
 * (d-1) >> l rules out any overflow of high << l, and then x_last < d bounds them all. */
static int ef_ends_well(size_t ones, size_t r, size_t d, unsigned l, size_t upper_len, uint64_t last_one,
                        const uint32_t *idx_out, uint32_t descending)
{
    if (ones != r || upper_len != (size_t)(last_one / 8u) + 1u || last_one - (r - 1u) > ((uint64_t)d - 1u) >> l ||
        (uint64_t)idx_out[r - 1] >= (uint64_t)d || descending)
        return DR_E_CORRUPT;
    return DR_OK;
}

DR_ALWAYS_INLINE int ef_decode(int simd, const uint8_t *in, size_t len, size_t d, size_t r,
                               uint32_t *idx_out)
{
    const uint8_t *upper;
    size_t upper_len, j, t;
    unsigned l;
    uint64_t last_one = 0;
    uint32_t bad = 0;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < 1u || in[0] > 32u)
        return DR_E_CORRUPT;
    l = in[0];
    if (!dr_low_block_fits(in, len, r, l, &upper, &upper_len))
        return DR_E_CORRUPT;
    if (r == 0)
        return upper_len == 0 ? DR_OK : DR_E_CORRUPT;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2) {
        /* One sweep: each block of the upper vector's ones with its low fields (the
         * order checked block by block), every index written once (unary_avx2.c,
         * unary_avx512.c). */
        j = dr_ef_indices_simd(simd, in + 1, (size_t)(upper - in) - 1u, upper, upper_len, r, l, idx_out, &last_one,
                               &bad);
        return ef_ends_well(j, r, d, l, upper_len, last_one, idx_out, bad);
    }
#endif
    /* Two sweeps, each simple enough to run near its own speed: the low fields with the
     * bit unpacker, then the set bits of the upper vector, the one for index j at bit
     * high_j + j. */
    st = dr_bitunpack(in + 1, (size_t)(upper - in) - 1u, r, l, idx_out);
    if (st != DR_OK)
        return st;
    j = ef_highs(upper, upper_len, r, l, idx_out, &last_one);
    (void)simd;
    /* Strictly ascending (equal highs with non-increasing lows are possible on the wire). */
    for (t = 1; t < r; t++)
        bad |= (uint32_t)(idx_out[t] <= idx_out[t - 1]);
    return ef_ends_well(j, r, d, l, upper_len, last_one, idx_out, bad);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static int ef_decode_avx2(int simd, const uint8_t *in, size_t len, size_t d, size_t r,
                                         uint32_t *idx_out)
{
    return ef_decode(simd, in, len, d, r, idx_out);
}
#endif

int dr_index_ef_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    int simd = dr_simd_active();
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX2)
        return ef_decode_avx2(simd, in, len, d, r, idx_out);
#endif
    return ef_decode(simd, in, len, d, r, idx_out);
}
