/* The matmul API from C: RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32 and RKNN_INT8_MM_INT8_TO_INT32 with A, B, C in
 * rknn_create_mem buffers of the matmul context, against a C reference (int8 exactly, fp16 within rounding);
 * then B converted with rknn_B_normal_layout_to_native_layout from a malloc'd buffer into a native-layout run. */
#include "common.h"
#include "rknn_matmul_api.h"

enum { M = 4, K = 64, N = 32 };

static int run_fp16(int native_b)
{
    rknn_matmul_info info;
    memset(&info, 0, sizeof(info));
    info.M = M, info.K = K, info.N = N;
    info.type = RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32;
    info.B_layout = native_b ? RKNN_MM_LAYOUT_NATIVE : RKNN_MM_LAYOUT_NORM;
    rknn_matmul_io_attr io;
    memset(&io, 0, sizeof(io));
    rknn_matmul_ctx ctx = 0;
    CHECK_RET(rknn_matmul_create(&ctx, &info, &io), RKNN_SUCC);
    CHECK(io.A.size == M * K * 2 && io.C.size == M * N * 4);
    rknn_tensor_mem *a = rknn_create_mem(ctx, io.A.size), *b = rknn_create_mem(ctx, io.B.size),
                    *c = rknn_create_mem(ctx, io.C.size);
    CHECK(a && b && c);
    static float fa[M * K], fb[K * N];
    _Float16 *ha = a->virt_addr, *hb_normal = malloc(K * N * sizeof(_Float16));
    for (int i = 0; i < M * K; i++) ha[i] = (_Float16)(((i * 7) % 13 - 6) / 8.0f), fa[i] = (float)ha[i];
    for (int i = 0; i < K * N; i++) hb_normal[i] = (_Float16)(((i * 5) % 11 - 5) / 4.0f), fb[i] = (float)hb_normal[i];
    if (native_b)
        CHECK_RET(rknn_B_normal_layout_to_native_layout(hb_normal, b->virt_addr, K, N, &info), RKNN_SUCC);
    else
        memcpy(b->virt_addr, hb_normal, K * N * sizeof(_Float16));
    CHECK_RET(rknn_matmul_set_io_mem(ctx, a, &io.A), RKNN_SUCC);
    CHECK_RET(rknn_matmul_set_io_mem(ctx, b, &io.B), RKNN_SUCC);
    CHECK_RET(rknn_matmul_set_io_mem(ctx, c, &io.C), RKNN_SUCC);
    CHECK_RET(rknn_matmul_run(ctx), RKNN_SUCC);
    const float *out = c->virt_addr;
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double want = 0;
            for (int k = 0; k < K; k++) want += (double)fa[m * K + k] * fb[k * N + n];
            double err = out[m * N + n] - want;
            if (err < 0) err = -err;
            if (err > worst) worst = err;
        }
    printf("fp16 %s max_abs_err=%g\n", native_b ? "native_b" : "normal_b", worst);
    CHECK(worst < 1e-2);
    free(hb_normal);
    CHECK_RET(rknn_destroy_mem(ctx, a), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, b), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, c), RKNN_SUCC);
    CHECK_RET(rknn_matmul_destroy(ctx), RKNN_SUCC);
    return 0;
}

static int run_int8(void)
{
    rknn_matmul_info info;
    memset(&info, 0, sizeof(info));
    info.M = M, info.K = K, info.N = N;
    info.type = RKNN_INT8_MM_INT8_TO_INT32;
    rknn_matmul_io_attr io;
    memset(&io, 0, sizeof(io));
    rknn_matmul_ctx ctx = 0;
    CHECK_RET(rknn_matmul_create(&ctx, &info, &io), RKNN_SUCC);
    printf("int8 A=%s B=%s C=%s\n", get_type_string(io.A.type), get_type_string(io.B.type),
           get_type_string(io.C.type));
    rknn_tensor_mem *a = rknn_create_mem(ctx, io.A.size), *b = rknn_create_mem(ctx, io.B.size),
                    *c = rknn_create_mem(ctx, io.C.size);
    CHECK(a && b && c);
    int8_t *ia = a->virt_addr, *ib = b->virt_addr;
    for (int i = 0; i < M * K; i++) ia[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < K * N; i++) ib[i] = (int8_t)((i * 91) % 251 - 125);
    CHECK_RET(rknn_matmul_set_io_mem(ctx, a, &io.A), RKNN_SUCC);
    CHECK_RET(rknn_matmul_set_io_mem(ctx, b, &io.B), RKNN_SUCC);
    CHECK_RET(rknn_matmul_set_io_mem(ctx, c, &io.C), RKNN_SUCC);
    CHECK_RET(rknn_matmul_run(ctx), RKNN_SUCC);
    rknn_quant_params q1, q2;
    float s1 = 0, s2 = 0;
    CHECK_RET(rknn_matmul_get_quant_params(ctx, &q1, &s1), RKNN_SUCC);
    for (int i = 0; i < 200; i++)                    /* the same arrays every time: memory stays flat */
        CHECK_RET(rknn_matmul_get_quant_params(ctx, &q2, &s2), RKNN_SUCC);
    CHECK(q1.scale == q2.scale && q1.zp == q2.zp && s1 == s2);
    const int32_t *out = c->virt_addr;
    int wrong = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t want = 0;
            for (int k = 0; k < K; k++) want += (int32_t)ia[m * K + k] * ib[k * N + n];
            wrong += out[m * N + n] != want;
        }
    printf("int8 wrong=%d\n", wrong);
    CHECK(wrong == 0);
    CHECK_RET(rknn_matmul_destroy(ctx), RKNN_SUCC);      /* destroys its memory too (W line) */
    return 0;
}

int main(void)
{
    run_fp16(0);
    run_fp16(1);
    run_int8();
    printf("OK matmul\n");
    return 0;
}
