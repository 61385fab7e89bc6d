/* C-level tests of the value codecs: the Fig. 8 volumes, round trips, statistics of the
 * lossy codecs, and that every truncated or corrupted section is refused or decodes to
 * finite values (ASan watches for any access outside the buffers). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { C_POLYFIT, C_DEXP, C_DEFLATE, C_QSGD, C_FP16, C_BF16, C_SKETCH, C_SKCOMPRESS };

/* What a decoder call needs besides the bytes. */
typedef struct {
    int codec;
    size_t r;
    uint32_t p1, p2; /* polyfit: degree, flags; qsgd: bucket, s; sketch: bins */
    void *work;      /* deflate */
} dec_ctx;

static int decode_any(const dec_ctx *c, const uint8_t *in, size_t len, float *out)
{
    switch (c->codec) {
    case C_POLYFIT:
        return dr_value_polyfit_decode(in, len, c->r, c->p1, c->p2, out);
    case C_DEXP:
        return dr_value_dexp_decode(in, len, c->r, out);
    case C_DEFLATE:
        return dr_value_deflate_decode(in, len, c->r, out, c->work);
    case C_QSGD:
        return dr_value_qsgd_decode(in, len, c->r, c->p1, c->p2, out);
    case C_FP16:
        return dr_value_fp16_decode(in, len, c->r, out);
    case C_SKETCH:
        return dr_value_sketch_decode(in, len, c->r, c->p1, out);
    case C_SKCOMPRESS:
        return dr_value_skcompress_decode(in, len, c->r, c->p1, out);
    default:
        return dr_value_bf16_decode(in, len, c->r, out);
    }
}

/* Every truncation and one extra byte are refused; every single-byte change (three
 * patterns per position) is refused or decodes to r finite values. Buffers are
 * allocated at their exact sizes so that ASan catches any overrun. */
static void sweep(const dec_ctx *c, const uint8_t *sec, size_t len)
{
    static const uint8_t pattern[3] = {0x01, 0x80, 0xff};
    float *out = malloc((c->r ? c->r : 1) * sizeof *out);
    uint8_t *buf;
    size_t n, pos, t;
    int trunc_ok = 1, flip_ok = 1;

    for (n = 0; n < len; n++) {
        buf = malloc(n ? n : 1);
        memcpy(buf, sec, n);
        if (decode_any(c, n ? buf : NULL, n, out) >= 0) {
            if (trunc_ok)
                fprintf(stderr, "codec %d: truncation to %zu of %zu accepted\n", c->codec, n, len);
            trunc_ok = 0;
        }
        free(buf);
    }
    buf = malloc(len + 1);
    memcpy(buf, sec, len);
    buf[len] = 0;
    CHECK(decode_any(c, buf, len + 1, out) < 0);
    free(buf);

    buf = malloc(len ? len : 1);
    for (pos = 0; pos < len; pos++) {
        for (t = 0; t < 3; t++) {
            int st;
            memcpy(buf, sec, len);
            buf[pos] ^= pattern[t];
            st = decode_any(c, buf, len, out);
            if (!(st < 0 || (st == DR_OK && test_all_finite(out, c->r)))) {
                if (flip_ok)
                    fprintf(stderr, "codec %d: flip %02x at %zu gave st %d\n", c->codec, pattern[t], pos, st);
                flip_ok = 0;
            }
        }
    }
    free(buf);
    free(out);
    CHECK(trunc_ok);
    CHECK(flip_ok);
}

/* ------------------------------------------------------------------ test data */

/* Laplace(0, b) from the counter generator. */
static float laplace(uint64_t key, uint64_t i, float b)
{
    double u = ((double)(dr_rng_u64(key, i) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    return u < 0.5 ? (float)(b * log(2.0 * u)) : (float)(-b * log(2.0 * (1.0 - u)));
}

static float gaussian(uint64_t key, uint64_t i, float sd)
{
    double u1 = ((double)(dr_rng_u64(key, 2 * i) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(dr_rng_u64(key, 2 * i + 1) >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* The values of a top-1% selection of a d-entry gradient, in index order; r returned. */
static size_t topk_values(int gauss, uint64_t key, size_t d, float *val)
{
    float *g = malloc(d * sizeof *g);
    size_t r = d / 100, j;
    uint32_t *idx = malloc(r * sizeof *idx);
    for (j = 0; j < d; j++)
        g[j] = gauss ? gaussian(key, j, 1e-3f) : laplace(key, j, 1e-3f);
    CHECK_OK(dr_topk(g, d, r, idx));
    for (j = 0; j < r; j++)
        val[j] = g[idx[j]];
    free(g);
    free(idx);
    return r;
}

/* A reproducible shuffle of positions 0..n-1. */
static void shuffle(uint32_t *p, size_t n, uint64_t key)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = (uint32_t)i;
    for (i = n; i > 1; i--) {
        size_t j = (size_t)(dr_rng_u64(key, i) % i);
        uint32_t t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

/* ||dec - ref o perm|| / ||ref o perm||. */
static double rel_l2(const float *ref, const uint32_t *perm, const float *dec, size_t r)
{
    double num = 0, den = 0;
    size_t j;
    for (j = 0; j < r; j++) {
        double want = perm ? ref[perm[j]] : ref[j], e = dec[j] - want;
        num += e * e;
        den += want * want;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int is_permutation(const uint32_t *perm, size_t r)
{
    unsigned char *seen = calloc(r ? r : 1, 1);
    size_t j;
    int ok = 1;
    for (j = 0; j < r && ok; j++) {
        ok = perm[j] < r && !seen[perm[j]];
        if (ok)
            seen[perm[j]] = 1;
    }
    free(seen);
    return ok;
}

/* ---------------------------------------------------------------------- polyfit */

static double polyfit_roundtrip(const float *val, size_t r, uint32_t degree, uint32_t flags,
                                size_t *written_out, int do_sweep);

/* Encodes val[0..r) and returns the section (caller frees) with its length. */
static uint8_t *polyfit_section(const float *val, size_t r, uint32_t degree, uint32_t flags,
                                size_t *written)
{
    size_t cap = dr_value_polyfit_bound(r, degree, flags);
    uint8_t *sec = malloc(cap);
    void *work = malloc(dr_value_polyfit_workspace_size(r) + 1);
    uint32_t *perm = malloc((r ? r : 1) * sizeof *perm);
    CHECK_OK(dr_value_polyfit_encode(val, r, degree, flags, perm, sec, cap, written, work));
    free(work);
    free(perm);
    return sec;
}

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Where the knots go: the paper's rule on curves with known corners, its count from
 * M, the reference's find_breaks, and sections whose pieces do not add up. */
static void test_polyfit_knots(void)
{
    enum { L = 200, L2 = 400 };
    static float val[L2];
    uint8_t *sec, bad[512];
    size_t written, j;
    float out[L2];

    /* Two straight pieces meeting at 50: M = |0.15 - 0.01| gives p = ceil(sqrt(0.28)) =
     * 1 knot, at the corner, and the fit is exact. */
    for (j = 0; j < L; j++)
        val[j] = j < 50 ? 10.0f - 0.15f * (float)j : 2.5f - 0.01f * (float)(j - 50);
    sec = polyfit_section(val, L, 5, 0, &written);
    CHECK(u32_at(sec) == L && sec[4] == 2 && sec[5] == 0 && u32_at(sec + 6) == 50);
    CHECK(written == 6 + 4 + 2 * 6 * 8);
    free(sec);
    CHECK(polyfit_roundtrip(val, L, 5, 0, NULL, 1) < 1e-6);
    /* Scaled by 100: M = 14, p = ceil(sqrt(28)) = 6 knots, 7 pieces of >= 6 values. */
    for (j = 0; j < L; j++)
        val[j] *= 100.0f;
    sec = polyfit_section(val, L, 5, 0, &written);
    CHECK(sec[4] == 7 && sec[5] == 0);
    for (j = 0; j < 6; j++)
        CHECK(u32_at(sec + 6 + 4 * j) >= 6);
    free(sec);
    /* The same curve negated is the other side: 7 pieces there. */
    for (j = 0; j < L; j++)
        val[j] = -val[j];
    sec = polyfit_section(val, L, 5, 0, &written);
    CHECK(u32_at(sec) == 0 && sec[4] == 0 && sec[5] == 7);
    free(sec);
    /* A straight line has M = 0: one piece, no knot. */
    for (j = 0; j < L; j++)
        val[j] = 1.0f + (float)j;
    sec = polyfit_section(val, L, 5, 0, &written);
    CHECK(sec[4] == 1 && written == 6 + 6 * 8);
    free(sec);

    /* The reference's rule on 400 positives whose corner sits 49 from the small end:
     * the first cut is there (ascending magnitude), and every cut leaves >= 100 values
     * after it; at most 5 cuts. With the corner 49 from the large end the rest would be
     * 49 < 100 values: no cut at all. */
    for (j = 0; j < L2; j++) {
        double x = (double)j;
        val[j] = (float)(j < 351 ? 100.0 - 0.2 * x + 1e-4 * x * x : 41.0 - 0.8 * (x - 351.0));
    }
    sec = polyfit_section(val, L2, 5, DR_POLYFIT_KNOTS_REFERENCE, &written);
    CHECK(sec[4] >= 2 && sec[4] <= 6 && sec[5] == 0);
    {
        uint32_t sum = 0, k;
        for (k = 0; k + 1 < sec[4]; k++)
            sum += u32_at(sec + 6 + 4 * k);
        CHECK(L2 - sum == 49); /* the last piece (smallest values) ends at the corner */
        CHECK(polyfit_roundtrip(val, L2, 5, DR_POLYFIT_KNOTS_REFERENCE, NULL, 0) < 1e-3);
    }
    free(sec);
    for (j = 0; j < L2; j++)
        val[j] = (float)(L2 - j) + (j < 49 ? 10.0f * (float)(49 - j) : 0.0f);
    sec = polyfit_section(val, L2, 5, DR_POLYFIT_KNOTS_REFERENCE, &written);
    CHECK(sec[4] == 1);
    free(sec);

    /* Sections whose pieces do not add up are refused. */
    for (j = 0; j < L; j++)
        val[j] = j < 50 ? 10.0f - 0.15f * (float)j : 2.5f - 0.01f * (float)(j - 50);
    sec = polyfit_section(val, L, 5, 0, &written);
    CHECK(written <= sizeof bad);
    memcpy(bad, sec, written);
    bad[4] = 0; /* no pieces for 200 positives */
    CHECK(dr_value_polyfit_decode(bad, written, L, 5, 0, out) < 0);
    memcpy(bad, sec, written);
    bad[4] = DR_POLYFIT_MAX_PIECES + 1;
    CHECK_STATUS(dr_value_polyfit_decode(bad, written, L, 5, 0, out), DR_E_CORRUPT);
    memcpy(bad, sec, written);
    bad[5] = 1; /* pieces for an empty side */
    CHECK_STATUS(dr_value_polyfit_decode(bad, written, L, 5, 0, out), DR_E_CORRUPT);
    memcpy(bad, sec, written);
    memset(bad + 6, 0, 4); /* an empty piece */
    CHECK_STATUS(dr_value_polyfit_decode(bad, written, L, 5, 0, out), DR_E_CORRUPT);
    memcpy(bad, sec, written);
    bad[6] = L; /* the listed piece leaves nothing for the last */
    CHECK_STATUS(dr_value_polyfit_decode(bad, written, L, 5, 0, out), DR_E_CORRUPT);
    CHECK_STATUS(dr_value_polyfit_decode(sec, written, L, 5, 4, out), DR_E_ARG); /* unknown flag */
    CHECK_OK(dr_value_polyfit_decode(sec, written, L, 5, DR_POLYFIT_KNOTS_REFERENCE, out));
    free(sec);
}

/* Encode with a fresh workspace, decode, and check the permutation sorts descending. */
static double polyfit_roundtrip(const float *val, size_t r, uint32_t degree, uint32_t flags,
                                size_t *written_out, int do_sweep)
{
    size_t cap = dr_value_polyfit_bound(r, degree, flags), written = 0, j;
    uint8_t *sec = malloc(cap ? cap : 1);
    void *work = malloc(dr_value_polyfit_workspace_size(r) + 1);
    uint32_t *perm = malloc((r ? r : 1) * sizeof *perm);
    float *dec = malloc((r ? r : 1) * sizeof *dec);
    double err = -1;
    int sorted = 1;
    CHECK_OK(dr_value_polyfit_encode(val, r, degree, flags, perm, sec, cap, &written, work));
    CHECK(written <= cap);
    CHECK(is_permutation(perm, r));
    for (j = 1; j < r; j++)
        sorted &= val[perm[j - 1]] >= val[perm[j]];
    CHECK(sorted);
    if (dr_value_polyfit_decode(sec, written, r, degree, flags, dec) == DR_OK)
        err = rel_l2(val, perm, dec, r);
    CHECK(err >= 0);
    if (do_sweep) {
        dec_ctx c = {C_POLYFIT, 0, 0, 0, NULL};
        c.r = r;
        c.p1 = degree;
        c.p2 = flags;
        sweep(&c, sec, written);
    }
    if (written_out)
        *written_out = written;
    free(sec);
    free(work);
    free(perm);
    free(dec);
    return err;
}

static void test_polyfit(void)
{
    enum { R = 368, N = 3000 };
    float val[N];
    size_t written = 0, j, r;
    double err;

    /* r = 368 with 184 positive values of gradient size (1e-3): M is tiny, so one knot
     * per side, 4 pieces: 6 + 2 * 4 + 24 coefficients. */
    for (j = 0; j < R; j++) {
        float m = fabsf(laplace(11, j, 1e-3f)) + 1e-3f;
        val[j] = (j % 2) ? -m : m;
    }
    err = polyfit_roundtrip(val, R, 5, 0, &written, 1);
    CHECK(written == 14 + 24 * 8 && written <= dr_value_polyfit_bound(R, 5, 0));
    err = polyfit_roundtrip(val, R, 5, DR_POLYFIT_COEF_F32, &written, 1);
    CHECK(written == 14 + 24 * 4);

    /* Gradient-like values: a top-1% selection of Laplace and Gaussian gradients. */
    r = topk_values(0, 21, 36864, val);
    CHECK(r == R);
    err = polyfit_roundtrip(val, r, 5, 0, &written, 0);
    printf("polyfit laplace top-1%% r=%zu: %zu bytes, rel L2 error %.4f\n", r, written, err);
    CHECK(err < 0.05);
    err = polyfit_roundtrip(val, r, 5, DR_POLYFIT_COEF_F32, &written, 0);
    printf("polyfit laplace top-1%% f32 coefficients: %zu bytes, rel L2 error %.4f\n", written, err);
    CHECK(err < 0.05);
    r = topk_values(1, 22, 36864, val);
    err = polyfit_roundtrip(val, r, 5, 0, &written, 0);
    printf("polyfit gaussian top-1%% r=%zu: %zu bytes, rel L2 error %.4f\n", r, written, err);
    CHECK(err < 0.05);

    /* Smooth sorted data: a cubic in the rank is fitted exactly by every segment, a
     * smooth non-polynomial curve closely. Values are shuffled first. */
    {
        uint32_t p[N];
        shuffle(p, N, 5);
        for (j = 0; j < N; j++) {
            double x = 1.0 - 2.0 * (double)j / (N - 1);
            val[p[j]] = (float)(0.01 * x * x * x + 0.001 * x);
        }
        err = polyfit_roundtrip(val, N, 5, 0, NULL, 0);
        CHECK(err < 1e-5);
        for (j = 0; j < N; j++) {
            double x = 1.0 - 2.0 * (double)j / (N - 1);
            val[p[j]] = (float)(0.01 * sinh(3.0 * x));
        }
        err = polyfit_roundtrip(val, N, 5, 0, NULL, 0);
        CHECK(err < 1e-3);
        err = polyfit_roundtrip(val, N, 15, 0, NULL, 0);
        CHECK(err < 1e-6);
        err = polyfit_roundtrip(val, N, 0, 0, NULL, 0);
        CHECK(err < 0.5);
    }

    /* Short pieces are interpolated: r = 5 (sides of 3 and 2) comes back exactly. */
    {
        float v5[5] = {0.5f, -0.25f, 2.0f, -1.0f, 0.125f};
        err = polyfit_roundtrip(v5, 5, 5, 0, &written, 1);
        CHECK(err < 1e-6 && written == 6 + 8 * (3 + 2));
        err = polyfit_roundtrip(v5, 5, 1, 0, &written, 0);
        CHECK(written == 6 + 8 * (2 + 2));
    }
    /* Empty segments: no values, all positive, all negative, zeros; equal values keep
     * their input order. */
    {
        float same[40];
        uint32_t perm[40];
        uint8_t sec[512];
        void *work = malloc(dr_value_polyfit_workspace_size(40));
        CHECK(polyfit_roundtrip(NULL, 0, 5, 0, &written, 1) >= 0);
        CHECK(written == 6);
        for (j = 0; j < 40; j++)
            same[j] = (float)(j + 1);
        CHECK(polyfit_roundtrip(same, 40, 5, 0, &written, 0) < 1e-6);
        CHECK(written == 6 + 8 * 6); /* a straight line: M = 0, one piece */
        for (j = 0; j < 40; j++)
            same[j] = -(float)(j + 1);
        CHECK(polyfit_roundtrip(same, 40, 5, 0, &written, 1) < 1e-6);
        for (j = 0; j < 40; j++)
            same[j] = (j % 3 == 0) ? 0.0f : (j % 3 == 1 ? -0.0f : 1.0f);
        CHECK(polyfit_roundtrip(same, 40, 5, 0, &written, 0) >= 0);
        CHECK_OK(dr_value_polyfit_encode(same, 40, 5, 0, perm, sec, sizeof sec, &written, work));
        CHECK(perm[0] == 2 && perm[1] == 5 && perm[12] == 38 && perm[13] == 0 && perm[14] == 3 &&
              perm[27] == 1 && perm[39] == 37);
        free(work);
    }
    /* Refusals. */
    {
        float bad[3] = {1.0f, NAN, 2.0f};
        uint32_t perm[3];
        uint8_t sec[64];
        double wbuf[8];
        void *mis = (char *)wbuf + 1;
        CHECK_STATUS(dr_value_polyfit_encode(bad, 3, 5, 0, perm, sec, 64, &written, wbuf), DR_E_NUMERIC);
        bad[1] = 3.0f;
        CHECK_STATUS(dr_value_polyfit_encode(bad, 3, 16, 0, perm, sec, 64, &written, wbuf), DR_E_ARG);
        CHECK_STATUS(dr_value_polyfit_encode(bad, 3, 5, 4, perm, sec, 64, &written, wbuf), DR_E_ARG);
        CHECK_STATUS(dr_value_polyfit_encode(bad, 3, 5, 0, perm, sec, 10, &written, wbuf), DR_E_DST_TOO_SMALL);
        CHECK_STATUS(dr_value_polyfit_encode(bad, 3, 5, 0, perm, sec, 64, &written, mis), DR_E_ARG);
        CHECK(dr_value_polyfit_bound(3, 16, 0) == 0);
        /* npos > r. */
        CHECK_OK(dr_value_polyfit_encode(bad, 3, 5, 0, perm, sec, sizeof sec, &written, wbuf));
        sec[0] = 4;
        CHECK_STATUS(dr_value_polyfit_decode(sec, written, 3, 5, 0, val), DR_E_CORRUPT);
    }
    {
        /* A step at the top of the float range: its degree-5 coefficient overflows float32. */
        float step[6] = {FLT_MAX, FLT_MAX, FLT_MAX, 1.0f, 1.0f, 1.0f};
        uint32_t perm[6];
        uint8_t sec[64];
        double wbuf[16];
        float out[6];
        CHECK_STATUS(dr_value_polyfit_encode(step, 6, 5, DR_POLYFIT_COEF_F32, perm, sec, 64, &written, wbuf),
                     DR_E_NUMERIC);
        /* In float64 it is fine, and values a rounding above FLT_MAX still decode. */
        CHECK_OK(dr_value_polyfit_encode(step, 6, 5, 0, perm, sec, 64, &written, wbuf));
        CHECK_OK(dr_value_polyfit_decode(sec, written, 6, 5, 0, out));
        CHECK(out[0] == FLT_MAX && out[2] == FLT_MAX && fabsf(out[3] - 1.0f) < 1e30f);
    }
}

/* ------------------------------------------------------------------------- dexp */

static double dexp_roundtrip(const float *val, size_t r, double coef[4], int do_sweep)
{
    size_t cap = dr_value_dexp_bound(r), written = 0, j;
    uint8_t *sec = malloc(cap);
    void *work = malloc(dr_value_dexp_workspace_size(r) + 1);
    uint32_t *perm = malloc((r ? r : 1) * sizeof *perm);
    float *dec = malloc((r ? r : 1) * sizeof *dec);
    double err = -1;
    int sorted = 1, magnitudes = 1;
    CHECK_OK(dr_value_dexp_encode(val, r, perm, sec, cap, &written, work));
    CHECK(written == cap);
    CHECK(is_permutation(perm, r));
    for (j = 1; j < r; j++)
        sorted &= fabsf(val[perm[j - 1]]) <= fabsf(val[perm[j]]);
    CHECK(sorted);
    if (coef)
        memcpy(coef, sec, 32);
    if (dr_value_dexp_decode(sec, written, r, dec) == DR_OK) {
        /* Magnitudes come back; the signs are the index side's, applied as a caller does. */
        for (j = 0; j < r; j++) {
            magnitudes &= dec[j] >= 0.0f && !signbit(dec[j]);
            if (signbit(val[perm[j]]))
                dec[j] = -dec[j];
        }
        err = rel_l2(val, perm, dec, r);
    }
    CHECK(err >= 0);
    CHECK(magnitudes);
    if (do_sweep) {
        dec_ctx c = {C_DEXP, 0, 0, 0, NULL};
        c.r = r;
        sweep(&c, sec, written);
    }
    free(sec);
    free(work);
    free(perm);
    free(dec);
    return err;
}

static void test_dexp(void)
{
    enum { N = 2000 };
    static float val[N];
    uint32_t p[N];
    double c[4], err;
    size_t j, r;

    CHECK(dr_value_dexp_bound(368) == 32 && dr_value_dexp_bound(0) == 32); /* Fig. 8: <= 32 B */
    /* Synthetic a e^{px} + b e^{qx}, shuffled, random signs: the fit recovers it. */
    shuffle(p, N, 9);
    for (j = 0; j < N; j++) {
        double x = (double)j / (N - 1);
        float m = (float)(1e-3 * exp(1.0 * x) + 2e-4 * exp(7.0 * x));
        val[p[j]] = (dr_rng_u64(10, j) & 1) ? -m : m;
    }
    err = dexp_roundtrip(val, N, c, 0);
    printf("dexp synthetic r=%d: a=%.6g b=%.6g p=%.6g q=%.6g, rel L2 error %.2e\n", N, c[0], c[1],
           c[2], c[3], err);
    CHECK(err < 1e-3);
    CHECK(fabs(c[0] - 1e-3) < 1e-5 && fabs(c[1] - 2e-4) < 2e-6 && fabs(c[2] - 1.0) < 1e-2 &&
          fabs(c[3] - 7.0) < 1e-2);

    /* Gradient-like values. */
    r = topk_values(0, 21, 36864, val);
    err = dexp_roundtrip(val, r, NULL, 1);
    printf("dexp laplace top-1%% r=%zu: %zu bytes, rel L2 error %.4f\n", r, dr_value_dexp_bound(r), err);
    CHECK(err < 0.1);
    r = topk_values(1, 22, 36864, val);
    err = dexp_roundtrip(val, r, NULL, 0);
    printf("dexp gaussian top-1%% r=%zu: rel L2 error %.4f\n", r, err);
    CHECK(err < 0.1);

    /* Finite magnitudes up to FLT_MAX: a fit that leaves float32's range somewhere was sent,
     * and the sender's own decoder refused it (DR_E_CORRUPT); the mean goes instead. */
    {
        static const double tops[] = {1e36, 1e38, 3.4e38};
        size_t t;
        for (t = 0; t < 2 * sizeof tops / sizeof tops[0]; t++) {
            float largest = 0.0f;
            r = topk_values(0, 21, t % 2 ? 5000 : 36864, val);
            for (j = 0; j < r; j++)
                largest = fmaxf(largest, fabsf(val[j]));
            for (j = 0; j < r; j++)
                val[j] = (float)(val[j] / largest * tops[t / 2]);
            CHECK(dexp_roundtrip(val, r, NULL, 1) >= 0);
        }
    }

    /* Degenerate input falls back to the constant mean magnitude. */
    for (j = 0; j < 50; j++)
        val[j] = (j % 2) ? -0.5f : 0.5f;
    err = dexp_roundtrip(val, 50, c, 1);
    CHECK(err < 1e-7 && c[0] == 0.5 && c[1] == 0 && c[2] == 0 && c[3] == 0);
    val[0] = 1.0f;
    val[1] = -3.0f;
    val[2] = 2.0f;
    err = dexp_roundtrip(val, 3, c, 1);
    CHECK(c[0] == 2.0 && c[1] == 0 && c[2] == 0);
    CHECK(dexp_roundtrip(val, 1, NULL, 0) < 1e-7);
    CHECK(dexp_roundtrip(NULL, 0, NULL, 1) == 0);
    memset(val, 0, 100 * sizeof *val);
    CHECK(dexp_roundtrip(val, 100, c, 0) == 0 && c[0] == 0);
    /* A straight line is no double exponential: whatever model is chosen, no error and no
     * worse than the mean. */
    for (j = 0; j < 100; j++)
        val[j] = (float)j;
    CHECK(dexp_roundtrip(val, 100, NULL, 0) < 0.6);

    /* Refusals. */
    {
        float bad[4] = {1.0f, 2.0f, INFINITY, 3.0f};
        uint32_t perm[4];
        uint8_t sec[64];
        double wbuf[8], coef[4] = {1.0, 0.0, 1000.0, 0.0};
        size_t written;
        float out[4];
        CHECK_STATUS(dr_value_dexp_encode(bad, 4, perm, sec, sizeof sec, &written, wbuf), DR_E_NUMERIC);
        bad[2] = 4.0f;
        CHECK_STATUS(dr_value_dexp_encode(bad, 4, perm, sec, 31, &written, wbuf), DR_E_DST_TOO_SMALL);
        CHECK_OK(dr_value_dexp_encode(bad, 4, perm, sec, sizeof sec, &written, wbuf));
        CHECK(written == 32);
        memcpy(sec, coef, 32); /* e^1000 overflows */
        CHECK_STATUS(dr_value_dexp_decode(sec, written, 4, out), DR_E_CORRUPT);
    }
}

/* The radix sort skips passes whose byte is the same for every key, which changes where
 * its result lands: keys that differ in one, two, three bytes or none at all. */
static void test_sort_passes(void)
{
    enum { N = 300 };
    static const uint32_t spread[4] = {0x000000ffu, 0x0000ffffu, 0x00ffffffu, 0};
    float val[N];
    uint32_t p[N], perm[N];
    uint8_t sec[32];
    double work[3 * N / 2];
    size_t j, t, written;
    int in_order = 1;
    shuffle(p, N, 77);
    for (t = 0; t < 4; t++) {
        for (j = 0; j < N; j++) {
            uint32_t u = 0x3f000000u + ((p[j] * 2654435761u) & spread[t]);
            memcpy(&val[j], &u, 4);
            if (j % 2)
                val[j] = -val[j];
        }
        CHECK(polyfit_roundtrip(val, N, 5, 0, NULL, 0) >= 0);
        CHECK(dexp_roundtrip(val, N, NULL, 0) >= 0);
    }
    /* All magnitudes equal: positives first, each sign in input order. */
    CHECK_OK(dr_value_dexp_encode(val, N, perm, sec, sizeof sec, &written, work));
    for (j = 0; j < N; j++)
        in_order &= perm[j] == (j < N / 2 ? 2 * j : 2 * (j - N / 2) + 1);
    CHECK(in_order);
}

/* ----------------------------------------------------------------------- sketch */

/* The truncation and byte-change sweep of a section whose only parameter is its bins. */
static void sweep_bins(int codec, size_t r, uint32_t bins, const uint8_t *sec, size_t len)
{
    dec_ctx c = {0, 0, 0, 0, NULL};
    c.codec = codec;
    c.r = r;
    c.p1 = bins;
    sweep(&c, sec, len);
}

/* SKCompress's values: the section is the sketch compressor's two sections, byte for
 * byte; every value comes back as its bin's mean; damaged sections are refused. */
static void test_sketch_values(void)
{
    enum { N = 5000 };
    static float val[N], dec[N], viaframe[N];
    static const uint32_t bins_list[2] = {127, 300};
    size_t r = topk_values(0, 41, 36864, val), t, written = 0, fw = 0, j;
    for (t = 0; t < 2; t++) {
        uint32_t bins = bins_list[t];
        size_t cap = dr_value_sketch_bound(r, bins), fcap = dr_sketch_size(r, bins);
        uint8_t *sec = malloc(cap), *frame = malloc(fcap);
        void *work = malloc(dr_sketch_workspace_size(r, bins));
        dr_frame f;
        int same = 1;
        CHECK(cap == 4u * bins + r * (bins <= 256 ? 1u : 2u));
        CHECK_STATUS(dr_value_sketch_encode(val, r, bins, 7, sec, cap - 1, &written, work),
                     DR_E_DST_TOO_SMALL);
        CHECK_STATUS(dr_value_sketch_encode(val, r, bins, 7, sec, cap, &written, (char *)work + 4), DR_E_ARG);
        CHECK_OK(dr_value_sketch_encode(val, r, bins, 7, sec, cap, &written, work));
        CHECK(written == cap);
        CHECK_OK(dr_sketch_encode(val, r, bins, 7, DR_DTYPE_FLOAT32, work, frame, fcap, &fw));
        CHECK_OK(dr_frame_parse(frame, fw, &f));
        CHECK(memcmp(sec, frame + f.section_off[0], 4u * bins) == 0 &&
              memcmp(sec + 4u * bins, frame + f.section_off[1], f.section_len[1]) == 0);
        CHECK_OK(dr_value_sketch_decode(sec, written, r, bins, dec));
        CHECK_OK(dr_sketch_decode(frame, fw, viaframe, r));
        for (j = 0; j < r; j++)
            same &= dec[j] == viaframe[j];
        CHECK(same);
        printf("sketch values r=%zu bins=%u: %zu bytes, rel L2 error %.4f\n", r, bins, written,
               rel_l2(val, NULL, dec, r));
        if (t == 0)
            sweep_bins(C_SKETCH, r, bins, sec, written);
        CHECK_STATUS(dr_value_sketch_decode(sec, written, r, 0, dec), DR_E_ARG);
        sec[4u * bins] = (uint8_t)(bins <= 256 ? bins : 0); /* an index out of range */
        if (bins <= 256)
            CHECK_STATUS(dr_value_sketch_decode(sec, written, r, bins, dec), DR_E_CORRUPT);
        free(sec);
        free(frame);
        free(work);
    }
}

/* Sections that decode to values but that the encoder never writes, built from the
 * section of eight equal values (scale 2, bin 3's mean 32767, lengths 0 0 0 1): each set
 * of quantised values has one encoding, so each forgery is refused. */
static void skcompress_forgeries(const uint8_t *eq, size_t eq_len)
{
    static const float minus_zero = -0.0f, doubled = 4.0f, zero = 0.0f;
    static const int16_t halved = 16384, stray = 5, full = 32767;
    uint8_t sec[64], big[4 + 3 * 32 + 1];
    float out[8];
    unsigned b;
    CHECK(eq_len == 16 && eq[12] == 0 && eq[14] == 0 && eq[15] == 1);
    /* A code for the unused bin 2 (lengths 0 0 1 1) and the stream of eight 1 bits. */
    memcpy(sec, eq, eq_len);
    sec[14] = 1;
    sec[16] = 0xff;
    CHECK_STATUS(dr_value_skcompress_decode(sec, 17, 8, 4, out), DR_E_CORRUPT);
    /* The scale doubled and the mean at full scale halved: near the same values. */
    memcpy(sec, eq, eq_len);
    memcpy(sec, &doubled, 4);
    memcpy(sec + 4 + 2 * 3, &halved, 2);
    CHECK_STATUS(dr_value_skcompress_decode(sec, eq_len, 8, 4, out), DR_E_CORRUPT);
    /* A scale of 0 with a non-zero mean; then all means 0 (what the encoder writes for
     * zeros) passes, and the same with a scale of -0.0 does not. */
    memcpy(sec, eq, eq_len);
    memcpy(sec, &zero, 4);
    memcpy(sec + 4 + 2 * 3, &stray, 2);
    CHECK_STATUS(dr_value_skcompress_decode(sec, eq_len, 8, 4, out), DR_E_CORRUPT);
    memset(sec + 4, 0, 8);
    CHECK_OK(dr_value_skcompress_decode(sec, eq_len, 8, 4, out));
    memcpy(sec, &minus_zero, 4);
    CHECK_STATUS(dr_value_skcompress_decode(sec, eq_len, 8, 4, out), DR_E_CORRUPT);
    /* 32 bins with lengths 1, 2, .., 24, 25, 25 (a complete code past the 24-bit limit),
     * one value coded 0 in bin 0. */
    memset(big, 0, sizeof big);
    memcpy(big, &doubled, 4);
    memcpy(big + 4, &full, 2);
    for (b = 0; b < 24; b++)
        big[4 + 2 * 32 + b] = (uint8_t)(b + 1);
    big[4 + 2 * 32 + 24] = big[4 + 2 * 32 + 25] = 25;
    CHECK_STATUS(dr_value_skcompress_decode(big, sizeof big, 1, 32, out), DR_E_CORRUPT);
}

/* SKCompress's values: every value decodes to its bin's mean as the plain sketch gives
 * it (up to the int16 means' step of 1/32767 of the largest), the section is 4 + 3 bins +
 * the Huffman codes (2 bits a value at 4 equal-count bins), a lone bin codes in 0 bits,
 * and damaged sections are refused or decode to finite values. */
static void test_skcompress_values(void)
{
    enum { N = 5000 };
    static float val[N], dec[N], plain[N], same[8];
    static const uint32_t bins_list[3] = {2, 4, 128};
    size_t r = topk_values(0, 41, 36864, val), t, written = 0, j;
    float top = 0.0f;
    for (j = 0; j < r; j++)
        top = fabsf(val[j]) > top ? fabsf(val[j]) : top;
    for (t = 0; t < 3; t++) {
        uint32_t bins = bins_list[t];
        size_t cap = dr_value_skcompress_bound(r, bins), plain_cap = dr_value_sketch_bound(r, bins);
        uint8_t *sec = malloc(cap), *psec = malloc(plain_cap);
        void *work = malloc(dr_value_skcompress_workspace_size(r, bins));
        int close = 1;
        CHECK(cap == 4u + 3u * bins + 3u * r);
        CHECK_OK(dr_value_skcompress_encode(val, r, bins, 7, sec, cap, &written, work));
        CHECK_STATUS(dr_value_skcompress_encode(val, r, bins, 7, sec, written - 1, &written, work),
                     DR_E_DST_TOO_SMALL);
        CHECK_OK(dr_value_skcompress_encode(val, r, bins, 7, sec, cap, &written, work));
        if (bins == 4)
            CHECK(written == 4u + 12u + (2u * r + 7u) / 8u);
        CHECK_OK(dr_value_skcompress_decode(sec, written, r, bins, dec));
        CHECK_OK(dr_value_sketch_encode(val, r, bins, 7, psec, plain_cap, &j, work));
        CHECK_OK(dr_value_sketch_decode(psec, plain_cap, r, bins, plain));
        for (j = 0; j < r; j++)
            close &= fabsf(dec[j] - plain[j]) <= top / 32767.0f;
        CHECK(close);
        printf("skcompress values r=%zu bins=%u: %zu bytes, rel L2 error %.4f\n", r, bins, written,
               rel_l2(val, NULL, dec, r));
        if (bins == 4) {
            sweep_bins(C_SKCOMPRESS, r, bins, sec, written);
            sec[4] = 0x00;
            sec[5] = 0x80; /* a mean of -32768 */
            CHECK_STATUS(dr_value_skcompress_decode(sec, written, r, bins, dec), DR_E_CORRUPT);
        }
        CHECK_STATUS(dr_value_skcompress_decode(sec, written, r, 0, dec), DR_E_ARG);
        free(sec);
        free(psec);
        free(work);
    }
    /* Equal values: one used bin, coded in no bits; r = 0 is the empty section. */
    {
        static const float eq[8] = {2, 2, 2, 2, 2, 2, 2, 2};
        uint8_t sec[64];
        uint64_t work[64];
        CHECK(dr_value_skcompress_workspace_size(8, 4) <= sizeof work);
        CHECK_OK(dr_value_skcompress_encode(eq, 8, 4, 1, sec, sizeof sec, &written, work));
        CHECK(written == 4u + 12u);
        CHECK_OK(dr_value_skcompress_decode(sec, written, 8, 4, same));
        CHECK(same[0] == 2.0f && same[7] == 2.0f);
        skcompress_forgeries(sec, written);
        CHECK_OK(dr_value_skcompress_encode(eq, 0, 4, 1, sec, sizeof sec, &written, work));
        CHECK(written == 0);
        CHECK_OK(dr_value_skcompress_decode(sec, 0, 0, 4, same));
        CHECK_STATUS(dr_value_skcompress_encode(eq, 8, 257, 1, sec, sizeof sec, &written, work),
                     DR_E_ARG);
    }
}

/* ---------------------------------------------------------------------- deflate */

static void test_deflate(void)
{
    enum { N = 5000 };
    static float val[N], dec[N];
    size_t ws = dr_value_deflate_workspace_size(N, 9), cap = dr_value_deflate_bound(N), written = 0, r;
    uint8_t *sec = malloc(cap);
    void *work = malloc(ws);
    uint32_t level;

    r = topk_values(0, 31, 36864, val);
    for (level = 0; level <= 9; level++) {
        memset(dec, 0, sizeof dec);
        CHECK_OK(dr_value_deflate_encode(val, r, level, sec, cap, &written, work));
        CHECK(written <= dr_value_deflate_bound(r));
        CHECK_OK(dr_value_deflate_decode(sec, written, r, dec, work));
        CHECK(memcmp(val, dec, r * sizeof *val) == 0);
        if (level == 6)
            printf("deflate level 6 laplace top-1%% r=%zu: %zu bytes (raw %zu)\n", r, written, 4 * r);
    }
    /* The level 6 section, corrupted and truncated. */
    {
        dec_ctx c = {C_DEFLATE, 0, 0, 0, NULL};
        c.r = r;
        c.work = work;
        CHECK_OK(dr_value_deflate_encode(val, r, 6, sec, cap, &written, work));
        sweep(&c, sec, written);
        CHECK(dr_value_deflate_decode(sec, written, r - 1, dec, work) < 0);
        CHECK(dr_value_deflate_decode(sec, written, r + 1, dec, work) < 0);
        /* Every cut is short, as the header says: cuts in the trailer, after all 4 r
         * bytes came out, read as corrupt before. */
        for (size_t cut = 1; cut <= written; cut++)
            CHECK_STATUS(dr_value_deflate_decode(sec, written - cut, r, dec, work), DR_E_FRAME_SHORT);
    }
    /* Larger, compressible input. */
    for (r = 0; r < N; r++)
        val[r] = (float)(r % 7) * 0.25f;
    CHECK_OK(dr_value_deflate_encode(val, N, 9, sec, cap, &written, work));
    CHECK(written < N);
    CHECK_OK(dr_value_deflate_decode(sec, written, N, dec, work));
    CHECK(memcmp(val, dec, sizeof val) == 0);
    /* Empty input. */
    CHECK_OK(dr_value_deflate_encode(NULL, 0, 6, sec, cap, &written, work));
    CHECK_OK(dr_value_deflate_decode(sec, written, 0, NULL, work));
    CHECK(dr_value_deflate_decode(sec, written, 1, dec, work) < 0);
    for (size_t cut = 1; cut <= written; cut++)
        CHECK_STATUS(dr_value_deflate_decode(sec, written - cut, 0, NULL, work), DR_E_FRAME_SHORT);
    /* Refusals. */
    CHECK_STATUS(dr_value_deflate_encode(val, N, 10, sec, cap, &written, work), DR_E_ARG);
    CHECK_STATUS(dr_value_deflate_encode(val, N, 6, sec, 10, &written, work), DR_E_DST_TOO_SMALL);
    CHECK_STATUS(dr_value_deflate_encode(val, N, 6, sec, 0, &written, work), DR_E_DST_TOO_SMALL);
    CHECK_STATUS(dr_value_deflate_encode(val, N, 6, sec, cap, &written, (char *)work + 4), DR_E_ARG);
    val[17] = NAN;
    CHECK_STATUS(dr_value_deflate_encode(val, N, 6, sec, cap, &written, work), DR_E_NUMERIC);
    free(sec);
    free(work);
}

/* ------------------------------------------------------------------------- qsgd */

static void test_qsgd(void)
{
    enum { R = 368 };
    float val[R], dec[R];
    uint8_t sec[1024], sec2[1024];
    size_t written = 0, written2 = 0, j;
    dec_ctx c = {C_QSGD, R, 512, 127, NULL};

    /* Fig. 8: 368 int8 levels + one float32 norm. */
    CHECK(topk_values(0, 41, 36864, val) == R);
    CHECK(dr_value_qsgd_bound(R, 512, 127) == 372);
    CHECK_OK(dr_value_qsgd_encode(val, R, 512, 127, 99, sec, sizeof sec, &written));
    CHECK(written == 372);
    CHECK_OK(dr_value_qsgd_decode(sec, written, R, 512, 127, dec));
    printf("qsgd laplace top-1%% r=%d: %zu bytes, rel L2 error %.4f\n", R, written,
           rel_l2(val, NULL, dec, R));
    sweep(&c, sec, written);
    /* Same key, same bytes; another key, other bytes. */
    CHECK_OK(dr_value_qsgd_encode(val, R, 512, 127, 99, sec2, sizeof sec2, &written2));
    CHECK(written2 == written && memcmp(sec, sec2, written) == 0);
    CHECK_OK(dr_value_qsgd_encode(val, R, 512, 127, 100, sec2, sizeof sec2, &written2));
    CHECK(memcmp(sec, sec2, written) != 0);

    /* int16 levels, several buckets, the last one short. */
    CHECK(dr_value_qsgd_bound(R, 100, 1000) == 4 * 4 + 2 * R);
    CHECK_OK(dr_value_qsgd_encode(val, R, 100, 1000, 5, sec, sizeof sec, &written));
    CHECK(written == 4 * 4 + 2 * R);
    CHECK_OK(dr_value_qsgd_decode(sec, written, R, 100, 1000, dec));
    CHECK(rel_l2(val, NULL, dec, R) < 0.05);
    c.p1 = 100;
    c.p2 = 1000;
    sweep(&c, sec, written);

    /* Unbiased: the mean over many keys approaches the input. Coarse levels (s = 4) make
     * each draw noisy: sd <= norm / (2 s) = 0.25 here, so 4000 keys give sd 0.004. */
    {
        enum { M = 64, K = 4000 };
        float v[M], out[M];
        double mean[M] = {0}, worst = 0;
        uint8_t s8[M + 16];
        size_t k;
        for (j = 0; j < M; j++)
            v[j] = test_uniform(3, j) * 0.5f;
        for (k = 0; k < K; k++) {
            CHECK_OK(dr_value_qsgd_encode(v, M, 16, 4, 1000 + k, s8, sizeof s8, &written));
            CHECK_OK(dr_value_qsgd_decode(s8, written, M, 16, 4, out));
            for (j = 0; j < M; j++)
                mean[j] += out[j];
        }
        for (j = 0; j < M; j++)
            if (fabs(mean[j] / K - v[j]) > worst)
                worst = fabs(mean[j] / K - v[j]);
        CHECK(worst < 0.02);
    }

    /* Zero buckets decode to zeros, never NaN; a lone value equal to its norm is exact. */
    {
        float v[40] = {0}, out[40];
        uint8_t s8[64];
        v[3] = -2.5f;
        v[35] = 1.0f;
        CHECK_OK(dr_value_qsgd_encode(v, 40, 10, 127, 1, s8, sizeof s8, &written));
        CHECK(written == 4 * 4 + 40);
        CHECK_OK(dr_value_qsgd_decode(s8, written, 40, 10, 127, out));
        CHECK(out[3] == -2.5f && out[35] == 1.0f && out[15] == 0.0f && test_all_finite(out, 40));
        memcpy(&v[0], s8 + 4, 4);
        CHECK(v[0] == 0.0f); /* second bucket's norm */
        /* Decoder refusals: |level| > s, a negative or NaN norm, a level under a zero norm. */
        s8[16 + 3] = 0x80; /* -128 */
        CHECK_STATUS(dr_value_qsgd_decode(s8, written, 40, 10, 127, out), DR_E_CORRUPT);
        s8[16 + 3] = 0x81; /* -127: fine */
        CHECK_OK(dr_value_qsgd_decode(s8, written, 40, 10, 127, out));
        CHECK_STATUS(dr_value_qsgd_decode(s8, written, 40, 10, 100, out), DR_E_CORRUPT);
        s8[16 + 15] = 1; /* level in the zero bucket */
        CHECK_STATUS(dr_value_qsgd_decode(s8, written, 40, 10, 127, out), DR_E_CORRUPT);
        s8[16 + 15] = 0;
        s8[3] |= 0x80; /* negative norm */
        CHECK_STATUS(dr_value_qsgd_decode(s8, written, 40, 10, 127, out), DR_E_CORRUPT);
    }
    /* Parameter and input refusals. */
    CHECK(dr_value_qsgd_bound(R, 0, 127) == 0 && dr_value_qsgd_bound(R, 512, 0) == 0 &&
          dr_value_qsgd_bound(R, 512, 32768) == 0);
    CHECK_STATUS(dr_value_qsgd_encode(val, R, 0, 127, 1, sec, sizeof sec, &written), DR_E_ARG);
    CHECK_STATUS(dr_value_qsgd_encode(val, R, 512, 127, 1, sec, 371, &written), DR_E_DST_TOO_SMALL);
    val[100] = NAN;
    CHECK_STATUS(dr_value_qsgd_encode(val, R, 512, 127, 1, sec, sizeof sec, &written), DR_E_NUMERIC);
    /* Finite values whose bucket norm exceeds FLT_MAX: the norm sent is FLT_MAX (still
     * >= every |v|), so they round-trip finite, each within one level of itself. */
    for (j = 0; j < 4; j++)
        val[j] = j % 2 ? FLT_MAX : -FLT_MAX;
    CHECK_OK(dr_value_qsgd_encode(val, 4, 512, 127, 1, sec, sizeof sec, &written));
    CHECK_OK(dr_value_qsgd_decode(sec, written, 4, 512, 127, dec));
    for (j = 0; j < 4; j++)
        CHECK(isfinite(dec[j]) && fabsf(dec[j] - val[j]) <= FLT_MAX / 127.0f * 1.0001f);
    CHECK_OK(dr_value_qsgd_encode(NULL, 0, 512, 127, 1, NULL, 0, &written));
    CHECK(written == 0);
}

/* ------------------------------------------------------------------- fp16, bf16 */

static void test_casts(void)
{
    enum { N = 1000 };
    static float val[N], dec[N];
    uint8_t sec[2 * N];
    size_t written = 0, j;
    dec_ctx c = {C_FP16, 50, 0, 0, NULL};

    /* Values representable in binary16 come back exactly, little-endian on the wire. */
    for (j = 0; j < N; j++)
        val[j] = (float)((int)j - 500) / 64.0f;
    val[0] = 65504.0f;
    val[1] = -65504.0f;
    val[2] = 5.9604645e-8f; /* 2^-24, the smallest subnormal */
    val[3] = 1.0f;
    CHECK(dr_value_fp16_bound(N) == 2 * N);
    CHECK_OK(dr_value_fp16_encode(val, N, sec, sizeof sec, &written));
    CHECK(written == 2 * N && sec[6] == 0x00 && sec[7] == 0x3c);
    CHECK_OK(dr_value_fp16_decode(sec, written, N, dec));
    CHECK(memcmp(val, dec, sizeof val) == 0);
    sweep(&c, sec, 100); /* the first 50 values as a section */
    /* Finite values past the range saturate. */
    val[4] = 1e6f;
    val[5] = -70000.0f;
    CHECK_OK(dr_value_fp16_encode(val, N, sec, sizeof sec, &written));
    CHECK_OK(dr_value_fp16_decode(sec, written, N, dec));
    CHECK(dec[4] == 65504.0f && dec[5] == -65504.0f);
    sec[0] = 0x00;
    sec[1] = 0x7c; /* +inf on the wire */
    CHECK_STATUS(dr_value_fp16_decode(sec, written, N, dec), DR_E_CORRUPT);

    /* bfloat16: values with 8 significant bits come back exactly. */
    for (j = 0; j < N; j++) {
        uint32_t u = (uint32_t)dr_rng_u64(2, j) & 0xbfff0000u; /* exponent below all-ones */
        memcpy(&val[j], &u, 4);
    }
    val[0] = FLT_MAX; /* rounds past the largest bfloat16: saturates */
    CHECK_OK(dr_value_bf16_encode(val, N, sec, sizeof sec, &written));
    CHECK(written == 2 * N);
    CHECK_OK(dr_value_bf16_decode(sec, written, N, dec));
    CHECK(memcmp(val + 1, dec + 1, (N - 1) * sizeof *val) == 0);
    CHECK(dec[0] == 3.3895314e38f);
    c.codec = C_BF16;
    sweep(&c, sec, 100);

    val[7] = NAN;
    CHECK_STATUS(dr_value_fp16_encode(val, N, sec, sizeof sec, &written), DR_E_NUMERIC);
    CHECK_STATUS(dr_value_bf16_encode(val, N, sec, sizeof sec, &written), DR_E_NUMERIC);
    CHECK_STATUS(dr_value_bf16_encode(val, N, sec, 10, &written), DR_E_NUMERIC);
    val[7] = 0.0f;
    CHECK_STATUS(dr_value_bf16_encode(val, N, sec, 10, &written), DR_E_DST_TOO_SMALL);
    CHECK_STATUS(dr_value_fp16_decode(sec, 2 * N - 1, N, dec), DR_E_FRAME_SHORT);
    CHECK_STATUS(dr_value_fp16_decode(sec, 2 * N, N - 1, dec), DR_E_FRAME_FIELD);
}

int main(void)
{
    test_polyfit_knots();
    test_sketch_values();
    test_skcompress_values();
    test_polyfit();
    test_dexp();
    test_sort_passes();
    test_deflate();
    test_qsgd();
    test_casts();
    return check_summary("test_value");
}
