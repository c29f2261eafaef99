/* The SampleApp prerequisites of the shared-buffer tutorial, written out once for npurt's QNN C tests: load
 * libcdsprpc.so, libQnnHtp.so and libQnnSystem.so with dlopen as applications do, check the provider's API
 * version, create log / backend / device, read a context binary and discover its graph with the system context. */
#ifndef NPURT_TEST_QNN_APP_H
#define NPURT_TEST_QNN_APP_H

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>

#include "common.h"
#include "QnnInterface.h"
#include "HTP/QnnHtpContext.h"
#include "HTP/QnnHtpDevice.h"
#include "HTP/QnnHtpMem.h"
#include "System/QnnSystemInterface.h"

typedef void *(*RpcMemAllocFn_t)(int, uint32_t, int);
typedef void (*RpcMemFreeFn_t)(void *);
typedef int (*RpcMemToFdFn_t)(void *);
typedef void *(*QurtMallocFn_t)(size_t);
typedef void (*QurtFreeFn_t)(void *);

#define RPCMEM_HEAP_ID_SYSTEM 25
#define RPCMEM_DEFAULT_FLAGS 1
#define MAX_IO 8

typedef struct {
    void *cdsp, *htp, *system;
    RpcMemAllocFn_t rpcmem_alloc;
    RpcMemFreeFn_t rpcmem_free;
    RpcMemToFdFn_t rpcmem_to_fd;
    QurtMallocFn_t qurt_malloc;
    QurtFreeFn_t qurt_free;
    QNN_INTERFACE_VER_TYPE qnn;
    QNN_SYSTEM_INTERFACE_VER_TYPE sys;
    Qnn_LogHandle_t log;
    Qnn_BackendHandle_t backend;
    Qnn_DeviceHandle_t device;
    QnnSystemContext_Handle_t sys_ctx;
    void *binary;
    size_t binary_size;
    const char *graph_name;
    uint32_t n_in, n_out;
    Qnn_Tensor_t inputs[MAX_IO], outputs[MAX_IO];   /* copies of the binary info's tensors */
    size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
    int log_lines;
} App;

static __attribute__((unused)) App app;

#define CHECK_QNN(expr) EXPECT_QNN(expr, QNN_SUCCESS)
#define EXPECT_QNN(expr, want)                                                                             \
    do {                                                                                                   \
        Qnn_ErrorHandle_t got_ = (expr);                                                                   \
        if (QNN_GET_ERROR_CODE(got_) != (want)) {                                                          \
            const char *msg_ = "?";                                                                        \
            if (app.qnn.errorGetMessage) app.qnn.errorGetMessage(got_, &msg_);                             \
            fprintf(stderr, "CHECK failed %s:%d: %s returned %llu (%s), expected %d\n", __FILE__, __LINE__, \
                    #expr, (unsigned long long)got_, msg_, (int)(want));                                   \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

static inline void app_log(const char *fmt, QnnLog_Level_t level, uint64_t timestamp, va_list args)
{
    (void)timestamp;
    app.log_lines++;
    fprintf(stderr, "[qnn log %d] ", (int)level);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
}

static inline int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static inline size_t tensor_bytes(const Qnn_Tensor_t *t)
{
    size_t n = 1;
    for (uint32_t k = 0; k < t->v1.rank; k++) n *= t->v1.dimensions[k];
    switch (t->v1.dataType) {
    case QNN_DATATYPE_FLOAT_32: case QNN_DATATYPE_INT_32: case QNN_DATATYPE_UINT_32: return 4 * n;
    case QNN_DATATYPE_FLOAT_16: case QNN_DATATYPE_INT_16: case QNN_DATATYPE_UINT_16: return 2 * n;
    default: return n;
    }
}

/* dlopen the three libraries and take the providers (SampleApp: API major must match, minor at least ours) */
/* A RAW graph tensor (v1): `data` / `size` its client buffer (NULL / 0 for none); what the graph-building tests
 * declare with tensorCreateGraphTensor and pass to graphExecute */
static inline Qnn_Tensor_t app_tensor(const char *name, Qnn_TensorType_t type, uint32_t rank, uint32_t *dims,
                                      Qnn_DataType_t dtype, void *data, uint32_t size)
{
    Qnn_Tensor_t t = QNN_TENSOR_INIT;
    t.v1.name = name;
    t.v1.type = type;
    t.v1.dataType = dtype;
    t.v1.rank = rank;
    t.v1.dimensions = dims;
    t.v1.memType = QNN_TENSORMEMTYPE_RAW;
    t.v1.clientBuf.data = data;
    t.v1.clientBuf.dataSize = size;
    return t;
}

/* An op config of the QTI AISW package over `ins` -> `outs` with `params` */
static inline Qnn_OpConfig_t app_op(const char *name, const char *type, Qnn_Param_t *params, uint32_t n_params,
                                    Qnn_Tensor_t *ins, uint32_t n_in, Qnn_Tensor_t *outs, uint32_t n_out)
{
    Qnn_OpConfig_t cfg = QNN_OPCONFIG_INIT;
    cfg.v1.name = name;
    cfg.v1.packageName = QNN_OP_PACKAGE_NAME_QTI_AISW;
    cfg.v1.typeName = type;
    cfg.v1.numOfParams = n_params;
    cfg.v1.params = params;
    cfg.v1.numOfInputs = n_in;
    cfg.v1.inputTensors = ins;
    cfg.v1.numOfOutputs = n_out;
    cfg.v1.outputTensors = outs;
    return cfg;
}

static inline void app_load(void)
{
    app.cdsp = dlopen("libcdsprpc.so", RTLD_NOW | RTLD_LOCAL);
    app.htp = dlopen("libQnnHtp.so", RTLD_NOW | RTLD_LOCAL);
    app.system = dlopen("libQnnSystem.so", RTLD_NOW | RTLD_LOCAL);
    if (!app.cdsp || !app.htp || !app.system) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(1);
    }
    app.rpcmem_alloc = (RpcMemAllocFn_t)dlsym(app.cdsp, "rpcmem_alloc");
    app.rpcmem_free = (RpcMemFreeFn_t)dlsym(app.cdsp, "rpcmem_free");
    app.rpcmem_to_fd = (RpcMemToFdFn_t)dlsym(app.cdsp, "rpcmem_to_fd");
    app.qurt_malloc = (QurtMallocFn_t)dlsym(app.htp, "qurt_malloc");
    app.qurt_free = (QurtFreeFn_t)dlsym(app.htp, "qurt_free");
    CHECK(app.rpcmem_alloc && app.rpcmem_free && app.rpcmem_to_fd && app.qurt_malloc && app.qurt_free);

    QnnInterfaceGetProvidersFn_t get = (QnnInterfaceGetProvidersFn_t)dlsym(app.htp, "QnnInterface_getProviders");
    CHECK(get != NULL);
    const QnnInterface_t **providers = NULL;
    uint32_t n = 0;
    CHECK_QNN(get(&providers, &n));
    CHECK(n == 1 && providers != NULL);
    CHECK(providers[0]->backendId == QNN_BACKEND_ID_HTP);
    CHECK(strcmp(providers[0]->providerName, "HTP_QTI_AISW") == 0);
    CHECK(providers[0]->apiVersion.coreApiVersion.major == QNN_API_VERSION_MAJOR);
    CHECK(providers[0]->apiVersion.coreApiVersion.minor >= QNN_API_VERSION_MINOR);
    app.qnn = providers[0]->QNN_INTERFACE_VER_NAME;

    QnnSystemInterfaceGetProvidersFn_t get_sys =
        (QnnSystemInterfaceGetProvidersFn_t)dlsym(app.system, "QnnSystemInterface_getProviders");
    CHECK(get_sys != NULL);
    const QnnSystemInterface_t **sys_providers = NULL;
    CHECK_QNN(get_sys(&sys_providers, &n));
    CHECK(n == 1 && sys_providers[0]->systemApiVersion.major == QNN_SYSTEM_API_VERSION_MAJOR);
    app.sys = sys_providers[0]->QNN_SYSTEM_INTERFACE_VER_NAME;
    CHECK(app.sys.systemContextCreate && app.sys.systemContextGetBinaryInfo && app.sys.systemContextFree);
}

/* log, backend, device; the context binary and its graph (name, I/O tensors) from the system context */
static inline void app_open(const char *binary_path)
{
    CHECK_QNN(app.qnn.logCreate(app_log, QNN_LOG_LEVEL_ERROR, &app.log));
    CHECK_QNN(app.qnn.backendCreate(app.log, NULL, &app.backend));
    CHECK_QNN(app.qnn.propertyHasCapability(QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE));
    CHECK_QNN(app.qnn.deviceCreate(app.log, NULL, &app.device));
    const char *build_id = NULL;
    CHECK_QNN(app.qnn.backendGetBuildId(&build_id));
    CHECK(build_id != NULL && strlen(build_id) > 0);

    app.binary = read_file(binary_path, &app.binary_size);
    CHECK_QNN(app.sys.systemContextCreate(&app.sys_ctx));
    const QnnSystemContext_BinaryInfo_t *info = NULL;
    Qnn_ContextBinarySize_t info_size = 0;
    CHECK_QNN(app.sys.systemContextGetBinaryInfo(app.sys_ctx, app.binary, app.binary_size, &info, &info_size));
    CHECK(info->version == QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3);
    const QnnSystemContext_BinaryInfoV3_t *v3 = &info->contextBinaryInfoV3;
    CHECK(v3->numGraphs == 1 && v3->graphs[0].version == QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_3);
    const QnnSystemContext_GraphInfoV3_t *g = &v3->graphs[0].graphInfoV3;
    CHECK(g->numGraphInputs <= MAX_IO && g->numGraphOutputs <= MAX_IO);
    app.graph_name = g->graphName;
    app.n_in = g->numGraphInputs;
    app.n_out = g->numGraphOutputs;
    for (uint32_t k = 0; k < app.n_in; k++) {
        app.inputs[k] = g->graphInputs[k];
        app.in_bytes[k] = tensor_bytes(&app.inputs[k]);
    }
    for (uint32_t k = 0; k < app.n_out; k++) {
        app.outputs[k] = g->graphOutputs[k];
        app.out_bytes[k] = tensor_bytes(&app.outputs[k]);
    }
}

static inline Qnn_ContextHandle_t app_context(const QnnContext_Config_t **config)
{
    Qnn_ContextHandle_t ctx = NULL;
    CHECK_QNN(app.qnn.contextCreateFromBinary(app.backend, app.device, config, app.binary, app.binary_size, &ctx,
                                              NULL));
    CHECK(ctx != NULL);
    return ctx;
}

static inline Qnn_GraphHandle_t app_graph(Qnn_ContextHandle_t ctx)
{
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphRetrieve(ctx, app.graph_name, &graph));
    return graph;
}

/* RAW client buffers for every tensor: inputs from `input` (the graph's input bytes back to back) */
static inline void app_raw_io(Qnn_Tensor_t *ins, Qnn_Tensor_t *outs, void *input, void **outputs)
{
    size_t off = 0;
    for (uint32_t k = 0; k < app.n_in; k++) {
        ins[k] = app.inputs[k];
        ins[k].v1.memType = QNN_TENSORMEMTYPE_RAW;
        ins[k].v1.clientBuf.data = (char *)input + off;
        ins[k].v1.clientBuf.dataSize = (uint32_t)app.in_bytes[k];
        off += app.in_bytes[k];
    }
    for (uint32_t k = 0; k < app.n_out; k++) {
        outs[k] = app.outputs[k];
        outs[k].v1.memType = QNN_TENSORMEMTYPE_RAW;
        outputs[k] = calloc(1, app.out_bytes[k]);
        outs[k].v1.clientBuf.data = outputs[k];
        outs[k].v1.clientBuf.dataSize = (uint32_t)app.out_bytes[k];
    }
}

static __attribute__((unused)) QnnContext_Config_t defer_config = {.option = QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT,
                                           .isGraphInitDeferred = 1};

/* one HTP custom property of a deferred context */
static inline uint64_t app_property(Qnn_ContextHandle_t ctx, QnnHtpContext_GetPropertyOption_t option)
{
    QnnHtpContext_CustomProperty_t custom = QNN_HTP_CONTEXT_CUSTOM_PROPERTY_INIT;
    custom.option = option;
    custom.bufferStartAlignment = (uint64_t)-1;
    QnnContext_Property_t property = QNN_CONTEXT_PROPERTY_INIT;
    property.option = QNN_CONTEXT_PROPERTY_OPTION_CUSTOM;
    property.customProperty = &custom;
    QnnContext_Property_t *properties[] = {&property, NULL};
    CHECK_QNN(app.qnn.contextGetProperty(ctx, properties));
    return custom.bufferStartAlignment;
}

static inline void app_close(void)
{
    CHECK_QNN(app.sys.systemContextFree(app.sys_ctx));
    CHECK_QNN(app.qnn.deviceFree(app.device));
    CHECK_QNN(app.qnn.backendFree(app.backend));
    CHECK_QNN(app.qnn.logFree(app.log));
    free(app.binary);
}

#endif
