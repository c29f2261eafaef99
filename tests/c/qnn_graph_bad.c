/* QNN graph building from C, bad input and races through libQnnHtp.so's table:
 * - a UFIXED_POINT_8 graph tensor with offset 2147483647 (its (q + offset) * scale is not exact in float32) is
 *   refused by tensorCreateGraphTensor (7004) and backendValidateOpConfig (4004); one with offset -128 is taken;
 * - two threads call graphFinalize on one graph at once, TRIALS times: every time exactly one gets QNN_SUCCESS and
 *   the other QNN_GRAPH_ERROR_GRAPH_FINALIZED, the context holds one compiled graph (contextGetBinarySize and
 *   contextGetBinary succeed), a node added afterwards is refused with QNN_GRAPH_ERROR_GRAPH_FINALIZED, and the
 *   graph runs (Relu of the input).
 * Prints "qnn_graph_bad ok". */
#include <pthread.h>

#include "qnn_app.h"

#define TRIALS 8
#define N_ELEMS 8
/* QnnTensor.h's QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM (the installed headers have no QnnTensor.h) */
#define TENSOR_ERROR_INVALID_TENSOR_PARAM 7004

static uint32_t dims[] = {1, 2, 2, 2};

static Qnn_Tensor_t tensor(const char *name, Qnn_TensorType_t type, Qnn_DataType_t dtype, float scale, int32_t offset)
{
    Qnn_Tensor_t t = app_tensor(name, type, 4, dims, dtype, NULL, 0);
    if (dtype == QNN_DATATYPE_UFIXED_POINT_8) {
        t.v1.quantizeParams.encodingDefinition = QNN_DEFINITION_DEFINED;
        t.v1.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_SCALE_OFFSET;
        t.v1.quantizeParams.scaleOffsetEncoding.scale = scale;
        t.v1.quantizeParams.scaleOffsetEncoding.offset = offset;
    }
    return t;
}

static void offsets(Qnn_ContextHandle_t ctx)
{
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphCreate(ctx, "offsets", NULL, &graph));
    Qnn_Tensor_t x = tensor("qx", QNN_TENSOR_TYPE_APP_WRITE, QNN_DATATYPE_UFIXED_POINT_8, 0.05f, 2147483647);
    Qnn_Tensor_t y = tensor("qy", QNN_TENSOR_TYPE_APP_READ, QNN_DATATYPE_UFIXED_POINT_8, 0.05f, 2147483647);
    EXPECT_QNN(app.qnn.tensorCreateGraphTensor(graph, &x), TENSOR_ERROR_INVALID_TENSOR_PARAM);
    EXPECT_QNN(app.qnn.tensorCreateGraphTensor(graph, &y), TENSOR_ERROR_INVALID_TENSOR_PARAM);
    EXPECT_QNN(app.qnn.backendValidateOpConfig(app.backend, app_op("relu", "Relu", NULL, 0, &x, 1, &y, 1)),
               QNN_BACKEND_ERROR_INVALID_ARGUMENT);
    x.v1.quantizeParams.scaleOffsetEncoding.offset = -128;
    y.v1.quantizeParams.scaleOffsetEncoding.offset = -128;
    CHECK_QNN(app.qnn.backendValidateOpConfig(app.backend, app_op("relu", "Relu", NULL, 0, &x, 1, &y, 1)));
    CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, &x));
    CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, &y));
}

typedef struct {
    Qnn_GraphHandle_t graph;
    pthread_barrier_t *barrier;
    Qnn_ErrorHandle_t result;
} Finalizer;

static void *finalize(void *arg)
{
    Finalizer *f = arg;
    pthread_barrier_wait(f->barrier);
    f->result = app.qnn.graphFinalize(f->graph, NULL, NULL);
    return NULL;
}

static void race(int trial)
{
    Qnn_ContextHandle_t ctx = NULL;
    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.contextCreate(app.backend, app.device, NULL, &ctx));
    CHECK_QNN(app.qnn.graphCreate(ctx, "race", NULL, &graph));
    Qnn_Tensor_t x = tensor("x", QNN_TENSOR_TYPE_APP_WRITE, QNN_DATATYPE_FLOAT_32, 0, 0);
    Qnn_Tensor_t y = tensor("y", QNN_TENSOR_TYPE_APP_READ, QNN_DATATYPE_FLOAT_32, 0, 0);
    Qnn_Tensor_t n = tensor("n", QNN_TENSOR_TYPE_NATIVE, QNN_DATATYPE_FLOAT_32, 0, 0);
    CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, &x));
    CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, &y));
    CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, &n));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("relu", "Relu", NULL, 0, &x, 1, &y, 1)));

    pthread_barrier_t barrier;
    CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0);
    Finalizer f[2] = {{graph, &barrier, 1}, {graph, &barrier, 1}};
    pthread_t threads[2];
    for (int k = 0; k < 2; k++) CHECK(pthread_create(&threads[k], NULL, finalize, &f[k]) == 0);
    for (int k = 0; k < 2; k++) CHECK(pthread_join(threads[k], NULL) == 0);
    pthread_barrier_destroy(&barrier);
    unsigned a = QNN_GET_ERROR_CODE(f[0].result), b = QNN_GET_ERROR_CODE(f[1].result);
    if (!((a == QNN_SUCCESS && b == QNN_GRAPH_ERROR_GRAPH_FINALIZED) ||
          (b == QNN_SUCCESS && a == QNN_GRAPH_ERROR_GRAPH_FINALIZED))) {
        fprintf(stderr, "trial %d: the two finalizes returned %u and %u\n", trial, a, b);
        exit(1);
    }
    EXPECT_QNN(app.qnn.graphAddNode(graph, app_op("neg", "ElementWiseNeg", NULL, 0, &x, 1, &n, 1)),
               QNN_GRAPH_ERROR_GRAPH_FINALIZED);

    Qnn_ContextBinarySize_t size = 0, written = 0;
    CHECK_QNN(app.qnn.contextGetBinarySize(ctx, &size));
    void *blob = malloc(size);
    CHECK(blob != NULL);
    CHECK_QNN(app.qnn.contextGetBinary(ctx, blob, size, &written));
    CHECK(written == size);
    free(blob);

    float in[N_ELEMS], out[N_ELEMS];
    for (int k = 0; k < N_ELEMS; k++) in[k] = (float)(k - 4) * 0.5f;
    x.v1.clientBuf.data = in;
    x.v1.clientBuf.dataSize = sizeof in;
    y.v1.clientBuf.data = out;
    y.v1.clientBuf.dataSize = sizeof out;
    CHECK_QNN(app.qnn.graphExecute(graph, &x, 1, &y, 1, NULL, NULL));
    for (int k = 0; k < N_ELEMS; k++) CHECK(out[k] == (in[k] > 0 ? in[k] : 0.0f));
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
}

int main(void)
{
    app_load();
    CHECK_QNN(app.qnn.logCreate(app_log, QNN_LOG_LEVEL_ERROR, &app.log));
    CHECK_QNN(app.qnn.backendCreate(app.log, NULL, &app.backend));
    CHECK_QNN(app.qnn.deviceCreate(app.log, NULL, &app.device));
    Qnn_ContextHandle_t ctx = NULL;
    CHECK_QNN(app.qnn.contextCreate(app.backend, app.device, NULL, &ctx));
    offsets(ctx);
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    for (int trial = 0; trial < TRIALS; trial++) race(trial);
    CHECK_QNN(app.qnn.deviceFree(app.device));
    CHECK_QNN(app.qnn.backendFree(app.backend));
    CHECK_QNN(app.qnn.logFree(app.log));
    printf("qnn_graph_bad ok\n");
    return 0;
}
