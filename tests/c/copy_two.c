/* Several npurt libraries, each copied alone into its own folder, in one process: librknnrt.so linked (-L -l),
 * libQnnHtp.so and libcdsprpc.so loaded with dlopen(RTLD_LOCAL) from the paths given. They must share one process
 * state (one interpreter start, one exit handler, one count of calls in flight).
 *   copy_two race MODEL HTP CDSP   the three libraries' first calls from three threads at the same moment
 *   copy_two exit MODEL HTP        libQnnHtp is called first, then the program registers an atexit handler, then
 *                                  librknnrt is called: the process has one exit handler (registered at the first
 *                                  npurt call), so the program's runs before it and rknn_query still works there
 * Prints "OK <mode>" and exits 0 on success. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "common.h"
#include "rknn_api.h"
#include "QnnInterface.h"

typedef void *(*rpcmem_alloc_fn)(int, uint32_t, int);
typedef void (*rpcmem_free_fn)(void *);

static void *load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(1);
    }
    return h;
}

static int qnn_providers(void *htp)
{
    __typeof__(&QnnInterface_getProviders) get = (__typeof__(&QnnInterface_getProviders))dlsym(htp,
                                                                                          "QnnInterface_getProviders");
    CHECK(get != NULL);
    const QnnInterface_t **providers = NULL;
    uint32_t n = 0;
    return get(&providers, &n) == QNN_SUCCESS && n == 1;
}

static void *model;
static size_t model_size;
static rknn_context ctx;

/* --- race ---------------------------------------------------------------------------------------------- */
static pthread_barrier_t barrier;
static void *htp_handle, *cdsp_handle;
static int ok[3];

static void *race_rknn(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    ok[0] = rknn_init(&ctx, model, (uint32_t)model_size, 0, NULL) == RKNN_SUCC;
    return NULL;
}

static void *race_qnn(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    ok[1] = qnn_providers(htp_handle);
    return NULL;
}

static void *race_rpcmem(void *arg)
{
    (void)arg;
    rpcmem_alloc_fn alloc = (rpcmem_alloc_fn)dlsym(cdsp_handle, "rpcmem_alloc");
    rpcmem_free_fn release = (rpcmem_free_fn)dlsym(cdsp_handle, "rpcmem_free");
    CHECK(alloc != NULL && release != NULL);
    pthread_barrier_wait(&barrier);
    void *p = alloc(25, 1, 4096);
    ok[2] = p != NULL;
    if (p)
        release(p);
    return NULL;
}

static int mode_race(const char *htp, const char *cdsp)
{
    htp_handle = load(htp);
    cdsp_handle = load(cdsp);
    pthread_t t[3];
    pthread_barrier_init(&barrier, NULL, 3);
    CHECK(pthread_create(&t[0], NULL, race_rknn, NULL) == 0);
    CHECK(pthread_create(&t[1], NULL, race_qnn, NULL) == 0);
    CHECK(pthread_create(&t[2], NULL, race_rpcmem, NULL) == 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK(ok[0] && ok[1] && ok[2]);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    return 0;
}

/* --- exit ---------------------------------------------------------------------------------------------- */
static void query_at_exit(void)
{
    rknn_input_output_num io;
    int ret = rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io));
    if (ret != RKNN_SUCC) {
        printf("FAIL exit: rknn_query in the program's atexit handler returned %d\n", ret);
        fflush(stdout);
        _exit(1);
    }
    printf("OK exit\n");
}

static int mode_exit(const char *htp)
{
    CHECK(qnn_providers(load(htp)));         /* the process's first npurt call */
    CHECK(atexit(query_at_exit) == 0);
    CHECK_RET(rknn_init(&ctx, model, (uint32_t)model_size, 0, NULL), RKNN_SUCC);
    exit(0);
}

int main(int argc, char **argv)
{
    CHECK(argc >= 4);
    model = read_file(argv[2], &model_size);
    if (!strcmp(argv[1], "race") && argc == 5) {
        mode_race(argv[3], argv[4]);
        printf("OK race\n");
        return 0;
    }
    if (!strcmp(argv[1], "exit") && argc == 4)
        return mode_exit(argv[3]);
    fprintf(stderr, "usage: copy_two race MODEL HTP CDSP | exit MODEL HTP\n");
    return 2;
}
