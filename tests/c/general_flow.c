/* Figure 3-1, the general (copying) flow: init from a buffer -> query -> inputs_set -> run -> outputs_get ->
 * outputs_release -> destroy. argv: model image.bin out.bin. The image is uint8 HxWxC (NHWC); the float output
 * goes to out.bin. */
#include <signal.h>
#include "common.h"
#include "rknn_api.h"

static void on_sigint(int sig) { (void)sig; }

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    signal(SIGINT, on_sigint);                 /* the program's own handler must survive the runtime */
    size_t model_size, image_size;
    void *model = read_file(argv[1], &model_size);
    void *image = read_file(argv[2], &image_size);

    rknn_context ctx = 0;
    CHECK_RET(rknn_init(&ctx, model, (uint32_t)model_size, 0, NULL), RKNN_SUCC);
    CHECK(ctx != 0);
    free(model);

    rknn_sdk_version ver;
    memset(&ver, 0, sizeof(ver));
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_SDK_VERSION, &ver, sizeof(ver)), RKNN_SUCC);
    printf("sdk api=%s drv=%s\n", ver.api_version, ver.drv_version);

    rknn_input_output_num io;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io)), RKNN_SUCC);
    CHECK(io.n_input == 1 && io.n_output >= 1);

    rknn_tensor_attr in_attr;
    memset(&in_attr, 0, sizeof(in_attr));
    in_attr.index = 0;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &in_attr, sizeof(in_attr)), RKNN_SUCC);
    printf("input name=%s n_dims=%u dims=[%u,%u,%u,%u] fmt=%s type=%s qnt=%s size=%u\n", in_attr.name,
           in_attr.n_dims, in_attr.dims[0], in_attr.dims[1], in_attr.dims[2], in_attr.dims[3],
           get_format_string(in_attr.fmt), get_type_string(in_attr.type), get_qnt_type_string(in_attr.qnt_type),
           in_attr.size);
    rknn_tensor_attr out_attr;
    memset(&out_attr, 0, sizeof(out_attr));
    out_attr.index = 0;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &out_attr, sizeof(out_attr)), RKNN_SUCC);

    rknn_input inputs[1];
    memset(inputs, 0, sizeof(inputs));
    inputs[0].index = 0;
    inputs[0].type = RKNN_TENSOR_UINT8;
    inputs[0].fmt = RKNN_TENSOR_NHWC;
    inputs[0].size = (uint32_t)image_size;
    inputs[0].buf = image;
    CHECK_RET(rknn_inputs_set(ctx, io.n_input, inputs), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);

    rknn_output outputs[1];
    memset(outputs, 0, sizeof(outputs));
    outputs[0].want_float = 1;
    CHECK_RET(rknn_outputs_get(ctx, 1, outputs, NULL), RKNN_SUCC);
    CHECK(outputs[0].buf != NULL);
    CHECK(outputs[0].size == out_attr.n_elems * sizeof(float));
    write_file(argv[3], outputs[0].buf, outputs[0].size);
    CHECK_RET(rknn_outputs_release(ctx, 1, outputs), RKNN_SUCC);

    rknn_perf_run perf;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_PERF_RUN, &perf, sizeof(perf)), RKNN_SUCC);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    CHECK_RET(rknn_destroy(ctx), RKNN_ERR_CTX_INVALID);
    free(image);
    struct sigaction sa;
    sigaction(SIGINT, NULL, &sa);
    CHECK(sa.sa_handler == on_sigint);
    printf("OK general_flow\n");
    return 0;
}
