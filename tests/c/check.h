/* A minimal test harness for the C programs: CHECK records a failure and carries on,
 * CHECK_OK expects DR_OK, and check_summary() prints "N passed, N failed" and returns
 * the exit status. Shared by every tests/c/test_*.c. */
#ifndef DR_TEST_CHECK_H
#define DR_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "deepreduce.h"
#include "stream_simd.h"

/* Past this many elements (DR_STREAM_MIN_N: 8 Mi, or the smaller one the sanitizer and
 * aarch64 test builds set) the vector kernels write their float outputs with
 * non-temporal stores. */
#define TEST_STREAMED_N (DR_STREAM_MIN_N + 13u)

static int check_passed_, check_failed_;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            check_passed_++;                                                        \
        } else {                                                                    \
            check_failed_++;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

#define CHECK_STATUS(expr, want)                                                     \
    do {                                                                             \
        int st_ = (expr);                                                            \
        if (st_ == (want)) {                                                         \
            check_passed_++;                                                         \
        } else {                                                                     \
            check_failed_++;                                                         \
            fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d\n", __FILE__,      \
                    __LINE__, #expr, st_, dr_status_message(st_), (int)(want));      \
        }                                                                            \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, DR_OK)

static int check_summary(const char *suite)
{
    printf("%s [simd=%s]: %d passed, %d failed\n", suite, dr_simd_name(dr_simd_active()),
           check_passed_, check_failed_);
    return check_failed_ == 0 ? 0 : 1;
}

/* A deterministic pseudo-random float in [-1, 1) for test data (static inline: not every
 * test uses it). */
static inline float test_uniform(uint64_t key, uint64_t i)
{
    return 2.0f * dr_rng_uniform(key, i) - 1.0f;
}

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
#include <stdlib.h>
/* Whether this build starts threads: only then does dr_thread_count() follow
 * DEEPREDUCE_THREADS (a build without POSIX threads answers 1, and its kernels run every
 * range on the caller's thread). Leaves DEEPREDUCE_THREADS unset (static inline: for the
 * tests that set thread counts). */
static inline int threads_built(void)
{
    int built;
    setenv("DEEPREDUCE_THREADS", "2", 1);
    built = dr_thread_count() == 2;
    unsetenv("DEEPREDUCE_THREADS");
    return built;
}
#endif

/* A frame's CRC field recomputed after a deliberate edit, so that only the decoder's
 * own checks remain (static inline: not every test uses it). */
static inline void reseal(uint8_t *buf, size_t len)
{
    uint32_t c = dr_crc32(0, buf, len - 4);
    memcpy(buf + len - 4, &c, 4);
}

/* 1 when every x[0..n) is finite (static inline: not every test uses it). */
static inline int test_all_finite(const float *x, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* The sketch's order key (sketch.c's order_key), restated: floats in the order of their
 * uint32 keys (static inline: not every test uses it). */
static inline uint32_t sketch_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

#endif
