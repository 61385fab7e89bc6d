/* libFuzzer target: every index and value section decoder on its own, without a frame
 * around it, and the permutation section's read and check. Input: a 20-byte header
 * (selector u8: index codecs 0..DR_INDEX_COUNT_-1, then value codecs, then
 * PERMUTATION; three bytes unused; d u32 capped at FUZZ_MAX_NUMEL; r u32 taken mod
 * d + 1; params u32 p_a, u32 p_b) and then the section. Bloom runs the receiver's
 * bounded rebuild. FUZZ_ONLY=<selector> pins the codec. */
#include "fuzz_common.h"

#define SECTION_HEADER 20u
#define PERMUTATION (DR_INDEX_COUNT_ + DR_VALUE_COUNT_) /* the last selector */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t d, r;
    int codec;
    uint32_t pa, pb, *idx, *scratch;
    float *val;
    if (size < SECTION_HEADER)
        return 0;
    codec = (fuzz_only >= 0 ? fuzz_only : data[0]) % (PERMUTATION + 1);
    d = fuzz_get_u32(data + 4) % (FUZZ_MAX_NUMEL + 1);
    r = fuzz_get_u32(data + 8) % (d + 1);
    pa = fuzz_get_u32(data + 12);
    pb = fuzz_get_u32(data + 16);
    idx = malloc((d ? d : 1) * sizeof *idx);
    scratch = malloc((d ? d : 1) * sizeof *scratch);
    val = malloc((d ? d : 1) * sizeof *val);
    if (idx != NULL && scratch != NULL && val != NULL) {
        const uint8_t *in = data + SECTION_HEADER;
        size_t len = size - SECTION_HEADER;
        if (codec < DR_INDEX_COUNT_)
            fuzz_index_section(codec, in, len, d, r, pa, pb, idx, scratch);
        else if (codec == PERMUTATION)
            fuzz_permutation_section(in, len, r, idx);
        else
            fuzz_value_section(codec - DR_INDEX_COUNT_, in, len, r, pa, pb, val);
    }
    free(idx);
    free(scratch);
    free(val);
    return 0;
}
