/* dr_topk_select's phases timed apart on one thread: the sampled threshold, the candidate
 * sweep, the radix select over the candidates and the last pass that writes the indices
 * (medians of REPS calls, thread CPU time), on N(0,1) floats. It compiles select/topk.c
 * into itself to reach the static phases, so it times exactly the library's code. Built
 * (not run) with the C tests; from the repo root (cmake build as in quant_calls.c):
 *   cc -O3 -std=c99 -ffp-contract=off -Isrc/c/include -Isrc/c/core -Isrc/c/select \
 *      benchmarks/c/topk_phases.c build/rel/libdeepreduce_core.a -lz -lm -lpthread \
 *      -o build/topk_phases
 *   build/topk_phases 1e7 0.01 101          (n, k / n, REPS) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../src/c/select/topk.c"
#include "bench_time.h"

enum { PHASES = 4, MAX_REPS = 1001 };

int main(int argc, char **argv)
{
    static const char *const names[PHASES] = {"sample", "sweep", "radix", "write"};
    static double took[PHASES][MAX_REPS];
    size_t n = argc > 1 ? (size_t)atof(argv[1]) : 10000000u, k, cap, count = 0, ties, i;
    double rho = argc > 2 ? atof(argv[2]) : 0.01;
    int reps = argc > 3 ? atoi(argv[3]) : 101, r, p;
    float *x, *cand_val, *sample, t = 0.0f;
    uint32_t *idx, *cand_idx, kth = 0, tkey, top;
    k = (size_t)((double)n * rho);
    if (argc > 4 || reps < 1 || reps > MAX_REPS || k < 1 || k > n || n < SAMPLED_MIN_N) {
        fprintf(stderr, "usage: topk_phases [N >= %u] [K/N] [REPS <= %d]\n", SAMPLED_MIN_N, MAX_REPS);
        return 2;
    }
    cap = candidate_capacity(n, k);
    x = malloc(n * sizeof *x);
    idx = malloc(k * sizeof *idx);
    cand_idx = malloc(cap * sizeof *cand_idx);
    cand_val = malloc(cap * sizeof *cand_val);
    sample = malloc(SAMPLE_SIZE * sizeof *sample);
    if (x == NULL || idx == NULL || cand_idx == NULL || cand_val == NULL || sample == NULL)
        return 1;
    /* Box-Muller pairs from the library's generator, as quant_calls.c. */
    for (i = 0; i + 1 < n; i += 2) {
        float radius = sqrtf(-2.0f * logf(dr_rng_uniform(7, i) + 1e-7f)), turn = 6.2831853f * dr_rng_uniform(8, i);
        x[i] = radius * cosf(turn);
        x[i + 1] = radius * sinf(turn);
    }
    for (r = 0; r < reps; r++) {
        double at[PHASES + 1];
        at[0] = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
        t = sampled_threshold(x, n, k, sample);
        memcpy(&tkey, &t, sizeof tkey);
        at[1] = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
        count = dr_collect_candidates(x, 0, n, tkey, cand_idx, cand_val, cap, &top);
        at[2] = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
        if (count < k || count > cap) {
            fprintf(stderr, "the estimate missed (%zu candidates): no phases to time\n", count);
            return 1;
        }
        kth_largest(cand_val, count, k, tkey, &kth, &ties);
        at[3] = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
        write_answers(cand_idx, cand_val, count, k, kth, ties, idx, NULL);
        at[4] = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
        for (p = 0; p < PHASES; p++)
            took[p][r] = at[p + 1] - at[p];
    }
    printf("n = %zu, k = %zu, %zu candidates, SIMD %s; medians of %d, ms:", n, k, count,
           dr_simd_name(dr_simd_active()), reps);
    for (p = 0; p < PHASES; p++) {
        printf(" %s %.3f", names[p], 1e3 * bench_median(took[p], (size_t)reps));
    }
    printf("; indices crc %08x\n", dr_crc32(0, (const uint8_t *)idx, k * sizeof *idx));
    free(x);
    free(idx);
    free(cand_idx);
    free(cand_val);
    free(sample);
    return 0;
}
