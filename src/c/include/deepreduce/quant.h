/*
 * deepreduce/quant.h - quantisers of the GRACE compressors (qsgd, terngrad, sign/onebit packing, natural, 8-bit, ...).
 */
#ifndef DEEPREDUCE_QUANT_H
#define DEEPREDUCE_QUANT_H

#endif /* DEEPREDUCE_QUANT_H */
