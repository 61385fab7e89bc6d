/* Throughput of the index codecs on one core: encode and decode rates (millions of
 * indices per second) and bits per index at d = 1e7 and three densities, plus bit
 * unpacking and the Bloom positive scan. Built (not run) with the C tests; from the repo root:
 *   cmake -S . -B build/rel && cmake --build build/rel
 *   cc -O2 -std=c99 -Isrc/c/include benchmarks/c/bench_index.c build/rel/libdeepreduce_core.a \
 *      -lz -lm -lpthread -o build/bench_index && build/bench_index */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "deepreduce.h"
/* The codec table the index tests use (a relative include: no -I needed). */
#include "../../tests/c/index_codecs.h"
#include "bench_time.h"

/* Best of a few repetitions, in seconds per call. */
#define TIME_BEST(expr, out)                                         \
    do {                                                             \
        int rep_;                                                    \
        out = 1e30;                                                  \
        for (rep_ = 0; rep_ < 7; rep_++) {                           \
            double t0_ = bench_seconds(CLOCK_THREAD_CPUTIME_ID), t_; \
            if ((expr) != DR_OK) {                                   \
                fprintf(stderr, "failed: %s\n", #expr);              \
                exit(1);                                             \
            }                                                        \
            t_ = bench_seconds(CLOCK_THREAD_CPUTIME_ID) - t0_;       \
            if (t_ < out)                                            \
                out = t_;                                            \
        }                                                            \
    } while (0)

int main(void)
{
    static const double dens[] = {0.001, 0.01, 0.1};
    const size_t d = 10000000;
    void *work = malloc(dr_randomk_workspace_size(d));
    uint32_t *idx = malloc(d * sizeof *idx), *back = malloc(d * sizeof *back);
    uint8_t *buf = malloc(8 * d);
    size_t b, c;
    printf("d = %zu, simd = %s\n", d, dr_simd_name(dr_simd_active()));
    printf("%-8s %8s %8s %10s %10s\n", "codec", "density", "bits/idx", "enc Mi/s", "dec Mi/s");
    for (b = 0; b < 3; b++) {
        size_t r = (size_t)(dens[b] * (double)d);
        dr_randomk(12345 + b, d, r, idx, work);
        for (c = 0; c < NCODECS; c++) {
            size_t len = 0, cap = codecs[c].bound(d, r);
            double te, td;
            TIME_BEST(codecs[c].encode(idx, r, d, buf, cap, &len), te);
            TIME_BEST(codecs[c].decode(buf, len, d, r, back), td);
            printf("%-8s %8.3f %8.3f %10.1f %10.1f\n", codecs[c].name, dens[b],
                   8.0 * (double)len / (double)r, (double)r / te * 1e-6, (double)r / td * 1e-6);
        }
    }
    {
        size_t len = 0, n = d;
        unsigned bits;
        for (bits = 4; bits <= 20; bits += 8) {
            double tp, tu;
            for (b = 0; b < n; b++)
                idx[b] = (uint32_t)(b & ((1u << bits) - 1u));
            TIME_BEST(dr_bitpack(idx, n, bits, buf, 8 * d, &len), tp);
            TIME_BEST(dr_bitunpack(buf, len, n, bits, back), tu);
            printf("bitpack %2u bits: pack %.1f Mi/s, unpack %.1f Mi/s\n", bits,
                   (double)n / tp * 1e-6, (double)n / tu * 1e-6);
        }
    }
    {
        const size_t dd = 1000000, r = 10000;
        uint32_t k, m;
        size_t npos = 0, got = 0;
        double tp, ts;
        int policy;
        dr_randomk(7, dd, r, idx, work);
        dr_bloom_params(r, 0.1 * (double)r / (double)dd, &k, &m);
        dr_bloom_encode(idx, r, m, k, buf, 8 * d);
        TIME_BEST(dr_bloom_positives(buf, dr_bloom_size(m), m, k, dd, back, d, &npos), tp);
        printf("bloom d=%zu r=%zu k=%u: positives %.2f ms (%.0f M positions/s), |P|=%zu\n", dd,
               r, k, tp * 1e3, (double)dd / tp * 1e-6, npos);
        for (policy = 0; policy < DR_BLOOM_POLICY_COUNT_; policy++) {
            void *ws = malloc(dr_bloom_select_workspace_size(policy, npos, m, k) + 1);
            TIME_BEST(dr_bloom_select(policy, back, npos, r, m, k, 3, idx, &got, ws), ts);
            printf("  select policy %d: %.3f ms\n", policy, ts * 1e3);
            free(ws);
        }
    }
    free(work);
    free(idx);
    free(back);
    free(buf);
    return 0;
}
