/* A quantiser's encode + decode, `reps` times, on 25,557,032 normal floats (ResNet-50's
 * size): a fixed amount of work for `perf stat -e instructions:u`, whose counts do not
 * depend on the machine's load (the `none` kernel gives the setup's count to subtract),
 * and a CRC of the last frame (less its own CRC) to compare builds' bytes. Built (not
 * run) with the C tests; from the repo root:
 *   cmake -S . -B build/rel && cmake --build build/rel
 *   cc -O2 -std=c99 -Isrc/c/include benchmarks/c/quant_calls.c build/rel/libdeepreduce_core.a \
 *      -lz -lm -lpthread -o build/quant_calls
 *   perf stat -e instructions:u build/quant_calls adaq 5     (and none, inceptionn, sketch,
 *                                                            eightbit, qsgd, natural,
 *                                                            terngrad, onebit;
 *                                                            DEEPREDUCE_SIMD caps)
 * sketch takes its bin count as an optional third argument (default 127). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deepreduce.h"

int main(int argc, char **argv)
{
    const size_t n = 25557032;
    size_t cap = 5 * n + 4096, len = 0, i;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    uint8_t *buf = malloc(cap);
    uint32_t bins = argc == 4 ? (uint32_t)atoi(argv[3]) : 127u;
    void *work = malloc(dr_adaq_workspace_size(n) + dr_sketch_workspace_size(n, bins));
    int reps, r, st = DR_OK;
    const char *kernel;
    if (argc < 3 || argc > 4 || x == NULL || out == NULL || buf == NULL || work == NULL) {
        fprintf(stderr, "usage: quant_calls none|adaq|inceptionn|sketch|eightbit|qsgd|natural|terngrad|onebit REPS [BINS]\n");
        return 2;
    }
    kernel = argv[1];
    reps = atoi(argv[2]);
    /* Box-Muller pairs from the library's counter generator: the same tensor every run. */
    for (i = 0; i + 1 < n; i += 2) {
        float radius = sqrtf(-2.0f * logf(dr_rng_uniform(7, i) + 1e-7f)), turn = 6.2831853f * dr_rng_uniform(8, i);
        x[i] = radius * cosf(turn);
        x[i + 1] = radius * sinf(turn);
    }
    x[n - 1] = 0.5f;
    for (r = 0; r < reps && st == DR_OK; r++) {
        if (strcmp(kernel, "adaq") == 0) {
            st = dr_adaq_encode(x, n, 0.01f, 1, 0, work, buf, cap, &len);
            st = st != DR_OK ? st : dr_adaq_decode(buf, len, out, n);
        } else if (strcmp(kernel, "inceptionn") == 0) {
            st = dr_inceptionn_encode(x, n, DR_INCEPTIONN_DEFAULT_BITS, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_inceptionn_decode(buf, len, out, n);
        } else if (strcmp(kernel, "sketch") == 0) {
            st = dr_sketch_encode(x, n, bins, 1, 0, work, buf, cap, &len);
            st = st != DR_OK ? st : dr_sketch_decode(buf, len, out, n);
        } else if (strcmp(kernel, "eightbit") == 0) {
            st = dr_eightbit_encode(x, n, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_eightbit_decode(buf, len, out, n);
        } else if (strcmp(kernel, "qsgd") == 0) {
            st = dr_qsgd_encode(x, n, 127, 128, 1, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_qsgd_decode(buf, len, out, n);
        } else if (strcmp(kernel, "natural") == 0) {
            st = dr_natural_encode(x, n, 1, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_natural_decode(buf, len, out, n);
        } else if (strcmp(kernel, "terngrad") == 0) {
            st = dr_terngrad_encode(x, n, 1, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_terngrad_decode(buf, len, out, n);
        } else if (strcmp(kernel, "onebit") == 0) {
            st = dr_onebit_encode(x, n, 0, buf, cap, &len);
            st = st != DR_OK ? st : dr_onebit_decode(buf, len, out, n);
        } else if (strcmp(kernel, "none") != 0) {
            fprintf(stderr, "unknown kernel %s\n", kernel);
            return 2;
        }
    }
    if (st != DR_OK) {
        fprintf(stderr, "%s: %s\n", kernel, dr_status_message(st));
        return 1;
    }
    printf("%s: frame %zu bytes, crc %08x, SIMD %s\n", kernel, len,
           len > DR_FRAME_TRAILER ? dr_crc32(0, buf, len - DR_FRAME_TRAILER) : 0u, dr_simd_name(dr_simd_active()));
    free(x);
    free(out);
    free(buf);
    free(work);
    return 0;
}
