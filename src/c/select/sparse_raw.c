/* The raw sparse frame: uint32 indices then float32 values, both little-endian.
 *
 * Encode and decode go over each section in chunks of CHUNK entries (16 KB): a chunk is
 * read, checked and folded into the frame's CRC while it is in L1 (and copied, by the
 * encoder), so the sections cross the memory bus once for all three, where separate
 * sweeps for the order check, the copy and the CRC read them three times
 * (dr_frame_seal would read the written frame back). */
#include "deepreduce.h"
#include "finite_bytes.h"
#include "../core/frame_fused.h"
#include "../core/stream_simd.h"

#include <math.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

#define CHUNK 4096u

size_t dr_sparse_raw_size(size_t r)
{
    return dr_frame_header_size(2) + 8u * r + DR_FRAME_TRAILER;
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

/* len bytes from src to dst, streamed past the caches or not. */
static void copy_chunk(uint8_t *dst, const void *src, size_t len, int stream)
{
    if (stream)
        dr_stream_copy(dst, (const uint8_t *)src, len);
    else
        memcpy(dst, src, len);
}

int dr_sparse_raw_encode(uint8_t kind, uint8_t dtype, uint64_t numel, const uint32_t *idx,
                         const float *val, size_t r, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    size_t total, j;
    uint32_t crc = 0;
    int st, stream;
    if (buf == NULL || written == NULL || (r > 0 && (idx == NULL || val == NULL)) || r > numel ||
        kind >= DR_KIND_COUNT_ || dtype > DR_DTYPE_FLOAT64)
        return DR_E_ARG;
    /* Ascending, the last index bounds them all. */
    if (r > 0 && (uint64_t)idx[r - 1] >= numel)
        return DR_E_ARG;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.index_codec = DR_INDEX_RAW;
    f.value_codec = DR_VALUE_RAW;
    f.dtype = dtype;
    f.nsections = 2;
    f.numel = numel;
    f.count = r;
    f.section_len[0] = 4u * (uint64_t)r;
    f.section_len[1] = 4u * (uint64_t)r;
    st = dr_frame_layout(&f, &total);
    if (st != DR_OK)
        return st;
    if (cap < total)
        return DR_E_DST_TOO_SMALL;
    /* The chunks are checked and folded into the CRC from the caller's arrays, so the
     * copy of a frame too large for the caches can go past them (no read of the frame's
     * old lines). */
    stream = 2u * r >= DR_STREAM_MIN_N;
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        if (descents((const uint8_t *)idx, j > 0 ? j : 1, j + m) != 0)
            return DR_E_ARG;
        crc = dr_crc32(crc, (const uint8_t *)(idx + j), 4u * m);
        copy_chunk(buf + f.section_off[0] + 4u * j, idx + j, 4u * m, stream);
    }
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        crc = dr_crc32(crc, (const uint8_t *)(val + j), 4u * m);
        copy_chunk(buf + f.section_off[1] + 4u * j, val + j, 4u * m, stream);
    }
#if DR_HAVE_X86_SIMD
    if (stream)
        dr_stream_fence();
#endif
    return dr_frame_seal_body_crc(&f, crc, buf, cap, written);
}

/* The CRC of the frame buf[0..len) as f lays it out (header and sections), and over its
 * two sections of r entries each, whether the indices have a descent (*bad) and, where
 * `values_finite` is not NULL, whether every value is finite: one read of each chunk. */
static uint32_t check_sections(const uint8_t *buf, const dr_frame *f, size_t r, uint32_t *bad,
                               int *values_finite)
{
    const uint8_t *ip = buf + f->section_off[0], *vp = buf + f->section_off[1];
    uint32_t crc = dr_crc32(0, buf, (size_t)f->section_off[0]);
    size_t j;
    *bad = 0;
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        crc = dr_crc32(crc, ip + 4u * j, 4u * m);
        *bad |= descents(ip, j > 0 ? j : 1, j + m);
    }
    for (j = 0; j < r; j += CHUNK) {
        size_t m = r - j < CHUNK ? r - j : CHUNK;
        crc = dr_crc32(crc, vp + 4u * j, 4u * m);
        if (values_finite != NULL)
            *values_finite &= dr_finite_bytes(vp + 4u * j, m);
    }
    return crc;
}

/* How sparse_raw_apply writes the frame's entries into dense. */
enum apply_mode {
    APPLY_WRITE,           /* dense[idx] = val */
    APPLY_ADD,             /* dense[idx] += val */
    APPLY_ZERO_THEN_WRITE  /* dense = 0, then dense[idx] = val */
};

/* The decoders' one body: parse and check the frame, then write its entries as `mode`
 * says, and *finite (if asked): from the values for a plain decode, from each sum
 * written for an adding one. The refusals come in dr_frame_parse's order (the CRC before
 * the fields it covers), then this codec's; dense is untouched on every one. */
static int sparse_raw_apply(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                            enum apply_mode mode, int *finite)
{
    dr_frame f;
    size_t r, j;
    const uint8_t *ip, *vp;
    uint32_t nonfinite = 0, bad = 0, crc, last = 0;
    int values_finite = 1, sections_as_written;
    if (dr_frame_parse_unverified(buf, len, &f) != DR_OK)
        return dr_frame_parse(buf, len, &f); /* its refusal: the CRC's where that fails too */
    r = (size_t)f.count;
    /* Two sections of r entries, as this codec writes them: checked with the CRC. The
     * bound first: 4 * count wraps around for a forged count of 2^62 and more, and the
     * sections would then be read for that many entries. */
    sections_as_written = f.nsections == 2 && f.count <= UINT32_MAX / 4u && f.section_len[0] == 4u * f.count &&
                          f.section_len[1] == 4u * f.count;
    crc = sections_as_written
              ? check_sections(buf, &f, r, &bad, finite != NULL && mode != APPLY_ADD ? &values_finite : NULL)
              : dr_crc32(0, buf, len - DR_FRAME_TRAILER);
    if (crc != dr_frame_stored_crc(buf, len))
        return DR_E_FRAME_CHECKSUM;
    if (f.kind != kind || f.index_codec != DR_INDEX_RAW || f.value_codec != DR_VALUE_RAW ||
        f.nsections != 2)
        return DR_E_FRAME_CODEC;
    if (f.numel != (uint64_t)n || !sections_as_written || f.params[0] != 0 || f.params[1] != 0 ||
        f.params[2] != 0 || f.params[3] != 0)
        return DR_E_FRAME_FIELD;
    if (n > 0 && dense == NULL)
        return DR_E_ARG;
    ip = buf + f.section_off[0];
    vp = buf + f.section_off[1];
    /* Strictly ascending and in range, as every sparsifier writes them: a repeated
     * index would otherwise be decided by whichever entry came last. */
    if (r > 0)
        memcpy(&last, ip + 4u * (r - 1), 4);
    if (bad || (r > 0 && last >= n))
        return DR_E_CORRUPT;
    if (mode == APPLY_ZERO_THEN_WRITE && n > 0)
        dr_zero(dense, n);
    for (j = 0; j < r; j++) {
        uint32_t i;
        float v;
        memcpy(&i, ip + 4u * j, 4);
        memcpy(&v, vp + 4u * j, 4);
        if (mode == APPLY_ADD) {
            uint32_t bits;
            v = dense[i] + v; /* the order of dense[i] += v (which NaN's payload stays) */
            memcpy(&bits, &v, 4);
            nonfinite |= (bits & 0x7f800000u) == 0x7f800000u;
        }
        dense[i] = v;
    }
    if (finite != NULL)
        *finite = mode == APPLY_ADD ? !nonfinite : values_finite;
    return DR_OK;
}

int dr_sparse_raw_decode(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n, int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, APPLY_WRITE, finite);
}

int dr_sparse_raw_decode_add(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                             int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, APPLY_ADD, finite);
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
        return sparse_raw_apply(buf, len, kind, dense, n, APPLY_ZERO_THEN_WRITE, finite);
    if (n > 0 && dense == NULL)
        return DR_E_ARG;
    for (j = 0; j < n; j++)
        dense[j] = NAN;
    *finite = 0;
    return DR_OK;
}
