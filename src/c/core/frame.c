/* The framed wire format shared by every byte payload (layout in deepreduce.h). */
#include "deepreduce.h"
#include "crc32_simd.h"
#include "frame_fused.h"
#include "parallel.h"

#include <string.h>
#include <zlib.h>

/* C99 has no static_assert: a negative array size fails the build instead. */
typedef char dr_nonfinite_size_check[(DR_FRAME_NONFINITE_SIZE == DR_FRAME_FIXED_HEADER + DR_FRAME_TRAILER) ? 1 : -1];

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32);
}

/* CRC of buf[0..len) continuing from crc, on the caller's thread. */
static uint32_t crc32_serial(uint32_t crc, const uint8_t *buf, size_t len)
{
    /* zlib takes uInt lengths; feed large buffers in chunks. */
    uLong c = crc;
#if DR_HAVE_X86_SIMD
    /* The bulk by carry-less multiplication (every AVX2 CPU has PCLMULQDQ), the
     * remainder of under 16 bytes by zlib. */
    int simd = len >= 256u ? dr_simd_active() : DR_SIMD_SCALAR;
    if (simd >= DR_SIMD_AVX2) {
        size_t bulk = len & ~(size_t)15u;
        crc = ~dr_crc32_clmul(simd, ~crc, buf, bulk);
        buf += bulk;
        len -= bulk;
        c = crc;
    }
#elif DR_HAVE_NEON
    /* The whole buffer by the CRC32 instructions where the CPU has them; the scalar cap
     * (DEEPREDUCE_SIMD=scalar) keeps zlib, which the tests compare against. */
    if (len >= 16u && dr_simd_active() >= DR_SIMD_NEON && dr_crc32_arm_supported())
        return ~dr_crc32_arm(~crc, buf, len);
#endif
    while (len > 0) {
        uInt chunk = len > 0x40000000u ? 0x40000000u : (uInt)len;
        c = crc32(c, buf, chunk);
        buf += chunk;
        len -= chunk;
    }
    return (uint32_t)c;
}

/* A large buffer's CRC in parts, one per thread: part p covers
 * [p * part_len, min((p + 1) * part_len, len)) and its CRC starts from 0. */
typedef struct {
    const uint8_t *buf;
    size_t len, part_len;
    uint32_t crc[DR_MAX_THREADS];
} crc_parts;

static int crc_part(void *ctx, size_t begin, size_t end)
{
    crc_parts *c = (crc_parts *)ctx;
    size_t p;
    for (p = begin; p < end; p++) {
        size_t first = p * c->part_len, stop = first + c->part_len < c->len ? first + c->part_len : c->len;
        c->crc[p] = first < stop ? crc32_serial(0, c->buf + first, stop - first) : 0u;
    }
    return DR_OK;
}

/* One thread per this many bytes: the carry-less CRC reads some 15 bytes a cycle, so a
 * part takes about 0.1 ms, several times a thread's start. */
#define CRC_BYTES_PER_THREAD ((size_t)4 << 20)

uint32_t dr_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
    crc_parts c;
    int threads = dr_threads_for(len, CRC_BYTES_PER_THREAD), p;
    if (threads <= 1)
        return crc32_serial(crc, buf, len);
    /* The parts' CRCs joined in order by zlib's combination (O(log part) each): a CRC is
     * linear, so the result is the serial one's for every thread count. Parts are whole
     * 64-byte lines, so each part's bulk goes the carry-less way. A part too long for
     * zlib's offset type (a 32-bit long) is not split. */
    c.buf = buf;
    c.len = len;
    c.part_len = ((len + (size_t)threads - 1) / (size_t)threads + 63u) & ~(size_t)63u;
    if ((uint64_t)(z_off_t)c.part_len != (uint64_t)c.part_len)
        return crc32_serial(crc, buf, len);
    dr_parallel_for((size_t)threads, threads, crc_part, &c);
    for (p = 0; p < threads; p++) {
        size_t first = (size_t)p * c.part_len;
        if (first < len) {
            size_t part = len - first < c.part_len ? len - first : c.part_len;
            crc = (uint32_t)crc32_combine(crc, c.crc[p], (z_off_t)part);
        }
    }
    return crc;
}

size_t dr_frame_header_size(uint32_t nsections)
{
    return DR_FRAME_FIXED_HEADER + 4u * (size_t)nsections;
}

int dr_frame_layout(dr_frame *f, size_t *frame_size)
{
    uint32_t i;
    size_t off;
    if (f == NULL || frame_size == NULL || f->nsections > DR_FRAME_MAX_SECTIONS)
        return DR_E_ARG;
    off = dr_frame_header_size(f->nsections);
    for (i = 0; i < f->nsections; i++) {
        if (f->section_len[i] > UINT32_MAX)
            return DR_E_ARG;
        f->section_off[i] = off;
        off += (size_t)f->section_len[i];
    }
    *frame_size = off + DR_FRAME_TRAILER;
    return DR_OK;
}

/* Check *f and cap, write the header at buf[0..H) and give the frame's total size. */
static int put_header(const dr_frame *f, uint8_t *buf, size_t cap, size_t *frame_size)
{
    dr_frame laid;
    size_t total;
    uint32_t i;
    int st;
    if (f == NULL || buf == NULL || frame_size == NULL)
        return DR_E_ARG;
    if ((f->flags & ~DR_FRAME_FLAG_NONFINITE) != 0)
        return DR_E_ARG;
    laid = *f;
    st = dr_frame_layout(&laid, &total);
    if (st != DR_OK)
        return st;
    if (cap < total)
        return DR_E_DST_TOO_SMALL;
    put_u32(buf, DR_FRAME_MAGIC);
    buf[4] = DR_FRAME_VERSION;
    buf[5] = f->kind;
    buf[6] = f->index_codec;
    buf[7] = f->value_codec;
    buf[8] = f->dtype;
    buf[9] = (uint8_t)f->nsections;
    buf[10] = f->flags;
    buf[11] = 0;
    for (i = 0; i < 4; i++)
        put_u32(buf + 12 + 4 * i, f->params[i]);
    put_u64(buf + 28, f->numel);
    put_u64(buf + 36, f->count);
    for (i = 0; i < f->nsections; i++)
        put_u32(buf + DR_FRAME_FIXED_HEADER + 4 * i, (uint32_t)f->section_len[i]);
    *frame_size = total;
    return DR_OK;
}

int dr_frame_seal(const dr_frame *f, uint8_t *buf, size_t cap, size_t *frame_size)
{
    size_t total;
    int st = put_header(f, buf, cap, &total);
    if (st != DR_OK)
        return st;
    put_u32(buf + total - DR_FRAME_TRAILER, dr_crc32(0, buf, total - DR_FRAME_TRAILER));
    *frame_size = total;
    return DR_OK;
}

/* The largest body dr_frame_seal_body_crc folds again rather than combining CRCs. */
#define SMALL_BODY 4096u

int dr_frame_seal_body_crc(const dr_frame *f, uint32_t body_crc, uint8_t *buf, size_t cap,
                           size_t *frame_size)
{
    size_t total, header, body;
    int st = put_header(f, buf, cap, &total);
    if (st != DR_OK)
        return st;
    header = dr_frame_header_size(f->nsections);
    body = total - DR_FRAME_TRAILER - header;
    if ((uint64_t)(z_off_t)body != (uint64_t)body)
        return DR_E_ARG;
    /* CRC(header || body) from the two parts' CRCs: zlib's combination, O(log body). A
     * body of a few KB, still in L1, is folded again instead: that costs less than the
     * combination's matrix products (a small tensor's step seals one per call). */
    put_u32(buf + total - DR_FRAME_TRAILER,
            body <= SMALL_BODY ? dr_crc32(dr_crc32(0, buf, header), buf + header, body)
                               : (uint32_t)crc32_combine(dr_crc32(0, buf, header), body_crc, (z_off_t)body));
    *frame_size = total;
    return DR_OK;
}

uint32_t dr_frame_stored_crc(const uint8_t *buf, size_t len)
{
    return get_u32(buf + len - DR_FRAME_TRAILER);
}

/* dr_frame_parse, with the CRC checked only where `verify` (see frame_fused.h). */
static int parse(const uint8_t *buf, size_t len, dr_frame *out, int verify)
{
    dr_frame f;
    size_t header, off;
    uint32_t i;
    if (buf == NULL || out == NULL)
        return DR_E_ARG;
    if (len < DR_FRAME_FIXED_HEADER + DR_FRAME_TRAILER)
        return DR_E_FRAME_SHORT;
    if (get_u32(buf) != DR_FRAME_MAGIC)
        return DR_E_FRAME_MAGIC;
    if (buf[4] != DR_FRAME_VERSION)
        return DR_E_FRAME_VERSION;
    memset(&f, 0, sizeof f);
    f.kind = buf[5];
    f.index_codec = buf[6];
    f.value_codec = buf[7];
    f.dtype = buf[8];
    f.nsections = buf[9];
    f.flags = buf[10];
    if ((f.flags & ~DR_FRAME_FLAG_NONFINITE) != 0 || buf[11] != 0 ||
        f.nsections > DR_FRAME_MAX_SECTIONS)
        return DR_E_FRAME_FIELD;
    header = dr_frame_header_size(f.nsections);
    if (len < header + DR_FRAME_TRAILER)
        return DR_E_FRAME_SHORT;
    for (i = 0; i < 4; i++)
        f.params[i] = get_u32(buf + 12 + 4 * i);
    f.numel = get_u64(buf + 28);
    f.count = get_u64(buf + 36);
    off = header;
    for (i = 0; i < f.nsections; i++) {
        uint32_t sl = get_u32(buf + DR_FRAME_FIXED_HEADER + 4 * i);
        /* Compare against the room left so the sum can never overflow. */
        if (sl > len - DR_FRAME_TRAILER - off)
            return DR_E_FRAME_SHORT;
        f.section_len[i] = sl;
        f.section_off[i] = off;
        off += sl;
    }
    if (off + DR_FRAME_TRAILER != len)
        return DR_E_FRAME_FIELD;
    if (verify && get_u32(buf + off) != dr_crc32(0, buf, off))
        return DR_E_FRAME_CHECKSUM;
    if (f.kind >= DR_KIND_COUNT_ || f.index_codec >= DR_INDEX_COUNT_ ||
        f.value_codec >= DR_VALUE_COUNT_ || f.dtype > DR_DTYPE_FLOAT64 || f.count > f.numel)
        return DR_E_FRAME_FIELD;
    /* A marker carries nothing but the fact (see DR_FRAME_FLAG_NONFINITE). */
    if ((f.flags & DR_FRAME_FLAG_NONFINITE) &&
        (f.nsections != 0 || f.count != 0 || f.index_codec != DR_INDEX_RAW ||
         f.value_codec != DR_VALUE_RAW || f.params[0] || f.params[1] || f.params[2] || f.params[3]))
        return DR_E_FRAME_FIELD;
    *out = f;
    return DR_OK;
}

int dr_frame_parse(const uint8_t *buf, size_t len, dr_frame *out)
{
    return parse(buf, len, out, 1);
}

int dr_frame_parse_unverified(const uint8_t *buf, size_t len, dr_frame *out)
{
    return parse(buf, len, out, 0);
}

int dr_frame_nonfinite(uint8_t kind, uint64_t numel, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    if (buf == NULL || written == NULL || kind >= DR_KIND_COUNT_)
        return DR_E_ARG;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.flags = DR_FRAME_FLAG_NONFINITE;
    f.numel = numel;
    return dr_frame_seal(&f, buf, cap, written);
}

int dr_frame_is_nonfinite(const uint8_t *buf, size_t len, uint8_t kind, uint64_t numel,
                          int *is_marker)
{
    dr_frame f;
    int st;
    if (buf == NULL || is_marker == NULL)
        return DR_E_ARG;
    *is_marker = 0;
    /* Only a frame that says it is a marker is parsed here; any other is the codec's. */
    if (len < DR_FRAME_NONFINITE_SIZE || get_u32(buf) != DR_FRAME_MAGIC ||
        (buf[10] & DR_FRAME_FLAG_NONFINITE) == 0)
        return DR_OK;
    st = dr_frame_parse(buf, len, &f);
    if (st != DR_OK)
        return st;
    if (f.kind != kind)
        return DR_E_FRAME_CODEC;
    if (f.numel != numel)
        return DR_E_FRAME_FIELD;
    *is_marker = 1;
    return DR_OK;
}

int dr_bytes_same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen != blen)
        return 0;
    if (a == b || alen == 0)
        return 1;
    return memcmp(a, b, alen) == 0;
}
