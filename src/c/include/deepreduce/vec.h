/*
 * deepreduce/vec.h - dense vector kernels used by memories and communicators:
 * fused arithmetic, gathers and scatters with bounds checks, float conversions.
 */
#ifndef DEEPREDUCE_VEC_H
#define DEEPREDUCE_VEC_H

/* out[i] = a*x[i] + b*y[i] for i < n. `out` may alias x or y. */
int dr_axpby(float a, const float *x, float b, const float *y, float *out, size_t n);

/* dr_axpby, then whether what it wrote is finite: 1 if every out[i] is, 0 if one is Inf
 * or NaN, DR_E_ARG as dr_axpby. The test rides on the same pass (the loop is bound by
 * memory, not by its few extra operations), where dr_all_finite(out) would be a second.
 * So a residual x - y that comes out finite also says y was finite (a finite x minus an
 * Inf or a NaN is not), and a sum of decoded tensors says whether it is. */
int dr_axpby_finite(float a, const float *x, float b, const float *y, float *out, size_t n);

/* Deep Gradient Compression's memory step (momentum correction, then local
 * accumulation) in one sweep:
 *     u[i] = m * u_old[i] + g[i],   v[i] = v_old[i] + u[i],   copy[i] = v[i],
 * each rounded as written (no fused multiply-add): the bits of dr_axpby(m, u_old, 1, g, u),
 * dr_axpby(1, v_old, 1, u, v) and a copy of v, which read and wrote every array in passes
 * of their own. u_old and v_old both NULL (a tensor's first step): u = v = copy = g.
 * u may alias u_old and v may alias v_old (entry by entry); no other arrays may overlap.
 * Large outputs apart from the inputs are written past the caches (dr_axpby's rule).
 * Returns 1 if every u[i] and v[i] is finite, 0 if one is Inf or NaN (g held one, or a
 * sum overflowed), DR_E_ARG for a NULL array with n > 0 or just one of u_old, v_old NULL. */
int dr_dgc_accumulate(float m, const float *u_old, const float *v_old, const float *g, float *u, float *v,
                      float *copy, size_t n);

/* PowerSGD's product of two thin factors, row-major: P (rows x rank) times Q^T, where Q
 * (cols x rank) is passed transposed, as qt (rank x cols):
 *     v[i][j] = p[i*rank] * qt[j] + p[i*rank + 1] * qt[cols + j] + ...
 * summed in the order of k from 0, every product rounded (no fused multiply-add), so the
 * bits are the same on every SIMD path and thread count (for rank 1, those of any
 * matrix product). minuend NULL: out = v; else out = minuend - v, the error PowerSGD's
 * memory keeps, in the same pass (the same bits as dr_axpby(1, minuend, -1, v)). out may
 * alias minuend, not p or qt. A large out is written past the caches (one write pass,
 * where a store loop also reads every line first), and split over dr_thread_count()
 * threads by rows.
 * Returns 1 if every out[i] is finite, 0 if one is Inf or NaN (the test rides on the
 * pass), DR_E_ARG for a NULL pointer with a nonzero size, rank 0, or rows * cols,
 * rows * rank or rank * cols beyond size_t. */
int dr_lowrank_product(const float *p, const float *qt, size_t rows, size_t cols, size_t rank,
                       const float *minuend, float *out);

/* x[i] = +0.0 for i < n: a result a decoder then adds entries into. One write pass
 * through the C library's memset, which streams large buffers past the caches (a store
 * loop first reads every line it writes: about 2x slower on 100 MB). DR_E_ARG if x is
 * NULL with n > 0. */
int dr_zero(float *x, size_t n);

/* Largest |x[i]| (0 for n == 0). NaN entries are ignored. */
float dr_abs_max(const float *x, size_t n);

/* 1 if every x[i] (i < n) is finite, 0 if any is NaN or infinite (1 for n == 0).
 * DR_E_ARG if x is NULL with n > 0. Reads the exponent bits only: exact, and one
 * branch-free streaming pass. */
int dr_all_finite(const float *x, size_t n);

/* out[j] = dense[idx[j]] for j < r. DR_E_CORRUPT if any idx[j] >= n. */
int dr_gather(const float *dense, size_t n, const uint32_t *idx, size_t r, float *out);

/* dense[idx[j]] = val[j] for j < r. DR_E_CORRUPT (and nothing written) if any idx[j] >= n. */
int dr_scatter(const uint32_t *idx, const float *val, size_t r, float *dense, size_t n);

/* dense[idx[j]] += val[j] for j < r. DR_E_CORRUPT (nothing written) if any idx[j] >= n. */
int dr_scatter_add(const uint32_t *idx, const float *val, size_t r, float *dense, size_t n);

/* dense[idx[j]] = 0 for j < r: the residual of a sparsifier that sent exact values.
 * DR_E_CORRUPT (nothing written) if any idx[j] >= n. */
int dr_zero_at(const uint32_t *idx, size_t r, float *dense, size_t n);

/* IEEE binary16 and bfloat16 conversions, round to nearest even, NaN kept NaN,
 * overflow to infinity. The F16C path gives the same bits as the scalar one. */
int dr_f32_to_f16(const float *x, uint16_t *out, size_t n);
int dr_f16_to_f32(const uint16_t *x, float *out, size_t n);
/* dr_f16_to_f32, then whether what it wrote is finite: 1 if no half of x is an Inf or a
 * NaN, 0 if one is, DR_E_ARG as dr_f16_to_f32. The test rides on the conversion's pass. */
int dr_f16_to_f32_finite(const uint16_t *x, float *out, size_t n);
int dr_f32_to_bf16(const float *x, uint16_t *out, size_t n);
int dr_bf16_to_f32(const uint16_t *x, float *out, size_t n);

#endif /* DEEPREDUCE_VEC_H */
