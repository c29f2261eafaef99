/* PERF_RUN and PERF_DETAIL from C: init with RKNN_FLAG_COLLECT_PERF_MASK, one general-API run, then both queries.
 * argv: model image.bin. Prints "run_duration=<us>" and the PERF_DETAIL text (predicted or measured: the
 * environment's NPURT_PERF decides). */
#include "common.h"
#include "rknn_api.h"

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    size_t model_size, image_size;
    void *model = read_file(argv[1], &model_size);
    void *image = read_file(argv[2], &image_size);
    rknn_context ctx = 0;
    CHECK_RET(rknn_init(&ctx, model, (uint32_t)model_size, RKNN_FLAG_COLLECT_PERF_MASK, NULL), RKNN_SUCC);
    free(model);
    rknn_input inputs[1];
    memset(inputs, 0, sizeof(inputs));
    inputs[0].index = 0;
    inputs[0].type = RKNN_TENSOR_UINT8;
    inputs[0].fmt = RKNN_TENSOR_NHWC;
    inputs[0].size = (uint32_t)image_size;
    inputs[0].buf = image;
    CHECK_RET(rknn_inputs_set(ctx, 1, inputs), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    rknn_perf_run run;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_PERF_RUN, &run, sizeof(run)), RKNN_SUCC);
    printf("run_duration=%lld\n", (long long)run.run_duration);
    rknn_perf_detail detail;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_PERF_DETAIL, &detail, sizeof(detail)), RKNN_SUCC);
    CHECK(detail.perf_data != NULL && detail.data_len == strlen(detail.perf_data));
    fputs(detail.perf_data, stdout);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    free(image);
    printf("OK perf_predicted\n");
    return 0;
}
