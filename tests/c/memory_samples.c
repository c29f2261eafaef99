/* The seed's 5.4 samples from C, one after the other on one context, each writing its float output:
 * rknn_create_mem_from_fd (an fd this program allocated itself, non-zero offset), rknn_create_mem_from_phys
 * (wrapping another buffer by its device address; its fd mapped again here and written by a child process),
 * rknn_create_mem2 with every alloc flag, rknn_mem_sync both
 * ways, rknn_destroy_mem (a second destroy is refused). argv: model image.bin H W C outdir. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "flow_helpers.h"

static uint32_t H, W, C;
static unsigned char *image;

static void run_with_input(rknn_context ctx, rknn_tensor_mem *in, rknn_tensor_attr *in_attr, rknn_tensor_mem *out,
                           rknn_tensor_attr *out_attr, const char *dir, const char *name)
{
    copy_rows((unsigned char *)in->virt_addr + in->offset, image, H, W, C, in_attr->w_stride);
    CHECK_RET(rknn_mem_sync(ctx, in, RKNN_MEMORY_SYNC_TO_DEVICE), RKNN_SUCC);
    CHECK_RET(rknn_set_io_mem(ctx, in, in_attr), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    CHECK_RET(rknn_mem_sync(ctx, out, RKNN_MEMORY_SYNC_FROM_DEVICE), RKNN_SUCC);
    write_output(dir, name, (char *)out->virt_addr + out->offset, out_attr->n_elems * sizeof(float));
}

int main(int argc, char **argv)
{
    CHECK(argc == 7);
    size_t image_size;
    image = read_file(argv[2], &image_size);
    H = atoi(argv[3]), W = atoi(argv[4]), C = atoi(argv[5]);
    const char *dir = argv[6];

    rknn_context ctx = 0;
    CHECK_RET(rknn_init(&ctx, argv[1], 0, 0, NULL), RKNN_SUCC);
    rknn_tensor_attr in_attr = image_input_attr(ctx);
    rknn_tensor_attr out_attr = float_output_attr(ctx, 0);
    uint32_t in_size = in_attr.size_with_stride, out_size = out_attr.n_elems * sizeof(float);

    /* rknn_create_mem_from_fd: one memfd of the program's own, input at offset 4096, output at 8192 + in_size */
    size_t fd_size = 8192 + in_size + out_size;
    int fd = memfd_create("npurt-test", MFD_ALLOW_SEALING);
    CHECK(fd >= 0 && ftruncate(fd, fd_size) == 0);
    void *map = mmap(NULL, fd_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED);
    rknn_tensor_mem *in_fd = rknn_create_mem_from_fd(ctx, fd, map, in_size, 4096);
    rknn_tensor_mem *out_fd = rknn_create_mem_from_fd(ctx, fd, map, out_size, 8192 + in_size);
    CHECK(in_fd != NULL && out_fd != NULL);
    CHECK(in_fd->fd == fd && in_fd->offset == 4096 && in_fd->flags == RKNN_TENSOR_MEMORY_FLAGS_FROM_FD);
    CHECK_RET(rknn_set_io_mem(ctx, out_fd, &out_attr), RKNN_SUCC);
    copy_rows((unsigned char *)map + 4096, image, H, W, C, in_attr.w_stride);   /* through our own mapping */
    CHECK_RET(rknn_set_io_mem(ctx, in_fd, &in_attr), RKNN_SUCC);
    CHECK_RET(rknn_run(ctx, NULL), RKNN_SUCC);
    write_output(dir, "from_fd", (char *)map + 8192 + in_size, out_size);

    /* rknn_create_mem + rknn_create_mem_from_phys: wrap a runtime buffer again by its device address */
    rknn_tensor_mem *big = rknn_create_mem(ctx, in_size + 4096);
    CHECK(big != NULL && big->phys_addr != 0 && big->flags == RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE);
    rknn_tensor_mem *in_phys = rknn_create_mem_from_phys(ctx, big->phys_addr + 4096, (char *)big->virt_addr + 4096,
                                                         in_size);
    CHECK(in_phys != NULL && in_phys->flags == RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS);
    rknn_tensor_mem *out = rknn_create_mem(ctx, out_size);
    CHECK(out != NULL);
    CHECK_RET(rknn_set_io_mem(ctx, out, &out_attr), RKNN_SUCC);
    run_with_input(ctx, in_phys, &in_attr, out, &out_attr, dir, "from_phys");
    /* the fd of runtime memory is real: a second mapping of it shows the same bytes */
    void *again = mmap(NULL, big->size, PROT_READ, MAP_SHARED, big->fd, 0);
    CHECK(again != MAP_FAILED && memcmp(again, big->virt_addr, big->size) == 0);
    munmap(again, big->size);
    /* ... and another process writing through it is seen at virt_addr (the bytes before the wrapped input) */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        unsigned char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, big->fd, 0);
        if (w == MAP_FAILED)
            _exit(1);
        memset(w, 0xab, 64);
        _exit(0);
    }
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_RET(rknn_mem_sync(ctx, big, RKNN_MEMORY_SYNC_FROM_DEVICE), RKNN_SUCC);   /* cacheable: invalidate */
    CHECK(((unsigned char *)big->virt_addr)[0] == 0xab && ((unsigned char *)big->virt_addr)[63] == 0xab);

    /* rknn_create_mem2 with every alloc flag */
    static const struct { const char *name; uint64_t flags; int no_ctx; } allocs[] = {
        {"mem2_default", RKNN_FLAG_MEMORY_FLAGS_DEFAULT, 0},
        {"mem2_cacheable", RKNN_FLAG_MEMORY_CACHEABLE, 0},
        {"mem2_non_cacheable", RKNN_FLAG_MEMORY_NON_CACHEABLE, 0},
        {"mem2_try_sram", RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM, 0},
        {"mem2_no_context", RKNN_MEM_FLAG_ALLOC_NO_CONTEXT, 1},
    };
    for (size_t i = 0; i < sizeof(allocs) / sizeof(allocs[0]); i++) {
        rknn_tensor_mem *m = rknn_create_mem2(allocs[i].no_ctx ? 0 : ctx, in_size, allocs[i].flags);
        CHECK(m != NULL && m->size >= in_size && m->virt_addr != NULL);
        run_with_input(ctx, m, &in_attr, out, &out_attr, dir, allocs[i].name);
        CHECK_RET(rknn_set_io_mem(ctx, in_fd, &in_attr), RKNN_SUCC);         /* unbind before destroying */
        CHECK_RET(rknn_destroy_mem(allocs[i].no_ctx ? 0 : ctx, m), RKNN_SUCC);
        CHECK_RET(rknn_destroy_mem(ctx, m), RKNN_ERR_PARAM_INVALID);          /* already destroyed */
    }

    CHECK_RET(rknn_destroy_mem(ctx, in_phys), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, big), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, out), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, in_fd), RKNN_SUCC);
    CHECK_RET(rknn_destroy_mem(ctx, out_fd), RKNN_SUCC);
    CHECK_RET(rknn_destroy(ctx), RKNN_SUCC);
    munmap(map, fd_size);
    close(fd);
    free(image);
    printf("OK memory_samples\n");
    return 0;
}
