/* deflate: a zlib stream of the float32 bytes (layout in deepreduce/value.h).
 *
 * zlib normally takes its state from malloc. Here zalloc carves it from the caller's
 * workspace with a bump pointer and zfree does nothing: every stream lives for one call,
 * so the whole arena is released by returning. */
#define ZLIB_CONST
#include "value_internal.h"

#include <limits.h>
#include <string.h>
#include <zlib.h>

/* zlib 1.2/1.3 take ~268 KiB for deflate at windowBits 15, memLevel 8 (64 KiB each of
 * window, prev, head and pending buffer, plus the state) and ~40 KiB for inflate; zlib-ng
 * takes ~350 KiB (a 128 KiB head table, 64-byte alignment). 400 KiB covers both. */
#define WORKSPACE_BYTES (400u * 1024u)
#define ARENA_ALIGN 16u

typedef struct {
    uint8_t *base;
    size_t used, cap;
} arena;

static voidpf arena_alloc(voidpf opaque, uInt items, uInt size)
{
    arena *a = (arena *)opaque;
    size_t n, pad;
    if (size != 0 && items > SIZE_MAX / size)
        return Z_NULL;
    n = (size_t)items * size;
    pad = (ARENA_ALIGN - (size_t)((uintptr_t)(a->base + a->used) % ARENA_ALIGN)) % ARENA_ALIGN;
    if (pad > a->cap - a->used || n > a->cap - a->used - pad)
        return Z_NULL;
    a->used += pad + n;
    return a->base + a->used - n;
}

static void arena_free(voidpf opaque, voidpf ptr)
{
    (void)opaque;
    (void)ptr;
}

/* zlib counts bytes in uInt: refuse inputs it cannot take in one piece. */
static int size_ok(size_t r)
{
    return r <= (size_t)UINT_MAX / 4u;
}

static void stream_init(z_stream *zs, arena *a, void *work)
{
    a->base = (uint8_t *)work;
    a->used = 0;
    a->cap = WORKSPACE_BYTES;
    memset(zs, 0, sizeof *zs);
    zs->zalloc = arena_alloc;
    zs->zfree = arena_free;
    zs->opaque = a;
}

size_t dr_value_deflate_bound(size_t r)
{
    if (!size_ok(r))
        return 0;
    return (size_t)compressBound((uLong)(4u * r));
}

size_t dr_value_deflate_workspace_size(size_t r, uint32_t level)
{
    (void)r;
    (void)level;
    return WORKSPACE_BYTES;
}

int dr_value_deflate_encode(const float *val, size_t r, uint32_t level, uint8_t *out,
                            size_t cap, size_t *written, void *work)
{
    z_stream zs;
    arena a;
    int ret;

    if (level > 9 || !size_ok(r) || written == NULL || (r > 0 && val == NULL) ||
        (out == NULL && cap > 0) || work == NULL || ((uintptr_t)work & 7u) != 0)
        return DR_E_ARG;
    if (!dr_value_all_finite(val, r))
        return DR_E_NUMERIC;
    if (cap == 0)
        return DR_E_DST_TOO_SMALL; /* a zlib stream takes at least 8 bytes */
    stream_init(&zs, &a, work);
    if (deflateInit2(&zs, (int)level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return DR_E_ZLIB;
    zs.next_in = (const Bytef *)val;
    zs.avail_in = (uInt)(4u * r);
    zs.next_out = out;
    zs.avail_out = cap > UINT_MAX ? UINT_MAX : (uInt)cap;
    ret = deflate(&zs, Z_FINISH);
    deflateEnd(&zs);
    if (ret == Z_STREAM_END) {
        *written = (size_t)zs.total_out;
        return DR_OK;
    }
    /* With all input given and Z_FINISH, anything short of the end means no room. */
    return ret == Z_OK || ret == Z_BUF_ERROR ? DR_E_DST_TOO_SMALL : DR_E_ZLIB;
}

int dr_value_deflate_decode(const uint8_t *in, size_t len, size_t r, float *val_out,
                            void *work)
{
    z_stream zs;
    arena a;
    uint8_t none; /* zlib refuses a NULL output pointer even with no room asked for */
    int ret;

    if (!size_ok(r) || (r > 0 && val_out == NULL) || (in == NULL && len > 0) || work == NULL ||
        ((uintptr_t)work & 7u) != 0)
        return DR_E_ARG;
    /* Not checked against our compressBound: another zlib (zlib-ng's level 1 uses static
     * trees) may legitimately expand more. */
    if (len > (size_t)UINT_MAX)
        return DR_E_FRAME_FIELD;
    stream_init(&zs, &a, work);
    if (inflateInit2(&zs, 15) != Z_OK)
        return DR_E_ZLIB;
    zs.next_in = in;
    zs.avail_in = (uInt)len;
    zs.next_out = r > 0 ? (Bytef *)val_out : &none;
    zs.avail_out = (uInt)(4u * r);
    ret = inflate(&zs, Z_FINISH);
    if (ret == Z_BUF_ERROR && zs.avail_in == 0 && zs.avail_out == 0) {
        /* Input and output both used up before the end: a stream cut in its trailer (or
         * its last block's end) after all 4 r bytes, or one that holds more. A byte more
         * of room tells them apart: cut short, it gives nothing without more input. */
        zs.next_out = &none;
        zs.avail_out = 1;
        if (inflate(&zs, Z_FINISH) != Z_BUF_ERROR || zs.avail_out != 1)
            ret = Z_DATA_ERROR; /* it goes on past 4 r bytes */
    }
    inflateEnd(&zs);
    if (ret == Z_MEM_ERROR)
        return DR_E_ZLIB;
    if (ret != Z_STREAM_END) {
        /* Input used up: the stream was cut short. Otherwise it is damaged or holds more
         * than 4 r bytes. */
        if (ret == Z_BUF_ERROR && zs.avail_in == 0)
            return DR_E_FRAME_SHORT;
        return DR_E_CORRUPT;
    }
    if (zs.avail_out != 0)
        return DR_E_CORRUPT; /* fewer than 4 r bytes */
    if (zs.avail_in != 0)
        return DR_E_FRAME_FIELD; /* bytes after the end of the stream */
    if (!dr_value_all_finite(val_out, r))
        return DR_E_CORRUPT;
    return DR_OK;
}
