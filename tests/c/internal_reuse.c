/* rknn_internal_mem_reuse_demo (reference 4.5): two models with RKNN_FLAG_MEM_ALLOC_OUTSIDE; one internal buffer of
 * the larger size wrapped with rknn_create_mem_from_fd into both contexts (rknn_set_internal_mem), weights in
 * rknn_create_mem buffers (rknn_set_weight_mem), io with rknn_set_io_mem; model A runs, then model B.
 * argv: modelA modelB image.bin H W C outdir. */
#include "flow_helpers.h"

int main(int argc, char **argv)
{
    CHECK(argc == 8);
    size_t image_size;
    unsigned char *image = read_file(argv[3], &image_size);
    uint32_t h = atoi(argv[4]), w = atoi(argv[5]), c = atoi(argv[6]);
    rknn_context ctx[2];
    rknn_mem_size sizes[2];
    uint32_t max_internal = 0;
    for (int n = 0; n < 2; n++) {
        CHECK_RET(rknn_init(&ctx[n], argv[1 + n], 0, RKNN_FLAG_MEM_ALLOC_OUTSIDE, NULL), RKNN_SUCC);
        memset(&sizes[n], 0, sizeof(sizes[n]));
        CHECK_RET(rknn_query(ctx[n], RKNN_QUERY_MEM_SIZE, &sizes[n], sizeof(sizes[n])), RKNN_SUCC);
        printf("model %d: weight=%u internal=%u dma=%llu\n", n, sizes[n].total_weight_size,
               sizes[n].total_internal_size, (unsigned long long)sizes[n].total_dma_allocated_size);
        CHECK(sizes[n].total_weight_size > 0 && sizes[n].total_internal_size > 0);
        if (sizes[n].total_internal_size > max_internal)
            max_internal = sizes[n].total_internal_size;
    }
    /* running before the memory is set is refused */
    CHECK(rknn_run(ctx[0], NULL) != RKNN_SUCC);

    rknn_tensor_mem *big = rknn_create_mem(ctx[0], max_internal);
    CHECK(big != NULL);
    rknn_tensor_mem *internal[2], *weight[2], *in[2], *out[2];
    rknn_tensor_attr in_attr[2], out_attr[2];
    for (int n = 0; n < 2; n++) {
        internal[n] = rknn_create_mem_from_fd(ctx[n], big->fd, big->virt_addr, sizes[n].total_internal_size, 0);
        CHECK(internal[n] != NULL);
        CHECK_RET(rknn_set_internal_mem(ctx[n], internal[n]), RKNN_SUCC);
        weight[n] = rknn_create_mem(ctx[n], sizes[n].total_weight_size);
        CHECK(weight[n] != NULL);
        CHECK_RET(rknn_set_weight_mem(ctx[n], weight[n]), RKNN_SUCC);
        in_attr[n] = image_input_attr(ctx[n]);
        in[n] = rknn_create_mem(ctx[n], in_attr[n].size_with_stride);
        out_attr[n] = float_output_attr(ctx[n], 0);
        out_attr[n].fmt = RKNN_TENSOR_NCHW;
        out[n] = rknn_create_mem(ctx[n], out_attr[n].n_elems * sizeof(float));
        CHECK(in[n] != NULL && out[n] != NULL);
        copy_rows((unsigned char *)in[n]->virt_addr + in[n]->offset, image, h, w, c, in_attr[n].w_stride);
        CHECK_RET(rknn_set_io_mem(ctx[n], in[n], &in_attr[n]), RKNN_SUCC);
        CHECK_RET(rknn_set_io_mem(ctx[n], out[n], &out_attr[n]), RKNN_SUCC);
    }
    for (int n = 0; n < 2; n++) {
        for (int i = 0; i < 3; i++)
            CHECK_RET(rknn_run(ctx[n], NULL), RKNN_SUCC);
        write_output(argv[7], n ? "model_b" : "model_a", out[n]->virt_addr, out_attr[n].n_elems * sizeof(float));
    }
    CHECK_RET(rknn_run(ctx[0], NULL), RKNN_SUCC);       /* A again after B used the shared internal memory */
    write_output(argv[7], "model_a_again", out[0]->virt_addr, out_attr[0].n_elems * sizeof(float));

    CHECK_RET(rknn_destroy_mem(ctx[0], big), RKNN_SUCC);
    for (int n = 0; n < 2; n++) {
        CHECK_RET(rknn_destroy_mem(ctx[n], in[n]), RKNN_SUCC);
        CHECK_RET(rknn_destroy_mem(ctx[n], out[n]), RKNN_SUCC);
        CHECK_RET(rknn_destroy_mem(ctx[n], internal[n]), RKNN_SUCC);
        CHECK_RET(rknn_destroy_mem(ctx[n], weight[n]), RKNN_SUCC);
        CHECK_RET(rknn_destroy(ctx[n]), RKNN_SUCC);
    }
    free(image);
    printf("OK internal_reuse\n");
    return 0;
}
