/* npk_run_parts: one call running a kernel's parts on persistent worker threads (see npurt_kernels.h). The parts
 * are claimed from one atomic ticket (call generation, part count, next part) by the caller and by the call's
 * workers alike, so a worker that is slow to wake (its core busy) only leaves more parts to the others: a call never
 * waits for a thread that has not started, only for parts already running (a call may have more parts than
 * threads). Workers wait for the next call by spinning (steps follow each other within microseconds), then on a
 * condition variable. One call at a time uses the workers: a concurrent caller
 * runs its parts itself, one after another. */
#include "npurt_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PAUSE() _mm_pause()
#else
#define PAUSE() ((void)0)
#endif

#define MAX_PARTS 64
/* how long a waiting thread spins before it sleeps: longer than the gaps between a run's threaded steps (a step
 * or two of Python), since waking a sleeping thread costs tens of microseconds (more on a virtual machine) */
#define SPIN_NS 2000000

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* spin until done(arg) or SPIN_NS have passed; whether done(arg) */
static int spin_until(int (*done)(const void *), const void *arg)
{
    int64_t end = now_ns() + SPIN_NS;
    for (;;) {
        for (int s = 0; s < 64; s++) {
            if (done(arg))
                return 1;
            PAUSE();
        }
        if (now_ns() > end)
            return done(arg);
    }
}

static struct {
    pthread_mutex_t busy;           /* held by the caller whose parts the workers share */
    pthread_mutex_t m;
    pthread_cond_t wake, done;
    int workers;                    /* started */
    atomic_int helpers;             /* workers taking part in the current call (the first ones) */
    _Atomic uint64_t ticket;        /* generation << 32 | parts << 16 | next unclaimed part */
    atomic_int finished;            /* parts of the current call finished */
    atomic_int failed;
    int kind;
    void *const *structs;
    const int64_t *bounds;
    uint32_t start_generation[MAX_PARTS];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static int cast_part(const struct npk_cast_call *c, int64_t lo, int64_t hi)
{
    const int ax = c->axis;
    if (c->ndim < 1 || c->ndim > 8 || ax < 0 || ax >= c->ndim || lo < 0 || hi > c->shape[ax] || lo > hi)
        return -1;
    int64_t shape[8];
    for (int k = 0; k < c->ndim; k++) shape[k] = c->shape[k];
    shape[ax] = hi - lo;
    return npk_cast_nd(c->conv, c->ndim, shape, (const char *)c->src + lo * c->src_strides[ax], c->src_strides,
                       (char *)c->dst + lo * c->dst_strides[ax], c->dst_strides, c->a, c->b);
}

static int lookup_part(const struct npk_lookup_call *c, int64_t lo, int64_t hi)
{
    const int64_t count = c->c2 > 0 ? c->n / c->c2 : c->n, e = c->c2 > 0 ? c->c2 : 1;   /* elements per unit */
    if (lo < 0 || hi > count || lo > hi || c->index < 0 || c->index > 2)
        return -1;
    const int64_t first = lo * e, a_size = c->index == 1 ? 2 : 1;
    const void *a = (const char *)c->a + first * a_size, *b = c->b ? (const char *)c->b + first : c->b;
    void *out = (char *)c->out + first * c->out_size;
    if (c->c2 > 0)
        return npk_lookup_lanes(c->table, c->out_size, a, b, c->index, out, hi - lo, c->c2, c->lanes);
    return npk_lookup(c->table, c->out_size, a, b, c->index, out, hi - lo);
}

static int binary_part(const struct npk_binary_call *c, int64_t lo, int64_t hi)
{
    if (lo < 0 || hi > c->n || lo > hi)
        return -1;
    if (c->inner > 0)
        return npk_binary_f16_bcast(c->op, c->swap, (const uint16_t *)c->a + lo, c->b, (uint16_t *)c->out + lo,
                                    hi - lo, lo, c->inner, c->c2, c->act, c->lo, c->hi);
    if (c->q)
        return npk_binary_i8(c->op, (const int8_t *)c->a + lo, (const int8_t *)c->b + lo, (int8_t *)c->out + lo,
                             hi - lo, c->q);
    return npk_binary_f16(c->op, (const uint16_t *)c->a + lo, (const uint16_t *)c->b + lo, (uint16_t *)c->out + lo,
                          hi - lo, c->act, c->lo, c->hi);
}

static int layout_part(const struct npk_layout_call *c, int64_t lo, int64_t hi)
{
    if (c->to_lanes)
        return npk_planes_to_lanes(c->conv, c->src, c->sn, c->sc, c->sh, c->dst, c->n, c->c, c->h, c->w, c->c1,
                                   c->c2, c->w1, lo, hi, c->a, c->b);
    return npk_lanes_to_planes(c->conv, c->src, c->dst, c->sn, c->sc, c->sh, c->n, c->c, c->h, c->w, c->c1, c->c2,
                               c->w1, lo, hi, c->a, c->b);
}

static int run_part(int kind, const void *p, int64_t lo, int64_t hi)
{
    switch (kind) {
    case NPK_PART_CONVF: return npk_convf(p, lo, hi);
    case NPK_PART_CONV8: return npk_conv8(p, lo, hi);
    case NPK_PART_DEPTHWISE: return npk_depthwise(p, lo, hi);
    case NPK_PART_MAX_POOL: return npk_max_pool(p, lo, hi);
    case NPK_PART_CAST: return cast_part(p, lo, hi);
    case NPK_PART_LOOKUP: return lookup_part(p, lo, hi);
    case NPK_PART_BINARY: return binary_part(p, lo, hi);
    case NPK_PART_LAYOUT: return layout_part(p, lo, hi);
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

static _Thread_local int thread_slot;       /* 0: a caller; k: worker k */

int npk_thread_slot(void)
{
    return thread_slot;
}

static int new_call(const void *seen)
{
    return generation_now() != *(const uint32_t *)seen;
}

static void *worker(void *arg)
{
    const int index = (int)(intptr_t)arg;
    uint32_t seen = pool.start_generation[index];       /* the calls before this worker existed */
    thread_slot = index + 1;
    for (;;) {
        uint32_t g;
        spin_until(new_call, &seen);
        if ((g = generation_now()) == seen) {
            pthread_mutex_lock(&pool.m);
            while ((g = generation_now()) == seen)
                pthread_cond_wait(&pool.wake, &pool.m);
            pthread_mutex_unlock(&pool.m);
        }
        seen = g;
        /* helpers was stored before the call's generation was published (release), and read after it (acquire) */
        if (index < atomic_load_explicit(&pool.helpers, memory_order_relaxed))
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

static int all_finished(const void *nparts)
{
    return atomic_load_explicit(&pool.finished, memory_order_acquire) >= *(const int *)nparts;
}

int npk_run_parts(int kind, void *const *structs, const int64_t *bounds, int nparts, int threads)
{
    if (!structs || !bounds || nparts < 1 || nparts > MAX_PARTS || threads < 1 || threads > MAX_PARTS || kind < 0
        || kind > NPK_PART_LAYOUT)
        return -1;
    int status = 0;
    if (nparts == 1 || threads == 1 || thread_slot != 0 || pthread_mutex_trylock(&pool.busy) != 0) {
        /* alone, or the workers are taken */
        for (int k = 0; k < nparts; k++)
            if (run_part(kind, structs[k], bounds[2 * k], bounds[2 * k + 1]) != 0)
                status = -1;
        return status;
    }
    const int helpers = (threads < nparts ? threads : nparts) - 1, started = start_workers(helpers);
    /* fewer started (a thread could not start): more parts to the others */
    atomic_store_explicit(&pool.helpers, started < helpers ? started : helpers, memory_order_relaxed);
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
    spin_until(all_finished, &nparts);
    pthread_mutex_lock(&pool.m);
    while (atomic_load(&pool.finished) < nparts)
        pthread_cond_wait(&pool.done, &pool.m);
    pthread_mutex_unlock(&pool.m);
    status = atomic_load(&pool.failed) ? -1 : 0;
    pthread_mutex_unlock(&pool.busy);
    return status;
}
