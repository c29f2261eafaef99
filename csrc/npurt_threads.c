/* npk_run_parts: one call running a kernel's parts on persistent worker threads (see npurt_kernels.h). The parts
 * are claimed from one atomic ticket (call generation, part count, next part) by the caller and by the workers
 * alike, so a worker that is slow to wake (its core busy) only leaves more parts to the caller: a call never
 * waits for a thread that has not started, only for parts already running. Workers wait for the next call by
 * spinning briefly (steps follow each other within microseconds), then on a condition variable. One call at a time
 * uses the workers: a concurrent caller runs its parts itself, one after another. */
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

#define MAX_PARTS 64
#define SPINS 4000                  /* some 50-200 us of pause instructions before sleeping */

static struct {
    pthread_mutex_t busy;           /* held by the caller whose parts the workers share */
    pthread_mutex_t m;
    pthread_cond_t wake, done;
    int workers;                    /* started */
    _Atomic uint64_t ticket;        /* generation << 32 | parts << 16 | next unclaimed part */
    atomic_int finished;            /* parts of the current call finished */
    atomic_int failed;
    int kind;
    void *const *structs;
    const int64_t *bounds;
    uint32_t start_generation[MAX_PARTS];
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

/* claim and run parts of call `generation` until none is left; the last part finished wakes the caller */
static void run_claimed(uint32_t generation)
{
    uint64_t t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
    for (;;) {
        int next = (int)(t & 0xffff), parts = (int)((t >> 16) & 0xffff);
        if ((uint32_t)(t >> 32) != generation || next >= parts)
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool.ticket, &t, t + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        /* the call's arguments stay put until its parts, this one included, are finished */
        if (run_part(pool.kind, pool.structs[next], pool.bounds[2 * next], pool.bounds[2 * next + 1]) != 0)
            atomic_store(&pool.failed, 1);
        if (atomic_fetch_add_explicit(&pool.finished, 1, memory_order_acq_rel) + 1 == parts) {
            pthread_mutex_lock(&pool.m);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.m);
        }
        t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
    }
}

static uint32_t generation_now(void)
{
    return (uint32_t)(atomic_load_explicit(&pool.ticket, memory_order_acquire) >> 32);
}

static void *worker(void *arg)
{
    uint32_t seen = pool.start_generation[(int)(intptr_t)arg];     /* the calls before this worker existed */
    for (;;) {
        uint32_t g;
        for (int s = 0; (g = generation_now()) == seen && s < SPINS; s++)
            PAUSE();
        if (g == seen) {
            pthread_mutex_lock(&pool.m);
            while ((g = generation_now()) == seen)
                pthread_cond_wait(&pool.wake, &pool.m);
            pthread_mutex_unlock(&pool.m);
        }
        seen = g;
        run_claimed(g);
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
        pool.start_generation[pool.workers] = generation_now();
        int err = pthread_create(&t, &attr, worker, (void *)(intptr_t)pool.workers);
        pthread_attr_destroy(&attr);
        if (err)
            break;
        pool.workers++;
    }
    return pool.workers;
}

int npk_run_parts(int kind, void *const *structs, const int64_t *bounds, int nparts)
{
    if (!structs || !bounds || nparts < 1 || nparts > MAX_PARTS || kind < 0 || kind > NPK_PART_MAX_POOL)
        return -1;
    int status = 0;
    if (nparts == 1 || pthread_mutex_trylock(&pool.busy) != 0) {      /* alone, or the workers are taken */
        for (int k = 0; k < nparts; k++)
            if (run_part(kind, structs[k], bounds[2 * k], bounds[2 * k + 1]) != 0)
                status = -1;
        return status;
    }
    start_workers(nparts - 1);      /* fewer (a thread could not start) only leaves more parts to this caller */
    pool.kind = kind;
    pool.structs = structs;
    pool.bounds = bounds;
    atomic_store(&pool.failed, 0);
    atomic_store(&pool.finished, 0);
    uint32_t generation = generation_now() + 1;
    atomic_store_explicit(&pool.ticket, (uint64_t)generation << 32 | (uint64_t)nparts << 16, memory_order_release);
    pthread_mutex_lock(&pool.m);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.m);
    run_claimed(generation);
    for (int s = 0; atomic_load_explicit(&pool.finished, memory_order_acquire) < nparts && s < SPINS; s++)
        PAUSE();
    pthread_mutex_lock(&pool.m);
    while (atomic_load(&pool.finished) < nparts)
        pthread_cond_wait(&pool.done, &pool.m);
    pthread_mutex_unlock(&pool.m);
    status = atomic_load(&pool.failed) ? -1 : 0;
    pthread_mutex_unlock(&pool.busy);
    return status;
}
