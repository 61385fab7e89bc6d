/* Run lengths of the 0/1 bitmap (DeepReduce's `rle`), bit-packed at the width of the
 * longest run. The runs are derived from the sorted index list directly; the bitmap is
 * never built. */
#include "bitio.h"

#define RLE_HEADER 5u /* u8 width + u32 run count */

/* Visits the runs of the bitmap of idx[0..r) over [0, d) in order. With emit == NULL it
 * only counts them and tracks the longest. */
typedef struct {
    size_t count;
    uint64_t longest;
    dr_bitwriter *emit;
    unsigned width;
} rle_runs;

static void rle_run(rle_runs *s, uint64_t len)
{
    s->count++;
    if (len > s->longest)
        s->longest = len;
    if (s->emit != NULL)
        dr_bw_put(s->emit, (uint32_t)len, s->width);
}

static void rle_walk(const uint32_t *idx, size_t r, size_t d, rle_runs *s)
{
    size_t j = 0;
    uint64_t pos = 0;
    for (;;) {
        uint64_t next = j < r ? idx[j] : (uint64_t)d;
        size_t start;
        rle_run(s, next - pos); /* zero-run; the first may be empty */
        pos = next;
        if (j == r)
            return;
        start = j;
        while (j + 1u < r && idx[j + 1u] == idx[j] + 1u)
            j++;
        j++;
        rle_run(s, j - start); /* one-run */
        pos += j - start;
        if (j == r && pos == (uint64_t)d)
            return;
    }
}

size_t dr_index_rle_bound(size_t d, size_t r)
{
    /* At most 2r + 1 runs (and d + 1), none longer than d, so none wider than 32 bits. */
    uint64_t runs = 2u * (uint64_t)r + 1u;
    unsigned width = (uint64_t)d > UINT32_MAX ? 32u : dr_bits_for((uint32_t)d);
    if (r > d)
        return 0;
    if (runs > (uint64_t)d + 1u)
        runs = (uint64_t)d + 1u;
    return dr_sat_size(RLE_HEADER + (uint64_t)dr_bitpack_size((size_t)runs, width));
}

int dr_index_rle_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                        size_t *written)
{
    rle_runs s;
    dr_bitwriter w;
    size_t size;
    int st = dr_index_check_encode(idx, r, d, out, written);
    if (st != DR_OK)
        return st;
    memset(&s, 0, sizeof s);
    rle_walk(idx, r, d, &s);
    /* A run of 2^32 (d = 2^32, r = 0 or r = d) needs 33 bits: refuse rather than wrap. */
    if (s.longest > UINT32_MAX || s.count > UINT32_MAX)
        return DR_E_ARG;
    s.width = dr_bits_for((uint32_t)s.longest);
    size = RLE_HEADER + dr_bitpack_size(s.count, s.width);
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    out[0] = (uint8_t)s.width;
    out[1] = (uint8_t)s.count;
    out[2] = (uint8_t)(s.count >> 8);
    out[3] = (uint8_t)(s.count >> 16);
    out[4] = (uint8_t)(s.count >> 24);
    dr_bw_init(&w, out + RLE_HEADER);
    s.emit = &w;
    s.count = 0;
    rle_walk(idx, r, d, &s);
    dr_bw_finish(&w);
    *written = size;
    return DR_OK;
}

int dr_index_rle_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out)
{
    const uint8_t *body;
    size_t t, nruns, blen, ones = 0;
    unsigned width;
    uint64_t pos = 0, mask, bp = 0;
    int st = dr_index_check_decode(in, len, d, r, idx_out);
    if (st != DR_OK)
        return st;
    if (len < RLE_HEADER)
        return DR_E_CORRUPT;
    width = in[0];
    nruns = (size_t)in[1] | (size_t)in[2] << 8 | (size_t)in[3] << 16 | (size_t)in[4] << 24;
    /* r ones make at most 2r + 1 runs; the runs must fill the section exactly. */
    if (width > 32u || nruns == 0 || (uint64_t)nruns > 2u * (uint64_t)r + 1u)
        return DR_E_CORRUPT;
    body = in + RLE_HEADER;
    blen = len - RLE_HEADER;
    if (!dr_stream_ends_at(body, blen, (uint64_t)nruns * width))
        return DR_E_CORRUPT;
    mask = (1ull << width) - 1u;
    for (t = 0; t < nruns; t++, bp += width) {
        uint64_t run = dr_peek64(body, blen, bp) & mask;
        if (run > (uint64_t)d - pos || (run == 0 && t > 0))
            return DR_E_CORRUPT;
        if (t & 1u) {
            uint64_t i;
            if (run > (uint64_t)(r - ones))
                return DR_E_CORRUPT;
            for (i = 0; i < run; i++)
                idx_out[ones++] = (uint32_t)(pos + i);
        }
        pos += run;
    }
    return pos == (uint64_t)d && ones == r ? DR_OK : DR_E_CORRUPT;
}
