/* Internal: run a range of independent work items on dr_thread_count() threads. */
#ifndef DR_PARALLEL_H
#define DR_PARALLEL_H

#include <stddef.h>

/* fn(ctx, begin, end) over [0, count) cut into `parts` contiguous ranges (parts =
 * min(threads, count)); ranges 1.. run on new threads, range 0 on the caller's, and all
 * are joined before the return. A range whose thread cannot start runs on the caller's.
 * Returns the status of the first range (in order) whose fn failed, else DR_OK, so the
 * result does not depend on timing. */
int dr_parallel_for(size_t count, int threads, int (*fn)(void *ctx, size_t begin, size_t end),
                    void *ctx);

/* The threads a kernel splitting `amount` units of work gives them: dr_thread_count(), but
 * no more than one per `per_thread` units (at least 1), so that each thread's share
 * outweighs the cost of starting it. */
int dr_threads_for(size_t amount, size_t per_thread);

#endif
