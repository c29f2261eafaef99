/* Bad input from C: every call below is wrong in a documented way and must return the vendor's status (or NULL)
 * with an E RKNN: line, crash nothing and change nothing: the context still runs afterwards and the structs the
 * calls were given are untouched. Prints "name status" lines. argv: model vendor.rknn input.bin. */
#include "common.h"
#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_matmul_api.h"

static void *volatile wild_ptr = (void *)0x10;     /* volatile: the compiler must not see through it */
#define WILD (wild_ptr)
#define SHOW(name, expr) printf("%s %d\n", name, (int)(expr))
#define SHOW_NULL(name, expr) printf("%s %s\n", name, (expr) == NULL ? "NULL" : "not-NULL")

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    size_t x_size;
    float *x = read_file(argv[3], &x_size);
    rknn_context ctx = 0, other = 0;
    char junk[64] = "definitely not a model";

    SHOW("init_null_ctx", rknn_init(NULL, argv[1], 0, 0, NULL));
    SHOW("init_missing_file", rknn_init(&other, "/nonexistent/model.onnx", 0, 0, NULL));
    SHOW("init_vendor_rknn", rknn_init(&other, argv[2], 0, 0, NULL));
    SHOW("init_wild_model", rknn_init(&other, WILD, 100, 0, NULL));
    SHOW("init_wild_path", rknn_init(&other, WILD, 0, 0, NULL));
    SHOW("init_garbage", rknn_init(&other, junk, sizeof(junk), 0, NULL));
    SHOW("init_wild_extend", rknn_init(&other, argv[1], 0, 0, WILD));
    CHECK(other == 0);
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);

    rknn_input_output_num io;
    rknn_tensor_attr attr, untouched;
    memset(&attr, 0x5a, sizeof(attr));
    untouched = attr;
    SHOW("query_bad_ctx", rknn_query(12345, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io)));
    SHOW("query_null_info", rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, NULL, sizeof(io)));
    SHOW("query_wild_info", rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, WILD, sizeof(attr)));
    SHOW("query_short", rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &attr, 8));
    SHOW("query_bad_cmd", rknn_query(ctx, (rknn_query_cmd)99, &io, sizeof(io)));
    attr.index = 7;
    untouched.index = 7;
    SHOW("query_bad_index", rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &attr, sizeof(attr)));
    CHECK(memcmp(&attr, &untouched, sizeof(attr)) == 0);

    rknn_tensor_mem forged;
    memset(&forged, 0, sizeof(forged));
    rknn_tensor_mem *mem = rknn_create_mem(ctx, 4096);
    CHECK(mem != NULL);
    rknn_tensor_mem *gone = rknn_create_mem(ctx, 4096);
    CHECK_RET(rknn_destroy_mem(ctx, gone), RKNN_SUCC);
    rknn_tensor_mem *fresh = rknn_create_mem(ctx, 4096);
    CHECK(fresh != NULL && fresh != gone);               /* a destroyed struct's address is not handed out again */
    SHOW("destroy_mem_forged", rknn_destroy_mem(ctx, &forged));
    SHOW("destroy_mem_null", rknn_destroy_mem(ctx, NULL));
    SHOW("destroy_mem_wild", rknn_destroy_mem(ctx, WILD));
    SHOW("destroy_mem_twice", rknn_destroy_mem(ctx, gone));
    SHOW_NULL("create_mem_zero", rknn_create_mem(ctx, 0));
    SHOW_NULL("create_mem_bad_ctx", rknn_create_mem(12345, 64));
    SHOW_NULL("create_mem2_bad_flags", rknn_create_mem2(ctx, 64, 1u << 30));
    SHOW_NULL("from_fd_bad_fd", rknn_create_mem_from_fd(ctx, -1, NULL, 4096, 0));
    SHOW_NULL("from_phys_unknown", rknn_create_mem_from_phys(ctx, 0xdead0000ull, NULL, 4096));
    SHOW("mem_sync_bad_mode", rknn_mem_sync(ctx, mem, (rknn_mem_sync_mode)99));
    SHOW("mem_sync_forged", rknn_mem_sync(ctx, &forged, RKNN_MEMORY_SYNC_TO_DEVICE));

    rknn_tensor_attr in_attr;
    memset(&in_attr, 0, sizeof(in_attr));
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, &in_attr, sizeof(in_attr)), RKNN_SUCC);
    SHOW("set_io_mem_null_attr", rknn_set_io_mem(ctx, mem, NULL));
    SHOW("set_io_mem_wild_attr", rknn_set_io_mem(ctx, mem, WILD));
    rknn_tensor_mem *tiny = rknn_create_mem(ctx, 16);
    SHOW("set_io_mem_small_mem", rknn_set_io_mem(ctx, tiny, &in_attr));
    CHECK_RET(rknn_destroy_mem(ctx, tiny), RKNN_SUCC);
    SHOW("set_weight_mem_no_flag", rknn_set_weight_mem(ctx, mem));

    rknn_input in;
    memset(&in, 0, sizeof(in));
    in.type = RKNN_TENSOR_FLOAT32;
    in.fmt = RKNN_TENSOR_NCHW;
    in.size = (uint32_t)x_size;
    SHOW("inputs_set_null", rknn_inputs_set(ctx, 1, NULL));
    SHOW("inputs_set_wild_array", rknn_inputs_set(ctx, 1, WILD));
    in.buf = WILD;
    SHOW("inputs_set_wild_buf", rknn_inputs_set(ctx, 1, &in));
    in.buf = mem->virt_addr;
    in.size = 1 << 20;
    SHOW("inputs_set_overrun", rknn_inputs_set(ctx, 1, &in));
    rknn_output out;
    memset(&out, 0, sizeof(out));
    out.want_float = 1;
    out.buf = x;
    SHOW("outputs_release_foreign", rknn_outputs_release(ctx, 1, &out));
    SHOW("run_bad_ctx", rknn_run(12345, NULL));
    SHOW("run_wild_extend", rknn_run(ctx, WILD));
    SHOW("wait", rknn_wait(ctx, NULL));
    SHOW("core_mask_bad", rknn_set_core_mask(ctx, (rknn_core_mask)99));
    SHOW("dup_null", rknn_dup_context(NULL, &other));
    SHOW("dup_wild_out", rknn_dup_context(&ctx, WILD));
    SHOW("set_input_shapes_static", rknn_set_input_shapes(ctx, 1, &in_attr));
    SHOW("register_custom_null", rknn_register_custom_ops(ctx, NULL, 1));
    SHOW("register_custom_wild", rknn_register_custom_ops(ctx, WILD, 1));
    rknn_custom_op_attr op_attr;
    memset(&op_attr, 0x33, sizeof(op_attr));
    rknn_custom_op_get_op_attr(NULL, "alpha", &op_attr);
    rknn_custom_op_get_op_attr(WILD, "alpha", &op_attr);
    SHOW("get_op_attr_untouched", op_attr.n_elems == 0x33333333u);
    rknn_matmul_ctx mm = 0;
    rknn_matmul_io_attr mio;
    SHOW("matmul_null_info", rknn_matmul_create(&mm, NULL, &mio));
    SHOW("matmul_run_bad_ctx", rknn_matmul_run(12345));
    SHOW("destroy_bad_ctx", rknn_destroy(12345));

    /* nothing else changed: the context still runs */
    in.buf = x;
    in.size = (uint32_t)x_size;
    CHECK_RET(rknn_inputs_set(ctx, 1, &in), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, mem), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, fresh), RKNN_SUCC);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    printf("OK bad_input\n");
    return 0;
}
