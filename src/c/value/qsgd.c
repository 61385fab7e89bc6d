/* qsgd: bucketed stochastic quantisation of the values (layout in deepreduce/value.h).
 *
 * The rounding draw for value j is dr_rng_uniform(key, j): a pure function of the key and
 * the position, so the result is reproducible and needs no generator state. The original
 * divided by the norm unconditionally and sent NaN for an all-zero bucket; here a zero
 * norm means zero levels. */
#include "rng_inline.h"
#include "value_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

static int params_ok(size_t r, uint32_t bucket_size, uint32_t s)
{
    return bucket_size > 0 && s >= 1 && s <= DR_QSGD_MAX_QUANTUM && r <= (size_t)UINT32_MAX;
}

/* Bytes per level: int8 holds |level| <= 127, beyond that int16. */
static size_t level_width(uint32_t s)
{
    return s < 128u ? 1u : 2u;
}

static size_t bucket_count(size_t r, uint32_t bucket_size)
{
    return r / bucket_size + (r % bucket_size != 0);
}

size_t dr_value_qsgd_bound(size_t r, uint32_t bucket_size, uint32_t s)
{
    if (!params_ok(r, bucket_size, s))
        return 0;
    return 4u * bucket_count(r, bucket_size) + level_width(s) * r;
}

int dr_value_qsgd_encode(const float *val, size_t r, uint32_t bucket_size, uint32_t s,
                         uint64_t key, uint8_t *out, size_t cap, size_t *written)
{
    size_t need, nb, w, b;
    uint8_t *levels;

    if (!params_ok(r, bucket_size, s) || written == NULL || (r > 0 && val == NULL) ||
        (out == NULL && cap > 0))
        return DR_E_ARG;
    if (!dr_value_all_finite(val, r))
        return DR_E_NUMERIC;
    need = dr_value_qsgd_bound(r, bucket_size, s);
    if (cap < need)
        return DR_E_DST_TOO_SMALL;
    if (r == 0) {
        *written = 0; /* out may be NULL: no pointer arithmetic on it */
        return DR_OK;
    }
    nb = bucket_count(r, bucket_size);
    w = level_width(s);
    levels = out + 4u * nb;

    for (b = 0; b < nb; b++) {
        size_t lo = b * bucket_size, hi = r - lo < bucket_size ? r : lo + bucket_size, j;
        double sumsq = 0.0;
        float norm;
        for (j = lo; j < hi; j++)
            sumsq += (double)val[j] * (double)val[j];
        /* Rounding is monotone, so the float norm is still >= every |v| of the bucket and
         * x below never exceeds s. Finite values near FLT_MAX can have a norm beyond it:
         * FLT_MAX itself is then sent, still >= every |v|, so the levels stay unbiased. */
        if (!(sumsq <= DBL_MAX))
            return DR_E_NUMERIC;
        norm = sqrt(sumsq) < (double)FLT_MAX ? (float)sqrt(sumsq) : FLT_MAX;
        memcpy(out + 4u * b, &norm, 4);
        for (j = lo; j < hi; j++) {
            int32_t level = 0;
            if (norm > 0.0f) {
                double x = (double)s * fabs((double)val[j]) / (double)norm;
                double fl = floor(x);
                level = (int32_t)fl + ((double)dr_rng_uniform_fast(key, j) < x - fl);
                if (val[j] < 0.0f)
                    level = -level;
            }
            if (w == 1) {
                levels[j] = (uint8_t)level; /* two's complement byte, modulo 256 */
            } else {
                int16_t l16 = (int16_t)level;
                memcpy(levels + 2u * j, &l16, 2);
            }
        }
    }
    *written = need;
    return DR_OK;
}

int dr_value_qsgd_decode(const uint8_t *in, size_t len, size_t r, uint32_t bucket_size,
                         uint32_t s, float *val_out)
{
    size_t need, nb, w, b;
    const uint8_t *levels;

    if (!params_ok(r, bucket_size, s) || (r > 0 && val_out == NULL) || (in == NULL && len > 0))
        return DR_E_ARG;
    need = dr_value_qsgd_bound(r, bucket_size, s);
    if (len < need)
        return DR_E_FRAME_SHORT;
    if (len > need)
        return DR_E_FRAME_FIELD;
    if (r == 0)
        return DR_OK; /* in may be NULL */
    nb = bucket_count(r, bucket_size);
    w = level_width(s);
    levels = in + 4u * nb;

    for (b = 0; b < nb; b++) {
        size_t lo = b * bucket_size, hi = r - lo < bucket_size ? r : lo + bucket_size, j;
        float norm;
        memcpy(&norm, in + 4u * b, 4);
        if (!(norm >= 0.0f && norm <= FLT_MAX))
            return DR_E_CORRUPT;
        for (j = lo; j < hi; j++) {
            int32_t level;
            if (w == 1) {
                /* Two's complement by arithmetic: converting a byte above 127 to int8_t
                 * would be implementation-defined. */
                level = levels[j] < 128u ? (int32_t)levels[j] : (int32_t)levels[j] - 256;
            } else {
                int16_t l16;
                memcpy(&l16, levels + 2u * j, 2);
                level = l16;
            }
            if (level > (int32_t)s || level < -(int32_t)s || (norm == 0.0f && level != 0))
                return DR_E_CORRUPT;
            /* |level| <= s, so the result is at most the norm: finite. */
            val_out[j] = (float)((double)norm * (double)level / (double)s);
        }
    }
    return DR_OK;
}
