/* Internal to the value codecs: the stable radix sort polyfit and dexp share, and small
 * checks every codec makes. Not part of the public interface. */
#ifndef DR_VALUE_INTERNAL_H
#define DR_VALUE_INTERNAL_H

#include "deepreduce.h"

#include <math.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "deepreduce's wire format code assumes a little-endian host"
#endif

/* Sort keys[0..n) ascending, stably, and write perm[j] = the original position of the
 * j-th smallest key. keys ends sorted. tmp_keys and tmp_perm are scratch of n entries.
 * n < 2^32. LSD radix sort, four 8-bit passes; a pass whose byte is the same for every
 * key is skipped. */
void dr_value_radix_sort(uint32_t *keys, uint32_t *perm, uint32_t *tmp_keys, uint32_t *tmp_perm,
                         size_t n);

/* How the sorting encoders (dexp, polyfit) start: check their arguments (DR_E_ARG if
 * r >= 2^32, written is NULL, val or perm_out is NULL with r > 0, out is NULL with
 * cap > 0, or work is NULL with r > 0 or not 8-byte aligned), split work's 12 r bytes
 * into dr_value_radix_sort's three arrays (keys, tmp_keys, tmp_perm), and refuse values
 * that are not all finite (DR_E_NUMERIC). */
int dr_value_sort_begin(const float *val, size_t r, const uint32_t *perm_out,
                        const uint8_t *out, size_t cap, const size_t *written, void *work,
                        uint32_t **keys, uint32_t **tmp_keys, uint32_t **tmp_perm);

/* Bytes of sort scratch for n values, saturating instead of wrapping. */
size_t dr_value_sort_scratch_size(size_t n);

/* 1 when every val[0..n) is finite. */
static inline int dr_value_all_finite(const float *val, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(val[i]))
            return 0;
    return 1;
}

/* *out = x rounded to float32, or DR_E_NUMERIC (out untouched) if x is NaN or would round
 * to infinity, a conversion C leaves undefined. The limit is FLT_MAX plus half its ulp,
 * 2^128 - 2^103: from there on, round-to-nearest-even goes up to infinity. A fit that
 * lands a hair above FLT_MAX must still decode. */
static inline int dr_value_to_float(double x, float *out)
{
    if (!(fabs(x) < 0x1.ffffffp127))
        return DR_E_NUMERIC;
    *out = (float)x;
    return DR_OK;
}

#endif
