/* The 8-bit encoder's codes where they change, against an exhaustive search: for each of
 * a range of scales (huge, tiny, near the subnormals, ones whose powers of ten times the
 * scale fall on a binade's start), magnitudes a few ulps either side of every code's
 * first magnitude, of every 2^16-pattern bucket start and end in the 24 binades below
 * the scale, and of 10^-k * scale. The vector paths estimate the code from the bit
 * pattern and settle it by these bounds, and ctest runs this under every SIMD level.
 * Then a tensor past the decoder's streamed-store threshold on every path. */
#define _POSIX_C_SOURCE 200112L
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { CAP = 16384 };

/* The code of magnitude y for a scale: the nearest table entry of y / scale, ties to the
 * lower, by trying all 128. */
static unsigned reference_code(const float *table, float y, float scale)
{
    float a = y / scale, best_d = INFINITY;
    unsigned c, best = 0;
    for (c = 0; c < 128; c++)
        if (fabsf(a - table[c]) < best_d) {
            best_d = fabsf(a - table[c]);
            best = c;
        }
    return best;
}

static float from_bits(uint32_t u)
{
    float y;
    memcpy(&y, &u, sizeof y);
    return y;
}

/* Magnitudes with patterns near `at` (from at - 2 to at + 2, kept in [0, top]). */
static size_t add_near(float *x, size_t n, uint32_t at, uint32_t top)
{
    uint32_t d;
    for (d = 0; d < 5; d++) {
        uint32_t u = at + d >= 2 ? at + d - 2 : 0;
        if (u <= top && n < CAP)
            x[n++] = from_bits(u);
    }
    return n;
}

static void check_scale(const float *table, float scale)
{
    static float x[CAP], out[CAP];
    static uint8_t buf[CAP + 64];
    uint32_t top, c, e, k;
    size_t n = 0, len, i;
    int ok = 1;
    memcpy(&top, &scale, sizeof top);
    x[n++] = scale;
    x[n++] = 0.0f;
    x[n++] = from_bits(1); /* the least subnormal */
    /* Each code's first magnitude, by bisection over the patterns. */
    for (c = 1; c < 128; c++) {
        uint32_t lo = 0, hi = top;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (reference_code(table, from_bits(mid), scale) >= c)
                hi = mid;
            else
                lo = mid + 1;
        }
        n = add_near(x, n, lo, top);
    }
    for (k = 1; k <= 6; k++) {
        float power = (float)(pow(10.0, -(double)k) * (double)scale);
        uint32_t u;
        memcpy(&u, &power, sizeof u);
        n = add_near(x, n, u, top);
    }
    for (e = 0; e < 24 && (top >> 23) >= e; e++)
        for (k = 0; k < 128; k++) {
            uint32_t start = (((top >> 23) - e) << 23) | (k << 16);
            n = add_near(x, n, start, top);
            n = add_near(x, n, start + 0xffffu, top);
        }
    for (i = 0; n < CAP && (i < 2000 || n < 4096); i++)
        x[n++] = scale * test_uniform(91, i) * test_uniform(92, i);
    for (i = 0; i < n; i += 2)
        x[i] = -x[i];
    CHECK(n >= 4096); /* large enough for the vector paths' tables */
    CHECK_OK(dr_eightbit_encode(x, n, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_eightbit_decode(buf, len, out, n));
    for (i = 0; i < n; i++) {
        unsigned want = reference_code(table, fabsf(x[i]), scale);
        unsigned got = buf[len - 4 - n + i]; /* the codes end at the CRC */
        int same = got == (want && x[i] < 0.0f ? want | 0x80u : want);
        if (!same && ok)
            fprintf(stderr, "scale %g: x %a coded %u, nearest %u\n", (double)scale, (double)x[i], got, want);
        ok &= same;
        ok &= out[i] == (want && x[i] < 0.0f ? -1.0f : 1.0f) * (table[want] * scale);
    }
    CHECK(ok);
}

/* Past DR_STREAM_MIN_N elements (stream_simd.h) the vector decoders write their output
 * with non-temporal stores: the same frame and floats on every path. */
static void check_streamed(void)
{
    static const char *paths[] = {"scalar", "avx2", "avx512"};
    const size_t n = TEST_STREAMED_N;
    float *x = malloc(n * sizeof *x), *want_out = malloc(n * sizeof *x), *out = malloc(n * sizeof *x);
    uint8_t *want = malloc(dr_eightbit_size(n)), *got = malloc(dr_eightbit_size(n));
    size_t want_len, len, i, p;
    int same = 1;
    for (i = 0; i < n; i++)
        x[i] = test_uniform(93, i) * test_uniform(94, i);
    setenv("DEEPREDUCE_SIMD", paths[0], 1);
    CHECK_OK(dr_eightbit_encode(x, n, 0, want, dr_eightbit_size(n), &want_len));
    CHECK_OK(dr_eightbit_decode(want, want_len, want_out, n));
    for (p = 1; p < 3; p++) {
        setenv("DEEPREDUCE_SIMD", paths[p], 1);
        CHECK_OK(dr_eightbit_encode(x, n, 0, got, dr_eightbit_size(n), &len));
        same &= len == want_len && memcmp(got, want, len) == 0;
        CHECK_OK(dr_eightbit_decode(want, want_len, out, n));
        same &= memcmp(out, want_out, n * sizeof *out) == 0;
    }
    unsetenv("DEEPREDUCE_SIMD");
    CHECK(same);
    free(x);
    free(want_out);
    free(out);
    free(want);
    free(got);
}

int main(void)
{
    static const float scales[] = {5.5f, 1.0f, 1.7f, 0.3f, 1000.0f, 1e5f, 3e37f, FLT_MAX,
                                   1e-20f, 2e-29f, 7e-31f, 1.3e-32f, 1e-35f, 1e-38f};
    float table[128];
    size_t i;
    CHECK_OK(dr_eightbit_table(table));
    for (i = 0; i < sizeof scales / sizeof *scales; i++)
        check_scale(table, scales[i]);
    check_scale(table, ldexpf(1.0f, -100));
    check_streamed();
    return check_summary("test_eightbit");
}
