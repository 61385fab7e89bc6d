/* AVX2 bit unpacking, 8 fields per step. A group of 8 fields of `bits` bits starts on a
 * byte boundary (8 * bits bits), so where each field's bytes lie inside the group is
 * fixed by `bits` alone: fields 0-3 lie in the group's first 16 bytes, fields 4-7 in
 * the 16 bytes from byte (4 * bits) / 8 on (bits <= 25 keeps each within its window).
 * One byte shuffle puts each field's 4 bytes in its lane, a per-lane shift and a mask
 * finish it. */
#include "deepreduce.h"
#include "bitpack_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
#include <immintrin.h>

DR_TARGET_AVX2 size_t dr_bitunpack_avx2(const uint8_t *in, size_t len, size_t n, unsigned bits,
                                        uint32_t *out)
{
    uint8_t control[32];
    uint32_t shift[8];
    size_t half = (4u * bits) / 8u, g, groups;
    __m256i shuffle, shifts, mask;
    unsigned k, b;
    int stream;
    if (bits == 0 || bits > 25u || len < half + 16u)
        return 0;
    for (k = 0; k < 8u; k++) {
        unsigned first = (k * bits) / 8u - (k >= 4u ? (unsigned)half : 0u);
        for (b = 0; b < 4u; b++)
            control[4u * k + b] = (uint8_t)(first + b);
        shift[k] = (k * bits) % 8u;
    }
    shuffle = _mm256_loadu_si256((const __m256i *)control);
    shifts = _mm256_loadu_si256((const __m256i *)shift);
    mask = _mm256_set1_epi32((int)((1u << bits) - 1u));
    /* Groups whose second window ends inside the buffer. */
    groups = (len - half - 16u) / bits + 1u;
    if (groups > n / 8u)
        groups = n / 8u;
    /* A large output goes past the caches (dr_stream_output): the unpacking is bound by
     * writing it, and a streamed store spares reading each line first. */
    stream = dr_stream_output((const float *)(const void *)out, n);
    for (g = 0; g < groups; g++) {
        const uint8_t *p = in + g * bits;
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                            _mm_loadu_si128((const __m128i *)(p + half)), 1);
        v = _mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuffle), shifts);
        dr_store8_avx2((float *)(void *)(out + 8u * g), _mm256_castsi256_ps(_mm256_and_si256(v, mask)), stream);
    }
    if (stream)
        dr_stream_fence();
    return 8u * groups;
}
#endif
