/* npurt's libraries in a hostile host: every library is loaded with dlopen(RTLD_NOW | RTLD_LOCAL) from LIBDIR, as
 * applications load them, and each mode does what an application may do at the worst moment.
 *   hostile race LIBDIR               first calls of libcdsprpc and libQnnHtp from two threads at the same moment
 *   hostile dlclose LIBDIR            dlclose(libQnnHtp.so) with a live log handle, then rpcmem_alloc that logs
 *   hostile exit LIBDIR MODEL X       exit(3) while another thread is inside rknn_run
 *   hostile logcb LIBDIR              a log callback waits for a lock another thread holds while that thread logs
 *   hostile fork LIBDIR MODEL X N     fork N children while a thread runs: children refuse the inherited context,
 *                                     run a fresh one; the parent's 30 outputs stay right
 *   hostile fnptr LIBDIR MODEL        code pointers that are not code (0x10, a data page) refused at registration
 *   hostile local LIBDIR LIB MODEL    LIB (librknnrt.so / librknnmrt.so) alone, RTLD_LOCAL: init and query work
 *   hostile readonly LIBDIR MODEL     input structs in read-only memory are accepted; real_model_offset past the end
 *                                     of the model is RKNN_ERR_PARAM_INVALID
 *   hostile bigsize LIBDIR MODEL BIN  a model / context binary (BIN: npurt's format) passed with 2 GiB over a 20 KB
 *                                     buffer: refused before anything of that size is allocated (RLIMIT_AS + 1 GB)
 *   hostile fdreuse LIBDIR MODEL X    the caller closes m->fd, a new file takes the number: destroy keeps it open
 * Prints "OK <mode>" and exits 0 (exit: 3) on success. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_matmul_api.h"
#include "QnnInterface.h"

static const char *libdir;

static void *load(const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", libdir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(1);
    }
    return h;
}

#define SYM(h, f) __typeof__(&f) p_##f = (__typeof__(&f))dlsym(h, #f); CHECK(p_##f != NULL)

typedef void *(*rpcmem_alloc_fn)(int, uint32_t, int);
typedef void (*rpcmem_free_fn)(void *);
typedef Qnn_ErrorHandle_t (*get_providers_fn)(const QnnInterface_t ***, uint32_t *);

static QNN_INTERFACE_VER_TYPE qnn_table(void *htp)
{
    get_providers_fn get = (get_providers_fn)dlsym(htp, "QnnInterface_getProviders");
    CHECK(get != NULL);
    const QnnInterface_t **providers = NULL;
    uint32_t n = 0;
    CHECK(get(&providers, &n) == QNN_SUCCESS && n == 1);
    return providers[0]->QNN_INTERFACE_VER_NAME;
}

/* --- race ---------------------------------------------------------------------------------------------- */
static pthread_barrier_t barrier;
static void *cdsp_handle, *htp_handle;
static int race_ok[2];

static void *race_rpcmem(void *arg)
{
    (void)arg;
    rpcmem_alloc_fn alloc = (rpcmem_alloc_fn)dlsym(cdsp_handle, "rpcmem_alloc");
    rpcmem_free_fn release = (rpcmem_free_fn)dlsym(cdsp_handle, "rpcmem_free");
    pthread_barrier_wait(&barrier);
    void *p = alloc(25, 1, 4096);
    race_ok[0] = p != NULL;
    if (p)
        release(p);
    return NULL;
}

static void *race_qnn(void *arg)
{
    (void)arg;
    get_providers_fn get = (get_providers_fn)dlsym(htp_handle, "QnnInterface_getProviders");
    const QnnInterface_t **providers = NULL;
    uint32_t n = 0;
    pthread_barrier_wait(&barrier);
    race_ok[1] = get(&providers, &n) == QNN_SUCCESS && n == 1;
    return NULL;
}

static int mode_race(void)
{
    cdsp_handle = load("libcdsprpc.so");
    htp_handle = load("libQnnHtp.so");
    pthread_t a, b;
    pthread_barrier_init(&barrier, NULL, 2);
    CHECK(pthread_create(&a, NULL, race_rpcmem, NULL) == 0);
    CHECK(pthread_create(&b, NULL, race_qnn, NULL) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(race_ok[0] && race_ok[1]);
    return 0;
}

/* --- dlclose ------------------------------------------------------------------------------------------- */
static int log_lines;

static void count_log(const char *fmt, QnnLog_Level_t level, uint64_t ts, va_list args)
{
    (void)fmt, (void)level, (void)ts, (void)args;
    log_lines++;
}

static int mode_dlclose(void)
{
    void *cdsp = load("libcdsprpc.so");
    void *htp = load("libQnnHtp.so");
    QNN_INTERFACE_VER_TYPE qnn = qnn_table(htp);
    Qnn_LogHandle_t log = NULL;
    CHECK(qnn.logCreate(count_log, QNN_LOG_LEVEL_DEBUG, &log) == QNN_SUCCESS);
    CHECK(dlclose(htp) == 0);                        /* the log handle is never freed */
    rpcmem_alloc_fn alloc = (rpcmem_alloc_fn)dlsym(cdsp, "rpcmem_alloc");
    CHECK(alloc(12345, 1, 4096) == NULL);            /* an unknown heap: logged */
    CHECK(log_lines >= 1);
    printf("log lines %d\n", log_lines);
    return 0;
}

/* --- exit ---------------------------------------------------------------------------------------------- */
static __typeof__(&rknn_run) run_fn;
static rknn_context run_ctx;
static volatile int running;

static void *run_forever(void *arg)
{
    (void)arg;
    for (;;) {
        running = 1;
        run_fn(run_ctx, NULL);
    }
    return NULL;
}

static rknn_context init_model(void *rt, const char *model, const char *input)
{
    SYM(rt, rknn_init);
    SYM(rt, rknn_inputs_set);
    size_t size;
    float *x = read_file(input, &size);
    rknn_context ctx = 0;
    CHECK_RET(p_rknn_init(&ctx, (void *)model, 0, 0, NULL), RKNN_SUCC);
    rknn_input in;
    memset(&in, 0, sizeof(in));
    in.type = RKNN_TENSOR_FLOAT32;
    in.fmt = RKNN_TENSOR_NCHW;
    in.buf = x;
    in.size = (uint32_t)size;
    CHECK_RET(p_rknn_inputs_set(ctx, 1, &in), RKNN_SUCC);
    free(x);
    return ctx;
}

static int mode_exit(const char *model, const char *input)
{
    void *rt = load("librknnrt.so");
    run_fn = (__typeof__(&rknn_run))dlsym(rt, "rknn_run");
    run_ctx = init_model(rt, model, input);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run_forever, NULL) == 0);
    while (!running)
        usleep(100);
    usleep(1000);
    printf("OK exit\n");
    exit(3);                                         /* a run is in flight */
}

/* --- logcb --------------------------------------------------------------------------------------------- */
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int a_in_callback, a_done;
static __thread int is_thread_a;
static rpcmem_alloc_fn logcb_alloc;

static void slow_log(const char *fmt, QnnLog_Level_t level, uint64_t ts, va_list args)
{
    (void)fmt, (void)level, (void)ts, (void)args;
    if (is_thread_a && !a_in_callback) {
        a_in_callback = 1;
        pthread_mutex_lock(&user_lock);              /* held by thread B while it logs */
        pthread_mutex_unlock(&user_lock);
    }
}

static void *thread_a(void *arg)
{
    (void)arg;
    is_thread_a = 1;
    CHECK(logcb_alloc(12345, 1, 4096) == NULL);     /* logs: the callback blocks until B lets the lock go */
    a_done = 1;
    return NULL;
}

static int mode_logcb(void)
{
    void *cdsp = load("libcdsprpc.so");
    QNN_INTERFACE_VER_TYPE qnn = qnn_table(load("libQnnHtp.so"));
    logcb_alloc = (rpcmem_alloc_fn)dlsym(cdsp, "rpcmem_alloc");
    Qnn_LogHandle_t log = NULL;
    CHECK(qnn.logCreate(slow_log, QNN_LOG_LEVEL_DEBUG, &log) == QNN_SUCCESS);
    pthread_mutex_lock(&user_lock);
    pthread_t a;
    CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
    while (!a_in_callback)
        usleep(100);
    usleep(200000);                                  /* A sits in its callback */
    CHECK(logcb_alloc(12346, 1, 4096) == NULL);     /* B logs meanwhile: must not wait for A's callback */
    CHECK(!a_done);
    pthread_mutex_unlock(&user_lock);
    pthread_join(a, NULL);
    CHECK(a_done);
    CHECK(qnn.logFree(log) == QNN_SUCCESS);
    Qnn_BackendHandle_t backend = NULL;                /* a freed backend: the header's code */
    CHECK(qnn.backendCreate(NULL, NULL, &backend) == QNN_SUCCESS);
    CHECK(qnn.backendFree(backend) == QNN_SUCCESS);
    CHECK(QNN_GET_ERROR_CODE(qnn.backendFree(backend)) == QNN_BACKEND_ERROR_INVALID_HANDLE);
    return 0;
}

/* --- fork ---------------------------------------------------------------------------------------------- */
static int mode_fork(const char *model, const char *input, int children)
{
    void *rt = load("librknnrt.so");
    SYM(rt, rknn_outputs_get);
    SYM(rt, rknn_outputs_release);
    SYM(rt, rknn_destroy);
    run_fn = (__typeof__(&rknn_run))dlsym(rt, "rknn_run");
    rknn_context mine = init_model(rt, model, input);
    rknn_output ref;
    memset(&ref, 0, sizeof(ref));
    ref.want_float = 1;
    CHECK_RET(run_fn(mine, NULL), RKNN_SUCC);
    CHECK_RET(p_rknn_outputs_get(mine, 1, &ref, NULL), RKNN_SUCC);
    float *want = malloc(ref.size);
    memcpy(want, ref.buf, ref.size);
    size_t n = ref.size / sizeof(float);
    CHECK_RET(p_rknn_outputs_release(mine, 1, &ref), RKNN_SUCC);

    run_ctx = init_model(rt, model, input);          /* a second context a thread keeps running */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run_forever, NULL) == 0);
    while (!running)
        usleep(100);
    for (int i = 0; i < children; i++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(60);
            int code = 0;
            int inherited = run_fn(mine, NULL);
            if (inherited != RKNN_ERR_CTX_INVALID) {
                fprintf(stderr, "child: rknn_run(inherited) = %d\n", inherited);
                code = 10;
            }
            rknn_output o;
            memset(&o, 0, sizeof(o));
            o.want_float = 1;
            if (p_rknn_outputs_get(mine, 1, &o, NULL) != RKNN_ERR_CTX_INVALID)
                code = 11;
            rknn_context fresh = init_model(rt, model, input);
            if (run_fn(fresh, NULL) != RKNN_SUCC || p_rknn_outputs_get(fresh, 1, &o, NULL) != RKNN_SUCC)
                code = 12;
            else {
                for (size_t k = 0; k < n; k++)
                    if (fabsf(((float *)o.buf)[k] - want[k]) > 1e-5f)
                        code = 13;
                p_rknn_outputs_release(fresh, 1, &o);
            }
            p_rknn_destroy(fresh);
            fflush(stdout);
            _exit(code);
        }
        for (int r = 0; r < 3; r++) {                 /* the parent's outputs while the children live */
            rknn_output o;
            memset(&o, 0, sizeof(o));
            o.want_float = 1;
            CHECK_RET(run_fn(mine, NULL), RKNN_SUCC);
            CHECK_RET(p_rknn_outputs_get(mine, 1, &o, NULL), RKNN_SUCC);
            CHECK(memcmp(o.buf, want, o.size) == 0);
            CHECK_RET(p_rknn_outputs_release(mine, 1, &o), RKNN_SUCC);
        }
    }
    for (int i = 0; i < children; i++) {
        int status = 0;
        CHECK(wait(&status) > 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child status %d\n", status);
            exit(1);
        }
    }
    free(want);
    return 0;
}

/* --- fnptr --------------------------------------------------------------------------------------------- */
static int data_word[1024];

static int ok_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                      rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    (void)op_ctx, (void)inputs, (void)n_inputs, (void)outputs, (void)n_outputs;
    return 0;
}

static int mode_fnptr(const char *model)
{
    void *rt = load("librknnrt.so");
    SYM(rt, rknn_init);
    SYM(rt, rknn_register_custom_ops);
    rknn_context ctx = 0;
    CHECK_RET(p_rknn_init(&ctx, (void *)model, 0, 0, NULL), RKNN_SUCC);
    void *bad[] = {(void *)0x10, (void *)data_word};
    for (int i = 0; i < 2; i++) {
        rknn_custom_op op;
        memset(&op, 0, sizeof(op));
        op.version = 1;
        op.target = RKNN_TARGET_TYPE_CPU;
        snprintf(op.op_type, sizeof(op.op_type), "BadOp%d", i);
        op.compute = (__typeof__(op.compute))bad[i];
        CHECK_RET(p_rknn_register_custom_ops(ctx, &op, 1), RKNN_ERR_PARAM_INVALID);
        op.compute = ok_compute;
        op.init = (__typeof__(op.init))bad[i];
        CHECK_RET(p_rknn_register_custom_ops(ctx, &op, 1), RKNN_ERR_PARAM_INVALID);
        op.init = NULL;
        op.destroy = (__typeof__(op.destroy))bad[i];
        CHECK_RET(p_rknn_register_custom_ops(ctx, &op, 1), RKNN_ERR_PARAM_INVALID);
    }
    QNN_INTERFACE_VER_TYPE qnn = qnn_table(load("libQnnHtp.so"));
    Qnn_LogHandle_t log = NULL;
    for (int i = 0; i < 2; i++)
        CHECK(QNN_GET_ERROR_CODE(qnn.logCreate((QnnLog_Callback_t)bad[i], QNN_LOG_LEVEL_DEBUG, &log))
              == QNN_LOG_ERROR_INVALID_ARGUMENT);
    CHECK(log == NULL);
    rpcmem_alloc_fn alloc = (rpcmem_alloc_fn)dlsym(load("libcdsprpc.so"), "rpcmem_alloc");
    CHECK(alloc(12345, 1, 4096) == NULL);            /* logs: no callback was registered, nothing to crash */
    return 0;
}

/* --- local ------------------------------------------------------------------------------------------------ */
static int mode_local(const char *lib, const char *model)
{
    void *rt = load(lib);
    SYM(rt, rknn_init);
    SYM(rt, rknn_query);
    SYM(rt, rknn_destroy);
    rknn_context ctx = 0;
    CHECK_RET(p_rknn_init(&ctx, (void *)model, 0, 0, NULL), RKNN_SUCC);
    rknn_input_output_num io;
    CHECK_RET(p_rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io)), RKNN_SUCC);
    CHECK(io.n_input == 1 && io.n_output == 1);
    CHECK_RET(p_rknn_destroy(ctx), RKNN_SUCC);
    return 0;
}

/* --- readonly --------------------------------------------------------------------------------------------- */
static const rknn_init_extend ro_extend;             /* in .rodata: only read by rknn_init */
static const rknn_matmul_info ro_info = {.M = 4, .K = 64, .N = 64, .type = RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32};

static int mode_readonly(const char *model)
{
    void *rt = load("librknnrt.so");
    SYM(rt, rknn_init);
    SYM(rt, rknn_destroy);
    SYM(rt, rknn_matmul_create);
    SYM(rt, rknn_matmul_destroy);
    rknn_context ctx = 0;
    CHECK_RET(p_rknn_init(&ctx, (void *)model, 0, 0, (rknn_init_extend *)&ro_extend), RKNN_SUCC);
    CHECK_RET(p_rknn_destroy(ctx), RKNN_SUCC);
    rknn_matmul_ctx mm = 0;
    rknn_matmul_io_attr io;
    CHECK_RET(p_rknn_matmul_create(&mm, (rknn_matmul_info *)&ro_info, &io), RKNN_SUCC);
    CHECK_RET(p_rknn_matmul_destroy(mm), RKNN_SUCC);
    size_t size;
    void *bytes = read_file(model, &size);
    rknn_init_extend past;
    memset(&past, 0, sizeof(past));
    past.real_model_offset = (int32_t)size + 10;
    CHECK_RET(p_rknn_init(&ctx, bytes, (uint32_t)size, 0, &past), RKNN_ERR_PARAM_INVALID);
    free(bytes);
    return 0;
}

/* --- bigsize ---------------------------------------------------------------------------------------------- */
static uint8_t *guarded_copy(const void *data, size_t size)     /* `size` bytes, then a PROT_NONE page */
{
    size_t page = 4096, span = (size + page - 1) / page * page;
    uint8_t *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED && mprotect(map + span, page, PROT_NONE) == 0);
    memcpy(map + span - size, data, size);
    return map + span - size;
}

static int mode_bigsize(const char *model, const char *binary)
{
    void *rt = load("librknnrt.so");
    SYM(rt, rknn_init);
    SYM(rt, rknn_destroy);
    QNN_INTERFACE_VER_TYPE qnn = qnn_table(load("libQnnHtp.so"));
    Qnn_BackendHandle_t backend = NULL;
    Qnn_DeviceHandle_t device = NULL;
    CHECK(qnn.backendCreate(NULL, NULL, &backend) == QNN_SUCCESS);
    CHECK(qnn.deviceCreate(NULL, NULL, &device) == QNN_SUCCESS);
    size_t msize, bsize;
    void *mbytes = read_file(model, &msize), *bbytes = read_file(binary, &bsize);
    rknn_context ctx = 0;
    CHECK_RET(p_rknn_init(&ctx, mbytes, (uint32_t)msize, 0, NULL), RKNN_SUCC);     /* everything is loaded */
    CHECK_RET(p_rknn_destroy(ctx), RKNN_SUCC);
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm && fscanf(statm, "%ld", &pages) == 1);
    fclose(statm);
    struct rlimit limit = {(rlim_t)pages * 4096 + (1UL << 30), RLIM_INFINITY};
    CHECK(setrlimit(RLIMIT_AS, &limit) == 0);        /* 2 GiB cannot be allocated from here on */
    const uint32_t two_gib = 1U << 31;
    uint8_t *m = guarded_copy(mbytes, 20000 < msize ? 20000 : msize);
    CHECK_RET(p_rknn_init(&ctx, m, two_gib, 0, NULL), RKNN_ERR_PARAM_INVALID);
    uint64_t blob = 0, manifest = 0;                   /* npurt's header: manifest length at 28, blob length at 36 */
    memcpy(&manifest, (uint8_t *)bbytes + 28, 8);
    uint64_t blob_offset = (128 + manifest + 63) / 64 * 64;
    blob = two_gib - blob_offset;
    memcpy((uint8_t *)bbytes + 36, &blob, 8);          /* the header declares 2 GiB */
    uint8_t *b = guarded_copy(bbytes, bsize);
    Qnn_ContextHandle_t qctx = NULL;
    CHECK(QNN_GET_ERROR_CODE(qnn.contextCreateFromBinary(backend, device, NULL, b, two_gib, &qctx, NULL))
          == QNN_CONTEXT_ERROR_INVALID_ARGUMENT);
    CHECK(qctx == NULL);
    free(mbytes);
    free(bbytes);
    return 0;
}

/* --- fdreuse ------------------------------------------------------------------------------------------- */
static int mode_fdreuse(const char *model, const char *input)
{
    void *rt = load("librknnrt.so");
    SYM(rt, rknn_create_mem);
    SYM(rt, rknn_destroy_mem);
    rknn_context ctx = init_model(rt, model, input);
    rknn_tensor_mem *m = p_rknn_create_mem(ctx, 4096);
    CHECK(m != NULL && m->fd >= 0);
    int fd = m->fd;
    CHECK(close(fd) == 0);
    FILE *mine = fopen("/dev/null", "w");            /* takes the lowest free number: the one just closed */
    CHECK(mine != NULL && fileno(mine) == fd);
    CHECK_RET(p_rknn_destroy_mem(ctx, m), RKNN_SUCC);
    CHECK(fcntl(fd, F_GETFD) != -1);                  /* the caller's new file is still open */
    CHECK(fclose(mine) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 3);
    const char *mode = argv[1];
    libdir = argv[2];
    int rc = 1;
    if (!strcmp(mode, "race"))
        rc = mode_race();
    else if (!strcmp(mode, "dlclose"))
        rc = mode_dlclose();
    else if (!strcmp(mode, "exit") && argc == 5)
        rc = mode_exit(argv[3], argv[4]);
    else if (!strcmp(mode, "logcb"))
        rc = mode_logcb();
    else if (!strcmp(mode, "fork") && argc == 6)
        rc = mode_fork(argv[3], argv[4], atoi(argv[5]));
    else if (!strcmp(mode, "local") && argc == 5)
        rc = mode_local(argv[3], argv[4]);
    else if (!strcmp(mode, "readonly") && argc == 4)
        rc = mode_readonly(argv[3]);
    else if (!strcmp(mode, "bigsize") && argc == 5)
        rc = mode_bigsize(argv[3], argv[4]);
    else if (!strcmp(mode, "fdreuse") && argc == 5)
        rc = mode_fdreuse(argv[3], argv[4]);
    else if (!strcmp(mode, "fnptr") && argc == 4)
        rc = mode_fnptr(argv[3]);
    else
        fprintf(stderr, "unknown mode or arguments\n");
    if (rc == 0)
        printf("OK %s\n", mode);
    return rc;
}
