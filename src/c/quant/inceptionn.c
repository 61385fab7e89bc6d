/* INCEPTIONN-style error-bounded re-encoding: a 2-bit tag per element says whether the
 * value was dropped (below the bound), re-encoded as an 8-bit or 16-bit sign-magnitude
 * fixed-point number, or kept as float32. Fixed point with round-to-nearest bounds the
 * absolute error by half a step, and the steps are chosen so that half a step is at
 * most eps = 2^-b (rules in quant.h). The frame holds x in blocks, each block's sections
 * after its tags, so a block's lengths follow from its own tags: the encoder writes each
 * block in one sweep of x, and the CRC is taken CRC_CHUNK bytes at a time, right behind the
 * blocks the encoder writes and ahead of those the decoder reads, while the bytes are in
 * cache. x and the frame are each read or written once per side. */
#include "frame_fused.h"
#include "inceptionn_simd.h"
#include "qframe.h"
#include "stream_simd.h"
#include "size_math.h"

#include <math.h>

enum { TAG_DROP = 0, TAG_8 = 1, TAG_16 = 2, TAG_32 = 3 };
/* The CRC is taken over CRC_CHUNK bytes at a time (more than the largest block): the bytes
 * are still in (or just brought into) the cache, and there are few calls (each one
 * dispatches and reduces). */
enum { BLOCK = DR_INCEPTIONN_BLOCK, CRC_CHUNK = 1 << 16 };

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
    return dr_size_add(dr_size_add(dr_frame_header_size(1) + DR_FRAME_TRAILER, dr_qf_crumb_bytes(n)),
                       dr_size_mul(4u, n));
}

/* The bytes of a block of m elements holding count[1..3] entries of tags 1..3. */
static size_t block_bytes(size_t m, const size_t *count)
{
    return dr_qf_crumb_bytes(m) + 4u * count[TAG_32] + 2u * count[TAG_16] + count[TAG_8];
}

/* Adds the tag counts of x[0..m) to count[4]; DR_E_NUMERIC for an Inf or a NaN. */
static int count_tags_of(const float *x, size_t m, const bands *s, size_t *count)
{
    size_t i;
    for (i = 0; i < m; i++) {
        uint32_t q;
        if (!isfinite(x[i]))
            return DR_E_NUMERIC;
        count[classify(x[i], s, &q)]++;
    }
    return DR_OK;
}

int dr_inceptionn_size(const float *x, size_t n, uint32_t bound_bits, size_t *size)
{
    size_t count[4] = {0, 0, 0, 0}, i = 0;
    bands s;
    int st;
    if (size == NULL || bound_bits < 1 || bound_bits > DR_INCEPTIONN_MAX_BITS || (n > 0 && x == NULL))
        return DR_E_ARG;
    s = bands_for(bound_bits);
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX512)
        i = dr_inceptionn_count_avx512(x, n, &s, count);
#endif
    st = i < n ? count_tags_of(x + i, n - i, &s, count) : DR_OK;
    if (st != DR_OK)
        return st;
    /* Every block but the last has a multiple of 4 elements: the tags take ceil(n/4). */
    *size = dr_frame_header_size(1) + block_bytes(n, count) + DR_FRAME_TRAILER;
    return DR_OK;
}

/* One block of x[0..m) at dst, with `room` bytes there: a sweep counting its tags (which
 * places its sections), then one writing them. DR_E_NUMERIC for Inf/NaN in the block,
 * DR_E_DST_TOO_SMALL if it needs more than `room`; else *bytes is its length. */
static int encode_block(const float *x, size_t m, const bands *s, uint8_t *dst, size_t room,
                        size_t *bytes)
{
    size_t count[4] = {0, 0, 0, 0}, i, n8 = 0, n16 = 0, n32 = 0;
    uint8_t *tags = dst, *p32, *p16, *p8;
    int st = count_tags_of(x, m, s, count);
    if (st != DR_OK)
        return st;
    *bytes = block_bytes(m, count);
    if (*bytes > room)
        return DR_E_DST_TOO_SMALL;
    p32 = dst + dr_qf_crumb_bytes(m);
    p16 = p32 + 4u * count[TAG_32];
    p8 = p16 + 2u * count[TAG_16];
    memset(tags, 0, dr_qf_crumb_bytes(m));
    for (i = 0; i < m; i++) {
        /* Every element stores to all three sections, the sections it does not go to
         * through a scratch target, so that no branch depends on its tag. */
        uint8_t scratch[4];
        uint32_t q = 0, sign = x[i] < 0.0f;
        unsigned tag = classify(x[i], s, &q);
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
    return DR_OK;
}

int dr_inceptionn_encode(const float *x, size_t n, uint32_t bound_bits, uint8_t dtype,
                         uint8_t *buf, size_t cap, size_t *written)
{
    uint64_t tags;
    dr_frame f;
    bands s;
    size_t i, at, done, end, bytes;
    uint32_t crc = 0;
    int st, simd = dr_simd_active();
    if (bound_bits < 1 || bound_bits > DR_INCEPTIONN_MAX_BITS)
        return DR_E_ARG;
    /* The arguments, and room for the smallest frame of n elements (every element
     * dropped: its tags alone), which refuses at once a tensor whose tags alone pass the
     * 4 GiB a section may hold; the section's length is known once the blocks are
     * written. */
    tags = dr_qf_crumb_bytes(n);
    st = dr_qf_prepare(&f, DR_KIND_INCEPTIONN, dtype, x, n, 1, &tags, buf, cap, written);
    if (st != DR_OK)
        return st;
#if !DR_HAVE_X86_SIMD
    (void)simd;
#endif
    s = bands_for(bound_bits);
    f.params[0] = bound_bits;
    f.params[1] = BLOCK;
    at = done = (size_t)f.section_off[0];
    end = cap - DR_FRAME_TRAILER;
    for (i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
#if DR_HAVE_X86_SIMD
        /* Where the largest block and the 64 bytes its whole-vector stores may pass its
         * end fit before cap. */
        if (m == BLOCK && simd >= DR_SIMD_AVX2 && end - at >= BLOCK / 4 + 4 * BLOCK + 64) {
            bytes = simd >= DR_SIMD_AVX512 ? dr_inceptionn_block_avx512(x + i, &s, buf + at)
                                           : dr_inceptionn_block_avx2(x + i, &s, buf + at);
            if (bytes == 0)
                return DR_E_NUMERIC;
        } else
#endif
        {
            st = encode_block(x + i, m, &s, buf + at, end - at, &bytes);
            if (st != DR_OK)
                return st;
        }
        at += bytes;
        /* A section over 4 GiB is refused where it passes that, not after x's end. */
        if ((uint64_t)(at - (size_t)f.section_off[0]) > UINT32_MAX)
            return DR_E_ARG;
        if (at - done >= CRC_CHUNK) {
            crc = dr_crc32(crc, buf + done, at - done);
            done = at;
        }
    }
    crc = dr_crc32(crc, buf + done, at - done);
    f.section_len[0] = at - (size_t)f.section_off[0];
    return dr_frame_seal_body_crc(&f, crc, buf, cap, written);
}

/* Adds the counts of tags 1..3 in tags[0..nbytes) to count[] (padding tags are 0, so whole
 * bytes count), a word at a time; written once, compiled plain and for AVX2 (POPCNT). */
DR_ALWAYS_INLINE void count_tag_bytes(const uint8_t *tags, size_t nbytes, size_t *count)
{
    const uint64_t low = 0x5555555555555555ull;
    size_t i;
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
}

static void count_tag_bytes_plain(const uint8_t *tags, size_t nbytes, size_t *count)
{
    count_tag_bytes(tags, nbytes, count);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static void count_tag_bytes_avx2(const uint8_t *tags, size_t nbytes, size_t *count)
{
    count_tag_bytes(tags, nbytes, count);
}
#endif

/* Whether a block's sections hold an entry the encoder cannot write: an 8- or 16-bit
 * magnitude 0, an Inf or NaN float32. Reductions without branches, so that they vectorise. */
DR_ALWAYS_INLINE unsigned block_bad(const uint8_t *p8, const uint8_t *p16, const uint8_t *p32,
                                    const size_t *count)
{
    size_t i;
    unsigned bad = 0;
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
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad;
}

/* Decodes the block of m elements at src, whose tags hold count[1..3] entries of each
 * tag, into out[0..m); returns nonzero if it holds an entry the encoder cannot write.
 * Selects, not a switch: every element reads its candidate from each section (a read at
 * a section's end lands in the next section, the next block or the trailer, inside the
 * frame) and keeps the one its tag names. Written once, compiled plain and for AVX2 (the
 * checks' loops vectorise). */
DR_ALWAYS_INLINE unsigned decode_block(const uint8_t *src, size_t m, const size_t *count,
                                       float step8, float step16, float *out)
{
    const uint8_t *tags = src, *p32 = src + dr_qf_crumb_bytes(m);
    const uint8_t *p16 = p32 + 4u * count[TAG_32], *p8 = p16 + 2u * count[TAG_16];
    size_t i, n8 = 0, n16 = 0, n32 = 0;
    for (i = 0; i < m; i++) {
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
    return block_bad(p8, p16, p32, count);
}

static unsigned decode_block_plain(const uint8_t *src, size_t m, const size_t *count, float step8,
                                   float step16, float *out)
{
    return decode_block(src, m, count, step8, step16, out);
}

#if DR_HAVE_X86_SIMD
DR_TARGET_AVX2 static unsigned decode_block_avx2(const uint8_t *src, size_t m, const size_t *count,
                                                 float step8, float step16, float *out)
{
    return decode_block(src, m, count, step8, step16, out);
}
#endif

/* The header checks of dr_inceptionn_decode, before the CRC (the block sweep takes it).
 * params[1] names the layout, by its block size: the layout before blocks (4 sections:
 * all tags, then all float32s, uint16s, bytes) wrote 0 there, and another block size is
 * a layout this build does not read, so both are DR_E_FRAME_VERSION. */
static int check_header(const uint8_t *buf, size_t len, size_t n, const float *out, dr_frame *f)
{
    int st = dr_frame_parse_unverified(buf, len, f);
    if (st != DR_OK)
        return st;
    if (f->kind == DR_KIND_INCEPTIONN && f->params[1] != BLOCK)
        return DR_E_FRAME_VERSION;
    st = dr_qf_check_dense(f, DR_KIND_INCEPTIONN, n, 1, out);
    if (st != DR_OK)
        return st;
    if (f->params[0] < 1 || f->params[0] > DR_INCEPTIONN_MAX_BITS || f->params[2] | f->params[3])
        return DR_E_FRAME_FIELD;
    return DR_OK;
}

/* check_header, with a refusal reported as DR_E_FRAME_CHECKSUM where the frame's CRC does
 * not match (as dr_frame_parse tells it, before the fields, for every other codec): a
 * header damaged on the way is then told as damage, not as a mismatched codec or
 * version. The CRC is read only on this error path. */
static int open_frame(const uint8_t *buf, size_t len, size_t n, const float *out, dr_frame *f)
{
    dr_frame whole;
    int st = check_header(buf, len, n, out, f);
    if (st != DR_OK && dr_frame_parse(buf, len, &whole) == DR_E_FRAME_CHECKSUM)
        return DR_E_FRAME_CHECKSUM;
    return st;
}

int dr_inceptionn_decode(const uint8_t *buf, size_t len, float *out, size_t n)
{
    dr_frame f;
    bands s;
    size_t i, at, done, end;
    uint32_t crc;
    unsigned bad = 0;
    float step8, step16;
    int simd = dr_simd_active();
    /* The vector blocks stream a large output past the cache (stream_simd.h's rule). */
    int stream = simd >= DR_SIMD_AVX2 && dr_stream_output(out, n);
    int st = open_frame(buf, len, n, out, &f);
    if (st != DR_OK)
        return st;
#if !DR_HAVE_X86_SIMD
    (void)simd;
    (void)stream;
#endif
    s = bands_for(f.params[0]);
    step8 = ldexpf(1.0f, -s.k8);
    step16 = ldexpf(1.0f, -s.k16);
    at = done = (size_t)f.section_off[0];
    end = at + (size_t)f.section_len[0];
    crc = dr_crc32(0, buf, at);
    for (i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK, count[4] = {0, 0, 0, 0}, bytes;
        if (end - at < dr_qf_crumb_bytes(m)) {
            st = DR_E_FRAME_FIELD;
            break;
        }
#if DR_HAVE_X86_SIMD
        if (m == BLOCK && simd >= DR_SIMD_AVX512)
            dr_inceptionn_count_block_avx512(buf + at, count);
        else if (simd >= DR_SIMD_AVX2)
            count_tag_bytes_avx2(buf + at, dr_qf_crumb_bytes(m), count);
        else
#endif
            count_tag_bytes_plain(buf + at, dr_qf_crumb_bytes(m), count);
        bytes = block_bytes(m, count);
        if (bytes > end - at) {
            st = DR_E_FRAME_FIELD;
            break;
        }
        /* The CRC runs ahead of the values, a chunk at a time: it brings the chunk's
         * blocks into cache with one sequential read, where the values sweep reads four
         * places of each block at once. */
        if (at + bytes > done) {
            size_t upto = end - at > CRC_CHUNK ? at + CRC_CHUNK : end;
            crc = dr_crc32(crc, buf + done, upto - done);
            done = upto;
        }
        bad |= !dr_qf_padding_clear(buf + at, m, 2);
#if DR_HAVE_X86_SIMD
        /* Where the whole-vector loads past the block's end stay inside buf. */
        if (m == BLOCK && simd >= DR_SIMD_AVX512 && len - (at + bytes) >= 64)
            bad |= dr_inceptionn_block_decode_avx512(buf + at, count, step8, step16, out + i, stream);
        else if (m == BLOCK && simd >= DR_SIMD_AVX2 && len - (at + bytes) >= 64)
            bad |= dr_inceptionn_block_decode_avx2(buf + at, count, step8, step16, out + i, stream);
        else if (simd >= DR_SIMD_AVX2)
            bad |= decode_block_avx2(buf + at, m, count, step8, step16, out + i);
        else
#endif
            bad |= decode_block_plain(buf + at, m, count, step8, step16, out + i);
        at += bytes;
    }
#if DR_HAVE_X86_SIMD
    if (stream)
        dr_stream_fence();
#endif
    if (st == DR_OK && at != end)
        st = DR_E_FRAME_FIELD;
    /* The rest of the section (after a block that does not fit, more than the blocks
     * read): a frame whose sections were damaged on the way is told by its CRC before
     * what the damage breaks in them (open_frame does the same for its header). */
    crc = dr_crc32(crc, buf + done, end - done);
    if (crc != dr_frame_stored_crc(buf, len))
        return DR_E_FRAME_CHECKSUM;
    if (st != DR_OK)
        return st;
    return bad ? DR_E_CORRUPT : DR_OK;
}
