/* The C side of bench/capi.py: microseconds per call of rknn_query, rknn_create_mem + rknn_destroy_mem and a
 * zero-copy rknn_run on each model given, each the best of BATCHES batches (the Python side times the same calls
 * on the mirror); and the first call, rknn_init, which starts the interpreter. argv: batches iterations model... Prints "name microseconds" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rknn_api.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#define TIME_BEST(label, iters, body)                                                   \
    do {                                                                                \
        double best = 1e300;                                                            \
        for (int b = 0; b < batches; b++) {                                             \
            double t0 = now_us();                                                       \
            for (int i = 0; i < (iters); i++) { body; }                                 \
            double t = (now_us() - t0) / (iters);                                       \
            if (t < best) best = t;                                                     \
        }                                                                               \
        printf("%s %.3f\n", label, best);                                               \
    } while (0)

static void bind_io(rknn_context ctx, rknn_tensor_mem **in, rknn_tensor_mem **out)
{
    rknn_tensor_attr a;
    memset(&a, 0, sizeof(a));
    rknn_query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, &a, sizeof(a));
    *in = rknn_create_mem(ctx, a.size_with_stride);
    rknn_set_io_mem(ctx, *in, &a);
    memset(&a, 0, sizeof(a));
    rknn_query(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR, &a, sizeof(a));
    *out = rknn_create_mem(ctx, a.size_with_stride);
    rknn_set_io_mem(ctx, *out, &a);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int batches = atoi(argv[1]), iters = atoi(argv[2]);
    for (int m = 3; m < argc; m++) {
        rknn_context ctx;
        double t0 = now_us();
        if (rknn_init(&ctx, argv[m], 0, 0, NULL) != RKNN_SUCC)
            return 1;
        if (m == 3)
            printf("first_call %.3f\n", now_us() - t0);     /* starts the interpreter and imports npurt */
        char label[64];
        if (m == 3) {
            rknn_tensor_attr attr;
            TIME_BEST("rknn_query", iters * 10, {
                memset(&attr, 0, sizeof(attr));
                rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &attr, sizeof(attr));
            });
            TIME_BEST("rknn_create_mem+rknn_destroy_mem", iters * 2,
                      rknn_destroy_mem(ctx, rknn_create_mem(ctx, 4096)));
        }
        rknn_tensor_mem *in, *out;
        bind_io(ctx, &in, &out);
        rknn_run(ctx, NULL);                                  /* warm-up */
        snprintf(label, sizeof(label), "rknn_run:%d", m - 3);
        int runs = m == 3 ? iters : (iters / 20 > 2 ? iters / 20 : 2);
        TIME_BEST(label, runs, rknn_run(ctx, NULL));
        rknn_destroy_mem(ctx, in);
        rknn_destroy_mem(ctx, out);
        rknn_destroy(ctx);
    }
    return 0;
}
