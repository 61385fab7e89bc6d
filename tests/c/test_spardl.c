/* C-level tests of SparDL's kernels: a block frame round-trips (every index codec),
 * the block keeps exactly what was not sent, damaged and foreign frames are refused,
 * frames are walked back to back, merge adds in order and keep_topk re-selects. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const int codecs[4] = {DR_INDEX_RAW, DR_INDEX_EF, DR_INDEX_RICE, DR_INDEX_VARINT};

static void test_round_trip(void)
{
    const size_t B = 5000, k = 50;
    float *block = malloc(B * sizeof *block), *orig = malloc(B * sizeof *orig);
    float *dense = malloc(B * sizeof *dense), val[50];
    uint32_t idx[50];
    void *work = malloc(dr_spardl_workspace_size(B, k));
    size_t cap = dr_spardl_frame_bound(B, k, DR_INDEX_RAW), i, t;
    uint8_t *buf = malloc(cap);
    for (t = 0; t < 4; t++) {
        size_t written = 0, flen = 0, count = 0;
        CHECK(dr_spardl_frame_bound(B, k, codecs[t]) <= cap);
        for (i = 0; i < B; i++)
            orig[i] = block[i] = (i % 7 == 3) ? 0.0f : test_uniform(9, i);
        CHECK_OK(dr_spardl_select_encode(block, B, k, codecs[t], 42, buf, cap, &written, work));
        CHECK_OK(dr_spardl_frame_length(buf, cap, &flen));
        CHECK(flen == written);
        CHECK_OK(dr_spardl_decode(buf, written, B, 42, idx, val, k, &count));
        CHECK(count == k);
        /* sent + kept back = the block, and the sent set is the top-k */
        memcpy(dense, block, B * sizeof *dense);
        CHECK_OK(dr_scatter_add(idx, val, count, dense, B));
        CHECK(memcmp(dense, orig, B * sizeof *dense) == 0);
        {
            float least = 2.0f, most_left = 0.0f;
            for (i = 0; i < count; i++)
                least = fminf(least, fabsf(val[i]));
            for (i = 0; i < B; i++)
                most_left = fmaxf(most_left, fabsf(block[i]));
            CHECK(least >= most_left);
        }
        CHECK_STATUS(dr_spardl_decode(buf, written, B, 43, idx, val, k, &count), DR_E_FRAME_FIELD);
        CHECK_STATUS(dr_spardl_decode(buf, written, B + 1, 42, idx, val, k, &count), DR_E_FRAME_FIELD);
        CHECK_STATUS(dr_spardl_decode(buf, written, B, 42, idx, val, k - 1, &count), DR_E_FRAME_FIELD);
        buf[written / 2] ^= 1;
        CHECK_STATUS(dr_spardl_decode(buf, written, B, 42, idx, val, k, &count), DR_E_FRAME_CHECKSUM);
        CHECK_STATUS(dr_spardl_frame_length(buf, written - 1, &flen), DR_E_FRAME_SHORT);
    }
    free(block); free(orig); free(dense); free(work); free(buf);
}

static void test_zeros_and_small_caps(void)
{
    float block[16] = {0};
    uint8_t buf[256];
    uint32_t idx[4];
    float val[4];
    size_t written = 0, count = 9;
    void *work = malloc(dr_spardl_workspace_size(16, 4));
    block[5] = -2.0f;
    CHECK_OK(dr_spardl_select_encode(block, 16, 4, DR_INDEX_EF, 0, buf, sizeof buf, &written, work));
    CHECK_OK(dr_spardl_decode(buf, written, 16, 0, idx, val, 4, &count));
    CHECK(count == 1 && idx[0] == 5 && val[0] == -2.0f && block[5] == 0.0f);
    block[5] = 1.0f;
    CHECK_STATUS(dr_spardl_select_encode(block, 16, 4, DR_INDEX_EF, 0, buf, 20, &written, work),
                 DR_E_DST_TOO_SMALL);
    CHECK(block[5] == 1.0f);
    CHECK_STATUS(dr_spardl_select_encode(block, 16, 4, DR_INDEX_BLOOM, 0, buf, sizeof buf, &written, work),
                 DR_E_ARG);
    CHECK(dr_spardl_frame_bound(16, 4, DR_INDEX_HUFFMAN) == 0);
    CHECK_STATUS(dr_spardl_frame_length((const uint8_t *)"XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", 48, &count),
                 DR_E_FRAME_MAGIC);
    free(work);
}

/* A frame whose CRC is right but whose raw indices repeat is refused as corrupt. */
static void test_corrupt_section(void)
{
    float block[8] = {0, 3, 0, 0, -5, 0, 0, 1};
    uint8_t buf[128];
    uint32_t idx[3], twin;
    float val[3];
    size_t written = 0, count = 0, head = dr_frame_header_size(2);
    void *work = malloc(dr_spardl_workspace_size(8, 3));
    CHECK_OK(dr_spardl_select_encode(block, 8, 3, DR_INDEX_RAW, 1, buf, sizeof buf, &written, work));
    memcpy(&twin, buf + head, 4);
    memcpy(buf + head + 4, &twin, 4); /* second index = first */
    {
        uint32_t crc = dr_crc32(0, buf, written - 4);
        memcpy(buf + written - 4, &crc, 4);
    }
    CHECK_STATUS(dr_spardl_decode(buf, written, 8, 1, idx, val, 3, &count), DR_E_CORRUPT);
    free(work);
}

static void test_merge_and_keep(void)
{
    uint32_t ia[3] = {1, 4, 9}, ib[3] = {0, 4, 10}, io[6], bad[2] = {3, 3}, work[6];
    float va[3] = {1.0f, 2.0f, -7.0f}, vb[3] = {5.0f, 0.5f, 0.25f}, vo[6];
    size_t n = 0;
    CHECK_OK(dr_sparse_merge_add(ia, va, 3, ib, vb, 3, io, vo, &n));
    CHECK(n == 5);
    CHECK(io[0] == 0 && io[1] == 1 && io[2] == 4 && io[3] == 9 && io[4] == 10);
    CHECK(vo[0] == 5.0f && vo[1] == 1.0f && vo[2] == 2.5f && vo[3] == -7.0f && vo[4] == 0.25f);
    CHECK_OK(dr_sparse_keep_topk(io, vo, n, 2, &n, work));
    CHECK(n == 2 && io[0] == 0 && io[1] == 9 && vo[0] == 5.0f && vo[1] == -7.0f);
    CHECK_STATUS(dr_sparse_merge_add(bad, va, 2, ib, vb, 3, io, vo, &n), DR_E_ARG);
    CHECK_OK(dr_sparse_merge_add(NULL, NULL, 0, ib, vb, 3, io, vo, &n));
    CHECK(n == 3);
}

/* Index sections' bounds for at most r indices against the largest per-r bound, found
 * by brute force: rice's, varint's and ef's bounds fall in places as r grows (a frame of
 * fewer entries than k could outgrow a buffer sized by the bound at k). Then the block
 * where that happened: 146 nonzeros at a block's end, k = 147 (rice's bound at 146 is
 * larger than at 147), encoded into dr_spardl_frame_bound(B, k). */
static void test_bounds_for_at_most_r(void)
{
    static const size_t sizes[] = {1, 2, 100, 384, 1000, 4096, 12345, 65536};
    struct bound_pair {
        size_t (*bound)(size_t, size_t);
        size_t (*upto)(size_t, size_t);
    };
    const struct bound_pair pairs[3] = {{dr_index_rice_bound, dr_index_rice_bound_upto},
                                        {dr_index_ef_bound, dr_index_ef_bound_upto},
                                        {dr_index_varint_bound, dr_index_varint_bound_upto}};
    const size_t B = 384, k = 147;
    float block[384];
    size_t c, i, r, written = 0;
    void *work = malloc(dr_spardl_workspace_size(B, k));
    uint8_t *buf = malloc(dr_spardl_frame_bound(B, k, DR_INDEX_RICE));
    for (c = 0; c < 3; c++)
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t largest = 0;
            for (r = 0; r <= sizes[i]; r++) {
                size_t b = pairs[c].bound(sizes[i], r);
                largest = b > largest ? b : largest;
                /* every r up to 4096 entries; past that every 53rd (rice's bisections cost
                 * ~1k rice_param calls each, too many for every r under ASan and QEMU) */
                if (sizes[i] <= 4096 || r % 53 == 0 || r == sizes[i])
                    CHECK(pairs[c].upto(sizes[i], r) == largest);
            }
            CHECK(pairs[c].upto(sizes[i], sizes[i] + 5) == largest); /* at most d indices fit */
        }
    CHECK(dr_index_rice_bound(B, 146) > dr_index_rice_bound(B, 147));
    for (i = 0; i < B; i++)
        block[i] = i >= 238 ? 1.0f : 0.0f;
    CHECK_OK(dr_spardl_select_encode(block, B, k, DR_INDEX_RICE, 0, buf,
                                     dr_spardl_frame_bound(B, k, DR_INDEX_RICE), &written, work));
    free(buf);
    free(work);
}

int main(void)
{
    test_round_trip();
    test_zeros_and_small_caps();
    test_corrupt_section();
    test_merge_and_keep();
    test_bounds_for_at_most_r();
    return check_summary("spardl");
}
