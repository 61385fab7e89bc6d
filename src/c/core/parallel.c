/* A fork-join over contiguous ranges with POSIX threads: no pool and no global state, so
 * nothing is left running between calls; starting a thread costs tens of microseconds,
 * which only the large tensors that use this can afford. A kernel with several short
 * phases (top-k's select) runs them as steps of one call, the threads meeting at a
 * barrier between steps instead of being started again for each.
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
#include <limits.h>
#include <stdlib.h>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <time.h>
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
 * their pools), else the online cores; at least 1. */
static long affinity_cores(void)
{
    long cores;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cores = CPU_COUNT(&set);
    else
#endif
        cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores;
}

/* The default thread count's ceiling: affinity_cores(), capped at DR_DEFAULT_THREADS_CAP. */
static int allowed_cores(void)
{
    long cores = affinity_cores();
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

/* What the threads of one call share. The started threads and the caller meet at a
 * barrier between steps through counters (each job's `done`, and `go`), each written by
 * one thread only, under `lock` (with `wake` broadcast), but also polled without it, so
 * every access to them is atomic where the compiler offers atomics. */
typedef struct {
    int (*fn)(void *ctx, int step, size_t begin, size_t end);
    void *ctx;
    int steps;
#if DR_HAVE_PTHREADS
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int go;       /* the started threads may run the steps below it; TEAM_STOP: no more */
    long poll_ns; /* how long a wait polls before it sleeps */
#endif
} dr_team;

typedef struct {
    dr_team *team;
    size_t begin, end;
    int status; /* of the last step its range ran */
    int done;   /* on a started thread: the steps it has finished (but the last, which the
                 * join covers) */
#if DR_STEER_THREADS
    const cpu_set_t *restore; /* the caller's affinity, for a thread started away from it */
#endif
} dr_range_job;

static void run_step(dr_range_job *job, int step)
{
    job->status = job->team->fn(job->team->ctx, step, job->begin, job->end);
}

#if DR_HAVE_PTHREADS
#define TEAM_STOP INT_MAX
#if defined(__GNUC__) || defined(__clang__)
#define TEAM_LOAD(v) __atomic_load_n(&(v), __ATOMIC_ACQUIRE)
#define TEAM_STORE(v, x) __atomic_store_n(&(v), (x), __ATOMIC_RELEASE)
#define TEAM_POLLS 1
#else
#define TEAM_LOAD(v) (v)
#define TEAM_STORE(v, x) ((v) = (x))
#define TEAM_POLLS 0
#endif
/* How long a thread waiting at a barrier polls before it sleeps, when each thread has a
 * core of its own: longer than the caller's turns between top-k's steps and a thread's
 * late start, so that these waits take no system call, and short enough that a long
 * wait wastes little. A sleeping thread costs more than a futex call to wake: on the
 * development VM, a 2.2M-entry top-k on 2 threads after 5 ms asleep took 0.69-0.95 ms
 * (medians of 101) polling 20 us, 0.44-0.49 ms polling this long, and 0.37-0.56 ms with
 * a fork-join per step, as before the steps; two such processes at once, polling this
 * long, ran as fast as with a fork-join per step. With more threads than cores a polling
 * thread would hold a core that a thread it waits for needs, so then waits sleep at
 * once (libgomp likewise cuts its spinning short when it has more threads than CPUs). */
#define TEAM_POLL_NS 100000L

#if TEAM_POLLS
static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
#endif

static void team_set(dr_team *team, int *value, int to)
{
    pthread_mutex_lock(&team->lock);
    TEAM_STORE(*value, to);
    pthread_cond_broadcast(&team->wake);
    pthread_mutex_unlock(&team->lock);
}

/* Waits until *value (one of team's counters) reaches `least`, and returns it. */
static int team_await(dr_team *team, int *value, int least)
{
    int now;
#if TEAM_POLLS
    if (team->poll_ns > 0) {
        struct timespec start, t;
        unsigned polls = 0;
        clock_gettime(CLOCK_MONOTONIC, &start);
        while ((now = TEAM_LOAD(*value)) < least) {
            if (++polls % 64u == 0u) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - start.tv_sec) * 1000000000L + (t.tv_nsec - start.tv_nsec) >= team->poll_ns)
                    break;
            }
            cpu_relax();
        }
        if (now >= least)
            return now;
    }
#endif
    pthread_mutex_lock(&team->lock);
    while ((now = TEAM_LOAD(*value)) < least)
        pthread_cond_wait(&team->wake, &team->lock);
    pthread_mutex_unlock(&team->lock);
    return now;
}

/* A started thread: its range at every step, meeting the caller between steps. */
static void *run_job(void *arg)
{
    dr_range_job *job = (dr_range_job *)arg;
    dr_team *team = job->team;
    int step;
#if DR_STEER_THREADS
    if (job->restore != NULL)
        pthread_setaffinity_np(pthread_self(), sizeof *job->restore, job->restore);
#endif
    for (step = 0;; step++) {
        run_step(job, step);
        if (step + 1 == team->steps)
            break;
        team_set(team, &job->done, step + 1);
        if (team_await(team, &team->go, step + 2) == TEAM_STOP)
            break;
    }
    return NULL;
}

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

/* The status of the first range, in order, whose last step failed, else DR_OK. */
static int first_failure(const dr_range_job *jobs, size_t parts)
{
    size_t p;
    for (p = 0; p < parts; p++)
        if (jobs[p].status != DR_OK)
            return jobs[p].status;
    return DR_OK;
}

int dr_parallel_steps(size_t count, int threads, int steps,
                      int (*fn)(void *ctx, int step, size_t begin, size_t end),
                      int (*between)(void *ctx, int step), void *ctx)
{
    dr_range_job jobs[DR_MAX_THREADS];
    int started[DR_MAX_THREADS];
    dr_team team;
#if DR_HAVE_PTHREADS
    pthread_t ids[DR_MAX_THREADS];
    thread_placement placement;
#endif
    size_t parts, p;
    int step, result = DR_OK, barriers = steps > 1;
    if (steps < 1)
        return DR_OK;
    if (steps > DR_PARALLEL_MAX_STEPS)
        return DR_E_ARG;
    if (threads < 1)
        threads = 1;
    if (threads > DR_MAX_THREADS)
        threads = DR_MAX_THREADS;
    parts = count < (size_t)threads ? count : (size_t)threads;
    team.fn = fn;
    team.ctx = ctx;
    team.steps = steps;
    for (p = 0; p < parts; p++) {
        jobs[p].team = &team;
        jobs[p].begin = count / parts * p + (p < count % parts ? p : count % parts);
        jobs[p].end = jobs[p].begin + count / parts + (p < count % parts);
        jobs[p].status = DR_OK;
        jobs[p].done = 0;
#if DR_STEER_THREADS
        jobs[p].restore = NULL;
#endif
        started[p] = 0;
    }
#if DR_HAVE_PTHREADS
    if (parts > 1) {
        if (barriers) {
            pthread_mutex_init(&team.lock, NULL);
            pthread_cond_init(&team.wake, NULL);
            team.go = 1;
            team.poll_ns = (long)parts <= affinity_cores() ? TEAM_POLL_NS : 0;
        }
        placement_init(&placement);
        for (p = 1; p < parts; p++)
            started[p] = placement_start(&placement, &ids[p], &jobs[p]);
    }
#endif
    for (step = 0;; step++) {
        for (p = 0; p < parts; p++)
            if (!started[p])
                run_step(&jobs[p], step);
        if (step + 1 == steps)
            break;
#if DR_HAVE_PTHREADS
        for (p = 1; p < parts; p++)
            if (started[p])
                team_await(&team, &jobs[p].done, step + 1);
#endif
        result = first_failure(jobs, parts);
        if (result == DR_OK && between != NULL)
            result = between(ctx, step);
        if (result != DR_OK)
            break;
#if DR_HAVE_PTHREADS
        if (parts > 1)
            team_set(&team, &team.go, step + 2);
#endif
    }
#if DR_HAVE_PTHREADS
    if (parts > 1) {
        if (result != DR_OK) /* only a barrier's turn stops early */
            team_set(&team, &team.go, TEAM_STOP);
        for (p = 1; p < parts; p++)
            if (started[p])
                pthread_join(ids[p], NULL);
        placement_destroy(&placement);
        if (barriers) {
            pthread_cond_destroy(&team.wake);
            pthread_mutex_destroy(&team.lock);
        }
    }
#else
    (void)barriers;
#endif
    return result != DR_OK ? result : first_failure(jobs, parts);
}

/* dr_parallel_for as one step. */
typedef struct {
    int (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
} single_step;

static int run_single_step(void *ctx, int step, size_t begin, size_t end)
{
    const single_step *single = (const single_step *)ctx;
    (void)step;
    return single->fn(single->ctx, begin, end);
}

int dr_parallel_for(size_t count, int threads, int (*fn)(void *ctx, size_t begin, size_t end),
                    void *ctx)
{
    single_step single;
    single.fn = fn;
    single.ctx = ctx;
    return dr_parallel_steps(count, threads, 1, run_single_step, NULL, &single);
}
