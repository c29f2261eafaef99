/* A QNN graph built op by op from C, as onnxruntime's QNN EP builds one: contextCreate, backendValidateOpConfig,
 * graphCreate, tensorCreateGraphTensor (APP_WRITE, STATIC weights + tensor params, NATIVE, APP_READ),
 * graphAddNode (Conv2d with tensor params, ElementWiseNeuron with scalar params), graphFinalize, graphExecute,
 * contextGetBinarySize / contextGetBinary, then the binary reloaded with contextCreateFromBinary gives the same
 * bytes. Bad input: a node on an unknown tensor, a param of the wrong shape, finalize twice, add after finalize, a
 * NULL op name. Writes x.raw, w.raw, b.raw (inputs) and y.raw (output) into the folder argv[1]. */
#include "qnn_app.h"

#define H 6
#define WD 6
#define CIN 3
#define COUT 4

static uint32_t x_dims[] = {1, H, WD, CIN}, y_dims[] = {1, H, WD, COUT}, w_dims[] = {3, 3, CIN, COUT};
static uint32_t b_dims[] = {COUT}, two[] = {2}, two_two[] = {2, 2}, three[] = {3};

static Qnn_Param_t tensor_param(const char *name, uint32_t rank, uint32_t *dims, uint32_t *values, uint32_t n)
{
    Qnn_Param_t p = QNN_PARAM_INIT;
    p.paramType = QNN_PARAMTYPE_TENSOR;
    p.name = name;
    p.tensorParam = app_tensor(name, QNN_TENSOR_TYPE_STATIC, rank, dims, QNN_DATATYPE_UINT_32, values, 4 * n);
    return p;
}

static void run(Qnn_GraphHandle_t graph, Qnn_Tensor_t x, Qnn_Tensor_t y, float *in, float *out)
{
    x.v1.clientBuf.data = in;
    x.v1.clientBuf.dataSize = sizeof(float) * H * WD * CIN;
    y.v1.clientBuf.data = out;
    y.v1.clientBuf.dataSize = sizeof(float) * H * WD * COUT;
    CHECK_QNN(app.qnn.graphExecute(graph, &x, 1, &y, 1, NULL, NULL));
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    char path[1024];
    static float xs[H * WD * CIN], ws[3 * 3 * CIN * COUT], bs[COUT], ys[H * WD * COUT], again[H * WD * COUT];
    for (int k = 0; k < H * WD * CIN; k++) xs[k] = (float)((k * 37 % 23) - 11) / 7.0f;
    for (int k = 0; k < 3 * 3 * CIN * COUT; k++) ws[k] = (float)((k * 13 % 17) - 8) / 16.0f;
    for (int k = 0; k < COUT; k++) bs[k] = 0.25f * (float)k - 0.3f;

    app_load();
    CHECK_QNN(app.qnn.logCreate(app_log, QNN_LOG_LEVEL_ERROR, &app.log));
    CHECK_QNN(app.qnn.backendCreate(app.log, NULL, &app.backend));
    CHECK_QNN(app.qnn.deviceCreate(app.log, NULL, &app.device));
    Qnn_ContextHandle_t ctx = NULL;
    CHECK_QNN(app.qnn.contextCreate(app.backend, app.device, NULL, &ctx));

    Qnn_Tensor_t x = app_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, 4, x_dims, QNN_DATATYPE_FLOAT_32, NULL, 0);
    Qnn_Tensor_t w = app_tensor("w", QNN_TENSOR_TYPE_STATIC, 4, w_dims, QNN_DATATYPE_FLOAT_32, ws, sizeof ws);
    Qnn_Tensor_t b = app_tensor("b", QNN_TENSOR_TYPE_STATIC, 1, b_dims, QNN_DATATYPE_FLOAT_32, bs, sizeof bs);
    Qnn_Tensor_t c = app_tensor("c", QNN_TENSOR_TYPE_NATIVE, 4, y_dims, QNN_DATATYPE_FLOAT_32, NULL, 0);
    Qnn_Tensor_t y = app_tensor("y", QNN_TENSOR_TYPE_APP_READ, 4, y_dims, QNN_DATATYPE_FLOAT_32, NULL, 0);
    uint32_t stride[] = {1, 1}, pads[] = {1, 1, 1, 1}, bad_pads[] = {1, 1, 1};
    Qnn_Param_t conv_params[] = {tensor_param("stride", 1, two, stride, 2),
                                 tensor_param("pad_amount", 2, two_two, pads, 4)};
    Qnn_Param_t neuron_params[2] = {QNN_PARAM_INIT, QNN_PARAM_INIT};
    neuron_params[0].paramType = QNN_PARAMTYPE_SCALAR;
    neuron_params[0].name = "operation";
    neuron_params[0].scalarParam.dataType = QNN_DATATYPE_UINT_32;
    neuron_params[0].scalarParam.uint32Value = 5; /* RELU_MIN_MAX */
    neuron_params[1].paramType = QNN_PARAMTYPE_SCALAR;
    neuron_params[1].name = "max_value";
    neuron_params[1].scalarParam.dataType = QNN_DATATYPE_FLOAT_32;
    neuron_params[1].scalarParam.floatValue = 2.0f;
    Qnn_Tensor_t conv_in[] = {x, w, b};

    /* validation sees the tensors as the config describes them, before any is created */
    CHECK_QNN(app.qnn.backendValidateOpConfig(app.backend,
                                              app_op("conv", "Conv2d", conv_params, 2, conv_in, 3, &c, 1)));
    Qnn_Param_t bad_params[] = {tensor_param("stride", 1, two, stride, 2),
                                tensor_param("pad_amount", 1, three, bad_pads, 3)};
    EXPECT_QNN(app.qnn.backendValidateOpConfig(app.backend, app_op("conv", "Conv2d", bad_params, 2, conv_in, 3, &c, 1)),
               QNN_BACKEND_ERROR_INVALID_ARGUMENT);

    Qnn_GraphHandle_t graph = NULL;
    CHECK_QNN(app.qnn.graphCreate(ctx, "c_graph", NULL, &graph));
    Qnn_Tensor_t *all[] = {&x, &w, &b, &c, &y};
    for (int k = 0; k < 5; k++) {
        CHECK_QNN(app.qnn.tensorCreateGraphTensor(graph, all[k]));
        CHECK(all[k]->v1.id != 0);
    }
    Qnn_Tensor_t ghost = app_tensor("ghost", QNN_TENSOR_TYPE_NATIVE, 4, x_dims, QNN_DATATYPE_FLOAT_32, NULL, 0);
    ghost.v1.id = 999999;
    EXPECT_QNN(app.qnn.graphAddNode(graph, app_op("g", "Relu", NULL, 0, &ghost, 1, &y, 1)),
               QNN_GRAPH_ERROR_INVALID_TENSOR);
    EXPECT_QNN(app.qnn.graphAddNode(graph, app_op("conv", "Conv2d", bad_params, 2, conv_in, 3, &c, 1)),
               QNN_GRAPH_ERROR_INVALID_OP_CONFIG);
    Qnn_OpConfig_t unnamed = app_op("conv", "Conv2d", conv_params, 2, conv_in, 3, &c, 1);
    unnamed.v1.typeName = NULL;
    EXPECT_QNN(app.qnn.graphAddNode(graph, unnamed), QNN_GRAPH_ERROR_INVALID_OP_CONFIG);
    Qnn_Tensor_t conv_in2[] = {x, w, b};
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("conv", "Conv2d", conv_params, 2, conv_in2, 3, &c, 1)));
    CHECK_QNN(app.qnn.graphAddNode(graph, app_op("clip", "ElementWiseNeuron", neuron_params, 2, &c, 1, &y, 1)));
    EXPECT_QNN(app.qnn.graphExecute(graph, &x, 1, &y, 1, NULL, NULL), QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED);
    CHECK_QNN(app.qnn.graphFinalize(graph, NULL, NULL));
    EXPECT_QNN(app.qnn.graphFinalize(graph, NULL, NULL), QNN_GRAPH_ERROR_GRAPH_FINALIZED);
    EXPECT_QNN(app.qnn.graphAddNode(graph, app_op("late", "Relu", NULL, 0, &c, 1, &y, 1)),
               QNN_GRAPH_ERROR_GRAPH_FINALIZED);
    run(graph, x, y, xs, ys);

    /* the context binary, reloaded */
    Qnn_ContextBinarySize_t size = 0, written = 0;
    CHECK_QNN(app.qnn.contextGetBinarySize(ctx, &size));
    void *blob = malloc(size);
    EXPECT_QNN(app.qnn.contextGetBinary(ctx, blob, size - 1, &written), QNN_CONTEXT_ERROR_INVALID_ARGUMENT);
    CHECK_QNN(app.qnn.contextGetBinary(ctx, blob, size, &written));
    CHECK(written == size);
    Qnn_ContextHandle_t ctx2 = NULL;
    Qnn_GraphHandle_t graph2 = NULL;
    CHECK_QNN(app.qnn.contextCreateFromBinary(app.backend, app.device, NULL, blob, size, &ctx2, NULL));
    CHECK_QNN(app.qnn.graphRetrieve(ctx2, "c_graph", &graph2));
    run(graph2, x, y, xs, again);
    CHECK(memcmp(ys, again, sizeof ys) == 0);

    snprintf(path, sizeof path, "%s/x.raw", argv[1]);
    write_file(path, xs, sizeof xs);
    snprintf(path, sizeof path, "%s/w.raw", argv[1]);
    write_file(path, ws, sizeof ws);
    snprintf(path, sizeof path, "%s/b.raw", argv[1]);
    write_file(path, bs, sizeof bs);
    snprintf(path, sizeof path, "%s/y.raw", argv[1]);
    write_file(path, ys, sizeof ys);

    free(blob);
    CHECK_QNN(app.qnn.contextFree(ctx2, NULL));
    CHECK_QNN(app.qnn.contextFree(ctx, NULL));
    CHECK_QNN(app.qnn.deviceFree(app.device));
    CHECK_QNN(app.qnn.backendFree(app.backend));
    CHECK_QNN(app.qnn.logFree(app.log));
    printf("qnn_graph ok\n");
    return 0;
}
