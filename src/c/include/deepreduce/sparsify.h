/*
 * deepreduce/sparsify.h - adaptive sparsifiers of the GRACE set: DGC threshold estimation from a sample,
 * AdaComp-style (adaq) selection.
 */
#ifndef DEEPREDUCE_SPARSIFY_H
#define DEEPREDUCE_SPARSIFY_H

#endif /* DEEPREDUCE_SPARSIFY_H */
