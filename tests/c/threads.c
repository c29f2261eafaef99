/* Threads from C: rknn_dup_context gives each pthread its own context of one model; all threads run RUNS times
 * at once and must get the single-thread output bit for bit. Then two threads share one context: each rknn_run
 * either succeeds or is refused (the context is busy), and nothing deadlocks.
 * argv: model input.bin threads runs. */
#include <pthread.h>
#include "flow_helpers.h"

static float *x;
static size_t x_size;
static int runs;

struct job {
    rknn_context ctx;
    float *out;
    size_t out_size;
    int ok, refused;
};

static int run_once(rknn_context ctx, float *dst, size_t dst_size)
{
    rknn_input in = float_nchw_input(x, x_size);
    if (rknn_inputs_set(ctx, 1, &in) != RKNN_SUCC)
        return -1;
    int ret = rknn_run(ctx, NULL);
    if (ret != RKNN_SUCC)
        return ret;
    rknn_output out;
    memset(&out, 0, sizeof(out));
    out.want_float = 1;
    out.is_prealloc = 1;
    out.buf = dst;
    out.size = (uint32_t)dst_size;
    return rknn_outputs_get(ctx, 1, &out, NULL);
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (int i = 0; i < runs; i++) {
        if (run_once(j->ctx, j->out, j->out_size) == RKNN_SUCC)
            j->ok++;
        else
            j->refused++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc == 5);
    x = read_file(argv[2], &x_size);
    int n = atoi(argv[3]);
    runs = atoi(argv[4]);
    rknn_context base;
    CHECK_RET(rknn_init(&base, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_tensor_attr oa;
    memset(&oa, 0, sizeof(oa));
    CHECK_RET(rknn_query(base, RKNN_QUERY_OUTPUT_ATTR, &oa, sizeof(oa)), RKNN_SUCC);
    size_t out_size = oa.n_elems * sizeof(float);
    float *want = malloc(out_size);
    CHECK_RET(run_once(base, want, out_size), RKNN_SUCC);

    struct job jobs[16];
    pthread_t tid[16];
    CHECK(n > 0 && n <= 16);
    for (int t = 0; t < n; t++) {
        memset(&jobs[t], 0, sizeof(jobs[t]));
        CHECK_RET(rknn_dup_context(&base, &jobs[t].ctx), RKNN_SUCC);
        jobs[t].out = malloc(out_size);
        jobs[t].out_size = out_size;
    }
    for (int t = 0; t < n; t++)
        CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    for (int t = 0; t < n; t++) {
        pthread_join(tid[t], NULL);
        CHECK(jobs[t].ok == runs && jobs[t].refused == 0);
        CHECK(memcmp(jobs[t].out, want, out_size) == 0);
        CHECK_RET(rknn_destroy(jobs[t].ctx), RKNN_SUCC);
        free(jobs[t].out);
    }
    printf("dup threads=%d runs=%d identical\n", n, runs);

    struct job shared[2];
    for (int t = 0; t < 2; t++) {
        memset(&shared[t], 0, sizeof(shared[t]));
        shared[t].ctx = base;
        shared[t].out = malloc(out_size);
        shared[t].out_size = out_size;
        CHECK(pthread_create(&tid[t], NULL, worker, &shared[t]) == 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(tid[t], NULL);
        CHECK(shared[t].ok + shared[t].refused == runs);
        free(shared[t].out);
    }
    printf("shared ok=%d refused=%d\n", shared[0].ok + shared[1].ok, shared[0].refused + shared[1].refused);
    CHECK_RET(rknn_destroy(base), RKNN_SUCC);
    free(want);
    printf("OK threads\n");
    return 0;
}
