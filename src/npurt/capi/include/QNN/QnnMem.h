/* npurt's QnnMem.h: memory registration (Qnn_MemDescriptor_t is 48 B: memShape 24, dataType @24, memType @28,
 * union @32). Register is all-or-nothing; deregister removes every valid handle even when it reports an error. */
#ifndef NPURT_QNN_MEM_H
#define NPURT_QNN_MEM_H

#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QNN_MEM_INVALID_FD -1

typedef enum {
    QNN_MEM_TYPE_ION = 1,
    QNN_MEM_TYPE_CUSTOM = 2,
    QNN_MEM_TYPE_DMA_BUF = 3,
    QNN_MEM_TYPE_UNDEFINED = 0x7FFFFFFF
} Qnn_MemType_t;

typedef struct {
    uint32_t numDim;
    uint32_t *dimSize;
    const char *shapeConfig;
} Qnn_MemShape_t;
#define QNN_MEM_SHAPE_INIT {0u, NULL, NULL}

typedef struct {
    int32_t fd;
} Qnn_MemIonInfo_t;
#define QNN_MEM_ION_INFO_INIT {QNN_MEM_INVALID_FD}

typedef void *Qnn_MemInfoCustom_t; /* for HTP: a QnnMemHtp_Descriptor_t* */

typedef struct {
    int32_t fd;
    void *data;
} Qnn_MemDmaBufInfo_t;
#define QNN_MEM_DMA_BUF_INFO_INIT {QNN_MEM_INVALID_FD, NULL}

typedef struct {
    Qnn_MemShape_t memShape;
    Qnn_DataType_t dataType;
    Qnn_MemType_t memType;
    union {
        Qnn_MemIonInfo_t ionInfo;
        Qnn_MemInfoCustom_t customInfo;
        Qnn_MemDmaBufInfo_t dmaBufInfo;
    };
} Qnn_MemDescriptor_t;
#define QNN_MEM_DESCRIPTOR_INIT \
    {QNN_MEM_SHAPE_INIT, QNN_DATATYPE_UNDEFINED, QNN_MEM_TYPE_UNDEFINED, {QNN_MEM_ION_INFO_INIT}}

typedef enum {
    QNN_MEM_NO_ERROR = QNN_SUCCESS,
    QNN_MEM_ERROR_NOT_SUPPORTED = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_MEM_MIN_ERROR = QNN_MIN_ERROR_MEM,
    QNN_MEM_ERROR_INVALID_ARGUMENT = 8000,
    QNN_MEM_ERROR_INVALID_HANDLE = 8001,
    QNN_MEM_ERROR_ALREADY_REGISTERED = 8002,
    QNN_MEM_ERROR_MAPPING = 8003,
    QNN_MEM_ERROR_INVALID_SHAPE = 8004,
    QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE = 8005,
    QNN_MEM_MAX_ERROR = QNN_MAX_ERROR_MEM,
    QNN_MEM_ERROR_UNDEFINED = 0x7FFFFFFF
} QnnMem_Error_t;

typedef Qnn_ErrorHandle_t (*QnnMem_RegisterFn_t)(Qnn_ContextHandle_t context,
                                                 const Qnn_MemDescriptor_t *memDescriptors,
                                                 uint32_t numDescriptors, Qnn_MemHandle_t *memHandles);
typedef Qnn_ErrorHandle_t (*QnnMem_DeRegisterFn_t)(const Qnn_MemHandle_t *memHandles, uint32_t numHandles);

#ifdef __cplusplus
}
#endif
#endif
