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

/* FastRPC buffer registration (remote.h): register [buf, buf + size) of the rpcmem buffer of `fd`; fd -1
 * deregisters buf. A range outside that buffer is refused with a log line. */
#define FASTRPC_ATTR_NON_COHERENT 2
#define FASTRPC_ATTR_COHERENT 4
#define FASTRPC_ATTR_KEEP_MAP 8
#define FASTRPC_ATTR_NOMAP 16
#define FASTRPC_ATTR_FORCE_NOFLUSH 32
#define FASTRPC_ATTR_FORCE_NOINVALIDATE 64
#define FASTRPC_ATTR_TRY_MAP_STATIC 128
void remote_register_buf(void *buf, int size, int fd);
void remote_register_buf_attr(void *buf, int size, int fd, int attr);
void remote_register_buf_attr2(void *buf, size_t size, int fd, int attr);

#ifdef __cplusplus
}
#endif
#endif
