/* AVX-512 bit unpacking with VBMI, 16 fields per step from one 64-byte window
 * (bitpack_simd.h). A step of 16 fields starts on a byte (16 bits bits), so the plan is
 * fixed by `bits` alone. */
#include "deepreduce.h"
#include "bitpack_simd.h"
#include "stream_simd.h"

#if DR_HAVE_X86_SIMD
void dr_unpack16_plan_make(dr_unpack16_plan *plan, unsigned bits)
{
    unsigned k, b;
    plan->mask = (1u << bits) - 1u;
    for (k = 0; k < 16u; k++) {
        /* Field k's first byte: at most 15 25 / 8 = 46, so its 4 bytes lie in the 64. */
        for (b = 0; b < 4u; b++)
            plan->control[4u * k + b] = (uint8_t)((k * bits) / 8u + b);
        plan->shift[k] = (k * bits) % 8u;
    }
}

/* Steps 0..steps of in (steps >= 1) into out[0..16 steps) with whole 64-byte lines
 * streamed: the fields before out's first line start by a masked store, then each line
 * from two steps' fields (stream_simd.h), one aligned streamed store per line, where
 * 16-byte streamed stores of unaligned steps split each line in four. Returns the
 * fields written, lead + 16 (steps - 1). */
DR_TARGET_AVX512_VBMI static size_t unpack_lines(const uint8_t *in, size_t steps, unsigned bits, uint32_t *out,
                                                 size_t lead, __m512i control, __m512i shifts, __m512i mask)
{
    const __m512i from_two = dr_line_order_avx512(lead);
    __m512i before = dr_unpack16_vbmi(in, control, shifts, mask);
    float *lines = (float *)(void *)out; /* stream_simd.h's helpers name 32-bit fields floats */
    size_t s;
    dr_stream_head_avx512(lines, lead, from_two, before);
    for (s = 1; s < steps; s++) {
        __m512i now = dr_unpack16_vbmi(in + 2u * bits * s, control, shifts, mask);
        dr_stream_line_avx512(lines, 16u * s, lead, from_two, before, now);
        before = now;
    }
    dr_stream_fence();
    return lead + 16u * (steps - 1u);
}

DR_TARGET_AVX512_VBMI size_t dr_bitunpack_vbmi(const uint8_t *in, size_t len, size_t n, unsigned bits,
                                               uint32_t *out)
{
    dr_unpack16_plan plan;
    size_t s, steps;
    __m512i control, shifts, mask;
    if (bits == 0 || bits > 25u)
        return 0;
    dr_unpack16_plan_make(&plan, bits);
    control = _mm512_loadu_si512((const void *)plan.control);
    shifts = _mm512_loadu_si512((const void *)plan.shift);
    mask = _mm512_set1_epi32((int)plan.mask);
    /* Step s reads from the group of 8 fields 2 s on. */
    steps = (dr_unpack8_groups(len, bits, DR_UNPACK16_LAST) + 1u) / 2u;
    if (steps > n / 16u)
        steps = n / 16u;
    /* A large output goes past the caches, as the AVX2 unpacker's (bitpack_avx2.c). */
    if (steps > 0 && dr_stream_output((const float *)(const void *)out, n))
        return unpack_lines(in, steps, bits, out, dr_stream_lead((const float *)(const void *)out, n), control,
                            shifts, mask);
    for (s = 0; s < steps; s++)
        _mm512_storeu_si512((void *)(out + 16u * s), dr_unpack16_vbmi(in + 2u * bits * s, control, shifts, mask));
    return 16u * steps;
}
#endif
