/* The 32-bit counter generator: its vector forms (core/rng_simd.h, the internal header
 * the quantisers draw through) against dr_rng_u32 lane for lane, across the counter's
 * 2^32 boundaries where the vector state restarts; and its statistics: uniform top bits,
 * no correlation between neighbouring counters or between keys one apart. */
#include "check.h"
#include "../../src/c/core/rng_simd.h"

#include <stdint.h>
#include <string.h>

#if DR_HAVE_X86_SIMD
/* Whether w[0..lanes) are dr_rng_u32(key, counter + j), lane j. */
static int block_matches(const uint32_t *w, size_t lanes, uint64_t key, uint64_t counter)
{
    size_t j;
    int same = 1;
    for (j = 0; j < lanes; j++)
        same &= w[j] == dr_rng_u32(key, counter + j);
    return same;
}

/* Blocks drawn from `start` on, compared with the scalar function; by the unchecked step
 * (the qsgd and natural loops', for blocks below the next multiple of 2^32) if asked. */
DR_TARGET_AVX512 static int avx512_matches(uint64_t key, uint64_t start, size_t blocks, int unchecked)
{
    dr_rng32_avx512 r = dr_rng32_avx512_start(key, start);
    uint32_t w[16];
    size_t b;
    int same = 1;
    for (b = 0; b < blocks; b++) {
        _mm512_storeu_si512(w, unchecked ? dr_rng32_avx512_next_within(&r) : dr_rng32_avx512_next(&r));
        same &= block_matches(w, 16, key, start + 16 * b);
    }
    return same;
}

DR_TARGET_AVX2 static int avx2_matches(uint64_t key, uint64_t start, size_t blocks, int unchecked)
{
    dr_rng32_avx2 r = dr_rng32_avx2_start(key, start);
    uint32_t w[8];
    size_t b;
    int same = 1;
    for (b = 0; b < blocks; b++) {
        _mm256_storeu_si256((__m256i *)(void *)w, unchecked ? dr_rng32_avx2_next_within(&r) : dr_rng32_avx2_next(&r));
        same &= block_matches(w, 8, key, start + 8 * b);
    }
    return same;
}
#endif

static int vector_matches(int level, uint64_t key, uint64_t start, size_t blocks)
{
#if DR_HAVE_X86_SIMD
    return level >= DR_SIMD_AVX512 ? avx512_matches(key, start, blocks, 0) : avx2_matches(key, start, blocks, 0);
#else
    (void)level, (void)key, (void)start, (void)blocks;
    return 1;
#endif
}

static void test_vector_forms(void)
{
    /* Starts on and off the lane grid, blocks that reach, cross and follow 2^32 and
     * 2 * 2^32. */
    static const uint64_t starts[] = {0, 5, 4294967296ull - 64, 4294967296ull - 37, 4294967296ull - 16,
                                      4294967296ull - 8, 8589934592ull - 21, 8589934592ull};
    static const int levels[] = {DR_SIMD_AVX2, DR_SIMD_AVX512};
    size_t s, l;
    for (l = 0; l < 2; l++) {
        if (dr_simd_supported() < levels[l])
            continue;
        for (s = 0; s < sizeof starts / sizeof *starts; s++) {
            CHECK(vector_matches(levels[l], 0x1234567890abcdefull, starts[s], 12));
            CHECK(vector_matches(levels[l], 7, starts[s], 12));
        }
    }
}

/* dr_rng32_draws_within stops a range at the next multiple of 2^32 and nowhere else;
 * the vector blocks up to it and past it are the scalar draws. */
static void test_draws_within(void)
{
    static const uint64_t starts[] = {0, 4294967296ull - 128, 4294967296ull - 37, 8589934592ull - 200};
    size_t s;
    CHECK(dr_rng32_draws_within(0, 1000) == 1000);
    CHECK(dr_rng32_draws_within(4294967296ull - 128, 1000) == 128);
    CHECK(dr_rng32_draws_within(4294967296ull, 1000) == 1000);
    for (s = 0; s < sizeof starts / sizeof *starts; s++) {
        size_t within = dr_rng32_draws_within(starts[s], 1000);
        CHECK(within == 1000 || (starts[s] + within) % 4294967296ull == 0);
#if DR_HAVE_X86_SIMD
        /* The unchecked blocks up to the bound, then the stream restarted there. */
        if (dr_simd_supported() >= DR_SIMD_AVX2)
            CHECK(avx2_matches(7, starts[s], within / 8, 1) && avx2_matches(7, starts[s] + within, 1, 1));
        if (dr_simd_supported() >= DR_SIMD_AVX512)
            CHECK(avx512_matches(7, starts[s], within / 16, 1) && avx512_matches(7, starts[s] + within, 1, 1));
#endif
    }
}

static void test_statistics(void)
{
    const size_t n = 1u << 20;
    size_t i, agree_next = 0, agree_key = 0, ones = 0;
    double sum = 0.0;
    for (i = 0; i < n; i++) {
        uint32_t a = dr_rng_u32(42, i), b = dr_rng_u32(42, i + 1), c = dr_rng_u32(43, i);
        sum += (double)(a >> 8) / 16777216.0;
        ones += (size_t)__builtin_popcount(a);
        agree_next += (a >> 31) == (b >> 31);
        agree_key += (a >> 31) == (c >> 31);
    }
    /* Standard errors: the mean 0.28 / sqrt(n) = 3e-4, the pair agreements 5e-4, the
     * bit fraction 1e-4; the bounds are ten of them. */
    CHECK(fabs(sum / (double)n - 0.5) < 3e-3);
    CHECK(fabs((double)ones / (32.0 * (double)n) - 0.5) < 1e-3);
    CHECK(fabs((double)agree_next / (double)n - 0.5) < 5e-3);
    CHECK(fabs((double)agree_key / (double)n - 0.5) < 5e-3);
    /* The counter's high word matters: words 2^32 apart differ. */
    CHECK(dr_rng_u32(9, 5) != dr_rng_u32(9, 5 + 4294967296ull));
    CHECK(test_uniform(1, 2) >= -1.0f); /* check.h's helper, unused here otherwise */
}

int main(void)
{
    test_vector_forms();
    test_draws_within();
    test_statistics();
    return check_summary("test_rng");
}
