/* One npurt library copied alone into a folder, linked by this program (-L FOLDER -l...), and a real call through
 * it. Built with one of -DCOPY_RKNNRT (librknnrt.so / librknnmrt.so), -DCOPY_QNNHTP, -DCOPY_QNNSYSTEM,
 * -DCOPY_CDSPRPC, so it references that library's functions only.
 *   copy_alone [MODEL]     MODEL: an ONNX model for rknn_init (COPY_RKNNRT)
 * Prints "OK copy_alone" and exits 0 on success. */
#include <stdint.h>

#include "common.h"

#if defined(COPY_RKNNRT)
#include "rknn_api.h"

static void real_call(int argc, char **argv)
{
    CHECK(argc == 2);
    size_t size;
    void *model = read_file(argv[1], &size);
    rknn_context ctx = 0;
    CHECK_RET(rknn_init(&ctx, model, (uint32_t)size, 0, NULL), RKNN_SUCC);
    rknn_input_output_num io;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io)), RKNN_SUCC);
    CHECK(io.n_input == 1 && io.n_output == 1);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    free(model);
}
#elif defined(COPY_QNNHTP)
#include "QnnInterface.h"

static void real_call(int argc, char **argv)
{
    (void)argc, (void)argv;
    const QnnInterface_t **providers = NULL;
    uint32_t n = 0;
    CHECK(QnnInterface_getProviders(&providers, &n) == QNN_SUCCESS && n == 1);
    QNN_INTERFACE_VER_TYPE qnn = providers[0]->QNN_INTERFACE_VER_NAME;
    Qnn_BackendHandle_t backend = NULL;
    CHECK(qnn.backendCreate(NULL, NULL, &backend) == QNN_SUCCESS && backend != NULL);
    CHECK(qnn.backendFree(backend) == QNN_SUCCESS);
}
#elif defined(COPY_QNNSYSTEM)
#include "System/QnnSystemInterface.h"

static void real_call(int argc, char **argv)
{
    (void)argc, (void)argv;
    const QnnSystemInterface_t **providers = NULL;
    uint32_t n = 0;
    CHECK(QnnSystemInterface_getProviders(&providers, &n) == QNN_SUCCESS && n == 1);
    QNN_SYSTEM_INTERFACE_VER_TYPE sys = providers[0]->QNN_SYSTEM_INTERFACE_VER_NAME;
    QnnSystemContext_Handle_t handle = NULL;
    CHECK(sys.systemContextCreate(&handle) == QNN_SUCCESS && handle != NULL);
    CHECK(sys.systemContextFree(handle) == QNN_SUCCESS);
}
#elif defined(COPY_CDSPRPC)
#include "rpcmem.h"

static void real_call(int argc, char **argv)
{
    (void)argc, (void)argv;
    char *p = rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, 4096);
    CHECK(p != NULL);
    memset(p, 7, 4096);
    CHECK(rpcmem_to_fd(p) >= 0);
    rpcmem_free(p);
}
#else
#error "build with one of -DCOPY_RKNNRT, -DCOPY_QNNHTP, -DCOPY_QNNSYSTEM, -DCOPY_CDSPRPC"
#endif

int main(int argc, char **argv)
{
    real_call(argc, argv);
    printf("OK copy_alone\n");
    return 0;
}
