/* Internal: the vector variants of dr_randomk's two sweeps over its bitmap (bit i of word
 * w says whether index 64w + i is drawn).
 *
 * The draw: word w of a dense draw has bit i set when dr_rng_u32(key, 64w + i) is below
 * `threshold`; a register of 4 (NEON), 8 (AVX2) or 16 (AVX-512) draws and one unsigned
 * compare give 4, 8 or 16 of its bits, where the scalar loop takes a hash and a compare per bit.
 * Fills words [first, end), each of 64 indices below 2^32 (the caller keeps a last,
 * partial word for the scalar code).
 *
 * The write-out: the indices of the set bits of words [first, end), ascending, to
 * idx[0..), lanes 64w + 0..63 compressed (AVX-512) or permuted by dr_pack_lanes8 (AVX2) to
 * the front and stored whole; with x (not NULL), their values x[i] to val[0..) the same
 * way, and *top raised to the largest magnitude key (float bits less the sign) of every
 * x[i] the words cover, drawn or not (0x7f800000 or more: an Inf or a NaN). A store
 * covers 16 or 8 entries past the count, so the kernels stop before a word whose entries
 * could reach `room`, and return how many words they wrote out; *count is how many
 * entries they wrote. Words holding indices at or past n take the scalar code (x is
 * read a whole word at a time). */
#ifndef DR_RANDOMK_SIMD_H
#define DR_RANDOMK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
void dr_randomk_draw_avx2(uint64_t key, size_t first, size_t end, uint32_t threshold, uint64_t *bits);
void dr_randomk_draw_avx512(uint64_t key, size_t first, size_t end, uint32_t threshold, uint64_t *bits);
size_t dr_randomk_write_avx2(const uint64_t *bits, size_t first, size_t end, const float *x, uint32_t *idx,
                             float *val, size_t room, size_t *count, uint32_t *top);
size_t dr_randomk_write_avx512(const uint64_t *bits, size_t first, size_t end, const float *x, uint32_t *idx,
                               float *val, size_t room, size_t *count, uint32_t *top);
#endif

#if DR_HAVE_NEON
void dr_randomk_draw_neon(uint64_t key, size_t first, size_t end, uint32_t threshold, uint64_t *bits);
#endif

#endif
