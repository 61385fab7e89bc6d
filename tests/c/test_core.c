/* C-level tests of the foundation: frames, selection, vector kernels, half floats. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"

/* Reseal buf[0..len) (a raw sparse frame of r entries of numel, in `layout`) after its
 * sections were changed, as someone who knows the format would forge it. */
static void reseal_sparse_as(uint8_t *buf, size_t len, uint8_t kind, uint64_t numel, size_t r, int layout,
                             uint64_t index_len)
{
    dr_frame f;
    size_t total;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.index_codec = DR_INDEX_RAW;
    f.value_codec = DR_VALUE_RAW;
    f.nsections = 2;
    f.numel = numel;
    f.count = r;
    f.params[0] = (uint32_t)layout;
    f.section_len[0] = index_len;
    f.section_len[1] = 4u * (uint64_t)r;
    CHECK_OK(dr_frame_seal(&f, buf, len, &total));
    CHECK(total == len);
}

static void reseal_sparse(uint8_t *buf, size_t len, uint8_t kind, uint64_t numel, size_t r)
{
    reseal_sparse_as(buf, len, kind, numel, r, DR_SPARSE_LISTS, 4u * (uint64_t)r);
}

static void test_frame_roundtrip_and_corruption(void)
{
    uint32_t idx[5] = {1, 4, 7, 9, 99};
    float val[5] = {0.5f, -1.0f, 2.0f, 3.5f, -0.25f};
    uint8_t buf[256];
    float dense[1000];
    size_t len = 0, pos;

    /* 5 of 1,000 entries: the index lists are the smaller layout (select.h). */
    CHECK(dr_sparse_raw_size(5) == 44 + 8 + 40 + 4);
    CHECK(dr_sparse_raw_layout(1000, 5) == DR_SPARSE_LISTS && dr_sparse_raw_frame_size(1000, 5) == dr_sparse_raw_size(5));
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, DR_DTYPE_FLOAT32, 1000, idx, val, 5, buf, sizeof buf, &len));
    CHECK(len == dr_sparse_raw_size(5));
    memset(dense, 0, sizeof dense);
    CHECK_OK(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 1000, NULL));
    /* A frame of another sparsifier is refused. */
    CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, 1000, NULL), DR_E_FRAME_CODEC);
    CHECK(dense[4] == -1.0f && dense[99] == -0.25f && dense[0] == 0.0f);

    /* Every single-byte change is refused with a status, never a crash. */
    for (pos = 0; pos < len; pos++) {
        uint8_t saved = buf[pos];
        buf[pos] ^= 0x5a;
        CHECK(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 1000, NULL) < 0);
        buf[pos] = saved;
    }
    /* Truncations at every length are refused too. */
    for (pos = 0; pos < len; pos++)
        CHECK(dr_sparse_raw_decode(buf, pos, DR_KIND_TOPK, dense, 1000, NULL) < 0);
    /* A frame for another tensor size is refused. */
    CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 500, NULL), DR_E_FRAME_FIELD);
    /* A well-sealed frame whose count times 4 wraps around to its sections' lengths
     * (2^62 + 1 entries in sections of 4 bytes, libFuzzer's find): refused by its fields,
     * where its sections were read for 2^62 entries, far past the frame. */
    {
        dr_frame f;
        size_t total;
        uint32_t one_idx = 3;
        float one_val = 1.0f;
        CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 1000, &one_idx, &one_val, 1, buf, sizeof buf, &len));
        memset(&f, 0, sizeof f);
        f.kind = DR_KIND_TOPK;
        f.nsections = 2;
        f.numel = UINT64_MAX;
        f.count = ((uint64_t)1 << 62) + 1u;
        f.section_len[0] = f.section_len[1] = 4;
        CHECK_OK(dr_frame_seal(&f, buf, len, &total));
        CHECK(total == len);
        CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 1000, NULL), DR_E_FRAME_FIELD);
        CHECK_STATUS(dr_sparse_raw_decode_add(buf, len, DR_KIND_TOPK, dense, 1000, NULL), DR_E_FRAME_FIELD);
        CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 1000, idx, val, 5, buf, sizeof buf, &len));
    }
    CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 1000, idx, val, 5, buf, 10, &len), DR_E_DST_TOO_SMALL);
    /* Repeated or unsorted indices: refused by the encoder, and by the decoder when a
     * well-sealed frame carries them. */
    idx[2] = 4;
    CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 1000, idx, val, 5, buf, sizeof buf, &len), DR_E_ARG);
    idx[2] = 7;
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 1000, idx, val, 5, buf, sizeof buf, &len));
    memcpy(buf + 44 + 8 + 8, buf + 44 + 8 + 4, 4); /* index 2 := index 1 */
    {
        dr_frame f;
        CHECK(dr_frame_parse(buf, len, &f) == DR_E_FRAME_CHECKSUM);
    }
    reseal_sparse(buf, len, DR_KIND_TOPK, 1000, 5);
    CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 1000, NULL), DR_E_CORRUPT);
    /* The adding decoder refuses the same frame before adding anything. */
    dense[4] = 1.0f;
    CHECK_STATUS(dr_sparse_raw_decode_add(buf, len, DR_KIND_TOPK, dense, 1000, NULL), DR_E_CORRUPT);
    CHECK(dense[4] == 1.0f && dense[1] == 0.5f);
}

static void test_sparse_frames_added(void)
{
    const uint32_t idx_a[3] = {0, 2, 3}, idx_b[2] = {2, 5};
    const float val_a[3] = {1.5f, -2.0f, -0.0f}, val_b[2] = {0.25f, 4.0f};
    uint8_t a[128], b[128];
    size_t len_a = 0, len_b = 0;
    float dense[6] = {0};
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_DGC, 0, 6, idx_a, val_a, 3, a, sizeof a, &len_a));
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_DGC, 0, 6, idx_b, val_b, 2, b, sizeof b, &len_b));
    int finite = -1;
    CHECK_OK(dr_sparse_raw_decode_add(a, len_a, DR_KIND_DGC, dense, 6, &finite));
    CHECK(finite == 1);
    finite = -1;
    CHECK_OK(dr_sparse_raw_decode_add(b, len_b, DR_KIND_DGC, dense, 6, &finite));
    CHECK(finite == 1);
    CHECK(dense[0] == 1.5f && dense[1] == 0.0f && dense[2] == -1.75f && dense[5] == 4.0f);
    CHECK(dense[3] == 0.0f && !signbit(dense[3])); /* 0 + -0 is +0, as in a sum of tensors */
    /* Another kind, another size, a truncation: refused, nothing added. */
    CHECK_STATUS(dr_sparse_raw_decode_add(a, len_a, DR_KIND_TOPK, dense, 6, NULL), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_sparse_raw_decode_add(a, len_a, DR_KIND_DGC, dense, 7, NULL), DR_E_FRAME_FIELD);
    CHECK(dr_sparse_raw_decode_add(a, len_a - 1, DR_KIND_DGC, dense, 6, NULL) < 0);
    CHECK(dense[0] == 1.5f && dense[2] == -1.75f);
}

/* The decoders' *finite: from what they wrote, so it catches a sum that overflows as well
 * as an Inf or a NaN carried in a frame, and says nothing of entries they did not write. */
static void test_sparse_frames_finite(void)
{
    const uint32_t idx[2] = {1, 3};
    const float big[2] = {3e38f, 1.0f}, inf[2] = {1.0f, INFINITY}, nan_v[2] = {NAN, 1.0f};
    uint8_t a[128], b[128], c[128];
    size_t len_a = 0, len_b = 0, len_c = 0;
    float dense[4] = {0.0f, 0.0f, NAN, 0.0f};
    int finite = -1;
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 4, idx, big, 2, a, sizeof a, &len_a));
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 4, idx, inf, 2, b, sizeof b, &len_b));
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 4, idx, nan_v, 2, c, sizeof c, &len_c));
    CHECK_OK(dr_sparse_raw_decode(a, len_a, DR_KIND_TOPK, dense, 4, &finite));
    CHECK(finite == 1); /* dense[2] is NaN but not the frame's */
    CHECK_OK(dr_sparse_raw_decode_add(a, len_a, DR_KIND_TOPK, dense, 4, &finite));
    CHECK(finite == 0 && isinf(dense[1])); /* 3e38 + 3e38 overflows */
    CHECK_OK(dr_sparse_raw_decode(b, len_b, DR_KIND_TOPK, dense, 4, &finite));
    CHECK(finite == 0);
    CHECK_OK(dr_sparse_raw_decode(c, len_c, DR_KIND_TOPK, dense, 4, &finite));
    CHECK(finite == 0);
    CHECK_OK(dr_sparse_raw_decode(a, len_a, DR_KIND_TOPK, dense, 4, &finite));
    CHECK(finite == 1);
    /* A refused frame leaves *finite alone. */
    finite = 7;
    CHECK(dr_sparse_raw_decode_add(c, len_c - 1, DR_KIND_TOPK, dense, 4, &finite) < 0);
    CHECK(finite == 7);
}

/* dr_sparse_raw_decode_dense: the bits of dr_zero then dr_sparse_raw_decode (a -0.0 the
 * frame carries stays -0.0), over whatever dense held; NaN everywhere for the marker;
 * dense untouched by a refused frame or marker. */
static void test_sparse_frame_decoded_dense(void)
{
    const uint32_t idx[3] = {0, 2, 5};
    const float val[3] = {1.5f, -0.0f, 3e38f};
    uint8_t frame[128], marker[DR_FRAME_NONFINITE_SIZE], other[DR_FRAME_NONFINITE_SIZE];
    size_t len = 0, marker_len = 0, other_len = 0, j, pos;
    float dense[7], expected[7];
    int finite = -1;
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 7, idx, val, 3, frame, sizeof frame, &len));
    for (j = 0; j < 7; j++)
        dense[j] = expected[j] = NAN;
    CHECK_OK(dr_zero(expected, 7));
    CHECK_OK(dr_sparse_raw_decode(frame, len, DR_KIND_TOPK, expected, 7, NULL));
    CHECK_OK(dr_sparse_raw_decode_dense(frame, len, DR_KIND_TOPK, dense, 7, &finite));
    CHECK(finite == 1 && memcmp(dense, expected, sizeof dense) == 0 && signbit(dense[2]));
    /* The marker: NaN in every entry, and not finite. */
    CHECK_OK(dr_frame_nonfinite(DR_KIND_TOPK, 7, marker, sizeof marker, &marker_len));
    CHECK_OK(dr_sparse_raw_decode_dense(marker, marker_len, DR_KIND_TOPK, dense, 7, &finite));
    CHECK(finite == 0);
    for (j = 0; j < 7; j++)
        CHECK(isnan(dense[j]));
    /* Refusals leave dense and *finite as they were: every byte changed, every
     * truncation, another kind or size, a marker of another kind or size, no finite. */
    CHECK_OK(dr_sparse_raw_decode_dense(frame, len, DR_KIND_TOPK, dense, 7, &finite));
    finite = 7;
    for (pos = 0; pos < len; pos++) {
        uint8_t saved = frame[pos];
        frame[pos] ^= 0x5a;
        CHECK(dr_sparse_raw_decode_dense(frame, len, DR_KIND_TOPK, dense, 7, &finite) < 0);
        frame[pos] = saved;
        CHECK(dr_sparse_raw_decode_dense(frame, pos, DR_KIND_TOPK, dense, 7, &finite) < 0);
    }
    CHECK_STATUS(dr_sparse_raw_decode_dense(frame, len, DR_KIND_DGC, dense, 7, &finite), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_sparse_raw_decode_dense(frame, len, DR_KIND_TOPK, dense, 6, &finite), DR_E_FRAME_FIELD);
    CHECK_OK(dr_frame_nonfinite(DR_KIND_DGC, 7, other, sizeof other, &other_len));
    CHECK_STATUS(dr_sparse_raw_decode_dense(other, other_len, DR_KIND_TOPK, dense, 7, &finite), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_sparse_raw_decode_dense(marker, marker_len, DR_KIND_TOPK, dense, 8, &finite),
                 DR_E_FRAME_FIELD);
    CHECK_STATUS(dr_sparse_raw_decode_dense(frame, len, DR_KIND_TOPK, dense, 7, NULL), DR_E_ARG);
    CHECK(finite == 7 && memcmp(dense, expected, sizeof dense) == 0);
}

/* Frames of many entries, which the codec checks, copies and folds into its CRC in
 * chunks of 4,096 (and streams past the caches from DR_STREAM_MIN_N / 2 entries on), in
 * both layouts (one entry in 33 sent: the index lists; one in 3: the bitmap): the same
 * entries back at every length, at either alignment of the frame; a descent or an Inf
 * exactly at a chunk's edge is still seen. A tensor over 16M entries is not decoded (the
 * lists' largest would take 550 MB): its frame is read back by its sections. */
static void test_sparse_frames_in_chunks(void)
{
    const size_t lengths[] = {4095, 4096, 4097, 3 * 4096 + 5, DR_STREAM_MIN_N / 2 + 4099};
    const uint32_t spacings[] = {33, 3};
    size_t t, sp;
    for (sp = 0; sp < 2; sp++)
        for (t = 0; t < sizeof lengths / sizeof lengths[0]; t++) {
            const uint32_t spacing = spacings[sp];
            size_t r = lengths[t], numel = spacing * r + 2, j, len = 0, size = dr_sparse_raw_frame_size(numel, r);
            int decodes = numel <= ((size_t)16 << 20), bitmap = spacing == 3;
            uint32_t *idx = malloc(r * sizeof *idx);
            float *val = malloc(r * sizeof *val), *dense = calloc(decodes ? numel : 1, sizeof *dense);
            uint8_t *frame = malloc(size + 1);
            int finite = -1, shift;
            CHECK(idx != NULL && val != NULL && dense != NULL && frame != NULL);
            CHECK(dr_sparse_raw_layout(numel, r) == (bitmap ? DR_SPARSE_BITMAP : DR_SPARSE_LISTS));
            for (j = 0; j < r; j++) {
                idx[j] = (uint32_t)(spacing * j + 1);
                val[j] = (float)j * 0.5f - 7.0f;
            }
            for (shift = 0; shift < 2; shift++) {
                uint8_t *buf = frame + shift; /* the streamed copy's unaligned head */
                dr_frame f;
                CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, buf, size, &len));
                CHECK(len == size);
                CHECK_OK(dr_frame_parse(buf, len, &f)); /* the CRC, computed afresh over the frame */
                CHECK(memcmp(buf + f.section_off[1], val, 4 * r) == 0);
                if (bitmap) {
                    size_t ones = 0, right = 1, i;
                    for (i = 0; i < numel; i++) {
                        unsigned bit = (buf[f.section_off[0] + i / 8] >> (i % 8)) & 1u;
                        ones += bit;
                        right &= bit == (i % 3 == 1 && i < 3 * r);
                    }
                    CHECK(right && ones == r);
                } else {
                    CHECK(memcmp(buf + f.section_off[0], idx, 4 * r) == 0);
                }
                if (decodes) {
                    memset(dense, 0, numel * sizeof *dense);
                    CHECK_OK(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, numel, &finite));
                    CHECK(finite == 1 && dense[1] == -7.0f && dense[spacing * (r - 1) + 1] == val[r - 1] &&
                          dense[2] == 0.0f);
                }
            }
            /* A repeat at each edge of the first chunk, and at the end: refused. */
            for (j = 4095; j <= 4096 && j < r; j++) {
                idx[j] = idx[j - 1];
                CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, frame, size, &len), DR_E_ARG);
                idx[j] = (uint32_t)(spacing * j + 1);
            }
            idx[r - 1] = idx[r - 2];
            CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, frame, size, &len), DR_E_ARG);
            idx[r - 1] = (uint32_t)(numel);
            CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, frame, size, &len), DR_E_ARG);
            idx[r - 1] = (uint32_t)(spacing * (r - 1) + 1);
            if (!decodes) {
                free(idx);
                free(val);
                free(dense);
                free(frame);
                continue;
            }
            /* Infinity in the last value of the first chunk, then in the frame's last. */
            for (j = 4095; j < r; j = j == r - 1 ? r : r - 1) {
                float kept = val[j];
                val[j] = INFINITY;
                CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, frame, size, &len));
                finite = -1;
                CHECK_OK(dr_sparse_raw_decode(frame, len, DR_KIND_TOPK, dense, numel, &finite));
                CHECK(finite == 0);
                val[j] = kept;
            }
            /* A sealed frame with a descent across the first chunk's edge (the lists), or
             * one more bit set in the bitmap's second chunk: refused, dense untouched. */
            if (r > 4096) {
                CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, numel, idx, val, r, frame, size, &len));
                if (bitmap) { /* an unsent position in the second chunk, or mid-bitmap */
                    size_t at = (numel + 7) / 8 > 4101 ? 8 * 4101 : 4 * ((numel + 7) / 8);
                    at += (3 - at % 3) % 3;
                    frame[dr_frame_header_size(2) + at / 8] |= (uint8_t)(1u << (at % 8));
                } else
                    memcpy(frame + dr_frame_header_size(2) + 4 * 4096, frame + dr_frame_header_size(2) + 4 * 4095, 4);
                reseal_sparse_as(frame, len, DR_KIND_TOPK, numel, r, bitmap ? DR_SPARSE_BITMAP : DR_SPARSE_LISTS,
                                 bitmap ? (numel + 7) / 8 : 4 * r);
                dense[1] = 42.0f;
                CHECK_STATUS(dr_sparse_raw_decode(frame, len, DR_KIND_TOPK, dense, numel, NULL), DR_E_CORRUPT);
                CHECK_STATUS(dr_sparse_raw_decode_add(frame, len, DR_KIND_TOPK, dense, numel, NULL), DR_E_CORRUPT);
                CHECK(dense[1] == 42.0f);
            }
            free(idx);
            free(val);
            free(dense);
            free(frame);
        }
}

/* want[0..n) = fill, then val[j] at idx[j]: what a sparse frame's decoders write over
 * a tensor of `fill`. */
static void scattered(float *want, size_t n, float fill, const uint32_t *idx, const float *val, size_t r)
{
    size_t i;
    for (i = 0; i < n; i++)
        want[i] = fill;
    for (i = 0; i < r; i++)
        want[idx[i]] = val[i];
}

/* The bitmap layout's frame of 0.3 of n entries against its definition on the active
 * path: its bytes, the three decoders (+0.0 written where no bit is set, -0.0 and a NaN
 * left alone where the adding and the plain decoders have nothing to write), and each
 * forgery someone who knows the format could seal refused with dense untouched: one bit
 * more or fewer than the count, a bit past n, the lists' layout number on a bitmap, the
 * count of a frame with lists. The encoder refuses unordered indices, and an index past
 * numel before a smaller last one, wherever in the indices they come (the AVX-512
 * kernel takes 16 at a time). */
static void test_sparse_bitmap_frames(void)
{
    const size_t sizes[] = {1, 7, 9, 16, 17, 100, 1000, 70001};
    size_t t;
    for (t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        size_t n = sizes[t], r = 0, i, j, len = 0, bits = (n + 7) / 8;
        uint32_t *idx = malloc(n * sizeof *idx);
        float *val = malloc(n * sizeof *val), *dense = malloc(n * sizeof *dense), *want = malloc(n * sizeof *want);
        uint8_t *buf = malloc(dr_sparse_raw_size(n) + 8), *bitmap;
        int finite = -1, ok = 1;
        dr_frame f;
        CHECK(idx != NULL && val != NULL && dense != NULL && want != NULL && buf != NULL);
        for (i = 0; i < n; i++)
            if (i == 0 || dr_rng_uniform(77, i) < 0.3f) { /* position 0 always: n = 1 sends it */
                idx[r] = (uint32_t)i;
                val[r++] = test_uniform(78, i);
            }
        CHECK(dr_sparse_raw_layout(n, r) == DR_SPARSE_BITMAP);
        CHECK_OK(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, dr_sparse_raw_size(n), &len));
        CHECK(len == dr_sparse_raw_frame_size(n, r) && len == dr_frame_header_size(2) + bits + 4 * r + 4);
        CHECK_OK(dr_frame_parse(buf, len, &f));
        CHECK(f.params[0] == DR_SPARSE_BITMAP && f.count == r && f.section_len[0] == bits);
        bitmap = buf + f.section_off[0];
        for (i = 0, j = 0; i < 8 * bits; i++) {
            unsigned bit = (bitmap[i / 8] >> (i % 8)) & 1u, sent = j < r && idx[j] == i;
            ok &= bit == sent;
            j += sent;
        }
        CHECK(ok && memcmp(buf + f.section_off[1], val, 4 * r) == 0);
        /* The plain decoder over 2.0 everywhere, the dense one, the adding one over -0.0
         * and a NaN. */
        for (i = 0; i < n; i++)
            dense[i] = 2.0f;
        CHECK_OK(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, n, &finite));
        scattered(want, n, 2.0f, idx, val, r);
        CHECK(finite == 1 && memcmp(dense, want, n * sizeof *dense) == 0);
        CHECK_OK(dr_sparse_raw_decode_dense(buf, len, DR_KIND_THRESHOLD, dense, n, &finite));
        scattered(want, n, 0.0f, idx, val, r);
        CHECK(finite == 1 && memcmp(dense, want, n * sizeof *dense) == 0);
        for (i = 0; i < n; i++)
            dense[i] = want[i] = i % 5 == 3 ? NAN : -0.0f;
        for (j = 0; j < r; j++)
            want[idx[j]] = dense[idx[j]] + val[j];
        CHECK_OK(dr_sparse_raw_decode_add(buf, len, DR_KIND_THRESHOLD, dense, n, &finite));
        CHECK(memcmp(dense, want, n * sizeof *dense) == 0);
        /* Every byte changed, and every truncation: refused. */
        for (i = 0; i < len; i++) {
            buf[i] ^= 0x21;
            CHECK(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, n, NULL) < 0);
            buf[i] ^= 0x21;
        }
        for (i = 0; i + 1 < len; i += n > 100 ? 97 : 1)
            CHECK(dr_sparse_raw_decode(buf, i, DR_KIND_THRESHOLD, dense, n, NULL) < 0);
        /* Forgeries, sealed: each refused, dense untouched. */
        for (i = 0; i < n; i++)
            dense[i] = 5.0f;
        {
            size_t unset = 0;
            while (unset < n && ((bitmap[unset / 8] >> (unset % 8)) & 1u))
                unset++;
            if (unset < n) { /* one bit more than the count */
                bitmap[unset / 8] ^= (uint8_t)(1u << (unset % 8));
                reseal_sparse_as(buf, len, DR_KIND_THRESHOLD, n, r, DR_SPARSE_BITMAP, bits);
                CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_CORRUPT);
                CHECK_STATUS(dr_sparse_raw_decode_add(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_CORRUPT);
                bitmap[unset / 8] ^= (uint8_t)(1u << (unset % 8));
            }
            /* one fewer (position 0 is always sent) */
            bitmap[0] ^= 1u;
            reseal_sparse_as(buf, len, DR_KIND_THRESHOLD, n, r, DR_SPARSE_BITMAP, bits);
            CHECK_STATUS(dr_sparse_raw_decode_dense(buf, len, DR_KIND_THRESHOLD, dense, n, &finite), DR_E_CORRUPT);
            if (n % 8 != 0) { /* and a bit past n in its place: the count is right */
                bitmap[bits - 1] |= (uint8_t)(0x80u);
                reseal_sparse_as(buf, len, DR_KIND_THRESHOLD, n, r, DR_SPARSE_BITMAP, bits);
                CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_CORRUPT);
                CHECK_STATUS(dr_sparse_raw_decode_add(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_CORRUPT);
                bitmap[bits - 1] &= (uint8_t)0x7fu;
            }
            bitmap[0] ^= 1u;
            reseal_sparse_as(buf, len, DR_KIND_THRESHOLD, n, r, DR_SPARSE_BITMAP, bits);
            CHECK_OK(dr_frame_parse(buf, len, &f));
            /* The lists' number on the bitmap's sections. */
            reseal_sparse_as(buf, len, DR_KIND_THRESHOLD, n, r, DR_SPARSE_LISTS, bits);
            CHECK_STATUS(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_FRAME_FIELD);
            CHECK_STATUS(dr_sparse_raw_decode_add(buf, len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_FRAME_FIELD);
        }
        {
            /* The same entries as index lists, where the bitmap is the layout of the count. */
            size_t lists_len = dr_frame_header_size(2) + 8 * r + 4;
            uint8_t *lists = malloc(lists_len);
            CHECK(lists != NULL);
            memcpy(lists + dr_frame_header_size(2), idx, 4 * r);
            memcpy(lists + dr_frame_header_size(2) + 4 * r, val, 4 * r);
            reseal_sparse(lists, lists_len, DR_KIND_THRESHOLD, n, r);
            CHECK_STATUS(dr_sparse_raw_decode(lists, lists_len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_FRAME_FIELD);
            CHECK_STATUS(dr_sparse_raw_decode_add(lists, lists_len, DR_KIND_THRESHOLD, dense, n, NULL), DR_E_FRAME_FIELD);
            free(lists);
        }
        for (i = 0, ok = 1; i < n; i++)
            ok &= dense[i] == 5.0f;
        CHECK(ok);
        /* The encoder: a repeat, a descent, an index past numel before the last. */
        if (r >= 3) {
            for (j = 1; j < r; j += r > 40 ? 13 : 1) {
                uint32_t kept = idx[j];
                idx[j] = idx[j - 1];
                CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, dr_sparse_raw_size(n), &len),
                             DR_E_ARG);
                idx[j] = kept;
            }
            for (j = 0; j + 1 < r; j += r > 40 ? 13 : 1) {
                uint32_t kept = idx[j];
                idx[j] = (uint32_t)n + 1000u;
                CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, dr_sparse_raw_size(n), &len),
                             DR_E_ARG);
                idx[j] = kept;
            }
        }
        if (r > 32) { /* a whole vector of ascending indices far past numel, then a descent */
            uint32_t kept[16];
            memcpy(kept, idx + 16, sizeof kept);
            for (j = 0; j < 16; j++)
                idx[16 + j] = 0x40000000u + (uint32_t)j;
            CHECK_STATUS(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, dr_sparse_raw_size(n), &len),
                         DR_E_ARG);
            memcpy(idx + 16, kept, sizeof kept);
        }
        free(idx);
        free(val);
        free(dense);
        free(want);
        free(buf);
    }
}

static void test_empty_frame(void)
{
    uint8_t buf[64];
    size_t len = 0;
    float dense[4] = {1, 2, 3, 4};
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, 4, NULL, NULL, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_sparse_raw_decode(buf, len, DR_KIND_THRESHOLD, dense, 4, NULL));
    CHECK(dense[0] == 1.0f);
}

static void test_nonfinite_marker(void)
{
    uint8_t buf[DR_FRAME_NONFINITE_SIZE + 8];
    size_t len = 0;
    int marker = -1;
    float dense[4];
    dr_frame f;
    CHECK_OK(dr_frame_nonfinite(DR_KIND_TOPK, 4, buf, sizeof buf, &len));
    CHECK(len == DR_FRAME_NONFINITE_SIZE);
    CHECK_OK(dr_frame_parse(buf, len, &f));
    CHECK(f.flags == DR_FRAME_FLAG_NONFINITE && f.nsections == 0 && f.count == 0 && f.numel == 4);
    CHECK_OK(dr_frame_is_nonfinite(buf, len, DR_KIND_TOPK, 4, &marker));
    CHECK(marker == 1);
    CHECK_STATUS(dr_frame_is_nonfinite(buf, len, DR_KIND_THRESHOLD, 4, &marker), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_frame_is_nonfinite(buf, len, DR_KIND_TOPK, 5, &marker), DR_E_FRAME_FIELD);
    /* A codec's decoder refuses a marker: it carries no sections to decode. */
    CHECK(dr_sparse_raw_decode(buf, len, DR_KIND_TOPK, dense, 4, NULL) != DR_OK);
    /* Any other frame is not a marker, and a flipped flag breaks the CRC. */
    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, 0, 4, NULL, NULL, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_frame_is_nonfinite(buf, len, DR_KIND_TOPK, 4, &marker));
    CHECK(marker == 0);
    buf[10] = DR_FRAME_FLAG_NONFINITE;
    CHECK_STATUS(dr_frame_is_nonfinite(buf, len, DR_KIND_TOPK, 4, &marker), DR_E_FRAME_CHECKSUM);
    buf[10] = 0x80; /* an unknown flag */
    CHECK_STATUS(dr_frame_parse(buf, len, &f), DR_E_FRAME_FIELD);
    CHECK_STATUS(dr_frame_nonfinite(DR_KIND_COUNT_, 4, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_frame_nonfinite(DR_KIND_TOPK, 4, buf, DR_FRAME_NONFINITE_SIZE - 1, &len),
                 DR_E_DST_TOO_SMALL);
}

static void test_bytes_same(void)
{
    uint8_t a[300], b[300];
    size_t i;
    for (i = 0; i < sizeof a; i++)
        a[i] = b[i] = (uint8_t)(i * 7u + 3u);
    CHECK(dr_bytes_same(a, sizeof a, b, sizeof b) == 1);
    CHECK(dr_bytes_same(a, sizeof a, a, sizeof a) == 1);       /* the same memory */
    CHECK(dr_bytes_same(a, sizeof a, b, sizeof b - 1) == 0);   /* a prefix is not the same */
    CHECK(dr_bytes_same(NULL, 0, b, 0) == 1);
    b[0] ^= 1u;
    CHECK(dr_bytes_same(a, sizeof a, b, sizeof b) == 0);
    b[0] ^= 1u;
    b[sizeof b - 1] ^= 0x80u;                                   /* the last byte differs */
    CHECK(dr_bytes_same(a, sizeof a, b, sizeof b) == 0);
}

static void test_dr_all_finite(void)
{
    float x[37];
    size_t i;
    for (i = 0; i < 37; i++)
        x[i] = (float)i - 18.0f;
    CHECK(dr_all_finite(x, 37) == 1);
    CHECK(dr_all_finite(NULL, 0) == 1);
    CHECK(dr_all_finite(NULL, 3) == DR_E_ARG);
    x[36] = INFINITY;
    CHECK(dr_all_finite(x, 37) == 0);
    CHECK(dr_all_finite(x, 36) == 1);
    x[0] = -NAN;
    CHECK(dr_all_finite(x, 36) == 0);
    x[0] = 3.4028235e38f; /* the largest float is finite */
    CHECK(dr_all_finite(x, 36) == 1);
}

static int cmp_desc_abs(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return (x < y) - (x > y);
}

/* The top k of x[0..n) by a sort (no NaN in x): the entries above the k-th magnitude and
 * then its ties from the lowest index, in ascending index order. */
static void topk_by_sort(const float *x, size_t n, size_t k, float *sorted, uint32_t *want)
{
    float kth;
    size_t i, above = 0, out = 0;
    memcpy(sorted, x, n * sizeof *x);
    qsort(sorted, n, sizeof *x, cmp_desc_abs);
    kth = fabsf(sorted[k - 1]);
    for (i = 0; i < n; i++)
        above += fabsf(x[i]) > kth;
    for (i = 0; i < n && out < k; i++)
        if (fabsf(x[i]) > kth || (fabsf(x[i]) == kth && above++ < k))
            want[out++] = (uint32_t)i;
}

/* dr_topk, dr_topk_select and dr_topk_sparsify against a sort, on sizes on both sides of
 * the exact path's bound (8192) and of the lower levels' compact selection (4096), with
 * magnitudes spread over a few binades (shape 0) and integers with many ties (shape 1). */
static void test_topk_matches_sort(void)
{
    const size_t sizes[] = {10007, 4097, 4096, 1000, 33, 1};
    size_t ks[] = {1, 2, 10, 100, 300, 5000, 10007};
    float *x = malloc(sizes[0] * sizeof *x), *sorted = malloc(sizes[0] * sizeof *x);
    float *val = malloc(sizes[0] * sizeof *val);
    uint32_t *want = malloc(sizes[0] * sizeof *want), *idx = malloc(sizes[0] * sizeof *idx);
    void *work = malloc(dr_topk_workspace_size(sizes[0], sizes[0]));
    size_t t, i, z;
    int shape;
    for (shape = 0; shape < 2; shape++) {
        for (z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            size_t n = sizes[z];
            for (i = 0; i < n; i++)
                x[i] = shape == 0 ? test_uniform(7, i) * (float)(1 + i % 13) : (float)((int)(test_uniform(8, i) * 6.0f));
            for (t = 0; t < sizeof ks / sizeof ks[0]; t++) {
                size_t k = ks[t] < n ? ks[t] : n;
                int values_ok = 1;
                topk_by_sort(x, n, k, sorted, want);
                CHECK_OK(dr_topk(x, n, k, idx));
                CHECK(memcmp(idx, want, k * sizeof *idx) == 0);
                CHECK_OK(dr_topk_select(x, n, k, idx, work));
                CHECK(memcmp(idx, want, k * sizeof *idx) == 0);
                CHECK_OK(dr_topk_sparsify(x, n, k, idx, val, work));
                CHECK(memcmp(idx, want, k * sizeof *idx) == 0);
                for (i = 0; i < k; i++)
                    values_ok &= val[i] == x[want[i]];
                CHECK(values_ok);
            }
        }
    }
    free(x);
    free(sorted);
    free(val);
    free(want);
    free(idx);
    free(work);
}

static void test_topk_ties_take_lowest(void)
{
    float x[8] = {1, 3, 3, 3, 0, -3, 2, 3};
    uint32_t idx[3];
    CHECK_OK(dr_topk(x, 8, 3, idx));
    CHECK(idx[0] == 1 && idx[1] == 2 && idx[2] == 3);
    CHECK_STATUS(dr_topk(x, 8, 9, idx), DR_E_ARG);
}

static void test_topk_select_equals_topk(void)
{
    /* From n = 8192 the sampled path runs (its sample an eighth of x below 131072), with
     * room for every entry below 65536 and for k = 90000 at 200003; the smaller sizes take
     * the exact top level instead (exact_select), down to a single entry and partial
     * vectors. Several distributions, ties and NaNs included.
     * With the integers (shape 2), k = 30000 takes every 7 and some of the 6s: the ties
     * run out partway through a vector of candidates, and 2009 ends off a vector. Shape
     * 4's magnitudes spread evenly over about 128 binades, so the candidates span more
     * top-level buckets than the vector histogram keeps in registers; shape 5's are near
     * the largest floats, with infinities among them, where that window would run past
     * the last bucket and is not used. Shape 6 is zeros, NaNs and denormals, whose top
     * level is 0 (the k-th key's ties may be NaNs there, which the candidates' sweep does
     * not take), with a few normal numbers above them. */
    const size_t sizes[] = {200003, 65535, 8192, 8191, 1000, 33, 16, 1};
    size_t ks[] = {1, 17, 2000, 2009, 20000, 30000, 90000};
    float *x = malloc(sizes[0] * sizeof *x);
    uint32_t *a = malloc(sizes[0] * sizeof *a), *b = malloc(sizes[0] * sizeof *b);
    void *work;
    size_t t, i, z;
    int shape;
    for (shape = 0; shape < 7; shape++) {
        for (z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            size_t n = sizes[z];
            for (i = 0; i < n; i++) {
                float u = test_uniform(21 + (uint64_t)shape, i);
                x[i] = shape == 0 ? u : shape == 1 ? u * u * u : shape == 2 ? (float)((int)(u * 8.0f)) : 0.0f;
                if (shape == 4)
                    x[i] = ldexpf(u < 0.5f ? -1.0f - u : u, -(int)(64.0f * test_uniform(22, i)));
                if (shape == 5)
                    x[i] = i % 1009 == 0 ? (i % 2 ? INFINITY : -INFINITY) : ldexpf(u, 127);
                if (shape == 6)
                    x[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? ldexpf(u, -130) : i % 101 == 2 ? u : 0.0f;
            }
            if (shape == 3) /* mostly zeros with a few values and NaNs */
                for (i = 0; i < n; i += 97)
                    x[i] = (i % 3 == 0) ? NAN : test_uniform(5, i);
            for (t = 0; t < sizeof ks / sizeof ks[0]; t++) {
                size_t k = ks[t] < n ? ks[t] : n - n / 3;
                work = malloc(dr_topk_workspace_size(n, k));
                CHECK_OK(dr_topk(x, n, k, a));
                CHECK_OK(dr_topk_select(x, n, k, b, work));
                CHECK(memcmp(a, b, k * sizeof *a) == 0);
                free(work);
            }
        }
    }
    free(x);
    free(a);
    free(b);
}

/* dr_topk_sparsify: dr_topk's indices with their values for a finite x, and an Inf or a
 * NaN refused wherever it lies: first, in the middle, in the last partial vector, in the
 * second thread's part, on the sampled path (with room for every entry at 20000) and on
 * the exact top level's (a small tensor), for k = 0 too. With 1 and 2 threads (the split needs 2 * DR_THREADS_MIN_NUMEL
 * entries); ctest runs this file under each SIMD cap. */
static void test_topk_sparsify(void)
{
    const size_t n = 2 * DR_THREADS_MIN_NUMEL + 1003, middle = 20000, small = 5000;
    const size_t ks[] = {0, 1, 2009, 21000, n / 2};
    const size_t spots[] = {0, n / 3, n / 2 + 17, n - 2, n - 1};
    static const char *const counts[] = {"1", "2"};
    float *x = malloc(n * sizeof *x), *val = malloc(n * sizeof *val);
    uint32_t *want = malloc(n * sizeof *want), *idx = malloc(n * sizeof *idx);
    void *work = malloc(dr_topk_workspace_size(n, n / 2));
    size_t i, t, c, s;
    for (i = 0; i < n; i++)
        x[i] = (test_uniform(31, i) - 0.5f) * (float)(1 + i % 7);
    for (c = 0; c < 2; c++) {
        setenv("DEEPREDUCE_THREADS", counts[c], 1);
        for (t = 0; t < sizeof ks / sizeof ks[0]; t++) {
            size_t sizes[3] = {n, middle, small}, z;
            for (z = 0; z < 3; z++) {
                size_t m = sizes[z], k = ks[t] < m ? ks[t] : m / 2, j;
                int same = 1;
                CHECK_OK(dr_topk(x, m, k, want));
                memset(val, 0x5a, k * sizeof *val);
                CHECK_OK(dr_topk_sparsify(x, m, k, idx, val, work));
                for (j = 0; j < k; j++)
                    same &= idx[j] == want[j] && memcmp(&val[j], &x[want[j]], sizeof *val) == 0;
                CHECK(same);
                for (s = 0; s < sizeof spots / sizeof spots[0]; s++) {
                    size_t at = spots[s] < m ? spots[s] : m - 1 - s;
                    float saved = x[at];
                    x[at] = s % 2 ? NAN : -INFINITY;
                    CHECK_STATUS(dr_topk_sparsify(x, m, k, idx, val, work), DR_E_NUMERIC);
                    x[at] = saved;
                }
            }
        }
    }
    unsetenv("DEEPREDUCE_THREADS");
    CHECK_STATUS(dr_topk_sparsify(x, n, 1, idx, NULL, work), DR_E_ARG);
    CHECK_STATUS(dr_topk_sparsify(x, n, n + 1, idx, val, work), DR_E_ARG);
    CHECK_STATUS(dr_topk_sparsify(NULL, n, 0, idx, val, work), DR_E_ARG);
    free(x);
    free(val);
    free(want);
    free(idx);
    free(work);
}

/* dr_topk_residual_encode against the four calls it stands in for (dr_axpby or a copy,
 * dr_topk_sparsify, dr_sparse_raw_encode, dr_zero_at): the same frame bytes and the same
 * residual bits, with and without a residual, with kept the residual itself, for k = 0
 * and an empty tensor, on the exact top level (small), the sampled path and the split
 * over 2 threads. Then its refusals: a compensation that overflows to Inf or meets a NaN
 * (DR_E_NUMERIC), and bad arguments and a short buffer, which write nothing. */
static void test_topk_residual_encode(void)
{
    const size_t n = 2 * DR_THREADS_MIN_NUMEL + 1003;
    const size_t sizes[] = {0, 1000, 20000, n};
    const size_t ratios[] = {0, 1, 10, 300}; /* k = n * ratio / 1000 */
    static const char *const counts[] = {"1", "2"};
    float *grad = malloc(n * sizeof *grad), *res = malloc(n * sizeof *res);
    float *kept = malloc(n * sizeof *kept), *want_kept = malloc(n * sizeof *want_kept);
    float *val = malloc(n * sizeof *val);
    uint32_t *idx = malloc(n * sizeof *idx);
    size_t cap = dr_sparse_raw_size(n), got_len, want_len, i, z, r, c, with;
    uint8_t *buf = malloc(cap), *want = malloc(cap);
    void *work = malloc(dr_topk_residual_workspace_size(n, n * 300 / 1000));
    void *work_calls = malloc(dr_topk_workspace_size(n, n * 300 / 1000));
    for (i = 0; i < n; i++) {
        grad[i] = (test_uniform(41, i) - 0.5f) * (float)(1 + i % 5);
        res[i] = (test_uniform(42, i) - 0.5f) * 0.25f;
    }
    for (c = 0; c < 2; c++) {
        setenv("DEEPREDUCE_THREADS", counts[c], 1);
        for (z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (r = 0; r < sizeof ratios / sizeof ratios[0]; r++)
                for (with = 0; with < 6; with++) { /* no residual, a residual, kept == residual; gamma 1, 0.5 */
                    size_t m = sizes[z], k = m * ratios[r] / 1000;
                    const float *residual = with % 3 == 0 ? NULL : res;
                    float *into = kept, gamma = with < 3 ? 1.0f : 0.5f;
                    if (with == 0)
                        memcpy(want_kept, grad, m * sizeof *want_kept);
                    else if (with == 3) /* the first step of a memory with gamma: gamma * grad */
                        CHECK_OK(dr_axpby(0.0f, grad, gamma, grad, want_kept, m));
                    else
                        CHECK_OK(dr_axpby(0.9f, res, gamma, grad, want_kept, m));
                    CHECK_OK(dr_topk_sparsify(want_kept, m, k, idx, val, work_calls));
                    CHECK_OK(dr_sparse_raw_encode(DR_KIND_TOPK, DR_DTYPE_FLOAT32, m, idx, val, k, want, cap,
                                                  &want_len));
                    CHECK_OK(dr_zero_at(idx, k, want_kept, m));
                    if (with % 3 == 2) {
                        memcpy(kept, res, m * sizeof *kept);
                        residual = into = kept;
                    }
                    CHECK_OK(dr_topk_residual_encode(residual, 0.9f, grad, gamma, m, k, into, DR_KIND_TOPK, buf,
                                                     cap, &got_len, work));
                    CHECK(got_len == want_len && memcmp(buf, want, want_len) == 0);
                    CHECK(memcmp(into, want_kept, m * sizeof *into) == 0);
                }
    }
    unsetenv("DEEPREDUCE_THREADS");
    /* A residual that overflows the compensation, and a NaN in the gradient. */
    res[7] = 3e38f;
    CHECK_STATUS(dr_topk_residual_encode(res, 2.0f, grad, 1.0f, 1000, 10, kept, DR_KIND_TOPK, buf, cap,
                                         &got_len, work), DR_E_NUMERIC);
    res[7] = 0.0f;
    grad[999] = NAN;
    CHECK_STATUS(dr_topk_residual_encode(NULL, 1.0f, grad, 1.0f, 1000, 0, kept, DR_KIND_TOPK, buf, cap,
                                         &got_len, work), DR_E_NUMERIC);
    grad[999] = 1.0f;
    /* Refusals that leave kept and buf as they were. */
    memset(kept, 0x5a, 1000 * sizeof *kept);
    memset(buf, 0x5a, cap);
    CHECK_STATUS(dr_topk_residual_encode(res, 1.0f, grad, 1.0f, 1000, 1001, kept, DR_KIND_TOPK, buf, cap,
                                         &got_len, work), DR_E_ARG);
    CHECK_STATUS(dr_topk_residual_encode(res, 1.0f, grad, 1.0f, 1000, 10, kept, DR_KIND_COUNT_, buf, cap,
                                         &got_len, work), DR_E_ARG);
    CHECK_STATUS(dr_topk_residual_encode(res, 1.0f, NULL, 1.0f, 1000, 10, kept, DR_KIND_TOPK, buf, cap,
                                         &got_len, work), DR_E_ARG);
    CHECK_STATUS(dr_topk_residual_encode(res, 1.0f, grad, 1.0f, 1000, 10, kept, DR_KIND_TOPK, buf, cap,
                                         &got_len, NULL), DR_E_ARG);
    CHECK_STATUS(dr_topk_residual_encode(res, 1.0f, grad, 1.0f, 1000, 10, kept, DR_KIND_TOPK, buf,
                                         dr_sparse_raw_size(10) - 1, &got_len, work), DR_E_DST_TOO_SMALL);
    {
        const uint8_t *bytes = (const uint8_t *)kept;
        int untouched = 1;
        for (i = 0; i < 1000 * sizeof *kept; i++)
            untouched &= bytes[i] == 0x5a;
        for (i = 0; i < cap; i++)
            untouched &= buf[i] == 0x5a;
        CHECK(untouched);
    }
    free(grad);
    free(res);
    free(kept);
    free(want_kept);
    free(val);
    free(idx);
    free(buf);
    free(want);
    free(work);
    free(work_calls);
}

/* Tensors of mostly zeros (signed) on the sampled path, whose sample's k-th largest
 * magnitude is zero: the sweep then takes every nonzero entry. Fewer of them than k (none,
 * a third of k, one short of k) make the answer those and the first zeros, exactly
 * k is all of them, and more (three times k) is a radix select among them; each with 1, 2
 * and 3 threads, as dr_topk_sparsify (indices and values) and as dr_topk_select with NaNs
 * among the zeros (they rank as zero, so some are taken as ties). */
static void test_topk_mostly_zeros(void)
{
    const size_t n = 3 * DR_THREADS_MIN_NUMEL + 1003, k = n / 100;
    const size_t nonzero[] = {0, k / 3, k - 1, k, 3 * k};
    static const char *const counts[] = {"1", "2", "3"};
    float *x = malloc(n * sizeof *x), *val = malloc(k * sizeof *val);
    uint32_t *want = malloc(k * sizeof *want), *idx = malloc(k * sizeof *idx);
    void *work = malloc(dr_topk_workspace_size(n, k));
    size_t d, c, i, j;
    CHECK(x != NULL && val != NULL && want != NULL && idx != NULL && work != NULL);
    for (d = 0; d < sizeof nonzero / sizeof nonzero[0]; d++) {
        int nans;
        for (i = 0; i < n; i++)
            x[i] = i % 5 == 2 ? -0.0f : 0.0f;
        for (j = 0; j < nonzero[d]; j++) /* spread over x, every magnitude nonzero */
            x[(j * 7919u + 13u) % n] = (test_uniform(41, j) + 0.01f) * (j % 2 ? -1.0f : 1.0f);
        for (nans = 0; nans < 2; nans++) {
            if (nans)
                for (i = 1; i < n; i += 1009)
                    x[i] = x[i] == 0.0f ? NAN : x[i];
            CHECK_OK(dr_topk(x, n, k, want));
            for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                int same = 1;
                setenv("DEEPREDUCE_THREADS", counts[c], 1);
                memset(idx, 0xff, k * sizeof *idx);
                CHECK_OK(dr_topk_select(x, n, k, idx, work));
                CHECK(memcmp(idx, want, k * sizeof *idx) == 0);
                if (nans) {
                    CHECK_STATUS(dr_topk_sparsify(x, n, k, idx, val, work), DR_E_NUMERIC);
                    continue;
                }
                memset(val, 0x5a, k * sizeof *val);
                CHECK_OK(dr_topk_sparsify(x, n, k, idx, val, work));
                for (j = 0; j < k; j++)
                    same &= idx[j] == want[j] && memcmp(&val[j], &x[want[j]], sizeof *val) == 0;
                CHECK(same);
            }
        }
    }
    unsetenv("DEEPREDUCE_THREADS");
    free(x);
    free(val);
    free(want);
    free(idx);
    free(work);
}

/* A flattened model's gradient: layers of 2,000 to 62,000 entries whose scales span four
 * decades, each cut into channels (32, 64 or 128 entries, by layer) whose own factor
 * spans e^-3..e^3, so that large magnitudes come in clusters longer than a sample run. */
static void layered_gradient(float *x, size_t n, uint64_t seed)
{
    size_t i = 0, layer = 0;
    static const size_t channel_sizes[3] = {32, 64, 128};
    while (i < n) {
        size_t len = 2000 + (size_t)(30000.0f * (1.0f + test_uniform(seed, 3 * layer)));
        float scale = powf(10.0f, -2.0f + 2.0f * test_uniform(seed, 3 * layer + 1));
        size_t channel = channel_sizes[layer % 3], end = i + len < n ? i + len : n, j;
        float factor = 1.0f;
        for (j = i; j < end; j++) {
            if ((j - i) % channel == 0)
                factor = expf(3.0f * test_uniform(seed + 1, j));
            x[j] = scale * factor * test_uniform(seed + 2, j);
        }
        i = end;
        layer++;
    }
}

/* The sampled threshold of dr_topk_select keeps at least k and at most its room of
 * candidates on layered, clustered gradients, so that the fallback to the full select
 * stays rare: at most one miss in 60 tensors (40 at 1%, 20 at 0.1%). A margin of three
 * binomial deviations, blind to the clusters, misses about one tensor in 20 at 1%. */
static void test_topk_estimate_misses_rarely(void)
{
    const size_t n = 300007;
    float *x = malloc(n * sizeof *x), t = -1.0f;
    void *work = malloc(dr_topk_workspace_size(n, n / 100));
    size_t trial, count, misses = 0;
    for (trial = 0; trial < 60; trial++) {
        size_t k = trial % 3 == 2 ? n / 1000 : n / 100;
        layered_gradient(x, n, 1000 + 7 * (uint64_t)trial);
        CHECK_OK(dr_topk_threshold_estimate(x, n, k, work, &t));
        CHECK_OK(dr_threshold_count(x, n, t, &count));
        misses += count < k || count > 2 * k + 65536;
    }
    CHECK(misses <= 1);
    /* A tensor of a few layers, whose sample is an eighth of it (128 runs): room for every
     * entry, so only fewer than k candidates miss; at GRACE's default 30% and at 1%. */
    misses = 0;
    for (trial = 0; trial < 60; trial++) {
        size_t middle = 20011, k = trial % 2 ? middle / 100 : middle * 3 / 10;
        layered_gradient(x, middle, 5000 + 7 * (uint64_t)trial);
        CHECK_OK(dr_topk_threshold_estimate(x, middle, k, work, &t));
        CHECK_OK(dr_threshold_count(x, middle, t, &count));
        misses += count < k;
    }
    CHECK(misses <= 1);
    /* Below the sampled path's size there is no estimate; bad arguments are refused. */
    CHECK_OK(dr_topk_threshold_estimate(x, 1000, 10, work, &t));
    CHECK(t == 0.0f);
    CHECK_STATUS(dr_topk_threshold_estimate(x, n, n + 1, work, &t), DR_E_ARG);
    CHECK_STATUS(dr_topk_threshold_estimate(x, n, 10, NULL, &t), DR_E_ARG);
    CHECK_STATUS(dr_topk_threshold_estimate(x, n, 10, work, NULL), DR_E_ARG);
    free(x);
    free(work);
}

/* With DEEPREDUCE_THREADS unset, OMP_NUM_THREADS (a count, or a count and nested
 * levels) caps the thread count, as it does torch's; anything else there is ignored, and
 * DEEPREDUCE_THREADS, when set, wins. */
static void test_openmp_threads(void)
{
    const char *saved = getenv("OMP_NUM_THREADS");
    char *keep = saved != NULL ? malloc(strlen(saved) + 1) : NULL;
    int cores, built;
    if (keep != NULL)
        strcpy(keep, saved);
    unsetenv("OMP_NUM_THREADS");
    cores = dr_thread_count();
    setenv("OMP_NUM_THREADS", "1", 1);
    CHECK(dr_thread_count() == 1);
    setenv("OMP_NUM_THREADS", "2", 1);
    CHECK(dr_thread_count() == (cores < 2 ? cores : 2));
    setenv("OMP_NUM_THREADS", "1,4", 1);
    CHECK(dr_thread_count() == 1);
    setenv("OMP_NUM_THREADS", " 1 \t", 1);
    CHECK(dr_thread_count() == 1);
    setenv("OMP_NUM_THREADS", "64", 1);
    CHECK(dr_thread_count() == cores);
    setenv("OMP_NUM_THREADS", "0", 1);
    CHECK(dr_thread_count() == cores);
    setenv("OMP_NUM_THREADS", "two", 1);
    CHECK(dr_thread_count() == cores);
    setenv("OMP_NUM_THREADS", "1", 1);
    built = threads_built();
    setenv("DEEPREDUCE_THREADS", "3", 1);
    CHECK(dr_thread_count() == (built ? 3 : 1));
    unsetenv("DEEPREDUCE_THREADS");
    if (keep != NULL)
        setenv("OMP_NUM_THREADS", keep, 1);
    else
        unsetenv("OMP_NUM_THREADS");
    free(keep);
}

/* dr_topk_select split over DEEPREDUCE_THREADS (one thread per DR_THREADS_MIN_NUMEL
 * entries): the same indices as dr_topk for every thread count, with candidates spread
 * over x; bunched in its last eighth, where they overflow that part's share of the
 * candidate room at 3 and 5 threads and the sweep is redone on one thread; and mostly
 * zeros with a few values and NaNs, whose zero threshold ends the split after its sample
 * for the full select. */
static void test_topk_select_threads(void)
{
    const size_t n = 5 * DR_THREADS_MIN_NUMEL + 4099, k = n / 100;
    static const char *const counts[] = {"1", "2", "3", "5"};
    float *x = malloc(n * sizeof *x);
    uint32_t *a = malloc(k * sizeof *a), *b = malloc(k * sizeof *b);
    void *work = malloc(dr_topk_workspace_size(n, k));
    size_t t, i;
    int shape;
    for (shape = 0; shape < 3; shape++) {
        for (i = 0; i < n; i++) {
            float u = test_uniform(31 + (uint64_t)shape, i) - 0.5f;
            x[i] = shape == 2 ? (i % 997 == 0 ? (i % 3 == 0 ? NAN : u) : 0.0f) : shape == 1 && i < n - n / 8 ? u * 1e-3f : u;
        }
        CHECK_OK(dr_topk(x, n, k, a));
        for (t = 0; t < sizeof counts / sizeof counts[0]; t++) {
            setenv("DEEPREDUCE_THREADS", counts[t], 1);
            memset(b, 0xff, k * sizeof *b);
            CHECK_OK(dr_topk_select(x, n, k, b, work));
            CHECK(memcmp(a, b, k * sizeof *a) == 0);
        }
    }
    unsetenv("DEEPREDUCE_THREADS");
    CHECK(dr_thread_count() >= 1 && dr_thread_count() <= DR_DEFAULT_THREADS_CAP);
    test_openmp_threads();
    free(x);
    free(a);
    free(b);
    free(work);
}

static void test_threshold(void)
{
    float x[11] = {0.5f, -0.01f, 0.0099f, 2.0f, -3.0f, 0.01f, NAN, INFINITY, -0.0f, 0.02f, 0.001f};
    uint32_t idx[11];
    size_t c = 0;
    CHECK_OK(dr_threshold_count(x, 11, 0.01f, &c));
    CHECK(c == 7);
    CHECK_OK(dr_threshold_select(x, 11, 0.01f, idx, 11, &c));
    CHECK(c == 7 && idx[0] == 0 && idx[1] == 1 && idx[2] == 3 && idx[6] == 9);
    CHECK_STATUS(dr_threshold_select(x, 11, 0.01f, idx, 3, &c), DR_E_DST_TOO_SMALL);
    CHECK_OK(dr_threshold_count(x, 11, 1e9f, &c));
    CHECK(c == 1); /* only +inf */
    CHECK_STATUS(dr_threshold_count(x, 11, -1.0f, &c), DR_E_ARG);
}

static void test_threshold_long_matches_scalar_rule(void)
{
    const size_t n = 4099;
    float *x = malloc(n * sizeof *x);
    uint32_t *idx = malloc(n * sizeof *idx);
    size_t i, c = 0, j = 0;
    int ok = 1;
    /* NaNs, infinities and entries exactly at the threshold among them, where the
     * vector paths (16 or 8 at a time) see them, not only the scalar tail */
    for (i = 0; i < n; i++) {
        x[i] = test_uniform(3, i);
        if (i % 37 == 5)
            x[i] = NAN;
        if (i % 41 == 7)
            x[i] = i % 2 ? INFINITY : -INFINITY;
        if (i % 43 == 9)
            x[i] = i % 2 ? 0.9f : -0.9f;
    }
    CHECK_OK(dr_threshold_select(x, n, 0.9f, idx, n, &c));
    for (i = 0; i < n; i++)
        if (fabsf(x[i]) >= 0.9f)
            ok &= j < c && idx[j++] == i;
    CHECK(ok && j == c);
    /* Room for exactly the count, or less: one sweep writes the first `cap` indices, no
     * more, and counts them all. */
    {
        uint32_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        size_t caps[5], t, all = c;
        caps[0] = all;
        caps[1] = all - 1;
        caps[2] = all / 2 + 3;
        caps[3] = 5;
        caps[4] = 0;
        memcpy(want, idx, all * sizeof *want);
        for (t = 0; t < 5; t++) {
            memset(got, 0xab, n * sizeof *got);
            c = 0;
            if (t == 0)
                CHECK_OK(dr_threshold_select(x, n, 0.9f, got, caps[t], &c));
            else
                CHECK_STATUS(dr_threshold_select(x, n, 0.9f, got, caps[t], &c), DR_E_DST_TOO_SMALL);
            CHECK(c == all);
            CHECK(memcmp(got, want, caps[t] * sizeof *got) == 0 && got[caps[t]] == 0xabababab);
        }
        free(want);
        free(got);
    }
    free(x);
    free(idx);
}

/* dr_threshold_encode against the two calls it stands for (dr_threshold_sparsify, then
 * dr_sparse_raw_encode): the same bytes on every SIMD path, for tensors whose ends fall
 * inside and between bitmap bytes, vectors and the sweep's blocks, selections that take
 * the bitmap, the lists, or both ends of the line between them (one entry in 32), all
 * or none; then the room it asks for, and its refusals. */
static void test_threshold_encode(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 17, 100, 2047, 2048, 2049, 4097, 70001};
    /* |x| is uniform on [0, 1): t = 1 - d selects a share d of x. */
    static const float shares[] = {0.0f, 0.01f, 0.031f, 0.033f, 0.2f, 0.97f, 1.0f};
    static const char *paths[] = {"scalar", "avx2", "avx512"};
    const size_t most = 70001, room = dr_sparse_raw_size(70001) + 70001 / 8 + 64;
    float *x = malloc(most * sizeof *x), *val = malloc(most * sizeof *val), *kept = malloc(most * sizeof *kept);
    float *zeroed = malloc(most * sizeof *zeroed);
    uint32_t *idx = malloc(most * sizeof *idx);
    uint8_t *want = malloc(room), *got = malloc(room);
    size_t s, d, p, i, c, count, want_len, got_len;
    int same = 1;
    for (i = 0; i < most; i++)
        x[i] = (test_uniform(41, i) - 0.5f) * 2.0f;
    for (p = 0; p < 3; p++) {
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        for (s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (d = 0; d < sizeof shares / sizeof *shares; d++) {
                size_t n = sizes[s];
                float t = 1.0f - shares[d];
                CHECK_OK(dr_threshold_sparsify(x, n, t, idx, val, n, &c));
                CHECK_OK(dr_sparse_raw_encode(DR_KIND_THRESHOLD, DR_DTYPE_FLOAT32, n, idx, val, c, want, room,
                                              &want_len));
                memset(got, 0xa5, room);
                CHECK_OK(dr_threshold_encode(DR_KIND_THRESHOLD, x, n, t, got, room, &got_len, &count));
                same &= got_len == want_len && count == c && memcmp(got, want, want_len) == 0;
                /* Exactly the frame's size is room enough, a byte less is not. */
                CHECK_OK(dr_threshold_encode(DR_KIND_THRESHOLD, x, n, t, got, want_len, &got_len, &count));
                same &= got_len == want_len && memcmp(got, want, want_len) == 0;
                got_len = 0;
                CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, n, t, got, want_len - 1, &got_len, &count),
                             DR_E_DST_TOO_SMALL);
                same &= got_len == want_len;
                /* What a residual memory keeps: x with the sent entries zeroed. */
                memcpy(kept, x, n * sizeof *x);
                CHECK_OK(dr_zero_at(idx, c, kept, n));
                CHECK_OK(dr_threshold_zero(x, n, t, zeroed));
                same &= n == 0 || memcmp(zeroed, kept, n * sizeof *x) == 0;
            }
    }
    unsetenv("DEEPREDUCE_SIMD");
    CHECK(same);
    /* In place; -0.0 kept where it does not pass, |x| = t zeroed. */
    memcpy(zeroed, x, 100 * sizeof *x);
    zeroed[3] = -0.0f;
    zeroed[5] = -0.5f;
    CHECK_OK(dr_threshold_zero(zeroed, 100, 0.5f, zeroed));
    for (i = 0; i < 100; i++) {
        float v = i == 3 ? -0.0f : i == 5 ? -0.5f : x[i];
        v = fabsf(v) >= 0.5f ? 0.0f : v;
        same &= memcmp(&zeroed[i], &v, sizeof v) == 0;
    }
    CHECK(same);
    /* An Inf or a NaN anywhere is refused, in the dense and the sparse sweep. */
    for (i = 0; i < 2; i++) {
        float keep = x[4096];
        x[4096] = i == 0 ? NAN : -INFINITY;
        CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 4097, 0.1f, got, room, &got_len, &count), DR_E_NUMERIC);
        CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 4097, 0.999f, got, room, &got_len, &count),
                     DR_E_NUMERIC);
        x[4096] = keep;
    }
    CHECK_STATUS(dr_threshold_encode(DR_KIND_COUNT_, x, 100, 0.5f, got, room, &got_len, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 100, -1.0f, got, room, &got_len, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 100, NAN, got, room, &got_len, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, NULL, 100, 0.5f, got, room, &got_len, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 100, 0.5f, NULL, room, &got_len, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 100, 0.5f, got, room, NULL, &count), DR_E_ARG);
    CHECK_STATUS(dr_threshold_encode(DR_KIND_THRESHOLD, x, 100, 0.5f, got, room, &got_len, NULL), DR_E_ARG);
    CHECK_STATUS(dr_threshold_zero(x, 100, -1.0f, zeroed), DR_E_ARG);
    CHECK_STATUS(dr_threshold_zero(x, 100, 0.5f, NULL), DR_E_ARG);
    free(x);
    free(val);
    free(kept);
    free(zeroed);
    free(idx);
    free(want);
    free(got);
}

/* dr_threshold_sparsify: dr_threshold_select's indices with their values, Inf/NaN
 * refused wherever they are (in the vector body and the scalar tail, before and after
 * the room runs out), and a short room answered with the count that fits. */
static void test_threshold_sparsify(void)
{
    const size_t n = 4099;
    const size_t bad_at[3] = {0, 2048, 4098};
    float *x = malloc(n * sizeof *x), *val = malloc(n * sizeof *val);
    uint32_t *want = malloc(n * sizeof *want), *idx = malloc(n * sizeof *idx);
    size_t i, j, all = 0, c = 0;
    int ok = 1;
    for (i = 0; i < n; i++)
        x[i] = test_uniform(5, i);
    CHECK_OK(dr_threshold_select(x, n, 0.5f, want, n, &all));
    CHECK_OK(dr_threshold_sparsify(x, n, 0.5f, idx, val, all, &c));
    CHECK(c == all && memcmp(idx, want, all * sizeof *idx) == 0);
    for (j = 0; j < c; j++)
        ok &= memcmp(&val[j], &x[idx[j]], sizeof *val) == 0;
    CHECK(ok);
    c = 0;
    CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, val, all - 1, &c), DR_E_DST_TOO_SMALL);
    CHECK(c == all);
    CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, NULL, NULL, 0, &c), DR_E_DST_TOO_SMALL);
    CHECK(c == all);
    CHECK_OK(dr_threshold_sparsify(x, n, 2.0f, NULL, NULL, 0, &c));
    CHECK(c == 0);
    CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, NULL, n, &c), DR_E_ARG);
    CHECK_STATUS(dr_threshold_sparsify(x, n, -1.0f, idx, val, n, &c), DR_E_ARG);
    for (i = 0; i < 3; i++) {
        float keep = x[bad_at[i]];
        x[bad_at[i]] = NAN;
        CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, val, n, &c), DR_E_NUMERIC);
        CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, val, 7, &c), DR_E_NUMERIC);
        x[bad_at[i]] = -INFINITY;
        CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, val, n, &c), DR_E_NUMERIC);
        CHECK_STATUS(dr_threshold_sparsify(x, n, 0.5f, idx, val, 7, &c), DR_E_NUMERIC);
        x[bad_at[i]] = keep;
    }
    free(x);
    free(val);
    free(want);
    free(idx);
}

/* dr_randomk(key, n, k) is k distinct indices below n, ascending, the same for the same
 * key and different for another. */
static int draws_k_ascending(uint64_t key, size_t n, size_t k, uint32_t *idx, void *work)
{
    size_t i;
    int ok = dr_randomk(key, n, k, idx, work) == DR_OK;
    for (i = 0; ok && i < k; i++)
        ok = idx[i] < n && (i == 0 || idx[i] > idx[i - 1]);
    return ok;
}

/* Two measures of dr_randomk's uniformity over `draws` keys, drawing k of n <= 256:
 * how often each index is drawn, as a chi-square statistic against the uniform count
 * (k * draws / n each), and the variance of how many fall in the lower half of [0, n),
 * as a ratio to a uniform k-subset's (hypergeometric). The second catches a bias in the
 * dense draw's count corrections that the first does not: taking and adding indices in
 * one half only leaves every index's frequency even, and doubles that variance. */
static void randomk_spread(size_t n, size_t k, size_t draws, uint32_t *idx, void *work, double *chi,
                           double *half_ratio)
{
    size_t seen[256] = {0}, d, i;
    double expect = (double)k * (double)draws / (double)n, sum = 0.0, squares = 0.0, mean, hyper;
    *chi = 0.0;
    for (d = 0; d < draws; d++) {
        size_t lower = 0;
        CHECK(draws_k_ascending(dr_rng_key((const uint8_t *)"u", 1, d), n, k, idx, work));
        for (i = 0; i < k; i++) {
            seen[idx[i]]++;
            lower += idx[i] < n / 2;
        }
        sum += (double)lower;
        squares += (double)lower * (double)lower;
    }
    for (i = 0; i < n; i++)
        *chi += ((double)seen[i] - expect) * ((double)seen[i] - expect) / expect;
    mean = sum / (double)draws;
    hyper = (double)k * 0.25 * (double)(n - k) / (double)(n - 1);
    *half_ratio = (squares / (double)draws - mean * mean) / hyper;
}

static void test_randomk(void)
{
    /* (n, k): Floyd's draw, the dense draw, both for a complement, all, one, and sizes
     * with a partial last word. */
    static const size_t cases[][2] = {{1000, 100}, {1000, 300}, {1000, 950}, {1000, 600}, {1000, 1000},
                                      {1000, 1},   {64, 16},    {65, 33},    {1, 1},      {100000, 31000}};
    static uint32_t a[100000], b[100000];
    static uint64_t work[100000 / 64 + 1];
    const uint64_t key = dr_rng_key((const uint8_t *)"w", 1, 3);
    size_t c, i;
    for (c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n = cases[c][0], k = cases[c][1];
        CHECK(dr_randomk_workspace_size(n) <= sizeof work);
        CHECK(draws_k_ascending(key, n, k, a, work));
        CHECK(draws_k_ascending(key, n, k, b, work));
        CHECK(memcmp(a, b, k * sizeof *a) == 0);
        if (k < n) {
            CHECK(draws_k_ascending(dr_rng_key((const uint8_t *)"w", 1, 4), n, k, b, work));
            CHECK(memcmp(a, b, k * sizeof *a) != 0);
        }
    }
    CHECK_OK(dr_randomk(1, 10, 10, a, work));
    CHECK(a[0] == 0 && a[9] == 9);
    /* Floyd's draw (k < n / 8) gives the indices it gave before the dense draw came. */
    CHECK_OK(dr_randomk(key, 1000, 100, a, work));
    CHECK(crc32(0, (const unsigned char *)a, 100 * sizeof *a) == 0xe1794ed6u);
    {
        size_t n = (size_t)1 << 22, k = 300000;
        uint32_t *idx = malloc(k * sizeof *idx);
        void *big = malloc(dr_randomk_workspace_size(n));
        CHECK(idx != NULL && big != NULL);
        CHECK_OK(dr_randomk(key, n, k, idx, big));
        CHECK(crc32(0, (const unsigned char *)idx, k * sizeof *idx) == 0x10912aacu);
        free(idx);
        free(big);
    }
    /* Uniform subsets: 4,000 draws of 50 of 200 (the dense draw, whose count is then
     * corrected), of 150 of 200 (its complement) and of 20 of 200 (Floyd's). The
     * chi-square has 199 degrees of freedom, each count's variance shrunk by 1 - k/n:
     * mean about 149 for 50 of 200, and 300 is more than 8 deviations above it. The
     * half's variance ratio has a deviation of about 0.025 over 4,000 draws. */
    for (i = 0; i < 3; i++) {
        static const size_t ks[3] = {50, 150, 20};
        double chi, half_ratio;
        randomk_spread(200, ks[i], 4000, a, work, &chi, &half_ratio);
        CHECK(chi < 300.0);
        CHECK(half_ratio > 0.85 && half_ratio < 1.15);
    }
    for (i = 0; i < 3; i++)
        CHECK_STATUS(dr_randomk(key, i, i + 1, a, work), DR_E_ARG);
    CHECK_STATUS(dr_randomk(key, 10, 5, NULL, work), DR_E_ARG);
    CHECK_OK(dr_randomk(key, 10, 0, NULL, NULL));
}

/* dr_randomk_sparsify: dr_randomk's indices with their values, for Floyd's draw and the
 * dense draw; an Inf or a NaN anywhere in x (drawn or not, in the vector words or the
 * partial last one) refused with the indices written all the same. */
static void test_randomk_sparsify(void)
{
    enum { N = 1000 };
    static const size_t ks[] = {0, 1, 20, 300, 950, 1000};
    static const size_t bad_at[] = {0, 63, 500, 959, 960, 999};
    static float x[N], val[N];
    static uint32_t want[N], idx[N];
    static uint64_t work[N / 64 + 1];
    size_t c, b, j;
    for (j = 0; j < N; j++)
        x[j] = (float)j - 400.5f;
    for (c = 0; c < sizeof ks / sizeof *ks; c++) {
        size_t k = ks[c];
        int ok = 1;
        CHECK_OK(dr_randomk(77, N, k, want, work));
        CHECK_OK(dr_randomk_sparsify(77, x, N, k, idx, val, work));
        for (j = 0; j < k; j++)
            ok &= idx[j] == want[j] && val[j] == x[want[j]];
        CHECK(ok);
        for (b = 0; b < sizeof bad_at / sizeof *bad_at; b++) {
            float keep = x[bad_at[b]];
            x[bad_at[b]] = b % 2 ? NAN : -INFINITY;
            memset(idx, 0, sizeof idx);
            CHECK_STATUS(dr_randomk_sparsify(77, x, N, k, idx, val, work), DR_E_NUMERIC);
            CHECK(memcmp(idx, want, k * sizeof *idx) == 0);
            x[bad_at[b]] = keep;
        }
    }
    CHECK_STATUS(dr_randomk_sparsify(77, NULL, N, 10, idx, val, work), DR_E_ARG);
    CHECK_STATUS(dr_randomk_sparsify(77, x, N, 10, idx, NULL, work), DR_E_ARG);
    CHECK_STATUS(dr_randomk_sparsify(77, x, N, N + 1, idx, val, work), DR_E_ARG);
}

static void test_vec(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, out[4], g[2];
    uint32_t idx[2] = {3, 0}, bad[1] = {4};
    CHECK_OK(dr_axpby(2.0f, x, -1.0f, y, out, 4));
    CHECK(out[0] == -8.0f && out[3] == -32.0f);
    CHECK(dr_abs_max(out, 4) == 32.0f);
    CHECK_OK(dr_gather(y, 4, idx, 2, g));
    CHECK(g[0] == 40.0f && g[1] == 10.0f);
    CHECK_STATUS(dr_gather(y, 4, bad, 1, g), DR_E_CORRUPT);
    CHECK_OK(dr_scatter_add(idx, g, 2, x, 4));
    CHECK(x[3] == 44.0f && x[0] == 11.0f);
    CHECK_OK(dr_zero_at(idx, 2, x, 4));
    CHECK(x[3] == 0.0f && x[1] == 2.0f);
    CHECK_STATUS(dr_scatter(bad, g, 1, x, 4), DR_E_CORRUPT);
    out[0] = -0.0f;
    CHECK_OK(dr_zero(out, 3));
    CHECK(!signbit(out[0]) && out[0] == 0.0f && out[2] == 0.0f && out[3] == -32.0f);
    CHECK_OK(dr_zero(NULL, 0));
    CHECK_STATUS(dr_zero(NULL, 1), DR_E_ARG);
}

/* dr_axpby on outputs large enough to be streamed past the caches (DR_STREAM_MIN_N
 * floats and up, 16-byte aligned, apart from x and y): the same bits as in place, which
 * is never streamed; an Inf seen in the vector loop and in its tail; and an output 4
 * bytes off alignment, which takes the plain loop. */
static void test_axpby_streamed(void)
{
    const size_t n = TEST_STREAMED_N;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *ref = malloc(n * sizeof *ref);
    float *out = malloc((n + 4) * sizeof *out);
    size_t i, at[2] = {0, n - 1}, shifts[3] = {0, 1, 4}, t;
    CHECK(x != NULL && y != NULL && ref != NULL && out != NULL);
    for (i = 0; i < n; i++) {
        x[i] = (float)i * 1e-3f - 7.0f;
        y[i] = 1.0f - (float)(i % 1000) * 0.37f;
    }
    memcpy(ref, y, n * sizeof *y);
    CHECK_OK(dr_axpby(0.3f, x, -1.7f, ref, ref, n));
    for (t = 0; t < 3; t++) { /* malloc's alignment (16), 4 bytes off it, and 16 again */
        CHECK(dr_axpby_finite(0.3f, x, -1.7f, y, out + shifts[t], n) == 1);
        CHECK(memcmp(out + shifts[t], ref, n * sizeof *ref) == 0);
    }
    for (t = 0; t < 2; t++) {
        x[at[t]] = INFINITY;
        CHECK(dr_axpby_finite(0.3f, x, -1.7f, y, out, n) == 0);
        x[at[t]] = 1.0f;
    }
    free(x);
    free(y);
    free(ref);
    free(out);
}

/* dr_dgc_accumulate against dr_axpby twice and a copy: small and streamed (8M + 13
 * floats) outputs, 4 bytes off alignment (the plain loop), in place (u on u_old, v on
 * v_old), the first step (u = v = copy = g), an Inf or a NaN in g at the vector loop's
 * start and in its tail, an overflowing sum, and the refused arguments. */
static void check_accumulate(size_t n, size_t shift)
{
    float *u_old = malloc(n * sizeof *u_old), *v_old = malloc(n * sizeof *v_old), *g = malloc(n * sizeof *g);
    float *u = malloc((n + 4) * sizeof *u), *v = malloc((n + 4) * sizeof *v), *copy = malloc((n + 4) * sizeof *copy);
    float *want_u = malloc(n * sizeof *want_u), *want_v = malloc(n * sizeof *want_v);
    size_t i, at[2] = {0, n - 1}, t;
    CHECK(u_old != NULL && v_old != NULL && g != NULL && u != NULL && v != NULL && copy != NULL &&
          want_u != NULL && want_v != NULL);
    for (i = 0; i < n; i++) {
        u_old[i] = (float)(i % 977) * 0.013f - 6.0f;
        v_old[i] = 3.0f - (float)(i % 1013) * 0.0071f;
        g[i] = (float)(i % 101) * 0.37f - 17.0f;
    }
    CHECK_OK(dr_axpby(0.9f, u_old, 1.0f, g, want_u, n));
    CHECK_OK(dr_axpby(1.0f, v_old, 1.0f, want_u, want_v, n));
    CHECK(dr_dgc_accumulate(0.9f, u_old, v_old, g, u + shift, v + shift, copy + shift, n) == 1);
    CHECK(memcmp(u + shift, want_u, n * sizeof *u) == 0 && memcmp(v + shift, want_v, n * sizeof *v) == 0 &&
          memcmp(copy + shift, want_v, n * sizeof *v) == 0);
    CHECK(dr_dgc_accumulate(0.9f, NULL, NULL, g, u + shift, v + shift, copy + shift, n) == 1);
    CHECK(memcmp(u + shift, g, n * sizeof *u) == 0 && memcmp(v + shift, g, n * sizeof *v) == 0 &&
          memcmp(copy + shift, g, n * sizeof *v) == 0);
    for (t = 0; t < 2; t++) {
        g[at[t]] = t ? NAN : INFINITY;
        CHECK(dr_dgc_accumulate(0.9f, u_old, v_old, g, u, v, copy, n) == 0);
        CHECK(dr_dgc_accumulate(0.9f, NULL, NULL, g, u, v, copy, n) == 0);
        g[at[t]] = 1.0f;
    }
    g[n / 2] = 3e38f; /* finite, but u = 0.9 u_old + g and v_old + u: v overflows */
    v_old[n / 2] = 3e38f;
    u_old[n / 2] = 0.0f;
    CHECK(dr_dgc_accumulate(0.9f, u_old, v_old, g, u, v, copy, n) == 0);
    g[n / 2] = 1.0f;
    v_old[n / 2] = 1.0f;
    CHECK_OK(dr_axpby(0.9f, u_old, 1.0f, g, want_u, n));
    CHECK_OK(dr_axpby(1.0f, v_old, 1.0f, want_u, want_v, n));
    CHECK(dr_dgc_accumulate(0.9f, u_old, v_old, g, u_old, v_old, copy, n) == 1); /* in place */
    CHECK(memcmp(u_old, want_u, n * sizeof *u) == 0 && memcmp(v_old, want_v, n * sizeof *v) == 0 &&
          memcmp(copy, want_v, n * sizeof *v) == 0);
    free(u_old);
    free(v_old);
    free(g);
    free(u);
    free(v);
    free(copy);
    free(want_u);
    free(want_v);
}

static void test_dgc_accumulate(void)
{
    float x = 1.0f;
    check_accumulate(1000, 0);
    check_accumulate(1000, 1);
    check_accumulate(TEST_STREAMED_N, 0);
    check_accumulate(TEST_STREAMED_N, 1);
    CHECK_STATUS(dr_dgc_accumulate(0.9f, &x, NULL, &x, &x, &x, &x, 1), DR_E_ARG);
    CHECK_STATUS(dr_dgc_accumulate(0.9f, NULL, &x, &x, &x, &x, &x, 1), DR_E_ARG);
    CHECK_STATUS(dr_dgc_accumulate(0.9f, NULL, NULL, &x, &x, &x, NULL, 1), DR_E_ARG);
    CHECK(dr_dgc_accumulate(0.9f, NULL, NULL, NULL, NULL, NULL, NULL, 0) == 1);
}

/* PowerSGD's product, v = P Q^T summed in k order with every product rounded, against
 * that rule written out here; then minuend - v, in place; then the same on an output
 * large enough to be streamed and split over 1, 2 and 3 threads. */
static int lowrank_matches(const float *p, const float *qt, size_t rows, size_t cols, size_t rank,
                           const float *minuend, const float *out)
{
    size_t i, j, k;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            float v = p[i * rank] * qt[j];
            for (k = 1; k < rank; k++)
                v = v + p[i * rank + k] * qt[k * cols + j];
            if (minuend != NULL)
                v = minuend[i * cols + j] - v;
            if (memcmp(&v, &out[i * cols + j], sizeof v) != 0)
                return 0;
        }
    return 1;
}

static void test_lowrank_product(void)
{
    static const size_t shapes[][3] = {{1, 1, 1}, {7, 3, 1}, {5, 8, 2}, {9, 13, 3}, {33, 100, 4}, {4, 1024, 1}};
    const size_t big_rows = 8192, big_cols = 1024, big_rank = 2;
    static const char *const counts[] = {"1", "2", "3"};
    float *p = malloc(big_rows * big_rank * sizeof *p), *qt = malloc(big_rank * big_cols * sizeof *qt);
    float *x = malloc(big_rows * big_cols * sizeof *x), *out = malloc(big_rows * big_cols * sizeof *out);
    size_t s, i, t;
    int ok = 1;
    for (i = 0; i < big_rows * big_rank; i++)
        p[i] = test_uniform(41, i) - 0.5f;
    for (i = 0; i < big_rank * big_cols; i++)
        qt[i] = test_uniform(42, i) * 3.0f - 1.0f;
    for (i = 0; i < big_rows * big_cols; i++)
        x[i] = test_uniform(43, i) - 0.5f;
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t rows = shapes[s][0], cols = shapes[s][1], rank = shapes[s][2];
        CHECK_STATUS(dr_lowrank_product(p, qt, rows, cols, rank, NULL, out), 1);
        ok &= lowrank_matches(p, qt, rows, cols, rank, NULL, out);
        CHECK_STATUS(dr_lowrank_product(p, qt, rows, cols, rank, x, out), 1);
        ok &= lowrank_matches(p, qt, rows, cols, rank, x, out);
        memcpy(out, x, rows * cols * sizeof *out);
        CHECK_STATUS(dr_lowrank_product(p, qt, rows, cols, rank, out, out), 1);
        ok &= lowrank_matches(p, qt, rows, cols, rank, x, out);
    }
    CHECK(ok);
    for (t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        setenv("DEEPREDUCE_THREADS", counts[t], 1);
        memset(out, 0xff, big_rows * big_cols * sizeof *out);
        CHECK_STATUS(dr_lowrank_product(p, qt, big_rows, big_cols, big_rank, x, out), 1);
        CHECK(lowrank_matches(p, qt, big_rows, big_cols, big_rank, x, out));
        memset(out, 0xff, big_rows * big_cols * sizeof *out);
        CHECK_STATUS(dr_lowrank_product(p, qt, big_rows, big_cols, big_rank, NULL, out), 1);
        CHECK(lowrank_matches(p, qt, big_rows, big_cols, big_rank, NULL, out));
    }
    unsetenv("DEEPREDUCE_THREADS");
    /* An Inf or a NaN anywhere, in a vector group or a row's tail, is reported. */
    x[5 * 13 + 12] = INFINITY;
    CHECK_STATUS(dr_lowrank_product(p, qt, 9, 13, 3, x, out), 0);
    x[5 * 13 + 12] = 0.25f;
    x[big_rows * big_cols - 700] = NAN;
    CHECK_STATUS(dr_lowrank_product(p, qt, big_rows, big_cols, big_rank, x, out), 0);
    CHECK(isnan(out[big_rows * big_cols - 700]));
    p[3] = 3e38f;
    qt[0] = 1e10f;
    CHECK_STATUS(dr_lowrank_product(p, qt, 4, 8, 1, NULL, out), 0);
    /* Arguments. */
    CHECK_STATUS(dr_lowrank_product(p, qt, 4, 8, 0, NULL, out), DR_E_ARG);
    CHECK_STATUS(dr_lowrank_product(NULL, qt, 4, 8, 1, NULL, out), DR_E_ARG);
    CHECK_STATUS(dr_lowrank_product(p, qt, 4, 8, 1, NULL, NULL), DR_E_ARG);
    CHECK_STATUS(dr_lowrank_product(p, qt, SIZE_MAX / 2, 4, 1, NULL, out), DR_E_ARG);
    CHECK_STATUS(dr_lowrank_product(NULL, NULL, 0, 8, 2, NULL, NULL), 1);
    free(p);
    free(qt);
    free(x);
    free(out);
}

static void test_half_against_reference(void)
{
    /* Every half converts to float and back unchanged (NaNs stay NaN). */
    uint32_t h;
    int ok = 1;
    for (h = 0; h < 65536; h++) {
        uint16_t in = (uint16_t)h, back;
        float f;
        dr_f16_to_f32(&in, &f, 1);
        dr_f32_to_f16(&f, &back, 1);
        if (((in & 0x7c00) == 0x7c00) && (in & 0x3ff))
            ok &= isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff);
        else
            ok &= back == in;
    }
    CHECK(ok);
}

/* dr_f16_to_f32_finite: the floats of dr_f16_to_f32, and 0 for an Inf or a NaN of
 * either sign wherever it sits (a vector group, a tail), 1 for the largest finite half. */
static void test_half_to_float_says_finite(void)
{
    enum { N = 37 };
    static const uint16_t specials[] = {0x7c00, 0xfc00, 0x7e00, 0xfc01};
    uint16_t h[N];
    float want[N], got[N];
    size_t i, s, at;
    int ok = 1;
    for (i = 0; i < N; i++)
        h[i] = (uint16_t)((i * 2654435761u) >> 17) & 0xfbffu; /* exponents below all-ones */
    h[N - 1] = 0x7bff; /* 65504 */
    CHECK_STATUS(dr_f16_to_f32_finite(h, got, N), 1);
    CHECK_OK(dr_f16_to_f32(h, want, N));
    CHECK(memcmp(want, got, sizeof want) == 0);
    for (s = 0; s < sizeof specials / sizeof specials[0]; s++)
        for (at = 0; at < N; at += 5) {
            uint16_t keep = h[at];
            h[at] = specials[s];
            ok &= dr_f16_to_f32_finite(h, got, N) == 0;
            h[at] = keep;
        }
    CHECK(ok);
    CHECK_STATUS(dr_f16_to_f32_finite(NULL, got, 1), DR_E_ARG);
    CHECK_STATUS(dr_f16_to_f32_finite(NULL, NULL, 0), 1);
}

static void test_half_paths_agree(void)
{
    /* The dispatched (maybe F16C) path equals the scalar path on many bit patterns. */
    enum { N = 1 << 16 };
    static float x[N];
    static uint16_t fast[N];
    static float back[N];
    size_t i;
    int ok = 1;
    for (i = 0; i < N; i++) {
        uint32_t bits = (uint32_t)dr_rng_u64(11, i);
        if (i % 3 == 0) /* bias towards the half range */
            bits = (bits & 0x87ffffffu) | 0x30000000u;
        memcpy(&x[i], &bits, 4);
    }
    CHECK_OK(dr_f32_to_f16(x, fast, N));
    CHECK_OK(dr_f16_to_f32(fast, back, N));
    for (i = 0; i < N; i++) {
        uint16_t ref;
        float fref;
        uint32_t a, b;
        /* scalar reference through the tail path: convert one element at a time */
        dr_f32_to_f16(&x[i], &ref, 1);
        dr_f16_to_f32(&fast[i], &fref, 1);
        memcpy(&a, &fref, 4);
        memcpy(&b, &back[i], 4);
        ok &= ref == fast[i] && a == b;
    }
    CHECK(ok);
}

/* Sizes asked for an n no buffer could hold saturate at SIZE_MAX: they wrapped to small
 * numbers (dr_natural_size(SIZE_MAX) was 51, dr_topk_workspace_size(2^62, 2^62) 131072),
 * which a caller sizing a buffer by them would have allocated. */
static void test_sizes_saturate(void)
{
    const size_t huge = SIZE_MAX, quarter = SIZE_MAX / 4 + 1;
    CHECK(dr_natural_size(huge) == SIZE_MAX);
    CHECK(dr_eightbit_size(huge) == SIZE_MAX);
    CHECK(dr_qsgd_size(huge / 2, 32767, 1) == SIZE_MAX);
    CHECK(dr_qsgd_size(huge, 127, 128) == SIZE_MAX);
    CHECK(dr_sketch_size(huge / 2, 65536) == SIZE_MAX);
    CHECK(dr_inceptionn_bound(quarter) == SIZE_MAX);
    CHECK(dr_adaq_bound(quarter) == SIZE_MAX);
    CHECK(dr_sparse_raw_size(quarter) == SIZE_MAX);
    CHECK(dr_sparse_raw_frame_size((uint64_t)quarter, quarter) == SIZE_MAX);
    CHECK(dr_topk_workspace_size(quarter, quarter) == SIZE_MAX);
    CHECK(dr_spardl_frame_bound(quarter, quarter, DR_INDEX_RAW) == SIZE_MAX);
    CHECK(dr_spardl_workspace_size(quarter, quarter) == SIZE_MAX);
    CHECK(dr_value_skcompress_workspace_size(huge, 256) == SIZE_MAX);
    CHECK(dr_dgc_max_count(huge) == SIZE_MAX);
    /* and where they fit, the exact figures they gave before */
    CHECK(dr_dgc_max_count(1000) == 1300 && dr_dgc_max_count(9) == 11 && dr_dgc_max_count(0) == 0);
    CHECK(dr_natural_size(1000) == 52 + 1000);
}

int main(void)
{
    test_frame_roundtrip_and_corruption();
    test_sparse_frames_added();
    test_sparse_frames_finite();
    test_sparse_frame_decoded_dense();
    test_sparse_frames_in_chunks();
    test_sparse_bitmap_frames();
    test_empty_frame();
    test_nonfinite_marker();
    test_bytes_same();
    test_dr_all_finite();
    test_topk_matches_sort();
    test_topk_ties_take_lowest();
    test_topk_select_equals_topk();
    test_topk_sparsify();
    test_topk_residual_encode();
    test_topk_mostly_zeros();
    test_topk_select_threads();
    test_topk_estimate_misses_rarely();
    test_threshold();
    test_threshold_long_matches_scalar_rule();
    test_threshold_sparsify();
    test_threshold_encode();
    test_randomk();
    test_randomk_sparsify();
    test_vec();
    test_axpby_streamed();
    test_dgc_accumulate();
    test_lowrank_product();
    test_half_against_reference();
    test_half_paths_agree();
    test_half_to_float_says_finite();
    test_sizes_saturate();
    return check_summary("test_core");
}
