/* Selection of every entry with |x| >= t, as indices and values or straight into the
 * raw sparse frame (dr_threshold_encode), and the rest of x (dr_threshold_zero). The
 * comparison is done on the float bits as integers (valid for non-negative floats),
 * which the vector paths do eight or sixteen at a time with the same result. */
#include "deepreduce.h"
#include "candidates.h"
#include "sparse_raw_frame.h"
#include "threshold_simd.h"
#include "../core/frame_fused.h"
#include "../core/stream_simd.h"

#include <string.h>
#include <zlib.h>

#define NAN_KEY_FLOOR 0x7f800001u /* smallest magnitude key of a NaN */

static int threshold_key(float t, uint32_t *key)
{
    uint32_t u;
    if (!(t >= 0.0f)) /* negative or NaN */
        return DR_E_ARG;
    memcpy(&u, &t, sizeof u);
    *key = u & 0x7fffffffu;
    return DR_OK;
}

static int passes(float v, uint32_t tkey)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0x7fffffffu;
    return u >= tkey && u < NAN_KEY_FLOOR;
}

/* How many of x[0..n) pass. */
static size_t count_passing(const float *x, size_t n, uint32_t tkey)
{
    size_t i = 0, c = 0;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_threshold_count_avx2(x, n, tkey, &c);
#endif
    for (; i < n; i++)
        c += (size_t)passes(x[i], tkey);
    return c;
}

int dr_threshold_count(const float *x, size_t n, float t, size_t *count)
{
    uint32_t tkey;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL))
        return DR_E_ARG;
    *count = count_passing(x, n, tkey);
    return DR_OK;
}

int dr_threshold_select(const float *x, size_t n, float t, uint32_t *idx_out, size_t cap,
                        size_t *count)
{
    uint32_t tkey;
    size_t i = 0, c = 0;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL) || n > (size_t)UINT32_MAX ||
        (cap > 0 && idx_out == NULL))
        return DR_E_ARG;
    /* One sweep: indices written while there is room, the count kept past it. */
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_threshold_select_avx2(x, n, tkey, idx_out, cap, &c);
#elif DR_HAVE_NEON
    if (dr_simd_active() == DR_SIMD_NEON)
        i = dr_threshold_select_neon(x, n, tkey, idx_out, cap, &c);
#endif
    for (; i < n; i++)
        if (passes(x[i], tkey)) {
            if (c < cap)
                idx_out[c] = (uint32_t)i;
            c++;
        }
    *count = c;
    return c > cap ? DR_E_DST_TOO_SMALL : DR_OK;
}

int dr_threshold_sparsify(const float *x, size_t n, float t, uint32_t *idx_out, float *val_out,
                          size_t cap, size_t *count)
{
    uint32_t tkey, top;
    size_t c;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL) || n > (size_t)UINT32_MAX ||
        (cap > 0 && (idx_out == NULL || val_out == NULL)))
        return DR_E_ARG;
    c = dr_collect_candidates(x, 0, n, tkey, idx_out, val_out, cap, &top);
    if (c > cap) { /* the sweep stopped at the end of the room: its top does not cover x */
        if (dr_all_finite(x, n) != 1)
            return DR_E_NUMERIC;
        return dr_threshold_count(x, n, t, count) == DR_OK ? DR_E_DST_TOO_SMALL : DR_E_ARG;
    }
    if (top >= DR_NONFINITE_KEY)
        return DR_E_NUMERIC;
    *count = c;
    return DR_OK;
}

/* dr_threshold_encode's sweeps go over x a block at a time; the values (and the lists'
 * indices) wait in L1 stages until a block's worth is there, then are folded into their
 * section's CRC and copied to the frame, so the frame is written once and never read
 * back. */
#define FRAME_BLOCK 2048u

/* A section filled from a stage: where its next entries go, and its CRC so far. */
typedef struct {
    uint8_t *at;
    uint32_t crc;
} section;

/* The stage's `count` 4-byte entries appended to s. */
static void flush(section *s, const void *stage, size_t count, int stream)
{
    s->crc = dr_crc32(s->crc, (const uint8_t *)stage, 4u * count);
    dr_sparse_raw_copy(s->at, stage, 4u * count, stream);
    s->at += 4u * count;
}

/* The bitmap bytes of x[0..m) (their bits past m clear) into bits, the passing entries'
 * values appended to val: returns their count; *top raised to the block's largest
 * magnitude key. `simd`: dr_simd_active(), asked once per sweep. */
static size_t bitmap_block(const float *x, size_t m, uint32_t tkey, uint8_t *bits, float *val, uint32_t *top,
                           int simd)
{
    size_t i = 0, c = 0;
#if DR_HAVE_X86_SIMD
    if (simd >= DR_SIMD_AVX512)
        i = dr_threshold_bitmap_avx512(x, m, tkey, bits, val, &c, top);
    else if (simd >= DR_SIMD_AVX2)
        i = dr_threshold_bitmap_avx2(x, m, tkey, bits, val, &c, top);
#else
    (void)simd;
#endif
    for (; i < m; i += 8) {
        unsigned byte = 0, j;
        for (j = 0; j < 8 && i + j < m; j++) {
            uint32_t key;
            memcpy(&key, x + i + j, sizeof key);
            key &= 0x7fffffffu;
            *top = key > *top ? key : *top;
            if (passes(x[i + j], tkey)) {
                byte |= 1u << j;
                val[c++] = x[i + j];
            }
        }
        bits[i / 8] = (uint8_t)byte;
    }
    return c;
}

/* The bitmap layout's sections for x[0..n): the bitmap into bits, the values appended
 * to `values` while they fit in `room` entries. Returns how many pass (past room, the
 * rest only counted, nothing more written); *top raised to the largest magnitude key
 * swept. */
static size_t bitmap_sweep(const float *x, size_t n, uint32_t tkey, uint8_t *bits, section *values, size_t room,
                           uint32_t *top, int stream)
{
    float stage[2 * FRAME_BLOCK + 16]; /* a vector to spare: the appends store whole ones */
    size_t i, staged = 0, done = 0;
    int simd = dr_simd_active();
    for (i = 0; i < n; i += FRAME_BLOCK) {
        size_t m = n - i < FRAME_BLOCK ? n - i : FRAME_BLOCK;
        staged += bitmap_block(x + i, m, tkey, bits + i / 8, stage + staged, top, simd);
        if (staged > room - done)
            return done + staged + count_passing(x + i + m, n - i - m, tkey);
        if (staged >= FRAME_BLOCK || i + m == n) {
            flush(values, stage, staged, stream);
            done += staged;
            staged = 0;
        }
    }
    return done;
}

/* The lists layout's sections for x[0..n), r entries passing (counted before): returns
 * how many passed in this sweep, which stops once more than r have (x changed between
 * the sweeps); *top as bitmap_sweep's. */
static size_t lists_sweep(const float *x, size_t n, uint32_t tkey, size_t r, section *indices, section *values,
                          uint32_t *top, int stream)
{
    uint32_t stage_idx[2 * FRAME_BLOCK + 16];
    float stage_val[2 * FRAME_BLOCK + 16];
    size_t i, staged = 0, done = 0;
    for (i = 0; i < n; i += FRAME_BLOCK) {
        size_t m = n - i < FRAME_BLOCK ? n - i : FRAME_BLOCK;
        uint32_t block_top;
        staged += dr_collect_candidates(x, i, i + m, tkey, stage_idx + staged, stage_val + staged, FRAME_BLOCK,
                                        &block_top);
        *top = block_top > *top ? block_top : *top;
        if (staged > r - done)
            return done + staged;
        if (staged >= FRAME_BLOCK || i + m == n) {
            flush(indices, stage_idx, staged, stream);
            flush(values, stage_val, staged, stream);
            done += staged;
            staged = 0;
        }
    }
    return done;
}

int dr_threshold_encode(uint8_t kind, const float *x, size_t n, float t, uint8_t *buf, size_t cap, size_t *written,
                        size_t *count)
{
    dr_frame f;
    section indices = {NULL, 0}, values = {NULL, 0};
    size_t r, total, room = 0;
    uint32_t tkey, top = 0;
    int st = threshold_key(t, &tkey), stream, as_bitmap = 0;
    if (st != DR_OK || buf == NULL || written == NULL || count == NULL || (n > 0 && x == NULL) ||
        n > (size_t)UINT32_MAX)
        return DR_E_ARG;
    /* The bitmap layout's offsets (the same for every count that takes it), and how many
     * values fit after them in cap. */
    st = dr_sparse_raw_prepare(kind, DR_DTYPE_FLOAT32, n, n, &f, &total);
    if (st != DR_OK)
        return st;
    stream = dr_sparse_raw_streams(&f);
    if (n > 0 && cap >= f.section_off[1] + DR_FRAME_TRAILER)
        room = (cap - (size_t)f.section_off[1] - DR_FRAME_TRAILER) / 4u;
    if (room > 0) {
        /* Swept as a bitmap first, as a dense selection (the one this call is for) takes
         * it; a sparse one, which takes the lists, is swept again for them below. */
        values.at = buf + f.section_off[1];
        r = bitmap_sweep(x, n, tkey, buf + f.section_off[0], &values, room, &top, stream);
        as_bitmap = r <= room && dr_sparse_raw_layout(n, r) == DR_SPARSE_BITMAP;
        if (as_bitmap) {
            indices.crc = dr_crc32(0, buf + f.section_off[0], (size_t)f.section_len[0]);
            st = dr_sparse_raw_prepare(kind, DR_DTYPE_FLOAT32, n, r, &f, &total);
        }
    } else {
        r = count_passing(x, n, tkey);
    }
    if (!as_bitmap) {
        st = dr_sparse_raw_prepare(kind, DR_DTYPE_FLOAT32, n, r, &f, &total);
        if (st == DR_OK && cap < total) {
            *written = total;
            return DR_E_DST_TOO_SMALL;
        }
        stream = dr_sparse_raw_streams(&f);
        indices.at = buf + f.section_off[0];
        indices.crc = 0;
        values.at = buf + f.section_off[1];
        values.crc = 0;
        if (st == DR_OK && lists_sweep(x, n, tkey, r, &indices, &values, &top, stream) != r)
            st = DR_E_ARG; /* a count that changed: x was written to during the call */
    }
#if DR_HAVE_X86_SIMD
    if (stream)
        dr_stream_fence();
#endif
    if (st != DR_OK)
        return st;
    if (top >= DR_NONFINITE_KEY)
        return DR_E_NUMERIC;
    *count = r;
    return dr_frame_seal_body_crc(&f, (uint32_t)crc32_combine(indices.crc, values.crc, (z_off_t)(4u * r)), buf, cap,
                                  written);
}

/* out[i] = +0.0 where x[i] passes, x[i] elsewhere: written once and compiled twice
 * (simd_config.h), so the AVX2 build vectorises the selects. */
DR_ALWAYS_INLINE void zero_passing(const float *x, size_t n, uint32_t tkey, float *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = passes(x[i], tkey) ? 0.0f : x[i];
}

static void zero_passing_plain(const float *x, size_t n, uint32_t tkey, float *out)
{
    zero_passing(x, n, tkey, out);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static void zero_passing_avx2(const float *x, size_t n, uint32_t tkey, float *out)
{
    zero_passing(x, n, tkey, out);
}
#endif

int dr_threshold_zero(const float *x, size_t n, float t, float *out)
{
    uint32_t tkey;
    if (threshold_key(t, &tkey) != DR_OK || (n > 0 && (x == NULL || out == NULL)))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2) {
        zero_passing_avx2(x, n, tkey, out);
        return DR_OK;
    }
#endif
    zero_passing_plain(x, n, tkey, out);
    return DR_OK;
}
