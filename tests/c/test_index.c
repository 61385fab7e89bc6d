/* C-level tests of the index codecs: bit packing, the lossless codecs (exact round
 * trips, hostile input, sizes against the information-theoretic floor) and the Bloom
 * filter with its selection policies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "index_codecs.h"

static int valid_set(const uint32_t *idx, size_t r, size_t d)
{
    size_t j;
    for (j = 0; j < r; j++)
        if ((uint64_t)idx[j] >= (uint64_t)d || (j > 0 && idx[j] <= idx[j - 1]))
            return 0;
    return 1;
}

/* r distinct uniform indices of [0, d), ascending. */
static uint32_t *random_set(uint64_t key, size_t d, size_t r)
{
    uint32_t *idx = malloc((r > 0 ? r : 1) * sizeof *idx);
    void *work = malloc(dr_randomk_workspace_size(d) + 8);
    CHECK(dr_randomk(key, d, r, idx, work) == DR_OK);
    free(work);
    return idx;
}

/* ------------------------------------------------------------------ bit packing */

static void test_bitpack(void)
{
    static const uint32_t small[3] = {1, 2, 3};
    uint32_t v[100], back[100];
    uint8_t buf[512];
    size_t written = 0, n;
    unsigned bits;

    CHECK(dr_bits_for(0) == 0 && dr_bits_for(1) == 1 && dr_bits_for(2) == 2);
    CHECK(dr_bits_for(3) == 2 && dr_bits_for(255) == 8 && dr_bits_for(256) == 9);
    CHECK(dr_bits_for(UINT32_MAX) == 32 && dr_bits_for(0x80000000u) == 32);
    CHECK(dr_bitpack_size(0, 7) == 0 && dr_bitpack_size(9, 0) == 0);
    CHECK(dr_bitpack_size(3, 3) == 2 && dr_bitpack_size(8, 3) == 3 && dr_bitpack_size(1, 32) == 4);
    CHECK(dr_bitpack_size(1, 33) == SIZE_MAX);

    /* LSB-first: 01 | 10 | 11 -> 0b111001. */
    CHECK_OK(dr_bitpack(small, 3, 2, buf, sizeof buf, &written));
    CHECK(written == 1 && buf[0] == 0x39);

    for (bits = 0; bits <= 32; bits++) {
        size_t ns[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 47, 63, 100}; /* around 8- and 16-field steps */
        size_t t;
        for (t = 0; t < sizeof ns / sizeof ns[0]; t++) {
            size_t i, size = dr_bitpack_size(ns[t], bits);
            int same = 1;
            n = ns[t];
            for (i = 0; i < n; i++)
                v[i] = bits == 0 ? 0 : (uint32_t)(dr_rng_u64(bits, i) >> (64 - bits));
            if (n > 0 && bits > 0)
                v[n - 1] = bits == 32 ? UINT32_MAX : (1u << bits) - 1u; /* widest value */
            CHECK_OK(dr_bitpack(v, n, bits, buf, sizeof buf, &written));
            CHECK(written == size);
            CHECK_OK(dr_bitunpack(buf, written, n, bits, back));
            for (i = 0; i < n; i++)
                same &= back[i] == v[i];
            CHECK(same);
            if (size > 0) {
                CHECK_STATUS(dr_bitunpack(buf, size - 1, n, bits, back), DR_E_CORRUPT);
                CHECK_STATUS(dr_bitpack(v, n, bits, buf, size - 1, &written), DR_E_DST_TOO_SMALL);
            }
            if (n > 0 && bits < 32) {
                v[0] = 1u << bits; /* one bit too wide */
                CHECK_STATUS(dr_bitpack(v, n, bits, buf, sizeof buf, &written), DR_E_ARG);
            }
        }
    }
    /* A buffer longer than the packed values (more data behind them) is fine. */
    CHECK_OK(dr_bitpack(small, 3, 2, buf, sizeof buf, &written));
    memset(buf + 1, 0xff, 100);
    CHECK_OK(dr_bitunpack(buf, 101, 3, 2, back));
    CHECK(back[0] == 1 && back[1] == 2 && back[2] == 3);
    CHECK(dr_bitpack_size(SIZE_MAX, 32) == SIZE_MAX);
    CHECK_STATUS(dr_bitpack(small, 3, 33, buf, sizeof buf, &written), DR_E_ARG);
    CHECK_STATUS(dr_bitunpack(buf, sizeof buf, 3, 33, back), DR_E_ARG);
}

/* ------------------------------------------------------------- lossless codecs */

/* Encode, check size and round trip; then attack the section: every truncation, a
 * trailing byte, single-byte corruptions, and a wrong r must each be refused or decode
 * to a valid set. The decoder gets an exactly sized heap copy so ASan sees any
 * overread. */
static void roundtrip(const codec *c, const uint32_t *idx, size_t r, size_t d, int attack)
{
    static const uint8_t masks[] = {0x01, 0x80, 0xff, 0x5a};
    size_t bound = c->bound(d, r), len = 0, cut, pos, m;
    uint8_t *out = malloc(bound + 1), *copy;
    uint32_t *back = malloc((r + 2) * sizeof *back);
    int st, same = 1;

    st = c->encode(idx, r, d, out, bound, &len);
    CHECK_OK(st);
    if (st != DR_OK) {
        fprintf(stderr, "  %s d=%zu r=%zu\n", c->name, d, r);
        free(out);
        free(back);
        return;
    }
    CHECK(len <= bound);
    copy = malloc(len + 1);
    memcpy(copy, out, len);
    st = c->decode(copy, len, d, r, back);
    CHECK_OK(st);
    for (pos = 0; pos < r && st == DR_OK; pos++)
        same &= back[pos] == idx[pos];
    CHECK(same);
    if (!same)
        fprintf(stderr, "  %s d=%zu r=%zu: round trip differs\n", c->name, d, r);
    if (len > 0)
        CHECK_STATUS(c->encode(idx, r, d, out, len - 1, &pos), DR_E_DST_TOO_SMALL);

    /* A trailing zero byte makes the section non-canonical: refused. */
    copy[len] = 0;
    CHECK(c->decode(copy, len + 1, d, r, back) < 0);
    free(copy);

    if (attack) {
        int ok = 1;
        for (cut = 0; cut < len; cut++) {
            copy = malloc(cut + 1);
            memcpy(copy, out, cut);
            if (c->decode(cut > 0 ? copy : NULL, cut, d, r, back) == DR_OK)
                ok &= valid_set(back, r, d);
            free(copy);
        }
        copy = malloc(len + 1);
        for (pos = 0; pos < len; pos++)
            for (m = 0; m < sizeof masks; m++) {
                memcpy(copy, out, len);
                copy[pos] ^= masks[m];
                if (c->decode(copy, len, d, r, back) == DR_OK)
                    ok &= valid_set(back, r, d);
            }
        memcpy(copy, out, len);
        if (c->decode(copy, len, d, r + 1 <= d ? r + 1 : r, back) == DR_OK)
            ok &= valid_set(back, r + 1 <= d ? r + 1 : r, d);
        if (r > 0 && c->decode(copy, len, d, r - 1, back) == DR_OK)
            ok &= valid_set(back, r - 1, d);
        free(copy);
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  %s d=%zu r=%zu: a hostile section decoded to an invalid set\n",
                    c->name, d, r);
    }
    free(out);
    free(back);
}

static void test_lossless_edges(void)
{
    static const uint32_t zero[1] = {0}, last[1] = {999}, ends[2] = {0, 999};
    static const uint32_t wide[2] = {0, UINT32_MAX}, near[3] = {5, 6, 8};
    uint32_t all[64], runs[120];
    size_t i, t, n = 0;
    for (i = 0; i < 64; i++)
        all[i] = (uint32_t)i;
    for (i = 100; i < 200; i++)
        runs[n++] = (uint32_t)i;
    for (i = 500; i < 510; i++)
        runs[n++] = (uint32_t)i;
    runs[n++] = 998;
    runs[n++] = 999;
    for (t = 0; t < NCODECS; t++) {
        const codec *c = &codecs[t];
        roundtrip(c, NULL, 0, 0, 1);
        roundtrip(c, NULL, 0, 1, 1);
        roundtrip(c, zero, 1, 1, 1);
        roundtrip(c, NULL, 0, 1000, 1);
        roundtrip(c, zero, 1, 1000, 1);
        roundtrip(c, last, 1, 1000, 1);
        roundtrip(c, ends, 2, 1000, 1);
        roundtrip(c, near, 3, 9, 1);
        roundtrip(c, all, 64, 64, 1);
        roundtrip(c, all, 63, 64, 1);
        roundtrip(c, all + 1, 63, 64, 1);
        roundtrip(c, runs, n, 1000, 1);
        /* The largest tensor: d = 2^32 (a size_t that wide exists on 64-bit hosts). */
        if (sizeof(size_t) > 4)
            roundtrip(c, wide, 2, (size_t)4294967295u + 1u, 1);
    }
}

static void test_lossless_random(void)
{
    /* 789 has 11-bit huffman codes, longer than its lookup table. */
    static const size_t ds[] = {2, 17, 256, 257, 789, 1000, 4096, 65537};
    static const double dens[] = {0.002, 0.05, 0.3, 0.5, 0.9};
    size_t a, b, t;
    for (a = 0; a < sizeof ds / sizeof ds[0]; a++)
        for (b = 0; b < sizeof dens / sizeof dens[0]; b++) {
            size_t d = ds[a], r = (size_t)(dens[b] * (double)d);
            uint32_t *idx = random_set(1000u * a + b, d, r);
            /* Attack only sections small enough to stay fast under ASan. */
            for (t = 0; t < NCODECS; t++)
                roundtrip(&codecs[t], idx, r, d, codecs[t].bound(d, r) < 400);
            free(idx);
        }
    /* A few odd sizes at random densities. */
    for (a = 0; a < 8; a++) {
        size_t d = 1u + (size_t)(fabsf(test_uniform(404, a)) * 3000.0f);
        size_t r = (size_t)(fabsf(test_uniform(405, a)) * (float)d);
        uint32_t *idx = random_set(406 + a, d, r);
        for (t = 0; t < NCODECS; t++)
            roundtrip(&codecs[t], idx, r, d, codecs[t].bound(d, r) < 400);
        free(idx);
    }
}

/* Random bytes as sections, for random d and r: refused or a valid set, never a crash.
 * FUZZ_ROUNDS can be raised at compile time for a longer run. */
#ifndef FUZZ_ROUNDS
#define FUZZ_ROUNDS 3000
#endif
static void test_lossless_random_bytes(void)
{
    uint32_t back[80];
    size_t t, i, n;
    int ok = 1;
    for (n = 0; n < FUZZ_ROUNDS; n++) {
        uint64_t z = dr_rng_u64(2024, n);
        size_t d = 1u + (size_t)(z % 300u), r = (size_t)((z >> 9) % 80u);
        size_t len = (size_t)((z >> 17) % 48u);
        uint8_t *in = malloc(len + 1);
        if (r > d)
            r = d;
        for (i = 0; i < len; i++) {
            uint64_t b = dr_rng_u64(2025, n * 64u + i);
            /* Bias toward small header values so that deeper code paths get reached. */
            in[i] = (uint8_t)(i == 0 && (b & 256u) ? b % 12u : b);
        }
        for (t = 0; t < NCODECS; t++)
            if (codecs[t].decode(len > 0 ? in : NULL, len, d, r, back) == DR_OK)
                ok &= valid_set(back, r, d);
        free(in);
    }
    CHECK(ok);
}

static void test_encoder_refuses_bad_sets(void)
{
    static const uint32_t none[1] = {0};
    static const uint32_t unsorted[3] = {5, 3, 7}, repeated[3] = {1, 4, 4}, high[2] = {3, 10};
    uint8_t out[256];
    size_t w, t;
    for (t = 0; t < NCODECS; t++) {
        const codec *c = &codecs[t];
        uint32_t back[4];
        CHECK_STATUS(c->encode(unsorted, 3, 10, out, sizeof out, &w), DR_E_ARG);
        CHECK_STATUS(c->encode(repeated, 3, 10, out, sizeof out, &w), DR_E_ARG);
        CHECK_STATUS(c->encode(high, 2, 10, out, sizeof out, &w), DR_E_ARG);
        CHECK_STATUS(c->encode(high, 2, 1, out, sizeof out, &w), DR_E_ARG); /* r > d */
        CHECK_STATUS(c->encode(high, 2, 11, NULL, sizeof out, &w), DR_E_ARG);
        CHECK_STATUS(c->decode(out, 1, 1, 2, back), DR_E_ARG); /* r > d */
        CHECK_STATUS(c->decode(out, 4, 10, 2, NULL), DR_E_ARG);
        CHECK(c->bound(5, 6) == 0);
    }
    /* rle: a run of 2^32 does not fit the widest field. */
    if (sizeof(size_t) > 4)
        CHECK_STATUS(dr_index_rle_encode(none, 0, (size_t)4294967295u + 1u, out, sizeof out, &w),
                     DR_E_ARG);
}

/* Sets that stop ascending deep inside: a repeat, a swap, or an index that climbs to d - 1
 * (far past the set's last) and falls back, at the first and last lanes of the vector
 * encoders' steps (8 and 16), mid-way and in the scalar tail. Every encoder refuses each
 * with DR_E_ARG and stores nothing past out[cap), at caps of its bound, of the exact
 * section of the set without the fault (the least that Elias-Fano takes for it), for Rice
 * the least that lets it check as it sweeps (what an ascending set ending at the same
 * index can take), and a short one (where the encoders check first). */
static void test_encoder_refuses_late_descents(void)
{
    static const size_t at[] = {1, 7, 8, 15, 16, 17, 63, 64, 500, 991, 998, 999};
    const size_t r = 1000, d = 4000000, canary = 64;
    uint32_t *base = malloc(r * sizeof *base), *bad = malloc(r * sizeof *bad);
    size_t i, a, kind, t, w;
    int kept = 1;
    for (i = 0; i < r; i++)
        base[i] = (uint32_t)(i * 97u + (uint32_t)(dr_rng_u64(41, i) % 90u));
    for (t = 0; t < NCODECS; t++) {
        const codec *c = &codecs[t];
        size_t bound = c->bound(d, r), caps[4], k;
        uint8_t *out = malloc(bound + canary);
        CHECK_OK(c->encode(base, r, d, out, bound, &w));
        caps[0] = bound;
        caps[1] = w;
        caps[2] = bound / 3;
        caps[3] = w; /* Rice: 1 + its lows + (Q_most + r) bits, Q_most = (last + 1 - r) >> k */
        if (c->encode == dr_index_rice_encode)
            caps[3] = 1u + dr_bitpack_size(r, out[0]) + (((base[r - 1] + 1u - r) >> out[0]) + r + 7u) / 8u;
        for (a = 0; a < sizeof at / sizeof *at; a++)
            for (kind = 0; kind < 3; kind++) {
                size_t p = at[a];
                memcpy(bad, base, r * sizeof *bad);
                if (kind == 0) {
                    bad[p] = bad[p - 1];
                } else if (kind == 1) {
                    bad[p] = base[p - 1];
                    bad[p - 1] = base[p];
                } else {
                    if (p == r - 1)
                        continue; /* the last index itself: still ascending */
                    bad[p] = (uint32_t)(d - 1);
                }
                /* Past the cap, zeros then ones: a bit OR-ed in shows on the first, a byte
                 * cleared on the second. */
                for (k = 0; k < 8; k++) {
                    uint8_t fill = k % 2 ? 0xff : 0x00;
                    memset(out, fill, bound + canary);
                    CHECK_STATUS(c->encode(bad, r, d, out, caps[k / 2], &w), DR_E_ARG);
                    for (i = caps[k / 2]; i < bound + canary; i++)
                        kept &= out[i] == fill;
                }
            }
        free(out);
    }
    if (!kept)
        fprintf(stderr, "an encoder refusing a set stored past its cap\n");
    CHECK(kept);
    free(base);
    free(bad);
}

/* Sizes on uniform random subsets of d = 1e6 against the floor log2 C(d, r). */
static void test_sizes_vs_floor(void)
{
    static const double dens[] = {0.001, 0.01, 0.1};
    static const double spec_floor[] = {11.41, 8.08, 4.69};
    const size_t d = 1000000;
    size_t b, t;
    printf("bits/index at d=1e6 (ratio to log2 C(d,r)/r):\n");
    for (b = 0; b < 3; b++) {
        size_t r = (size_t)(dens[b] * (double)d);
        double fl = (lgamma((double)d + 1) - lgamma((double)r + 1) - lgamma((double)(d - r) + 1)) /
                    log(2.0);
        uint32_t *idx = random_set(77 + b, d, r);
        CHECK(fabs(fl / (double)r - spec_floor[b]) < 0.01);
        printf("  density %.3f r=%zu floor %.3f:", dens[b], r, fl / (double)r);
        for (t = 0; t < NCODECS; t++) {
            size_t cap = codecs[t].bound(d, r), len = 0;
            uint8_t *out = malloc(cap);
            double ratio;
            CHECK_OK(codecs[t].encode(idx, r, d, out, cap, &len));
            ratio = 8.0 * (double)len / fl;
            printf(" %s %.3f (%.3f)", codecs[t].name, 8.0 * (double)len / (double)r, ratio);
            if (strcmp(codecs[t].name, "rice") == 0)
                CHECK(ratio <= 1.02);
            if (strcmp(codecs[t].name, "ef") == 0)
                CHECK(ratio <= 1.13);
            free(out);
        }
        printf("\n");
        free(idx);
    }
}

static void test_huffman_code(void)
{
    const size_t d = 36864;
    uint32_t *all = malloc(d * sizeof *all);
    size_t i, len = 0, cap = dr_index_huffman_bound(d, d), worst = 0;
    uint8_t *out = malloc(cap);
    for (i = 0; i < d; i++)
        all[i] = (uint32_t)i;
    /* Coding every index once gives the code's average length: SPEC's 19.7 bits. */
    CHECK_OK(dr_index_huffman_encode(all, d, d, out, cap, &len));
    printf("huffman at d=36864: %.3f bits/index\n", 8.0 * (double)len / (double)d);
    CHECK(fabs(8.0 * (double)len / (double)d - 19.73) < 0.01);
    /* Longest code (bound for r = 2 is exactly it) stays <= 17 for any d. */
    for (i = 1; i < 3000; i++) {
        size_t dd = i < 2000 ? i : (size_t)(dr_rng_u64(5, i) >> 32) + 1u;
        size_t L = dr_index_huffman_bound(dd, dd < 2 ? dd : 2);
        if (L > worst)
            worst = L;
    }
    CHECK(worst <= 17);
    free(all);
    free(out);
}

/* ----------------------------------------------------------------------- bloom */

static void test_murmur3(void)
{
    static const uint8_t zeros[4] = {0, 0, 0, 0};
    const char *fox = "The quick brown fox jumps over the lazy dog";
    CHECK(dr_murmur3_32(NULL, 0, 0) == 0);
    CHECK(dr_murmur3_32(NULL, 0, 1) == 0x514e28b7u);
    CHECK(dr_murmur3_32(NULL, 0, 0xffffffffu) == 0x81f16f39u);
    CHECK(dr_murmur3_32((const uint8_t *)"hello", 5, 0) == 0x248bfa47u);
    CHECK(dr_murmur3_32(zeros, 4, 0) == 0x2362f9deu);
    CHECK(dr_murmur3_32((const uint8_t *)"aaaa", 4, 0x9747b28cu) == 0x5a97808au);
    CHECK(dr_murmur3_32((const uint8_t *)"aaa", 3, 0x9747b28cu) == 0x283e0130u);
    CHECK(dr_murmur3_32((const uint8_t *)"aa", 2, 0x9747b28cu) == 0x5d211726u);
    CHECK(dr_murmur3_32((const uint8_t *)"a", 1, 0x9747b28cu) == 0x7fa09ea6u);
    CHECK(dr_murmur3_32((const uint8_t *)"Hello, world!", 13, 0x9747b28cu) == 0x24884cbau);
    CHECK(dr_murmur3_32((const uint8_t *)fox, strlen(fox), 0x9747b28cu) == 0x2fa826cdu);
}

static void test_bloom_params(void)
{
    uint32_t k = 0, m = 0;
    CHECK_OK(dr_bloom_params(368, 1e-3, &k, &m));
    CHECK(k == 10 && m == 5291 && dr_bloom_size(m) == 662);
    CHECK_OK(dr_bloom_params(0, 0.1, &k, &m));
    CHECK(k == 4 && m == 0 && dr_bloom_size(m) == 0);
    CHECK_OK(dr_bloom_params(100, 0.5, &k, &m));
    CHECK(k == 1 && m == 145);
    CHECK_STATUS(dr_bloom_params(10, 0.0, &k, &m), DR_E_ARG);
    CHECK_STATUS(dr_bloom_params(10, 1.0, &k, &m), DR_E_ARG);
    CHECK_STATUS(dr_bloom_params(10, -0.5, &k, &m), DR_E_ARG);
    CHECK_STATUS(dr_bloom_params(10, NAN, &k, &m), DR_E_ARG);
    CHECK_STATUS(dr_bloom_params(10, 1e-30, &k, &m), DR_E_ARG); /* k = 100 hashes */
    CHECK_STATUS(dr_bloom_params(10, 0.1, NULL, &m), DR_E_ARG);
    CHECK_STATUS(dr_bloom_params((size_t)1 << 30, 1e-3, &k, &m), DR_E_ARG); /* m >= 2^32 */
}

/* The filter bit layout is the one SPEC fixes: rebuild it from dr_murmur3_32. */
static void test_bloom_layout(void)
{
    static const uint32_t idx[4] = {0, 7, 300, 4000000000u};
    uint8_t f[64], g[64];
    uint32_t s, m = 500, k = 3;
    size_t j;
    memset(g, 0, sizeof g);
    for (j = 0; j < 4; j++)
        for (s = 0; s < k; s++) {
            uint8_t key[4];
            uint32_t b;
            key[0] = (uint8_t)idx[j];
            key[1] = (uint8_t)(idx[j] >> 8);
            key[2] = (uint8_t)(idx[j] >> 16);
            key[3] = (uint8_t)(idx[j] >> 24);
            b = dr_murmur3_32(key, 4, s) % m;
            g[b / 8] |= (uint8_t)(1u << (b % 8));
        }
    memset(f, 0xee, sizeof f);
    CHECK_OK(dr_bloom_encode(idx, 4, m, k, f, sizeof f));
    CHECK(memcmp(f, g, dr_bloom_size(m)) == 0);
    CHECK_STATUS(dr_bloom_encode(idx, 4, m, k, f, 62), DR_E_DST_TOO_SMALL);
    CHECK_STATUS(dr_bloom_encode(idx, 4, m, 0, f, sizeof f), DR_E_ARG);
    CHECK_STATUS(dr_bloom_encode(idx, 4, 0, k, f, sizeof f), DR_E_ARG);
    CHECK_STATUS(dr_bloom_encode(idx, 4, m, DR_BLOOM_MAX_HASHES + 1, f, sizeof f), DR_E_ARG);
}

/* dr_bloom_positives against the definition, position by position, on sizes that leave
 * vector tails and moduli from 1 up: whatever path runs must give exactly this. */
static void test_bloom_positives_reference(void)
{
    static const uint32_t ms[] = {1, 2, 7, 64, 333, 5291, 100003};
    static const size_t ds[] = {1, 7, 8, 9, 513, 1031, 20000};
    size_t a, b;
    int ok = 1;
    for (a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (b = 0; b < sizeof ds / sizeof ds[0]; b++) {
            uint32_t m = ms[a], k = 1u + (uint32_t)((a + b) % 5), s;
            size_t d = ds[b], flen = dr_bloom_size(m), r = d / 20u + 1u, npos = 0, n = 0, i, j;
            uint8_t *filter = malloc(flen);
            uint32_t *truth = random_set(900u + 10u * a + b, d, r < d ? r : d);
            uint32_t *pos = malloc(d * sizeof *pos);
            CHECK_OK(dr_bloom_encode(truth, r < d ? r : d, m, k, filter, flen));
            CHECK_OK(dr_bloom_positives(filter, flen, m, k, d, pos, d, &npos));
            for (i = 0; i < d; i++) {
                uint8_t key[4];
                int in = 1;
                key[0] = (uint8_t)i;
                key[1] = (uint8_t)(i >> 8);
                key[2] = (uint8_t)(i >> 16);
                key[3] = (uint8_t)(i >> 24);
                for (s = 0; s < k; s++) {
                    j = dr_murmur3_32(key, 4, s) % m;
                    in &= (filter[j / 8] >> (j % 8)) & 1;
                }
                if (in)
                    ok &= n < npos && pos[n++] == i;
            }
            ok &= n == npos;
            free(filter);
            free(truth);
            free(pos);
        }
    CHECK(ok);
}

static int is_subset(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t i = 0, j = 0;
    for (; i < na; i++) {
        while (j < nb && b[j] < a[i])
            j++;
        if (j == nb || b[j] != a[i])
            return 0;
    }
    return 1;
}

static size_t overlap(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            n++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return n;
}

static void test_bloom_positives_and_policies(void)
{
    static const double fprs[] = {1e-3, 0.01, 0.1, 0.5};
    static const char *names[] = {"leftmost", "random", "p0", "conflict_sets", "naive"};
    const size_t d = 36864, r = 368;
    size_t f, p2_hits = 0, p1_hits = 0;
    printf("bloom, d=36864 r=368: share of true indices among those picked\n");
    for (f = 0; f < sizeof fprs / sizeof fprs[0]; f++) {
        size_t hits[DR_BLOOM_POLICY_COUNT_] = {0}, picked[DR_BLOOM_POLICY_COUNT_] = {0};
        uint32_t *truth = random_set(31 + f, d, r), k, m;
        uint32_t *pos, *out, *again;
        uint8_t *filter;
        size_t npos = 0, n2 = 0, flen;
        int policy;
        CHECK_OK(dr_bloom_params(r, fprs[f], &k, &m));
        flen = dr_bloom_size(m);
        filter = malloc(flen);
        CHECK_OK(dr_bloom_encode(truth, r, m, k, filter, flen));
        pos = malloc(d * sizeof *pos);
        CHECK_OK(dr_bloom_positives(filter, flen, m, k, d, pos, d, &npos));
        CHECK(npos >= r);
        out = malloc(npos * sizeof *out);
        again = malloc(npos * sizeof *again);
        /* A smaller cap stops the scan there: the first cap positives. */
        CHECK_OK(dr_bloom_positives(filter, flen, m, k, d, again, npos / 2, &n2));
        CHECK(n2 == npos / 2 && memcmp(again, pos, n2 * sizeof *pos) == 0);
        CHECK_OK(dr_bloom_positives(filter, flen, m, k, d, NULL, 0, &n2));
        CHECK(n2 == 0);
        CHECK_OK(dr_bloom_positives(filter, flen, m, k, d, pos, npos, &n2));
        CHECK(n2 == npos && valid_set(pos, npos, d));
        /* The receiver's plausibility bound holds for an honest filter. */
        CHECK_OK(dr_bloom_positives_limit(filter, flen, m, k, d, r, &n2));
        CHECK(n2 >= npos && n2 <= d);
        CHECK_STATUS(dr_bloom_positives_limit(filter, flen, m, k, d, 1, &n2), DR_E_CORRUPT);
        CHECK(is_subset(truth, r, pos, npos)); /* no false negatives */
        /* A false-positive rate in the right region (loose: r is small). */
        CHECK((double)(npos - r) <= 3.0 * fprs[f] * (double)d + 10.0);
        for (policy = 0; policy < DR_BLOOM_POLICY_COUNT_; policy++) {
            size_t ws = dr_bloom_select_workspace_size(policy, npos, m, k), got = 0, got2 = 0;
            size_t want = policy == DR_BLOOM_P0 ? npos : r;
            void *work = malloc(ws + 1);
            CHECK_OK(dr_bloom_select(policy, pos, npos, r, m, k, 99, out, &got, work));
            CHECK(got == want && valid_set(out, got, d) && is_subset(out, got, pos, npos));
            CHECK_OK(dr_bloom_select(policy, pos, npos, r, m, k, 99, again, &got2, work));
            CHECK(got2 == got && memcmp(out, again, got * sizeof *out) == 0);
            if (policy == DR_BLOOM_LEFTMOST || policy == DR_BLOOM_NAIVE)
                CHECK(memcmp(out, pos, r * sizeof *out) == 0);
            if (policy == DR_BLOOM_P0)
                CHECK(memcmp(out, pos, npos * sizeof *out) == 0);
            if ((policy == DR_BLOOM_RANDOM || policy == DR_BLOOM_CONFLICT_SETS) && npos > r + 4) {
                /* Another key draws another subset. */
                CHECK_OK(dr_bloom_select(policy, pos, npos, r, m, k, 100, again, &got2, work));
                CHECK(memcmp(out, again, got * sizeof *out) != 0);
            }
            /* r >= |P|: every policy returns P. */
            CHECK_OK(dr_bloom_select(policy, pos, npos, npos + 3, m, k, 99, again, &got2, work));
            CHECK(got2 == npos && memcmp(again, pos, npos * sizeof *pos) == 0);
            hits[policy] += overlap(out, got, truth, r);
            picked[policy] += got;
            free(work);
        }
        /* Corrupt filters: wrong length, set padding bit. */
        CHECK_STATUS(dr_bloom_positives(filter, flen - 1, m, k, d, pos, npos, &n2), DR_E_CORRUPT);
        if (m % 8 != 0) {
            filter[flen - 1] |= 0x80;
            CHECK_STATUS(dr_bloom_positives(filter, flen, m, k, d, pos, npos, &n2), DR_E_CORRUPT);
        }
        CHECK_STATUS(dr_bloom_positives(filter, flen, m, 0, d, pos, npos, &n2), DR_E_ARG);
        printf("  fpr %g |P|=%zu:", fprs[f], npos);
        for (policy = 0; policy < DR_BLOOM_POLICY_COUNT_; policy++)
            printf(" %s %.3f", names[policy], (double)hits[policy] / (double)picked[policy]);
        printf("\n");
        p1_hits += hits[DR_BLOOM_RANDOM];
        p2_hits += hits[DR_BLOOM_CONFLICT_SETS];
        free(truth);
        free(pos);
        free(out);
        free(again);
        free(filter);
    }
    /* P2 is meant to do better than a blind choice. */
    CHECK(p2_hits >= p1_hits);
}

/* Issue 9: a forged filter (all ones, the largest k_hash) costs time linear in d. Every
 * position is positive, so the scan stops at the cap, or at the hash budget; the limit
 * refuses it outright (more bits than r indices set); conflict_sets on it ends after
 * DR_BLOOM_CS_MAX_ROUNDS rounds. */
static void test_bloom_forged_filters_are_bounded(void)
{
    const size_t d = 200000;
    const uint32_t m = 8, k = DR_BLOOM_MAX_HASHES;
    uint8_t ones = 0xff;
    size_t npos = 0, limit = 0, got = 0, i;
    uint32_t *pos = malloc(d * sizeof *pos), *out = malloc(d * sizeof *out);
    void *work;
    CHECK_STATUS(dr_bloom_positives_limit(&ones, 1, m, k, d, 0, &limit), DR_E_CORRUPT);
    /* 8 bits for an index hashed 64 times: no sizing makes so small a filter. */
    CHECK_STATUS(dr_bloom_positives_limit(&ones, 1, m, k, d, 1, &limit), DR_E_CORRUPT);
    /* Four indices hashed twice may fill 8 bits (fpr near 1): then every position is
     * plausible, and the scan's cost is bounded by k = 2 per position. */
    CHECK_OK(dr_bloom_positives_limit(&ones, 1, m, 2, d, 4, &limit));
    CHECK(limit == d);
    CHECK_OK(dr_bloom_positives(&ones, 1, m, k, d, pos, 1000, &npos));
    CHECK(npos == 1000 && pos[999] == 999);
    CHECK_OK(dr_bloom_positives(&ones, 1, m, k, d, pos, d, &npos));
    CHECK(npos == d);
    /* A wider all-ones filter makes the budget, not the cap, end a scan that wants
     * many positives but finds them only in a sparse way: here with all positions
     * positive the cap ends it first; with cap d no budget applies. */
    work = malloc(dr_bloom_select_workspace_size(DR_BLOOM_CONFLICT_SETS, 4096, m, k));
    CHECK_OK(dr_bloom_select(DR_BLOOM_CONFLICT_SETS, pos, 4096, 4000, m, k, 5, out, &got, work));
    CHECK(got == 4000 && valid_set(out, got, d));
    /* Past the round cap the leftmost unpicked fill in: most of the picks. */
    for (i = 0; i + 1 < got && out[i] + 1 == out[i + 1]; i++)
        ;
    CHECK(got - i < 200);
    free(work);
    free(pos);
    free(out);
}

/* The scan budget: a filter whose positions pass many hashes and then fail costs up to
 * k_hash per position without producing positives; the scan refuses it once it has
 * spent 4 d + k_hash cap + 4096 hashes. m = 16 with bit 15 alone clear and k = 64: a
 * position passes about 16 hashes before one lands on bit 15, and 1.6% pass all. */
static void test_bloom_scan_budget(void)
{
    const size_t d = 100000, cap = 2000;
    uint8_t filter[2] = {0xff, 0x7f};
    uint32_t *pos = malloc(d * sizeof *pos);
    size_t npos = 0;
    CHECK_STATUS(dr_bloom_positives(filter, 2, 16, DR_BLOOM_MAX_HASHES, d, pos, cap, &npos),
                 DR_E_CORRUPT);
    /* No budget when every positive is wanted. */
    CHECK_OK(dr_bloom_positives(filter, 2, 16, DR_BLOOM_MAX_HASHES, d, pos, d, &npos));
    CHECK(npos > 0 && npos < cap);
    free(pos);
}

static void test_bloom_edges(void)
{
    static const uint32_t one[1] = {3}, bad[2] = {4, 4}, two[2] = {1, 2};
    uint32_t pos[8], out[8], k, m;
    uint8_t filter[8];
    size_t npos = 9, got = 9;
    /* r = 0: empty filter, empty P, empty selection. */
    CHECK_OK(dr_bloom_params(0, 0.01, &k, &m));
    CHECK_OK(dr_bloom_encode(NULL, 0, m, k, filter, 0));
    CHECK_OK(dr_bloom_positives(filter, 0, m, k, 100, pos, 8, &npos));
    CHECK(npos == 0);
    CHECK_OK(dr_bloom_select(DR_BLOOM_CONFLICT_SETS, pos, 0, 0, m, k, 1, out, &got, NULL));
    CHECK(got == 0);
    /* One index of four. */
    CHECK_OK(dr_bloom_params(1, 0.01, &k, &m));
    CHECK_OK(dr_bloom_encode(one, 1, m, k, filter, sizeof filter));
    CHECK_OK(dr_bloom_positives(filter, dr_bloom_size(m), m, k, 4, pos, 8, &npos));
    CHECK(npos >= 1 && pos[npos - 1] == 3);
    CHECK_STATUS(dr_bloom_select(7, pos, npos, 1, m, k, 1, out, &got, NULL), DR_E_ARG);
    CHECK_STATUS(dr_bloom_select(DR_BLOOM_LEFTMOST, bad, 2, 1, m, k, 1, out, &got, NULL), DR_E_ARG);
    CHECK_STATUS(dr_bloom_select(DR_BLOOM_RANDOM, two, 2, 1, 8, k, 1, out, &got, NULL), DR_E_ARG);
    /* conflict_sets indexes npos * k_hash members with uint32: refused before reading. */
    CHECK_STATUS(dr_bloom_select(DR_BLOOM_CONFLICT_SETS, two, (size_t)1 << 27, 1, 8, 64, 1, out,
                                 &got, out),
                 DR_E_ARG);
}

/* SKCompress's keys, byte for byte: increments 3, 297, 1, 69699 take 1, 2, 1, 3 bytes;
 * the classes 0, 1, 0, 2 get the Huffman lengths 1, 2, 2 (table 0x29) and the canonical
 * codes 0, 10, 0, 11 (stream bits 0 10 0 11: 0x32). A lone class costs no prefix bits.
 * Non-minimal byte counts, repeated keys, set padding bits, tables that are not a
 * complete code and complete tables other than the Huffman lengths of the decoded
 * classes (each decodes to the right keys, but the encoder never writes it) are refused. */
static void test_skcompress_layout(void)
{
    static const uint32_t idx[4] = {3, 300, 301, 70000}, lone_idx[2] = {1, 5};
    static const uint8_t want[9] = {0x29, 0x32, 0x03, 0x29, 0x01, 0x01, 0x43, 0x10, 0x01};
    static const uint8_t lone[3] = {0x01, 0x01, 0x04};     /* keys 1, 5: class 0 alone */
    static const uint8_t wide[3] = {0x04, 0x03, 0x00};     /* key 3 in 2 bytes */
    static const uint8_t repeat[3] = {0x01, 0x03, 0x00};   /* keys 3, 3 */
    static const uint8_t padded[3] = {0x05, 0x02, 0x03};   /* a padding bit set */
    static const uint8_t partial[3] = {0x09, 0x00, 0x03};  /* lengths 1, 2: incomplete */
    static const uint8_t long_lone[2] = {0x03, 0x03};      /* a lone class of length 3 */
    /* Keys 3, 10, 20, 30, 400 (classes 0, 0, 0, 0, 1): the encoder writes table 0x05;
     * 0x29 also codes class 2, which no key uses, in the same prefix byte. */
    static const uint8_t five[8] = {0x05, 0x10, 0x03, 0x07, 0x0a, 0x0a, 0x72, 0x01};
    static const uint8_t five_unused[8] = {0x29, 0x10, 0x03, 0x07, 0x0a, 0x0a, 0x72, 0x01};
    static const uint8_t one_unused[3] = {0x41, 0x00, 0x4b}; /* key 75; the encoder: 01 4b */
    /* `want` under lengths 2, 2, 1 (class 2 gets code 0): complete, not Huffman. */
    static const uint8_t not_huffman[9] = {0x1a, 0x1d, 0x03, 0x29, 0x01, 0x01, 0x43, 0x10, 0x01};
    static const uint32_t five_idx[5] = {3, 10, 20, 30, 400};
    uint8_t out[16];
    uint32_t back[4];
    size_t w = 0;
    CHECK_OK(dr_index_skcompress_encode(idx, 4, 100000, out, sizeof out, &w));
    CHECK(w == sizeof want && memcmp(out, want, w) == 0);
    CHECK(dr_index_skcompress_bound(100000, 4) == 1 + 2 + 4 * 3);
    CHECK_STATUS(dr_index_skcompress_encode(idx, 4, 100000, out, sizeof want - 1, &w),
                 DR_E_DST_TOO_SMALL);
    CHECK_OK(dr_index_skcompress_decode(want, sizeof want, 100000, 4, back));
    CHECK(memcmp(back, idx, sizeof idx) == 0);
    CHECK_OK(dr_index_skcompress_encode(lone_idx, 2, 10, out, sizeof out, &w));
    CHECK(w == sizeof lone && memcmp(out, lone, w) == 0);
    CHECK_OK(dr_index_skcompress_decode(lone, sizeof lone, 10, 2, back));
    CHECK(back[0] == 1 && back[1] == 5);
    CHECK_STATUS(dr_index_skcompress_decode(want, sizeof want, 70000, 4, back), DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(wide, sizeof wide, 10, 1, back), DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(repeat, sizeof repeat, 10, 2, back), DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(padded, sizeof padded, 10, 1, back), DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(partial, sizeof partial, 10, 1, back), DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(long_lone, sizeof long_lone, 10, 1, back),
                 DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(want, 0, 100000, 4, back), DR_E_CORRUPT);
    {
        uint32_t five_back[5];
        CHECK_OK(dr_index_skcompress_encode(five_idx, 5, 2000, out, sizeof out, &w));
        CHECK(w == sizeof five && memcmp(out, five, w) == 0);
        CHECK_OK(dr_index_skcompress_decode(five, sizeof five, 2000, 5, five_back));
        CHECK_STATUS(dr_index_skcompress_decode(five_unused, sizeof five_unused, 2000, 5, five_back),
                     DR_E_CORRUPT);
    }
    CHECK_STATUS(dr_index_skcompress_decode(one_unused, sizeof one_unused, 847, 1, back),
                 DR_E_CORRUPT);
    CHECK_STATUS(dr_index_skcompress_decode(not_huffman, sizeof not_huffman, 100000, 4, back),
                 DR_E_CORRUPT);
    {
        /* Class counts 1, 1, 2, 2: after joining classes 0 and 1 (weight 2), three nodes
         * weigh 2; the leaves win the tie (lower node numbers), so every class gets 2 bits
         * (table 0xaa). Taking the joined node first would give lengths 3, 3, 2, 1. */
        static const uint32_t ties[6] = {1, 257, 65793, 131329, 16908545, 33685761};
        uint32_t ties_back[6];
        uint8_t sec[32];
        CHECK_OK(dr_index_skcompress_encode(ties, 6, 33685762, sec, sizeof sec, &w));
        CHECK(sec[0] == 0xaa);
        CHECK_OK(dr_index_skcompress_decode(sec, w, 33685762, 6, ties_back));
        CHECK(memcmp(ties_back, ties, sizeof ties) == 0);
    }
}

/* A permutation passes and ends unchanged; an entry out of range or repeated is refused,
 * and the buffer ends as it began either way (also for an entry whose top bit, the
 * check's mark, is set). */
static void test_permutation_check(void)
{
    uint32_t good[5] = {3, 0, 4, 1, 2}, repeat[5] = {3, 0, 3, 1, 2}, wide[3] = {0, 3, 1};
    uint32_t marked[3] = {1, 0x80000001u, 0};
    static const uint32_t good0[5] = {3, 0, 4, 1, 2}, repeat0[5] = {3, 0, 3, 1, 2};
    CHECK_OK(dr_permutation_check(good, 5));
    CHECK(memcmp(good, good0, sizeof good) == 0);
    CHECK_STATUS(dr_permutation_check(repeat, 5), DR_E_CORRUPT);
    CHECK(memcmp(repeat, repeat0, sizeof repeat) == 0);
    CHECK_STATUS(dr_permutation_check(wide, 3), DR_E_CORRUPT);
    CHECK(wide[0] == 0 && wide[1] == 3 && wide[2] == 1);
    CHECK_STATUS(dr_permutation_check(marked, 3), DR_E_CORRUPT);
    CHECK(marked[0] == 1 && marked[1] == 0x80000001u && marked[2] == 0);
    CHECK_OK(dr_permutation_check(NULL, 0));
    CHECK_STATUS(dr_permutation_check(NULL, 1), DR_E_ARG);
}

int main(void)
{
    test_bitpack();
    test_permutation_check();
    test_skcompress_layout();
    test_lossless_edges();
    test_lossless_random();
    test_lossless_random_bytes();
    test_encoder_refuses_bad_sets();
    test_encoder_refuses_late_descents();
    test_sizes_vs_floor();
    test_huffman_code();
    test_murmur3();
    test_bloom_params();
    test_bloom_layout();
    test_bloom_positives_reference();
    test_bloom_positives_and_policies();
    test_bloom_forged_filters_are_bounded();
    test_bloom_scan_budget();
    test_bloom_edges();
    return check_summary("test_index");
}
