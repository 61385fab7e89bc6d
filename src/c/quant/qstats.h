/* Internal to src/c/quant: the sums the quantisers take over a tensor, in double, in one
 * fixed order on every SIMD path so that their results (and so every frame) are
 * bit-identical between paths.
 *
 * The order: element i is added to lane i % 32 of 32 accumulators (four AVX-512 or eight
 * AVX2 registers: four or eight independent chains of adds, where one chain would wait
 * on each add's latency), the lanes are folded to eight as
 * m_j = (l_j + l_{j+8}) + (l_{j+16} + l_{j+24}), and those summed as
 * ((m0+m4) + (m2+m6)) + ((m1+m5) + (m3+m7)), the order a 512- or 256-bit horizontal
 * reduction takes. */
#ifndef DR_QSTATS_H
#define DR_QSTATS_H

#include <stddef.h>
#include <stdint.h>

/* Every function takes `simd`, the caller's dr_simd_active(), read once per call of
 * the public function: reading it per bucket would cost more than the bucket. */

#define DR_QS_LANES 32

typedef struct {
    double lane[DR_QS_LANES];
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

/* One sweep for a variance: *sum_dev = sum (x[i] - shift), *sum_sq_dev = sum
 * (x[i] - shift)^2 and *max_abs = max |x[i]| (0 for n = 0). With shift near the mean
 * (a sample's mean) the variance sum_sq_dev/n - (sum_dev/n)^2 loses no more than the
 * two-sweep formula does. */
void dr_qs_shifted_sums(int simd, const float *x, size_t n, double shift, double *sum_dev,
                        double *sum_sq_dev, float *max_abs);

/* max over i of x[i]'s bits with the sign cleared, as an unsigned integer: the bits of
 * max |x| (0 for n = 0), at least 0x7f800000 iff x holds an Inf or a NaN. */
uint32_t dr_qs_max_abs_bits(int simd, const float *x, size_t n);

/* sum |x[i]|. */
double dr_qs_sum_abs(int simd, const float *x, size_t n);

/* The sums onebit needs, split by the packing rule (x >= 0 is non-negative; NaN counts
 * as negative): *sum_neg, *sum_nonneg and the count of negatives. */
void dr_qs_split_sums(int simd, const float *x, size_t n, double *sum_neg, double *sum_nonneg,
                      size_t *count_neg);

#endif
