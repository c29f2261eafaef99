/* The steps the seed samples repeat: query an attr, copy an image into a buffer at w_stride, bind a float output. */
#ifndef NPURT_TEST_FLOW_HELPERS_H
#define NPURT_TEST_FLOW_HELPERS_H

#include "common.h"
#include "rknn_api.h"

static inline rknn_tensor_attr query_attr(rknn_context ctx, rknn_query_cmd cmd, uint32_t index)
{
    rknn_tensor_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.index = index;
    CHECK_RET(rknn_query(ctx, cmd, &attr, sizeof(attr)), RKNN_SUCC);
    return attr;
}

/* The uint8 NHWC input attr of zero copy (rknn_create_mem_demo: type UINT8, fmt NHWC). */
static inline rknn_tensor_attr image_input_attr(rknn_context ctx)
{
    rknn_tensor_attr attr = query_attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, 0);
    attr.type = RKNN_TENSOR_UINT8;
    attr.fmt = RKNN_TENSOR_NHWC;
    return attr;
}

/* Copy an HxWxC uint8 image to dst with rows of w_stride pixels. */
static inline void copy_rows(unsigned char *dst, const unsigned char *img, uint32_t h, uint32_t w, uint32_t c,
                             uint32_t w_stride)
{
    uint32_t stride = w_stride ? w_stride : w;
    for (uint32_t y = 0; y < h; y++)
        memcpy(dst + (size_t)y * stride * c, img + (size_t)y * w * c, (size_t)w * c);
}

/* Output 0 as float32 in its queried (logical) layout. */
static inline rknn_tensor_attr float_output_attr(rknn_context ctx, uint32_t index)
{
    rknn_tensor_attr attr = query_attr(ctx, RKNN_QUERY_OUTPUT_ATTR, index);
    attr.type = RKNN_TENSOR_FLOAT32;
    return attr;
}

/* Input 0 of the general API as float32 NCHW bytes. */
static inline rknn_input float_nchw_input(void *buf, size_t size)
{
    rknn_input in;
    memset(&in, 0, sizeof(in));
    in.type = RKNN_TENSOR_FLOAT32;
    in.fmt = RKNN_TENSOR_NCHW;
    in.buf = buf;
    in.size = (uint32_t)size;
    return in;
}

static inline void write_output(const char *dir, const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
    write_file(path, data, size);
}

#endif
