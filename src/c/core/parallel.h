/* Internal: run a range of independent work items on dr_thread_count() threads, at once
 * or in steps. */
#ifndef DR_PARALLEL_H
#define DR_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

/* fn(ctx, begin, end) over [0, count) cut into `parts` contiguous ranges (parts =
 * min(threads, count)); ranges 1.. run on new threads, range 0 on the caller's, and all
 * are joined before the return. A range whose thread cannot start runs on the caller's.
 * Returns the status of the first range (in order) whose fn failed, else DR_OK, so the
 * result does not depend on timing. */
int dr_parallel_for(size_t count, int threads, int (*fn)(void *ctx, size_t begin, size_t end),
                    void *ctx);

/* Keeps the barrier's step counters below its stop mark (INT_MAX). */
#define DR_PARALLEL_MAX_STEPS 4096

/* Steps in lock step on threads started once: fn(ctx, step, begin, end) over the ranges
 * of dr_parallel_for, for step = 0, 1, ... Between step s and s + 1 (once every range has
 * finished s) the caller's thread alone runs between(ctx, s), when it is not NULL: it may
 * read what every range wrote and set up the next step. The steps end
 *   - after the last (`steps` of them), returning the status of the first range (in
 *     order) whose fn failed at it, else DR_OK;
 *   - after a step at which a range failed, returning that first failure (between is
 *     not run);
 *   - when between returns nonzero, returning what it returned (an error, or a kernel's
 *     own code for "done early": any value but DR_OK).
 * A range whose thread cannot start runs on the caller's thread at every step. With count
 * 0 there are no ranges, and between still runs between the steps. More than
 * DR_PARALLEL_MAX_STEPS steps is DR_E_ARG. A barrier costs well under a
 * microsecond where starting the threads again would cost tens. */
int dr_parallel_steps(size_t count, int threads, int steps,
                      int (*fn)(void *ctx, int step, size_t begin, size_t end),
                      int (*between)(void *ctx, int step), void *ctx);

/* The threads a kernel splitting `amount` units of work gives them: dr_thread_count(), but
 * no more than one per `per_thread` units (at least 1), so that each thread's share
 * outweighs the cost of starting it. */
int dr_threads_for(size_t amount, size_t per_thread);

/* Where share p of `total` units cut into `parts` contiguous shares begins: share p is
 * [dr_share(total, parts, p), dr_share(total, parts, p + 1)), share `parts` ends at
 * total. For kernels that take one part per range of dr_parallel_steps (count = parts),
 * so that a part knows its own index and can keep results per part. */
static inline size_t dr_share(size_t total, size_t parts, size_t p)
{
    return (size_t)((uint64_t)total * p / parts);
}

#endif
