/* AVX2 bit unpacking, 8 fields per step. A group of 8 fields of `bits` bits starts on a
 * byte boundary (8 * bits bits), so where each field's bytes lie inside the group is
 * fixed by `bits` alone (bits <= 25 keeps each within its window): the plan of
 * bitpack_simd.h, made once per call. */
#include "deepreduce.h"
#include "bitpack_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
void dr_unpack8_plan_make(dr_unpack8_plan *plan, unsigned bits)
{
    unsigned k, b;
    plan->half = (4u * bits) / 8u;
    plan->mask = (1u << bits) - 1u;
    for (k = 0; k < 8u; k++) {
        unsigned first = (k * bits) / 8u - (k >= 4u ? (unsigned)plan->half : 0u);
        for (b = 0; b < 4u; b++)
            plan->control[4u * k + b] = (uint8_t)(first + b);
        plan->shift[k] = (k * bits) % 8u;
    }
}

DR_TARGET_AVX2 size_t dr_bitunpack_avx2(const uint8_t *in, size_t len, size_t n, unsigned bits,
                                        uint32_t *out)
{
    dr_unpack8_plan plan;
    size_t g, groups;
    __m256i shuffle, shifts, mask;
    int stream;
    if (bits == 0 || bits > 25u)
        return 0;
    dr_unpack8_plan_make(&plan, bits);
    shuffle = _mm256_loadu_si256((const __m256i *)(const void *)plan.control);
    shifts = _mm256_loadu_si256((const __m256i *)(const void *)plan.shift);
    mask = _mm256_set1_epi32((int)plan.mask);
    groups = dr_unpack8_groups(len, bits, plan.half);
    if (groups > n / 8u)
        groups = n / 8u;
    /* A large output goes past the caches (dr_stream_output): the unpacking is bound by
     * writing it, and a streamed store spares reading each line first. */
    stream = dr_stream_output((const float *)(const void *)out, n);
    for (g = 0; g < groups; g++)
        dr_store8_avx2((float *)(void *)(out + 8u * g),
                       _mm256_castsi256_ps(dr_unpack8_avx2(in + g * bits, plan.half, shuffle, shifts, mask)), stream);
    if (stream)
        dr_stream_fence();
    return 8u * groups;
}
#endif
