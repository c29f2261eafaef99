/* npurt's qurt_alloc.h: DSP-side memory for the Non-RPC use case, exported by npurt's libQnnHtp.so.
 * The tutorial malloc()s its spill-fill and VTCM backup buffers on the DSP; on x86-64 a heap pointer does not fit
 * QnnHtpMem_QurtAddress_t, so a port calls qurt_malloc instead: the result lies in npurt's emulated DSP address
 * space (below 4 GiB), fits a QuRT address, and the program reads and writes it directly. qurt_free ignores
 * pointers it did not hand out. */
#ifndef NPURT_QURT_ALLOC_H
#define NPURT_QURT_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *qurt_malloc(size_t size);
void qurt_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
