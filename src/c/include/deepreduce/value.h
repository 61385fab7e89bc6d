/*
 * deepreduce/value.h - DeepReduce value codecs (polyfit, dexp, deflate, qsgd, fp16, bf16,
 * sketch, skcompress).
 *
 * A value codec turns the r float32 values of a sparse tensor (in the order the sparsifier
 * produced them, i.e. ascending index) into one frame section, and back. r travels in the
 * frame header (field `count`), so decoders are handed r instead of reading it; codec
 * parameters travel in the frame's params[] and are handed back the same way.
 *
 * Contract shared by every codec below:
 *   - dr_value_X_bound(r, ...) is the largest section encode can write (0 when a parameter
 *     is out of range). encode writes the section to out[0..*written) and returns
 *     DR_E_DST_TOO_SMALL, writing nothing useful, when `cap` is less than it needs.
 *   - Only finite numbers travel. Encoders return DR_E_NUMERIC when an input value is NaN
 *     or infinite; decoders return DR_E_CORRUPT rather than produce a non-finite value.
 *   - Decoders accept a section only if it has exactly the length its layout implies:
 *     shorter gives DR_E_FRAME_SHORT, longer DR_E_FRAME_FIELD, and contents out of range
 *     (a level above s, a padding bit set, a negative norm, ...) give DR_E_CORRUPT. Nothing
 *     is read outside in[0..len) and nothing is written outside val_out[0..r). A decoder
 *     that fails may have written part of val_out.
 *   - r must be below 2^32 (indices and permutations are uint32): DR_E_ARG otherwise.
 *   - Reordering codecs (polyfit, dexp) write perm_out[j] = the input position of the
 *     j-th value in the codec's order, and their decoders return values in that order.
 *     The caller sends the indices permuted by perm, so index j pairs with value j.
 *   - Workspaces are caller-owned, `*_workspace_size()` bytes, aligned to 8 bytes (any
 *     malloc result is); DR_E_ARG if misaligned. No function allocates or keeps state.
 *   - Multi-byte fields are little-endian.
 */
#ifndef DEEPREDUCE_VALUE_H
#define DEEPREDUCE_VALUE_H

/* ---------------------------------------------------------------------------- polyfit */
/* Piecewise polynomial fit of the values sorted in descending order, with free knots
 * (DeepReduce §5, "Fit-Poly").
 *
 * Order: a stable sort by value, largest first; zeros (either sign) come after every
 * positive value and count as non-positive. npos = number of values > 0; the two
 * *sides*, the npos positives and the r - npos others, are cut into pieces apart (the
 * sorted curve jumps where the sign changes).
 *
 * Knots (the encoder's choice; the section lists the pieces, so the decoder needs no
 * rule). On a side y_0..y_{l-1}:
 *   - default, the paper's rule: p = ceil(sqrt(2 M)) knots, M = |(y_0 - y_1) -
 *     (y_{l-2} - y_{l-1})| (its heuristic from the bound 2M/p^2 of Lemma 2; M = 0 when
 *     l < 2), at most DR_POLYFIT_MAX_PIECES - 1. Knots are placed one at a time: in the
 *     piece whose point farthest from the chord through the piece's two ends is farthest
 *     of all pieces, at that point (the first of equals), among the points that leave
 *     both parts at least degree + 1 values; no such point ends the cutting early. M is
 *     in the values' own units, so small gradients get one knot per side.
 *   - DR_POLYFIT_KNOTS_REFERENCE, DeepReduce's reference polyfit_cpu (find_breaks with 5
 *     breaks): on the side in ascending magnitude, up to 5 times, cut what follows the
 *     last cut at its point farthest from its own chord, while at least 100 values
 *     remain before and after the cut.
 *
 * Fit: over a piece of n values at positions i = 0..n-1, mapped to t_i = (2i-(n-1))/(n-1)
 * in [-1, 1], least squares on the Gram polynomials (the discrete Chebyshev polynomials,
 * orthogonal on exactly those n points): g_0 = 1, g_1 = t,
 *     g_{k+1}(t) = t*g_k(t) - k^2 (n^2 - k^2) / ((n-1)^2 (4k^2 - 1)) * g_{k-1}(t).
 * Orthogonality makes the fit a projection, c_k = <y, g_k> / <g_k, g_k>, computed in
 * double with no linear system to condition. A piece sends min(degree + 1, n)
 * coefficients: n > degree gives the degree-`degree` least-squares fit, a short piece
 * (n <= degree) the degree n-1 polynomial through its points.
 *
 * Section (w = 8 bytes, or 4 with DR_POLYFIT_COEF_F32):
 *     npos          uint32
 *     kp, kn        uint8 each: pieces of the positive side (0 iff npos = 0) and of the
 *                   other side (0 iff npos = r), each <= DR_POLYFIT_MAX_PIECES
 *     lengths       uint32 each: the length (>= 1) of every piece but each side's last,
 *                   positive side first; the last piece of a side takes the rest (>= 1)
 *     coefficients  w bytes each: float64 (float32), c_0..c_{m-1} of each piece in order
 * Fig. 8 check (d = 36,864, Laplace seed 0, r = 368, npos = 186, degree 5, float32): the
 * paper's rule gives 3 + 1 knots, 6 pieces, 6 + 4 * 4 + 36 * 4 = 166 bytes at a lower
 * error than the reference's fixed 4 segments (200 bytes in float64). Values whose fit
 * exceeds the float32 range are refused as DR_E_CORRUPT.
 */
#define DR_POLYFIT_DEFAULT_DEGREE 5
#define DR_POLYFIT_MAX_DEGREE 15
#define DR_POLYFIT_MAX_PIECES 16        /* per side */
#define DR_POLYFIT_COEF_F32 1           /* flag: float32 coefficients */
#define DR_POLYFIT_KNOTS_REFERENCE 2    /* flag: the reference polyfit_cpu's knots */

/* Largest polyfit section for r values: at most 2 DR_POLYFIT_MAX_PIECES pieces of
 * degree+1 coefficients, never more coefficients than values. 0 if degree >
 * DR_POLYFIT_MAX_DEGREE or flags has bits other than the two flags above. */
size_t dr_value_polyfit_bound(size_t r, uint32_t degree, uint32_t flags);

/* Scratch bytes polyfit encode needs for r values (the radix sort's buffers: 12 r). */
size_t dr_value_polyfit_workspace_size(size_t r);

/* Sort, cut, fit and write the section for val[0..r); perm_out[0..r) receives the
 * descending order. DR_E_ARG for a bad degree/flags or a NULL buffer, DR_E_NUMERIC for a
 * non-finite value or a coefficient that overflows float32. O(r (degree + knots)). */
int dr_value_polyfit_encode(const float *val, size_t r, uint32_t degree, uint32_t flags,
                            uint32_t *perm_out, uint8_t *out, size_t cap, size_t *written,
                            void *work);

/* Evaluate a polyfit section back to r values in descending-sort order (val_out[0..r)).
 * The flags say the coefficient width (the knot flag is accepted and unused). DR_E_CORRUPT
 * if npos > r, a piece count or length is out of range, or a coefficient is not finite. */
int dr_value_polyfit_decode(const uint8_t *in, size_t len, size_t r, uint32_t degree,
                            uint32_t flags, float *val_out);

/* ------------------------------------------------------------------------------- dexp */
/* Double-exponential fit of the magnitudes sorted in ascending order.
 *
 * Order: by |value|, smallest first; equal magnitudes positive before negative, then in
 * input order (a stable sort). Model: y(x) = a e^{p x} + b e^{q x} with x_j = j / (r - 1)
 * in [0, 1], fitted by Jacquelin's regression on the integral equation: with trapezoid
 * integrals S(x) = int y and SS(x) = int S, least squares of y ~ A SS + B S + C x + D
 * (4 unknowns), p < q the roots of l^2 - B l - A = 0, then least squares of
 * y ~ a e^{px} + b e^{qx} (2 unknowns), both by Householder QR in double.
 * Fallback, never an error: when r < 4, the roots are not real and distinct, a system is
 * rank-deficient (e.g. constant values) or anything turns non-finite, and also whenever
 * the fit's squared error is above that of the mean, the section holds the constant mean
 * magnitude (a = mean, b = p = q = 0). Evaluation, the same in encoder and decoder, calls
 * exp() at every 64th x_j and steps by the constant factors e^{p/(r-1)}, e^{q/(r-1)} in
 * between; decoded magnitudes below 0 are clamped to 0.
 *
 * Signs: not in this section. As in the reference (which sends (idx + 1) * sign), they
 * travel on the index side: the caller takes the sign bit of val[perm_out[j]] for the
 * j-th value and sends it with that value's index (docs/deepreduce.md: beside raw
 * indices in value order, or beside each permutation entry); the decoder gives
 * magnitudes, and the caller applies the signs.
 *
 * Section: a, b, p, q as float64, 32 bytes for every r (DeepReduce's four coefficients;
 * Fig. 8 reads 20-32 bytes).
 */

/* Section size for r values (exact): 32, or 0 if r >= 2^32. */
size_t dr_value_dexp_bound(size_t r);

/* Scratch bytes dexp encode needs for r values (12 r). */
size_t dr_value_dexp_workspace_size(size_t r);

/* Sort, fit and write the section; perm_out[0..r) receives the ascending-|value| order.
 * DR_E_NUMERIC only for a non-finite input value. */
int dr_value_dexp_encode(const float *val, size_t r, uint32_t *perm_out, uint8_t *out,
                         size_t cap, size_t *written, void *work);

/* Evaluate a dexp section back to r magnitudes (each >= 0) in codec order. */
int dr_value_dexp_decode(const uint8_t *in, size_t len, size_t r, float *val_out);

/* ---------------------------------------------------------------------------- deflate */
/* zlib (RFC 1950, windowBits 15, memLevel 8) stream of the r float32 values, little-endian.
 * zlib allocates from the caller's workspace through custom zalloc/zfree, never the heap.
 * zlib counts bytes in 32 bits, so r must be below 2^30 here (DR_E_ARG otherwise).
 * The decoder requires the stream to be complete (else DR_E_FRAME_SHORT), to end exactly
 * at len (else DR_E_FRAME_FIELD), and to pass zlib's checks, Adler-32 included, inflate
 * to exactly 4 r bytes and hold only finite values (else DR_E_CORRUPT). It does not cap
 * len at this zlib's compressBound: another zlib (zlib-ng) may expand more. */
#define DR_DEFLATE_DEFAULT_LEVEL 6

/* Largest section this zlib writes for r values (its compressBound of 4 r bytes); 0 if
 * r >= 2^30. */
size_t dr_value_deflate_bound(size_t r);

/* Scratch bytes for encode at `level` and for decode: zlib's deflate state at windowBits 15
 * and memLevel 8 (about 268 KiB in zlib 1.2/1.3) with a margin for zlib-ng, which also
 * covers inflate's. zlib's needs depend on neither argument at these settings; they are
 * taken so callers size for the call they make. If a zlib build wants more, encode and
 * decode return DR_E_ZLIB. */
size_t dr_value_deflate_workspace_size(size_t r, uint32_t level);

/* Compress val[0..r) at level 0..9 (DR_E_ARG otherwise). */
int dr_value_deflate_encode(const float *val, size_t r, uint32_t level, uint8_t *out,
                            size_t cap, size_t *written, void *work);

/* Inflate a section to val_out[0..r); `work` as for encode. */
int dr_value_deflate_decode(const uint8_t *in, size_t len, size_t r, float *val_out,
                            void *work);

/* ------------------------------------------------------------------------------- qsgd */
/* Bucketed stochastic quantisation (QSGD). Values are cut into buckets of bucket_size
 * (the last may be shorter). Per bucket: norm = float32 of the L2 norm (computed in
 * double); each value v gets level = sign(v) * (floor(x) + [u < x - floor(x)]) with
 * x = s |v| / norm, s = quantum_num, and u = dr_rng_uniform(key, j) for the value's
 * position j in the section, so every rank reproduces the draws: E[level] = s v / norm.
 * An all-zero bucket has norm 0 and levels 0. Decoding gives norm * level / s.
 *
 * Section: ceil(r / bucket_size) float32 norms, then r levels, int8 when s < 128 else
 * int16. Fig. 8 check: r = 368, s = 127, bucket 512: 4 + 368 = 372 bytes.
 * The decoder refuses (DR_E_CORRUPT) a norm that is negative or not finite, a level with
 * |level| > s, and a non-zero level in a bucket of norm 0. */
#define DR_QSGD_DEFAULT_BUCKET 512
#define DR_QSGD_DEFAULT_QUANTUM 127
#define DR_QSGD_MAX_QUANTUM 32767

/* Section size for r values (exact); 0 if bucket_size == 0, s is not in
 * 1..DR_QSGD_MAX_QUANTUM, or r >= 2^32. */
size_t dr_value_qsgd_bound(size_t r, uint32_t bucket_size, uint32_t s);

/* Quantise val[0..r). DR_E_ARG for bad parameters, DR_E_NUMERIC for a non-finite value.
 * A bucket of finite values whose norm exceeds FLT_MAX sends FLT_MAX as its norm (still
 * >= every |v|, so the levels stay unbiased). */
int dr_value_qsgd_encode(const float *val, size_t r, uint32_t bucket_size, uint32_t s,
                         uint64_t key, uint8_t *out, size_t cap, size_t *written);

int dr_value_qsgd_decode(const uint8_t *in, size_t len, size_t r, uint32_t bucket_size,
                         uint32_t s, float *val_out);

/* ------------------------------------------------------------------------- fp16, bf16 */
/* Casts to IEEE binary16 / bfloat16 (round to nearest even, dr_f32_to_f16 and
 * dr_f32_to_bf16), 2 bytes per value. Finite values beyond the target's range saturate
 * to its largest finite number instead of becoming infinite; decoders refuse infinities
 * and NaNs. Section: r uint16 little-endian, 2 r bytes. */

/* Section size for r values: 2 r (0 if r >= 2^32). */
size_t dr_value_fp16_bound(size_t r);
int dr_value_fp16_encode(const float *val, size_t r, uint8_t *out, size_t cap,
                         size_t *written);
int dr_value_fp16_decode(const uint8_t *in, size_t len, size_t r, float *val_out);

size_t dr_value_bf16_bound(size_t r);
int dr_value_bf16_encode(const float *val, size_t r, uint8_t *out, size_t cap,
                         size_t *written);
int dr_value_bf16_decode(const uint8_t *in, size_t len, size_t r, float *val_out);

/* ----------------------------------------------------------------------------- sketch */
/* SketchML's quantile sketch of the values (the value side of SKCompress): exactly the
 * compressor dr_sketch_encode (deepreduce/quant.h: `bins` quantile bins of the r values,
 * each value sent as its bin index, each bin as the float32 mean of its members; `key`
 * draws the quantile sample when r > DR_SKETCH_SAMPLE), without its frame. Section: the
 * bins float32 means, then r bin indices, uint8 when bins <= 256 else uint16 LE:
 * 4 bins + r (or 2 r) bytes. Order-preserving. The decoder refuses a non-finite mean and
 * an index >= bins. `work` as dr_sketch_workspace_size(r, bins). */

/* Section size (exact); 0 if bins is outside 1..DR_SKETCH_MAX_BINS or r >= 2^32. */
size_t dr_value_sketch_bound(size_t r, uint32_t bins);

/* DR_E_ARG for bad bins, a NULL buffer or a misaligned workspace, DR_E_NUMERIC for a
 * non-finite value. */
int dr_value_sketch_encode(const float *val, size_t r, uint32_t bins, uint64_t key,
                           uint8_t *out, size_t cap, size_t *written, void *work);

int dr_value_sketch_decode(const uint8_t *in, size_t len, size_t r, uint32_t bins,
                           float *val_out);

/* ------------------------------------------------------------------------- skcompress */
/* SKCompress's values (Jiang et al., VLDB J. 2020): the quantile sketch above (`bins`
 * equal-count buckets of the r values, each value replaced by its bucket's mean; `key`
 * draws the sample when r > DR_SKETCH_SAMPLE), with the bucket indices Huffman-coded
 * and the means stored compactly. Lossless after the sketch: the decoder returns
 * exactly the encoder's quantised values. Order-preserving. SKCompress's MinMaxSketch
 * (a lossy hash table of the indices) is not used.
 *
 * Section (r > 0; r = 0 is the empty section):
 *     scale    float32: the largest |bucket mean| (finite, +0.0 or above)
 *     means    bins int16: bucket j decodes to scale * means[j] / 32767 (-32768 refused)
 *     lengths  bins uint8: the code length of each bucket's index, 0 for an unused
 *              bucket: the Huffman lengths of the bucket counts (ties broken by
 *              bucket, counts raised to at least ceil(r / 65536), so lengths <= 24); a
 *              lone used bucket is written as 1 and coded in 0 bits
 *     codes    the r codes in value order, LSB-first stream, each code most significant
 *              bit first, zero-padded to a byte
 * Canonical codes: buckets sorted by (length, index) take consecutive code values.
 * Size 4 + 3 bins + ceil(bits / 8). Fig. 8 check (r = 368, Laplace top-1%): 4 bins give
 * 2-bit codes, 4 + 12 + 92 = 108 bytes; 2 bins 4 + 6 + 46 = 56 bytes.
 * Each set of quantised values has exactly one section. The decoder refuses with
 * DR_E_CORRUPT: a non-finite or negative scale (-0.0 included); a mean of -32768; a
 * scale of 0 with a non-zero mean, or a scale above 0 where no mean is +-32767 (the
 * bucket at full scale); lengths that are not a valid code, or above 24; and lengths
 * other than those the encoder builds for the bucket counts it decoded (a code for an
 * unused bucket, or a complete code that is not the Huffman code), and set padding
 * bits. Codes running past the end give DR_E_FRAME_SHORT, bytes after the last code
 * DR_E_FRAME_FIELD. */
#define DR_SKCOMPRESS_MAX_BINS 256
#define DR_SKCOMPRESS_DEFAULT_BINS 4

/* Largest section for r values (4 + 3 bins + 3 r; 0 for r = 0); 0 also if bins is outside
 * 1..DR_SKCOMPRESS_MAX_BINS or r >= 2^32. */
size_t dr_value_skcompress_bound(size_t r, uint32_t bins);

/* Scratch bytes for encode (the sketch's workspace, the means and the bucket indices);
 * 0 for bad bins. */
size_t dr_value_skcompress_workspace_size(size_t r, uint32_t bins);

/* Writes the section to out[0..cap) and its size to *written. DR_E_ARG for bad bins, a
 * NULL buffer or misaligned work; DR_E_NUMERIC for a non-finite value;
 * DR_E_DST_TOO_SMALL if cap is below the section's size (cap >= bound always holds it). */
int dr_value_skcompress_encode(const float *val, size_t r, uint32_t bins, uint64_t key,
                               uint8_t *out, size_t cap, size_t *written, void *work);

/* Decodes the section in[0..len) of r values into val_out[0..r); the refusals are those
 * listed in the section's description above. DR_E_ARG for bad bins or a NULL buffer. */
int dr_value_skcompress_decode(const uint8_t *in, size_t len, size_t r, uint32_t bins,
                               float *val_out);

#endif /* DEEPREDUCE_VALUE_H */
