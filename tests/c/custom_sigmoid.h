/* A CPU custom op "cstSigmoid" in C, shared by custom_op.c (registered by the program) and custom_plugin.c (a
 * librkcst_*.so plugin): init reads the node's attributes with rknn_custom_op_get_op_attr into priv_data, compute
 * writes sigmoid(x) into the output's device memory, destroy frees priv_data. */
#ifndef NPURT_TEST_CUSTOM_SIGMOID_H
#define NPURT_TEST_CUSTOM_SIGMOID_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rknn_custom_op.h"

struct sigmoid_state {
    float alpha;
    char mode[16];
    int computes;
};

static int sigmoid_init(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                        rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    struct sigmoid_state *st = calloc(1, sizeof(*st));
    rknn_custom_op_attr attr;
    memset(&attr, 0, sizeof(attr));
    rknn_custom_op_get_op_attr(op_ctx, "alpha", &attr);
    if (attr.n_elems == 1 && attr.dtype == RKNN_TENSOR_FLOAT32)
        st->alpha = *(float *)attr.data;
    memset(&attr, 0, sizeof(attr));
    rknn_custom_op_get_op_attr(op_ctx, "mode", &attr);
    if (attr.n_elems > 0 && attr.n_elems < sizeof(st->mode))
        memcpy(st->mode, attr.data, attr.n_elems);
    op_ctx->priv_data = st;
    printf("init inputs=%u outputs=%u alpha=%g mode=%s n_elems=%u\n", n_inputs, n_outputs, st->alpha, st->mode,
           inputs[0].attr.n_elems);
    return n_inputs == 1 && n_outputs == 1 ? 0 : -1;
}

static int sigmoid_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                           rknn_custom_op_tensor *outputs, uint32_t n_outputs)
{
    struct sigmoid_state *st = op_ctx->priv_data;
    const float *x = (const float *)((char *)inputs[0].mem.virt_addr + inputs[0].mem.offset);
    float *y = (float *)((char *)outputs[0].mem.virt_addr + outputs[0].mem.offset);
    for (uint32_t i = 0; i < inputs[0].attr.n_elems; i++)
        y[i] = 1.0f / (1.0f + expf(-x[i]));
    st->computes++;
    return 0;
}

static int sigmoid_destroy(rknn_custom_op_context *op_ctx)
{
    struct sigmoid_state *st = op_ctx->priv_data;
    printf("destroy computes=%d\n", st ? st->computes : -1);
    free(st);
    op_ctx->priv_data = NULL;
    return 0;
}

static void sigmoid_fill(rknn_custom_op *op)
{
    memset(op, 0, sizeof(*op));
    op->version = 1;
    op->target = RKNN_TARGET_TYPE_CPU;
    strcpy(op->op_type, "cstSigmoid");
    op->init = sigmoid_init;
    op->compute = sigmoid_compute;
    op->destroy = sigmoid_destroy;
}

#endif
