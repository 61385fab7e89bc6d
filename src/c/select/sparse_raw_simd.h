/* Internal: the raw sparse frame's bitmap decoded with AVX-512 (sparse_raw.c holds the
 * portable code). */
#ifndef DR_SPARSE_RAW_SIMD_H
#define DR_SPARSE_RAW_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* How a decoder writes a frame's entries into dense. */
enum {
    DR_APPLY_WRITE,           /* dense[idx] = val */
    DR_APPLY_ADD,             /* dense[idx] += val */
    DR_APPLY_ZERO_THEN_WRITE  /* dense = 0, then dense[idx] = val */
};

#if DR_HAVE_X86_SIMD
/* ORs the bits of idx[0..m) into the bitmap bits[0..len) (bit i at bit i % 8 of byte
 * i / 8), for the longest m, a multiple of 16, whose indices ascend strictly and lie in
 * the whole 32-bit words of bits (below 32 floor(len / 4)). Returns m: the caller takes
 * the rest, and refuses what stopped the kernel. */
size_t dr_bitmap_set_avx512(const uint32_t *idx, size_t r, size_t len, uint8_t *bits);

/* dr_bitmap_set_avx512 with AVX2, for m a multiple of 8. */
size_t dr_bitmap_set_avx2(const uint32_t *idx, size_t r, size_t len, uint8_t *bits);

/* The entries of the bitmap `bits` (position i of the dense tensor's n at bit i % 8 of
 * byte i / 8) at positions [0, m), m = n less n % 16, written into dense as `mode` says,
 * their values read in order from *values (float32, little-endian), which is left past
 * the last one taken. Sets *nonfinite where an added sum is an Inf or a NaN
 * (DR_APPLY_ADD). The same bits as sparse_raw.c's apply_bitmap; the caller has checked
 * the bitmap (no more bits set than there are values). `stream`: DR_APPLY_ZERO_THEN_WRITE
 * writes dense past the caches (dense 16-byte aligned; the caller fences after). Returns
 * m. */
size_t dr_bitmap_apply_avx512(const uint8_t *bits, size_t n, float *dense, int mode, const uint8_t **values,
                              uint32_t *nonfinite, int stream);

/* dr_bitmap_apply_avx512 with AVX2, for m = n less n % 8. */
size_t dr_bitmap_apply_avx2(const uint8_t *bits, size_t n, float *dense, int mode, const uint8_t **values,
                            uint32_t *nonfinite, int stream);
#endif

#endif
