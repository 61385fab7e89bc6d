/* Internal: the AVX2 and AVX-512 (with VBMI) bit unpackers. Each unpacks a prefix of
 * whole groups of 8 or 16 fields (bits <= 25) of in[0..len) into out and returns how many
 * fields it did; the caller finishes the rest with the scalar code. Their steps are here
 * too, for kernels that unpack fields as they use them (the unary decoders, unary_avx2.c
 * and unary_avx512.c). */
#ifndef DR_BITPACK_SIMD_H
#define DR_BITPACK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

/* dr_bitunpack's work without its checks or its SIMD: for callers that checked the
 * section (len >= dr_bitpack_size(n, bits), bits <= 32) and unpack a few fields, where
 * reading the SIMD level (an environment lookup) would cost more than the fields. */
void dr_bitunpack_scalar(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

size_t dr_bitunpack_avx2(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);
size_t dr_bitunpack_vbmi(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);

/* How the unpacker takes a group of 8 fields of `bits` bits (1..25), which starts on a
 * byte: fields 0-3 lie in the group's first 16 bytes, fields 4-7 in the 16 bytes from
 * byte `half` = (4 bits) / 8 on; a byte shuffle puts each field's 4 bytes in its lane,
 * and a per-lane shift and a mask finish it. */
typedef struct {
    uint8_t control[32]; /* the byte shuffle */
    uint32_t shift[8];   /* each lane's shift */
    uint32_t mask;       /* 2^bits - 1 */
    size_t half;
} dr_unpack8_plan;

/* The plan for fields of `bits` bits, 1..25 (bitpack_avx2.c). */
void dr_unpack8_plan_make(dr_unpack8_plan *plan, unsigned bits);

/* The groups of 8 fields of `bits` bits from in[0] on (group g at byte g bits) from
 * which an unpacker whose reads end 16 bytes after byte `last` of the group stays inside
 * in[0..len): `last` is the 8-field plan's half, or DR_UNPACK16_LAST. */
static inline size_t dr_unpack8_groups(size_t len, unsigned bits, size_t last)
{
    return len < last + 16u ? 0 : (len - last - 16u) / bits + 1u;
}

/* The 8 fields of the group at `group`, one per lane (shuffle, shifts and mask loaded
 * from the plan), reading the group's two windows. */
DR_TARGET_AVX2 static inline __m256i dr_unpack8_avx2(const uint8_t *group, size_t half, __m256i shuffle,
                                                     __m256i shifts, __m256i mask)
{
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)group)),
                                        _mm_loadu_si128((const __m128i *)(const void *)(group + half)), 1);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuffle), shifts), mask);
}

/* How the AVX-512 unpacker takes 16 fields of `bits` bits (1..25) from a byte: one
 * 64-byte window (16 fields of 25 bits span 50 bytes), each field's 4 bytes put in its
 * lane by one byte permute across the register (VBMI's VPERMB, where AVX2 takes two
 * windows, an insert and an in-lane shuffle for 8), then a per-lane shift and a mask. */
typedef struct {
    uint8_t control[64]; /* the byte permute */
    uint32_t shift[16];  /* each lane's shift */
    uint32_t mask;       /* 2^bits - 1 */
} dr_unpack16_plan;

/* The window's last 16 bytes start here: dr_unpack8_groups(len, bits,
 * DR_UNPACK16_LAST) counts the groups of 8 fields from which the window lies inside. */
#define DR_UNPACK16_LAST 48u

/* The plan for fields of `bits` bits, 1..25 (bitpack_avx512.c). */
void dr_unpack16_plan_make(dr_unpack16_plan *plan, unsigned bits);

/* The 16 fields from `at` (a byte where a field starts), one per lane (control, shifts
 * and mask loaded from the plan), reading at[0..64). AVX-512 with VBMI. */
DR_TARGET_AVX512_VBMI static inline __m512i dr_unpack16_vbmi(const uint8_t *at, __m512i control, __m512i shifts,
                                                             __m512i mask)
{
    __m512i v = _mm512_permutexvar_epi8(control, _mm512_loadu_si512((const void *)at));
    return _mm512_and_si512(_mm512_srlv_epi32(v, shifts), mask);
}
#endif

#endif
