/*
 * deepreduce/value.h - DeepReduce value codecs (polyfit, dexp, deflate, qsgd, fp16, bf16).
 */
#ifndef DEEPREDUCE_VALUE_H
#define DEEPREDUCE_VALUE_H

#endif /* DEEPREDUCE_VALUE_H */
