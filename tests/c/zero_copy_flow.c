/* Figure 3-2, the zero-copy flow (rknn_create_mem_demo): init from a path (size 0) -> query -> create_mem ->
 * write the image rows at w_stride -> set_io_mem -> run (twice) -> read the float output at virt_addr ->
 * destroy_mem -> destroy. argv: model image.bin H W C out.bin. */
#include "common.h"
#include "rknn_api.h"

int main(int argc, char **argv)
{
    CHECK(argc == 7);
    size_t image_size;
    unsigned char *image = read_file(argv[2], &image_size);
    uint32_t h = atoi(argv[3]), w = atoi(argv[4]), c = atoi(argv[5]);
    CHECK(image_size == (size_t)h * w * c);

    rknn_context ctx = 0;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_input_output_num io;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io)), RKNN_SUCC);

    rknn_tensor_attr in_attr;
    memset(&in_attr, 0, sizeof(in_attr));
    in_attr.index = 0;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, &in_attr, sizeof(in_attr)), RKNN_SUCC);
    printf("native input fmt=%s dims=[%u,%u,%u,%u] w_stride=%u size_with_stride=%u\n",
           get_format_string(in_attr.fmt), in_attr.dims[0], in_attr.dims[1], in_attr.dims[2], in_attr.dims[3],
           in_attr.w_stride, in_attr.size_with_stride);
    in_attr.type = RKNN_TENSOR_UINT8;
    in_attr.fmt = RKNN_TENSOR_NHWC;
    rknn_tensor_mem *in_mem = rknn_create_mem(ctx, in_attr.size_with_stride);
    CHECK(in_mem != NULL && in_mem->virt_addr != NULL && in_mem->fd >= 0);
    uint32_t stride = in_attr.w_stride ? in_attr.w_stride : w;
    unsigned char *dst = (unsigned char *)in_mem->virt_addr + in_mem->offset;
    if (stride == w) {
        memcpy(dst, image, image_size);
    } else {
        for (uint32_t y = 0; y < h; y++)
            memcpy(dst + (size_t)y * stride * c, image + (size_t)y * w * c, (size_t)w * c);
    }
    CHECK_RET(rknn_set_io_mem(ctx, in_mem, &in_attr), RKNN_SUCC);

    rknn_tensor_attr out_attr;
    memset(&out_attr, 0, sizeof(out_attr));
    out_attr.index = 0;
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &out_attr, sizeof(out_attr)), RKNN_SUCC);
    out_attr.type = RKNN_TENSOR_FLOAT32;
    rknn_tensor_mem *out_mem = rknn_create_mem(ctx, out_attr.n_elems * sizeof(float));
    CHECK(out_mem != NULL);
    CHECK_RET(rknn_set_io_mem(ctx, out_mem, &out_attr), RKNN_SUCC);

    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    write_file(argv[6], out_mem->virt_addr, out_attr.n_elems * sizeof(float));

    CHECK_RET(rknn_destroy_mem(ctx, in_mem), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, out_mem), RKNN_SUCC);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    free(image);
    printf("OK zero_copy_flow\n");
    return 0;
}
