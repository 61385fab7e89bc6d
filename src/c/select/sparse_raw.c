/* The raw sparse frame in its two layouts (select.h): uint32 indices then float32
 * values, or a bitmap of the dense tensor's entries then the values; little-endian.
 *
 * Encode and decode go over the lists and the values in chunks (16 KB): a chunk is read,
 * checked and folded into the frame's CRC while it is in L1 (and copied, by the encoder),
 * so the sections cross the memory bus once for all three, where separate sweeps for the
 * order check, the copy and the CRC read them three times (dr_frame_seal would read the
 * written frame back). A bitmap, an eighth of a byte per entry of the tensor, is built in
 * the frame and its CRC taken after. */
#include "deepreduce.h"
#include "finite_bytes.h"
#include "sparse_raw_simd.h"
#include "sparse_raw_frame.h"
#include "../core/frame_fused.h"
#include "../core/stream_simd.h"
#include "../index/bitio.h"
#include "size_math.h"

#include <math.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

#define CHUNK 4096u
/* Bitmap bytes the decoder checks and folds into the CRC at a time. */
#define BITMAP_CHUNK 4096u

int dr_sparse_raw_layout(uint64_t numel, size_t r)
{
    return (numel + 7u) / 8u < 4u * (uint64_t)r ? DR_SPARSE_BITMAP : DR_SPARSE_LISTS;
}

size_t dr_sparse_raw_size(size_t r)
{
    return dr_size_add(dr_frame_header_size(2) + DR_FRAME_TRAILER, dr_size_mul(8u, r));
}

/* The bytes of section 0 in `layout` for r entries of numel. */
static uint64_t index_section_len(int layout, uint64_t numel, size_t r)
{
    return layout == DR_SPARSE_BITMAP ? numel / 8u + (numel % 8u != 0) : dr_size_mul(4u, r);
}

size_t dr_sparse_raw_frame_size(uint64_t numel, size_t r)
{
    if ((uint64_t)r > numel)
        return 0;
    uint64_t index_len = index_section_len(dr_sparse_raw_layout(numel, r), numel, r);
    return dr_size_add(dr_size_add(dr_frame_header_size(2) + DR_FRAME_TRAILER,
                                   index_len > SIZE_MAX ? SIZE_MAX : (size_t)index_len),
                       dr_size_mul(4u, r));
}

/* 1 if idx[j] <= idx[j - 1] for some j in [from, to), 0 < from, else 0 (that stretch
 * goes on strictly ascending). Unaligned little-endian words; no early exit, so the
 * loop vectorises. */
static uint32_t descents(const uint8_t *idx, size_t from, size_t to)
{
    uint32_t bad = 0;
    size_t j;
    for (j = from; j < to; j++) {
        uint32_t before, at;
        memcpy(&before, idx + 4u * (j - 1), 4);
        memcpy(&at, idx + 4u * j, 4);
        bad |= (uint32_t)(at <= before);
    }
    return bad;
}

void dr_sparse_raw_copy(uint8_t *dst, const void *src, size_t len, int stream)
{
    if (stream)
        dr_stream_copy(dst, (const uint8_t *)src, len);
    else
        memcpy(dst, src, len);
}

/* Section 0 of the bitmap layout: the bits of idx[0..r) (strictly ascending, each below
 * numel: DR_E_ARG otherwise) set in bits[0..ceil(numel / 8)), then its CRC continued from
 * *crc. The vector kernels set the bits of a prefix of the indices; the rest go through
 * the index codecs' writer of ascending ones (bitio.h), from the word the kernels ended
 * in, each word stored as its ones come (dr_ow_set_stored). */
static int write_bitmap(const uint32_t *idx, size_t r, uint64_t numel, uint8_t *bits, uint32_t *crc)
{
    size_t len = (size_t)((numel + 7u) / 8u), j = 0;
    int64_t last = -1;
    dr_onewriter ones;
    memset(bits, 0, len);
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512)
        j = dr_bitmap_set_avx512(idx, r, len, bits);
    else if (dr_simd_active() >= DR_SIMD_AVX2)
        j = dr_bitmap_set_avx2(idx, r, len, bits);
#endif
    dr_ow_init(&ones, bits, len);
    if (j > 0) {
        last = idx[j - 1];
        ones.at = idx[j - 1] >> 6;
        ones.word = dr_peek64(bits, len, 64u * ones.at);
    }
    for (; j < r; j++) {
        if ((int64_t)idx[j] <= last || (uint64_t)idx[j] >= numel)
            return DR_E_ARG;
        last = idx[j];
        dr_ow_set_stored(&ones, idx[j]);
    }
    *crc = dr_crc32(*crc, bits, len);
    return DR_OK;
}

/* Section 0 of the lists layout: idx[0..r) copied to out, its CRC continued from *crc.
 * DR_E_ARG where the indices do not ascend strictly. */
static int write_lists(const uint32_t *idx, size_t r, uint8_t *out, uint32_t *crc, int stream)
{
    size_t j;
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        if (descents((const uint8_t *)idx, j > 0 ? j : 1, j + m) != 0)
            return DR_E_ARG;
        *crc = dr_crc32(*crc, (const uint8_t *)(idx + j), 4u * m);
        dr_sparse_raw_copy(out + 4u * j, idx + j, 4u * m, stream);
    }
    return DR_OK;
}

int dr_sparse_raw_streams(const dr_frame *f)
{
    return f->section_len[0] + f->section_len[1] >= 4u * (uint64_t)DR_STREAM_MIN_N;
}

int dr_sparse_raw_prepare(uint8_t kind, uint8_t dtype, uint64_t numel, size_t r, dr_frame *f, size_t *total)
{
    int layout;
    if (r > numel || kind >= DR_KIND_COUNT_ || dtype > DR_DTYPE_FLOAT64)
        return DR_E_ARG;
    layout = dr_sparse_raw_layout(numel, r);
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->index_codec = DR_INDEX_RAW;
    f->value_codec = DR_VALUE_RAW;
    f->dtype = dtype;
    f->nsections = 2;
    f->numel = numel;
    f->count = r;
    f->params[0] = (uint32_t)layout;
    f->section_len[0] = index_section_len(layout, numel, r);
    f->section_len[1] = 4u * (uint64_t)r;
    return dr_frame_layout(f, total);
}

int dr_sparse_raw_encode(uint8_t kind, uint8_t dtype, uint64_t numel, const uint32_t *idx,
                         const float *val, size_t r, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    size_t total, j;
    uint32_t crc = 0;
    int st, stream, layout;
    if (buf == NULL || written == NULL || (r > 0 && (idx == NULL || val == NULL)))
        return DR_E_ARG;
    /* Ascending, the last index bounds them all. */
    if (r > 0 && r <= numel && (uint64_t)idx[r - 1] >= numel)
        return DR_E_ARG;
    st = dr_sparse_raw_prepare(kind, dtype, numel, r, &f, &total);
    if (st != DR_OK)
        return st;
    if (cap < total)
        return DR_E_DST_TOO_SMALL;
    layout = (int)f.params[0];
    /* The chunks are checked and folded into the CRC from the caller's arrays (or the
     * bitmap's stage), so the copy of a frame too large for the caches can go past them
     * (no read of the frame's old lines). */
    stream = dr_sparse_raw_streams(&f);
    st = layout == DR_SPARSE_BITMAP ? write_bitmap(idx, r, numel, buf + f.section_off[0], &crc)
                                    : write_lists(idx, r, buf + f.section_off[0], &crc, stream);
    if (st != DR_OK)
        return st;
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        crc = dr_crc32(crc, (const uint8_t *)(val + j), 4u * m);
        dr_sparse_raw_copy(buf + f.section_off[1] + 4u * j, val + j, 4u * m, stream);
    }
#if DR_HAVE_X86_SIMD
    if (stream)
        dr_stream_fence();
#endif
    return dr_frame_seal_body_crc(&f, crc, buf, cap, written);
}

/* The set bits of bitmap bytes p[0..len), written once and compiled twice
 * (simd_config.h): the plain build has no POPCNT. */
DR_ALWAYS_INLINE size_t count_bits(const uint8_t *p, size_t len)
{
    size_t c = 0, b = 0;
    for (; b + 8 <= len; b += 8) {
        uint64_t w;
        memcpy(&w, p + b, 8);
        c += (size_t)__builtin_popcountll(w);
    }
    for (; b < len; b++)
        c += (size_t)__builtin_popcount(p[b]);
    return c;
}

static size_t count_bits_plain(const uint8_t *p, size_t len)
{
    return count_bits(p, len);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static size_t count_bits_avx2(const uint8_t *p, size_t len)
{
    return count_bits(p, len);
}
#endif

static size_t bits_set(const uint8_t *p, size_t len)
{
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        return count_bits_avx2(p, len);
#endif
    return count_bits_plain(p, len);
}

/* The CRC of the frame buf[0..len) as f lays it out (header and sections), and over its
 * sections (r values), whether the index section breaks its layout's rules (*bad: for
 * the lists, a descent; for the bitmap of n entries, a bit set past n or other than r
 * bits set) and, where `values_finite` is not NULL, whether every value is finite: one
 * read of each chunk. */
static uint32_t check_sections(const uint8_t *buf, const dr_frame *f, size_t r, size_t n, uint32_t *bad,
                               int *values_finite)
{
    const uint8_t *ip = buf + f->section_off[0], *vp = buf + f->section_off[1];
    uint32_t crc = dr_crc32(0, buf, (size_t)f->section_off[0]);
    size_t j;
    *bad = 0;
    if (f->params[0] == DR_SPARSE_BITMAP) {
        size_t len = (size_t)f->section_len[0], ones = 0;
        for (j = 0; j < len; j += BITMAP_CHUNK) {
            size_t m = len - j < BITMAP_CHUNK ? len - j : BITMAP_CHUNK;
            crc = dr_crc32(crc, ip + j, m);
            ones += bits_set(ip + j, m);
        }
        *bad = ones != r || (n % 8u != 0 && (ip[len - 1] >> (n % 8u)) != 0);
    } else {
        for (j = 0; j < r; j += CHUNK) {
            size_t m = r - j < CHUNK ? r - j : CHUNK;
            crc = dr_crc32(crc, ip + 4u * j, 4u * m);
            *bad |= descents(ip, j > 0 ? j : 1, j + m);
        }
    }
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        crc = dr_crc32(crc, vp + 4u * j, 4u * m);
        if (values_finite != NULL)
            *values_finite &= dr_finite_bytes(vp + 4u * j, m);
    }
    return crc;
}

/* dense + v, and where dense is a NaN, that NaN (quieted): which of two NaNs an addition
 * returns depends on its operands' order, which the compiler may swap; the vector
 * decoders keep dense's the same way, so every path gives the same bits. */
static float add_to(float dense, float v)
{
    float sum = dense + v;
    if (dense != dense) {
        uint32_t bits;
        memcpy(&bits, &dense, 4);
        bits |= 0x00400000u;
        memcpy(&sum, &bits, 4);
    }
    return sum;
}

/* dense[i] = v, or dense[i] += v (mode DR_APPLY_ADD, where *nonfinite gains 1 if the sum
 * is an Inf or a NaN). */
DR_ALWAYS_INLINE void apply_entry(float *dense, uint32_t i, float v, int mode, uint32_t *nonfinite)
{
    if (mode == DR_APPLY_ADD) {
        uint32_t bits;
        v = add_to(dense[i], v);
        memcpy(&bits, &v, 4);
        *nonfinite |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    dense[i] = v;
}

/* The lists' r entries written into dense as `mode` says. */
static void apply_lists(const uint8_t *ip, const uint8_t *vp, size_t r, float *dense, int mode, uint32_t *nonfinite)
{
    size_t j;
    for (j = 0; j < r; j++) {
        uint32_t i;
        float v;
        memcpy(&i, ip + 4u * j, 4);
        memcpy(&v, vp + 4u * j, 4);
        apply_entry(dense, i, v, mode, nonfinite);
    }
}

/* The bitmap's entries from position `from` (a multiple of 8) to n written into dense as
 * `mode` says (DR_APPLY_ZERO_THEN_WRITE: +0.0 where no bit is set), their values from
 * vp[0..): 64 positions a word. */
static void apply_bitmap(const uint8_t *bits, size_t from, size_t n, const uint8_t *vp, float *dense, int mode,
                         uint32_t *nonfinite)
{
    size_t at, j = 0;
    for (at = from; at < n; at += 64) {
        size_t span = n - at < 64 ? n - at : 64;
        uint64_t word = dr_peek64(bits, (n + 7u) / 8u, at);
        if (mode == DR_APPLY_ZERO_THEN_WRITE)
            memset(dense + at, 0, span * sizeof *dense);
        for (; word != 0; word &= word - 1u, j++) {
            float v;
            memcpy(&v, vp + 4u * j, 4);
            apply_entry(dense, (uint32_t)(at + (size_t)__builtin_ctzll(word)), v, mode, nonfinite);
        }
    }
}

/* The decoders' one body: parse and check the frame, then write its entries as `mode`
 * says, and *finite (if asked): from the values for a plain decode, from each sum
 * written for an adding one. The refusals come in dr_frame_parse's order (the CRC before
 * the fields it covers), then this codec's; dense is untouched on every one. */
static int sparse_raw_apply(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n, int mode,
                            int *finite)
{
    dr_frame f;
    size_t r, from = 0;
    const uint8_t *ip, *vp;
    uint32_t nonfinite = 0, bad = 0, crc, last = 0;
    int values_finite = 1, sections_as_written, layout;
    if (dr_frame_parse_unverified(buf, len, &f) != DR_OK)
        return dr_frame_parse(buf, len, &f); /* its refusal: the CRC's where that fails too */
    r = (size_t)f.count;
    /* Two sections, as this codec writes them for this count: checked with the CRC. The
     * bound first: 4 * count wraps around for a forged count of 2^62 and more, and the
     * sections would then be read for that many entries. */
    layout = f.count <= f.numel && f.count <= UINT32_MAX / 4u ? dr_sparse_raw_layout(f.numel, r) : -1;
    sections_as_written = layout >= 0 && f.nsections == 2 && f.params[0] == (uint32_t)layout &&
                          f.section_len[0] == index_section_len(layout, f.numel, r) &&
                          f.section_len[1] == 4u * f.count;
    crc = sections_as_written ? check_sections(buf, &f, r, (size_t)f.numel, &bad,
                                               finite != NULL && mode != DR_APPLY_ADD ? &values_finite : NULL)
                              : dr_crc32(0, buf, len - DR_FRAME_TRAILER);
    if (crc != dr_frame_stored_crc(buf, len))
        return DR_E_FRAME_CHECKSUM;
    if (f.kind != kind || f.index_codec != DR_INDEX_RAW || f.value_codec != DR_VALUE_RAW ||
        f.nsections != 2)
        return DR_E_FRAME_CODEC;
    if (f.numel != (uint64_t)n || !sections_as_written || f.params[1] != 0 || f.params[2] != 0 ||
        f.params[3] != 0)
        return DR_E_FRAME_FIELD;
    if (n > 0 && dense == NULL)
        return DR_E_ARG;
    ip = buf + f.section_off[0];
    vp = buf + f.section_off[1];
    if (layout == DR_SPARSE_BITMAP) {
        /* Exactly r bits, none past n (check_sections). */
        if (bad)
            return DR_E_CORRUPT;
#if DR_HAVE_X86_SIMD
        {
            /* The whole tensor written, as the quantisers' decoders write theirs. */
            int stream = mode == DR_APPLY_ZERO_THEN_WRITE && dr_stream_output(dense, n);
            if (dr_simd_active() >= DR_SIMD_AVX512)
                from = dr_bitmap_apply_avx512(ip, n, dense, mode, &vp, &nonfinite, stream);
            else if (dr_simd_active() >= DR_SIMD_AVX2)
                from = dr_bitmap_apply_avx2(ip, n, dense, mode, &vp, &nonfinite, stream);
            if (stream)
                dr_stream_fence();
        }
#endif
        apply_bitmap(ip, from, n, vp, dense, mode, &nonfinite);
    } else {
        /* Strictly ascending and in range, as every sparsifier writes them: a repeated
         * index would otherwise be decided by whichever entry came last. */
        if (r > 0)
            memcpy(&last, ip + 4u * (r - 1), 4);
        if (bad || (r > 0 && last >= n))
            return DR_E_CORRUPT;
        if (mode == DR_APPLY_ZERO_THEN_WRITE && n > 0)
            dr_zero(dense, n);
        apply_lists(ip, vp, r, dense, mode, &nonfinite);
    }
    if (finite != NULL)
        *finite = mode == DR_APPLY_ADD ? !nonfinite : values_finite;
    return DR_OK;
}

int dr_sparse_raw_decode(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n, int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, DR_APPLY_WRITE, finite);
}

int dr_sparse_raw_decode_add(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                             int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, DR_APPLY_ADD, finite);
}

int dr_sparse_raw_decode_dense(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                               int *finite)
{
    int is_marker, st;
    size_t j;
    if (finite == NULL)
        return DR_E_ARG;
    st = dr_frame_is_nonfinite(buf, len, kind, n, &is_marker);
    if (st != DR_OK)
        return st;
    if (!is_marker)
        return sparse_raw_apply(buf, len, kind, dense, n, DR_APPLY_ZERO_THEN_WRITE, finite);
    if (n > 0 && dense == NULL)
        return DR_E_ARG;
    for (j = 0; j < n; j++)
        dense[j] = NAN;
    *finite = 0;
    return DR_OK;
}
