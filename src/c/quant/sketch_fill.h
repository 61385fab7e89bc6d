/* Internal: the quantile sketch itself, shared by the sketch compressor, the sketch
 * value section (sketch.c) and SKCompress's values (value/skcompress.c). */
#ifndef DR_SKETCH_FILL_H
#define DR_SKETCH_FILL_H

#include "deepreduce.h"

/* The sketch of x[0..n) in `bins` quantile bins (1..DR_SKETCH_MAX_BINS), as
 * dr_sketch_encode describes it: bin indices to index[0..n * width) (width 1 when
 * bins <= 256, else 2, little-endian), bin means as float32 LE to means[0..4 bins).
 * `work` is dr_sketch_workspace_size(n, bins) bytes aligned for a double; `key` draws
 * the quantile sample when n > DR_SKETCH_SAMPLE. DR_E_NUMERIC if a mean is not finite
 * (x held Inf/NaN). */
int dr_sketch_fill(const float *x, size_t n, uint32_t bins, uint64_t key, void *work,
                   uint8_t *means, uint8_t *index);

#endif
