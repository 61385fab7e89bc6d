/* Timing helpers shared by the C benchmarks: a clock read in seconds and the median of a
 * run of timings. Header-only (static inline: not every benchmark uses each), so that
 * each benchmark stays one cc command; the including file defines _POSIX_C_SOURCE, for
 * clock_gettime. */
#ifndef DR_BENCH_TIME_H
#define DR_BENCH_TIME_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

/* clock_id's reading in seconds: CLOCK_THREAD_CPUTIME_ID for this thread's CPU time
 * (robust on a shared machine), CLOCK_MONOTONIC for wall time. */
static inline double bench_seconds(clockid_t clock_id)
{
    struct timespec t;
    clock_gettime(clock_id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_ascending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of t[0..n) (n >= 1; the upper one of an even n), which sorts t. */
static inline double bench_median(double *t, size_t n)
{
    qsort(t, n, sizeof *t, bench_ascending);
    return t[n / 2];
}

#endif
