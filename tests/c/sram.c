/* The SRAM chapter from C: contexts with RKNN_FLAG_ENABLE_SRAM, RKNN_QUERY_MEM_SIZE total/free SRAM before and
 * after each, rknn_create_mem2(RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM), and the emulated debugfs bitmap
 * ($NPURT_DEBUGFS_DIR/rknpu/mm) printed while the contexts live. argv: model1 model2 debugfs_dir. */
#include "flow_helpers.h"

static void print_mm(const char *dir, const char *when)
{
    char path[4096];
    size_t size;
    snprintf(path, sizeof(path), "%s/rknpu/mm", dir);
    char *text = read_file(path, &size);
    printf("--- mm %s\n%.*s--- end\n", when, (int)size, text);
    free(text);
}

static rknn_mem_size mem_size(rknn_context ctx)
{
    rknn_mem_size m;
    memset(&m, 0, sizeof(m));
    CHECK_RET(rknn_query(ctx, RKNN_QUERY_MEM_SIZE, &m, sizeof(m)), RKNN_SUCC);
    return m;
}

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    rknn_context a, b;
    CHECK_RET(rknn_init(&a, argv[1], 0, RKNN_FLAG_ENABLE_SRAM, NULL), RKNN_SUCC);
    rknn_mem_size ma = mem_size(a);
    printf("ctx1 total_sram=%u free_sram=%u internal=%u\n", ma.total_sram_size, ma.free_sram_size,
           ma.total_internal_size);
    print_mm(argv[3], "ctx1");
    CHECK_RET(rknn_init(&b, argv[2], 0, RKNN_FLAG_ENABLE_SRAM, NULL), RKNN_SUCC);
    rknn_mem_size mb = mem_size(b);
    printf("ctx2 total_sram=%u free_sram=%u internal=%u\n", mb.total_sram_size, mb.free_sram_size,
           mb.total_internal_size);
    print_mm(argv[3], "ctx2");
    rknn_tensor_mem *m = rknn_create_mem2(a, 64 * 1024, RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM);
    CHECK(m != NULL);
    printf("mem2 free_sram=%u\n", mem_size(a).free_sram_size);
    print_mm(argv[3], "mem2");
    CHECK_RET(rknn_destroy_mem(a, m), RKNN_SUCC);
    CHECK_RET(rknn_destroy(b), RKNN_SUCC);
    CHECK_RET(rknn_destroy(a), RKNN_SUCC);
    print_mm(argv[3], "end");
    printf("OK sram\n");
    return 0;
}
