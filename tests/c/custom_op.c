/* The vendor's CPU custom-op demo from C: a model with a cstSigmoid node; the op comes either from C function
 * pointers given to rknn_register_custom_ops (argv[4] "register") or from a plugin found at rknn_init ("plugin");
 * "skip" registers an op over the model's built-in Sigmoid whose init returns RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE,
 * so the built-in runs; "demo" is rknn_custom_cpu_op_demo's own way: a compute alone that reads and writes float32
 * over the product of the input's dims without looking at attr.type, and outputs read as the demo reads them
 * (want_float only when the output is not quantised; the raw bytes are written, their attr printed). The general
 * API runs the model twice. argv: model input.bin out.bin register|plugin|skip|demo. */
#include "custom_sigmoid.h"
#include "flow_helpers.h"

static int skip_init(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                     rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    printf("skip init\n");
    return RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE;
}

static int never_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                         rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    printf("compute called despite skip\n");
    return -1;
}

static int demo_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                        rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    const float *x = (const float *)((unsigned char *)inputs[0].mem.virt_addr + inputs[0].mem.offset);
    float *y = (float *)((unsigned char *)outputs[0].mem.virt_addr + outputs[0].mem.offset);
    int n = 1;
    for (uint32_t d = 0; d < inputs[0].attr.n_dims; d++)
        n *= inputs[0].attr.dims[d];
    for (int i = 0; i < n; i++)
        y[i] = 1 / (1 + expf(-x[i]));
    /* what the runtime described (printed for the test; the computation above never looked) */
    for (int k = 0; k < 2; k++) {
        rknn_tensor_attr *a = k ? &outputs[0].attr : &inputs[0].attr;
        printf("demo %s type=%s qnt=%d n_elems=%u size=%u size_with_stride=%u fmt=%s mem.size=%u\n",
               k ? "out" : "in", get_type_string(a->type), a->qnt_type, a->n_elems, a->size, a->size_with_stride,
               get_format_string(a->fmt), (k ? outputs : inputs)[0].mem.size);
    }
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc == 5);
    size_t size;
    float *x = read_file(argv[2], &size);
    rknn_context ctx;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    if (strcmp(argv[4], "register") == 0) {
        rknn_custom_op ops[1];                     /* on the stack: the runtime keeps its own copy */
        sigmoid_fill(&ops[0]);
        CHECK_RET(rknn_register_custom_ops(ctx, ops, 1), RKNN_SUCC);
        CHECK_RET(rknn_register_custom_ops(ctx, ops, 1), RKNN_ERR_PARAM_INVALID);     /* already registered */
    } else if (strcmp(argv[4], "demo") == 0) {
        rknn_custom_op ops[1];
        memset(ops, 0, sizeof(ops));
        strncpy(ops[0].op_type, "cstSigmoid", RKNN_MAX_NAME_LEN - 1);
        ops[0].version = 1;
        ops[0].target = RKNN_TARGET_TYPE_CPU;
        ops[0].compute = demo_compute;
        CHECK_RET(rknn_register_custom_ops(ctx, ops, 1), RKNN_SUCC);
    } else if (strcmp(argv[4], "skip") == 0) {
        rknn_custom_op ops[1];
        memset(ops, 0, sizeof(ops));
        ops[0].version = 1;
        ops[0].target = RKNN_TARGET_TYPE_CPU;
        strcpy(ops[0].op_type, "Sigmoid");
        ops[0].init = skip_init;
        ops[0].compute = never_compute;
        CHECK_RET(rknn_register_custom_ops(ctx, ops, 1), RKNN_SUCC);
    }
    rknn_input in = float_nchw_input(x, size);
    rknn_tensor_attr out_attr = query_attr(ctx, RKNN_QUERY_OUTPUT_ATTR, 0);
    int demo = strcmp(argv[4], "demo") == 0;
    rknn_output out;
    for (int i = 0; i < 2; i++) {
        CHECK_RET(rknn_inputs_set(ctx, 1, &in), RKNN_SUCC);
        CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
        memset(&out, 0, sizeof(out));
        out.want_float = demo ? out_attr.qnt_type == RKNN_TENSOR_QNT_NONE : 1;
        CHECK_RET(rknn_outputs_get(ctx, 1, &out, NULL), RKNN_SUCC);
        if (i == 1)
            write_file(argv[3], out.buf, out.size);
        CHECK_RET(rknn_outputs_release(ctx, 1, &out), RKNN_SUCC);
    }
    if (demo)
        printf("output want_float=%d qnt=%d zp=%d scale=%.9g\n", out_attr.qnt_type == RKNN_TENSOR_QNT_NONE,
               out_attr.qnt_type, out_attr.zp, out_attr.scale);
    fflush(stdout);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    free(x);
    printf("OK custom_op\n");
    return 0;
}
