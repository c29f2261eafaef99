/* The state every npurt library of a process shares, compiled into each library (so each is one file that works
 * copied alone) and agreed on at load time: one library's copy serves the whole process.
 *
 * - one start: the first library to be called starts the embedded interpreter (its `start` hook) under a
 *   process-wide mutex; every library then binds its own Python half under the same mutex;
 * - calls in flight: every exported function counts itself in and out (`npurt_process_enter` / `_leave`);
 * - exit: an `on_exit` handler refuses new calls, waits up to $NPURT_CAPI_EXIT_WAIT_MS (default 5000) for the
 *   calls in flight (not counting the exiting thread's own), and if some are still running ends the process
 *   with `_exit(status)` after flushing stdio, so no library destructor runs under them;
 * - fork: when npurt started the interpreter, `pthread_atfork` hooks of the first library hand the interpreter
 *   over to the forking thread (prepare), and re-create its state in the child (see npurt.capi.build).
 *
 * How the libraries agree: each exports its table of these functions as `npurt_process_v1` (rename it when the
 * table changes). At load, a library's constructor looks the symbol up in every loaded object, in load order
 * (dl_iterate_phdr, then dlopen(RTLD_NOLOAD) + dlsym, which also sees libraries loaded RTLD_LOCAL), and uses the
 * table of the earliest-loaded npurt library, else its own. The loader only appends objects and npurt libraries
 * are never unloaded (-z nodelete), so every library of the process picks the same one. No Python here: the
 * hooks are the first started library's functions. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct npurt_process_hooks {
    int (*start)(void);                 /* start the interpreter; 1: npurt started it (0: a Python host) */
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    void (*after_fork_child)(void);
};

static pthread_mutex_t npurt_process_mutex = PTHREAD_MUTEX_INITIALIZER;
static const struct npurt_process_hooks *npurt_first_hooks;
static int npurt_owns_python;
static int npurt_in_flight;
static int npurt_exiting;
static __thread int npurt_depth;       /* calls of this thread in flight (a callback may call npurt again) */

static void npurt_own_lock(void) { pthread_mutex_lock(&npurt_process_mutex); }
static void npurt_own_unlock(void) { pthread_mutex_unlock(&npurt_process_mutex); }

static int npurt_own_enter(void)
{
    __atomic_add_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&npurt_exiting, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    npurt_depth++;
    return 1;
}

static void npurt_own_leave(void)
{
    npurt_depth--;
    __atomic_sub_fetch(&npurt_in_flight, 1, __ATOMIC_SEQ_CST);
}

static int npurt_own_exiting(void) { return __atomic_load_n(&npurt_exiting, __ATOMIC_SEQ_CST); }

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

static void npurt_process_before_fork(void)
{
    if (npurt_owns_python)
        npurt_first_hooks->before_fork();
}

static void npurt_process_after_fork_parent(void)
{
    if (npurt_owns_python)
        npurt_first_hooks->after_fork_parent();
}

static void npurt_process_after_fork_child(void)
{
    /* the other threads' calls do not exist in the child */
    __atomic_store_n(&npurt_in_flight, npurt_depth, __ATOMIC_SEQ_CST);
    pthread_mutex_init(&npurt_process_mutex, NULL);
    if (npurt_owns_python)
        npurt_first_hooks->after_fork_child();
}

/* Called with the mutex held by each library's first call: the first one's hooks start the interpreter. */
static void npurt_own_start(const struct npurt_process_hooks *hooks)
{
    if (npurt_first_hooks != NULL)
        return;
    npurt_first_hooks = hooks;
    npurt_owns_python = hooks->start();
    on_exit(npurt_process_at_exit, NULL);
    pthread_atfork(npurt_process_before_fork, npurt_process_after_fork_parent, npurt_process_after_fork_child);
}

struct npurt_process {
    void (*lock)(void);
    void (*unlock)(void);
    int (*enter)(void);
    void (*leave)(void);
    int (*exiting)(void);
    void (*start)(const struct npurt_process_hooks *hooks);
};

static const struct npurt_process npurt_own = {
    npurt_own_lock, npurt_own_unlock, npurt_own_enter, npurt_own_leave, npurt_own_exiting, npurt_own_start,
};
/* the exported name of this library's table (an alias: the library's own references stay its own) */
extern const struct npurt_process npurt_process_v1 __attribute__((alias("npurt_own"), visibility("default")));

static const struct npurt_process *npurt_process = &npurt_own;  /* the process's table, set at load */

struct npurt_loaded { char **names; size_t count, size; };

static int npurt_collect(struct dl_phdr_info *info, size_t size, void *data)
{
    struct npurt_loaded *loaded = data;
    char **grown;
    (void)size;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
        return 0;                       /* the program itself (its npurt libraries are listed on their own) */
    if (loaded->count == loaded->size) {
        grown = realloc(loaded->names, (loaded->size * 2 + 16) * sizeof(char *));
        if (grown == NULL)
            return 1;
        loaded->names = grown;
        loaded->size = loaded->size * 2 + 16;
    }
    loaded->names[loaded->count] = strdup(info->dlpi_name);
    loaded->count += loaded->names[loaded->count] != NULL;
    return 0;
}

/* The earliest-loaded object defining `npurt_process_v1` gives the process's table. Names are collected first:
   dlopen inside dl_iterate_phdr's callback could deadlock with another thread's dlopen. */
__attribute__((constructor)) static void npurt_process_find(void)
{
    struct npurt_loaded loaded = {NULL, 0, 0};
    const struct npurt_process *found = NULL;
    size_t i;
    Dl_info info;
    dl_iterate_phdr(npurt_collect, &loaded);
    for (i = 0; i < loaded.count; i++) {
        void *handle = found ? NULL : dlopen(loaded.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (handle != NULL) {
            const struct npurt_process *table = dlsym(handle, "npurt_process_v1");
            /* defined by that object itself, not found through its dependencies */
            if (table != NULL && dladdr((const void *)table, &info) && info.dli_fname != NULL
                && strcmp(info.dli_fname, loaded.names[i]) == 0)
                found = table;
            dlclose(handle);
        }
        free(loaded.names[i]);
    }
    free(loaded.names);
    if (found != NULL)
        npurt_process = found;
}

static void npurt_process_lock(void) { npurt_process->lock(); }
static void npurt_process_unlock(void) { npurt_process->unlock(); }
static int npurt_process_enter(void) { return npurt_process->enter(); }
static void npurt_process_leave(void) { npurt_process->leave(); }
/* 1 once the process is exiting (its on_exit handler ran): release calls then succeed without entering Python. */
static int npurt_process_exiting(void) { return npurt_process->exiting(); }
static void npurt_process_start(const struct npurt_process_hooks *hooks) { npurt_process->start(hooks); }
