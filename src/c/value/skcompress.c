/* SKCompress's values (Jiang et al., VLDB Journal 2020): SketchML's quantile sketch puts
 * each value in one of `bins` equal-count buckets, and each bucket index is then
 * Huffman-coded, the code table travelling in the section. The bucket means travel as
 * int16 fractions of the largest |mean| (the sketch's own error dwarfs their 2^-15
 * step), so a few-bucket sketch costs bytes, not the 4 bytes a bin of the plain sketch
 * section. Layout and contract in deepreduce/value.h. */
#include "value_internal.h"
#include "prefix_code.h"
#include "../index/bitio.h"
#include "../quant/sketch_fill.h"
#include "size_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MEAN_STEPS 32767.0

static size_t head_size(uint32_t bins)
{
    return 4u + 3u * (size_t)bins; /* scale, int16 means, code lengths */
}

static int bins_ok(uint32_t bins)
{
    return bins >= 1u && bins <= DR_SKCOMPRESS_MAX_BINS;
}

size_t dr_value_skcompress_bound(size_t r, uint32_t bins)
{
    if (!bins_ok(bins) || (uint64_t)r > UINT32_MAX)
        return 0;
    /* No code is longer than 24 bits (prefix_code.h). */
    return r == 0 ? 0 : head_size(bins) + 3u * r;
}

static size_t sketch_part(size_t r, uint32_t bins)
{
    return dr_size_add(dr_sketch_workspace_size(r, bins), 7u) & ~(size_t)7u;
}

size_t dr_value_skcompress_workspace_size(size_t r, uint32_t bins)
{
    if (!bins_ok(bins))
        return 0;
    return dr_size_add(sketch_part(r, bins), dr_size_add(4u * (size_t)bins, r));
}

int dr_value_skcompress_encode(const float *val, size_t r, uint32_t bins, uint64_t key,
                               uint8_t *out, size_t cap, size_t *written, void *work)
{
    uint64_t count[DR_SKCOMPRESS_MAX_BINS], bits, size;
    uint8_t len[DR_SKCOMPRESS_MAX_BINS], *means, *bin;
    dr_prefix_code pc;
    dr_bitwriter w;
    double scale = 0.0;
    size_t j;
    uint32_t b;
    int st;
    if (!bins_ok(bins) || (uint64_t)r > UINT32_MAX || written == NULL || out == NULL ||
        (r > 0 && (val == NULL || work == NULL)) || ((uintptr_t)work & 7u) != 0)
        return DR_E_ARG;
    if (r == 0) {
        *written = 0;
        return DR_OK;
    }
    means = (uint8_t *)work + sketch_part(r, bins);
    bin = means + 4u * (size_t)bins;
    st = dr_sketch_fill(val, r, bins, key, work, means, bin);
    if (st != DR_OK)
        return st;
    memset(count, 0, bins * sizeof *count);
    for (j = 0; j < r; j++)
        count[bin[j]]++;
    for (b = 0; b < bins; b++) {
        float m;
        memcpy(&m, means + 4u * b, 4);
        scale = fabs(m) > scale ? fabs(m) : scale;
    }
    dr_prefix_lengths(count, bins, len);
    if (dr_prefix_build(&pc, len, bins) != DR_OK)
        return DR_E_ARG; /* unreachable: Huffman lengths always form a valid code */
    bits = dr_prefix_cost(&pc, count);
    size = head_size(bins) + (bits + 7u) / 8u;
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    {
        float s = (float)scale;
        memcpy(out, &s, 4);
    }
    for (b = 0; b < bins; b++) {
        float m;
        long q = 0;
        int16_t v;
        memcpy(&m, means + 4u * b, 4);
        if (scale > 0.0)
            q = lrint(m / scale * MEAN_STEPS);
        v = (int16_t)(q > 32767 ? 32767 : q < -32767 ? -32767 : q);
        memcpy(out + 4u + 2u * b, &v, 2);
    }
    memcpy(out + 4u + 2u * (size_t)bins, len, bins);
    dr_bw_init(&w, out + head_size(bins));
    for (j = 0; j < r; j++)
        dr_bw_put(&w, pc.stored[bin[j]], pc.len[bin[j]]);
    dr_bw_finish(&w);
    *written = (size_t)size;
    return DR_OK;
}

int dr_value_skcompress_decode(const uint8_t *in, size_t len, size_t r, uint32_t bins,
                               float *val_out)
{
    float table[DR_SKCOMPRESS_MAX_BINS], scale;
    uint64_t count[DR_SKCOMPRESS_MAX_BINS], bp = 0;
    dr_prefix_code pc;
    const uint8_t *codes, *lengths = in + 4u + 2u * (size_t)bins;
    size_t j, stream;
    uint32_t b;
    int top = 0; /* the largest |mean| */
    if (!bins_ok(bins) || (uint64_t)r > UINT32_MAX || (in == NULL && len > 0) ||
        (r > 0 && val_out == NULL))
        return DR_E_ARG;
    if (r == 0)
        return len == 0 ? DR_OK : DR_E_FRAME_FIELD;
    if (len < head_size(bins))
        return DR_E_FRAME_SHORT;
    memcpy(&scale, in, 4);
    /* signbit also refuses -0.0, which the encoder never writes. */
    if (!isfinite(scale) || signbit(scale))
        return DR_E_CORRUPT;
    for (b = 0; b < bins; b++) {
        int16_t v;
        memcpy(&v, in + 4u + 2u * b, 2);
        if (v == INT16_MIN)
            return DR_E_CORRUPT;
        top = abs(v) > top ? abs(v) : top;
        table[b] = (float)((double)scale * v / MEAN_STEPS);
    }
    /* The encoder's scale is the largest |mean|, so that mean is written as +-32767, and
     * a zero scale zeroes every mean: any other pair (say the scale doubled and the means
     * halved) is a second encoding of the same values. */
    if (top != (scale > 0.0f ? 32767 : 0))
        return DR_E_CORRUPT;
    if (dr_prefix_build(&pc, lengths, bins) != DR_OK)
        return DR_E_CORRUPT;
    memset(count, 0, bins * sizeof *count);
    codes = in + head_size(bins);
    stream = len - head_size(bins);
    for (j = 0; j < r; j++) {
        unsigned sym;
        if (dr_prefix_decode(&pc, codes, stream, &bp, &sym) != DR_OK)
            return DR_E_FRAME_SHORT;
        val_out[j] = table[sym];
        count[sym]++;
    }
    if (!dr_prefix_is_huffman(lengths, count, bins))
        return DR_E_CORRUPT;
    if ((bp + 7u) / 8u != (uint64_t)stream)
        return DR_E_FRAME_FIELD;
    if ((bp & 7u) != 0 && (codes[bp / 8u] >> (bp & 7u)) != 0)
        return DR_E_CORRUPT;
    return DR_OK;
}
