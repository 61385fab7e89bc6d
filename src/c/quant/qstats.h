/* Internal to src/c/quant: the sums the quantisers take over a tensor, in double, in one
 * fixed order on every SIMD path so that their results (and so every frame) are
 * bit-identical between paths.
 *
 * The order: element i is added to lane i % 8 of eight accumulators (both vector widths
 * keep exactly these eight lanes), and the lanes are then summed as
 * ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)), the order a 512- or 256-bit horizontal
 * reduction takes. */
#ifndef DR_QSTATS_H
#define DR_QSTATS_H

#include <stddef.h>

/* Every function takes `simd`, the caller's dr_simd_active(), read once per call of
 * the public function: reading it per bucket would cost more than the bucket. */

typedef struct {
    double lane[8];
} dr_lanes;

/* The sum of the lanes, in the order above. */
double dr_lanes_total(const dr_lanes *a);

/* sum x[i]^2 (each square exact in double). */
double dr_qs_sum_squares(int simd, const float *x, size_t n);

/* sum x[i]; *max_abs = max |x[i]| (0 for n = 0; NaN-free x assumed by the callers, who
 * check the sum). */
double dr_qs_sum_max_abs(int simd, const float *x, size_t n, float *max_abs);

/* sum (x[i] - mean)^2. */
double dr_qs_sum_sq_dev(int simd, const float *x, size_t n, double mean);

/* sum |x[i]|. */
double dr_qs_sum_abs(int simd, const float *x, size_t n);

/* The sums onebit needs, split by the packing rule (x >= 0 is non-negative; NaN counts
 * as negative): *sum_neg, *sum_nonneg and the count of negatives. */
void dr_qs_split_sums(int simd, const float *x, size_t n, double *sum_neg, double *sum_nonneg,
                      size_t *count_neg);

#endif
