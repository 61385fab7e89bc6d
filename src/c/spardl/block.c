/* SparDL block frames: a block's top-k selected, coded and framed in one call, and a
 * received frame checked and unpacked. The index section uses one of the lossless
 * index codecs; values travel as raw float32. */
#include "deepreduce.h"
#include "size_math.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

#define NSECTIONS 2u

typedef size_t (*bound_fn)(size_t d, size_t r);
typedef int (*encode_fn)(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                         size_t *written);
typedef int (*decode_fn)(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out);

static size_t raw_bound(size_t d, size_t r)
{
    return r > d ? 0 : 4u * r;
}

static int raw_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                      size_t *written)
{
    (void)d;
    if (cap < 4u * r)
        return DR_E_DST_TOO_SMALL;
    if (r > 0)
        memcpy(out, idx, 4u * r);
    *written = 4u * r;
    return DR_OK;
}

/* Raw indices must ascend strictly and stay below d, as every other codec's do. */
static int raw_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    size_t j;
    if (len != 4u * r)
        return DR_E_CORRUPT;
    if (r > 0)
        memcpy(idx_out, in, 4u * r);
    for (j = 0; j < r; j++)
        if (idx_out[j] >= d || (j > 0 && idx_out[j] <= idx_out[j - 1]))
            return DR_E_CORRUPT;
    return DR_OK;
}

typedef struct codec_ops {
    bound_fn bound_upto; /* the section's bound for at most r indices */
    encode_fn encode;
    decode_fn decode;
} codec_ops;

/* The codec table for a frame's index_codec field; NULL for one SparDL does not use. */
static const codec_ops *codec_for(int id)
{
    static const codec_ops raw = {raw_bound, raw_encode, raw_decode}; /* raw_bound grows with r */
    static const codec_ops ef = {dr_index_ef_bound_upto, dr_index_ef_encode, dr_index_ef_decode};
    static const codec_ops rice = {dr_index_rice_bound_upto, dr_index_rice_encode, dr_index_rice_decode};
    static const codec_ops varint = {dr_index_varint_bound_upto, dr_index_varint_encode,
                                       dr_index_varint_decode};
    switch (id) {
    case DR_INDEX_RAW: return &raw;
    case DR_INDEX_EF: return &ef;
    case DR_INDEX_RICE: return &rice;
    case DR_INDEX_VARINT: return &varint;
    default: return NULL;
    }
}

size_t dr_spardl_frame_bound(size_t block, size_t k, int index_codec)
{
    const codec_ops *codec = codec_for(index_codec);
    if (codec == NULL || k > block)
        return 0;
    return dr_size_add(dr_size_add(dr_frame_header_size(NSECTIONS) + DR_FRAME_TRAILER, codec->bound_upto(block, k)),
                       dr_size_mul(4u, k));
}

size_t dr_spardl_workspace_size(size_t block, size_t k)
{
    if (k > block)
        k = block;
    return dr_size_add(dr_topk_workspace_size(block, k), dr_size_mul(k, sizeof(uint32_t) + sizeof(float)));
}

int dr_spardl_select_encode(float *block, size_t B, size_t k, int index_codec, uint32_t tag,
                            uint8_t *out, size_t cap, size_t *written, void *work)
{
    const codec_ops *codec = codec_for(index_codec);
    size_t head = dr_frame_header_size(NSECTIONS), r = 0, j, index_len = 0, total;
    uint32_t *idx;
    float *val;
    dr_frame f;
    int st;
    if (codec == NULL || B == 0 || B > (size_t)UINT32_MAX || block == NULL || out == NULL ||
        written == NULL || work == NULL)
        return DR_E_ARG;
    if (k > B)
        k = B;
    idx = (uint32_t *)((uint8_t *)work + dr_topk_workspace_size(B, k));
    val = (float *)(idx + k);
    st = dr_topk_select(block, B, k, idx, work);
    if (st != DR_OK)
        return st;
    /* Zeros carry nothing: drop them, keeping the ascending order. */
    for (j = 0; j < k; j++) {
        float v = block[idx[j]];
        if (v != 0.0f) {
            idx[r] = idx[j];
            val[r++] = v;
        }
    }
    if (cap < head + DR_FRAME_TRAILER)
        return DR_E_DST_TOO_SMALL;
    st = codec->encode(idx, r, B, out + head, cap - head - DR_FRAME_TRAILER, &index_len);
    if (st != DR_OK)
        return st;
    if (cap - head - DR_FRAME_TRAILER - index_len < 4u * r)
        return DR_E_DST_TOO_SMALL;
    if (r > 0)
        memcpy(out + head + index_len, val, 4u * r);
    memset(&f, 0, sizeof f);
    f.kind = DR_KIND_SPARDL;
    f.index_codec = (uint8_t)index_codec;
    f.value_codec = DR_VALUE_RAW;
    f.dtype = DR_DTYPE_FLOAT32;
    f.nsections = NSECTIONS;
    f.params[0] = tag;
    f.numel = B;
    f.count = r;
    f.section_len[0] = index_len;
    f.section_len[1] = 4u * (uint64_t)r;
    st = dr_frame_seal(&f, out, cap, &total);
    if (st != DR_OK)
        return st;
    for (j = 0; j < r; j++)
        block[idx[j]] = 0.0f;
    *written = total;
    return DR_OK;
}

static uint32_t read_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

int dr_spardl_frame_length(const uint8_t *buf, size_t len, size_t *frame_len)
{
    uint32_t ns, i;
    size_t total;
    if (buf == NULL || frame_len == NULL)
        return DR_E_ARG;
    if (len < DR_FRAME_FIXED_HEADER)
        return DR_E_FRAME_SHORT;
    if (read_u32(buf) != DR_FRAME_MAGIC)
        return DR_E_FRAME_MAGIC;
    ns = buf[9];
    if (ns > DR_FRAME_MAX_SECTIONS)
        return DR_E_FRAME_FIELD;
    total = dr_frame_header_size(ns);
    if (len < total)
        return DR_E_FRAME_SHORT;
    for (i = 0; i < ns; i++) {
        total += read_u32(buf + DR_FRAME_FIXED_HEADER + 4u * i);
        if (total > len)
            return DR_E_FRAME_SHORT;
    }
    total += DR_FRAME_TRAILER;
    if (total > len)
        return DR_E_FRAME_SHORT;
    *frame_len = total;
    return DR_OK;
}

int dr_spardl_decode(const uint8_t *buf, size_t len, size_t B, uint32_t expected_tag,
                     uint32_t *idx_out, float *val_out, size_t cap, size_t *count)
{
    const codec_ops *codec;
    dr_frame f;
    size_t r;
    int st;
    if (count == NULL || (cap > 0 && (idx_out == NULL || val_out == NULL)))
        return DR_E_ARG;
    st = dr_frame_parse(buf, len, &f);
    if (st != DR_OK)
        return st;
    codec = codec_for(f.index_codec);
    if (f.kind != DR_KIND_SPARDL || f.value_codec != DR_VALUE_RAW || f.nsections != NSECTIONS ||
        codec == NULL)
        return DR_E_FRAME_CODEC;
    if (f.numel != (uint64_t)B || f.params[0] != expected_tag || f.params[1] != 0 ||
        f.params[2] != 0 || f.params[3] != 0 || f.count > (uint64_t)cap ||
        f.section_len[1] != 4u * f.count)
        return DR_E_FRAME_FIELD;
    r = (size_t)f.count;
    st = codec->decode(buf + f.section_off[0], (size_t)f.section_len[0], B, r, idx_out);
    if (st != DR_OK)
        return DR_E_CORRUPT;
    if (r > 0)
        memcpy(val_out, buf + f.section_off[1], 4u * r);
    *count = r;
    return DR_OK;
}
