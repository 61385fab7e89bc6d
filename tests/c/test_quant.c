/* C-level tests of the quantisers: sign packing (every SIMD path against a scalar
 * reference), exact frame sizes, round trips, unbiasedness and variance of the
 * stochastic ones, error bounds of the deterministic ones, zero tensors, and refusal of
 * every corrupted or truncated frame. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef int (*decode_fn)(const uint8_t *, size_t, float *, size_t);

/* A standard normal from two counter-stream uniforms (Box-Muller). */
static float test_gauss(uint64_t key, uint64_t i)
{
    double u1 = (dr_rng_u64(key, 2 * i) >> 11) * (1.0 / 9007199254740992.0);
    double u2 = (dr_rng_u64(key, 2 * i + 1) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
}

static void fill_gauss(float *x, size_t n, uint64_t key, float scale)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = scale * test_gauss(key, i);
}

/* Every single-byte change and every truncation of a frame is refused and, where
 * `keeps_out`, `out` is not written on refusal (checked through a canary value; the
 * inceptionn decoder writes while it checks, quant.h). */
static void check_refusals(uint8_t *buf, size_t len, decode_fn decode, size_t n, int keeps_out)
{
    float *out = malloc((n + 1) * sizeof *out);
    size_t pos;
    int refused = 1, untouched = 1;
    for (pos = 0; pos < len; pos++) {
        uint8_t saved = buf[pos];
        size_t i;
        for (i = 0; i < n; i++)
            out[i] = 12345.0f;
        buf[pos] ^= 0x5a;
        refused &= decode(buf, len, out, n) < 0;
        buf[pos] = saved;
        for (i = 0; i < n; i++)
            untouched &= out[i] == 12345.0f;
    }
    CHECK(refused);
    CHECK(untouched || !keeps_out);
    refused = 1;
    for (pos = 0; pos < len; pos++)
        refused &= decode(buf, pos, out, n) < 0;
    CHECK(refused);
    CHECK(decode(buf, len, out, n + 1) == DR_E_FRAME_FIELD);
    if (n > 0)
        CHECK(decode(buf, len, out, n - 1) == DR_E_FRAME_FIELD);
    free(out);
}

static void check_refuses_damage(uint8_t *buf, size_t len, decode_fn decode, size_t n)
{
    check_refusals(buf, len, decode, n, 1);
}

/* ------------------------------------------------------------------ sign bitmaps */

static void ref_pack(const float *x, size_t n, uint8_t *out)
{
    size_t i;
    memset(out, 0, (n + 7) / 8);
    for (i = 0; i < n; i++)
        if (x[i] >= 0.0f)
            out[i / 8] |= (uint8_t)(1u << (i % 8));
}

static void test_sign_packing_matches_reference(void)
{
    enum { N = 1031 };
    static float x[N], back[N];
    static uint8_t got[N / 8 + 2], want[N / 8 + 2];
    size_t n, i;
    int ok = 1;
    for (i = 0; i < N; i++)
        x[i] = test_uniform(21, i);
    x[3] = -0.0f;
    x[5] = NAN;
    x[8] = INFINITY;
    x[9] = -INFINITY;
    x[40] = 0.0f;
    for (n = 0; n <= N; n += (n < 80 ? 1 : 97)) {
        memset(got, 0xff, sizeof got);
        ref_pack(x, n, want);
        CHECK_OK(dr_pack_signs(x, n, got));
        ok &= memcmp(got, want, dr_sign_bytes(n)) == 0;
        ok &= dr_sign_bytes(n) == (n + 7) / 8;
        /* Nothing written past the bitmap. */
        ok &= got[dr_sign_bytes(n)] == 0xff;
        CHECK_OK(dr_unpack_signs(want, n, -2.5f, 7.0f, back));
        for (i = 0; i < n; i++)
            ok &= back[i] == ((want[i / 8] >> (i % 8)) & 1 ? 7.0f : -2.5f);
    }
    CHECK(ok);
    CHECK(dr_pack_signs(NULL, 3, got) == DR_E_ARG);
    CHECK_OK(dr_pack_signs(NULL, 0, NULL));
}

/* ------------------------------------------------------------ sizes and round trips */

static void test_frame_sizes(void)
{
    const size_t big = 25557032;
    CHECK(dr_signsgd_size(big) == 52 + 3194629);
    CHECK(dr_signsgd_size(big) <= 3300000);
    CHECK(dr_signum_size(big) == dr_signsgd_size(big));
    CHECK(dr_efsignsgd_size(big) == 60 + 3194629);
    CHECK(dr_onebit_size(big) == 64 + 3194629);
    CHECK(dr_qsgd_size(big, 127, 128) == 56 + big + 4 * ((big + 127) / 128));
    CHECK(dr_qsgd_size(big, 128, 128) == 56 + 2 * big + 4 * ((big + 127) / 128));
    CHECK(dr_terngrad_size(big) == 60 + (big + 3) / 4);
    CHECK(dr_natural_size(big) == 52 + big);
    CHECK(dr_eightbit_size(big) == 60 + big);
    CHECK(dr_sketch_size(big, 127) == 56 + 4 * 127 + big);
    CHECK(dr_sketch_size(big, 1000) == 56 + 4 * 1000 + 2 * big);
    /* Bins outside 1..DR_SKETCH_MAX_BINS size nothing: past 2^31 the workspace size looped
     * for ever (its power-of-two padding wrapped to 0). */
    CHECK(dr_sketch_size(10, 0) == 0 && dr_sketch_workspace_size(10, 0) == 0);
    CHECK(dr_sketch_size(10, DR_SKETCH_MAX_BINS + 1) == 0 && dr_sketch_workspace_size(10, 0x80000001u) == 0);
    CHECK(dr_sketch_workspace_size(10, DR_SKETCH_MAX_BINS) > 0);
    CHECK(dr_inceptionn_bound(big) == 52 + (big + 3) / 4 + 4 * big);
    printf("frame bytes for n=%lu: signsgd %lu efsignsgd %lu onebit %lu terngrad %lu "
           "qsgd(127,128) %lu natural %lu eightbit %lu sketch(127) %lu\n",
           (unsigned long)big, (unsigned long)dr_signsgd_size(big),
           (unsigned long)dr_efsignsgd_size(big), (unsigned long)dr_onebit_size(big),
           (unsigned long)dr_terngrad_size(big), (unsigned long)dr_qsgd_size(big, 127, 128),
           (unsigned long)dr_natural_size(big), (unsigned long)dr_eightbit_size(big),
           (unsigned long)dr_sketch_size(big, 127));
}

/* Encode x with every quantiser, check the frame size, the decoded shape and value
 * sanity, the kind check, and damage refusal. */
static void test_all_round_trip_and_damage(size_t n)
{
    float *x = malloc((n + 1) * sizeof *x), *out = malloc((n + 1) * sizeof *out);
    size_t cap = dr_inceptionn_bound(n) + dr_sketch_size(n, 300) + 64, len = 0, want, i;
    uint8_t *buf = malloc(cap);
    void *work = malloc(dr_sketch_workspace_size(n, 300));
    int ok;
    fill_gauss(x, n, 5, 0.3f);
    for (i = 0; i < n; i += 7)
        x[i] *= 20.0f; /* some entries past 1 for inceptionn's float32 band */

    CHECK_OK(dr_signsgd_encode(x, n, DR_DTYPE_FLOAT16, buf, cap, &len));
    CHECK(len == dr_signsgd_size(n));
    CHECK(buf[8] == DR_DTYPE_FLOAT16 && buf[5] == DR_KIND_SIGNSGD);
    CHECK_OK(dr_signsgd_decode(buf, len, out, n));
    ok = 1;
    for (i = 0; i < n; i++)
        ok &= out[i] == (x[i] >= 0.0f ? 1.0f : -1.0f);
    CHECK(ok);
    CHECK_STATUS(dr_signum_decode(buf, len, out, n), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_qsgd_decode(buf, len, out, n), DR_E_FRAME_CODEC);
    CHECK_STATUS(dr_signsgd_encode(x, n, 0, buf, len - 1, &len), DR_E_DST_TOO_SMALL);
    CHECK_OK(dr_signsgd_encode(x, n, 0, buf, cap, &len));
    check_refuses_damage(buf, len, dr_signsgd_decode, n);

    CHECK_OK(dr_signum_encode(x, n, 0, buf, cap, &len));
    CHECK(len == dr_signum_size(n) && buf[5] == DR_KIND_SIGNUM);
    CHECK_OK(dr_signum_decode(buf, len, out, n));
    CHECK_STATUS(dr_signsgd_decode(buf, len, out, n), DR_E_FRAME_CODEC);
    check_refuses_damage(buf, len, dr_signum_decode, n);

    CHECK_OK(dr_efsignsgd_encode(x, n, 0, buf, cap, &len));
    CHECK(len == dr_efsignsgd_size(n));
    CHECK_OK(dr_efsignsgd_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_efsignsgd_decode, n);

    CHECK_OK(dr_onebit_encode(x, n, 0, buf, cap, &len));
    CHECK(len == dr_onebit_size(n));
    CHECK_OK(dr_onebit_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_onebit_decode, n);

    CHECK_OK(dr_qsgd_encode(x, n, 127, 16, 9, 0, buf, cap, &len));
    CHECK(len == dr_qsgd_size(n, 127, 16));
    CHECK_OK(dr_qsgd_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_qsgd_decode, n);
    CHECK_OK(dr_qsgd_encode(x, n, 1000, 10, 9, 0, buf, cap, &len));
    CHECK(len == dr_qsgd_size(n, 1000, 10));
    CHECK_OK(dr_qsgd_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_qsgd_decode, n);

    CHECK_OK(dr_terngrad_encode(x, n, 9, 0, buf, cap, &len));
    CHECK(len == dr_terngrad_size(n));
    CHECK_OK(dr_terngrad_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_terngrad_decode, n);

    CHECK_OK(dr_natural_encode(x, n, 9, 0, buf, cap, &len));
    CHECK(len == dr_natural_size(n));
    CHECK_OK(dr_natural_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_natural_decode, n);

    CHECK_OK(dr_eightbit_encode(x, n, 0, buf, cap, &len));
    CHECK(len == dr_eightbit_size(n));
    CHECK_OK(dr_eightbit_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_eightbit_decode, n);

    CHECK_OK(dr_inceptionn_size(x, n, 10, &want));
    CHECK_OK(dr_inceptionn_encode(x, n, 10, 0, buf, cap, &len));
    CHECK(len == want && len <= dr_inceptionn_bound(n));
    CHECK_OK(dr_inceptionn_decode(buf, len, out, n));
    CHECK_STATUS(dr_inceptionn_encode(x, n, 10, 0, buf, len - 1, &len), DR_E_DST_TOO_SMALL);
    CHECK_OK(dr_inceptionn_encode(x, n, 10, 0, buf, cap, &len));
    check_refusals(buf, len, dr_inceptionn_decode, n, 0);

    CHECK_OK(dr_sketch_encode(x, n, 127, 9, 0, work, buf, cap, &len));
    CHECK(len == dr_sketch_size(n, 127));
    CHECK_OK(dr_sketch_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_sketch_decode, n);
    CHECK_OK(dr_sketch_encode(x, n, 300, 9, 0, work, buf, cap, &len));
    CHECK(len == dr_sketch_size(n, 300));
    CHECK_OK(dr_sketch_decode(buf, len, out, n));
    check_refuses_damage(buf, len, dr_sketch_decode, n);

    free(x);
    free(out);
    free(buf);
    free(work);
}

/* A zero tensor decodes to zeros (signs to +1) with no NaN from any quantiser. */
static void test_zero_tensor(void)
{
    enum { N = 300 };
    static float x[N], out[N];
    static uint8_t buf[4096];
    static double work[8192];
    size_t len = 0, i;
    int ok;
    memset(x, 0, sizeof x);
    CHECK(dr_sketch_workspace_size(N, 127) <= sizeof work);
#define ZERO_CASE(encode_call, decode, expect)       \
    do {                                             \
        CHECK_OK(encode_call);                       \
        CHECK_OK(decode(buf, len, out, N));          \
        ok = 1;                                      \
        for (i = 0; i < N; i++)                      \
            ok &= out[i] == (expect);                \
        CHECK(ok);                                   \
    } while (0)
    ZERO_CASE(dr_qsgd_encode(x, N, 127, 128, 1, 0, buf, sizeof buf, &len), dr_qsgd_decode, 0.0f);
    ZERO_CASE(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len), dr_terngrad_decode, 0.0f);
    ZERO_CASE(dr_onebit_encode(x, N, 0, buf, sizeof buf, &len), dr_onebit_decode, 0.0f);
    ZERO_CASE(dr_efsignsgd_encode(x, N, 0, buf, sizeof buf, &len), dr_efsignsgd_decode, 0.0f);
    ZERO_CASE(dr_natural_encode(x, N, 1, 0, buf, sizeof buf, &len), dr_natural_decode, 0.0f);
    ZERO_CASE(dr_eightbit_encode(x, N, 0, buf, sizeof buf, &len), dr_eightbit_decode, 0.0f);
    ZERO_CASE(dr_inceptionn_encode(x, N, 10, 0, buf, sizeof buf, &len), dr_inceptionn_decode, 0.0f);
    ZERO_CASE(dr_sketch_encode(x, N, 127, 1, 0, work, buf, sizeof buf, &len), dr_sketch_decode, 0.0f);
    ZERO_CASE(dr_signsgd_encode(x, N, 0, buf, sizeof buf, &len), dr_signsgd_decode, 1.0f);
    /* One zero bucket among nonzero ones. */
    for (i = 128; i < N; i++)
        x[i] = test_uniform(2, i);
    CHECK_OK(dr_qsgd_encode(x, N, 127, 128, 1, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_qsgd_decode(buf, len, out, N));
    ok = test_all_finite(out, N);
    for (i = 0; i < 128; i++)
        ok &= out[i] == 0.0f;
    CHECK(ok);
    /* Empty tensors give valid empty frames. */
    CHECK_OK(dr_qsgd_encode(NULL, 0, 127, 128, 1, 0, buf, sizeof buf, &len));
    CHECK(len == dr_qsgd_size(0, 127, 128));
    CHECK_OK(dr_qsgd_decode(buf, len, NULL, 0));
    CHECK_OK(dr_sketch_encode(NULL, 0, 127, 1, 0, work, buf, sizeof buf, &len));
    CHECK_OK(dr_sketch_decode(buf, len, NULL, 0));
    CHECK_OK(dr_terngrad_encode(NULL, 0, 1, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_terngrad_decode(buf, len, NULL, 0));
#undef ZERO_CASE
}

static void test_non_finite_input_refused(void)
{
    float x[40];
    uint8_t buf[2048];
    double work[4096];
    size_t len, i;
    for (i = 0; i < 40; i++)
        x[i] = test_uniform(4, i);
    for (i = 0; i < 2; i++) {
        x[17] = i == 0 ? NAN : INFINITY;
        CHECK_STATUS(dr_qsgd_encode(x, 40, 127, 8, 1, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_terngrad_encode(x, 40, 1, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_onebit_encode(x, 40, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_efsignsgd_encode(x, 40, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_natural_encode(x, 40, 1, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_eightbit_encode(x, 40, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_inceptionn_encode(x, 40, 10, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_inceptionn_size(x, 40, 10, &len), DR_E_NUMERIC);
        CHECK_STATUS(dr_sketch_encode(x, 40, 16, 1, 0, work, buf, sizeof buf, &len), DR_E_NUMERIC);
    }
    /* Argument ranges. */
    CHECK_STATUS(dr_qsgd_encode(x, 40, 0, 8, 1, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_qsgd_encode(x, 40, 32768, 8, 1, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_qsgd_encode(x, 40, 127, 0, 1, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_qsgd_encode(x, 40, 127, 8, 1, 9, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_inceptionn_encode(x, 40, 0, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_inceptionn_encode(x, 40, 25, 0, buf, sizeof buf, &len), DR_E_ARG);
    /* A tensor whose tags alone pass a section's 4 GiB is refused before x is read (x is
     * 40 floats: a read past them would be an ASan report); one element fewer fits the
     * tags and gets as far as the cap check. */
    if (SIZE_MAX > UINT32_MAX) {
        const size_t tags_fill = ((size_t)UINT32_MAX) * 4u;
        CHECK_STATUS(dr_inceptionn_encode(x, tags_fill + 1, 10, 0, buf, sizeof buf, &len), DR_E_ARG);
        CHECK_STATUS(dr_inceptionn_encode(x, tags_fill, 10, 0, buf, sizeof buf, &len),
                     DR_E_DST_TOO_SMALL);
    }
    CHECK_STATUS(dr_sketch_encode(x, 40, 0, 1, 0, work, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_sketch_encode(x, 40, 65537, 1, 0, work, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_sketch_encode(x, 40, 16, 1, 0, (char *)work + 4, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_signsgd_encode(NULL, 40, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_signsgd_encode(x, 40, 0, buf, sizeof buf, NULL), DR_E_ARG);
    CHECK_STATUS(dr_signum_momentum(x, x, 40, 1.5f, 0), DR_E_ARG);
}

/* ----------------------------------------------------------------- sign family */

static void test_onebit_mask_direction(void)
{
    float x[6] = {-2.0f, -4.0f, 3.0f, 5.0f, 0.0f, -0.0f}, out[6];
    uint8_t buf[128];
    size_t len;
    CHECK_OK(dr_onebit_encode(x, 6, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_onebit_decode(buf, len, out, 6));
    /* Negatives get the negatives' mean (-3), the rest the non-negatives' mean (2). */
    CHECK(out[0] == -3.0f && out[1] == -3.0f);
    CHECK(out[2] == 2.0f && out[3] == 2.0f && out[4] == 2.0f && out[5] == 2.0f);
    /* All of one sign: the empty side's mean is 0, not NaN. */
    x[0] = x[1] = 1.0f;
    CHECK_OK(dr_onebit_encode(x, 6, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_onebit_decode(buf, len, out, 6));
    CHECK(test_all_finite(out, 6) && out[0] == (float)(10.0 / 6.0));
}

static void test_efsignsgd_and_vote(void)
{
    float x[5] = {1.0f, -2.0f, 3.0f, -6.0f, 0.0f}, out[5];
    float sum[4] = {3.0f, -1.0f, 0.0f, NAN};
    float m[3] = {9, 9, 9}, g[3] = {1.0f, -1.0f, 2.0f};
    uint8_t buf[128];
    size_t len;
    CHECK_OK(dr_efsignsgd_encode(x, 5, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_efsignsgd_decode(buf, len, out, 5));
    CHECK(out[0] == 2.4f && out[1] == -2.4f && out[3] == -2.4f && out[4] == 2.4f);
    CHECK_OK(dr_sign_vote(sum, 4));
    CHECK(sum[0] == 1.0f && sum[1] == -1.0f && sum[2] == 1.0f && isnan(sum[3]));
    {
        /* Every length up to 19 (the vector loop and its tail): -0.0 votes +1 (it is
         * >= 0), infinities vote their sign, NaN keeps its bits. */
        const float pattern[6] = {-0.0f, 2.0f, -INFINITY, INFINITY, -3.5f, NAN};
        float votes[19];
        size_t len_votes, i;
        for (len_votes = 0; len_votes <= 19; len_votes++) {
            for (i = 0; i < len_votes; i++)
                votes[i] = pattern[(i + len_votes) % 6];
            CHECK_OK(dr_sign_vote(votes, len_votes));
            for (i = 0; i < len_votes; i++) {
                const float was = pattern[(i + len_votes) % 6];
                if (isnan(was))
                    CHECK(memcmp(&votes[i], &was, 4) == 0);
                else
                    CHECK(votes[i] == (was >= 0.0f ? 1.0f : -1.0f));
            }
        }
    }
    CHECK_OK(dr_signum_momentum(m, g, 3, 0.9f, 1));
    CHECK(m[0] == 1.0f && m[1] == -1.0f && m[2] == 2.0f);
    g[0] = -9.0f;
    CHECK_OK(dr_signum_momentum(m, g, 3, 0.5f, 0));
    CHECK(m[0] == -4.0f && m[1] == -1.0f && m[2] == 2.0f);
    {
        /* Out of place: the same floats, the old momentum left as it was. */
        float m_new[3];
        CHECK_OK(dr_signum_momentum_into(m_new, m, g, 3, 0.5f));
        CHECK(m_new[0] == -6.5f && m_new[1] == -1.0f && m_new[2] == 2.0f && m[0] == -4.0f);
        CHECK_STATUS(dr_signum_momentum_into(m_new, m, g, 3, -0.5f), DR_E_ARG);
        CHECK_STATUS(dr_signum_momentum_into(NULL, m, g, 3, 0.5f), DR_E_ARG);
    }
    {
        /* The sign frames refuse Inf and NaN, wherever they sit (vector body or tail). */
        float v[37];
        size_t i, at;
        for (at = 0; at < 37; at += 12) {
            for (i = 0; i < 37; i++)
                v[i] = (float)i - 18.0f;
            v[at] = (at / 12) % 2 ? -INFINITY : NAN;
            CHECK_STATUS(dr_signsgd_encode(v, 37, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
            CHECK_STATUS(dr_signum_encode(v, 37, 0, buf, sizeof buf, &len), DR_E_NUMERIC);
        }
    }
}

/* ------------------------------------------------------------------ stochastic */

/* Mean of K decodings with keys 1..K, in double. */
static void mean_of_decodes(const float *x, size_t n, int K, double *mean, double *sq_err,
                            int (*encode)(const float *, size_t, uint64_t, uint8_t *, size_t, size_t *),
                            decode_fn decode, uint8_t *buf, size_t cap, float *out)
{
    int k;
    size_t i, len = 0;
    for (i = 0; i < n; i++)
        mean[i] = 0.0;
    *sq_err = 0.0;
    for (k = 1; k <= K; k++) {
        CHECK_OK(encode(x, n, (uint64_t)k * 0x9e37u, buf, cap, &len));
        CHECK_OK(decode(buf, len, out, n));
        for (i = 0; i < n; i++) {
            mean[i] += out[i];
            *sq_err += ((double)out[i] - x[i]) * ((double)out[i] - x[i]);
        }
    }
    for (i = 0; i < n; i++)
        mean[i] /= K;
    *sq_err /= K;
}

enum { QS_S = 4, QS_B = 64 };

static int qsgd_enc(const float *x, size_t n, uint64_t key, uint8_t *buf, size_t cap, size_t *w)
{
    return dr_qsgd_encode(x, n, QS_S, QS_B, key, 0, buf, cap, w);
}

static int tern_enc(const float *x, size_t n, uint64_t key, uint8_t *buf, size_t cap, size_t *w)
{
    return dr_terngrad_encode(x, n, key, 0, buf, cap, w);
}

static int nat_enc(const float *x, size_t n, uint64_t key, uint8_t *buf, size_t cap, size_t *w)
{
    return dr_natural_encode(x, n, key, 0, buf, cap, w);
}

/* |mean - x| within 6 standard errors (variance var_i per decode, K decodes), plus a
 * float-rounding allowance. Deterministic: the keys are fixed. */
static int within_6_sigma(const double *mean, const float *x, const double *var, size_t n, int K)
{
    size_t i;
    int ok = 1;
    for (i = 0; i < n; i++)
        ok &= fabs(mean[i] - x[i]) <= 6.0 * sqrt(var[i] / K) + 1e-6 * fabs(x[i]) + 1e-30;
    return ok;
}

static void test_qsgd_unbiased_and_variance_bound(void)
{
    enum { N = 256, K = 3000 };
    static float x[N], out[N];
    static double mean[N], var[N];
    static uint8_t buf[2048];
    double exact_err = 0.0, bound = 0.0, emp_err;
    size_t i, j;
    fill_gauss(x, N, 31, 1.0f);
    for (i = 0; i < QS_B; i++)
        x[i] *= 1e-3f; /* buckets of very different scales */
    /* Exact per-element variance and the QSGD bound, bucket by bucket. */
    for (j = 0; j < N / QS_B; j++) {
        double sq = 0.0, bucket_err = 0.0;
        float norm, step;
        for (i = j * QS_B; i < (j + 1) * QS_B; i++)
            sq += (double)x[i] * x[i];
        norm = (float)sqrt(sq);
        step = norm / QS_S;
        for (i = j * QS_B; i < (j + 1) * QS_B; i++) {
            double a = fabs(x[i]) * (double)QS_S / norm, p = a - floor(a);
            var[i] = (double)step * step * p * (1.0 - p);
            bucket_err += var[i];
        }
        CHECK(bucket_err <= fmin((double)QS_B / (QS_S * QS_S), sqrt((double)QS_B) / QS_S) * sq);
        exact_err += bucket_err;
        bound += fmin((double)QS_B / (QS_S * QS_S), sqrt((double)QS_B) / QS_S) * sq;
    }
    mean_of_decodes(x, N, K, mean, &emp_err, qsgd_enc, dr_qsgd_decode, buf, sizeof buf, out);
    CHECK(within_6_sigma(mean, x, var, N, K));
    /* The measured E||Q(g) - g||^2 matches the exact variance within 5% and obeys the bound. */
    CHECK(fabs(emp_err - exact_err) <= 0.05 * exact_err);
    CHECK(emp_err <= bound);
    /* Levels stay in [-s, s]: every decoded value is within one norm of zero. */
    CHECK(test_all_finite(out, N));
}

static void test_qsgd_exact_levels(void)
{
    /* Values on the level grid decode exactly, whatever the key. */
    float x[4] = {3.0f, 4.0f, 0.0f, 0.0f}, out[4];
    uint8_t buf[128];
    size_t len;
    CHECK_OK(dr_qsgd_encode(x, 4, 5, 4, 77, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_qsgd_decode(buf, len, out, 4));
    CHECK(out[0] == 3.0f && out[1] == 4.0f && out[2] == 0.0f);
    /* Same key, same bytes; another key, other bytes (on random data). */
    {
        enum { N = 500 };
        static float y[N];
        static uint8_t a[1024], b[1024];
        size_t la, lb;
        fill_gauss(y, N, 3, 1.0f);
        CHECK_OK(dr_qsgd_encode(y, N, 127, 128, 1, 0, a, sizeof a, &la));
        CHECK_OK(dr_qsgd_encode(y, N, 127, 128, 1, 0, b, sizeof b, &lb));
        CHECK(la == lb && memcmp(a, b, la) == 0);
        CHECK_OK(dr_qsgd_encode(y, N, 127, 128, 2, 0, b, sizeof b, &lb));
        CHECK(memcmp(a, b, la) != 0);
    }
}

static void test_terngrad_unbiased_within_clip(void)
{
    enum { N = 200, K = 3000 };
    static float x[N], clipped[N], out[N];
    static double mean[N], var[N];
    static uint8_t buf[512];
    double mu = 0.0, v = 0.0, err;
    float c, s = 0.0f;
    size_t i;
    fill_gauss(x, N, 17, 0.01f);
    x[3] = 0.2f; /* an outlier that the clip cuts */
    for (i = 0; i < N; i++)
        mu += x[i];
    mu /= N;
    for (i = 0; i < N; i++)
        v += (x[i] - mu) * (x[i] - mu);
    c = (float)(2.5 * sqrt(v / N));
    for (i = 0; i < N; i++) {
        clipped[i] = fmaxf(-c, fminf(c, x[i]));
        s = fmaxf(s, fabsf(clipped[i]));
    }
    for (i = 0; i < N; i++)
        var[i] = (double)fabsf(clipped[i]) * (s - fabsf(clipped[i]));
    mean_of_decodes(x, N, K, mean, &err, tern_enc, dr_terngrad_decode, buf, sizeof buf, out);
    CHECK(within_6_sigma(mean, clipped, var, N, K));
    CHECK(fabs(mean[3] - c) < 1e-6);
    for (i = 0; i < N; i++)
        CHECK(out[i] == 0.0f || out[i] == s || out[i] == -s);
    /* A constant tensor has sigma 0: everything clips to 0. */
    for (i = 0; i < N; i++)
        x[i] = 0.5f;
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &i));
    CHECK_OK(dr_terngrad_decode(buf, i, out, N));
    CHECK(out[0] == 0.0f && out[N - 1] == 0.0f);
}

static void test_natural_unbiased(void)
{
    enum { N = 64, K = 4000 };
    static float x[N], out[N];
    static double mean[N], var[N];
    static uint8_t buf[256];
    double err;
    size_t i;
    for (i = 0; i < N; i++) {
        x[i] = test_uniform(8, i) * ldexpf(1.0f, (int)(i % 40) - 30);
        if (i % 16 == 5)
            x[i] = (i % 2 ? 1.0f : -1.0f) * ldexpf(0.75f, -64 - (int)i); /* below 2^-63 */
    }
    x[10] = 2.5e-45f; /* a subnormal */
    x[11] = 0.5f;     /* an exact power: always exact */
    for (i = 0; i < N; i++) {
        double a = fabs(x[i]), lo, hi;
        if (a < ldexp(1.0, -63)) {
            lo = 0.0;
            hi = ldexp(1.0, -63);
        } else {
            int e;
            frexp(a, &e);
            lo = ldexp(1.0, e - 1);
            hi = 2 * lo;
        }
        var[i] = (a - lo) * (hi - a);
    }
    mean_of_decodes(x, N, K, mean, &err, nat_enc, dr_natural_decode, buf, sizeof buf, out);
    CHECK(within_6_sigma(mean, x, var, N, K));
    CHECK(mean[11] == 0.5);
    /* Decoded values are signed powers of two (or zero) with the input's sign. */
    for (i = 0; i < N; i++) {
        int e;
        CHECK(out[i] == 0.0f || frexpf(fabsf(out[i]), &e) == 0.5f);
        CHECK(out[i] == 0.0f || (out[i] < 0.0f) == (x[i] < 0.0f));
    }
    /* Saturation above 2^63. */
    x[0] = 1e30f;
    CHECK_OK(dr_natural_encode(x, 1, 1, 0, buf, sizeof buf, &i));
    CHECK_OK(dr_natural_decode(buf, i, out, 1));
    CHECK(out[0] == ldexpf(1.0f, 63));
}

/* --------------------------------------------------------------- deterministic */

static void test_eightbit(void)
{
    enum { N = 5000 };
    static float x[N], out[N];
    static uint8_t buf[N + 64];
    float table[128], scale = 0.0f;
    size_t len, i;
    int ok = 1;
    CHECK_OK(dr_eightbit_table(table));
    CHECK(table[0] == 0.0f && table[1] == 1e-6f && table[127] == 1.0f);
    for (i = 1; i < 128; i++)
        ok &= table[i] > table[i - 1];
    CHECK(ok);
    fill_gauss(x, N, 44, 3.0f);
    for (i = 0; i < N; i++)
        scale = fmaxf(scale, fabsf(x[i]));
    /* Magnitudes over every decade of the table, exact entries and midpoints among them. */
    for (i = 0; i < N; i += 3)
        x[i] *= powf(10.0f, -(float)(i % 8));
    for (i = 0; i < 127; i++) {
        x[N - 1 - 2 * i] = table[i] * scale;
        x[N - 2 - 2 * i] = -0.5f * (table[i] + table[i + 1]) * scale;
    }
    x[1] = -scale; /* the scale is still max|x| */
    CHECK_OK(dr_eightbit_encode(x, N, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_eightbit_decode(buf, len, out, N));
    for (i = 0; i < N; i++) {
        /* The code is the nearest entry (ties to the lower), by exhaustive search. */
        float a = fabsf(x[i]) / scale, best_d = INFINITY;
        unsigned c, best = 0;
        for (c = 0; c < 128; c++)
            if (fabsf(a - table[c]) < best_d) {
                best_d = fabsf(a - table[c]);
                best = c;
            }
        ok &= (buf[56 + i] & 0x7fu) == best;
        ok &= out[i] == (x[i] < 0.0f && best ? -1.0f : 1.0f) * table[best] * scale;
    }
    CHECK(ok);
}

static void test_inceptionn_error_bound(void)
{
    enum { N = 4000 };
    static float x[N], out[N];
    static uint8_t buf[5 * N + 128];
    uint32_t bits[5] = {1, 4, 10, 16, 24};
    size_t len, i, t;
    for (i = 0; i < N; i++)
        x[i] = test_uniform(9, i) * ldexpf(1.0f, (int)(i % 30) - 24);
    x[0] = 1.0f;
    x[1] = -0.99999994f;
    x[2] = 0.0f;
    x[3] = 3e-39f;
    for (t = 0; t < 5; t++) {
        double eps = ldexp(1.0, -(int)bits[t]);
        int ok = 1;
        size_t want;
        CHECK_OK(dr_inceptionn_size(x, N, bits[t], &want));
        CHECK_OK(dr_inceptionn_encode(x, N, bits[t], 0, buf, sizeof buf, &len));
        CHECK(len == want);
        CHECK_OK(dr_inceptionn_decode(buf, len, out, N));
        for (i = 0; i < N; i++) {
            ok &= fabs((double)out[i] - x[i]) <= eps;
            if (fabsf(x[i]) >= 1.0f)
                ok &= out[i] == x[i];
            if (fabs(x[i]) < eps)
                ok &= out[i] == 0.0f;
        }
        CHECK(ok);
    }
    /* Default bound: well under 4 bytes per element on gradient-like data. */
    fill_gauss(x, N, 9, 0.01f);
    CHECK_OK(dr_inceptionn_encode(x, N, DR_INCEPTIONN_DEFAULT_BITS, 0, buf, sizeof buf, &len));
    CHECK(len < N + N / 4 + 64);
}

static void test_sketch(void)
{
    enum { N = 20000, Q = 10, BIG = 100000 };
    static float x[BIG], out[BIG];
    static uint8_t buf[BIG + 1024];
    static double work[1 << 17];
    double sx = 0.0, so = 0.0;
    size_t len, i, j;
    int ok = 1;
    CHECK(dr_sketch_workspace_size(BIG, 127) <= sizeof work);
    /* A permutation of 0..N-1, small enough for exact quantiles: N/Q values per bin. */
    for (i = 0; i < N; i++)
        x[i] = (float)((i * 7919u) % N);
    CHECK_OK(dr_sketch_encode(x, N, Q, 1, 0, work, buf, sizeof buf, &len));
    CHECK_OK(dr_sketch_decode(buf, len, out, N));
    for (i = 0; i < N; i++) {
        j = (size_t)x[i] / (N / Q);
        ok &= out[i] == (float)(j * (N / Q)) + (N / Q - 1) / 2.0f;
    }
    CHECK(ok);
    /* Heavy-tailed data past the sample size (sampled quantiles): decoding is monotone,
     * keeps the sum, and the sampled bins hold about BIG/127 entries each. */
    fill_gauss(x, BIG, 12, 1.0f);
    for (i = 0; i < BIG; i++)
        x[i] = x[i] * x[i] * x[i];
    CHECK_OK(dr_sketch_encode(x, BIG, 127, 77, 0, work, buf, sizeof buf, &len));
    CHECK(len == dr_sketch_size(BIG, 127));
    CHECK_OK(dr_sketch_decode(buf, len, out, BIG));
    {
        size_t per_bin[127], lo = BIG, hi = 0;
        memset(per_bin, 0, sizeof per_bin);
        for (i = 0; i < BIG; i++)
            per_bin[buf[52 + 4 * 127 + i]]++;
        for (j = 0; j < 127; j++) {
            lo = per_bin[j] < lo ? per_bin[j] : lo;
            hi = per_bin[j] > hi ? per_bin[j] : hi;
        }
        CHECK(lo > BIG / 127 / 2 && hi < 2 * BIG / 127);
    }
    for (i = 0; i < BIG; i++) {
        sx += x[i];
        so += out[i];
        for (j = i + 1; j < i + 4 && j < BIG; j++)
            ok &= (x[i] <= x[j]) ? out[i] <= out[j] : out[i] >= out[j];
    }
    CHECK(ok);
    CHECK(fabs(sx - so) < 1e-3 * BIG);
    CHECK(test_all_finite(out, BIG));
}

/* ------------------------------------------------------- decoders refuse contents */

/* Flip bits inside a frame's section, reseal, and expect DR_E_CORRUPT. */
static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The sketch restated on a tensor of two and a bit of the encoder's fill blocks (it finds
 * and sums the bins block by block), small enough for exact quantiles: every bin index
 * is the number of edges <= the element's key, and every mean is four partial sums in
 * double (element i in partial i % 4, in element order) added (p0 + p1) + (p2 + p3). */
static void test_sketch_matches_its_definition(void)
{
    enum { N = 65531, Q = 127 };
    static float x[N], out[N];
    static uint32_t keys[N];
    static uint8_t buf[N + 1024];
    static double work[1 << 17];
    size_t len, i;
    uint32_t edges[Q - 1], j;
    double sums[4][Q], counts[Q];
    int ok = 1;
    CHECK(dr_sketch_workspace_size(N, Q) <= sizeof work);
    fill_gauss(x, N, 31, 1.0f);
    for (i = 0; i < N; i++)
        keys[i] = sketch_key(x[i]);
    qsort(keys, N, sizeof *keys, compare_u32);
    for (j = 1; j < Q; j++)
        edges[j - 1] = keys[(size_t)j * N / Q];
    memset(sums, 0, sizeof sums);
    memset(counts, 0, sizeof counts);
    CHECK_OK(dr_sketch_encode(x, N, Q, 5, 0, work, buf, sizeof buf, &len));
    for (i = 0; i < N; i++) {
        uint32_t key = sketch_key(x[i]), bin = 0;
        while (bin < Q - 1 && edges[bin] <= key)
            bin++;
        ok &= buf[52 + 4 * Q + i] == bin;
        sums[i % 4][bin] += x[i];
        counts[bin] += 1.0;
    }
    CHECK(ok);
    for (j = 0; j < Q; j++) {
        float mean = (float)(((sums[0][j] + sums[1][j]) + (sums[2][j] + sums[3][j])) / counts[j]), got;
        memcpy(&got, buf + 52 + 4 * j, 4);
        ok &= memcmp(&got, &mean, 4) == 0;
    }
    CHECK(ok);
    /* One bin: 2^54 opens partial 0 and -2^54 closes it, and the ones between them there
     * are lost (2^54's ulp is 4), so the mean says which elements each partial got. */
    for (i = 0; i < N; i++)
        x[i] = 1.0f;
    x[0] = 0x1p54f;
    x[N - 1 - (N - 1) % 4] = -0x1p54f;
    CHECK_OK(dr_sketch_encode(x, N, 1, 5, 0, work, buf, sizeof buf, &len));
    CHECK_OK(dr_sketch_decode(buf, len, out, N));
    CHECK(out[0] == (float)((double)(N - ((N - 1) / 4 + 1)) / N)); /* the ones of partials 1-3 */
}

static void test_content_checks(void)
{
    enum { N = 37 };
    float x[N], out[N];
    uint8_t buf[1024];
    double work[2048];
    size_t len, off, i;
    for (i = 0; i < N; i++)
        x[i] = test_uniform(13, i) * 0.8f;
    x[4] = 0.0f;

    /* qsgd: a level beyond s; a negative norm. */
    CHECK_OK(dr_qsgd_encode(x, N, 5, 8, 1, 0, buf, sizeof buf, &len));
    off = 52 + 4 * 5; /* levels section */
    buf[off] = 6;
    reseal(buf, len);
    CHECK_STATUS(dr_qsgd_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_qsgd_encode(x, N, 5, 8, 1, 0, buf, sizeof buf, &len));
    buf[52 + 3] ^= 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_qsgd_decode(buf, len, out, N), DR_E_CORRUPT);
    /* qsgd: a bucket size that does not match the section lengths. */
    CHECK_OK(dr_qsgd_encode(x, N, 5, 8, 1, 0, buf, sizeof buf, &len));
    buf[16] = 3;
    reseal(buf, len);
    CHECK_STATUS(dr_qsgd_decode(buf, len, out, N), DR_E_FRAME_FIELD);

    /* terngrad: the unused code 3; padding bits; NaN scale. */
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len));
    buf[56] |= 0x03;
    reseal(buf, len);
    CHECK_STATUS(dr_terngrad_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len));
    buf[56 + 9] |= 0x40; /* element 39 of 37 */
    reseal(buf, len);
    CHECK_STATUS(dr_terngrad_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len));
    memset(buf + 52, 0xff, 4);
    reseal(buf, len);
    CHECK_STATUS(dr_terngrad_decode(buf, len, out, N), DR_E_CORRUPT);

    /* signsgd: padding bits. onebit: a positive mean for the negatives. */
    CHECK_OK(dr_signsgd_encode(x, N, 0, buf, sizeof buf, &len));
    buf[48 + 4] |= 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_signsgd_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_onebit_encode(x, N, 0, buf, sizeof buf, &len));
    buf[52 + 3] ^= 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_onebit_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_efsignsgd_encode(x, N, 0, buf, sizeof buf, &len));
    buf[52 + 3] ^= 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_efsignsgd_decode(buf, len, out, N), DR_E_CORRUPT);

    /* natural and eightbit: the signed zero 0x80. */
    CHECK_OK(dr_natural_encode(x, N, 1, 0, buf, sizeof buf, &len));
    CHECK(buf[48 + 4] == 0x00);
    buf[48 + 4] = 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_natural_decode(buf, len, out, N), DR_E_CORRUPT);
    CHECK_OK(dr_eightbit_encode(x, N, 0, buf, sizeof buf, &len));
    CHECK(buf[56 + 4] == 0x00);
    buf[56 + 4] = 0x80;
    reseal(buf, len);
    CHECK_STATUS(dr_eightbit_decode(buf, len, out, N), DR_E_CORRUPT);

    /* sketch: a bin index past Q. */
    CHECK_OK(dr_sketch_encode(x, N, 5, 1, 0, work, buf, sizeof buf, &len));
    buf[52 + 20 + 1] = 5;
    reseal(buf, len);
    CHECK_STATUS(dr_sketch_decode(buf, len, out, N), DR_E_CORRUPT);

    /* inceptionn: a tag that disagrees with the section's length; a zero magnitude. One
     * block: its tags at 48, then its float32s, uint16s and bytes. */
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, sizeof buf, &len));
    off = 48;
    buf[off + 1] ^= 0x03; /* element 4 was dropped (tag 0): now tag 3 */
    reseal(buf, len);
    CHECK_STATUS(dr_inceptionn_decode(buf, len, out, N), DR_E_FRAME_FIELD);
    CHECK_OK(dr_inceptionn_encode(x, N, 10, 0, buf, sizeof buf, &len));
    {
        size_t n32 = 0, n16 = 0;
        for (i = 0; i < N; i++) {
            unsigned tag = (buf[off + i / 4] >> (2 * (i % 4))) & 3u;
            n32 += tag == 3;
            n16 += tag == 2;
        }
        CHECK(n16 > 0);
        memset(buf + off + (N + 3) / 4 + 4 * n32, 0, 2); /* first 16-bit value */
        reseal(buf, len);
        CHECK_STATUS(dr_inceptionn_decode(buf, len, out, N), DR_E_CORRUPT);
    }
}

/* decode refuses buf (n elements) as DR_E_CORRUPT and leaves out as it was (quant.h:
 * refuses before writing anything; 3LC's decoder wrote the groups before a bad one). */
static void check_refused_untouched(decode_fn decode, const uint8_t *buf, size_t len, size_t n)
{
    float *out = malloc(n * sizeof *out);
    size_t i;
    int untouched = 1;
    for (i = 0; i < n; i++)
        out[i] = 12345.0f;
    CHECK_STATUS(decode(buf, len, out, n), DR_E_CORRUPT);
    for (i = 0; i < n; i++)
        untouched &= out[i] == 12345.0f;
    CHECK(untouched);
    free(out);
}

/* Zeroes the 4-byte scale at the start of section `which` of the frame in buf and reseals
 * it: the codes then send something under a scale of 0, which no encoder writes (a zero
 * scale or norm comes from zeros only). */
static void zero_scale(uint8_t *buf, size_t len, unsigned which, size_t at)
{
    dr_frame f;
    CHECK_OK(dr_frame_parse(buf, len, &f));
    memset(buf + f.section_off[which] + at, 0, 4);
    reseal(buf, len);
}

static void test_zero_scale_with_codes_is_refused(void)
{
    enum { N = 300 };
    float x[N];
    uint8_t buf[4096];
    size_t len;
    fill_gauss(x, N, 3, 1.0f);
    CHECK_OK(dr_qsgd_encode(x, N, 127, 128, 1, 0, buf, sizeof buf, &len));
    zero_scale(buf, len, 0, 4); /* bucket 1's norm */
    check_refused_untouched(dr_qsgd_decode, buf, len, N);
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len));
    zero_scale(buf, len, 0, 0);
    check_refused_untouched(dr_terngrad_decode, buf, len, N);
    CHECK_OK(dr_eightbit_encode(x, N, 0, buf, sizeof buf, &len));
    zero_scale(buf, len, 0, 0);
    check_refused_untouched(dr_eightbit_decode, buf, len, N);
    CHECK_OK(dr_threelc_encode(x, N, 1.0f, 0, buf, sizeof buf, &len));
    zero_scale(buf, len, 0, 0);
    check_refused_untouched(dr_threelc_decode, buf, len, N);
    /* Zeros themselves still round-trip: the scale is 0 and so is every code. */
    memset(x, 0, sizeof x);
    CHECK_OK(dr_qsgd_encode(x, N, 127, 128, 1, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_qsgd_decode(buf, len, x, N));
    CHECK_OK(dr_terngrad_encode(x, N, 1, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_terngrad_decode(buf, len, x, N));
    CHECK_OK(dr_eightbit_encode(x, N, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_eightbit_decode(buf, len, x, N));
    CHECK_OK(dr_threelc_encode(x, N, 1.0f, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_threelc_decode(buf, len, x, N));
}

static void test_threelc(void)
{
    /* n = 23: four full groups and a partial one of three. */
    float x[23] = {1.0f, -1.0f, 0.49f, -0.5f, 0.5f};
    float out[23];
    uint8_t buf[128];
    size_t len, i;
    const size_t body = 44 + 2 * 4; /* header with two sections */
    CHECK_OK(dr_threelc_encode(x, 23, 1.0f, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_threelc_decode(buf, len, out, 23));
    /* M = 1: 1 -> 1, -1 -> -1, 0.49 -> 0, -0.5 -> -1, 0.5 -> 1, zeros stay 0. */
    CHECK(out[0] == 1.0f && out[1] == -1.0f && out[2] == 0.0f && out[3] == -1.0f && out[4] == 1.0f);
    for (i = 5; i < 23; i++)
        CHECK(out[i] == 0.0f);
    /* One group byte, then four all-zero groups as one run byte. */
    CHECK(len == body + 4 + 2 + 4);
    CHECK(buf[body + 4] == (2 * 1 + 0 * 3 + 1 * 9 + 0 * 27 + 2 * 81) && buf[body + 5] == 243 + 2);
    /* The sparsity multiplier rounds more entries to 0: M = 1.5, 0.74 < 0.75. */
    x[2] = 0.74f;
    CHECK_OK(dr_threelc_encode(x, 23, 1.5f, 0, buf, sizeof buf, &len));
    CHECK_OK(dr_threelc_decode(buf, len, out, 23));
    CHECK(out[0] == 1.5f && out[2] == 0.0f && out[3] == 0.0f);
    CHECK_STATUS(dr_threelc_encode(x, 23, 2.0f, 0, buf, sizeof buf, &len), DR_E_ARG);
    CHECK_STATUS(dr_threelc_encode(x, 23, 0.9f, 0, buf, sizeof buf, &len), DR_E_ARG);
    /* A long zero stretch: 2000 zeros are 400 groups, 29 run bytes. */
    {
        float *z = calloc(2001, sizeof *z), *back = malloc(2001 * sizeof *back);
        uint8_t *big = malloc(dr_threelc_bound(2001));
        z[2000] = -3.0f;
        CHECK_OK(dr_threelc_encode(z, 2001, 1.0f, 0, big, dr_threelc_bound(2001), &len));
        CHECK(len == body + 4 + (400 / 14 + 1) + 1 + 4);
        CHECK_OK(dr_threelc_decode(big, len, back, 2001));
        CHECK(back[2000] == -3.0f && back[0] == 0.0f && back[1999] == 0.0f);
        free(z);
        free(back);
        free(big);
    }
    /* Damage the decoder must refuse: a run past the end, a non-zero trit past n, a
     * stream one group short, a negative M. */
    CHECK_OK(dr_threelc_encode(x, 23, 1.0f, 0, buf, sizeof buf, &len));
    buf[body + 5] = 255; /* a run of 14 where 4 groups remain */
    reseal(buf, len);
    check_refused_untouched(dr_threelc_decode, buf, len, 23);
    {
        float y[3] = {1.0f, 1.0f, 1.0f};
        CHECK_OK(dr_threelc_encode(y, 3, 1.0f, 0, buf, sizeof buf, &len));
        buf[body + 4] = 2 + 2 * 3 + 2 * 9 + 2 * 27; /* trit 3 (past n = 3) is +1 */
        reseal(buf, len);
        check_refused_untouched(dr_threelc_decode, buf, len, 3);
        float negative = -1.0f;
        CHECK_OK(dr_threelc_encode(y, 3, 1.0f, 0, buf, sizeof buf, &len));
        memcpy(buf + body, &negative, 4);
        reseal(buf, len);
        CHECK_STATUS(dr_threelc_decode(buf, len, out, 3), DR_E_CORRUPT);
    }
    {
        /* A sealed frame of n = 10 (two groups) whose stream holds one group byte. */
        dr_frame f;
        float one = 1.0f;
        uint32_t bits;
        memcpy(&bits, &one, 4);
        memset(&f, 0, sizeof f);
        f.kind = DR_KIND_THREELC;
        f.nsections = 2;
        f.numel = f.count = 10;
        f.params[0] = bits;
        f.section_len[0] = 4;
        f.section_len[1] = 1;
        CHECK_OK(dr_frame_layout(&f, &len));
        memset(buf, 0, sizeof buf);
        memcpy(buf + f.section_off[0], &one, 4);
        CHECK_OK(dr_frame_seal(&f, buf, sizeof buf, &len));
        check_refused_untouched(dr_threelc_decode, buf, len, 10);
    }
    CHECK_OK(dr_threelc_encode(x, 23, 1.0f, 0, buf, sizeof buf, &len));
    check_refuses_damage(buf, len, dr_threelc_decode, 23);
}

int main(void)
{
    test_sign_packing_matches_reference();
    test_frame_sizes();
    test_all_round_trip_and_damage(37);
    test_all_round_trip_and_damage(64);
    test_all_round_trip_and_damage(1);
    test_zero_tensor();
    test_non_finite_input_refused();
    test_onebit_mask_direction();
    test_efsignsgd_and_vote();
    test_qsgd_unbiased_and_variance_bound();
    test_qsgd_exact_levels();
    test_terngrad_unbiased_within_clip();
    test_natural_unbiased();
    test_eightbit();
    test_inceptionn_error_bound();
    test_sketch();
    test_sketch_matches_its_definition();
    test_content_checks();
    test_threelc();
    test_zero_scale_with_codes_is_refused();
    return check_summary("test_quant");
}
