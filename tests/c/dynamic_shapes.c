/* rknn_dynshape_inference (reference 4.6) from C: RKNN_QUERY_INPUT_DYNAMIC_RANGE, then for each shape
 * rknn_set_input_shapes -> CURRENT_INPUT/OUTPUT_ATTR -> rknn_inputs_set (float32 NCHW) -> rknn_run ->
 * rknn_outputs_get -> rknn_outputs_release; the last shape once more through the deprecated rknn_set_input_shape.
 * argv: model indir outdir (indir/in_<s>.bin: float32 NCHW input of shape s). */
#include "flow_helpers.h"

static void run_shape(rknn_context ctx, const char *indir, const char *outdir, uint32_t s, const char *tag)
{
    char path[4096], name[64];
    size_t size;
    snprintf(path, sizeof(path), "%s/in_%u.bin", indir, s);
    float *x = read_file(path, &size);
    rknn_tensor_attr cur_in = query_attr(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR, 0);
    rknn_tensor_attr cur_out = query_attr(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR, 0);
    CHECK(cur_in.n_elems * sizeof(float) == size);
    printf("shape %u: input n_elems=%u output n_elems=%u\n", s, cur_in.n_elems, cur_out.n_elems);
    rknn_input in = float_nchw_input(x, size);
    CHECK_RET(rknn_inputs_set(ctx, 1, &in), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    rknn_output out;
    memset(&out, 0, sizeof(out));
    out.want_float = 1;
    CHECK_RET(rknn_outputs_get(ctx, 1, &out, NULL), RKNN_SUCC);
    CHECK(out.size == cur_out.n_elems * sizeof(float));
    snprintf(name, sizeof(name), "%s_%u", tag, s);
    write_output(outdir, name, out.buf, out.size);
    CHECK_RET(rknn_outputs_release(ctx, 1, &out), RKNN_SUCC);
    free(x);
}

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    rknn_context ctx;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_input_range range;
    memset(&range, 0, sizeof(range));        /* 33 KB on the stack, as the demos keep it */
    range.index = 0;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, &range, sizeof(range)), RKNN_SUCC);
    CHECK(range.shape_number >= 2);
    printf("shapes=%u n_dims=%u fmt=%s\n", range.shape_number, range.n_dims, get_format_string(range.fmt));
    rknn_tensor_attr attr = query_attr(ctx, RKNN_QUERY_INPUT_ATTR, 0);
    for (uint32_t s = 0; s < range.shape_number; s++) {
        attr.n_dims = range.n_dims;
        attr.fmt = range.fmt;
        for (uint32_t j = 0; j < range.n_dims; j++)
            attr.dims[j] = range.dyn_range[s][j];
        CHECK_RET(rknn_set_input_shapes(ctx, 1, &attr), RKNN_SUCC);
        run_shape(ctx, argv[2], argv[3], s, "shapes");
    }
    CHECK_RET(rknn_set_input_shape(ctx, &attr), RKNN_SUCC);
    run_shape(ctx, argv[2], argv[3], range.shape_number - 1, "shape");
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    printf("OK dynamic_shapes\n");
    return 0;
}
