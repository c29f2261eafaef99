/* Process exit with live contexts and buffers: a thread is inside rknn_run (in a loop) when main returns,
 * without destroying anything. The process must exit 0, neither crashing nor hanging. argv: model input.bin. */
#include <pthread.h>
#include <unistd.h>
#include "flow_helpers.h"

static rknn_context ctx2;
static volatile int started;

static void *spin(void *arg)
{
    (void)arg;
    for (;;) {
        rknn_run(ctx2, NULL);
        started = 1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    size_t size;
    float *x = read_file(argv[2], &size);
    rknn_context ctx;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_tensor_mem *mem = rknn_create_mem(ctx, 1 << 20);
    CHECK(mem != NULL);
    CHECK_RET(rknn_dup_context(&ctx, &ctx2), RKNN_SUCC);
    rknn_input in = float_nchw_input(x, size);
    CHECK_RET(rknn_inputs_set(ctx2, 1, &in), RKNN_SUCC);
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, spin, NULL) == 0);
    while (!started)
        usleep(1000);
    printf("OK exit_live\n");
    fflush(stdout);
    return 0;               /* contexts, the buffer and the running thread are left as they are */
}
