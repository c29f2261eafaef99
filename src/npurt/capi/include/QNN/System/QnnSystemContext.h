/* npurt's System/QnnSystemContext.h: what a context binary holds, before it is loaded. npurt answers binary info
 * version 3 with graph info version 3 (versions 1 and 2 are declared for programs that switch on the version); the
 * infos live until systemContextFree of their handle. Sizes on x86-64: _BinaryInfo_t 144 B, _GraphInfo_t 88 B. */
#ifndef NPURT_QNN_SYSTEM_CONTEXT_H
#define NPURT_QNN_SYSTEM_CONTEXT_H

#include "QnnDevice.h"
#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QNN_SYSTEM_CONTEXT_NO_ERROR = QNN_SUCCESS,
    QNN_SYSTEM_CONTEXT_ERROR_UNSUPPORTED_FEATURE = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_SYSTEM_CONTEXT_ERROR_INVALID_HANDLE = QNN_MIN_ERROR_SYSTEM,       /* npurt's value */
    QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT = QNN_MIN_ERROR_SYSTEM + 1, /* npurt's value */
    QNN_SYSTEM_CONTEXT_ERROR_OPERATION_FAILED = QNN_MIN_ERROR_SYSTEM + 2,
    QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY = QNN_MIN_ERROR_SYSTEM + 10
} QnnSystemContext_Error_t;

typedef enum {
    QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_1 = 1,
    QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_2 = 2,
    QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_3 = 3,
    QNN_SYSTEM_CONTEXT_GRAPH_INFO_UNDEFINED = 0x7FFFFFFF
} QnnSystemContext_GraphInfoVersion_t;

typedef enum {
    QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_1 = 1,
    QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_2 = 2,
    QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3 = 3,
    QNN_SYSTEM_CONTEXT_BINARY_INFO_UNDEFINED = 0x7FFFFFFF
} QnnSystemContext_BinaryInfoVersion_t;

/* graph info version 1: name and I/O tensors */
typedef struct {
    const char *graphName;
    uint32_t numGraphInputs;
    Qnn_Tensor_t *graphInputs;
    uint32_t numGraphOutputs;
    Qnn_Tensor_t *graphOutputs;
} QnnSystemContext_GraphInfoV1_t;

/* graph info version 2: version 1 and the updateable tensors */
typedef struct {
    const char *graphName;
    uint32_t numGraphInputs;
    Qnn_Tensor_t *graphInputs;
    uint32_t numGraphOutputs;
    Qnn_Tensor_t *graphOutputs;
    uint32_t numUpdateableTensors;
    Qnn_Tensor_t *updateableTensors;
} QnnSystemContext_GraphInfoV2_t;

/* graph info version 3 (what npurt fills): version 2, the backend's graph blob info and the op range */
typedef struct {
    const char *graphName;
    uint32_t numGraphInputs;
    Qnn_Tensor_t *graphInputs;
    uint32_t numGraphOutputs;
    Qnn_Tensor_t *graphOutputs;
    uint32_t numUpdateableTensors;
    Qnn_Tensor_t *updateableTensors;
    uint32_t graphBlobInfoSize;
    void *graphBlobInfo; /* HTP: the V1 then the V2 graph blob record (112 B) */
    uint32_t startOpIndex;
    uint32_t endOpIndex;
} QnnSystemContext_GraphInfoV3_t;

typedef struct {
    QnnSystemContext_GraphInfoVersion_t version;
    union {
        QnnSystemContext_GraphInfoV1_t graphInfoV1;
        QnnSystemContext_GraphInfoV2_t graphInfoV2;
        QnnSystemContext_GraphInfoV3_t graphInfoV3;
    };
} QnnSystemContext_GraphInfo_t;

/* binary info version 1 */
typedef struct {
    uint32_t backendId;
    const char *buildId;
    Qnn_Version_t coreApiVersion;
    Qnn_Version_t backendApiVersion;
    const char *socVersion;
    Qnn_Version_t hwInfoBlobVersion;
    Qnn_Version_t contextBlobVersion;
    uint32_t hwInfoBlobSize;
    void *hwInfoBlob;
    uint64_t contextBlobSize;
    uint32_t numContextTensors;
    Qnn_Tensor_t *contextTensors;
    uint32_t numGraphs;
    QnnSystemContext_GraphInfo_t *graphs;
} QnnSystemContext_BinaryInfoV1_t;

/* binary info version 2: version 1 and the platform info */
typedef struct {
    uint32_t backendId;
    const char *buildId;
    Qnn_Version_t coreApiVersion;
    Qnn_Version_t backendApiVersion;
    const char *socVersion;
    Qnn_Version_t hwInfoBlobVersion;
    Qnn_Version_t contextBlobVersion;
    uint32_t hwInfoBlobSize;
    void *hwInfoBlob;
    uint64_t contextBlobSize;
    uint32_t numContextTensors;
    Qnn_Tensor_t *contextTensors;
    uint32_t numGraphs;
    QnnSystemContext_GraphInfo_t *graphs;
    QnnDevice_PlatformInfo_t *platformInfo;
} QnnSystemContext_BinaryInfoV2_t;

/* binary info version 3 (what npurt fills) */
typedef struct {
    uint32_t backendId;
    const char *buildId;
    Qnn_Version_t coreApiVersion;
    Qnn_Version_t backendApiVersion;
    const char *socVersion;
    Qnn_Version_t contextBlobVersion;
    uint64_t contextBlobSize;
    uint32_t numContextTensors;
    Qnn_Tensor_t *contextTensors;
    uint32_t numGraphs;
    QnnSystemContext_GraphInfo_t *graphs;
    QnnDevice_PlatformInfo_t *platformInfo;
    uint32_t contextMetadataSize;
    void *contextMetadata;
    uint32_t socModel;
} QnnSystemContext_BinaryInfoV3_t;

typedef struct {
    QnnSystemContext_BinaryInfoVersion_t version;
    union {
        QnnSystemContext_BinaryInfoV1_t contextBinaryInfoV1;
        QnnSystemContext_BinaryInfoV2_t contextBinaryInfoV2;
        QnnSystemContext_BinaryInfoV3_t contextBinaryInfoV3;
    };
} QnnSystemContext_BinaryInfo_t;

typedef void *QnnSystemContext_Handle_t;

typedef Qnn_ErrorHandle_t (*QnnSystemContext_CreateFn_t)(QnnSystemContext_Handle_t *sysCtxHandle);
typedef Qnn_ErrorHandle_t (*QnnSystemContext_GetBinaryInfoFn_t)(QnnSystemContext_Handle_t sysCtxHandle,
                                                                void *binaryBuffer, uint64_t binaryBufferSize,
                                                                const QnnSystemContext_BinaryInfo_t **binaryInfo,
                                                                Qnn_ContextBinarySize_t *binaryInfoSize);
typedef Qnn_ErrorHandle_t (*QnnSystemContext_FreeFn_t)(QnnSystemContext_Handle_t sysCtxHandle);

#ifdef __cplusplus
}
#endif
#endif
