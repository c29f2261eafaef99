/* npurt's HTP/QnnHtpMem.h: the HTP custom memory descriptor (QnnMemHtp_Descriptor_t is 32 B: type @0, size @8,
 * union @16; QnnHtpMem_SharedBufferConfig_t is 16 B). For SHARED_BUFFER, `size` is the whole buffer's size and each
 * registered offset is its own handle. */
#ifndef NPURT_QNN_HTP_MEM_H
#define NPURT_QNN_HTP_MEM_H

#include "QnnCommon.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QNN_HTP_MEM_QURT = 0,
    QNN_HTP_MEM_SHARED_BUFFER = 1,
    QNN_HTP_MEM_WEIGHTS_BUFFER = 2,
    QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER = 3,
    /* named by the newest tutorial, in no public header: npurt's value */
    QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER = 0x4E500004,
    QNN_HTP_MEM_UNDEFINED = 0x7FFFFFFF
} QnnHtpMem_Type_t;

/* an address in the DSP address space (npurt: from qurt_malloc of libQnnHtp.so) */
typedef uint32_t QnnHtpMem_QurtAddress_t;

typedef struct {
    int32_t fd;
    uint64_t offset;
} QnnHtpMem_SharedBufferConfig_t;

typedef struct {
    QnnHtpMem_Type_t type;
    uint64_t size;
    union {
        QnnHtpMem_QurtAddress_t qurtAddress;
        QnnHtpMem_SharedBufferConfig_t sharedBufferConfig;
        QnnHtpMem_SharedBufferConfig_t weightsBufferConfig;
        QnnHtpMem_SharedBufferConfig_t sharedSpillfillBufferConfig;
        /* the newest tutorial's spellings (npurt places them in the same union) */
        QnnHtpMem_SharedBufferConfig_t spillfillBufferConfig;
        QnnHtpMem_QurtAddress_t sharedSpillfillBufferQurtAddress;
        QnnHtpMem_QurtAddress_t sharedVTCMBackupBufferQurtAddress;
    };
} QnnMemHtp_Descriptor_t;

#ifdef __cplusplus
}
#endif
#endif
