/* libnpurt_process.so: the state every npurt library of a process shares (they link it, so the dynamic loader
 * loads it once per process, whichever way — RTLD_LOCAL or not — each library was loaded).
 *
 * - one start: the first library to be called starts the embedded interpreter (its `start` hook) under a
 *   process-wide mutex; every library then binds its own Python half under the same mutex;
 * - calls in flight: every exported function counts itself in and out (`npurt_process_enter` / `_leave`);
 * - exit: an `on_exit` handler refuses new calls, waits up to $NPURT_CAPI_EXIT_WAIT_MS (default 5000) for the
 *   calls in flight (not counting the exiting thread's own), and if some are still running ends the process
 *   with `_exit(status)` after flushing stdio, so no library destructor runs under them;
 * - fork: when npurt started the interpreter, `pthread_atfork` hooks of the first library hand the interpreter
 *   over to the forking thread (prepare), and re-create its state in the child (see npurt.capi.build).
 * No Python here: the hooks are the first library's functions (npurt libraries are never unloaded). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct npurt_process_hooks {
    int (*start)(void);                 /* start the interpreter; 1: npurt started it (0: a Python host) */
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    void (*after_fork_child)(void);
};

static pthread_mutex_t npurt_process_mutex = PTHREAD_MUTEX_INITIALIZER;
static const struct npurt_process_hooks *npurt_hooks;
static int npurt_owns_python;
static int npurt_in_flight;
static int npurt_exiting;
static __thread int npurt_depth;       /* calls of this thread in flight (a callback may call npurt again) */

void npurt_process_lock(void) { pthread_mutex_lock(&npurt_process_mutex); }
void npurt_process_unlock(void) { pthread_mutex_unlock(&npurt_process_mutex); }

int npurt_process_enter(void)
{
    __atomic_add_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&npurt_exiting, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    npurt_depth++;
    return 1;
}

void npurt_process_leave(void)
{
    npurt_depth--;
    __atomic_sub_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
}

/* 1 once the process is exiting (its on_exit handler ran): release calls then succeed without entering Python. */
int npurt_process_exiting(void) { return __atomic_load_n(&npurt_exiting, __ATOMIC_SEQ_CST); }

static void npurt_process_at_exit(int status, void *arg)
{
    (void)arg;
    const char *env = getenv("NPURT_CAPI_EXIT_WAIT_MS");
    long budget = env ? atol(env) : 5000;
    struct timespec tick = {0, 1000000};
    __atomic_store_n(&npurt_exiting, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&npurt_in_flight, __ATOMIC_SEQ_CST) > npurt_depth && budget-- > 0)
        nanosleep(&tick, NULL);
    if (__atomic_load_n(&npurt_in_flight, __ATOMIC_SEQ_CST) > npurt_depth) {
        fflush(NULL);
        _exit(status);                  /* a call is still running: no destructor may free memory under it */
    }
}

static void npurt_before_fork(void)
{
    if (npurt_owns_python)
        npurt_hooks->before_fork();
}

static void npurt_after_fork_parent(void)
{
    if (npurt_owns_python)
        npurt_hooks->after_fork_parent();
}

static void npurt_after_fork_child(void)
{
    /* the other threads' calls do not exist in the child */
    __atomic_store_n(&npurt_in_flight, npurt_depth, __ATOMIC_SEQ_CST);
    pthread_mutex_init(&npurt_process_mutex, NULL);
    if (npurt_owns_python)
        npurt_hooks->after_fork_child();
}

/* Called with the mutex held by each library's first call: the first one's hooks start the interpreter. */
void npurt_process_start(const struct npurt_process_hooks *hooks)
{
    if (npurt_hooks != NULL)
        return;
    npurt_hooks = hooks;
    npurt_owns_python = hooks->start();
    on_exit(npurt_process_at_exit, NULL);
    pthread_atfork(npurt_before_fork, npurt_after_fork_parent, npurt_after_fork_child);
}
