/* Internal: the counter-based generator of rng_inline.h, a SIMD register of draws at a
 * time. Lane j of a block started at counter c holds dr_rng_u64(key, c + j) exactly, so
 * a vector kernel reproduces the scalar path's numbers bit for bit.
 *
 * The counter's first mix, c * golden + 1, is kept incrementally (one add per block
 * instead of a multiply), which leaves four 64-bit multiplies per draw: one instruction
 * each on AVX-512DQ, three 32x32 multiplies each on AVX2.
 *
 * The 32-bit generator dr_rng_u32 likewise, 8 lanes on AVX2 and 16 on AVX-512: lane j of
 * a block started at counter c holds dr_rng_u32(key, c + j), three 32-bit multiplies per
 * register of draws. */
#ifndef DR_RNG_SIMD_H
#define DR_RNG_SIMD_H

#include "rng_inline.h"
#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#define DR_RNG_GOLDEN 0x9e3779b97f4a7c15ull
#define DR_RNG_MIX1 0xbf58476d1ce4e5b9ull
#define DR_RNG_MIX2 0x94d049bb133111ebull

/* How many of the next `want` draws of a stream at `counter` come before the counter
 * reaches a multiple of 2^32 (where `high` changes): blocks of that many take the
 * unchecked dr_rng32_avx2_next_within / dr_rng32_avx512_next_within. */
static inline size_t dr_rng32_draws_within(uint64_t counter, size_t want)
{
    uint64_t left = ((uint64_t)1 << 32) - (uint32_t)counter;
    return (uint64_t)want < left ? want : (size_t)left;
}

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

/* ------------------------------------------------------------------- AVX2: 4 lanes */

/* The low 64 bits of a * b for a 64-bit constant b given as its two halves. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_mul64_avx2(__m256i a, __m256i b_lo, __m256i b_hi)
{
    __m256i low = _mm256_mul_epu32(a, b_lo);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b_lo),
                                     _mm256_mul_epu32(a, b_hi));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_mix64_avx2(__m256i z)
{
    const __m256i m1_lo = _mm256_set1_epi64x((long long)(DR_RNG_MIX1 & 0xffffffffu));
    const __m256i m1_hi = _mm256_set1_epi64x((long long)(DR_RNG_MIX1 >> 32));
    const __m256i m2_lo = _mm256_set1_epi64x((long long)(DR_RNG_MIX2 & 0xffffffffu));
    const __m256i m2_hi = _mm256_set1_epi64x((long long)(DR_RNG_MIX2 >> 32));
    z = dr_mul64_avx2(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), m1_lo, m1_hi);
    z = dr_mul64_avx2(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), m2_lo, m2_hi);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* A stream of blocks of 4 draws: counters c, c+1, ... in lane order. */
typedef struct {
    __m256i key, seed, step;
} dr_rng_avx2;

DR_TARGET_AVX2 DR_ALWAYS_INLINE dr_rng_avx2 dr_rng_avx2_start(uint64_t key, uint64_t counter)
{
    dr_rng_avx2 r;
    uint64_t c = counter * DR_RNG_GOLDEN + 1u;
    r.key = _mm256_set1_epi64x((long long)key);
    r.seed = _mm256_setr_epi64x((long long)c, (long long)(c + DR_RNG_GOLDEN),
                                (long long)(c + 2 * DR_RNG_GOLDEN), (long long)(c + 3 * DR_RNG_GOLDEN));
    r.step = _mm256_set1_epi64x((long long)(4 * DR_RNG_GOLDEN));
    return r;
}

/* The next 4 draws, as dr_rng_u64. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_rng_avx2_next(dr_rng_avx2 *r)
{
    __m256i u = dr_mix64_avx2(_mm256_add_epi64(r->key, dr_mix64_avx2(r->seed)));
    r->seed = _mm256_add_epi64(r->seed, r->step);
    return u;
}

/* The next 4 draws as dr_rng_uniform, in double (exactly: 24-bit values). */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256d dr_rng_avx2_uniform_pd(dr_rng_avx2 *r)
{
    /* (u >> 40) < 2^24 as the low mantissa bits of 2^52, minus 2^52: an exact convert. */
    const __m256i two52_bits = _mm256_set1_epi64x(0x4330000000000000ll);
    __m256i k = _mm256_srli_epi64(dr_rng_avx2_next(r), 40);
    __m256d v = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(k, two52_bits)),
                              _mm256_set1_pd(4503599627370496.0));
    return _mm256_mul_pd(v, _mm256_set1_pd(1.0 / 16777216.0));
}

/* Blocks of 8 dr_rng_u32 draws. `low` holds the lanes' low counter words plus the key's
 * low word, `high` the word XOR-ed in after the first multiply (it changes only where the
 * counter crosses a multiple of 2^32, which the rare path of dr_rng32_avx2_next handles, and
 * after which a state of dr_rng32_avx2_next_within must be restarted). */
typedef struct {
    __m256i low, high;
    uint64_t key, counter;
} dr_rng32_avx2;

DR_TARGET_AVX2 DR_ALWAYS_INLINE dr_rng32_avx2 dr_rng32_avx2_start(uint64_t key, uint64_t counter)
{
    dr_rng32_avx2 r;
    r.key = key;
    r.counter = counter;
    r.low = _mm256_add_epi32(_mm256_set1_epi32((int)((uint32_t)counter + (uint32_t)key)),
                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    r.high = _mm256_set1_epi32((int)((uint32_t)(key >> 32) ^ ((uint32_t)(counter >> 32) * 0x9e3779b9u)));
    return r;
}

DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_hash32_avx2(__m256i x, __m256i high)
{
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 17));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0xed5ad4bbu));
    x = _mm256_xor_si256(x, high);
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 11));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0xac4c1b51u));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x31848babu));
    return _mm256_xor_si256(x, _mm256_srli_epi32(x, 14));
}

/* The next 8 draws, as dr_rng_u32, for a block the caller knows to end at or below the
 * next multiple of 2^32 of the counter (dr_rng32_draws_within): no check, so that a
 * kernel's loop holds the hash and one add, and nothing of the rare path's. A block that
 * ends exactly on the multiple leaves `high` stale for the draws after it, which no step
 * notices: restart the state there (dr_rng32_avx2_start(key, counter)) before drawing
 * again. The kernels hand what is left to the scalar code instead. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_rng32_avx2_next_within(dr_rng32_avx2 *r)
{
    __m256i u = dr_hash32_avx2(r->low, r->high);
    r->low = _mm256_add_epi32(r->low, _mm256_set1_epi32(8));
    r->counter += 8u;
    return u;
}

/* The next 8 draws, as dr_rng_u32. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256i dr_rng32_avx2_next(dr_rng32_avx2 *r)
{
    if ((uint32_t)r->counter > 0xffffffffu - 8u) {
        /* The block reaches a multiple of 2^32: lane by lane, then restart past it. */
        uint32_t w[8];
        int j;
        for (j = 0; j < 8; j++)
            w[j] = dr_rng_u32_fast(r->key, r->counter + (uint64_t)j);
        *r = dr_rng32_avx2_start(r->key, r->counter + 8u);
        return _mm256_loadu_si256((const __m256i *)w);
    }
    return dr_rng32_avx2_next_within(r);
}

/* Draws as dr_rng_u32_uniform. */
DR_TARGET_AVX2 DR_ALWAYS_INLINE __m256 dr_rng32_uniform_avx2(__m256i draws)
{
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(draws, 8)), _mm256_set1_ps(0x1p-24f));
}

/* --------------------------------------------------------------- AVX-512: 8 lanes */

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_mix64_avx512(__m512i z)
{
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                           _mm512_set1_epi64((long long)DR_RNG_MIX1));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                           _mm512_set1_epi64((long long)DR_RNG_MIX2));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

typedef struct {
    __m512i key, seed, step;
} dr_rng_avx512;

DR_TARGET_AVX512 DR_ALWAYS_INLINE dr_rng_avx512 dr_rng_avx512_start(uint64_t key, uint64_t counter)
{
    dr_rng_avx512 r;
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    r.key = _mm512_set1_epi64((long long)key);
    r.seed = _mm512_add_epi64(_mm512_set1_epi64((long long)(counter * DR_RNG_GOLDEN + 1u)),
                              _mm512_mullo_epi64(lane, _mm512_set1_epi64((long long)DR_RNG_GOLDEN)));
    r.step = _mm512_set1_epi64((long long)(8 * DR_RNG_GOLDEN));
    return r;
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_rng_avx512_next(dr_rng_avx512 *r)
{
    __m512i u = dr_mix64_avx512(_mm512_add_epi64(r->key, dr_mix64_avx512(r->seed)));
    r->seed = _mm512_add_epi64(r->seed, r->step);
    return u;
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512d dr_rng_avx512_uniform_pd(dr_rng_avx512 *r)
{
    __m512d v = _mm512_cvtepu64_pd(_mm512_srli_epi64(dr_rng_avx512_next(r), 40));
    return _mm512_mul_pd(v, _mm512_set1_pd(1.0 / 16777216.0));
}

/* Blocks of 16 dr_rng_u32 draws, as dr_rng32_avx2. */
typedef struct {
    __m512i low, high;
    uint64_t key, counter;
} dr_rng32_avx512;

DR_TARGET_AVX512 DR_ALWAYS_INLINE dr_rng32_avx512 dr_rng32_avx512_start(uint64_t key, uint64_t counter)
{
    dr_rng32_avx512 r;
    r.key = key;
    r.counter = counter;
    r.low = _mm512_add_epi32(_mm512_set1_epi32((int)((uint32_t)counter + (uint32_t)key)),
                             _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    r.high = _mm512_set1_epi32((int)((uint32_t)(key >> 32) ^ ((uint32_t)(counter >> 32) * 0x9e3779b9u)));
    return r;
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_hash32_avx512(__m512i x, __m512i high)
{
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 17));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0xed5ad4bbu));
    x = _mm512_xor_si512(x, high);
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 11));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0xac4c1b51u));
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0x31848babu));
    return _mm512_xor_si512(x, _mm512_srli_epi32(x, 14));
}

/* As dr_rng32_avx2_next_within, 16 draws (with the same caveat at a multiple of 2^32). */
DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_rng32_avx512_next_within(dr_rng32_avx512 *r)
{
    __m512i u = dr_hash32_avx512(r->low, r->high);
    r->low = _mm512_add_epi32(r->low, _mm512_set1_epi32(16));
    r->counter += 16u;
    return u;
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512i dr_rng32_avx512_next(dr_rng32_avx512 *r)
{
    if ((uint32_t)r->counter > 0xffffffffu - 16u) {
        uint32_t w[16];
        int j;
        for (j = 0; j < 16; j++)
            w[j] = dr_rng_u32_fast(r->key, r->counter + (uint64_t)j);
        *r = dr_rng32_avx512_start(r->key, r->counter + 16u);
        return _mm512_loadu_si512(w);
    }
    return dr_rng32_avx512_next_within(r);
}

DR_TARGET_AVX512 DR_ALWAYS_INLINE __m512 dr_rng32_uniform_avx512(__m512i draws)
{
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(draws, 8)), _mm512_set1_ps(0x1p-24f));
}
#endif

#endif
