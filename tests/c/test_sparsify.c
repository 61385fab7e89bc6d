/* C-level tests of the adaptive sparsifiers: dgc's selection size stays in
 * [0.7k, 1.3k] and is a magnitude threshold set, its exact fallback, and the adaq frame
 * (selection per sign, means, empty frames, damage and content refusal). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static float test_gauss(uint64_t key, uint64_t i)
{
    double u1 = (dr_rng_u64(key, 2 * i) >> 11) * (1.0 / 9007199254740992.0);
    double u2 = (dr_rng_u64(key, 2 * i + 1) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
}

/* idx[0..c) ascending, and exactly the entries at or above some magnitude: the
 * smallest selected |x| is at least the largest unselected one. */
static int is_threshold_set(const float *x, size_t n, const uint32_t *idx, size_t c)
{
    size_t i, j = 0;
    float least_in = INFINITY, most_out = 0.0f;
    for (i = 0; i < n; i++) {
        if (j < c && idx[j] == i) {
            least_in = fminf(least_in, fabsf(x[i]));
            j++;
        } else {
            most_out = fmaxf(most_out, fabsf(x[i]));
        }
    }
    return j == c && least_in >= most_out;
}

static void test_dgc_band_on_gaussian(void)
{
    const size_t n = 300000;
    const double ratios[5] = {0.0001, 0.001, 0.01, 0.1, 0.3};
    float *x = malloc(n * sizeof *x);
    uint32_t *idx = malloc(n * sizeof *idx);
    void *work = malloc(dr_dgc_workspace_size(n));
    size_t i, t;
    for (i = 0; i < n; i++)
        x[i] = 0.01f * test_gauss(1, i);
    for (t = 0; t < 5; t++) {
        size_t k = (size_t)(n * ratios[t]), c = 0, a;
        uint64_t key;
        for (key = 1; key <= 3; key++) {
            CHECK_OK(dr_dgc_select(x, n, k, key, idx, dr_dgc_max_count(k), &c, work));
            CHECK(c >= k - (3 * k) / 10 && c <= k + (3 * k) / 10);
            CHECK(is_threshold_set(x, n, idx, c));
        }
        /* Same key: same selection. */
        CHECK_OK(dr_dgc_select(x, n, k, 7, idx, n, &c, work));
        CHECK_OK(dr_dgc_select(x, n, k, 7, idx + k + k, n - 2 * k, &a, work));
        CHECK(a == c && memcmp(idx, idx + k + k, c * sizeof *idx) == 0);
    }
    CHECK(dr_dgc_max_count(1000) == 1300);
    free(x);
    free(idx);
    free(work);
}

static void test_dgc_fallback_and_edges(void)
{
    const size_t n = 100000;
    float *x = calloc(n, sizeof *x);
    uint32_t idx[200], big[100];
    void *work = malloc(dr_dgc_workspace_size(n));
    size_t i, c = 99;
    int ok = 1;
    /* 150 equal nonzero values among zeros: no threshold gives 100 +- 30, so the exact
     * top-k answers (the lowest indices among the ties). */
    for (i = 0; i < 150; i++)
        x[i * 613] = (i % 2 ? 1.0f : -1.0f);
    CHECK_OK(dr_dgc_select(x, n, 100, 3, idx, 130, &c, work));
    CHECK(c == 100);
    for (i = 0; i < c; i++)
        ok &= idx[i] == i * 613;
    CHECK(ok);
    /* The same with spread magnitudes: the search brackets and lands in the band. */
    for (i = 0; i < 150; i++)
        x[i * 613] = (float)(i + 1);
    CHECK_OK(dr_dgc_select(x, n, 100, 3, idx, 130, &c, work));
    CHECK(c >= 70 && c <= 130 && is_threshold_set(x, n, idx, c));
    CHECK_OK(dr_dgc_select(x, n, 0, 3, idx, 0, &c, work));
    CHECK(c == 0);
    CHECK_STATUS(dr_dgc_select(x, n, n + 1, 3, idx, 0, &c, work), DR_E_ARG);
    CHECK_STATUS(dr_dgc_select(x, n, 100, 3, idx, 10, &c, work), DR_E_DST_TOO_SMALL);
    /* k = n takes everything. */
    for (i = 0; i < 100; i++)
        x[i] = (float)i - 50.0f;
    CHECK_OK(dr_dgc_select(x, 100, 100, 1, big, 100, &c, work));
    CHECK(c >= 70 && c <= 100 && is_threshold_set(x, 100, big, c));
    CHECK_OK(dr_dgc_select(x, 1, 1, 1, big, 1, &c, work));
    CHECK(c == 1 && big[0] == 0);
    free(x);
    free(work);
}

/* dr_dgc_sparsify against dr_dgc_select plus a gather: the same status, count, indices
 * and values x[idx]. Returns the status. */
static int sparsify_matches_select(const float *x, size_t n, size_t k, uint64_t key, size_t cap)
{
    uint32_t *ia = malloc((cap + 1) * sizeof *ia), *ib = malloc((cap + 1) * sizeof *ib);
    float *vb = malloc((cap + 1) * sizeof *vb);
    void *wa = malloc(dr_dgc_workspace_size(n)), *wb = malloc(dr_dgc_sparsify_workspace_size(n, k));
    size_t ca = 0, cb = 0, j;
    int sa = dr_dgc_select(x, n, k, key, ia, cap, &ca, wa);
    int sb = dr_dgc_sparsify(x, n, k, key, ib, vb, cap, &cb, wb), same = 1;
    CHECK(sa == sb && ca == cb);
    if (sa == DR_OK && sb == DR_OK && ca == cb) {
        for (j = 0; j < cb; j++)
            same &= ia[j] == ib[j] && memcmp(&vb[j], &x[ib[j]], sizeof *vb) == 0;
        CHECK(same);
    }
    free(ia);
    free(ib);
    free(vb);
    free(wa);
    free(wb);
    return sb;
}

/* dr_dgc_sparsify makes dr_dgc_select's selection on every path: the candidates (Gaussian
 * data, ratios up to 0.3), mostly zeros (a cut of 0), their overflow (every entry at the
 * cut), a search that goes
 * below the cut (tiny samples of small tensors), the exact fallback (ties), a short
 * output; and refuses Inf/NaN on each. */
static void test_dgc_sparsify(void)
{
    const size_t n = 300000;
    const double ratios[5] = {0.0001, 0.001, 0.01, 0.1, 0.3};
    const size_t small[4] = {1, 37, 150, 1000};
    float *x = malloc(n * sizeof *x);
    size_t i, t, s;
    uint64_t key;
    for (i = 0; i < n; i++)
        x[i] = 0.01f * test_gauss(2, i);
    for (t = 0; t < 5; t++)
        for (key = 1; key <= 3; key++) {
            size_t k = (size_t)(n * ratios[t]);
            CHECK_OK(sparsify_matches_select(x, n, k, key, dr_dgc_max_count(k)));
        }
    for (s = 0; s < 4; s++)
        for (t = 1; t <= small[s]; t += 1 + small[s] / 7)
            for (key = 1; key <= 20; key++)
                CHECK_OK(sparsify_matches_select(x, small[s], t, key, dr_dgc_max_count(t)));
    CHECK_STATUS(sparsify_matches_select(x, n, 1000, 3, 10), DR_E_DST_TOO_SMALL);
    CHECK_OK(sparsify_matches_select(x, n, 0, 3, 0));
    x[n / 2] = INFINITY;
    {
        uint32_t idx[4000];
        float val[4000];
        size_t c;
        void *work = malloc(dr_dgc_sparsify_workspace_size(n, 3000));
        CHECK_STATUS(dr_dgc_sparsify(x, n, 3000, 3, idx, val, 4000, &c, work), DR_E_NUMERIC);
        x[n / 2] = NAN;
        CHECK_STATUS(dr_dgc_sparsify(x, n, 3000, 3, idx, val, 4000, &c, work), DR_E_NUMERIC);
        CHECK_STATUS(dr_dgc_sparsify(x, n, 0, 3, idx, val, 0, &c, work), DR_E_NUMERIC);
        /* Mostly zeros: the cut is 0, so the candidates are the nonzero entries; 150 of
         * them distinct (the search finds the band), or equal (no threshold does: the
         * exact top-k), or 50 (fewer than k: they and the first zeros). */
        memset(x, 0, n * sizeof *x);
        for (i = 0; i < 150; i++)
            x[i * 613] = (float)(i + 1);
        CHECK_OK(sparsify_matches_select(x, n, 100, 3, 130));
        for (i = 0; i < 150; i++)
            x[i * 613] = (i % 2 ? 1.0f : -1.0f);
        CHECK_OK(sparsify_matches_select(x, n, 100, 3, 130));
        for (i = 50; i < 150; i++)
            x[i * 613] = (i % 2 ? 0.0f : -0.0f);
        CHECK_OK(sparsify_matches_select(x, n, 100, 3, 130));
        x[n - 1] = NAN;
        CHECK_STATUS(dr_dgc_sparsify(x, n, 100, 3, idx, val, 130, &c, work), DR_E_NUMERIC);
        /* Every entry at the cut (all ones, 101 twos: the band's count): the candidates
         * overflow their room, the search reads x, and the NaN is found by a check of x. */
        for (i = 0; i < n; i++)
            x[i] = i % 2999 == 7 ? 2.0f : 1.0f;
        CHECK_OK(sparsify_matches_select(x, n, 100, 3, 130));
        x[n - 1] = NAN;
        CHECK_STATUS(dr_dgc_sparsify(x, n, 100, 3, idx, val, 130, &c, work), DR_E_NUMERIC);
        CHECK_STATUS(dr_dgc_sparsify(x, n, 100, 3, NULL, val, 130, &c, work), DR_E_ARG);
        CHECK_STATUS(dr_dgc_sparsify(x, n, 100, 3, idx, NULL, 130, &c, work), DR_E_ARG);
        CHECK(dr_dgc_sparsify_workspace_size(10, 11) == 0);
        free(work);
    }
    free(x);
}

/* The size of adaq's frame for n entries of which `sent` are selected: the smaller
 * layout's, the lists' on a tie (sparsify.h). */
static size_t adaq_frame_size(size_t n, size_t sent)
{
    size_t lists = 68 + 4 * sent, map = 64 + (n + 3) / 4;
    return map < lists ? map : lists;
}

/* Decode an adaq frame and check it against x: each sign's selection is a threshold
 * set of that sign, its size is in the band around ceil(count*ratio), the value sent
 * is the mean of the selected entries, and the frame is the smaller layout. */
static void check_adaq(const float *x, size_t n, float ratio, const uint8_t *buf, size_t len)
{
    float *out = malloc((n + 1) * sizeof *out);
    size_t i, npos = 0, nneg = 0, sp = 0, sn = 0;
    double sum_p[16] = {0}, sum_n[16] = {0}; /* the header's 16 partial sums, by index */
    unsigned h, l;
    float least_p = INFINITY, most_p_out = 0.0f, least_n = INFINITY, most_n_out = 0.0f;
    float mean_p = 0.0f, mean_n = 0.0f;
    int ok = 1;
    CHECK_OK(dr_adaq_decode(buf, len, out, n));
    for (i = 0; i < n; i++) {
        npos += x[i] > 0.0f;
        nneg += x[i] < 0.0f;
        if (out[i] > 0.0f) {
            ok &= x[i] > 0.0f;
            sp++;
            sum_p[i % 16] += x[i];
            least_p = fminf(least_p, x[i]);
            mean_p = out[i];
        } else if (out[i] < 0.0f) {
            ok &= x[i] < 0.0f;
            sn++;
            sum_n[i % 16] += x[i];
            least_n = fminf(least_n, -x[i]);
            mean_n = out[i];
        } else if (x[i] > 0.0f) {
            most_p_out = fmaxf(most_p_out, x[i]);
        } else if (x[i] < 0.0f) {
            most_n_out = fmaxf(most_n_out, -x[i]);
        }
    }
    CHECK(ok);
    for (h = 8; h > 0; h /= 2)
        for (l = 0; l < h; l++) {
            sum_p[l] += sum_p[l + h];
            sum_n[l] += sum_n[l + h];
        }
    CHECK(sp == 0 || least_p >= most_p_out);
    CHECK(sn == 0 || least_n >= most_n_out);
    if (npos > 0) {
        size_t t = (size_t)ceil(npos * (double)ratio);
        CHECK(sp >= t - (3 * t) / 10 && sp <= t + (3 * t) / 10);
        CHECK(mean_p == (float)(sum_p[0] / sp));
    }
    if (nneg > 0) {
        size_t t = (size_t)ceil(nneg * (double)ratio);
        CHECK(sn >= t - (3 * t) / 10 && sn <= t + (3 * t) / 10);
        CHECK(mean_n == (float)(sum_n[0] / sn));
    }
    CHECK(len == adaq_frame_size(n, sp + sn));
    free(out);
}

static void test_adaq(void)
{
    const size_t n = 200000;
    const float ratios[4] = {0.001f, 0.01f, 0.04f, 0.3f}; /* lists, and at 0.3 the map */
    float *x = malloc(n * sizeof *x);
    size_t cap = dr_adaq_bound(n), len = 0, i, t;
    uint8_t *buf = malloc(cap);
    void *work = malloc(dr_adaq_workspace_size(n));
    for (i = 0; i < n; i++)
        x[i] = test_gauss(4, i) + 0.3f; /* more positives than negatives */
    for (t = 0; t < 4; t++) {
        CHECK_OK(dr_adaq_encode(x, n, ratios[t], 11, DR_DTYPE_BFLOAT16, work, buf, cap, &len));
        CHECK(buf[5] == DR_KIND_ADAQ && buf[8] == DR_DTYPE_BFLOAT16);
        CHECK(buf[12] == (t == 3 ? DR_ADAQ_SIGN_MAP : DR_ADAQ_LISTS)); /* params[0] */
        check_adaq(x, n, ratios[t], buf, len);
    }
    /* Too small a buffer: refused, with the size needed. */
    {
        size_t need = 0;
        CHECK_STATUS(dr_adaq_encode(x, n, 0.01f, 11, 0, work, buf, 100, &need), DR_E_DST_TOO_SMALL);
        CHECK_OK(dr_adaq_encode(x, n, 0.01f, 11, 0, work, buf, need, &len));
        CHECK(len == need);
    }
    /* Few distinct magnitudes: the sample puts the positives' cut at the value they all
     * share, so the candidates outgrow their room and the counts sweep x; every entry of
     * each side is sent (no threshold splits equal magnitudes). */
    for (i = 0; i < n; i++)
        x[i] = i % 1000 == 0 ? -3.0f : 1.0f;
    CHECK_OK(dr_adaq_encode(x, n, 0.01f, 11, 0, work, buf, cap, &len));
    CHECK(len == adaq_frame_size(n, n));
    {
        float *out = malloc(n * sizeof *out);
        int same = 1;
        CHECK_OK(dr_adaq_decode(buf, len, out, n));
        for (i = 0; i < n; i++)
            same &= out[i] == x[i];
        CHECK(same);
        free(out);
    }
    CHECK_STATUS(dr_adaq_encode(x, n, 0.0f, 11, 0, work, buf, cap, &len), DR_E_ARG);
    CHECK_STATUS(dr_adaq_encode(x, n, 1.5f, 11, 0, work, buf, cap, &len), DR_E_ARG);
    x[5] = NAN;
    CHECK_STATUS(dr_adaq_encode(x, n, 0.01f, 11, 0, work, buf, cap, &len), DR_E_NUMERIC);
    free(x);
    free(buf);
    free(work);
}

static void test_adaq_small_and_empty(void)
{
    float x[50], out[50];
    uint8_t buf[512];
    uint64_t work[8];
    size_t len, i;
    CHECK(dr_adaq_workspace_size(50) <= sizeof work);
    /* A zero tensor: an empty, legal frame that decodes to zeros. */
    memset(x, 0, sizeof x);
    CHECK_OK(dr_adaq_encode(x, 50, 0.1f, 1, 0, work, buf, sizeof buf, &len));
    CHECK(len == 68);
    for (i = 0; i < 50; i++)
        out[i] = 9.0f;
    CHECK_OK(dr_adaq_decode(buf, len, out, 50));
    CHECK(out[0] == 0.0f && out[49] == 0.0f);
    /* Only negatives, and too few to be sampled: the largest is still found. */
    x[7] = -2.0f;
    x[30] = -1.0f;
    CHECK_OK(dr_adaq_encode(x, 50, 0.5f, 1, 0, work, buf, sizeof buf, &len));
    check_adaq(x, 50, 0.5f, buf, len);
    CHECK_OK(dr_adaq_decode(buf, len, out, 50));
    CHECK(out[7] == -2.0f && out[30] == 0.0f);
    /* Every positive equal: no threshold lands in the band (all or none are taken),
     * and the side must send all of them rather than nothing. */
    for (i = 0; i < 50; i++)
        x[i] = 5.0f;
    CHECK_OK(dr_adaq_encode(x, 50, 0.3f, 1, 0, work, buf, sizeof buf, &len));
    CHECK(len == adaq_frame_size(50, 50));
    CHECK_OK(dr_adaq_decode(buf, len, out, 50));
    for (i = 0; i < 50; i++)
        CHECK(out[i] == 5.0f);
    /* Empty tensor. */
    CHECK_OK(dr_adaq_encode(NULL, 0, 0.5f, 1, 0, work, buf, sizeof buf, &len));
    CHECK_OK(dr_adaq_decode(buf, len, NULL, 0));
}

/* dr_adaq_decode's status, after checking that dr_adaq_decode_add returns the same and
 * either adds the decoded frame onto out (a sum of 1s) or, refusing, leaves it as it
 * was. */
static int decode_both(const uint8_t *buf, size_t len, float *out, size_t n)
{
    float sum[256];
    size_t i;
    int st = dr_adaq_decode(buf, len, out, n), same = 1;
    CHECK(n <= 256);
    for (i = 0; i < n; i++)
        sum[i] = 1.0f;
    CHECK(dr_adaq_decode_add(buf, len, sum, n) == st);
    for (i = 0; i < n; i++)
        same &= sum[i] == (st == DR_OK ? 1.0f + out[i] : 1.0f);
    CHECK(same);
    return st;
}

/* Every byte of the frame damaged, and every truncation: refused by both decoders. */
static int refuses_each_damage(uint8_t *buf, size_t len, float *out, size_t n)
{
    size_t pos;
    int refused = 1;
    for (pos = 0; pos < len; pos++) {
        buf[pos] ^= 0x21;
        refused &= decode_both(buf, len, out, n) < 0;
        buf[pos] ^= 0x21;
    }
    for (pos = 0; pos < len; pos++)
        refused &= decode_both(buf, pos, out, n) < 0;
    return refused;
}

static void test_adaq_refuses_damage(void)
{
    float x[256], out[256];
    uint8_t buf[1200];
    uint64_t work[16];
    size_t len, pos, np;
    uint32_t v;
    for (pos = 0; pos < 256; pos++)
        x[pos] = test_uniform(9, pos);
    /* A few entries in 256: the lists (the map would take 64 bytes). */
    CHECK(dr_adaq_workspace_size(256) <= sizeof work);
    CHECK_OK(dr_adaq_encode(x, 256, 0.03f, 5, 0, work, buf, sizeof buf, &len));
    check_adaq(x, 256, 0.03f, buf, len);
    CHECK(buf[12] == DR_ADAQ_LISTS);
    CHECK(refuses_each_damage(buf, len, out, 256));
    CHECK_STATUS(decode_both(buf, len, out, 255), DR_E_FRAME_FIELD);
    CHECK_STATUS(dr_signsgd_decode(buf, len, out, 256), DR_E_FRAME_CODEC);

    /* Contents with a valid CRC: index out of range, out of order, in both lists,
     * a mean of the wrong sign. Sections start at 56: means, positives, negatives. */
    memcpy(&v, buf + 48, 4);
    np = v / 4;
    CHECK(np >= 2);
    v = 256;
    memcpy(buf + 64, &v, 4);
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, 256), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, 256, 0.03f, 5, 0, work, buf, sizeof buf, &len));
    memcpy(buf + 64, buf + 68, 4); /* first positive index = second */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, 256), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, 256, 0.03f, 5, 0, work, buf, sizeof buf, &len));
    memcpy(buf + 64 + 4 * np, buf + 64, 4); /* first negative index = first positive */
    reseal(buf, len);
    CHECK(decode_both(buf, len, out, 256) < 0);
    CHECK_OK(dr_adaq_encode(x, 256, 0.03f, 5, 0, work, buf, sizeof buf, &len));
    buf[56 + 3] ^= 0x80; /* mean_pos negative */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, 256), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, 256, 0.03f, 5, 0, work, buf, sizeof buf, &len));
    buf[12] = 2; /* a layout no encoder writes */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, 256), DR_E_FRAME_FIELD);
}

/* The sign map (2 sections from 52: the means, then the codes) damaged or forged by
 * someone who knows the layout: each refused by both decoders, out left as it was by
 * dr_adaq_decode_add. 62 entries: the last byte's bits past n are padding. */
static void test_adaq_map_refuses_damage(void)
{
    const size_t n = 62;
    float x[62], out[62];
    uint8_t buf[256], *codes = buf + 60;
    uint64_t work[8], count;
    size_t len, i, zero = 0, plus = 0;
    for (i = 0; i < n; i++)
        x[i] = test_uniform(10, i);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    check_adaq(x, n, 0.4f, buf, len);
    CHECK(buf[12] == DR_ADAQ_SIGN_MAP && buf[9] == 2 && len == 64 + 16);
    CHECK(refuses_each_damage(buf, len, out, n));
    CHECK_STATUS(decode_both(buf, len, out, 61), DR_E_FRAME_FIELD);
    /* Find an entry not sent and one sent positive (code 0 and code 1). */
    for (i = 0; i < n; i++) {
        unsigned code = (codes[i / 4] >> (2 * (i % 4))) & 3u;
        zero = code == 0 ? i : zero;
        plus = code == 1 ? i : plus;
    }
    CHECK(((codes[zero / 4] >> (2 * (zero % 4))) & 3u) == 0 && ((codes[plus / 4] >> (2 * (plus % 4))) & 3u) == 1);
    codes[plus / 4] |= (uint8_t)(2u << (2 * (plus % 4))); /* code 3 */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    codes[15] |= 0x40; /* a code for entry 63, past n */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    codes[zero / 4] |= (uint8_t)(2u << (2 * (zero % 4))); /* one more sent than counted */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    memcpy(&count, buf + 36, 8);
    count += 1; /* the count field one past the codes */
    memcpy(buf + 36, &count, 8);
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    buf[52 + 7] ^= 0x80; /* mean_neg positive */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_CORRUPT);
    CHECK_OK(dr_adaq_encode(x, n, 0.4f, 5, 0, work, buf, sizeof buf, &len));
    buf[12] = DR_ADAQ_LISTS; /* a map read as lists: a field error, not a crash */
    reseal(buf, len);
    CHECK_STATUS(decode_both(buf, len, out, n), DR_E_FRAME_FIELD);
    /* A sent entry's code made 3 (the count of codes set unchanged, so only the code-3
     * check can tell) in a map long enough for the vector paths' 32-byte census: 256
     * entries, 64 bytes of codes. */
    {
        static const size_t near[] = {0, 77, 130, 250};
        float y[256], got[256];
        uint8_t big[512], *map = big + 60;
        size_t k, j, blen;
        CHECK(dr_adaq_workspace_size(256) <= sizeof work);
        for (i = 0; i < 256; i++)
            y[i] = test_uniform(11, i);
        for (k = 0; k < sizeof near / sizeof *near; k++) {
            CHECK_OK(dr_adaq_encode(y, 256, 0.4f, 5, 0, work, big, sizeof big, &blen));
            CHECK(big[12] == DR_ADAQ_SIGN_MAP && blen == 64 + 64);
            for (j = near[k]; j < 255 && ((map[j / 4] >> (2 * (j % 4))) & 3u) == 0; j++)
                ;
            map[j / 4] |= (uint8_t)(3u << (2 * (j % 4)));
            reseal(big, blen);
            CHECK_STATUS(decode_both(big, blen, got, 256), DR_E_CORRUPT);
        }
    }
}

/* Lists longer than one window of the decoders' overlap check and one block of their
 * writes (200k entries, the frame's lists in many of each): dr_adaq_decode_add adds what
 * dr_adaq_decode writes, on a sparse frame (windows with no entry skipped) and a dense
 * one (4%: still the lists, the map would be larger), and an index put in both lists
 * far into the frame is refused with out untouched. Then the sign map of a dense
 * selection (0.3 and every entry): decode_add adds what decode writes, past the
 * vector paths' whole groups, and leaves the entries not sent as they were, -0.0 too. */
static void test_adaq_long_lists(void)
{
    const size_t n = 200000;
    const float ratios[2] = {0.001f, 0.04f};
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out), *sum = malloc(n * sizeof *sum);
    size_t cap = dr_adaq_bound(n), len = 0, i, t;
    uint8_t *buf = malloc(cap);
    void *work = malloc(dr_adaq_workspace_size(n));
    for (i = 0; i < n; i++)
        x[i] = test_gauss(6, i);
    for (t = 0; t < 2; t++) {
        uint32_t np, nn, shared, k, v;
        int same = 1;
        CHECK_OK(dr_adaq_encode(x, n, ratios[t], 3, 0, work, buf, cap, &len));
        CHECK_OK(dr_adaq_decode(buf, len, out, n));
        for (i = 0; i < n; i++)
            sum[i] = 1.0f;
        CHECK_OK(dr_adaq_decode_add(buf, len, sum, n));
        for (i = 0; i < n; i++)
            same &= sum[i] == 1.0f + out[i];
        CHECK(same);
        /* The positive at 90% of the list, and the first negative above it made equal to
         * it (still ascending: the negative before it is below). */
        memcpy(&np, buf + 48, 4);
        np /= 4;
        nn = (uint32_t)((len - 68) / 4) - np;
        CHECK(np > 10 && nn > 10);
        memcpy(&shared, buf + 64 + 4 * (size_t)(np - np / 10), 4);
        CHECK(shared > 16384);
        for (k = 0; k < nn; k++) {
            memcpy(&v, buf + 64 + 4 * (size_t)(np + k), 4);
            if (v > shared)
                break;
        }
        CHECK(k < nn);
        memcpy(buf + 64 + 4 * (size_t)(np + k), &shared, 4);
        reseal(buf, len);
        for (i = 0; i < n; i++)
            sum[i] = 1.0f;
        CHECK_STATUS(dr_adaq_decode(buf, len, out, n), DR_E_CORRUPT);
        CHECK_STATUS(dr_adaq_decode_add(buf, len, sum, n), DR_E_CORRUPT);
        for (i = 0; i < n; i++)
            same &= sum[i] == 1.0f;
        CHECK(same);
        /* mean_pos +0.0, the bits of a cleared entry: the shared index is still found
         * (the dense decoder marks which list holds an entry, not its float). */
        memset(buf + 56, 0, 4);
        reseal(buf, len);
        CHECK_STATUS(dr_adaq_decode(buf, len, out, n), DR_E_CORRUPT);
    }
    for (t = 0; t < 2; t++) {
        const float map_ratios[2] = {0.3f, 1.0f};
        int same = 1;
        CHECK_OK(dr_adaq_encode(x, n - 5, map_ratios[t], 3, 0, work, buf, cap, &len));
        CHECK(buf[12] == DR_ADAQ_SIGN_MAP);
        check_adaq(x, n - 5, map_ratios[t], buf, len);
        CHECK_OK(dr_adaq_decode(buf, len, out, n - 5));
        for (i = 0; i < n - 5; i++)
            sum[i] = i % 2 ? 1.0f : -0.0f;
        CHECK_OK(dr_adaq_decode_add(buf, len, sum, n - 5));
        for (i = 0; i < n - 5; i++) {
            float before = i % 2 ? 1.0f : -0.0f;
            same &= out[i] == 0.0f ? memcmp(&sum[i], &before, 4) == 0 : sum[i] == before + out[i];
        }
        CHECK(same);
    }
    /* No positives at all (mean_pos 0, a dense selection of negatives). */
    for (i = 0; i < n; i++)
        x[i] = -fabsf(x[i]) - 0.001f;
    CHECK_OK(dr_adaq_encode(x, n, 0.3f, 3, 0, work, buf, cap, &len));
    check_adaq(x, n, 0.3f, buf, len);
    free(x);
    free(out);
    free(sum);
    free(buf);
    free(work);
}

int main(void)
{
    test_dgc_band_on_gaussian();
    test_dgc_fallback_and_edges();
    test_dgc_sparsify();
    test_adaq();
    test_adaq_small_and_empty();
    test_adaq_refuses_damage();
    test_adaq_map_refuses_damage();
    test_adaq_long_lists();
    return check_summary("test_sparsify");
}
