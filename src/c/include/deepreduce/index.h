/*
 * deepreduce/index.h - DeepReduce index codecs: bit packing, and the codecs that replace
 * the index list of a sparse tensor (bloom, rle, huffman, ef, rice, varint, skcompress).
 *
 * Sections. Every codec here reads or writes one frame *section*. The frame header
 * already carries d (numel) and r (count), so a section never repeats them: encoders
 * and decoders are both handed d and r.
 *
 * Conventions shared by every function in this file:
 *   - An index set is r strictly ascending uint32 values, each < d, with d <= 2^32.
 *     An encoder handed anything else (unsorted, repeated, out of range, r > d) returns
 *     DR_E_ARG, having written nothing past out[cap) (ef and rice check the set as they
 *     sweep it, so out[0..cap) may then hold part of a section). An encoder returns
 *     DR_E_DST_TOO_SMALL, writing nothing, when `cap` is below the exact size it needs
 *     (never more than the codec's *_bound(d, r)), and stores the section length in
 *     *written on success. *_bound(d, r) is 0 for r > d.
 *   - A lossless decoder returns DR_OK only if the section decodes to exactly r strictly
 *     ascending indices < d and uses exactly `len` bytes, padding bits zero; otherwise
 *     DR_E_CORRUPT, with idx_out[0..r) unspecified. It never reads outside in[0..len)
 *     nor writes outside idx_out[0..r), whatever the bytes. (A section carries no
 *     checksum of its own: the frame CRC protects it. These checks are what keeps a
 *     decoder safe on any input, and make each encoding canonical.)
 *   - Bit streams are LSB-first: stream bit t is bit (t % 8) of byte t / 8, and a field
 *     of w bits is stored least significant bit first. The last byte is zero-padded.
 *   - Integers stored in a section are little-endian.
 *   - No allocation: scratch space is the caller's (see *_workspace_size()).
 */
#ifndef DEEPREDUCE_INDEX_H
#define DEEPREDUCE_INDEX_H

/* ---------------------------------------------------------------------- bit packing */

/* Bits needed to store every value in 0..max_value: ceil(log2(max_value + 1)), so 0 for
 * max_value == 0 (a run of zeros packs into no bytes at all), 1 for 1, 32 for
 * UINT32_MAX. */
unsigned dr_bits_for(uint32_t max_value);

/* Bytes dr_bitpack writes for n values of `bits` bits: ceil(n * bits / 8). bits <= 32.
 * Saturates at SIZE_MAX where the product does not fit a size_t. */
size_t dr_bitpack_size(size_t n, unsigned bits);

/* Pack v[0..n) at `bits` bits each (LSB-first, value j at stream bits [j*bits,
 * (j+1)*bits)) into out[0..dr_bitpack_size(n, bits)); *written gets that size.
 * DR_E_ARG if bits > 32 or a value does not fit in `bits` bits; DR_E_DST_TOO_SMALL if
 * cap is short. Both are checked before anything is written. */
int dr_bitpack(const uint32_t *v, size_t n, unsigned bits, uint8_t *out, size_t cap,
               size_t *written);

/* Unpack n values of `bits` bits from in[0..len) into out[0..n). `len` may exceed what
 * the values take (the packed array can sit in front of other data); padding bits are
 * not inspected. DR_E_ARG if bits > 32; DR_E_CORRUPT if len < dr_bitpack_size(n, bits). */
int dr_bitunpack(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);

/* ---------------------------------------------------------------------- permutations */

/* DR_OK if perm[0..n) holds every value 0..n-1 exactly once, DR_E_CORRUPT if an entry is
 * n or more or repeats. perm ends exactly as it began, whatever the result: entries are
 * first checked to be below n, then marked in place (the top bit of perm[v] records that
 * v was seen, free since n <= 2^31) and every mark is cleared before returning; no
 * scratch is needed, O(n). A caller that wants to name the bad entry can scan perm
 * after a refusal. DR_E_ARG if n > 2^31 or perm is NULL with n > 0. */
int dr_permutation_check(uint32_t *perm, size_t n);

/* ------------------------------------------------------------------------------ rle */
/* Section: u8 width w, u32 run count n, then n run lengths bit-packed at w bits.
 * The runs are those of the 0/1 bitmap of length d, alternating zero-run, one-run, ...
 * and starting with a zero-run, which is 0 when index 0 is selected; every later run is
 * >= 1. w = dr_bits_for(longest run). r = 0 gives the single run [d]; r = d gives
 * [0, d]. */

/* Largest rle section for any r indices < d. */
size_t dr_index_rle_bound(size_t d, size_t r);

/* Also DR_E_ARG when a run would reach 2^32 (only d = 2^32 with r = 0 or r = d). */
int dr_index_rle_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                        size_t *written);

/* Refuses, besides the general checks, a width over 32, more than 2r + 1 runs, and an
 * empty run after the first. */
int dr_index_rle_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out);

/* -------------------------------------------------------------------------- huffman */
/* Section: the bit stream of the Huffman codes of the 4 little-endian bytes of every
 * index, in index order, byte 0 first. No table is sent: both sides build the same code
 * from (d) alone. The symbol weights are the byte frequencies over all four bytes of
 * every integer 0..d-1 (computed in closed form, O(1) in d); bytes of weight 0 get no
 * code. Code lengths come from the two-queue Huffman construction over the symbols
 * sorted by (weight, byte value), taking the leaf on equal weights; codes are then
 * assigned canonically in (length, byte value) order and stored bit-reversed, so the
 * first code bit is the first stream bit. A lone symbol (d = 1) gets the 1-bit code 0.
 * Every symbol weighs at least 1/2048 of the total, which bounds code lengths by 17;
 * d = 36,864 costs 19.73 bits per index on average. Building the code takes a few
 * microseconds and under 16 KB of stack, each call. */

/* Largest huffman section for any r indices < d: ceil(4 * r * longest code / 8). */
size_t dr_index_huffman_bound(size_t d, size_t r);

int dr_index_huffman_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                            size_t *written);

int dr_index_huffman_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                            uint32_t *idx_out);

/* ------------------------------------------------------------------------------- ef */
/* Elias-Fano. Section: u8 l; the low l bits of every index, bit-packed (byte-aligned
 * block of dr_bitpack_size(r, l) bytes); then the upper bit vector: for the j-th index
 * x_j (from 0) a one at bit (x_j >> l) + j, zeros elsewhere, ending with the byte that
 * holds the last one (empty when r = 0). The encoder picks l = floor(log2(d / r)) (0 if
 * r = 0), which minimises the size; the decoder accepts any l <= 32. About
 * 2 + log2(d / r) bits per index: for densities r/d <= 0.1, within 0.6 bit of the
 * floor log2 C(d, r) / r. Decoding is one pass over the upper vector's set bits. */

size_t dr_index_ef_bound(size_t d, size_t r);

/* The largest dr_index_ef_bound(d, r') over r' <= r: what a section of at most r indices
 * needs. The bound itself is not monotone in r (by a byte where l falls). */
size_t dr_index_ef_bound_upto(size_t d, size_t r);

int dr_index_ef_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                       size_t *written);

int dr_index_ef_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out);

/* ----------------------------------------------------------------------------- rice */
/* Golomb-Rice on gaps. Gaps are g_0 = x_0 and g_j = x_j - x_(j-1) - 1 (all >= 0).
 * Section: u8 k; the low k bits of every gap, bit-packed (a byte-aligned block of
 * dr_bitpack_size(r, k) bytes); then the quotients q = g >> k in unary, q zero bits and
 * a one bit per gap (the one of gap j at bit Q_j + j, Q_j = q_0 + ... + q_j), ending
 * with the byte that holds the last one (empty when r = 0). With the codes' parts apart
 * neither decodes by a serial chain from code to code (at most 1 byte more than
 * interleaved codes). The encoder picks the k in 0..31 that minimises the expected size
 * for a uniform random r-subset of d (geometric gaps with ratio 1 - r/d): on such sets of
 * density 0.001 to 0.1 and r >= 368, within 0.125 bit of log2 C(d, r) / r (0.064 at
 * d = 36,864, r = 368; up to 0.12 near density 0.03, where the best power-of-two
 * parameter is furthest from the best Golomb parameter). Every gap costs at least one
 * bit, so very dense sets do better with rle or ef. The decoder accepts any k <= 31. */

size_t dr_index_rice_bound(size_t d, size_t r);

/* The largest dr_index_rice_bound(d, r') over r' <= r: what a section of at most r
 * indices needs. The bound itself is not monotone in r: fewer indices take a larger
 * parameter, and up to hundreds of bytes more. Costs up to 32 bisections of rice_param. */
size_t dr_index_rice_bound_upto(size_t d, size_t r);

int dr_index_rice_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                         size_t *written);

int dr_index_rice_decode(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out);

/* --------------------------------------------------------------------------- varint */
/* The simple baseline. Section: the gaps (as for rice) in unsigned LEB128, 7 bits per
 * byte, low group first, high bit set on every byte but a value's last. The decoder
 * refuses values over 32 bits and overlong forms (a final byte of 0 after others). */

size_t dr_index_varint_bound(size_t d, size_t r);

/* The largest dr_index_varint_bound(d, r') over r' <= r: what a section of at most r
 * indices needs (fewer indices may have longer gaps: the bound is not monotone in r). */
size_t dr_index_varint_bound_upto(size_t d, size_t r);

int dr_index_varint_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                           size_t *written);

int dr_index_varint_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                           uint32_t *idx_out);

/* ----------------------------------------------------------------------- skcompress */
/* SKCompress's keys: delta-binary increments with adaptive, Huffman-coded prefixes.
 * Increments are delta_0 = x_0 and delta_j = x_j - x_(j-1) (>= 1); n_j is the fewest
 * bytes (1..4) that hold delta_j, and its class n_j - 1 gets a canonical prefix code.
 * Section (r > 0; r = 0 is the empty section):
 *     table    1 byte: bits 2c..2c+1 = the code length of class c (0..3; 0 = unused);
 *              a complete code, or one class written as 1 and coded in 0 bits
 *     prefixes the r class codes, LSB-first stream, each code most significant bit
 *              first, zero-padded to a byte (canonical: classes sorted by (length,
 *              class) take consecutive code values)
 *     deltas   each delta_j in n_j little-endian bytes, in key order
 * At density 1% nearly every increment takes one byte and its prefix one bit: the Fig. 8
 * set (d = 36,864, r = 368) costs 1 + 46 + 401 = 448 bytes, 9.7 bits a key (SketchML's
 * fixed 2-bit prefixes: 493). The table is the Huffman lengths of the class counts
 * (ties broken by class), so each key set has exactly one section: the decoder counts
 * the classes it decoded and refuses (DR_E_CORRUPT) any other table, even a complete
 * code that decodes. It also refuses non-minimal byte counts, a zero increment after
 * the first key, keys >= d, set padding bits and stray bytes. */

size_t dr_index_skcompress_bound(size_t d, size_t r);

int dr_index_skcompress_encode(const uint32_t *idx, size_t r, size_t d, uint8_t *out,
                               size_t cap, size_t *written);

int dr_index_skcompress_decode(const uint8_t *in, size_t len, size_t d, size_t r,
                               uint32_t *idx_out);

/* ---------------------------------------------------------------------------- bloom */
/* A Bloom filter of the selected indices (lossy: the receiver learns a superset P of
 * the true set, then a policy picks the indices both sides use).
 * Hash j (0 <= j < k_hash) of index i is dr_murmur3_32(4-byte little-endian i, seed j)
 * mod m_bits; filter bit b is bit (b % 8) of byte b / 8. Padding bits of the last byte
 * are zero. Every index ever inserted is in P: no false negatives. */

#define DR_BLOOM_MAX_HASHES 64 /* largest k_hash accepted (fpr >= 2^-64) */
#define DR_BLOOM_CS_MAX_ROUNDS 8 /* conflict_sets rounds before the leftmost fill */

enum dr_bloom_policy {
    DR_BLOOM_LEFTMOST = 0,      /* the first r of P                              */
    DR_BLOOM_RANDOM = 1,        /* P1: r of P drawn by the keyed generator       */
    DR_BLOOM_P0 = 2,            /* all of P                                      */
    DR_BLOOM_CONFLICT_SETS = 3, /* P2: one member per conflict set, in rounds    */
    DR_BLOOM_NAIVE = 4,         /* BF-Naive: leftmost's set, the values unmoved  */
    DR_BLOOM_POLICY_COUNT_ = 5
};

/* MurmurHash3 x86_32 of key[0..len) (reads the key as little-endian 32-bit blocks, as
 * the reference does on x86). */
uint32_t dr_murmur3_32(const uint8_t *key, size_t len, uint32_t seed);

/* Filter sizing for r indices at false-positive rate fpr (0 < fpr < 1):
 * k_hash = ceil(log2(1/fpr)), m_bits = ceil(log2(1/fpr) * r / ln 2). r = 0 gives
 * m_bits = 0 (an empty filter, whose positive set is empty). DR_E_ARG if fpr is outside
 * (0, 1) or NaN, if k_hash would exceed DR_BLOOM_MAX_HASHES, or m_bits 2^32 - 1.
 * Example: r = 368, fpr = 1e-3 gives k_hash = 10, m_bits = 5291 (662 bytes). */
int dr_bloom_params(size_t r, double fpr, uint32_t *k_hash, uint32_t *m_bits);

/* Bytes of a filter of m_bits bits: ceil(m_bits / 8). */
size_t dr_bloom_size(uint32_t m_bits);

/* Build the filter of idx[0..r) (any order, repeats allowed) in filter_out[0..
 * dr_bloom_size(m_bits)), clearing it first. DR_E_ARG if k_hash is 0 or above
 * DR_BLOOM_MAX_HASHES, or m_bits = 0 while r > 0; DR_E_DST_TOO_SMALL if cap is short. */
int dr_bloom_encode(const uint32_t *idx, size_t r, uint32_t m_bits, uint32_t k_hash,
                    uint8_t *filter_out, size_t cap);

/* The positive set P of a filter over positions 0..d-1: every i whose k_hash bits are
 * all set (testing stops at the first clear bit), ascending. Writes the first
 * min(|P|, cap) members to pos_out and that number to *npos; the scan stops there, so
 * a caller that needs at most cap positives pays for no more (to learn whether |P|
 * exceeds c, pass cap = c + 1). An empty filter (m_bits = 0) has P empty.
 * Decode-cost bound: the scan evaluates at most 4 d + k_hash min(cap, d) + 4096 hashes
 * (plus one block of 512 positions) and returns DR_E_CORRUPT past that. A filter made
 * by dr_bloom_encode with dr_bloom_params' sizing has at most ln 2 of its bits set, so
 * a non-member costs under 3.3 hashes on average and a member k_hash: honest filters
 * stay far inside the budget; a forged filter (all ones, say) is refused in time
 * linear in d, whatever its k_hash. With cap >= d there is no limit at all (the
 * sender's own filter).
 * DR_E_ARG for k_hash 0 or above DR_BLOOM_MAX_HASHES or d > 2^32; DR_E_CORRUPT if
 * len != dr_bloom_size(m_bits) or a padding bit is set. */
int dr_bloom_positives(const uint8_t *filter, size_t len, uint32_t m_bits, uint32_t k_hash,
                       size_t d, uint32_t *pos_out, size_t cap, size_t *npos);

/* The receiver's plausibility bound on |P| for a filter that claims to hold r indices
 * of 0..d-1. With B bits of the filter set, a position outside the inserted set is
 * positive with probability q (its k_hash hashes land on j distinct bits, all of them
 * set: computed exactly for uniform hashes), so |P| - r is about Binomial(d - r, q);
 * *limit = min(d, r + 2 mean + 10 sqrt(mean) + 32) with mean = (d - r) q, which an
 * honest filter exceeds with negligible probability. O(len) time, no memory.
 * DR_E_CORRUPT if the filter is invalid (as dr_bloom_positives), if B > r * k_hash (r
 * indices cannot set more bits), if m_bits = 0 while r > 0, or if m_bits is below
 * (k_hash - 1) r / ln 2, smaller than dr_bloom_params makes any filter of r indices and
 * k_hash hashes. Together these keep the set share of an accepted filter near ln 2
 * (at most ln 2 k/(k-1)), so a scan costs about 4 hashes per position and few
 * positions pass all k_hash, whatever k_hash: linear in d with a constant that does not
 * grow with k_hash. DR_E_ARG for k_hash 0 or above DR_BLOOM_MAX_HASHES, d > 2^32 or
 * r > d. */
int dr_bloom_positives_limit(const uint8_t *filter, size_t len, uint32_t m_bits,
                             uint32_t k_hash, size_t d, size_t r, size_t *limit);

/* Scratch bytes dr_bloom_select needs for this policy and |P| = npos (0 for leftmost,
 * naive and p0). The workspace must be aligned as malloc aligns. Bound: random takes
 * dr_randomk_workspace_size(npos); conflict_sets 8 k_hash + 5 bytes per positive
 * (at most 517 with k_hash <= 64) plus 13 bytes per filter bit, plus 12. A receiver
 * bounds npos by dr_bloom_positives_limit first, so a forged filter cannot make it
 * size this for every position of its tensor. */
size_t dr_bloom_select_workspace_size(int policy, size_t npos, uint32_t m_bits,
                                      uint32_t k_hash);

/* Pick the indices both sides use from P = positives[0..npos) (strictly ascending, as
 * dr_bloom_positives gives them). Writes *r_out ascending indices to idx_out, which
 * must not overlap `positives`: *r_out = npos for p0, min(r, npos) otherwise. The
 * result is a pure function of (policy, P, r, m_bits, k_hash, key), so sender and
 * receiver agree: the sender runs positives + select itself to learn the set the
 * receiver will rebuild. `key` (see dr_rng_key) is only read by random and
 * conflict_sets.
 *   leftmost:      positives[0..r).
 *   naive:         positives[0..r), as leftmost. The paper's naive scheme (DeepReduce
 *     §4, Fig. 11) differs on the sender only: it sends the sparsifier's own values in
 *     ascending order of the true set instead of gathering them at this rebuilt set,
 *     so after the first false positive every later value lands on the wrong index.
 *     The policy exists so a frame says which scheme made it.
 *   random (P1):   dr_randomk(key, npos, r) chooses which positions of P to keep.
 *   p0:            all of P.
 *   conflict_sets (P2): H(p) is the set of distinct filter bits of positive p, and the
 *     conflict set of bit b is S_b = {p in P : b in H(p)}. Each bit set by the filter
 *     was set by some true index, which is in P, so every S_b holds a true index.
 *     Round t = 0, 1, ... runs while fewer than min(r, npos) are picked:
 *       1. u_b = number of not-yet-picked members of S_b; bits with u_b = 0 drop out.
 *       2. Visit the remaining bits by ascending u_b; equal u_b in the cyclic order of
 *          bit numbers that starts at o_t = (hi32(dr_rng_u64(key, 2t)) * m_bits) >> 32
 *          (a keyed rotation per round). No bit is marked "hit" at the round start.
 *       3. At bit b: skip it if hit; otherwise pick the c-th (from 0, in ascending
 *          order) unpicked member p of S_b, where
 *          c = (hi32(dr_rng_u64(key, (2t + 1) * 2^32 + b)) * u_b) >> 32,
 *          and mark every bit of H(p) hit. Stop at min(r, npos) picks.
 *     After DR_BLOOM_CS_MAX_ROUNDS rounds, the rest of the picks are the leftmost
 *     positives not yet picked. Small sets first: a set of one is a sure true index;
 *     "hit" keeps a round from picking two positives that explain the same bit. Honest
 *     filters finish in one or two rounds; the cap bounds a forged filter (say all
 *     ones, where each round picks one) to O(DR_BLOOM_CS_MAX_ROUNDS (m_bits +
 *     npos k_hash)) time.
 * DR_E_ARG for an unknown policy, k_hash 0 or above DR_BLOOM_MAX_HASHES, m_bits = 0
 * with npos > 0, positives not strictly ascending, a missing workspace where one is
 * needed, or (conflict_sets) npos * k_hash >= 2^32. */
int dr_bloom_select(int policy, const uint32_t *positives, size_t npos, size_t r,
                    uint32_t m_bits, uint32_t k_hash, uint64_t key, uint32_t *idx_out,
                    size_t *r_out, void *work);

#endif /* DEEPREDUCE_INDEX_H */
