/*
 * deepreduce/quant.h - the quantisers of the GRACE compressors: qsgd, terngrad, onebit,
 * signsgd, signum, efsignsgd, natural, 8-bit, inceptionn and sketch, plus the sign-bit
 * packing they share.
 *
 * Every quantiser writes one complete frame (see deepreduce.h) of a dense tensor:
 *   kind = its enum dr_kind, index_codec = value_codec = 0 (raw), dtype = the caller's
 *   dtype passed through, numel = count = n, params[] as listed per quantiser (unused
 *   params are zero), then the sections listed per quantiser.
 * Common contract of the three functions each quantiser offers:
 *   size_t dr_X_size(n, ...)   exact bytes of the frame (an upper bound where noted).
 *   int dr_X_encode(x, n, ..., dtype, buf, cap, written)
 *                              writes the frame to buf[0..*written). DR_E_ARG for a NULL
 *                              pointer (x may be NULL when n == 0), a dtype outside enum
 *                              dr_dtype, a parameter out of its documented range, or a
 *                              tensor too large for a frame (a section over 4 GiB);
 *                              DR_E_DST_TOO_SMALL if cap is below the frame size;
 *                              DR_E_NUMERIC where noted for non-finite input. Nothing is
 *                              allocated; the only scratch is the caller's `work`, where
 *                              one is taken.
 *   int dr_X_decode(buf, len, out, n)
 *                              parses the frame and writes all of out[0..n). Refuses,
 *                              before writing anything (inceptionn: see its entry): a frame that fails
 *                              dr_frame_parse (CRC, lengths), DR_E_FRAME_CODEC for a frame
 *                              of another kind or with non-raw codecs, DR_E_FRAME_FIELD for
 *                              numel/count other than n, wrong section count or lengths,
 *                              params out of range, and DR_E_CORRUPT for section contents
 *                              the encoder cannot produce (a level beyond s, a NaN scale,
 *                              nonzero padding bits, ...).
 * Stochastic quantisers (qsgd, terngrad, natural) take a `key` (see dr_rng_key):
 * element i draws w = dr_rng_u32(key, i), and where a uniform is compared the uniform is
 * (w >> 8) / 2^24, so the same key gives the same bytes on every rank and every SIMD path,
 * and different keys give independent roundings. (The sketch's key draws its sample
 * positions from dr_rng_u64, as described there.)
 */
#ifndef DEEPREDUCE_QUANT_H
#define DEEPREDUCE_QUANT_H

/* ---------------------------------------------------------------------- sign bits */
/* Bit i of a sign bitmap is bit (i % 8) of byte i / 8 (LSB first). Bits past n in the
 * last byte are zero. */

/* Bytes of a bitmap of n bits: ceil(n / 8). */
size_t dr_sign_bytes(size_t n);

/* out[0..dr_sign_bytes(n)): bit i = 1 if x[i] >= 0 (so -0.0 gives 1), 0 if x[i] < 0 or
 * NaN. AVX2 path: compare + movemask, bit-identical to the scalar path. */
int dr_pack_signs(const float *x, size_t n, uint8_t *out);

/* out[i] = if_set where bit i of `bits` is 1, if_clear where it is 0, for i < n.
 * signsgd uses (-1, +1); efsignsgd (-mean, +mean); onebit (mean_neg, mean_nonneg).
 * Padding bits are not looked at (the frame decoders check them). */
int dr_unpack_signs(const uint8_t *bits, size_t n, float if_clear, float if_set, float *out);

/* --------------------------------------------------------------------------- qsgd */
/* Bucketed stochastic quantisation (Alistarh et al. 2017). Buckets are x[jB..jB+B),
 * the last one possibly shorter. Per bucket: norm = ||bucket||_2 (float32), and per
 * element level = sign(x)*(floor(s|x|/norm) + Bernoulli(frac)) in [-s, s], so
 * E[norm/s*level] = x (unbiased up to float rounding and the 24-bit uniform).
 * A zero bucket has norm 0 and all levels 0: it decodes to zeros, never NaN.
 * Decode: out = (norm/s)*level.
 *   params[0] = s (quantum_num, 1..DR_QSGD_MAX_S), params[1] = B (bucket_size, >= 1).
 *   section 0: ceil(n/B) float32 norms; section 1: n levels, int8 if s < 128 else int16.
 *   Size: 56 + 4*ceil(n/B) + n*(s < 128 ? 1 : 2) bytes.
 * DR_E_NUMERIC if a bucket holds Inf/NaN. A bucket of finite values whose norm exceeds
 * FLT_MAX sends FLT_MAX as its norm (still >= every |x|: unbiased, decodes finite).
 * Both functions split the buckets over up to dr_thread_count() threads, one per
 * DR_THREADS_MIN_NUMEL elements; the bytes and floats are the same for every thread count. */
#define DR_QSGD_MAX_S 32767
size_t dr_qsgd_size(size_t n, uint32_t quantum_num, uint32_t bucket_size);
int dr_qsgd_encode(const float *x, size_t n, uint32_t quantum_num, uint32_t bucket_size,
                   uint64_t key, uint8_t dtype, uint8_t *buf, size_t cap, size_t *written);
int dr_qsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ----------------------------------------------------------------------- terngrad */
/* Ternary gradients (Wen et al. 2017). sigma = population standard deviation of x;
 * y = clip(x, -2.5*sigma, 2.5*sigma); s = max|y|; t_i = sign(y_i)*Bernoulli(|y_i|/s)
 * in {-1, 0, +1}. Decode: out = s*t, so E[out] = y (unbiased within the clip). A
 * constant tensor (sigma = 0) and a zero tensor give s = 0 and decode to zeros.
 *   section 0: s as float32; section 1: ceil(n/4) bytes, t_i in bits 2(i%4)..2(i%4)+1 of
 *   byte i/4 as 0 -> 0, 1 -> +1, 2 -> -1 (3 is refused by the decoder).
 *   Size: 56 + 4 + ceil(n/4) bytes.
 * DR_E_NUMERIC if x holds Inf/NaN. */
size_t dr_terngrad_size(size_t n);
int dr_terngrad_encode(const float *x, size_t n, uint64_t key, uint8_t dtype, uint8_t *buf,
                       size_t cap, size_t *written);
int dr_terngrad_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ------------------------------------------------------------------------- onebit */
/* 1-bit SGD (Seide et al. 2014). mean_neg = mean of the x < 0, mean_nonneg = mean of the
 * x >= 0 (0 for an empty group), both accumulated in double. Decode: out = mean_neg
 * where the sign bit is 0, mean_nonneg where it is 1 (GRACE inverted this mask).
 *   section 0: mean_neg, mean_nonneg as float32; section 1: sign bitmap.
 *   Size: 56 + 8 + ceil(n/8) bytes. The decoder refuses mean_neg > 0 or mean_nonneg < 0.
 * DR_E_NUMERIC if x holds Inf/NaN. */
size_t dr_onebit_size(size_t n);
int dr_onebit_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                     size_t *written);
int dr_onebit_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ---------------------------------------------------------------- signsgd, signum */
/* signSGD (Bernstein et al. 2018): the sign bitmap only (1 = x >= 0 decodes to +1,
 * 0 = x < 0 decodes to -1). The aggregate is a majority vote: sum the decoded
 * tensors of all ranks, then dr_sign_vote.
 *   section 0: sign bitmap. Size: 52 + ceil(n/8) bytes.
 * DR_E_NUMERIC if x holds Inf/NaN (found in the packing sweep itself). */
size_t dr_signsgd_size(size_t n);
int dr_signsgd_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                      size_t *written);
int dr_signsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* sum_inout[i] = +1 if sum_inout[i] >= 0, else -1; a NaN stays NaN (a rank's non-finite
 * gradient reaches the aggregate). */
int dr_sign_vote(float *sum_inout, size_t n);

/* Signum: signSGD of the momentum. The caller keeps m per tensor and updates it with
 * dr_signum_momentum before encoding m. Frame as signsgd, kind DR_KIND_SIGNUM
 * (DR_E_NUMERIC for Inf/NaN in m). */
size_t dr_signum_size(size_t n);
int dr_signum_encode(const float *m, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                     size_t *written);
int dr_signum_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* m = (1 - beta)*g + beta*m, or m = g when `first` is nonzero (m's old contents are then
 * ignored). DR_E_ARG if beta is not in [0, 1]. */
int dr_signum_momentum(float *m, const float *g, size_t n, float beta, int first);

/* The same update out of place: m_new = (1 - beta)*g + beta*m_old (the same floats as
 * dr_signum_momentum on a copy of m_old), one sweep where a copy and the update took two.
 * m_new may be m_old. DR_E_ARG for NULL pointers (n > 0) or beta outside [0, 1]. */
int dr_signum_momentum_into(float *m_new, const float *m_old, const float *g, size_t n,
                            float beta);

/* The update and the frame in one sweep: m_new = (1 - beta)*g + beta*m_old (m_new = g
 * when m_old is NULL, the first step), then into buf the frame dr_signum_encode(m_new)
 * makes: the same floats in m_new and the same bytes in buf as the two calls, without
 * reading m_new back from memory. Any two of m_new, m_old and g may be the same array
 * (each element is read before it is written); they must not overlap otherwise. Sizes as
 * dr_signum_size. DR_E_ARG for NULL pointers (n > 0) or beta outside [0, 1],
 * DR_E_DST_TOO_SMALL if cap is short, DR_E_NUMERIC if m_new holds an Inf or a NaN
 * (m_new is written in full either way; buf holds no frame). */
int dr_signum_momentum_encode(float *m_new, const float *m_old, const float *g, size_t n,
                              float beta, uint8_t dtype, uint8_t *buf, size_t cap,
                              size_t *written);

/* ---------------------------------------------------------------------- efsignsgd */
/* Error-feedback signSGD (Karimireddy et al. 2019): mean = mean|x| (double accumulate)
 * and the sign bitmap. Decode: out = +mean where the bit is 1, -mean where it is 0.
 *   section 0: mean as float32; section 1: sign bitmap. Size: 56 + 4 + ceil(n/8).
 * DR_E_NUMERIC if x holds Inf/NaN. */
size_t dr_efsignsgd_size(size_t n);
int dr_efsignsgd_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                        size_t *written);
int dr_efsignsgd_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ------------------------------------------------------------------------ natural */
/* Natural compression (Horvath et al. 2019): each value becomes a signed power of two,
 * one byte each: bit 7 = sign, bits 0..6 = code c. c = 0 is zero (byte 0x00 only;
 * 0x80 is refused); c in 1..127 is 2^(c - DR_NATURAL_CODE_OFFSET), i.e. magnitudes
 * 2^-63 .. 2^63.
 * Rounding, for |x| in [2^e, 2^(e+1)) inside that range: up with probability
 * (|x| - 2^e)/2^e, taken from 23 random bits (w >> 9) against the 23 mantissa bits, so
 * exactly unbiased. |x| below 2^-63 (subnormals included) becomes 2^-63 with probability
 * ceil(|x| * 2^87)/2^24 (a 24-bit draw) and 0 otherwise: unbiased to within 2^-87
 * absolute. |x| >= 2^63 saturates
 * to 2^63 (biased; gradients never get there). Zero (either sign) gives 0x00.
 *   section 0: n bytes. Size: 52 + n bytes.
 * DR_E_NUMERIC if x holds Inf/NaN. */
#define DR_NATURAL_CODE_OFFSET 64
size_t dr_natural_size(size_t n);
int dr_natural_encode(const float *x, size_t n, uint64_t key, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written);
int dr_natural_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ----------------------------------------------------------------------- eightbit */
/* 8-bit approximation (Dettmers 2015), deterministic. scale = max|x|; each |x|/scale is
 * replaced by the nearest of 128 fixed magnitudes T[0..127] (ties to the smaller), and
 * sent as one byte: bit 7 = sign, bits 0..6 = the index c. Byte 0x80 is refused.
 * T is Dettmers' dynamic tree: T[0] = 0; for c >= 1 written in 7 bits, z = the number of
 * leading zero bits (0..6) is a decimal exponent, the first 1 bit is the indicator, and
 * the f = 6 - z bits after it are j: T[c] = 10^-z * (0.1 + 0.9*(j + 1)/2^f). T rises
 * with c from T[1] = 1e-6 to T[127] = 1 exactly, with 2^f evenly spaced steps per decade,
 * so the relative error shrinks toward the scale. Decode: out = sign*T[c]*scale.
 *   section 0: scale as float32; section 1: n bytes. Size: 56 + 4 + n bytes.
 * DR_E_NUMERIC if x holds Inf/NaN. */
size_t dr_eightbit_size(size_t n);
int dr_eightbit_encode(const float *x, size_t n, uint8_t dtype, uint8_t *buf, size_t cap,
                       size_t *written);
int dr_eightbit_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* The 128 magnitudes T[] above, as float32, into table[0..128). */
int dr_eightbit_table(float *table);

/* --------------------------------------------------------------------- inceptionn */
/* Error-bounded re-encoding by magnitude band (after INCEPTIONN, Li et al. 2018), with
 * the error bound eps = 2^-b, b = `bound_bits` in 1..DR_INCEPTIONN_MAX_BITS (default
 * DR_INCEPTIONN_DEFAULT_BITS: eps = 2^-10 ~ 1e-3). Each value gets a 2-bit tag, the
 * first rule that applies winning (rounding is half up, computed exactly):
 *   tag 3  |x| >= 1: kept as float32 (exact).
 *   tag 0  q8 = round(|x|*2^(b-1)) is 0, i.e. |x| < eps: dropped, decodes to 0.
 *   tag 1  q8 <= 127: one byte, sign<<7 | q8; value q8*2^(1-b).
 *   tag 2  q16 = round(|x|*2^k) <= 32767, k = max(15, b - 1): two bytes, sign<<15 | q16;
 *          value q16*2^-k.
 *   tag 3  otherwise (|x| just below 1, or b > 16): float32.
 * So |decode(x) - x| <= eps for every element (0 for tag 3): the 8-bit band carries the
 * small values at step 2eps, the 16-bit band the rest below 1 at step 2^-k <= 2eps.
 *   params[0] = b, params[1] = the layout's block size, DR_INCEPTIONN_BLOCK. One
 *   section: x in blocks of DR_INCEPTIONN_BLOCK elements (the last one shorter when n is
 *   not a multiple), each of m elements written as ceil(m/4) bytes of tags (element i of
 *   the block in bits 2(i%4).. of byte i/4, padding bits zero), then the block's tag-3
 *   float32s, its tag-2 uint16s and its tag-1 bytes, each in element order. A block's
 *   lengths follow from its tags, so the encoder writes x's blocks in one sweep and the
 *   decoder reads the frame once: each block's CRC, checks and values while it is in
 *   cache. The decoder checks that the blocks fill the section exactly, that no 8/16-bit
 *   magnitude is 0 and no float32 is Inf/NaN. Unlike the other decoders it writes out
 *   while it checks: after any error, out[0..n) is unspecified. Its statuses still
 *   rank as dr_frame_parse's: a frame damaged on the way is DR_E_FRAME_CHECKSUM whether
 *   the damage is in the header's fields or in the section (damage that breaks the magic,
 *   version or lengths is told by those, as for every codec).
 *   Wire change: before blocks (builds before the issue-12 merge, 77db654) it had 4 sections
 *   (all tags, then all float32s, uint16s, bytes) and params[1] = 0. Such a frame, and
 *   one with any params[1] other than DR_INCEPTIONN_BLOCK (another block size), is
 *   refused with DR_E_FRAME_VERSION; a build before the change refuses the blocked frame
 *   (it wants 4 sections). Neither is ever mis-decoded.
 * Variable size: dr_inceptionn_size gives the exact frame size for x (one read of x),
 * dr_inceptionn_bound the largest possible: 52 + ceil(n/4) + 4n (what a caller without
 * the exact size passes as cap: the encoder reports the size it wrote).
 * DR_E_NUMERIC if x holds Inf/NaN. The encoder stops at the first block that holds one or
 * does not fit in cap, so a tensor with both gets either status. DR_E_ARG for a tensor too
 * large for a frame: before any block when its tags alone pass 4 GiB (n > 2^34 - 4),
 * else at the first block that takes the section past 4 GiB. Unlike the other encoders
 * it may write to all of buf[0..cap), not only buf[0..*written): its vector kernels
 * store whole vectors, up to 64 bytes past a block's end (past the frame's end for the
 * last vector-written block). A caller keeps nothing it needs after the frame in buf. */
#define DR_INCEPTIONN_DEFAULT_BITS 10
#define DR_INCEPTIONN_MAX_BITS 24
#define DR_INCEPTIONN_BLOCK 1024 /* elements per block of the frame (a multiple of 256) */
size_t dr_inceptionn_bound(size_t n);
int dr_inceptionn_size(const float *x, size_t n, uint32_t bound_bits, size_t *size);
int dr_inceptionn_encode(const float *x, size_t n, uint32_t bound_bits, uint8_t dtype,
                         uint8_t *buf, size_t cap, size_t *written);
int dr_inceptionn_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* -------------------------------------------------------------------------- 3LC */
/* 3LC (Lim, Andersen and Kaminsky, SysML 2019): three-value quantisation, base-3^5
 * packing and zero-run encoding, the comparison codec of DeepReduce's Fig. 8.
 *   1. M = max|x| * sparsity (`sparsity` in [1, 2): above 1, more entries round to 0);
 *      each x[i] becomes the trit t = +1 if x/M >= 0.5, -1 if x/M <= -0.5, else 0
 *      (computed as x >= M/2 and x <= -M/2 in float, so no division rounds).
 *   2. Five trits make one byte, sum over j of (t[5g+j] + 1) * 3^j, 0..242; past n the
 *      trits are 0 (byte 121 is five zeros).
 *   3. A run of 2..14 consecutive 121 bytes becomes one byte 243 + (run - 2).
 * Decode: out = t * M. params[0] = the float32 bits of `sparsity` (for the record).
 * section 0: M as float32; section 1: the zero-run-encoded bytes, at most ceil(n/5).
 * Variable size: at most dr_threelc_bound(n) = 56 + ceil(n/5) bytes. The decoder
 * refuses (DR_E_CORRUPT) a negative or non-finite M, a stream that does not expand to
 * exactly ceil(n/5) groups, or trits past n that are not 0.
 * DR_E_ARG for a sparsity outside [1, 2); DR_E_NUMERIC if x holds Inf/NaN. */
size_t dr_threelc_bound(size_t n);
int dr_threelc_encode(const float *x, size_t n, float sparsity, uint8_t dtype, uint8_t *buf,
                      size_t cap, size_t *written);
int dr_threelc_decode(const uint8_t *buf, size_t len, float *out, size_t n);

/* ------------------------------------------------------------------------- sketch */
/* Quantile sketch (after SketchML, Jiang et al. 2018): Q = `bins` (1..DR_SKETCH_MAX_BINS;
 * GRACE passes quantum_num, default 127) bins with edges at the quantiles j/Q of the
 * data, j = 1..Q-1. Quantiles come from a sample: all of x when n <= DR_SKETCH_SAMPLE
 * (exact), else DR_SKETCH_SAMPLE positions drawn with replacement from the stream `key`.
 * Each element is sent as its bin index (the number of edges <= x), each bin as the
 * float32 mean of its members (accumulated in double, element i into the bin's partial
 * sum i mod 4, the partials added as (p0 + p1) + (p2 + p3); 0 for an empty bin), so the
 * decoded tensor keeps the sum of x up to the rounding of the means. Decode:
 * out = means[bin].
 *   params[0] = Q. section 0: Q float32 means; section 1: n indices, uint8 if Q <= 256
 *   else uint16. Size: 56 + 4Q + n*(Q <= 256 ? 1 : 2) bytes.
 * `work` holds dr_sketch_workspace_size(n, bins) bytes, aligned for a double (DR_E_ARG if
 * NULL or misaligned). Both size functions return 0 for bins outside 1..DR_SKETCH_MAX_BINS.
 * DR_E_NUMERIC if x holds Inf/NaN. */
#define DR_SKETCH_MAX_BINS 65536
#define DR_SKETCH_SAMPLE 65536
size_t dr_sketch_workspace_size(size_t n, uint32_t bins);
size_t dr_sketch_size(size_t n, uint32_t bins);
int dr_sketch_encode(const float *x, size_t n, uint32_t bins, uint64_t key, uint8_t dtype,
                     void *work, uint8_t *buf, size_t cap, size_t *written);
int dr_sketch_decode(const uint8_t *buf, size_t len, float *out, size_t n);

#endif /* DEEPREDUCE_QUANT_H */
