/*
 * deepreduce/index.h - DeepReduce index codecs (bloom, rle, huffman, ef, rice, varint).
 */
#ifndef DEEPREDUCE_INDEX_H
#define DEEPREDUCE_INDEX_H

#endif /* DEEPREDUCE_INDEX_H */
