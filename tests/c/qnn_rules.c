/* Every rule of the shared-buffer tutorial broken once from C, in the FastRPC use case: each call returns the QNN
 * error code, leaves the handle NULL and changes nothing else (the earlier registrations keep working); then the
 * rpcmem misuses (interior-pointer to_fd and free, double free, free of foreign pointers) are harmless.
 * usage: qnn_rules SPILL_MODEL.bin INPUT.raw */
#include <pthread.h>
#include <sys/mman.h>
#include "qnn_app.h"

static Qnn_MemDescriptor_t custom(QnnMemHtp_Descriptor_t *htp, QnnHtpMem_Type_t type, uint64_t size, int fd,
                                  uint64_t offset)
{
    htp->type = type;
    htp->size = size;
    htp->sharedBufferConfig.fd = fd;
    htp->sharedBufferConfig.offset = offset;
    Qnn_MemDescriptor_t d = QNN_MEM_DESCRIPTOR_INIT;
    d.memType = QNN_MEM_TYPE_CUSTOM;
    d.customInfo = htp;
    return d;
}

static Qnn_ErrorHandle_t register_one(Qnn_ContextHandle_t ctx, Qnn_MemDescriptor_t d, Qnn_MemHandle_t *h)
{
    *h = (Qnn_MemHandle_t)0x1;                       /* the backend must reset it, and keep it NULL on failure */
    return app.qnn.memRegister(ctx, &d, 1, h);
}

#define BROKEN(expr, code, handle)                 \
    do {                                           \
        EXPECT_QNN(expr, code);                    \
        CHECK((handle) == NULL);                   \
        printf("rule %-40s -> %d\n", #code, code); \
    } while (0)

typedef struct {
    Qnn_GraphHandle_t graph;
    Qnn_Tensor_t *ins, *outs;
    int n, refused, other;
    volatile int *stop;
} Loop;

static void *execute_loop(void *arg)
{
    Loop *l = arg;
    for (int k = 0; k < l->n && !*l->stop; k++) {
        Qnn_ErrorHandle_t r = app.qnn.graphExecute(l->graph, l->ins, app.n_in, l->outs, app.n_out, NULL, NULL);
        if (QNN_GET_ERROR_CODE(r) == QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE) l->refused++;
        else if (r != QNN_SUCCESS) l->other++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    app_load();
    int fds_before = count_fds();
    app_open(argv[1]);
    const QnnContext_Config_t *deferred[] = {&defer_config, NULL};
    Qnn_ContextHandle_t ctx = app_context(deferred);
    uint64_t wsize = app_property(ctx, QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE);
    uint64_t ssize = app_property(ctx, QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE);
    CHECK(wsize > 0 && ssize > 0);
    uint8_t *weights = app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)(wsize + 4096));
    uint8_t *spill = app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)ssize);
    CHECK(weights && spill);
    int wfd = app.rpcmem_to_fd(weights), sfd = app.rpcmem_to_fd(spill);
    QnnMemHtp_Descriptor_t htp;
    Qnn_MemHandle_t h, wh = NULL;

    /* a start address off the BUFFER_START_ALIGNMENT */
    BROKEN(register_one(ctx, custom(&htp, QNN_HTP_MEM_WEIGHTS_BUFFER, wsize, wfd, 64), &h),
           QNN_MEM_ERROR_INVALID_SHAPE, h);
    /* a buffer below the required size */
    BROKEN(register_one(ctx, custom(&htp, QNN_HTP_MEM_WEIGHTS_BUFFER, wsize - 4096, wfd, 0), &h),
           QNN_MEM_ERROR_INVALID_ARGUMENT, h);
    /* VTCM backup in FastRPC */
    BROKEN(register_one(ctx, custom(&htp, QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER, ssize, sfd, 0), &h),
           QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE, h);
    /* registering with no context */
    BROKEN(register_one(NULL, custom(&htp, QNN_HTP_MEM_WEIGHTS_BUFFER, wsize, wfd, 0), &h),
           QNN_MEM_ERROR_INVALID_HANDLE, h);
    /* the weights buffer, properly */
    CHECK_QNN(register_one(ctx, custom(&htp, QNN_HTP_MEM_WEIGHTS_BUFFER, wsize, wfd, 0), &wh));
    CHECK(wh != NULL);
    /* a weights fd reused as ION or as SHARED_BUFFER */
    Qnn_MemDescriptor_t ion = QNN_MEM_DESCRIPTOR_INIT;
    ion.memShape = (Qnn_MemShape_t){app.inputs[0].v1.rank, app.inputs[0].v1.dimensions, NULL};
    ion.dataType = app.inputs[0].v1.dataType;
    ion.memType = QNN_MEM_TYPE_ION;
    ion.ionInfo.fd = wfd;
    BROKEN(register_one(ctx, ion, &h), QNN_MEM_ERROR_INVALID_ARGUMENT, h);
    Qnn_MemDescriptor_t shared = custom(&htp, QNN_HTP_MEM_SHARED_BUFFER, wsize, wfd, 0);
    shared.memShape = ion.memShape;
    shared.dataType = ion.dataType;
    BROKEN(register_one(ctx, shared, &h), QNN_MEM_ERROR_INVALID_ARGUMENT, h);
    /* one weights buffer for two contexts */
    Qnn_ContextHandle_t ctx2 = app_context(deferred);
    BROKEN(register_one(ctx2, custom(&htp, QNN_HTP_MEM_WEIGHTS_BUFFER, wsize, wfd, 0), &h),
           QNN_MEM_ERROR_ALREADY_REGISTERED, h);
    /* registering context buffers outside the DEFER_GRAPH_INIT window (a context that was never deferred) */
    Qnn_ContextHandle_t plain = app_context(NULL);
    BROKEN(register_one(plain, custom(&htp, QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, ssize, sfd, 0), &h),
           QNN_MEM_ERROR_NOT_SUPPORTED, h);
    CHECK_QNN(app.qnn.contextFree(plain, NULL));
    /* deregistering after finalize: refused, the buffer stays registered and in use */
    CHECK_QNN(app.qnn.contextFinalize(ctx, NULL));
    EXPECT_QNN(app.qnn.memDeRegister(&wh, 1), QNN_MEM_ERROR_INVALID_ARGUMENT);
    printf("rule %-40s -> %d\n", "deregister after finalize", QNN_MEM_ERROR_INVALID_ARGUMENT);
    /* nothing else changed: the context runs on its registered weights */
    size_t input_size;
    void *input = read_file(argv[2], &input_size);
    Qnn_Tensor_t ins[MAX_IO], outs[MAX_IO], ins2[MAX_IO], outs2[MAX_IO];
    void *outputs[MAX_IO], *outputs2[MAX_IO];
    app_raw_io(ins, outs, input, outputs);
    app_raw_io(ins2, outs2, input, outputs2);
    Qnn_GraphHandle_t graph = app_graph(ctx);
    CHECK_QNN(app.qnn.graphExecute(graph, ins, app.n_in, outs, app.n_out, NULL, NULL));
    /* a RAW output whose buffer ends in a PROT_NONE page: refused, and not one byte of it written */
    size_t page = 4096, pages = (app.out_bytes[0] + page - 1) / page + 1;
    uint8_t *map = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED && mprotect(map + (pages - 1) * page, page, PROT_NONE) == 0);
    memset(map, 0xAB, (pages - 1) * page);
    void *good = outs[0].v1.clientBuf.data;
    outs[0].v1.clientBuf.data = map + (pages - 1) * page - (app.out_bytes[0] - 16);   /* 16 bytes unmapped */
    EXPECT_QNN(app.qnn.graphExecute(graph, ins, app.n_in, outs, app.n_out, NULL, NULL),
               QNN_GRAPH_ERROR_INVALID_TENSOR);
    for (size_t k = 0; k < (pages - 1) * page; k++)
        CHECK(map[k] == 0xAB);
    outs[0].v1.clientBuf.data = good;
    munmap(map, pages * page);
    printf("rule %-40s -> %d\n", "output buffer half mapped", QNN_GRAPH_ERROR_INVALID_TENSOR);
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    CHECK_QNN(app.qnn.contextFree(ctx2, NULL));

    /* two graphs sharing a spill-fill buffer executed in parallel: the second is refused while the first runs */
    Qnn_ContextHandle_t a = app_context(deferred), b = app_context(deferred);
    Qnn_MemHandle_t ha = NULL, hb = NULL;
    CHECK_QNN(register_one(a, custom(&htp, QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, ssize, sfd, 0), &ha));
    CHECK_QNN(register_one(b, custom(&htp, QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, ssize, sfd, 0), &hb));
    CHECK_QNN(app.qnn.contextFinalize(a, NULL));
    CHECK_QNN(app.qnn.contextFinalize(b, NULL));
    volatile int stop = 0;
    Loop la = {app_graph(a), ins, outs, 40, 0, 0, &stop}, lb = {app_graph(b), ins2, outs2, 1, 0, 0, &stop};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, execute_loop, &la) == 0);
    for (int k = 0; k < 400 && la.refused + lb.refused == 0; k++) {
        Loop once = {lb.graph, ins2, outs2, 1, 0, 0, &stop};
        execute_loop(&once);
        lb.refused += once.refused;
        lb.other += once.other;
    }
    stop = 1;
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(la.other == 0 && lb.other == 0);
    CHECK(la.refused + lb.refused > 0);
    printf("rule %-40s -> %d (%d refused)\n", "parallel graphs on one spill-fill", QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE,
           la.refused + lb.refused);
    CHECK_QNN(app.qnn.graphExecute(la.graph, ins, app.n_in, outs, app.n_out, NULL, NULL));   /* one at a time */
    CHECK_QNN(app.qnn.graphExecute(lb.graph, ins2, app.n_in, outs2, app.n_out, NULL, NULL));
    CHECK(memcmp(outputs[0], outputs2[0], app.out_bytes[0]) == 0);
    CHECK_QNN(app.qnn.contextFree(a, NULL));
    CHECK_QNN(app.qnn.contextFree(b, NULL));

    /* rpcmem misuse */
    CHECK(app.rpcmem_to_fd(weights + 4096) == -1);           /* interior pointer: not an allocation */
    app.rpcmem_free(weights + 4096);                          /* ignored: the buffer is not freed ... */
    CHECK(app.rpcmem_to_fd(weights) == wfd);                  /* ... and still usable */
    weights[0] = 1;
    int on_stack = 0;
    app.rpcmem_free(&on_stack);                               /* not rpcmem: ignored */
    app.rpcmem_free(NULL);
    app.rpcmem_free(weights);
    CHECK(app.rpcmem_to_fd(weights) == -1);
    app.rpcmem_free(weights);                                 /* double free: ignored */
    app.rpcmem_free(spill);
    printf("rule %-40s -> ok\n", "rpcmem misuse");
    for (uint32_t k = 0; k < app.n_out; k++) {
        free(outputs[k]);
        free(outputs2[k]);
    }
    app_close();
    free(input);
    CHECK(count_fds() == fds_before);
    printf("qnn_rules ok\n");
    return 0;
}
