/* npk_run_parts: one call running a kernel's parts on persistent worker threads (see npurt_kernels.h). The caller
 * runs part 0 itself; worker k runs part k. Workers wait for the next call by spinning briefly (steps follow each
 * other within microseconds) and then on a condition variable; the caller waits for them the same way. One call at
 * a time uses the workers: a concurrent caller runs its parts itself, one after another. */
#include "npurt_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PAUSE() _mm_pause()
#else
#define PAUSE() ((void)0)
#endif

#define MAX_WORKERS 63
#define SPINS 20000                 /* about 50-100 us of pause instructions before sleeping */

static struct {
    pthread_mutex_t busy;           /* held by the caller whose parts the workers run */
    pthread_mutex_t m;
    pthread_cond_t wake, done;
    int workers;                    /* started */
    atomic_ulong generation;        /* one per call; workers run the call's parts when it moves */
    atomic_int remaining;           /* workers still running the current call */
    atomic_int failed;
    int kind, nparts;
    void *const *structs;
    const int64_t *bounds;
    unsigned long start_generation[MAX_WORKERS + 1];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static int run_part(int kind, const void *p, int64_t lo, int64_t hi)
{
    switch (kind) {
    case NPK_PART_CONVF: return npk_convf(p, lo, hi);
    case NPK_PART_CONV8: return npk_conv8(p, lo, hi);
    case NPK_PART_DEPTHWISE: return npk_depthwise(p, lo, hi);
    case NPK_PART_MAX_POOL: return npk_max_pool(p, lo, hi);
    default: return -1;
    }
}

static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg;
    unsigned long seen = pool.start_generation[index];     /* the calls before this worker existed */
    for (;;) {
        unsigned long g;
        for (int s = 0; (g = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen && s < SPINS; s++)
            PAUSE();
        if (g == seen) {
            pthread_mutex_lock(&pool.m);
            while ((g = atomic_load(&pool.generation)) == seen)
                pthread_cond_wait(&pool.wake, &pool.m);
            pthread_mutex_unlock(&pool.m);
        }
        seen = g;
        if (index < pool.nparts && run_part(pool.kind, pool.structs[index], pool.bounds[2 * index],
                                            pool.bounds[2 * index + 1]) != 0)
            atomic_store(&pool.failed, 1);
        if (atomic_fetch_sub_explicit(&pool.remaining, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool.m);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.m);
        }
    }
    return NULL;
}

/* a forked child has none of the parent's threads: it starts its own when it needs them */
static void after_fork_child(void)
{
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.m, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
}

static int start_workers(int n)
{
    static int registered = 0;
    if (!registered) {
        pthread_atfork(NULL, NULL, after_fork_child);
        registered = 1;
    }
    while (pool.workers < n) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pool.start_generation[pool.workers + 1] = atomic_load(&pool.generation);
        int err = pthread_create(&t, &attr, worker, (void *)(intptr_t)(pool.workers + 1));
        pthread_attr_destroy(&attr);
        if (err)
            break;
        pool.workers++;
    }
    return pool.workers;
}

static int run_serially(int kind, void *const *structs, const int64_t *bounds, int nparts)
{
    int status = 0;
    for (int k = 0; k < nparts; k++)
        if (run_part(kind, structs[k], bounds[2 * k], bounds[2 * k + 1]) != 0)
            status = -1;
    return status;
}

int npk_run_parts(int kind, void *const *structs, const int64_t *bounds, int nparts)
{
    if (!structs || !bounds || nparts < 1 || nparts > MAX_WORKERS + 1 || kind < 0 || kind > NPK_PART_MAX_POOL)
        return -1;
    if (nparts == 1 || pthread_mutex_trylock(&pool.busy) != 0)
        return run_serially(kind, structs, bounds, nparts);
    if (start_workers(nparts - 1) < nparts - 1) {
        pthread_mutex_unlock(&pool.busy);
        return run_serially(kind, structs, bounds, nparts);
    }
    pool.kind = kind;
    pool.nparts = nparts;
    pool.structs = structs;
    pool.bounds = bounds;
    atomic_store(&pool.failed, 0);
    atomic_store(&pool.remaining, pool.workers);
    atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
    pthread_mutex_lock(&pool.m);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.m);
    int status = run_part(kind, structs[0], bounds[0], bounds[1]) != 0 ? -1 : 0;
    for (int s = 0; atomic_load_explicit(&pool.remaining, memory_order_acquire) != 0 && s < SPINS; s++)
        PAUSE();
    pthread_mutex_lock(&pool.m);
    while (atomic_load(&pool.remaining) != 0)
        pthread_cond_wait(&pool.done, &pool.m);
    pthread_mutex_unlock(&pool.m);
    if (atomic_load(&pool.failed))
        status = -1;
    pthread_mutex_unlock(&pool.busy);
    return status;
}
