/* Internal: the AVX2 bit unpacker. It unpacks a prefix of whole groups of 8 fields
 * (bits <= 25) of in[0..len) into out and returns how many fields it did; the caller
 * finishes the rest with the scalar code. Its step is here too, for kernels that unpack
 * fields as they use them (the unary decoders, unary_avx2.c). */
#ifndef DR_BITPACK_SIMD_H
#define DR_BITPACK_SIMD_H

#include "simd_config.h"

#include <stddef.h>
#include <stdint.h>

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

size_t dr_bitunpack_avx2(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out);

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

/* The groups of fields of `bits` bits from in[0] on whose two windows lie inside
 * in[0..len): the unpacker's loads read up to byte half + 16 of a group. */
static inline size_t dr_unpack8_groups(size_t len, unsigned bits, size_t half)
{
    return len < half + 16u ? 0 : (len - half - 16u) / bits + 1u;
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
#endif

#endif
