/* The raw sparse frame: uint32 indices then float32 values, both little-endian. */
#include "deepreduce.h"
#include "finite_bytes.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

size_t dr_sparse_raw_size(size_t r)
{
    return dr_frame_header_size(2) + 8u * r + DR_FRAME_TRAILER;
}

int dr_sparse_raw_encode(uint8_t kind, uint8_t dtype, uint64_t numel, const uint32_t *idx,
                         const float *val, size_t r, uint8_t *buf, size_t cap, size_t *written)
{
    dr_frame f;
    size_t total;
    int st;
    size_t j;
    if (buf == NULL || written == NULL || (r > 0 && (idx == NULL || val == NULL)) || r > numel ||
        kind >= DR_KIND_COUNT_ || dtype > DR_DTYPE_FLOAT64)
        return DR_E_ARG;
    for (j = 0; j < r; j++)
        if ((uint64_t)idx[j] >= numel || (j > 0 && idx[j] <= idx[j - 1]))
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
    if (r > 0) {
        memcpy(buf + f.section_off[0], idx, 4u * r);
        memcpy(buf + f.section_off[1], val, 4u * r);
    }
    return dr_frame_seal(&f, buf, cap, written);
}

/* The decoders' one body: parse and check the frame, then dense[idx] = val, or += val,
 * and *finite (if asked): from the values for a plain decode, from each sum written
 * for an adding one. */
static int sparse_raw_apply(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                            int add, int *finite)
{
    dr_frame f;
    size_t r, j;
    const uint8_t *ip, *vp;
    uint32_t prev = 0, nonfinite = 0;
    int st = dr_frame_parse(buf, len, &f);
    if (st != DR_OK)
        return st;
    if (f.kind != kind || f.index_codec != DR_INDEX_RAW || f.value_codec != DR_VALUE_RAW ||
        f.nsections != 2)
        return DR_E_FRAME_CODEC;
    if (f.numel != (uint64_t)n || f.section_len[0] != 4u * f.count ||
        f.section_len[1] != 4u * f.count || f.params[0] != 0 || f.params[1] != 0 ||
        f.params[2] != 0 || f.params[3] != 0)
        return DR_E_FRAME_FIELD;
    if (n > 0 && dense == NULL)
        return DR_E_ARG;
    r = (size_t)f.count;
    ip = buf + f.section_off[0];
    vp = buf + f.section_off[1];
    /* Strictly ascending and in range, as every sparsifier writes them: a repeated
     * index would otherwise be decided by whichever entry came last. */
    for (j = 0; j < r; j++) {
        uint32_t i;
        memcpy(&i, ip + 4u * j, 4);
        if (i >= n || (j > 0 && i <= prev))
            return DR_E_CORRUPT;
        prev = i;
    }
    for (j = 0; j < r; j++) {
        uint32_t i;
        float v;
        memcpy(&i, ip + 4u * j, 4);
        memcpy(&v, vp + 4u * j, 4);
        if (add) {
            uint32_t bits;
            v = dense[i] + v; /* the order of dense[i] += v (which NaN's payload stays) */
            memcpy(&bits, &v, 4);
            nonfinite |= (bits & 0x7f800000u) == 0x7f800000u;
        }
        dense[i] = v;
    }
    if (finite != NULL)
        *finite = add ? !nonfinite : dr_finite_bytes(vp, r);
    return DR_OK;
}

int dr_sparse_raw_decode(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n, int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, 0, finite);
}

int dr_sparse_raw_decode_add(const uint8_t *buf, size_t len, uint8_t kind, float *dense, size_t n,
                             int *finite)
{
    return sparse_raw_apply(buf, len, kind, dense, n, 1, finite);
}
