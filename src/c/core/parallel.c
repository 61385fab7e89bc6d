/* A fork-join over contiguous ranges with POSIX threads: no pool and no global state, so
 * nothing is left running between calls; starting a thread costs tens of microseconds,
 * which only the large tensors that use this can afford.
 *
 * On Linux each new thread starts on a CPU other than the caller's. Left to itself, the
 * scheduler often places a thread created by a caller that has just woken (after waiting
 * on the network, say) on the caller's own CPU, where it waits until the caller blocks in
 * the join: the "parallel" ranges then run one after the other. On the 2-core
 * development VM that happened to 172-183 of 200 threads started after a 5 ms sleep,
 * each waiting out the caller's whole range (3 ms there). So each thread is created with
 * the caller's CPU masked out of its affinity, and puts the caller's full mask back as
 * soon as it runs, so that it may still move later (Linux with glibc; see
 * DR_STEER_THREADS). */
#if defined(__linux__)
#define _GNU_SOURCE /* sched_getaffinity, sched_getcpu, CPU_* and the pthread affinity calls */
#include <sched.h>
#else
#define _POSIX_C_SOURCE 200112L
#endif
#include "deepreduce.h"
#include "parallel.h"

#include <ctype.h>
#include <stdlib.h>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <unistd.h>
#define DR_HAVE_PTHREADS 1
#else
#define DR_HAVE_PTHREADS 0
#endif

/* Starting threads away from the caller's CPU (see the top of this file) takes glibc's
 * pthread_attr_setaffinity_np, which musl and bionic lack: elsewhere threads start
 * wherever the scheduler puts them. */
#if DR_HAVE_PTHREADS && defined(__linux__) && defined(__GLIBC__)
#define DR_STEER_THREADS 1
#else
#define DR_STEER_THREADS 0
#endif

#if DR_HAVE_PTHREADS
/* The cores this process may run on (its affinity mask, as torch and NumPy's BLAS size
 * their pools), else the online cores, capped at DR_DEFAULT_THREADS_CAP. */
static int allowed_cores(void)
{
    long cores;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cores = CPU_COUNT(&set);
    else
#endif
        cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        return 1;
    return cores > DR_DEFAULT_THREADS_CAP ? DR_DEFAULT_THREADS_CAP : (int)cores;
}

/* OpenMP's thread count from OMP_NUM_THREADS (its first level: "4" or "4,2", blanks
 * around it allowed, as libgomp reads it), which torch and NumPy's BLAS follow and
 * torchrun sets to 1 for each of several workers on a node; 0 when it is unset or not a
 * count. */
static long openmp_threads(void)
{
    const char *v = getenv("OMP_NUM_THREADS");
    char *end;
    long t;
    if (v == NULL)
        return 0;
    t = strtol(v, &end, 10);
    if (end == v)
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    return (*end == '\0' || *end == ',') && t >= 1 ? t : 0;
}
#endif

int dr_thread_count(void)
{
#if DR_HAVE_PTHREADS
    const char *v = getenv("DEEPREDUCE_THREADS");
    char *end;
    long t;
    if (v == NULL) {
        long omp = openmp_threads();
        int cores = allowed_cores();
        return omp > 0 && omp < cores ? (int)omp : cores;
    }
    t = strtol(v, &end, 10);
    if (end == v || *end != '\0' || t < 1 || t > DR_MAX_THREADS)
        return 1;
    return (int)t;
#else
    return 1;
#endif
}

int dr_threads_for(size_t amount, size_t per_thread)
{
    size_t most = per_thread == 0 ? amount : amount / per_thread;
    int threads;
    if (most <= 1)
        return 1;
    threads = dr_thread_count();
    return most < (size_t)threads ? (int)most : threads;
}

typedef struct {
    int (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
    size_t begin, end;
    int status;
#if DR_STEER_THREADS
    const cpu_set_t *restore; /* the caller's affinity, for a thread started away from it */
#endif
} dr_range_job;

static void *run_job(void *arg)
{
    dr_range_job *job = (dr_range_job *)arg;
#if DR_STEER_THREADS
    if (job->restore != NULL)
        pthread_setaffinity_np(pthread_self(), sizeof *job->restore, job->restore);
#endif
    job->status = job->fn(job->ctx, job->begin, job->end);
    return NULL;
}

#if DR_HAVE_PTHREADS
/* Where new threads start: with DR_STEER_THREADS, the caller's CPUs but the one it runs
 * on (see the top of this file); otherwise, or when the caller may run on one CPU only,
 * wherever the scheduler puts them. */
typedef struct {
    int steer; /* attr is set up, its affinity `caller` less the caller's CPU */
#if DR_STEER_THREADS
    pthread_attr_t attr;
    cpu_set_t caller; /* what each thread puts back (the attr keeps its own copy of the rest) */
#endif
} thread_placement;

static void placement_init(thread_placement *pl)
{
    pl->steer = 0;
#if DR_STEER_THREADS
    if (pthread_getaffinity_np(pthread_self(), sizeof pl->caller, &pl->caller) == 0) {
        int here = sched_getcpu();
        if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(here, &pl->caller)) {
            cpu_set_t away = pl->caller;
            CPU_CLR(here, &away);
            if (CPU_COUNT(&away) > 0 && pthread_attr_init(&pl->attr) == 0) {
                pl->steer = pthread_attr_setaffinity_np(&pl->attr, sizeof away, &away) == 0;
                if (!pl->steer)
                    pthread_attr_destroy(&pl->attr);
            }
        }
    }
#endif
}

/* Starts job on a new thread placed by pl (or, if that start fails, with the default
 * attributes); nonzero when a thread was started. */
static int placement_start(thread_placement *pl, pthread_t *id, dr_range_job *job)
{
#if DR_STEER_THREADS
    if (pl->steer) {
        job->restore = &pl->caller;
        if (pthread_create(id, &pl->attr, run_job, job) == 0)
            return 1;
        /* Whatever refused it (a mask the system will not take, say) would refuse the
         * next thread too: the rest of this call starts threads the default way. */
        job->restore = NULL;
        pthread_attr_destroy(&pl->attr);
        pl->steer = 0;
    }
#else
    (void)pl;
#endif
    return pthread_create(id, NULL, run_job, job) == 0;
}

static void placement_destroy(thread_placement *pl)
{
#if DR_STEER_THREADS
    if (pl->steer)
        pthread_attr_destroy(&pl->attr);
#else
    (void)pl;
#endif
}
#endif

int dr_parallel_for(size_t count, int threads, int (*fn)(void *ctx, size_t begin, size_t end),
                    void *ctx)
{
    dr_range_job jobs[DR_MAX_THREADS];
#if DR_HAVE_PTHREADS
    pthread_t ids[DR_MAX_THREADS];
    int started[DR_MAX_THREADS];
    thread_placement placement;
#endif
    size_t parts, p;
    if (threads < 1)
        threads = 1;
    if (threads > DR_MAX_THREADS)
        threads = DR_MAX_THREADS;
    parts = count < (size_t)threads ? count : (size_t)threads;
    if (parts <= 1)
        return count == 0 ? DR_OK : fn(ctx, 0, count);
    for (p = 0; p < parts; p++) {
        jobs[p].fn = fn;
        jobs[p].ctx = ctx;
        jobs[p].begin = count / parts * p + (p < count % parts ? p : count % parts);
        jobs[p].end = jobs[p].begin + count / parts + (p < count % parts);
        jobs[p].status = DR_OK;
#if DR_STEER_THREADS
        jobs[p].restore = NULL;
#endif
    }
#if DR_HAVE_PTHREADS
    placement_init(&placement);
    for (p = 1; p < parts; p++)
        started[p] = placement_start(&placement, &ids[p], &jobs[p]);
    run_job(&jobs[0]);
    for (p = 1; p < parts; p++) {
        if (started[p])
            pthread_join(ids[p], NULL);
        else
            run_job(&jobs[p]);
    }
    placement_destroy(&placement);
#else
    for (p = 0; p < parts; p++)
        run_job(&jobs[p]);
#endif
    for (p = 0; p < parts; p++)
        if (jobs[p].status != DR_OK)
            return jobs[p].status;
    return DR_OK;
}
