/* /proc/self/fd stays flat over many create/destroy cycles from C: rknn_create_mem / rknn_create_mem2 (also
 * RKNN_MEM_FLAG_ALLOC_NO_CONTEXT with ctx 0, which leaked one fd per call on the vendor's 2.3.2),
 * rknn_create_mem_from_fd of a runtime buffer, and whole contexts. argv: model cycles context_cycles. */
#include <dirent.h>
#include "common.h"
#include "rknn_api.h"

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    int cycles = atoi(argv[2]), ctx_cycles = atoi(argv[3]);
    rknn_context ctx;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_tensor_mem *warm = rknn_create_mem(ctx, 4096);
    CHECK_RET(rknn_destroy_mem(ctx, warm), RKNN_SUCC);
    int before = open_fds();
    for (int i = 0; i < cycles; i++) {
        rknn_tensor_mem *m = (i % 3 == 0) ? rknn_create_mem(ctx, 4096 + (i % 7) * 4096)
                           : (i % 3 == 1) ? rknn_create_mem2(0, 8192, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
                                          : rknn_create_mem2(ctx, 4096, RKNN_FLAG_MEMORY_NON_CACHEABLE);
        CHECK(m != NULL);
        if (i % 10 == 0) {
            rknn_tensor_mem *w = rknn_create_mem_from_fd(ctx, m->fd, m->virt_addr, 4096, 0);
            CHECK(w != NULL);
            CHECK_RET(rknn_destroy_mem(ctx, w), RKNN_SUCC);
        }
        CHECK_RET(rknn_destroy_mem(ctx, m), RKNN_SUCC);
    }
    int after_mems = open_fds();
    for (int i = 0; i < ctx_cycles; i++) {
        rknn_context c2;
        CHECK_RET(rknn_init(&c2, argv[1], 0, 0, NULL), RKNN_SUCC);
        CHECK_RET(rknn_destroy(c2), RKNN_SUCC);
    }
    int after_ctx = open_fds();
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    printf("fds before=%d after_mems=%d after_contexts=%d\n", before, after_mems, after_ctx);
    CHECK(after_mems == before && after_ctx == before);
    printf("OK cycles\n");
    return 0;
}
