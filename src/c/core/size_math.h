/* Internal: sums and products of sizes that saturate at SIZE_MAX.
 *
 * A size or bound function (dr_qsgd_size, dr_topk_workspace_size, ...) asked about an n
 * no buffer could hold answers SIZE_MAX, which no allocation satisfies, rather than the
 * small number its arithmetic would wrap to. (The index codecs compute in uint64_t and
 * saturate with dr_sat_size; these are for the size_t arithmetic of the others.) */
#ifndef DR_SIZE_MATH_H
#define DR_SIZE_MATH_H

#include <stddef.h>
#include <stdint.h>

static inline size_t dr_size_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static inline size_t dr_size_mul(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

#endif
