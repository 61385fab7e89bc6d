/* The lossless index codecs behind one signature, for the programs that run them all:
 * tests/c/test_index.c and benchmarks/c/bench_index.c. */
#ifndef DR_TEST_INDEX_CODECS_H
#define DR_TEST_INDEX_CODECS_H

#include "deepreduce.h"

typedef struct {
    const char *name;
    size_t (*bound)(size_t d, size_t r);
    int (*encode)(const uint32_t *idx, size_t r, size_t d, uint8_t *out, size_t cap,
                  size_t *written);
    int (*decode)(const uint8_t *in, size_t len, size_t d, size_t r, uint32_t *idx_out);
} codec;

static const codec codecs[] = {
    {"rle", dr_index_rle_bound, dr_index_rle_encode, dr_index_rle_decode},
    {"huffman", dr_index_huffman_bound, dr_index_huffman_encode, dr_index_huffman_decode},
    {"ef", dr_index_ef_bound, dr_index_ef_encode, dr_index_ef_decode},
    {"rice", dr_index_rice_bound, dr_index_rice_encode, dr_index_rice_decode},
    {"varint", dr_index_varint_bound, dr_index_varint_encode, dr_index_varint_decode},
    {"skcompress", dr_index_skcompress_bound, dr_index_skcompress_encode,
     dr_index_skcompress_decode},
};
#define NCODECS (sizeof codecs / sizeof codecs[0])

#endif
