/* rknn_query_demo: load a model, print its inputs and outputs with the header's string helpers, run it once. */
#include <stdio.h>
#include <string.h>
#include "rknn_api.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s model\n", argv[0]);
        return 2;
    }
    rknn_context ctx;
    if (rknn_init(&ctx, argv[1], 0, 0, NULL) != RKNN_SUCC)
        return 1;
    rknn_input_output_num io;
    rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io));
    for (uint32_t i = 0; i < io.n_input + io.n_output; i++) {
        rknn_tensor_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.index = i < io.n_input ? i : i - io.n_input;
        rknn_query(ctx, i < io.n_input ? RKNN_QUERY_INPUT_ATTR : RKNN_QUERY_OUTPUT_ATTR, &attr, sizeof(attr));
        printf("%s %u: %s n_elems=%u fmt=%s type=%s\n", i < io.n_input ? "input" : "output", attr.index, attr.name,
               attr.n_elems, get_format_string(attr.fmt), get_type_string(attr.type));
    }
    rknn_destroy(ctx);
    printf("OK project\n");
    return 0;
}
