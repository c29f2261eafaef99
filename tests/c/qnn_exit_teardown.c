/* Teardown during process exit, in an odd order: an atexit handler registered before the first QNN call runs after
 * npurt's own exit handler and frees what main left — log first, then backend, context, device (and deregisters a
 * memory handle after its context is gone) — each must return QNN_SUCCESS, without a crash.
 * usage: qnn_exit_teardown MODEL.bin */
#include <unistd.h>

#include "qnn_app.h"

static Qnn_ContextHandle_t context;
static Qnn_MemHandle_t handle;

static void at_exit(void)
{
    Qnn_ErrorHandle_t r[5];
    r[0] = app.qnn.logFree(app.log);
    r[1] = app.qnn.backendFree(app.backend);
    r[2] = app.qnn.contextFree(context, NULL);
    r[3] = app.qnn.memDeRegister(&handle, 1);
    r[4] = app.qnn.deviceFree(app.device);
    printf("at exit: logFree %llu backendFree %llu contextFree %llu memDeRegister %llu deviceFree %llu\n",
           (unsigned long long)r[0], (unsigned long long)r[1], (unsigned long long)r[2], (unsigned long long)r[3],
           (unsigned long long)r[4]);
    fflush(stdout);
    if (r[0] || r[1] || r[2] || r[3] || r[4])
        _exit(3);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    atexit(at_exit);                    /* before npurt starts: runs after npurt's exit handler */
    app_load();
    app_open(argv[1]);
    context = app_context(NULL);
    Qnn_GraphHandle_t graph = app_graph(context);
    (void)graph;
    void *mem = app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)app.in_bytes[0]);
    CHECK(mem != NULL);
    Qnn_MemDescriptor_t desc = QNN_MEM_DESCRIPTOR_INIT;
    desc.memShape = (Qnn_MemShape_t){app.inputs[0].v1.rank, app.inputs[0].v1.dimensions, NULL};
    desc.dataType = app.inputs[0].v1.dataType;
    desc.memType = QNN_MEM_TYPE_ION;
    desc.ionInfo.fd = app.rpcmem_to_fd(mem);
    CHECK_QNN(app.qnn.memRegister(context, &desc, 1, &handle));
    printf("qnn_exit_teardown ok\n");
    fflush(stdout);
    return 0;                           /* everything left to the exit handler */
}
