/* Internal: a random sample of a tensor's entries. Not part of the public API. */
#ifndef DR_SAMPLE_H
#define DR_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* sample[j] = x[p_j] for j < m, p_j uniform in [0, n) from word j of `key`'s counter
 * stream (n >= 1, n < 2^32): every rank that knows the key draws the same positions. */
void dr_random_sample(const float *x, size_t n, uint64_t key, float *sample, size_t m);

#endif
