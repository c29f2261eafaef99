/* Zero-copy QNN HTP inference from C against npurt: one rpcmem buffer holds every graph input and output
 * (QNN_HTP_MEM_SHARED_BUFFER, one memory handle per tensor offset), as the QNN HTP Shared Buffer Tutorial shows.
 * The three libraries are loaded with dlopen, as on a phone; npurt's libQnnHtp.so runs the context binary on the
 * CPU. Build and run it as docs/qnn-c-api.md says (from the top of the repository):
 *     make capi && npurt convert small_convnet --soc sm8550 -o build/model.bin
 *     make -C examples/c qnn_shared_buffer && LD_LIBRARY_PATH=build/capi/lib examples/c/qnn_shared_buffer build/model.bin
 * usage: qnn_shared_buffer MODEL.bin [N]  (prints the graph's outputs for a fixed input; with N, also the mean
 *        time of N more graphExecute calls, which bench/capi.py compares with the same calls from Python) */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "QnnInterface.h"
#include "HTP/QnnHtpMem.h"
#include "System/QnnSystemInterface.h"
#include "rpcmem.h"

#define TRY(expr)                                                                                   \
    do {                                                                                            \
        Qnn_ErrorHandle_t e_ = (expr);                                                              \
        if (QNN_GET_ERROR_CODE(e_) != QNN_SUCCESS) {                                                \
            fprintf(stderr, "%s failed: %llu\n", #expr, (unsigned long long)QNN_GET_ERROR_CODE(e_)); \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

static size_t tensor_bytes(const Qnn_Tensor_t *t)
{
    size_t n = t->v1.dataType == QNN_DATATYPE_FLOAT_32 ? 4 : t->v1.dataType == QNN_DATATYPE_FLOAT_16 ? 2 : 1;
    for (uint32_t k = 0; k < t->v1.rank; k++) n *= t->v1.dimensions[k];
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s MODEL.bin [N]\n", argv[0]);
        return 2;
    }
    /* the libraries, as applications load them */
    void *cdsp = dlopen("libcdsprpc.so", RTLD_NOW | RTLD_LOCAL);
    void *htp = dlopen("libQnnHtp.so", RTLD_NOW | RTLD_LOCAL);
    void *sys = dlopen("libQnnSystem.so", RTLD_NOW | RTLD_LOCAL);
    if (!cdsp || !htp || !sys) {
        fprintf(stderr, "dlopen: %s (set LD_LIBRARY_PATH to the prefix's lib/)\n", dlerror());
        return 1;
    }
    void *(*alloc)(int, uint32_t, int) = (void *(*)(int, uint32_t, int))dlsym(cdsp, "rpcmem_alloc");
    void (*release)(void *) = (void (*)(void *))dlsym(cdsp, "rpcmem_free");
    int (*to_fd)(void *) = (int (*)(void *))dlsym(cdsp, "rpcmem_to_fd");
    QnnInterfaceGetProvidersFn_t get = (QnnInterfaceGetProvidersFn_t)dlsym(htp, "QnnInterface_getProviders");
    QnnSystemInterfaceGetProvidersFn_t get_sys =
        (QnnSystemInterfaceGetProvidersFn_t)dlsym(sys, "QnnSystemInterface_getProviders");
    const QnnInterface_t **providers;
    const QnnSystemInterface_t **sys_providers;
    uint32_t n;
    TRY(get(&providers, &n));
    if (providers[0]->apiVersion.coreApiVersion.major != QNN_API_VERSION_MAJOR) return 1;
    QNN_INTERFACE_VER_TYPE qnn = providers[0]->QNN_INTERFACE_VER_NAME;
    TRY(get_sys(&sys_providers, &n));
    QNN_SYSTEM_INTERFACE_VER_TYPE qsys = sys_providers[0]->QNN_SYSTEM_INTERFACE_VER_NAME;

    /* the context binary and its graph */
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *binary = malloc(size);
    if (fread(binary, 1, size, f) != size) return 1;
    fclose(f);
    QnnSystemContext_Handle_t sys_ctx;
    const QnnSystemContext_BinaryInfo_t *info;
    Qnn_ContextBinarySize_t info_size;
    TRY(qsys.systemContextCreate(&sys_ctx));
    TRY(qsys.systemContextGetBinaryInfo(sys_ctx, binary, size, &info, &info_size));
    const QnnSystemContext_GraphInfoV3_t *g = &info->contextBinaryInfoV3.graphs[0].graphInfoV3;
    Qnn_BackendHandle_t backend;
    Qnn_DeviceHandle_t device;
    Qnn_ContextHandle_t context;
    Qnn_GraphHandle_t graph;
    TRY(qnn.backendCreate(NULL, NULL, &backend));
    TRY(qnn.deviceCreate(NULL, NULL, &device));
    TRY(qnn.contextCreateFromBinary(backend, device, NULL, binary, size, &context, NULL));
    TRY(qnn.graphRetrieve(context, g->graphName, &graph));

    /* one shared buffer for every I/O tensor, one handle per offset */
    uint32_t count = g->numGraphInputs + g->numGraphOutputs;
    Qnn_Tensor_t *tensors = calloc(count, sizeof(Qnn_Tensor_t));
    size_t *offsets = calloc(count, sizeof(size_t)), total = 0;
    for (uint32_t k = 0; k < count; k++) {
        tensors[k] = k < g->numGraphInputs ? g->graphInputs[k] : g->graphOutputs[k - g->numGraphInputs];
        offsets[k] = total;
        total += tensor_bytes(&tensors[k]);
    }
    uint8_t *buffer = alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)total);
    int fd = to_fd(buffer);
    for (uint32_t k = 0; k < count; k++) {
        QnnMemHtp_Descriptor_t htp_desc = {.type = QNN_HTP_MEM_SHARED_BUFFER, .size = total,
                                           .sharedBufferConfig = {fd, offsets[k]}};
        Qnn_MemDescriptor_t desc = {.memShape = {tensors[k].v1.rank, tensors[k].v1.dimensions, NULL},
                                    .dataType = tensors[k].v1.dataType, .memType = QNN_MEM_TYPE_CUSTOM,
                                    .customInfo = &htp_desc};
        tensors[k].v1.memType = QNN_TENSORMEMTYPE_MEMHANDLE;
        TRY(qnn.memRegister(context, &desc, 1, &tensors[k].v1.memHandle));
    }
    /* a fixed input, written straight into the shared buffer (NHWC float32: the graph's own format) */
    float *x = (float *)(buffer + offsets[0]);
    for (size_t i = 0; i < tensor_bytes(&tensors[0]) / 4; i++) x[i] = (float)sin(0.01 * (double)i);
    TRY(qnn.graphExecute(graph, tensors, g->numGraphInputs, tensors + g->numGraphInputs, g->numGraphOutputs, NULL,
                         NULL));
    for (uint32_t k = g->numGraphInputs; k < count; k++) {
        const float *y = (const float *)(buffer + offsets[k]);
        printf("%s:", tensors[k].v1.name);
        for (size_t i = 0; i < tensor_bytes(&tensors[k]) / 4; i++) printf(" %.6f", y[i]);
        printf("\n");
    }
    int calls = argc == 3 ? atoi(argv[2]) : 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < calls; i++)
        TRY(qnn.graphExecute(graph, tensors, g->numGraphInputs, tensors + g->numGraphInputs, g->numGraphOutputs,
                             NULL, NULL));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (calls > 0)
        printf("graphExecute_us %.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / calls);
    for (uint32_t k = 0; k < count; k++) TRY(qnn.memDeRegister(&tensors[k].v1.memHandle, 1));
    release(buffer);
    TRY(qnn.contextFree(context, NULL));
    TRY(qnn.deviceFree(device));
    TRY(qnn.backendFree(backend));
    TRY(qsys.systemContextFree(sys_ctx));
    free(tensors);
    free(offsets);
    free(binary);
    return 0;
}
