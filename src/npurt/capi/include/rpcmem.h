/* npurt's rpcmem.h: the libcdsprpc.so allocator. Buffers are page-aligned shared memory with a real fd;
 * rpcmem_to_fd / rpcmem_free take exactly an allocation's base (an interior pointer gives -1 / is ignored). */
#ifndef NPURT_RPCMEM_H
#define NPURT_RPCMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPCMEM_HEAP_ID_SECURE 9
#define RPCMEM_HEAP_ID_SYSTEM_CONTIG 21
#define RPCMEM_HEAP_ID_CONTIG 22
#define RPCMEM_HEAP_ID_SYSTEM 25
#define RPCMEM_DEFAULT_HEAP -1

#define RPCMEM_DEFAULT_FLAGS 1
#define RPCMEM_FLAG_UNCACHED 0
#define RPCMEM_FLAG_CACHED RPCMEM_DEFAULT_FLAGS
#define RPCMEM_FORCE_NOFLUSH 0x01000000
#define RPCMEM_FORCE_NOINVALIDATE 0x02000000
#define RPCMEM_TRY_MAP_STATIC 0x04000000

void rpcmem_init(void);
void rpcmem_deinit(void);
void *rpcmem_alloc(int heapid, uint32_t flags, int size);
void *rpcmem_alloc2(int heapid, uint32_t flags, size_t size);
void rpcmem_free(void *po);
int rpcmem_to_fd(void *po);

#define rpcmem_alloc_def(size) rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (size))

#ifdef __cplusplus
}
#endif
#endif
