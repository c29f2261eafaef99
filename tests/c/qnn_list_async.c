/* contextCreateFromBinaryListAsync (slot 56) and the PD budget from C.
 * argv[1]: a PD budget in bytes; argv[2..5]: four path prefixes P, each P.bin a one-graph context binary (graph "fc":
 * y[2][256] = x[2][256] @ w.T) and P.w its float32 256 x 256 weight.
 * 1. the first two binaries loaded by one contextCreateFromBinaryListAsync with the configs onnxruntime's QNN EP
 *    sends (PRIORITY, SHARE_RESOURCES=1, SEQUENTIAL_WITHOUT_VA_OPTIMIZATION, WEIGHT_SHARING_ENABLED=1) and a NULL
 *    signal: notifyFunc called once per context (CONTEXT_INIT, its notifyParam, status 0) before it returns; both
 *    graphs run; a non-NULL signal is refused 1000 and a NULL notifyFunc 5000.
 * 2. the budget set (NPURT_QNN_PD_BUDGET, read at QnnInterface_getProviders): three contexts load and run, the
 *    fourth contextCreateFromBinary fails 1002 and the three still run. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "qnn_app.h"

#define N 256

typedef struct {
    Qnn_ContextHandle_t ctx;
    int calls, type, status;
} Note;

static void notify(Qnn_ContextHandle_t context, Qnn_GraphHandle_t graph, const char *name,
                   QnnContext_createFromBinaryAsyncNotifyType_t type, void *param, Qnn_ErrorHandle_t status)
{
    (void)graph;
    (void)name;
    Note *note = (Note *)param;
    note->ctx = context;
    note->calls++;
    note->type = (int)type;
    note->status = (int)status;
}

static void *load_file(const char *prefix, const char *ext, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", prefix, ext);
    return read_file(path, size);
}

/* run graph "fc" of ctx on a fixed x and compare with x @ w.T (fp16 on the HTP) */
static void run_fc(Qnn_ContextHandle_t ctx, const char *prefix)
{
    size_t wsize = 0;
    float *w = (float *)load_file(prefix, ".w", &wsize);
    CHECK(wsize == sizeof(float) * N * N);
    float x[2 * N], y[2 * N], ref[2 * N], peak = 0, err = 0;
    for (int k = 0; k < 2 * N; k++) x[k] = (float)((k * 37 % 101) - 50) / 50.0f;
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < N; o++) {
            float s = 0;
            for (int i = 0; i < N; i++) s += x[r * N + i] * w[o * N + i];
            ref[r * N + o] = s;
            peak = fabsf(s) > peak ? fabsf(s) : peak;
        }
    Qnn_Tensor_t ins[MAX_IO], outs[MAX_IO];
    void *outputs[MAX_IO];
    app_raw_io(ins, outs, x, outputs);
    CHECK_QNN(app.qnn.graphExecute(app_graph(ctx), ins, app.n_in, outs, app.n_out, NULL, NULL));
    memcpy(y, outputs[0], sizeof y);
    free(outputs[0]);
    for (int k = 0; k < 2 * N; k++) err = fabsf(y[k] - ref[k]) > err ? fabsf(y[k] - ref[k]) : err;
    CHECK(err <= 2e-3f * peak);
    free(w);
}

static QnnContext_Config_t htp_cfg(QnnHtpContext_CustomConfig_t *htp)
{
    QnnContext_Config_t cfg = QNN_CONTEXT_CONFIG_INIT;
    cfg.option = QNN_CONTEXT_CONFIG_OPTION_CUSTOM;
    cfg.customConfig = htp;
    return cfg;
}

int main(int argc, char **argv)
{
    CHECK(argc == 6);
    app_load();
    char first[4096];
    snprintf(first, sizeof first, "%s.bin", argv[2]);
    app_open(first);                                   /* log, backend, device; graph "fc" and its I/O */

    /* 1. the list, as the EP loads it with htp_share_resource_optimization=1 */
    QnnHtpContext_CustomConfig_t share = QNN_HTP_CONTEXT_CUSTOM_CONFIG_INIT, type = share, ws = share;
    share.option = QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES;
    share.shareResources = true;
    type.option = QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE;
    type.shareResOptType = SEQUENTIAL_WITHOUT_VA_OPTIMIZATION;
    ws.option = QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED;
    ws.weightSharingEnabled = true;
    QnnContext_Config_t prio = QNN_CONTEXT_CONFIG_INIT, c_share = htp_cfg(&share), c_type = htp_cfg(&type),
                        c_ws = htp_cfg(&ws);
    prio.option = QNN_CONTEXT_CONFIG_OPTION_PRIORITY;
    prio.priority = QNN_PRIORITY_DEFAULT;
    const QnnContext_Config_t *list_cfg[] = {&prio, &c_share, &c_type, &c_ws, NULL};

    Note notes[2] = {{0}};
    void *blobs[2];
    size_t sizes[2];
    QnnContext_Params_t params[2];
    const QnnContext_Params_t *plist[3] = {&params[0], &params[1], NULL};
    for (int k = 0; k < 2; k++) {
        blobs[k] = load_file(argv[2 + k], ".bin", &sizes[k]);
        memset(&params[k], 0, sizeof params[k]);
        params[k].version = QNN_CONTEXT_PARAMS_VERSION_1;
        params[k].v1.binaryBuffer = blobs[k];
        params[k].v1.binaryBufferSize = sizes[k];
        params[k].v1.notifyFunc = notify;
        params[k].v1.notifyParam = &notes[k];
    }
    EXPECT_QNN(app.qnn.contextCreateFromBinaryListAsync(app.backend, app.device, plist, list_cfg, (void *)0x10),
               QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE);
    params[1].v1.notifyFunc = NULL;
    EXPECT_QNN(app.qnn.contextCreateFromBinaryListAsync(app.backend, app.device, plist, list_cfg, NULL),
               QNN_CONTEXT_ERROR_INVALID_ARGUMENT);
    CHECK(notes[0].calls == 0 && notes[1].calls == 0);
    params[1].v1.notifyFunc = notify;
    CHECK_QNN(app.qnn.contextCreateFromBinaryListAsync(app.backend, app.device, plist, list_cfg, NULL));
    for (int k = 0; k < 2; k++) {
        CHECK(notes[k].calls == 1 && notes[k].ctx != NULL && notes[k].status == QNN_SUCCESS);
        CHECK(notes[k].type == QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT);
    }
    CHECK(notes[0].ctx != notes[1].ctx);
    printf("list: %d notifications\n", notes[0].calls + notes[1].calls);
    run_fc(notes[0].ctx, argv[2]);
    run_fc(notes[1].ctx, argv[3]);
    run_fc(notes[0].ctx, argv[2]);
    for (int k = 0; k < 2; k++) {
        CHECK_QNN(app.qnn.contextFree(notes[k].ctx, NULL));
        free(blobs[k]);
    }

    /* 2. the PD budget: the fourth context does not fit */
    CHECK(setenv("NPURT_QNN_PD_BUDGET", argv[1], 1) == 0);
    app_load();                                        /* QnnInterface_getProviders reads the environment */
    Qnn_ContextHandle_t ctx[4] = {NULL};
    for (int k = 0; k < 4; k++) {
        size_t size = 0;
        void *blob = load_file(argv[2 + k], ".bin", &size);
        Qnn_ErrorHandle_t err = app.qnn.contextCreateFromBinary(app.backend, app.device, NULL, blob, size, &ctx[k],
                                                                NULL);
        free(blob);
        if (k < 3) {
            CHECK(QNN_GET_ERROR_CODE(err) == QNN_SUCCESS);
        } else {
            CHECK(QNN_GET_ERROR_CODE(err) == QNN_CONTEXT_ERROR_MEM_ALLOC && ctx[k] == NULL);
            printf("fourth: %d\n", (int)QNN_GET_ERROR_CODE(err));
        }
    }
    for (int k = 0; k < 3; k++) run_fc(ctx[k], argv[2 + k]);
    for (int k = 0; k < 3; k++) CHECK_QNN(app.qnn.contextFree(ctx[k], NULL));
    CHECK_QNN(app.qnn.deviceFree(app.device));
    CHECK_QNN(app.qnn.backendFree(app.backend));
    CHECK_QNN(app.qnn.logFree(app.log));
    printf("qnn_list_async ok\n");
    return 0;
}
