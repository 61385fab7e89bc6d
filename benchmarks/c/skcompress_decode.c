/* Decode time of SKCompress's sections (value bins 4, 128, 256; the keys), median of 201
 * decodes of one encoding of Laplace values / keys spaced ~100 apart, printed as a table.
 * The decoders rebuild the code table from the symbols they decoded (one encoding per
 * section), which this measures. Built (not run) with the C tests; from the repo root:
 *   cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel
 *   cc -O2 -std=c99 -Isrc/c/include benchmarks/c/skcompress_decode.c \
 *      build/rel/libdeepreduce_core.a -lz -lm -lpthread -o build/skcompress_decode
 *   build/skcompress_decode */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "deepreduce.h"
#include "bench_time.h"

#define RUNS 201

/* The median time of RUNS calls of decode(sec, len), in microseconds; -1 if one fails. */
typedef int (*decode_fn)(const uint8_t *sec, size_t len, const void *ctx);

static double median_us(decode_fn decode, const uint8_t *sec, size_t len, const void *ctx)
{
    double t[RUNS];
    int i;
    for (i = 0; i < RUNS; i++) {
        double start = bench_seconds(CLOCK_MONOTONIC);
        if (decode(sec, len, ctx) != DR_OK)
            return -1.0;
        t[i] = bench_seconds(CLOCK_MONOTONIC) - start;
    }
    return 1e6 * bench_median(t, RUNS);
}

typedef struct {
    size_t r, d;
    uint32_t bins;
    float *val;
    uint32_t *idx;
} shape;

static int decode_values(const uint8_t *sec, size_t len, const void *ctx)
{
    const shape *s = ctx;
    return dr_value_skcompress_decode(sec, len, s->r, s->bins, s->val);
}

static int decode_keys(const uint8_t *sec, size_t len, const void *ctx)
{
    const shape *s = ctx;
    return dr_index_skcompress_decode(sec, len, s->d, s->r, s->idx);
}

int main(void)
{
    static const size_t rs[3] = {368, 36864, 262144};
    static const uint32_t bins[3] = {4, 128, 256};
    uint64_t state = 1;
    size_t t, j;
    unsigned b;
    printf("| section | r | bins | decode µs (median of %d) |\n|---|---|---|---|\n", RUNS);
    for (t = 0; t < 3; t++) {
        size_t r = rs[t], cap = dr_index_skcompress_bound(100 * r + 16, r), written;
        float *val = malloc(r * sizeof *val);
        uint32_t *idx = malloc(r * sizeof *idx);
        uint8_t *sec = malloc(dr_value_skcompress_bound(r, 256) > cap ? dr_value_skcompress_bound(r, 256) : cap);
        shape s = {r, 100 * r + 16, 0, NULL, NULL};
        if (val == NULL || idx == NULL || sec == NULL)
            return 1;
        for (j = 0; j < r; j++) {
            double u;
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            u = ((double)(state >> 11) + 0.5) / 9007199254740992.0;
            val[j] = (float)(u < 0.5 ? log(2.0 * u) : -log(2.0 - 2.0 * u)); /* Laplace */
            idx[j] = (uint32_t)(100 * j + (state >> 60));
        }
        s.val = malloc(r * sizeof *s.val);
        s.idx = malloc(r * sizeof *s.idx);
        for (b = 0; b < 3; b++) {
            size_t ws = (dr_value_skcompress_workspace_size(r, bins[b]) + 7u) & ~(size_t)7u;
            void *work = malloc(ws);
            s.bins = bins[b];
            if (work == NULL ||
                dr_value_skcompress_encode(val, r, bins[b], 7, sec, dr_value_skcompress_bound(r, bins[b]),
                                           &written, work) != DR_OK)
                return 1;
            printf("| values | %zu | %u | %.2f |\n", r, bins[b], median_us(decode_values, sec, written, &s));
            free(work);
        }
        if (dr_index_skcompress_encode(idx, r, s.d, sec, cap, &written) != DR_OK)
            return 1;
        printf("| keys | %zu | - | %.2f |\n", r, median_us(decode_keys, sec, written, &s));
        free(val);
        free(idx);
        free(sec);
        free(s.val);
        free(s.idx);
    }
    return 0;
}
