/* Selection of every entry with |x| >= t. The comparison is done on the float bits as
 * integers (valid for non-negative floats), which the AVX2 path does eight at a time
 * with the same result. */
#include "deepreduce.h"
#include "candidates.h"
#include "threshold_simd.h"

#include <string.h>

#define NAN_KEY_FLOOR 0x7f800001u /* smallest magnitude key of a NaN */

static int threshold_key(float t, uint32_t *key)
{
    uint32_t u;
    if (!(t >= 0.0f)) /* negative or NaN */
        return DR_E_ARG;
    memcpy(&u, &t, sizeof u);
    *key = u & 0x7fffffffu;
    return DR_OK;
}

static int passes(float v, uint32_t tkey)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0x7fffffffu;
    return u >= tkey && u < NAN_KEY_FLOOR;
}

int dr_threshold_count(const float *x, size_t n, float t, size_t *count)
{
    uint32_t tkey;
    size_t i = 0, c = 0;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL))
        return DR_E_ARG;
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_threshold_count_avx2(x, n, tkey, &c);
#endif
    for (; i < n; i++)
        c += (size_t)passes(x[i], tkey);
    *count = c;
    return DR_OK;
}

int dr_threshold_select(const float *x, size_t n, float t, uint32_t *idx_out, size_t cap,
                        size_t *count)
{
    uint32_t tkey;
    size_t i = 0, c = 0;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL) || n > (size_t)UINT32_MAX ||
        (cap > 0 && idx_out == NULL))
        return DR_E_ARG;
    /* One sweep: indices written while there is room, the count kept past it. */
#if DR_HAVE_X86_SIMD
    if (dr_simd_active() >= DR_SIMD_AVX2)
        i = dr_threshold_select_avx2(x, n, tkey, idx_out, cap, &c);
#elif DR_HAVE_NEON
    if (dr_simd_active() == DR_SIMD_NEON)
        i = dr_threshold_select_neon(x, n, tkey, idx_out, cap, &c);
#endif
    for (; i < n; i++)
        if (passes(x[i], tkey)) {
            if (c < cap)
                idx_out[c] = (uint32_t)i;
            c++;
        }
    *count = c;
    return c > cap ? DR_E_DST_TOO_SMALL : DR_OK;
}

int dr_threshold_sparsify(const float *x, size_t n, float t, uint32_t *idx_out, float *val_out,
                          size_t cap, size_t *count)
{
    uint32_t tkey, top;
    size_t c;
    int st = threshold_key(t, &tkey);
    if (st != DR_OK || count == NULL || (n > 0 && x == NULL) || n > (size_t)UINT32_MAX ||
        (cap > 0 && (idx_out == NULL || val_out == NULL)))
        return DR_E_ARG;
    c = dr_collect_candidates(x, 0, n, tkey, idx_out, val_out, cap, &top);
    if (c > cap) { /* the sweep stopped at the end of the room: its top does not cover x */
        if (dr_all_finite(x, n) != 1)
            return DR_E_NUMERIC;
        return dr_threshold_count(x, n, t, count) == DR_OK ? DR_E_DST_TOO_SMALL : DR_E_ARG;
    }
    if (top >= DR_NONFINITE_KEY)
        return DR_E_NUMERIC;
    *count = c;
    return DR_OK;
}
