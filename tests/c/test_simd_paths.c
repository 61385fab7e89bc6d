/* Every SIMD path of the vectorised quantisers against the scalar path: the same frame
 * bytes and the same decoded floats, on sizes with ragged tails and buckets, inputs with
 * zeros, negative zeros, ties at bucket norms and huge values. The paths are chosen
 * with DEEPREDUCE_SIMD, which the library reads on every call. */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "../../src/c/core/lane_tables.h"
#include "../../src/c/quant/lookup_simd.h"
#include "../../src/c/quant/sketch_simd.h"
#include "../../src/c/quant/qsgd_simd.h"
#include "../../src/c/index/unary_simd.h"

typedef int (*encode_fn)(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written);
typedef int (*decode_fn)(const uint8_t *, size_t, float *, size_t);

static uint32_t g_s = 127, g_bucket = 128;

static int enc_qsgd(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_qsgd_encode(x, n, g_s, g_bucket, 0x1234567u, 0, buf, cap, written);
}
static int enc_terngrad(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_terngrad_encode(x, n, 0x777u, 0, buf, cap, written);
}
static int enc_onebit(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_onebit_encode(x, n, 0, buf, cap, written);
}
static int enc_efsignsgd(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_efsignsgd_encode(x, n, 0, buf, cap, written);
}
static int enc_eightbit(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_eightbit_encode(x, n, 0, buf, cap, written);
}

static uint32_t g_bound = 10;
static int enc_inceptionn(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_inceptionn_encode(x, n, g_bound, 0, buf, cap, written);
}

static uint32_t g_bins = 127;
static int enc_sketch(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    static uint8_t work[1 << 20];
    return dr_sketch_encode(x, n, g_bins, 0x55u, 0, work, buf, cap, written);
}
static int enc_natural(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_natural_encode(x, n, 0x99u, 0, buf, cap, written);
}

static float g_ratio = 0.01f;
static void *g_adaq_work;
static int enc_adaq(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_adaq_encode(x, n, g_ratio, 0x3131u, 0, g_adaq_work, buf, cap, written);
}

/* A mix of normal values, exact zeros, -0.0, and runs of equal values. */
static void fill(float *x, size_t n, uint64_t key, float scale)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint64_t r = dr_rng_u64(key, i);
        x[i] = scale * test_uniform(key, i) * (float)(1 + (r & 7));
        if ((r >> 8) % 17 == 0)
            x[i] = 0.0f;
        if ((r >> 8) % 19 == 0)
            x[i] = -0.0f;
        if ((r >> 8) % 23 == 0 && i > 0)
            x[i] = x[i - 1];
    }
}

/* Random bit patterns: every exponent from subnormal to the largest finite one. */
static void fill_bits(float *x, size_t n, uint64_t key)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t u = (uint32_t)dr_rng_u64(key, i);
        if (((u >> 23) & 0xffu) == 0xffu)
            u &= ~(1u << 30);
        memcpy(&x[i], &u, sizeof u);
    }
}

static const char *const paths[] = {"scalar", "avx2", "avx512"};

/* The float exponent field of natural compression's smallest nonzero code (2^-63). */
#define NAT_EXP_FIRST (128u - DR_NATURAL_CODE_OFFSET)

/* Encode and decode x under every path; all frames and outputs equal the scalar one. */
static void check_paths(const char *what, encode_fn encode, decode_fn decode, const float *x,
                        size_t n, size_t cap)
{
    uint8_t *want = malloc(cap), *got = malloc(cap);
    float *want_out = malloc((n + 1) * sizeof(float)), *got_out = malloc((n + 1) * sizeof(float));
    size_t want_len = 0, got_len = 0, p;
    int same_frame = 1, same_out = 1;
    setenv("DEEPREDUCE_SIMD", "scalar", 1);
    CHECK_OK(encode(x, n, want, cap, &want_len));
    CHECK_OK(decode(want, want_len, want_out, n));
    for (p = 1; p < sizeof paths / sizeof *paths; p++) {
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        memset(got, 0, cap);
        CHECK_OK(encode(x, n, got, cap, &got_len));
        same_frame &= got_len == want_len && memcmp(got, want, want_len) == 0;
        /* Poisoned, so that an element a path leaves unwritten cannot keep the value the
         * path before wrote there. */
        memset(got_out, 0xa5, (n + 1) * sizeof(float));
        CHECK_OK(decode(want, want_len, got_out, n));
        same_out &= n == 0 || memcmp(got_out, want_out, n * sizeof(float)) == 0;
    }
    if (!same_frame || !same_out)
        fprintf(stderr, "%s n=%zu: paths differ (frame %d, output %d)\n", what, n, same_frame, same_out);
    CHECK(same_frame);
    CHECK(same_out);
    unsetenv("DEEPREDUCE_SIMD");
    free(want);
    free(got);
    free(want_out);
    free(got_out);
}

static int enc_signsgd(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    return dr_signsgd_encode(x, n, 0, buf, cap, written);
}

/* dr_signum_momentum_encode on every path: the momentum and the frame of the two calls
 * it fuses (dr_signum_momentum_into, or a copy at the first step, then
 * dr_signum_encode on the scalar path), in place too, and Inf/NaN refused wherever it
 * sits; with sizes past the streamed-store threshold. */
static void test_signum_fused_paths(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 31, 1000, 4099, TEST_STREAMED_N};
    size_t a, p, first;
    for (a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t n = sizes[a], cap = dr_signum_size(n), want_len = 0, got_len = 0;
        float *g = malloc((n + 1) * sizeof *g), *old = malloc((n + 1) * sizeof *g);
        float *want_m = malloc((n + 1) * sizeof *g), *got_m = malloc((n + 1) * sizeof *g);
        uint8_t *want = malloc(cap), *got = malloc(cap);
        fill(g, n, 11 + n, 2.0f);
        fill(old, n, 13 + n, 1.0f);
        for (first = 0; first < 2; first++) {
            int same = 1;
            setenv("DEEPREDUCE_SIMD", "scalar", 1);
            if (first)
                memcpy(want_m, g, n * sizeof *g);
            else
                CHECK_OK(dr_signum_momentum_into(want_m, old, g, n, 0.9f));
            CHECK_OK(dr_signum_encode(want_m, n, 0, want, cap, &want_len));
            for (p = 0; p < sizeof paths / sizeof *paths; p++) {
                setenv("DEEPREDUCE_SIMD", paths[p], 1);
                memset(got, 0, cap);
                CHECK_OK(dr_signum_momentum_encode(got_m, first ? NULL : old, g, n, 0.9f, 0, got, cap, &got_len));
                same &= got_len == want_len && memcmp(got, want, want_len) == 0;
                same &= n == 0 || memcmp(got_m, want_m, n * sizeof *g) == 0;
                /* In place: the old momentum's buffer becomes the new one. */
                memcpy(got_m, old, n * sizeof *g);
                CHECK_OK(dr_signum_momentum_encode(got_m, first ? NULL : got_m, g, n, 0.9f, 0, got, cap, &got_len));
                same &= got_len == want_len && memcmp(got, want, want_len) == 0;
                same &= n == 0 || memcmp(got_m, want_m, n * sizeof *g) == 0;
                if (n > 0) {
                    size_t at = (n / 3) % n;
                    float keep = g[at];
                    g[at] = (p % 2) ? INFINITY : NAN;
                    CHECK_STATUS(dr_signum_momentum_encode(got_m, first ? NULL : old, g, n, 0.9f, 0, got, cap,
                                                           &got_len), DR_E_NUMERIC);
                    g[at] = keep;
                }
            }
            if (!same)
                fprintf(stderr, "signum fused n=%zu first=%zu: paths differ\n", n, first);
            CHECK(same);
        }
        CHECK_STATUS(dr_signum_momentum_encode(got_m, old, g, n, 1.5f, 0, got, cap, &got_len), DR_E_ARG);
        CHECK_STATUS(dr_signum_momentum_encode(got_m, old, g, n, 0.9f, 0, got, cap - 1, &got_len),
                     DR_E_DST_TOO_SMALL);
        if (n > 0)
            CHECK_STATUS(dr_signum_momentum_encode(NULL, old, g, n, 0.9f, 0, got, cap, &got_len), DR_E_ARG);
        unsetenv("DEEPREDUCE_SIMD");
        free(g);
        free(old);
        free(want_m);
        free(got_m);
        free(want);
        free(got);
    }
}

/* The half conversions past their streamed-store threshold (as many bytes of halves as
 * DR_STREAM_MIN_N floats), on outputs on and off the 16-byte grid: the same bits on every
 * path, both ways. Values across the half range, subnormals and overflow included. */
static void test_half_streamed(void)
{
    const size_t n = 2 * TEST_STREAMED_N;
    float *x = malloc((n + 4) * sizeof *x), *want_back = malloc((n + 4) * sizeof *x);
    float *got_back = malloc((n + 4) * sizeof *x);
    uint16_t *want = malloc((n + 8) * sizeof *want), *got = malloc((n + 8) * sizeof *got);
    size_t p, i, shift;
    for (i = 0; i < n; i++) {
        uint32_t r = (uint32_t)dr_rng_u64(51, i);
        x[i] = ldexpf((float)(r & 0xffffu) / 65536.0f, (int)((r >> 16) % 48) - 30) * ((r >> 31) ? -1.0f : 1.0f);
    }
    for (shift = 0; shift < 2; shift++) {
        int same = 1;
        setenv("DEEPREDUCE_SIMD", "scalar", 1);
        CHECK_OK(dr_f32_to_f16(x, want + shift, n));
        CHECK_OK(dr_f16_to_f32(want + shift, want_back + shift, n));
        for (p = 1; p < sizeof paths / sizeof *paths; p++) {
            setenv("DEEPREDUCE_SIMD", paths[p], 1);
            CHECK_OK(dr_f32_to_f16(x, got + shift, n));
            CHECK_OK(dr_f16_to_f32(want + shift, got_back + shift, n));
            same &= memcmp(got + shift, want + shift, n * sizeof *got) == 0;
            same &= memcmp(got_back + shift, want_back + shift, n * sizeof *x) == 0;
        }
        if (!same)
            fprintf(stderr, "half streamed (output shifted by %zu): paths differ\n", shift);
        CHECK(same);
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(x);
    free(want_back);
    free(got_back);
    free(want);
    free(got);
}

/* Bit unpacking past the streamed-store threshold (stream_simd.h), into outputs on and
 * off the 16-byte grid: the values packed, on every path. */
static void test_bitunpack_streamed(void)
{
    static const unsigned widths[3] = {6, 17, 25};
    /* Output offsets from a 64-byte line, in fields: the streamed paths write the fields
     * before the first line apart (none, 4, 8, 12 of them), and 1 is not 16-byte
     * aligned, so not streamed. */
    static const size_t shifts[5] = {0, 4, 8, 12, 1};
    const size_t n = TEST_STREAMED_N;
    uint32_t *values = malloc(n * sizeof *values), *mem = malloc((n + 32) * sizeof *mem), *line;
    size_t i, w, p, s, written;
    /* The first 64-byte line start in mem. */
    line = mem + ((64u - ((uintptr_t)mem & 63u)) & 63u) / sizeof *mem;
    for (w = 0; w < 3; w++) {
        size_t size = dr_bitpack_size(n, widths[w]);
        uint8_t *buf = malloc(size);
        for (i = 0; i < n; i++)
            values[i] = (uint32_t)dr_rng_u64(61, i) & ((1u << widths[w]) - 1u);
        CHECK_OK(dr_bitpack(values, n, widths[w], buf, size, &written));
        for (p = 0; p < sizeof paths / sizeof *paths; p++) {
            setenv("DEEPREDUCE_SIMD", paths[p], 1);
            for (s = 0; s < sizeof shifts / sizeof *shifts; s++) {
                uint32_t *back = line + shifts[s];
                memset(mem, 0xff, (n + 32) * sizeof *mem);
                CHECK_OK(dr_bitunpack(buf, written, n, widths[w], back));
                if (memcmp(back, values, n * sizeof *values) != 0 || back[n] != UINT32_MAX ||
                    (back > mem && back[-1] != UINT32_MAX)) {
                    fprintf(stderr, "bitunpack streamed, %u bits, %s, output %zu fields past a line: wrong values\n",
                            widths[w], paths[p], shifts[s]);
                    CHECK(0);
                }
            }
        }
        free(buf);
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(values);
    free(mem);
}

#if DR_HAVE_X86_SIMD
/* A byte-code lookup kernel: writes out[i] for i below the length it returns. */
typedef size_t (*lookup_fn)(const uint8_t *codes, size_t n, const float *table, uint32_t entries, float *out);

static size_t planes(const uint8_t *codes, size_t n, const float *table, uint32_t entries, float *out)
{
    return dr_lookup_planes_avx512(codes, n, table, entries, out);
}

static size_t sketch_read(const uint8_t *codes, size_t n, const float *table, uint32_t entries, float *out)
{
    (void)entries;
    return dr_sketch_read_avx512(codes, n, table, out);
}

/* The 8-bit decoder's: table[c & 127], negated by bit 7 (`table` holds both signs). */
static size_t signed_lookup(const uint8_t *codes, size_t n, const float *table, uint32_t entries, float *out)
{
    (void)entries;
    return dr_signed_lookup128_avx512(codes, n, table, out);
}

/* `lookup` against table[codes[i]]: every float bit-equal where it wrote (its prefix at
 * least n - 63 long), the floats around out[0..n) untouched, for n from 0 to past the
 * streamed-store threshold and outputs at a cache line's start and 4, 16, 32 and 48 bytes
 * past it (the ones on the 16-byte grid streamed, their floats before the first line
 * start another way). */
static int check_lookup(lookup_fn lookup, const float *table, uint32_t entries)
{
    static const size_t sizes[] = {0, 1, 15, 63, 64, 65, 200, 4099, TEST_STREAMED_N};
    static const size_t offsets[] = {0, 1, 4, 8, 12};
    const size_t most = TEST_STREAMED_N, room = most + 32;
    uint8_t *codes = malloc(most);
    float *mem = malloc((room + 16) * sizeof *mem);
    float *line = (float *)(void *)(((uintptr_t)mem + 63u) & ~(uintptr_t)63u);
    size_t s, o, i;
    int same = 1;
    for (i = 0; i < most; i++)
        codes[i] = (uint8_t)(dr_rng_u64(77, i) % entries);
    for (s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (o = 0; o < sizeof offsets / sizeof *offsets; o++) {
            size_t n = sizes[s], done;
            float *out = line + offsets[o];
            for (i = 0; i < room; i++)
                line[i] = 7.0f;
            done = lookup(codes, n, table, entries, out);
            same &= done <= n && done + 63 >= n;
            for (i = 0; i < done; i++)
                same &= memcmp(&out[i], &table[codes[i]], sizeof *out) == 0;
            for (i = 0; i < room; i++)
                same &= (i >= offsets[o] && i < offsets[o] + done) || line[i] == 7.0f;
        }
    free(mem);
    free(codes);
    return same;
}

/* The decoders' byte lookups called directly, so that each AVX-512 kernel is compared
 * on a CPU that dispatches to another (the byte planes where VBMI is, the 16-lane
 * lookups elsewhere): 64, 128 and 256 entries, every entry a distinct bit pattern
 * (negative zero, a NaN payload and subnormals among them, so no byte of a plane is
 * lost). */
static void test_byte_lookups(void)
{
    static const uint32_t entries[] = {64, 128, 256};
    float table[256], signed_table[256];
    size_t e;
    uint32_t c;
    if (dr_simd_supported() < DR_SIMD_AVX512)
        return;
    for (c = 0; c < 256u; c++) {
        uint32_t u = (uint32_t)dr_rng_u64(78, c);
        if (c == 5)
            u = 0x80000000u;
        if (c == 6)
            u = 0x7fc01234u;
        if (c == 7)
            u &= 0x807fffffu;
        memcpy(&table[c], &u, sizeof u);
        u = (uint32_t)dr_rng_u64(78, c & 127u) ^ (c & 128u ? 0x80000000u : 0u);
        memcpy(&signed_table[c], &u, sizeof u);
    }
    for (e = 0; e < sizeof entries / sizeof *entries; e++) {
        if (dr_cpu_has_vbmi())
            CHECK(check_lookup(planes, table, entries[e]));
        CHECK(check_lookup(sketch_read, table, entries[e]));
    }
    CHECK(check_lookup(signed_lookup, signed_table, 256));
}
#endif

/* The inverse of the sketch's order key (sketch_key, check.h). */
static float sketch_float(uint32_t k)
{
    uint32_t u = k & 0x80000000u ? k & 0x7fffffffu : ~k;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Whether bins[0..done) are find_bin's (the number of edges[0..p-1) <= the key, capped at
 * last) for x, and done is n less at most a vector's 31. */
static int sketch_bins_right(const float *x, size_t n, const uint8_t *bins, size_t done,
                             const uint32_t *edges, uint32_t p, uint32_t last)
{
    int same = done <= n && done + 32 > n;
    size_t i;
    for (i = 0; i < done && i < n; i++) {
        uint32_t k = sketch_key(x[i]), want = 0, j;
        for (j = 0; j + 1 < p; j++)
            want += edges[j] <= k;
        same &= bins[i] == (want < last ? want : last);
    }
    return same;
}

/* Every search of the sketch's bins for these edges (p a power of two, last = bins - 1)
 * against find_bin's definition, on keys at and around every edge: equal, one apart, the
 * low half all zeros or all ones under the edge's own top half, the next and previous top
 * half; then random bit patterns (NaNs, infinities, subnormals). The searches: the prefix
 * table (portable, and AVX2's gathers) in the form the edges call for (none where two
 * different real edges share their top 16 bits); on x86, AVX-512's (on prefixes or
 * 32-bit keys) and AVX2's B-tree. Returns 1 if all agree. */
static int check_sketch_search(const uint32_t *edges, uint32_t p, uint32_t last)
{
    enum { AROUND = 8, RANDOM = 4099 };
    static uint32_t table[65536];
    size_t n = 0, i;
    float *x = malloc(((size_t)AROUND * p + RANDOM) * sizeof *x);
    uint8_t *bins = malloc((size_t)AROUND * p + RANDOM);
    uint32_t j;
    int same = 1, want = DR_PREFIX_SINGLE, form;
    for (j = 0; j + 1 < p; j++) {
        const uint32_t e = edges[j], near[AROUND] = {e, e - 1, e + 1, e & 0xffff0000u, e | 0xffffu,
                                                     e + 0x10000u, e - 0x10000u, e ^ 0x8000u};
        for (i = 0; i < AROUND; i++)
            x[n++] = sketch_float(near[i]);
    }
    for (i = 0; i < RANDOM; i++)
        x[n++] = sketch_float((uint32_t)dr_rng_u64(91, i));
    /* The form: one edge per top half, runs of equal edges, or no table. */
    for (j = 1; j < last && want != DR_PREFIX_NONE; j++)
        if (edges[j] >> 16 == edges[j - 1] >> 16)
            want = edges[j] == edges[j - 1] ? DR_PREFIX_RUNS : DR_PREFIX_NONE;
    form = dr_sketch_prefix_table(edges, last, table);
    same &= form == want;
    if (form != DR_PREFIX_NONE)
        same &= sketch_bins_right(x, n, bins, dr_sketch_bins_table(x, n, table, form, bins), edges, p, last);
#if DR_HAVE_X86_SIMD
    if (dr_simd_supported() >= DR_SIMD_AVX2) {
        same &= sketch_bins_right(x, n, bins, dr_sketch_bins_avx2(x, n, edges, p, last, bins), edges, p, last);
        if (form != DR_PREFIX_NONE)
            same &= sketch_bins_right(x, n, bins, dr_sketch_bins_table_avx2(x, n, table, form, bins), edges, p, last);
    }
    if (dr_simd_supported() >= DR_SIMD_AVX512)
        same &= sketch_bins_right(x, n, bins, dr_sketch_bins_avx512(x, n, edges, p, last, bins, 1), edges, p, last);
#endif
    free(bins);
    free(x);
    return same;
}

/* The sketch's searches called directly, for every level count up to 256 bins, with
 * negative and positive keys: on edges with distinct top halves (the prefix table;
 * AVX-512's prefix search), on different edges that share them (no table; the 32-bit
 * searches), and on runs of equal edges (the table; the 32-bit searches). */
static void test_sketch_search(void)
{
    static const uint32_t bin_counts[] = {2, 3, 5, 16, 17, 33, 64, 65, 127, 128, 200, 256};
    uint32_t edges[256];
    size_t b;
    for (b = 0; b < sizeof bin_counts / sizeof *bin_counts; b++) {
        uint32_t bins = bin_counts[b], p = 1, j, shared;
        while (p < bins)
            p <<= 1;
        for (shared = 0; shared < 5; shared++) {
            /* Ascending keys from about -8 to 8, far apart (shared 0); steps of a quarter
             * to a half of a top half, so neighbours share top halves (1); pairs of equal
             * edges (2); the last edge a NaN's key whose top half is the padding's (3);
             * runs of 1 to about 10 equal edges, as a tensor of many zeros gives (4). */
            uint32_t k = sketch_key(-8.0f), step = shared == 1 ? 0x4000u : (sketch_key(8.0f) - k) / p;
            for (j = 0; j + 1 < bins; j++) {
                int repeat = j > 0 && (shared == 2 ? j % 2 == 1 : shared == 4 && dr_rng_u64(93, j) % 4 != 0);
                edges[j] = repeat ? edges[j - 1] : k;
                k += step + (uint32_t)(dr_rng_u64(92, j) % 0x4000u);
            }
            if (shared == 3)
                edges[bins - 2] = 0xffff1234u;
            for (; j < p; j++)
                edges[j] = UINT32_MAX;
            if (!check_sketch_search(edges, p, bins - 1))
                fprintf(stderr, "sketch search: %u bins (shared %u) differ\n", bins, shared);
            CHECK(check_sketch_search(edges, p, bins - 1));
        }
    }
}

/* The kernels whose vector decoders write their output with non-temporal stores past the
 * threshold (sign kernels; natural; qsgd with buckets of 5, so outputs on and off the
 * 16-byte grid; the sketch's AVX2 decoder): the same frames and outputs on every path,
 * with one shared tensor. */
static void test_streamed(void)
{
    static const uint32_t table_bins[4] = {2, 5, 127, 256};
    float *x = malloc(TEST_STREAMED_N * sizeof *x);
    size_t b;
    fill(x, TEST_STREAMED_N, 21, 1.0f);
    check_paths("signsgd streamed", enc_signsgd, dr_signsgd_decode, x, TEST_STREAMED_N, dr_signsgd_size(TEST_STREAMED_N));
    check_paths("onebit streamed", enc_onebit, dr_onebit_decode, x, TEST_STREAMED_N, dr_onebit_size(TEST_STREAMED_N));
    check_paths("natural streamed", enc_natural, dr_natural_decode, x, TEST_STREAMED_N, dr_natural_size(TEST_STREAMED_N));
    g_s = 127;
    g_bucket = 5;
    check_paths("qsgd streamed", enc_qsgd, dr_qsgd_decode, x, TEST_STREAMED_N, dr_qsgd_size(TEST_STREAMED_N, 127, 5));
    g_bins = 127;
    check_paths("sketch streamed", enc_sketch, dr_sketch_decode, x, TEST_STREAMED_N, dr_sketch_size(TEST_STREAMED_N, 127));
    /* Past the prefix table's threshold on values whose edges differ in their top halves
     * (the table's paths: portable, AVX2 gathers, and AVX-512's for 256 bins). */
    fill_bits(x, 70001, 5);
    for (b = 0; b < 4; b++) {
        g_bins = table_bins[b];
        check_paths("sketch table", enc_sketch, dr_sketch_decode, x, 70001, dr_sketch_size(70001, g_bins));
    }
    /* The same with two in five entries +0.0 or -0.0: runs of equal edges (the table's
     * second form). */
    for (b = 0; b < 70001; b++)
        if (dr_rng_u64(6, b) % 5 < 2)
            x[b] = b % 2 ? 0.0f : -0.0f;
    for (b = 0; b < 4; b++) {
        g_bins = table_bins[b];
        check_paths("sketch table runs", enc_sketch, dr_sketch_decode, x, 70001, dr_sketch_size(70001, g_bins));
    }
    free(x);
    test_half_streamed();
    test_bitunpack_streamed();
#if DR_HAVE_X86_SIMD
    test_byte_lookups();
#endif
    test_sketch_search();
}


/* Natural compression where whole vectors hold normal values only, which the vector
 * encoders code by one carry add on the float bits: every exponent of the normal range
 * from 2^-63 up to the largest finite one (the codes past 127 capped), mantissas zero,
 * all ones, random and at their draw's rounding edge, both signs; every fifth vector of 16 also holds a zero, an Inf
 * or NaN ends the sweep at the right element. */
static void test_natural_normal_vectors(void)
{
    const size_t n = 4099;
    float *x = malloc(n * sizeof *x);
    uint8_t *buf = malloc(dr_natural_size(n));
    size_t i, len = 0, p;
    for (i = 0; i < n; i++) {
        uint32_t r = (uint32_t)dr_rng_u64(77, i), e = NAT_EXP_FIRST + r % (255u - NAT_EXP_FIRST);
        /* The draw's 23 bits against which the mantissa rounds up (when above them):
         * mantissas at and just past them, where an off-by-one would show. */
        uint32_t drawn = dr_rng_u32(0x99u, i) >> 9;
        uint32_t mant = i % 7 == 0 ? 0u : i % 7 == 1 ? 0x7fffffu : i % 7 == 2 ? drawn
                        : i % 7 == 3 ? (drawn + 1u) & 0x7fffffu : (r >> 9) & 0x7fffffu, u;
        u = (r & 0x80000000u) | e << 23 | mant;
        memcpy(&x[i], &u, sizeof u);
        if (i % 80 == 37)
            x[i] = 0.0f;
    }
    check_paths("natural normal", enc_natural, dr_natural_decode, x, n, dr_natural_size(n));
    for (p = 1; p < sizeof paths / sizeof *paths; p++) {
        static const float bad[3] = {NAN, -INFINITY, INFINITY};
        size_t b;
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        for (b = 0; b < 3; b++) {
            float keep = x[1041 + b]; /* a vector without a zero */
            x[1041 + b] = bad[b];
            CHECK_STATUS(dr_natural_encode(x, n, 0x99u, 0, buf, dr_natural_size(n), &len), DR_E_NUMERIC);
            x[1041 + b] = keep;
        }
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(x);
    free(buf);
}

/* qsgd's buckets taken eight at a time (AVX-512, buckets of a multiple of 16 elements)
 * where a group holds what the per-bucket code does instead: a zero bucket (ratio 0), a
 * bucket of tiny values (a ratio past float), one of huge values (a norm past FLT_MAX),
 * in each place of a group, and a NaN (refused on every path). */
static void test_qsgd_bucket_groups(void)
{
    enum { BUCKETS = 40 };
    static const uint32_t sizes[] = {16, 48, 128};
    static float x[BUCKETS * 128 + 9];
    size_t a, at, i;
    for (a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t m = sizes[a], n = BUCKETS * m + 9, cap = dr_qsgd_size(n, 127, m), len = 0;
        uint8_t *buf = malloc(cap);
        g_s = 127;
        g_bucket = (uint32_t)m;
        for (at = 0; at < 8; at++) {
            fill(x, n, 17 + at, 2.0f);
            for (i = 0; i < m; i++) {
                x[at * m + i] = 0.0f;
                x[(at + 9) * m + i] = (i % 3 ? 1e-38f : -3e-39f);
                x[(at + 18) * m + i] = (i % 2 ? 3e37f : -2.5e37f);
            }
            check_paths("qsgd odd buckets", enc_qsgd, dr_qsgd_decode, x, n, cap);
        }
        x[20 * m + 5] = NAN;
        for (i = 0; i < sizeof paths / sizeof *paths; i++) {
            setenv("DEEPREDUCE_SIMD", paths[i], 1);
            CHECK_STATUS(dr_qsgd_encode(x, n, 127, (uint32_t)m, 3, 0, buf, cap, &len), DR_E_NUMERIC);
        }
        unsetenv("DEEPREDUCE_SIMD");
        free(buf);
    }
#if DR_HAVE_X86_SIMD
    /* Counters up to a multiple of 2^32: each kernel stops at the bucket across it (its
     * draws restart there), with the buckets before as the per-bucket kernels make them;
     * from the bucket after, it takes every bucket. */
    {
        typedef size_t (*group_fn)(const float *, size_t, size_t, uint32_t, uint64_t, size_t, uint8_t *, uint8_t *,
                                   size_t);
        static const group_fn kernels[2] = {dr_qsgd_buckets_avx2, dr_qsgd_buckets_avx512};
        const size_t m = 32, first = ((size_t)1 << 32) - 5 * m - 8;
        uint8_t norms[4 * BUCKETS], levels[BUCKETS * 32], want[32];
        size_t k, p;
        fill(x, BUCKETS * m, 5, 1.5f);
        for (p = 0; p < 2; p++) {
            if (dr_simd_supported() < (p == 0 ? DR_SIMD_AVX2 : DR_SIMD_AVX512))
                continue;
            CHECK(kernels[p](x, BUCKETS, m, 127, 77, first, norms, levels, 1) == 5);
            for (k = 0; k < 5; k++) {
                float norm = (float)sqrt(dr_qsgd_sum_squares_avx2(x + k * m, m)), got;
                memcpy(&got, norms + 4 * k, 4);
                CHECK(got == norm);
                CHECK(dr_qsgd_levels_avx2(x + k * m, m, (float)(127.0 / norm), 127, 77, first + k * m, want, 1) == m);
                CHECK(memcmp(want, levels + k * m, m) == 0);
            }
            CHECK(kernels[p](x + 6 * m, BUCKETS - 6, m, 127, 77, first + 6 * m, norms, levels, 1) == BUCKETS - 6);
            CHECK(dr_qsgd_levels_avx2(x + 6 * m, m, (float)(127.0 / sqrt(dr_qsgd_sum_squares_avx2(x + 6 * m, m))), 127,
                                      77, first + 6 * m, want, 1) == m);
            CHECK(memcmp(want, levels, m) == 0);
        }
    }
#endif
}

/* dr_qsgd_encode/decode on a tensor long enough for 3 threads (one per
 * DR_THREADS_MIN_NUMEL elements): the same frame and output for 1, 2 and 3 threads. */
static void test_threads_same_bytes(void)
{
    const size_t n = 3 * DR_THREADS_MIN_NUMEL + 1000;
    float *x = malloc(n * sizeof *x), *out1 = malloc(n * sizeof *x), *out = malloc(n * sizeof *x);
    size_t cap = dr_qsgd_size(n, 127, 128), len1 = 0, len = 0;
    uint8_t *want = malloc(cap), *got = malloc(cap);
    static const char *const counts[] = {"2", "3"};
    size_t t;
    int built = threads_built();
    fill(x, n, 99, 1.0f);
    setenv("DEEPREDUCE_THREADS", "1", 1);
    CHECK_OK(dr_qsgd_encode(x, n, 127, 128, 5, 0, want, cap, &len1));
    CHECK_OK(dr_qsgd_decode(want, len1, out1, n));
    for (t = 0; t < 2; t++) {
        setenv("DEEPREDUCE_THREADS", counts[t], 1);
        CHECK(dr_thread_count() == (built ? (int)t + 2 : 1));
        CHECK_OK(dr_qsgd_encode(x, n, 127, 128, 5, 0, got, cap, &len));
        CHECK(len == len1 && memcmp(got, want, len) == 0);
        CHECK_OK(dr_qsgd_decode(want, len1, out, n));
        CHECK(memcmp(out, out1, n * sizeof *out) == 0);
    }
    /* A level or a norm out of range in a later thread's buckets is refused, resealed
     * so that the CRC passes, and the output is left untouched. */
    {
        size_t k;
        for (k = 0; k < 2; k++) {
            memcpy(got, want, len1);
            if (k == 0)
                got[len1 - 4 - 7] = 0x80; /* level -128 with s = 127 */
            else
                memset(got + dr_frame_header_size(2) + 4 * (n / 128 - 3), 0xff, 4); /* a NaN norm */
            reseal(got, len1);
            memset(out, 0x5a, n * sizeof *out);
            CHECK_STATUS(dr_qsgd_decode(got, len1, out, n), DR_E_CORRUPT);
            CHECK(((const uint8_t *)out)[0] == 0x5a && ((const uint8_t *)(out + n))[-1] == 0x5a);
        }
    }
    /* A non-finite value in a later thread's range is refused, as with one thread. */
    x[n - 10] = NAN;
    CHECK_STATUS(dr_qsgd_encode(x, n, 127, 128, 5, 0, got, cap, &len), DR_E_NUMERIC);
    setenv("DEEPREDUCE_THREADS", "zero", 1);
    CHECK(dr_thread_count() == 1);
    unsetenv("DEEPREDUCE_THREADS");
    free(x);
    free(out1);
    free(out);
    free(want);
    free(got);
}

/* dr_randomk and dr_randomk_sparsify on every path and thread count, on a tensor long
 * enough for 3 threads: the same indices and values for Floyd's draw (written out by the
 * scalar loop at 1%, in vectors at 5%), the dense draw (vectors of draws; a partial last
 * word), and each for a complement (k > n / 2); a NaN in the last thread's share refused
 * on every path. */
static void test_randomk_paths(void)
{
    const size_t n = 3 * DR_THREADS_MIN_NUMEL + 77;
    static const size_t per_mille[] = {10, 50, 300, 950, 600};
    static const char *const counts[] = {"1", "2", "3"};
    uint32_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    float *x = malloc(n * sizeof *x), *want_val = malloc(n * sizeof *x), *val = malloc(n * sizeof *x);
    void *work = malloc(dr_randomk_workspace_size(n));
    size_t c, p, t;
    fill(x, n, 5, 2.0f);
    for (c = 0; c < sizeof per_mille / sizeof *per_mille; c++) {
        size_t k = n / 1000 * per_mille[c];
        setenv("DEEPREDUCE_SIMD", "scalar", 1);
        setenv("DEEPREDUCE_THREADS", "1", 1);
        CHECK_OK(dr_randomk_sparsify(0xfeedu + c, x, n, k, want, want_val, work));
        for (p = 0; p < sizeof paths / sizeof *paths; p++)
            for (t = 0; t < sizeof counts / sizeof *counts; t++) {
                setenv("DEEPREDUCE_SIMD", paths[p], 1);
                setenv("DEEPREDUCE_THREADS", counts[t], 1);
                memset(got, 0xa5, k * sizeof *got);
                CHECK_OK(dr_randomk(0xfeedu + c, n, k, got, work));
                CHECK(memcmp(got, want, k * sizeof *got) == 0);
                memset(got, 0xa5, k * sizeof *got);
                CHECK_OK(dr_randomk_sparsify(0xfeedu + c, x, n, k, got, val, work));
                CHECK(memcmp(got, want, k * sizeof *got) == 0 && memcmp(val, want_val, k * sizeof *val) == 0);
                x[n - 100] = NAN;
                CHECK_STATUS(dr_randomk_sparsify(0xfeedu + c, x, n, k, got, val, work), DR_E_NUMERIC);
                x[n - 100] = 1.0f;
            }
    }
    unsetenv("DEEPREDUCE_SIMD");
    unsetenv("DEEPREDUCE_THREADS");
    free(want);
    free(got);
    free(x);
    free(want_val);
    free(val);
    free(work);
}

/* Each path's decode of buf[0..len) returns `status`. */
static int decodes_as(decode_fn decode, const uint8_t *buf, size_t len, float *out, size_t n, int status)
{
    size_t p;
    int same = 1;
    for (p = 0; p < sizeof paths / sizeof *paths; p++) {
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        same &= decode(buf, len, out, n) == status;
    }
    unsetenv("DEEPREDUCE_SIMD");
    return same;
}

/* inceptionn over several frame blocks, where the AVX-512 block kernels run (whole blocks
 * with room for their whole-vector stores and loads) and the scalar code takes the rest:
 * the same bytes on every path with a roomy cap and with the exact size (which leaves
 * the last blocks no room to spare); an Inf or a NaN in a late block refused on every
 * path; a zero magnitude or an Inf planted in the first block (vector-decoded; each of
 * the last 40 entries of each section in turn) and resealed refused as corrupt, a changed tag resealed refused for the lengths it
 * breaks, and a changed byte not resealed refused by the CRC. */
static void test_inceptionn_blocks(void)
{
    enum { B = DR_INCEPTIONN_BLOCK, N = 3 * B + 77, TAGS = B / 4 };
    static float x[N], out[N];
    static const uint32_t bounds[] = {1, 10, 17, 24};
    size_t cap = dr_inceptionn_bound(N), exact, len, i, p, n32 = 0, n16 = 0, n8 = 0, kind;
    uint8_t *buf = malloc(cap);
    const uint8_t *block = buf + 48; /* the first block: its tags, float32s, uint16s */
    int numeric = 1;
    fill(x, N, 91, 0.6f);
    for (i = 0; i < sizeof bounds / sizeof *bounds; i++) {
        g_bound = bounds[i];
        check_paths("inceptionn blocks", enc_inceptionn, dr_inceptionn_decode, x, N, cap);
        CHECK_OK(dr_inceptionn_size(x, N, g_bound, &exact));
        check_paths("inceptionn exact cap", enc_inceptionn, dr_inceptionn_decode, x, N, exact);
    }
    g_bound = 10;
    for (i = 0; i < 2; i++) {
        float saved = x[2 * B + 5];
        x[2 * B + 5] = i ? NAN : -INFINITY;
        for (p = 0; p < sizeof paths / sizeof *paths; p++) {
            setenv("DEEPREDUCE_SIMD", paths[p], 1);
            numeric &= dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len) == DR_E_NUMERIC;
        }
        unsetenv("DEEPREDUCE_SIMD");
        x[2 * B + 5] = saved;
    }
    CHECK(numeric);
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_OK));
    for (i = 0; i < B; i++) {
        unsigned tag = (block[i / 4] >> (2 * (i % 4))) & 3u;
        n32 += tag == 3;
        n16 += tag == 2;
        n8 += tag == 1;
    }
    CHECK(n32 > 0 && n16 > 0 && n8 > 0);
    /* Each of the last 40 entries of each section of the first block (the decoders' last
     * whole vectors and their ends one by one) made one the encoder cannot write: an Inf
     * float32, a uint16 or byte of magnitude 0 (its sign kept), resealed. */
    for (kind = 0; kind < 3; kind++) {
        size_t count = kind == 0 ? n32 : kind == 1 ? n16 : n8, at = 48 + TAGS, j;
        int refused = 1;
        at += kind == 0 ? 0 : kind == 1 ? 4 * n32 : 4 * n32 + 2 * n16;
        for (j = count > 40 ? count - 40 : 0; j < count; j++) {
            CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
            if (kind == 0) {
                memcpy(buf + at + 4 * j, &(float){-INFINITY}, 4);
            } else if (kind == 1) {
                buf[at + 2 * j] = 0;
                buf[at + 2 * j + 1] &= 0x80;
            } else {
                buf[at + j] &= 0x80;
            }
            reseal(buf, len);
            refused &= decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_CORRUPT);
        }
        CHECK(refused);
    }
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    buf[48 + TAGS + 4 * n32 + 1] = 0x80; /* the first uint16: -0 */
    buf[48 + TAGS + 4 * n32] = 0;
    reseal(buf, len);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_CORRUPT));
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    memcpy(buf + 48 + TAGS, &(float){INFINITY}, 4); /* the first float32 */
    reseal(buf, len);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_CORRUPT));
    buf[48 + TAGS + 4 * n32 + 7] ^= 1;
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_CHECKSUM));
    /* A tag of the first block changed (its length then disagrees with the blocks
     * after it), resealed. */
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    buf[48 + 100] ^= 0x0c;
    reseal(buf, len);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_FIELD));
    free(buf);
}

/* inceptionn's header: every bit of the fields after the structural ones (kind, codecs,
 * dtype, params, numel, count) flipped without resealing is told as damage
 * (DR_E_FRAME_CHECKSUM), as by every other codec; the same fields changed and resealed
 * get their own statuses, a params[1] other than the block size DR_E_FRAME_VERSION; and a
 * frame in the layout before blocks (4 sections, params[1] = 0), sealed, is refused as
 * another format version. On every path. */
static void test_inceptionn_header(void)
{
    enum { B = DR_INCEPTIONN_BLOCK, N = 2 * B + 5, FIELDS = 5, FIELDS_END = 44 };
    static float x[N], out[N];
    static const uint32_t other_blocks[] = {0, 256, 2048, B + 1};
    size_t cap = dr_inceptionn_bound(N), len, at, old_len, i;
    uint8_t *buf = malloc(cap);
    int told = 1, versions = 1;
    dr_frame old;
    fill(x, N, 7, 0.6f);
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    for (at = FIELDS; at < FIELDS_END; at++) {
        unsigned bit;
        if (at >= 9 && at < 12) /* nsections, flags, reserved: structural */
            continue;
        for (bit = 0; bit < 8; bit++) {
            buf[at] ^= (uint8_t)(1u << bit);
            told &= decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_CHECKSUM);
            buf[at] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK(told);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_OK));
    for (i = 0; i < sizeof other_blocks / sizeof *other_blocks; i++) {
        memcpy(buf + 16, &other_blocks[i], 4); /* params[1] */
        reseal(buf, len);
        versions &= decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_VERSION);
    }
    CHECK(versions);
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    buf[5] = DR_KIND_QSGD;
    reseal(buf, len);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_CODEC));
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, cap, &len));
    buf[12] = 25; /* params[0]: b out of range */
    reseal(buf, len);
    CHECK(decodes_as(dr_inceptionn_decode, buf, len, out, N, DR_E_FRAME_FIELD));

    /* The layout before blocks, of an all-zero x: every tag 0, no values. */
    memset(&old, 0, sizeof old);
    old.kind = DR_KIND_INCEPTIONN;
    old.nsections = 4;
    old.params[0] = 10;
    old.numel = old.count = N;
    old.section_len[0] = (N + 3) / 4;
    CHECK_OK(dr_frame_layout(&old, &old_len));
    memset(buf, 0, old_len);
    CHECK_OK(dr_frame_seal(&old, buf, cap, &old_len));
    CHECK(decodes_as(dr_inceptionn_decode, buf, old_len, out, N, DR_E_FRAME_VERSION));
    free(buf);
}

/* inceptionn on the magnitudes where its tags change, for every bound: each edge (the
 * drop bound 2^-b, the 8-bit top 255*2^-b, the 16-bit top 65535*2^-(k16+1), 1) and the
 * float on either side of it, both signs, repeated to fill whole vectors. */
static void test_inceptionn_band_edges(void)
{
    enum { N = 2 * DR_INCEPTIONN_BLOCK + 16 * 24 + 5 }; /* whole blocks: the vector kernels */
    static float x[N];
    size_t i;
    for (g_bound = 1; g_bound <= DR_INCEPTIONN_MAX_BITS; g_bound++) {
        int b = (int)g_bound, k16 = b - 1 > 15 ? b - 1 : 15;
        float edges[4];
        edges[0] = ldexpf(1.0f, -b);
        edges[1] = ldexpf(255.0f, -b);
        edges[2] = ldexpf(65535.0f, -(k16 + 1));
        edges[3] = 1.0f;
        for (i = 0; i < N; i++) {
            float e = edges[(i / 6) % 4];
            float v = i % 3 == 0 ? nextafterf(e, 0.0f) : i % 3 == 1 ? e : nextafterf(e, 2.0f);
            x[i] = (i / 3) % 2 ? -v : v;
        }
        check_paths("inceptionn edges", enc_inceptionn, dr_inceptionn_decode, x, N, dr_inceptionn_bound(N));
    }
    g_bound = 10;
}

/* 8bit on tensors large enough for the AVX-512 search by code bounds: gradients, huge
 * and tiny scales, every exponent, and the table's entries and midpoints times the scale
 * (where the nearest entry changes). */
static void test_eightbit_paths(void)
{
    const size_t n = 100003;
    float *x = malloc(n * sizeof *x), table[128];
    size_t i;
    static const float scales[] = {3.0f, 3e37f, 2e-29f, 7e-31f};
    CHECK_OK(dr_eightbit_table(table));
    for (i = 0; i < sizeof scales / sizeof *scales; i++) {
        fill(x, n, 11 + i, scales[i]);
        check_paths("8bit large", enc_eightbit, dr_eightbit_decode, x, n, dr_eightbit_size(n));
    }
    fill_bits(x, n, 13);
    check_paths("8bit large bits", enc_eightbit, dr_eightbit_decode, x, n, dr_eightbit_size(n));
    for (i = 0; i < n; i++) {
        float scale = 1.7f, t = table[(i / 4) % 127], t1 = table[(i / 4) % 127 + 1];
        float v = i % 4 == 0 ? t * scale : i % 4 == 1 ? 0.5f * (t + t1) * scale
                : i % 4 == 2 ? nextafterf(0.5f * (t + t1) * scale, 0.0f) : nextafterf(0.5f * (t + t1) * scale, 9.0f);
        x[i] = (i / 508) % 2 ? -v : v;
    }
    x[0] = 1.7f;
    check_paths("8bit large midpoints", enc_eightbit, dr_eightbit_decode, x, n, dr_eightbit_size(n));
    free(x);
}

/* adaq's one sweep (its counts, maxima and candidates) on every path: tensors large
 * enough for the candidates (with a ragged tail), ratios that take them and ones that
 * sweep x per count instead (their selection taken a vector at a time, as lists or as
 * the sign map, up to every entry), signs out of balance, and a tensor whose sample sets
 * the cut at a value most entries share, so the candidates overflow their room. */
static void test_adaq_paths(void)
{
    const size_t n = 100003;
    static const float ratios[] = {0.001f, 0.01f, 0.02f, 0.05f, 0.2f, 0.6f, 1.0f}; /* from 0.2: the map */
    float *x = malloc(n * sizeof *x);
    size_t i, r;
    g_adaq_work = malloc(dr_adaq_workspace_size(n));
    fill(x, n, 5, 2.0f);
    for (r = 0; r < sizeof ratios / sizeof *ratios; r++) {
        g_ratio = ratios[r];
        check_paths("adaq", enc_adaq, dr_adaq_decode, x, n, dr_adaq_bound(n));
        check_paths("adaq tail", enc_adaq, dr_adaq_decode, x, n - 77, dr_adaq_bound(n));
    }
    for (i = 0; i < n; i++)
        x[i] = x[i] < 0.0f ? x[i] * 0.01f : x[i];
    g_ratio = 0.01f;
    check_paths("adaq lopsided", enc_adaq, dr_adaq_decode, x, n, dr_adaq_bound(n));
    for (i = 0; i < n; i++)
        x[i] = i % 1000 == 0 ? -3.0f : 1.0f;
    check_paths("adaq ties", enc_adaq, dr_adaq_decode, x, n, dr_adaq_bound(n));
    free(g_adaq_work);
    free(x);
}

/* The raw sparse frame of the entries of x with |x| >= g_sparse_at, and its dense
 * decode: check_paths' encoder and decoder. */
static float g_sparse_at;

static int enc_sparse(const float *x, size_t n, uint8_t *buf, size_t cap, size_t *written)
{
    uint32_t *idx = malloc((n + 1) * sizeof *idx);
    float *val = malloc((n + 1) * sizeof *val);
    size_t i, r = 0;
    int st;
    for (i = 0; i < n; i++)
        if (fabsf(x[i]) >= g_sparse_at) {
            idx[r] = (uint32_t)i;
            val[r++] = x[i];
        }
    st = dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, cap, written);
    free(idx);
    free(val);
    return st;
}

static int dec_sparse(const uint8_t *buf, size_t len, float *out, size_t n)
{
    int finite;
    return dr_sparse_raw_decode_dense(buf, len, DR_KIND_THRESHOLD, out, n, &finite);
}

/* The raw sparse frame on every path, in both layouts (the bitmap from one entry in 32):
 * the same frames (the AVX-512 kernel builds a bitmap 16 indices at a time) and dense
 * decodes, and the same sums from the adding decoder over a tensor of NaNs (distinct
 * payloads) where the frame's values are NaNs too, or -0.0: a vector add keeps the
 * scalar one's operand order and leaves unsent entries' bits alone. */
static void test_sparse_frame_paths(void)
{
    static const size_t sizes[] = {1, 15, 16, 17, 100, 1000, 4099, 70003};
    static const float cuts[] = {0.0f, 0.5f, 2.5f, 5.0f, 100.0f}; /* every entry ... about 1 in 50 */
    size_t a, c, i, p;
    for (a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t n = sizes[a], len = 0;
        float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        uint8_t *buf = malloc(dr_sparse_raw_size(n));
        int same = 1;
        fill(x, n, 91 + n, 3.0f);
        for (c = 0; c < sizeof cuts / sizeof *cuts; c++) {
            g_sparse_at = cuts[c];
            check_paths("sparse frame", enc_sparse, dec_sparse, x, n, dr_sparse_raw_size(n));
        }
        /* NaN payloads on both sides of the adding decoder's sums: every other entry
         * sent, a third of those as NaNs; the tensor summed into holds NaNs, -0.0 and
         * 1.0. */
        {
            uint32_t *idx = malloc(n * sizeof *idx);
            float *val = malloc(n * sizeof *val);
            size_t r = 0;
            for (i = 0; i < n; i += 2) {
                uint32_t u = 0x7fc00000u | (uint32_t)(i * 2654435761u & 0x3fffffu);
                idx[r] = (uint32_t)i;
                val[r] = x[i];
                if (i % 3 == 0)
                    memcpy(&val[r], &u, sizeof u);
                r++;
            }
            CHECK_OK(dr_sparse_raw_encode(DR_KIND_THRESHOLD, 0, n, idx, val, r, buf, dr_sparse_raw_size(n), &len));
            for (p = 0; p < sizeof paths / sizeof *paths; p++) {
                float *out = p == 0 ? want : got;
                setenv("DEEPREDUCE_SIMD", paths[p], 1);
                for (i = 0; i < n; i++) {
                    uint32_t u = 0xffc00000u | (uint32_t)(i * 40503u & 0x3fffffu);
                    if (i % 4 == 1 || i % 4 == 2)
                        memcpy(&out[i], &u, sizeof u);
                    else
                        out[i] = i % 4 == 0 ? -0.0f : 1.0f;
                }
                CHECK_OK(dr_sparse_raw_decode_add(buf, len, DR_KIND_THRESHOLD, out, n, NULL));
                if (p > 0)
                    same &= memcmp(got, want, n * sizeof *got) == 0;
            }
            free(idx);
            free(val);
        }
        unsetenv("DEEPREDUCE_SIMD");
        if (!same)
            fprintf(stderr, "sparse frame n=%zu: the adding decoder's NaNs differ between paths\n", n);
        CHECK(same);
        free(x);
        free(want);
        free(got);
        free(buf);
    }
    /* Past the streaming threshold, a bitmap: the dense decode (streamed by AVX-512 and
     * AVX2), and dr_threshold_encode (its sections streamed) giving the two calls' bytes
     * on every path. */
    {
        const size_t n = TEST_STREAMED_N, cap = dr_sparse_raw_size(TEST_STREAMED_N);
        float *x = malloc(n * sizeof *x);
        uint8_t *want = malloc(cap), *got = malloc(cap);
        size_t want_len = 0, len = 0, count = 0;
        int same = 1;
        fill(x, n, 93, 3.0f);
        g_sparse_at = 0.5f;
        check_paths("sparse frame streamed", enc_sparse, dec_sparse, x, n, cap);
        CHECK_OK(enc_sparse(x, n, want, cap, &want_len));
        for (p = 0; p < sizeof paths / sizeof *paths; p++) {
            setenv("DEEPREDUCE_SIMD", paths[p], 1);
            memset(got, 0xa5, cap);
            CHECK_OK(dr_threshold_encode(DR_KIND_THRESHOLD, x, n, 0.5f, got, cap, &len, &count));
            same &= len == want_len && memcmp(got, want, len) == 0;
        }
        unsetenv("DEEPREDUCE_SIMD");
        CHECK(same);
        free(x);
        free(want);
        free(got);
    }
}

/* A decoder past the streamed-store threshold on every path, into an output at a cache
 * line's start and 4, 16, 32 and 48 bytes past it (4 is off the 16-byte grid, so not
 * streamed; the others stream whole lines and write the floats around them each
 * decoder's own way): the same floats as the scalar path's, and the floats around
 * out[0..n) untouched. */
static int streamed_decode_same(decode_fn decode, const uint8_t *buf, size_t len, size_t n)
{
    static const size_t offsets[] = {0, 1, 4, 8, 12}; /* floats past a line start */
    const size_t room = n + 32;
    float *want = malloc(n * sizeof *want), *mem = malloc((room + 16) * sizeof *mem);
    float *got = (float *)(void *)(((uintptr_t)mem + 63u) & ~(uintptr_t)63u); /* a cache line's start */
    size_t p, o, i;
    int same = 1;
    setenv("DEEPREDUCE_SIMD", "scalar", 1);
    CHECK_OK(decode(buf, len, want, n));
    for (p = 1; p < sizeof paths / sizeof *paths; p++) {
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        for (o = 0; o < sizeof offsets / sizeof *offsets; o++) {
            size_t off = offsets[o];
            for (i = 0; i < room; i++)
                got[i] = 7.0f;
            CHECK_OK(decode(buf, len, got + off, n));
            same &= memcmp(got + off, want, n * sizeof *want) == 0;
            for (i = 0; i < room; i++)
                same &= (i >= off && i < off + n) || got[i] == 7.0f;
        }
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(mem);
    free(want);
    return same;
}

/* adaq's dense decoders, of lists (whose first floats of each block are streamed 16
 * bytes at a time, then whole lines) and of the sign map (16 bytes at a time: terngrad's
 * lookup), and inceptionn's (whose blocks stream the lines they fill and write the two
 * they share with their neighbours through the cache) past the streamed-store
 * threshold. */
static void test_streamed_decoders(void)
{
    const size_t n = TEST_STREAMED_N;
    const size_t cap = dr_inceptionn_bound(n) > dr_adaq_bound(n) ? dr_inceptionn_bound(n) : dr_adaq_bound(n);
    float *x = malloc(n * sizeof *x);
    uint8_t *buf = malloc(cap);
    size_t len = 0;
    g_adaq_work = malloc(dr_adaq_workspace_size(n));
    fill(x, n, 41, 1.0f);
    g_ratio = 0.04f;
    CHECK_OK(enc_adaq(x, n, buf, dr_adaq_bound(n), &len));
    CHECK(buf[12] == DR_ADAQ_LISTS && streamed_decode_same(dr_adaq_decode, buf, len, n));
    g_ratio = 0.3f;
    CHECK_OK(enc_adaq(x, n, buf, dr_adaq_bound(n), &len));
    CHECK(buf[12] == DR_ADAQ_SIGN_MAP && streamed_decode_same(dr_adaq_decode, buf, len, n));
    g_ratio = 0.01f;
    g_bound = 10;
    CHECK_OK(enc_inceptionn(x, n, buf, cap, &len));
    CHECK(streamed_decode_same(dr_inceptionn_decode, buf, len, n));
    free(g_adaq_work);
    free(buf);
    free(x);
}

/* dr_crc32 on every path equals zlib's crc32, for lengths around the vector loop's
 * steps, unaligned starts and a running crc carried in. */
static void test_crc32_paths(void)
{
    static uint8_t bytes[5000];
    size_t i, len, off;
    int same = 1;
    for (i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)(dr_rng_u64(17, i) >> 56);
    for (off = 0; off < 16; off += 5)
        for (len = 0; len + off <= sizeof bytes; len += len < 300 ? 1 : 97) {
            uint32_t want = (uint32_t)crc32(12345u, bytes + off, (uInt)len);
            size_t p;
            for (p = 0; p < sizeof paths / sizeof *paths; p++) {
                setenv("DEEPREDUCE_SIMD", paths[p], 1);
                same &= dr_crc32(12345u, bytes + off, len) == want;
            }
        }
    unsetenv("DEEPREDUCE_SIMD");
    CHECK(same);
}

/* dr_crc32 on buffers long enough to split over threads (one per 4 MiB from 8 MiB on)
 * equals zlib's crc32 for every thread count: lengths at and around the split's
 * threshold and ragged ones, an unaligned start and a running crc carried in. */
static void test_crc32_threads(void)
{
    const size_t mib = (size_t)1 << 20, most = 21 * mib + 77;
    static const char *const counts[] = {"1", "2", "3", "5", "8"};
    const size_t lens[] = {8 * mib - 1, 8 * mib, 8 * mib + 1, 12 * mib + 7, 21 * mib + 70};
    uint8_t *bytes = malloc(most);
    size_t i, l, t;
    int same = 1;
    for (i = 0; i < most; i++)
        bytes[i] = (uint8_t)(dr_rng_u64(23, i) >> 56);
    for (l = 0; l < sizeof lens / sizeof *lens; l++) {
        uint32_t want = (uint32_t)crc32(987654u, bytes + 3, (uInt)lens[l]);
        for (t = 0; t < sizeof counts / sizeof *counts; t++) {
            setenv("DEEPREDUCE_THREADS", counts[t], 1);
            same &= dr_crc32(987654u, bytes + 3, lens[l]) == want;
        }
    }
    unsetenv("DEEPREDUCE_THREADS");
    CHECK(same);
    free(bytes);
}

/* The AVX2 kernels' stand-ins for PDEP and PEXT (lane_tables.h) against their
 * definitions, bit by bit: every entry of the lane and tag tables, every pair of 8-bit
 * masks interleaved. */
static void test_lane_tables(void)
{
    uint32_t m, a, b, width;
    int tables_ok = 1, bits_ok = 1;
    for (m = 0; m < 256; m++) {
        unsigned lane, packed = 0, tag, ones[4] = {0, 0, 0, 0}, lanes[4] = {0, 0, 0, 0};
        for (lane = 0; lane < 8; lane++)
            if ((m >> lane) & 1u)
                tables_ok &= ((dr_pack_lanes8[m] >> (8 * packed++)) & 0xffu) == lane;
        for (; packed < 8; packed++)
            tables_ok &= ((dr_pack_lanes8[m] >> (8 * packed)) & 0xffu) == 0x80u;
        for (lane = 0, packed = 0; lane < 8; lane++)
            tables_ok &= ((dr_expand_lanes8[m] >> (8 * lane)) & 0xffu) == ((m >> lane) & 1u ? packed++ : 0x80u);
        /* m as four 2-bit tags. */
        for (lane = 0; lane < 4; lane++) {
            tag = (m >> (2 * lane)) & 3u;
            lanes[tag] |= 1u << lane;
            ones[tag]++;
        }
        tables_ok &= dr_crumb_fields[m][0] == 16u * lanes[1] && dr_crumb_fields[m][1] == 16u * lanes[2] &&
                     dr_crumb_fields[m][2] == 16u * lanes[3] && dr_crumb_fields[m][3] == ones[1] &&
                     dr_crumb_fields[m][4] == 2u * ones[2] && dr_crumb_fields[m][5] == 4u * ones[3] &&
                     dr_crumb_fields[m][6] == 0 && dr_crumb_fields[m][7] == 0;
    }
    for (width = 0; width < 3; width++)
        for (m = 0; m < 16; m++) {
            unsigned w = 1u << width, lane, byte, rank = 0;
            for (lane = 0; lane < 4; lane++)
                for (byte = 0; byte < 4; byte++) {
                    unsigned want = 0x80u;
                    if (((m >> lane) & 1u) && byte >= 4u - w)
                        want = w * rank + byte - (4u - w);
                    tables_ok &= dr_crumb_spread[width][m][4 * lane + byte] == want;
                    rank += ((m >> lane) & 1u) && byte == 3u;
                }
        }
    for (a = 0; a < 256; a++)
        for (b = 0; b < 256; b++) {
            uint32_t want = 0, bit;
            for (bit = 0; bit < 8; bit++)
                want |= ((a >> bit) & 1u) << (2 * bit) | ((b >> bit) & 1u) << (2 * bit + 1);
            bits_ok &= dr_interleave_bits8(a, b) == want;
        }
    CHECK(tables_ok);
    CHECK(bits_ok);
}

/* Elias-Fano and Rice, whose AVX-512 and AVX2 decoders take the unary sweep in vectors
 * (and Rice's its running sum of the lows): every path decodes each section, and the
 * section with one byte changed, cut short or read with a wrong r, to the same status
 * and, where accepted, the same indices. Sets that cross the vector decoders' block of
 * 1024 ones, vectors with a ragged last word, all of [0, d), and a wide d. */
typedef int (*index_decode_fn)(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *out);

static int decode_on_paths(index_decode_fn decode, const uint8_t *in, size_t len, size_t d, size_t r)
{
    /* Exactly r entries, so that ASan sees a write past them. */
    uint32_t *want = malloc((r > 0 ? r : 1) * sizeof *want), *got = malloc((r > 0 ? r : 1) * sizeof *got);
    int want_st, same = 1;
    size_t p;
    setenv("DEEPREDUCE_SIMD", "scalar", 1);
    want_st = decode(len > 0 ? in : NULL, len, d, r, want);
    for (p = 1; p < sizeof paths / sizeof *paths; p++) {
        int st;
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        st = decode(len > 0 ? in : NULL, len, d, r, got);
        same &= st == want_st && (st != DR_OK || r == 0 || memcmp(got, want, r * sizeof *got) == 0);
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(want);
    free(got);
    return same;
}

typedef int (*index_encode_fn)(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap, size_t *written);

/* Encodes on every path into a buffer of exactly `cap` bytes (so that ASan sees a store
 * past it) and compares status, size and bytes with the scalar path's. */
static int encode_on_paths(index_encode_fn encode, const uint32_t *idx, size_t r, size_t d, size_t cap)
{
    uint8_t *want = malloc(cap > 0 ? cap : 1), *got = malloc(cap > 0 ? cap : 1);
    size_t want_len = 0, got_len = 0, p;
    int want_st, same = 1;
    setenv("DEEPREDUCE_SIMD", "scalar", 1);
    want_st = encode(idx, r, d, want, cap, &want_len);
    for (p = 1; p < sizeof paths / sizeof *paths; p++) {
        int st;
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        memset(got, 0xa5, cap);
        st = encode(idx, r, d, got, cap, &got_len);
        same &= st == want_st && (st != DR_OK || (got_len == want_len && memcmp(got, want, want_len) == 0));
    }
    unsetenv("DEEPREDUCE_SIMD");
    free(want);
    free(got);
    return same;
}

#if DR_HAVE_X86_SIMD
/* The AVX2 unary decoders' tables against their definitions: for each byte, lane j holds
 * the zeros below its j-th one, and 0 past its last one; and its zeros. */
static void test_unary_tables(void)
{
    unsigned byte, bit;
    int ok = 1;
    for (byte = 0; byte < 256u; byte++) {
        unsigned ones = 0;
        for (bit = 0; bit < 8u; bit++)
            if ((byte >> bit) & 1u) {
                ok &= dr_byte_zeros_below[byte][ones] == bit - ones;
                ones++;
            }
        ok &= dr_byte_zeros[byte] == 8u - ones;
        for (; ones < 8u; ones++)
            ok &= dr_byte_zeros_below[byte][ones] == 0u;
    }
    CHECK(ok);
}
#endif

/* Elias-Fano's order check on every path: index t made equal to index t - 1, or below
 * it, by its low field (where the two share their high part: no zero between their ones),
 * at every lane of the first steps, around the AVX2 and AVX-512 decoders' blocks of 1024
 * ones and at the end; each path must refuse it, the scalar one included. */
static void test_ef_order_on_paths(void)
{
    static const struct {
        size_t d, r;
    } sets[] = {{1u << 16, 24000}, {1u << 20, 100000}};
    size_t s;
    for (s = 0; s < sizeof sets / sizeof *sets; s++) {
        size_t d = sets[s].d, r = sets[s].r, cap = dr_index_ef_bound(d, r), len = 0, t, checked = 0;
        uint32_t *idx = malloc(r * sizeof *idx), *back = malloc(r * sizeof *back);
        uint8_t *sec = malloc(cap), *copy = malloc(cap);
        void *work = malloc(dr_randomk_workspace_size(d));
        unsigned l;
        int ok = 1;
        dr_randomk(55 + s, d, r, idx, work);
        CHECK_OK(dr_index_ef_encode(idx, r, d, sec, cap, &len));
        l = sec[0];
        for (t = 1; t < r; t++) {
            uint32_t mask = (1u << l) - 1u, low_before = idx[t - 1] & mask, lowered;
            int near = t < 40u || t % 1024u < 24u || t % 1024u > 1000u || t + 40u > r;
            if (!near || idx[t] >> l != idx[t - 1] >> l)
                continue;
            /* equal to the one before, then (where it can be) one below it */
            for (lowered = 0; lowered < 2u && lowered <= low_before; lowered++) {
                uint32_t field = low_before - lowered;
                size_t b;
                memcpy(copy, sec, len);
                for (b = 0; b < l; b++) {
                    uint64_t bit = 8u + (uint64_t)t * l + b; /* byte 0 holds l */
                    unsigned one = 1u << (bit % 8u);
                    copy[bit / 8u] = (uint8_t)(((field >> b) & 1u) ? copy[bit / 8u] | one : copy[bit / 8u] & ~one);
                }
                setenv("DEEPREDUCE_SIMD", "scalar", 1);
                ok &= dr_index_ef_decode(copy, len, d, r, back) == DR_E_CORRUPT;
                unsetenv("DEEPREDUCE_SIMD");
                ok &= decode_on_paths(dr_index_ef_decode, copy, len, d, r);
                checked++;
            }
        }
        if (!ok)
            fprintf(stderr, "ef d=%zu r=%zu: an index out of order accepted, or paths differ\n", d, r);
        CHECK(ok && checked > 100u);
        free(idx);
        free(back);
        free(sec);
        free(copy);
        free(work);
    }
}

static void test_unary_index_paths(void)
{
    /* `ramp` > 0: the gaps of the b-th 16 indices drawn around 2^(b % ramp - ramp / 2 - 1)
     * times the mean instead, so that the AVX-512 encoders' steps of 16 ones (and the
     * AVX2 encoders' of 8) span from one word to many (past the two a step writes at
     * once); ramp 1 gives all r indices, the sections then ending where a step of 16 does.
     * d = 2^32 is the largest a section may have. */
    static const struct {
        size_t d, r, ramp;
    } sets[] = {{1, 1, 0},          {64, 64, 0},       {65, 3, 0},         {1000, 3, 0},
                {4099, 100, 0},     {100000, 2500, 0}, {100000, 60000, 0}, {70000, 70000, 0},
                {1u << 20, 1200, 0}, {(size_t)1 << 31, 5, 0}, {5000, 33, 0},  {(size_t)1 << 32, 17, 0},
                {1u << 22, 9000, 9}, {1u << 20, 3000, 13}, {(size_t)1 << 32, 4000, 7}, {1u << 24, 48, 3},
                {1u << 16, 64, 1},  {1u << 20, 4096, 1}, {(size_t)1 << 32, 32, 1}};
    static const uint8_t masks[] = {0x01, 0x80, 0xff};
    size_t s, c;
#if DR_HAVE_X86_SIMD
    test_unary_tables();
#endif
    for (s = 0; s < sizeof sets / sizeof *sets; s++) {
        size_t d = sets[s].d, r = 0, i;
        uint32_t *idx = malloc(sets[s].r * sizeof *idx);
        /* r of the d indices, spread at random: each gap drawn up to twice the mean (or
         * as `ramp` says). */
        uint64_t at = 0, mean = (uint64_t)d / sets[s].r;
        for (i = 0; i < sets[s].r && at < d; i++) {
            uint64_t spread = sets[s].ramp == 0 ? mean : (mean << (i / 16u % sets[s].ramp)) >> (sets[s].ramp / 2u + 1u);
            idx[r++] = (uint32_t)at;
            at += 1u + (spread > 1u ? dr_rng_u64(77, i) % (2u * spread - 1u) : 0u);
        }
        for (c = 0; c < 2; c++) {
            size_t cap = c == 0 ? dr_index_ef_bound(d, r) : dr_index_rice_bound(d, r), len = 0, pos, m, cut;
            index_decode_fn decode = c == 0 ? dr_index_ef_decode : dr_index_rice_decode;
            index_encode_fn encode = c == 0 ? dr_index_ef_encode : dr_index_rice_encode;
            uint8_t *sec = malloc(cap), *copy = malloc(cap);
            int ok = 1;
            CHECK_OK(encode(idx, r, d, sec, cap, &len));
            ok &= encode_on_paths(encode, idx, r, d, cap);
            ok &= encode_on_paths(encode, idx, r, d, len);
            ok &= decode_on_paths(decode, sec, len, d, r);
            ok &= decode_on_paths(decode, sec, len, d, r - 1);
            if (r < d)
                ok &= decode_on_paths(decode, sec, len, d, r + 1);
            /* Every byte of a short section, some 300 of a long one. */
            for (pos = 0; pos < len; pos += len < 600 ? 1 : len / 300)
                for (m = 0; m < sizeof masks; m++) {
                    memcpy(copy, sec, len);
                    copy[pos] ^= masks[m];
                    ok &= decode_on_paths(decode, copy, len, d, r);
                }
            for (cut = 0; cut < len; cut += len < 64 ? 1 : len / 16)
                ok &= decode_on_paths(decode, sec, cut, d, r);
            if (!ok)
                fprintf(stderr, "%s d=%zu r=%zu: paths differ\n", c == 0 ? "ef" : "rice", d, r);
            CHECK(ok);
            free(sec);
            free(copy);
        }
        free(idx);
    }
    test_ef_order_on_paths();
}

/* The quantisers on every size, level and bucket count, and the kernels' own checks. */
static void test_kernels(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 31, 127, 128, 129, 1000, 4099};
    static const uint32_t levels[] = {1, 7, 127, 128, 32767};
    static const uint32_t buckets[] = {1, 5, 8, 16, 48, 128, 512, 100000};
    enum { NMAX = 4099 };
    static float x[NMAX];
    size_t a, b, c;
    for (a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        size_t n = sizes[a];
        fill(x, n, 42 + n, 3.0f);
        for (b = 0; b < sizeof levels / sizeof *levels; b++)
            for (c = 0; c < sizeof buckets / sizeof *buckets; c++) {
                g_s = levels[b];
                g_bucket = buckets[c];
                check_paths("qsgd", enc_qsgd, dr_qsgd_decode, x, n, dr_qsgd_size(n, g_s, g_bucket));
            }
        check_paths("terngrad", enc_terngrad, dr_terngrad_decode, x, n, dr_terngrad_size(n));
        check_paths("onebit", enc_onebit, dr_onebit_decode, x, n, dr_onebit_size(n));
        check_paths("efsignsgd", enc_efsignsgd, dr_efsignsgd_decode, x, n, dr_efsignsgd_size(n));
        check_paths("natural", enc_natural, dr_natural_decode, x, n, dr_natural_size(n));
        for (b = 0; b < 10; b++) {
            /* Every level count of the AVX-512 and AVX2 searches (0 to 8: bins padded to
             * 1, 2, 4, 8, 16, 32, 64, 128, 256), and past it. */
            static const uint32_t sketch_bins[10] = {1, 2, 3, 5, 16, 17, 33, 127, 256, 1000};
            g_bins = sketch_bins[b];
            check_paths("sketch", enc_sketch, dr_sketch_decode, x, n, dr_sketch_size(n, g_bins));
        }
        /* Huge values (up to 1.2e38): norms past FLT_MAX, clip bounds past it. */
        fill(x, n, 7 + n, 3e37f);
        g_s = 127;
        g_bucket = 128;
        check_paths("qsgd huge", enc_qsgd, dr_qsgd_decode, x, n, dr_qsgd_size(n, 127, 128));
        check_paths("terngrad huge", enc_terngrad, dr_terngrad_decode, x, n, dr_terngrad_size(n));
        check_paths("8bit", enc_eightbit, dr_eightbit_decode, x, n, dr_eightbit_size(n));
        for (b = 0; b < 3; b++) {
            static const uint32_t bounds[] = {1, 10, 24};
            g_bound = bounds[b];
            check_paths("inceptionn", enc_inceptionn, dr_inceptionn_decode, x, n, dr_inceptionn_bound(n));
        }
        fill_bits(x, n, 3 + n);
        check_paths("8bit bits", enc_eightbit, dr_eightbit_decode, x, n, dr_eightbit_size(n));
        /* Every bound: the vector paths tag by thresholds derived from it. */
        for (g_bound = 1; g_bound <= DR_INCEPTIONN_MAX_BITS; g_bound++)
            check_paths("inceptionn bits", enc_inceptionn, dr_inceptionn_decode, x, n, dr_inceptionn_bound(n));
        check_paths("natural bits", enc_natural, dr_natural_decode, x, n, dr_natural_size(n));
    }
    test_threads_same_bytes();
    test_qsgd_bucket_groups();
    test_randomk_paths();
    test_adaq_paths();
    test_sparse_frame_paths();
    test_streamed_decoders();
    test_eightbit_paths();
    test_inceptionn_band_edges();
    test_inceptionn_blocks();
    test_inceptionn_header();
    test_crc32_paths();
    test_crc32_threads();
    test_signum_fused_paths();
    test_natural_normal_vectors();
    test_lane_tables();
}

/* One group per argument ("kernels", "streamed", "index"; none: all three). ctest runs
 * the groups as tests of their own, so that `ctest -j` runs them side by side: together
 * they took 20 s of a 34 s ctest under ASan, on one core. */
int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } groups[] = {{"kernels", test_kernels}, {"streamed", test_streamed}, {"index", test_unary_index_paths}};
    size_t g, ran = 0;
    for (g = 0; g < sizeof groups / sizeof *groups; g++)
        if (argc < 2 || strcmp(argv[1], groups[g].name) == 0) {
            groups[g].run();
            ran++;
        }
    if (ran == 0) {
        fprintf(stderr, "test_simd_paths: unknown group %s (kernels, streamed or index)\n", argv[1]);
        return 2;
    }
    return check_summary("test_simd_paths");
}
