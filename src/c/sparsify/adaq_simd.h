/* Internal: adaq's one sweep over x (see adaq.c), its staging of the selections and its
 * dense decoder's expansion, their AVX2 and AVX-512 variants. Not part of the public API.
 *
 * The sweep works on the entries' bit patterns u (as int32 and as uint32), which order
 * like the values within a sign: an entry is positive when (int32)u > 0, negative when
 * u > 0x80000000, a positive candidate when (int32)u >= (int32)pkey and a negative one
 * when u >= nkey (pkey = the positive cut's bits, nkey = 0x80000000 | the negative cut's
 * magnitude bits). Every path adds the same integers to the tally and appends the same
 * candidates in ascending index order. */
#ifndef DR_ADAQ_SIMD_H
#define DR_ADAQ_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t pos, neg;   /* entries > 0 and < 0 */
    int32_t smax;      /* largest pattern as int32, at least 0: the largest positive's bits */
    uint32_t umax;     /* largest pattern as uint32: the most negative entry's bits (or a
                          positive's when there is no negative) */
} dr_adaq_tally;

/* Keys of the counting sweep: how many positives have (int32)u >= (int32)key[0] and
 * key[1], how many negatives u >= key[2] and key[3]. */
#define DR_ADAQ_PROBES 4

/* Partial sums per side of the selected values (sparsify.h: adaq's mean). */
#define DR_ADAQ_LANES 16

#if DR_HAVE_X86_SIMD
/* Each takes a prefix of whole vectors of x, adds it to *t, appends its candidates'
 * indices and values to idx[*count..] and val[*count..], and returns the prefix length.
 * They stop early, before a vector that could take *count past cap, so the caller
 * finishes the tail (and an overflow) with the scalar sweep. The AVX-512 one stores 16
 * lanes and the AVX2 one 8 lanes past *count, inside cap. */
size_t dr_adaq_sweep_avx2(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint32_t *idx,
                          float *val, size_t cap, size_t *count, dr_adaq_tally *t);
size_t dr_adaq_sweep_avx512(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint32_t *idx,
                            float *val, size_t cap, size_t *count, dr_adaq_tally *t);

/* The sweep of a large ratio, where nothing is appended (no cut holds the selections):
 * the tally, and at[p] += the entries at or beyond key[p] (DR_ADAQ_PROBES), over a
 * prefix of whole vectors of x, whose length they return. */
size_t dr_adaq_count_avx2(const float *x, size_t n, const uint32_t *key, dr_adaq_tally *t,
                          size_t *at);
size_t dr_adaq_count_avx512(const float *x, size_t n, const uint32_t *key, dr_adaq_tally *t,
                            size_t *at);

/* The dense decoder's expansion (adaq.c): out[t] = value[mark[t]] (marks 0, 1 or 2)
 * over a prefix of mark[0..len), whose length they return; streamed past the cache
 * where `stream` is set (out then 16-byte aligned; the prefix may then end up to 15
 * floats before the last whole vector, where out's next cache line starts). */
size_t dr_adaq_expand_avx2(const uint8_t *mark, size_t len, const float *value, float *out,
                           int stream);
size_t dr_adaq_expand_avx512(const uint8_t *mark, size_t len, const float *value, float *out,
                             int stream);

/* take's staging (adaq.c) over whole vectors of x[0..len), whose first entry has index
 * `start` (a multiple of 16): the entries taken, positives by (int32)u >= (int32)pkey and
 * negatives by u >= nkey (as the sweep's candidates; the caller makes the keys from its
 * thresholds), have their indices appended in index order to pidx[*kp..] and
 * nidx[*kn..] and their values added, as doubles, to psum[i % 16] and nsum[i % 16]
 * (sparsify.h: adaq's sums). Returns the prefix length taken; stores 16 (AVX2: 8) lanes
 * past each count. */
size_t dr_adaq_stage_avx2(const float *x, size_t start, size_t len, uint32_t pkey, uint32_t nkey,
                          uint32_t *pidx, size_t *kp, double *psum, uint32_t *nidx, size_t *kn,
                          double *nsum);
size_t dr_adaq_stage_avx512(const float *x, size_t start, size_t len, uint32_t pkey, uint32_t nkey,
                            uint32_t *pidx, size_t *kp, double *psum, uint32_t *nidx, size_t *kn,
                            double *nsum);

/* The same takes as a map of codes (sparsify.h: adaq's sign map) over whole vectors of
 * x[0..n) (the first entry's index a multiple of 16, so lane j adds to psum[j] and
 * nsum[j]): code 1 for a positive taken, 2 for a negative taken, 0 else, two bits per
 * entry (entry i at bits 2(i%4) of codes[i/4]), whole bytes written; the values added
 * as the staging adds them. Returns the prefix length taken. */
size_t dr_adaq_map_avx2(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint8_t *codes,
                        double *psum, double *nsum);
size_t dr_adaq_map_avx512(const float *x, size_t n, uint32_t pkey, uint32_t nkey, uint8_t *codes,
                          double *psum, double *nsum);
#endif

#endif
