/* Shared by the libFuzzer targets: the receiver's tensor size cap and the receiver's
 * decode of every section codec, written as the Python receivers call the C core. */
#ifndef DEEPREDUCE_FUZZ_COMMON_H
#define DEEPREDUCE_FUZZ_COMMON_H

#include "deepreduce.h"

#include <stdlib.h>
#include <string.h>

/* The receiver's own tensor: at most this many elements (a fuzzed numel above it is
 * decoded against this size, so the decoder sees a mismatch and must refuse). */
#define FUZZ_MAX_NUMEL ((size_t)1 << 16)

/* FUZZ_ONLY=<number> in the environment pins every input to one decoder (the frame's
 * kind for fuzz_frame, the codec selector for fuzz_sections), so a campaign can give
 * each decoder its own count; unset or negative: the input chooses. Read once by
 * LLVMFuzzerInitialize. */
static int fuzz_only = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *only = getenv("FUZZ_ONLY");
    (void)argc;
    (void)argv;
    if (only != NULL && *only != '\0')
        fuzz_only = atoi(only);
    return 0;
}

static uint32_t fuzz_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The receiver's Bloom rebuild (deepreduce/codecs/index.py `rebuild`): the plausibility
 * limit, the bounded scan, then the policy's pick. */
static void fuzz_bloom(const uint8_t *filter, size_t len, uint32_t m_bits, uint32_t k_hash,
                       int policy, size_t d, size_t r, uint32_t *pos, uint32_t *out)
{
    size_t limit = 0, cap, npos = 0, got = 0;
    void *work;
    if (dr_bloom_positives_limit(filter, len, m_bits, k_hash, d, r, &limit) != DR_OK)
        return;
    cap = policy == DR_BLOOM_LEFTMOST || policy == DR_BLOOM_NAIVE ? r : (limit + 1 < d ? limit + 1 : d);
    if (dr_bloom_positives(filter, len, m_bits, k_hash, d, pos, cap, &npos) != DR_OK ||
        npos < r || npos > limit)
        return;
    work = malloc(dr_bloom_select_workspace_size(policy, npos, m_bits, k_hash) + 1);
    if (work != NULL)
        (void)dr_bloom_select(policy, pos, npos, r, m_bits, k_hash, 1, out, &got, work);
    free(work);
}

/* Decode an index section of codec `codec` (enum dr_index_codec) into idx[0..r). */
static void fuzz_index_section(int codec, const uint8_t *in, size_t len, size_t d, size_t r,
                               uint32_t p0, uint32_t p1, uint32_t *idx, uint32_t *scratch)
{
    switch (codec) {
    case DR_INDEX_BLOOM:
        fuzz_bloom(in, len, p0, p1 & 0xffu, (int)((p1 >> 8) % DR_BLOOM_POLICY_COUNT_), d, r,
                   scratch, idx);
        break;
    case DR_INDEX_RLE: (void)dr_index_rle_decode(in, len, d, r, idx); break;
    case DR_INDEX_HUFFMAN: (void)dr_index_huffman_decode(in, len, d, r, idx); break;
    case DR_INDEX_EF: (void)dr_index_ef_decode(in, len, d, r, idx); break;
    case DR_INDEX_RICE: (void)dr_index_rice_decode(in, len, d, r, idx); break;
    case DR_INDEX_VARINT: (void)dr_index_varint_decode(in, len, d, r, idx); break;
    case DR_INDEX_SKCOMPRESS: (void)dr_index_skcompress_decode(in, len, d, r, idx); break;
    default: break;
    }
}

/* The receiver's read of a permutation section (deepreduce/codecs/permutation.py
 * `unpack`): r entries of ceil(log2 r) bits, then the in-place bijection check, which
 * writes into idx. */
static void fuzz_permutation_section(const uint8_t *in, size_t len, size_t r, uint32_t *idx)
{
    if (dr_bitunpack(in, len, r, dr_bits_for(r > 0 ? (uint32_t)(r - 1) : 0u), idx) == DR_OK)
        (void)dr_permutation_check(idx, r);
}

/* Decode a value section of codec `codec` (enum dr_value_codec) into val[0..r). */
static void fuzz_value_section(int codec, const uint8_t *in, size_t len, size_t r, uint32_t p2,
                               uint32_t p3, float *val)
{
    void *work;
    switch (codec) {
    case DR_VALUE_POLYFIT:
        (void)dr_value_polyfit_decode(in, len, r, p2 & 0xffu, p2 >> 8, val);
        break;
    case DR_VALUE_DEXP: (void)dr_value_dexp_decode(in, len, r, val); break;
    case DR_VALUE_DEFLATE:
        work = malloc(dr_value_deflate_workspace_size(r, DR_DEFLATE_DEFAULT_LEVEL));
        if (work != NULL)
            (void)dr_value_deflate_decode(in, len, r, val, work);
        free(work);
        break;
    case DR_VALUE_QSGD: (void)dr_value_qsgd_decode(in, len, r, p3, p2, val); break;
    case DR_VALUE_FP16: (void)dr_value_fp16_decode(in, len, r, val); break;
    case DR_VALUE_BF16: (void)dr_value_bf16_decode(in, len, r, val); break;
    case DR_VALUE_SKETCH: (void)dr_value_sketch_decode(in, len, r, p2, val); break;
    case DR_VALUE_SKCOMPRESS: (void)dr_value_skcompress_decode(in, len, r, p2, val); break;
    default: break;
    }
}

#endif
