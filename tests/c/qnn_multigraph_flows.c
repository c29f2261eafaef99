/* The multi-graph flows of onnxruntime's QNN EP, called member by member from C through npurt's libQnnHtp.so and
 * libQnnSystem.so (as an LLM deployment's prompt and token graphs use them):
 * 1. two graphs ("prompt": 16 rows, "token": 1 row; the same FullyConnected weights, three outputs each, one of
 *    them read inside) built in one context, with and without the HTP config WEIGHT_SHARING_ENABLED; each context
 *    written with contextGetBinarySize / contextGetBinary and freed; the shared binary is smaller by at least 80 %
 *    of the weights' stored bytes;
 * 2. systemContextGetBinaryInfo reports numGraphs = 2 (graph info V3, names, three outputs each);
 * 3. one contextCreateFromBinary, graphRetrieve of both graphs by name (and of a missing one: 6003), graphExecute of
 *    each with its outputs listed in the reverse of the graph's order (paired by id), and a tensor the graph does
 *    not have refused 6004; outputs against the reference computed here;
 * 4. a spill-fill group: two one-graph contexts whose activations overflow VTCM, loaded with
 *    REGISTER_MULTI_CONTEXTS {NULL, the larger spillFillBufferSize} then {first, 0}, both run, the QNN memory report
 *    logged at the verbose level; a group of the smaller buffer refuses the larger context (5010).
 * Prints "qnn_multigraph_flows ok" and the binary sizes. */
#include <math.h>

#include "qnn_app.h"

#define IN 32
#define OUT 64
#define ROWS_PROMPT 16
#define ROWS_TOKEN 1
#define CHAIN_COLS 1024
#define F32 QNN_DATATYPE_FLOAT_32

/* The first fields of the HTP graph blob info (QnnHtpSystemContext_GraphBlobInfo_t V1) a graph info V3 points to */
typedef struct {
    uint32_t version;
    uint64_t spillFillBufferSize;
    uint32_t vtcmSize;
} GraphBlobInfoV1;

static float weights[OUT * IN];
static uint32_t w_dims[] = {OUT, IN};

/* graph `name`: x [rows, IN] -> FullyConnected(w) -> a -> Relu -> r -> Neg -> n; a, r and n are outputs */
static void fc_graph(Qnn_ContextHandle_t ctx, const char *name, uint32_t rows)
{
    static uint32_t dims[2][2][2];
    static char names[2][4][32];
    int k = rows == ROWS_PROMPT ? 0 : 1;
    dims[k][0][0] = dims[k][1][0] = rows;
    dims[k][0][1] = IN;
    dims[k][1][1] = OUT;
    const char *stems[] = {"x", "a", "r", "n"};
    for (int i = 0; i < 4; i++) snprintf(names[k][i], sizeof names[k][i], "%s_%s", stems[i], name);
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphCreate(ctx, name, NULL, &graph));
    Qnn_Tensor_t x = app_tensor(names[k][0], QNN_TENSOR_TYPE_APP_WRITE, 2, dims[k][0], F32, NULL, 0);
    Qnn_Tensor_t w = app_tensor("w", QNN_TENSOR_TYPE_STATIC, 2, w_dims, F32, weights, sizeof weights);
    Qnn_Tensor_t a = app_tensor(names[k][1], QNN_TENSOR_TYPE_APP_READ, 2, dims[k][1], F32, NULL, 0);
    Qnn_Tensor_t r = app_tensor(names[k][2], QNN_TENSOR_TYPE_APP_READ, 2, dims[k][1], F32, NULL, 0);
    Qnn_Tensor_t n = app_tensor(names[k][3], QNN_TENSOR_TYPE_APP_READ, 2, dims[k][1], F32, NULL, 0);
    Qnn_Tensor_t *all[] = {&x, &w, &a, &r, &n};
    for (int i = 0; i < 5; i++) CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, all[i]));
    Qnn_Tensor_t fc_in[] = {x, w};
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("fc", "FullyConnected", NULL, 0, fc_in, 2, &a, 1)));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("relu", "Relu", NULL, 0, &a, 1, &r, 1)));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("neg", "ElementWiseNeg", NULL, 0, &r, 1, &n, 1)));
    CHECK_QNN(app.qnn.graphFinalize(graph, NULL, NULL));
}

static void *context_binary(Qnn_ContextHandle_t ctx, Qnn_ContextBinarySize_t *size)
{
    Qnn_ContextBinarySize_t written = 0;
    CHECK_QNN(app.qnn.contextGetBinarySize(ctx, size));
    void *blob = malloc(*size);
    CHECK(blob != NULL);
    CHECK_QNN(app.qnn.contextGetBinary(ctx, blob, *size, &written));
    CHECK(written == *size);
    return blob;
}

/* the prompt and token graphs in one context (WEIGHT_SHARING_ENABLED = `sharing`), written and freed */
static void *pair_binary(int sharing, Qnn_ContextBinarySize_t *size)
{
    QnnHtpContext_CustomConfig_t htp = QNN_HTP_CONTEXT_CUSTOM_CONFIG_INIT;
    htp.option = QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED;
    htp.weightSharingEnabled = true;
    QnnContext_Config_t cfg = QNN_CONTEXT_CONFIG_INIT;
    cfg.option = QNN_CONTEXT_CONFIG_OPTION_CUSTOM;
    cfg.customConfig = &htp;
    const QnnContext_Config_t *configs[] = {&cfg, NULL};
    Qnn_ContextHandle_t ctx = NULL;
    CHECK_QNN(app.qnn.contextCreate(app.backend, app.device, sharing ? configs : NULL, &ctx));
    fc_graph(ctx, "prompt", ROWS_PROMPT);
    fc_graph(ctx, "token", ROWS_TOKEN);
    void *blob = context_binary(ctx, size);
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    return blob;
}

static const QnnSystemContext_BinaryInfoV3_t *binary_info(void *blob, Qnn_ContextBinarySize_t size)
{
    const QnnSystemContext_BinaryInfo_t *info = NULL;
    Qnn_ContextBinarySize_t info_size = 0;
    CHECK_QNN(app.sys.systemContextGetBinaryInfo(app.sys_ctx, blob, size, &info, &info_size));
    CHECK(info->version == QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3);
    return &info->contextBinaryInfoV3;
}

static float max_abs(const float *v, size_t n)
{
    float m = 1.0f;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(v[i]));
    return m;
}

/* graphExecute of graph `g` (the binary info's graph info V3) with its outputs listed in reverse order */
static void run_fc(Qnn_ContextHandle_t ctx, const QnnSystemContext_GraphInfoV3_t *g, uint32_t rows)
{
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphRetrieve(ctx, g->graphName, &graph));
    CHECK(g->numGraphInputs == 1 && g->numGraphOutputs == 3);
    float *x = malloc(sizeof(float) * rows * IN), *ref = malloc(sizeof(float) * rows * OUT);
    float *outs[3];
    for (uint32_t i = 0; i < rows * IN; i++) x[i] = (float)((int)(i * 29 % 31) - 15) / 8.0f;
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t o = 0; o < OUT; o++) {
            float s = 0;
            for (uint32_t k = 0; k < IN; k++) s += x[i * IN + k] * weights[o * IN + k];
            ref[i * OUT + o] = s;
        }
    Qnn_Tensor_t in = g->graphInputs[0], out[3];
    in.v1.clientBuf.data = x;
    in.v1.clientBuf.dataSize = sizeof(float) * rows * IN;
    for (int k = 0; k < 3; k++) {                      /* listed n, r, a: the graph's order reversed */
        out[k] = g->graphOutputs[2 - k];
        CHECK(out[k].v1.id != 0 && tensor_bytes(&out[k]) == sizeof(float) * rows * OUT);
        outs[k] = calloc(rows * OUT, sizeof(float));
        out[k].v1.memType = QNN_TENSORMEMTYPE_RAW;
        out[k].v1.clientBuf.data = outs[k];
        out[k].v1.clientBuf.dataSize = sizeof(float) * rows * OUT;
    }
    CHECK_QNN(app.qnn.graphExecute(graph, &in, 1, out, 3, NULL, NULL));
    float tol = 4e-3f * max_abs(ref, rows * OUT);     /* float graphs compute at fp16 */
    for (uint32_t i = 0; i < rows * OUT; i++) {
        float a = ref[i], r = a > 0 ? a : 0;
        CHECK(fabsf(outs[2][i] - a) <= tol && fabsf(outs[1][i] - r) <= tol && fabsf(outs[0][i] + r) <= tol);
    }
    /* a tensor this graph does not have: refused with its name, nothing written */
    Qnn_Tensor_t stranger = out[0];
    stranger.v1.id = 424242;
    stranger.v1.name = "not_here";
    outs[0][0] = 7.0f;
    Qnn_Tensor_t bad[] = {stranger, out[1], out[2]};
    EXPECT_QNN(app.qnn.graphExecute(graph, &in, 1, bad, 3, NULL, NULL), QNN_GRAPH_ERROR_INVALID_TENSOR);
    CHECK(outs[0][0] == 7.0f);
    for (int k = 0; k < 3; k++) free(outs[k]);
    free(x);
    free(ref);
}

/* a one-graph context of x -> Relu -> Sigmoid -> Neg -> y on [1, rows, CHAIN_COLS] (two activations live at once:
 * past 4 MiB of VTCM at 1024 rows and more), written and freed; its spillFillBufferSize from the binary info */
static void *chain_binary(const char *name, uint32_t rows, Qnn_ContextBinarySize_t *size, uint64_t *spill)
{
    static uint32_t dims[2][3];
    int k = name[0] == 'b' ? 0 : 1;
    dims[k][0] = 1;
    dims[k][1] = rows;
    dims[k][2] = CHAIN_COLS;
    Qnn_ContextHandle_t ctx = NULL;
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.contextCreate(app.backend, app.device, NULL, &ctx));
    CHECK_QNN(app.qnn.graphCreate(ctx, name, NULL, &graph));
    Qnn_Tensor_t x = app_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, 3, dims[k], F32, NULL, 0);
    Qnn_Tensor_t a = app_tensor("a", QNN_TENSOR_TYPE_NATIVE, 3, dims[k], F32, NULL, 0);
    Qnn_Tensor_t b = app_tensor("b", QNN_TENSOR_TYPE_NATIVE, 3, dims[k], F32, NULL, 0);
    Qnn_Tensor_t y = app_tensor("y", QNN_TENSOR_TYPE_APP_READ, 3, dims[k], F32, NULL, 0);
    Qnn_Tensor_t *all[] = {&x, &a, &b, &y};
    for (int i = 0; i < 4; i++) CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, all[i]));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("relu", "Relu", NULL, 0, &x, 1, &a, 1)));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("sig", "Sigmoid", NULL, 0, &a, 1, &b, 1)));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("neg", "ElementWiseNeg", NULL, 0, &b, 1, &y, 1)));
    CHECK_QNN(app.qnn.graphFinalize(graph, NULL, NULL));
    void *blob = context_binary(ctx, size);
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    const QnnSystemContext_BinaryInfoV3_t *v3 = binary_info(blob, *size);
    CHECK(v3->numGraphs == 1 && v3->graphs[0].version == QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_3);
    const QnnSystemContext_GraphInfoV3_t *g = &v3->graphs[0].graphInfoV3;
    CHECK(g->graphBlobInfoSize >= sizeof(GraphBlobInfoV1));
    GraphBlobInfoV1 blob_info;
    memcpy(&blob_info, g->graphBlobInfo, sizeof blob_info);
    CHECK(blob_info.version == 1 && blob_info.spillFillBufferSize > 0);
    *spill = blob_info.spillFillBufferSize;
    return blob;
}

static Qnn_ContextHandle_t group_load(void *blob, Qnn_ContextBinarySize_t size, Qnn_ContextHandle_t first,
                                      uint64_t max_spill, Qnn_ErrorHandle_t want)
{
    QnnHtpContext_CustomConfig_t htp = QNN_HTP_CONTEXT_CUSTOM_CONFIG_INIT;
    htp.option = QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS;
    htp.groupRegistration.firstGroupHandle = first;
    htp.groupRegistration.maxSpillFillBuffer = max_spill;
    QnnContext_Config_t cfg = QNN_CONTEXT_CONFIG_INIT;
    cfg.option = QNN_CONTEXT_CONFIG_OPTION_CUSTOM;
    cfg.customConfig = &htp;
    const QnnContext_Config_t *configs[] = {&cfg, NULL};
    Qnn_ContextHandle_t ctx = NULL;
    EXPECT_QNN(app.qnn.contextCreateFromBinary(app.backend, app.device, configs, blob, size, &ctx, NULL), want);
    CHECK((ctx != NULL) == (want == QNN_SUCCESS));
    return ctx;
}

static void run_chain(Qnn_ContextHandle_t ctx, const char *name, uint32_t rows)
{
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphRetrieve(ctx, name, &graph));
    uint32_t dims[] = {1, rows, CHAIN_COLS};
    size_t n = (size_t)rows * CHAIN_COLS;
    float *x = malloc(n * sizeof(float)), *y = calloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)((int)(i * 7919 % 61) - 30) / 10.0f;
    Qnn_Tensor_t in = app_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, 3, dims, F32, x, (uint32_t)(n * sizeof(float)));
    Qnn_Tensor_t out = app_tensor("y", QNN_TENSOR_TYPE_APP_READ, 3, dims, F32, y, (uint32_t)(n * sizeof(float)));
    CHECK_QNN(app.qnn.graphExecute(graph, &in, 1, &out, 1, NULL, NULL));
    for (size_t i = 0; i < n; i++) {
        float ref = -1.0f / (1.0f + expf(-(x[i] > 0 ? x[i] : 0)));
        CHECK(fabsf(y[i] - ref) <= 4e-3f);
    }
    free(x);
    free(y);
}

int main(void)
{
    for (int k = 0; k < OUT * IN; k++) weights[k] = (float)((k * 13 % 17) - 8) / 32.0f;
    app_load();
    CHECK_QNN(app.qnn.logCreate(app_log, QNN_LOG_LEVEL_ERROR, &app.log));
    CHECK_QNN(app.qnn.backendCreate(app.log, NULL, &app.backend));
    CHECK_QNN(app.qnn.deviceCreate(app.log, NULL, &app.device));
    CHECK_QNN(app.sys.systemContextCreate(&app.sys_ctx));

    /* 1. the pair in one context, with and without weight sharing */
    Qnn_ContextBinarySize_t plain_size = 0, shared_size = 0;
    void *plain = pair_binary(0, &plain_size), *shared = pair_binary(1, &shared_size);
    size_t stored = OUT * IN * 2;                     /* float weights are stored at fp16 */
    printf("pair binary: %llu B without sharing, %llu B with WEIGHT_SHARING_ENABLED (weights %zu B)\n",
           (unsigned long long)plain_size, (unsigned long long)shared_size, stored);
    CHECK(plain_size > shared_size && plain_size - shared_size >= stored * 8 / 10);

    /* 2. the system library sees both graphs */
    const QnnSystemContext_BinaryInfoV3_t *v3 = binary_info(shared, shared_size);
    CHECK(v3->numGraphs == 2);
    printf("systemContextGetBinaryInfo: numGraphs = %u:", v3->numGraphs);
    for (uint32_t k = 0; k < v3->numGraphs; k++) {
        CHECK(v3->graphs[k].version == QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_3);
        printf(" %s", v3->graphs[k].graphInfoV3.graphName);
    }
    printf("\n");
    CHECK(strcmp(v3->graphs[0].graphInfoV3.graphName, "prompt") == 0);
    CHECK(strcmp(v3->graphs[1].graphInfoV3.graphName, "token") == 0);

    /* 3. one load, both graphs by name, outputs out of order */
    Qnn_ContextHandle_t ctx = NULL;
    CHECK_QNN(app.qnn.contextCreateFromBinary(app.backend, app.device, NULL, shared, shared_size, &ctx, NULL));
    run_fc(ctx, &v3->graphs[1].graphInfoV3, ROWS_TOKEN);
    run_fc(ctx, &v3->graphs[0].graphInfoV3, ROWS_PROMPT);
    Qnn_GraphHandle_t missing = NULL;
    EXPECT_QNN(app.qnn.graphRetrieve(ctx, "decode", &missing), QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST);
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    printf("prompt and token graphs ran on one context, outputs listed in reverse order\n");
    free(plain);
    free(shared);

    /* 4. a spill-fill group of two contexts */
    Qnn_ContextBinarySize_t big_size = 0, small_size = 0;
    uint64_t big_spill = 0, small_spill = 0;
    void *big = chain_binary("big", 1536, &big_size, &big_spill);
    void *small = chain_binary("small", 1280, &small_size, &small_spill);
    CHECK(small_spill < big_spill);
    CHECK_QNN(app.qnn.logSetLogLevel(app.log, QNN_LOG_LEVEL_VERBOSE));   /* the memory report of each load */
    Qnn_ContextHandle_t first = group_load(big, big_size, NULL, big_spill, QNN_SUCCESS);
    Qnn_ContextHandle_t second = group_load(small, small_size, first, 0, QNN_SUCCESS);
    CHECK_QNN(app.qnn.logSetLogLevel(app.log, QNN_LOG_LEVEL_ERROR));
    run_chain(first, "big", 1536);
    run_chain(second, "small", 1280);
    run_chain(first, "big", 1536);
    printf("spill-fill group: big (%llu B) and small (%llu B) in one buffer of %llu B\n",
           (unsigned long long)big_spill, (unsigned long long)small_spill, (unsigned long long)big_spill);
    CHECK_QNN(app.qnn.contextFree(second, NULL));
    CHECK_QNN(app.qnn.contextFree(first, NULL));
    Qnn_ContextHandle_t narrow = group_load(small, small_size, NULL, small_spill, QNN_SUCCESS);
    group_load(big, big_size, narrow, 0, QNN_CONTEXT_ERROR_INVALID_CONFIG);   /* needs more than the buffer */
    CHECK_QNN(app.qnn.contextFree(narrow, NULL));
    free(big);
    free(small);

    CHECK_QNN(app.sys.systemContextFree(app.sys_ctx));
    CHECK_QNN(app.qnn.deviceFree(app.device));
    CHECK_QNN(app.qnn.backendFree(app.backend));
    CHECK_QNN(app.qnn.logFree(app.log));
    printf("qnn_multigraph_flows ok\n");
    return 0;
}
