/* The framed wire format shared by every byte payload (layout in deepreduce.h). */
#include "deepreduce.h"

#include <string.h>
#include <zlib.h>

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

uint32_t dr_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
    /* zlib takes uInt lengths; feed large buffers in chunks. */
    uLong c = crc;
    while (len > 0) {
        uInt chunk = len > 0x40000000u ? 0x40000000u : (uInt)len;
        c = crc32(c, buf, chunk);
        buf += chunk;
        len -= chunk;
    }
    return (uint32_t)c;
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

int dr_frame_seal(const dr_frame *f, uint8_t *buf, size_t cap, size_t *frame_size)
{
    dr_frame laid;
    size_t total, body_end;
    uint32_t i;
    int st;
    if (f == NULL || buf == NULL || frame_size == NULL)
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
    buf[10] = 0;
    buf[11] = 0;
    for (i = 0; i < 4; i++)
        put_u32(buf + 12 + 4 * i, f->params[i]);
    put_u64(buf + 28, f->numel);
    put_u64(buf + 36, f->count);
    for (i = 0; i < f->nsections; i++)
        put_u32(buf + DR_FRAME_FIXED_HEADER + 4 * i, (uint32_t)f->section_len[i]);
    body_end = total - DR_FRAME_TRAILER;
    put_u32(buf + body_end, dr_crc32(0, buf, body_end));
    *frame_size = total;
    return DR_OK;
}

int dr_frame_parse(const uint8_t *buf, size_t len, dr_frame *out)
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
    if (buf[10] != 0 || buf[11] != 0 || f.nsections > DR_FRAME_MAX_SECTIONS)
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
    if (get_u32(buf + off) != dr_crc32(0, buf, off))
        return DR_E_FRAME_CHECKSUM;
    if (f.kind >= DR_KIND_COUNT_ || f.index_codec >= DR_INDEX_COUNT_ ||
        f.value_codec >= DR_VALUE_COUNT_ || f.dtype > DR_DTYPE_FLOAT64 || f.count > f.numel)
        return DR_E_FRAME_FIELD;
    *out = f;
    return DR_OK;
}
