/* npurt's QnnContext.h: context configs and properties (QnnContext_Config_t and QnnContext_Property_t are 16 B,
 * union @8; lists are NULL-terminated arrays of pointers), context errors and function types. */
#ifndef NPURT_QNN_CONTEXT_H
#define NPURT_QNN_CONTEXT_H

#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QNN_CONTEXT_CONFIG_OPTION_CUSTOM = 0,
    QNN_CONTEXT_CONFIG_OPTION_PRIORITY = 1,
    QNN_CONTEXT_CONFIG_OPTION_ERROR_REPORTING = 2,
    QNN_CONTEXT_CONFIG_OPTION_OEM_STRING = 3,
    QNN_CONTEXT_CONFIG_ASYNC_EXECUTION_QUEUE_DEPTH = 4,
    QNN_CONTEXT_CONFIG_ENABLE_GRAPHS = 5,
    QNN_CONTEXT_CONFIG_MEMORY_LIMIT_HINT = 6,
    QNN_CONTEXT_CONFIG_PERSISTENT_BINARY = 7,
    QNN_CONTEXT_CONFIG_BINARY_COMPATIBILITY = 8,
    QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT = 9,
    QNN_CONTEXT_CONFIG_GRAPH_RETENTION_ORDER = 10,
    QNN_CONTEXT_CONFIG_UNDEFINED = 0x7FFFFFFF
} QnnContext_ConfigOption_t;

typedef enum {
    QNN_ERROR_REPORTING_LEVEL_BRIEF = 0,
    QNN_ERROR_REPORTING_LEVEL_DETAILED = 1,
    QNN_ERROR_REPORTING_LEVEL_UNDEFINED = 0x7FFFFFFF
} Qnn_ErrorReportingLevel_t;

typedef struct {
    Qnn_ErrorReportingLevel_t reportingLevel;
    uint32_t storageLimit;
} Qnn_ErrorReportingConfig_t;

typedef enum {
    QNN_CONTEXT_ASYNC_EXECUTION_QUEUE_DEPTH_TYPE_NUMERIC = 0,
    QNN_CONTEXT_ASYNC_EXECUTION_QUEUE_DEPTH_TYPE_UNDEFINED = 0x7FFFFFFF
} QnnContext_AsyncExecutionQueueDepthType_t;

typedef struct {
    QnnContext_AsyncExecutionQueueDepthType_t type;
    union {
        uint32_t depth;
    };
} QnnContext_AsyncExecutionQueueDepth_t;

typedef enum {
    QNN_CONTEXT_BINARY_COMPATIBILITY_PERMISSIVE = 0,
    QNN_CONTEXT_BINARY_COMPATIBILITY_STRICT = 1,
    QNN_CONTEXT_BINARY_COMPATIBILITY_TYPE_UNDEFINED = 0x7FFFFFFF
} QnnContext_BinaryCompatibilityType_t;

typedef void *QnnContext_CustomConfig_t; /* for HTP: a QnnHtpContext_CustomConfig_t* */

typedef struct {
    QnnContext_ConfigOption_t option;
    union {
        QnnContext_CustomConfig_t customConfig;
        Qnn_Priority_t priority;
        Qnn_ErrorReportingConfig_t errorConfig;
        const char *oemString;
        QnnContext_AsyncExecutionQueueDepth_t asyncExeQueueDepth;
        const char *const *enableGraphs;
        uint64_t memoryLimitHint;
        uint8_t isPersistentBinary;
        QnnContext_BinaryCompatibilityType_t binaryCompatibilityType;
        uint8_t isGraphInitDeferred;
        const char *const *graphRetentionOrder;
    };
} QnnContext_Config_t;
#define QNN_CONTEXT_CONFIG_INIT {QNN_CONTEXT_CONFIG_UNDEFINED, {NULL}}

typedef enum {
    QNN_CONTEXT_PROPERTY_OPTION_CUSTOM = 0,
    QNN_CONTEXT_PROPERTY_OPTION_UNDEFINED = 0x7FFFFFFF
} QnnContext_PropertyOption_t;

typedef void *QnnContext_CustomProperty_t; /* for HTP: a QnnHtpContext_CustomProperty_t* */

typedef struct {
    QnnContext_PropertyOption_t option;
    union {
        QnnContext_CustomProperty_t customProperty;
    };
} QnnContext_Property_t;
#define QNN_CONTEXT_PROPERTY_INIT {QNN_CONTEXT_PROPERTY_OPTION_UNDEFINED, {NULL}}

typedef enum {
    QNN_CONTEXT_NO_ERROR = QNN_SUCCESS,
    QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_CONTEXT_ERROR_MEM_ALLOC = QNN_COMMON_ERROR_MEM_ALLOC,
    QNN_CONTEXT_ERROR_INVALID_ARGUMENT = 5000,
    QNN_CONTEXT_ERROR_CTX_DOES_NOT_EXIST = 5001,
    QNN_CONTEXT_ERROR_INVALID_HANDLE = 5002,
    QNN_CONTEXT_ERROR_NOT_FINALIZED = 5003,
    QNN_CONTEXT_ERROR_BINARY_VERSION = 5004,
    QNN_CONTEXT_ERROR_CREATE_FROM_BINARY = 5005,
    QNN_CONTEXT_ERROR_GET_BINARY_SIZE_FAILED = 5006,
    QNN_CONTEXT_ERROR_GET_BINARY_FAILED = 5007,
    QNN_CONTEXT_ERROR_BINARY_CONFIGURATION = 5008,
    QNN_CONTEXT_ERROR_SET_PROFILE = 5009,
    QNN_CONTEXT_ERROR_INVALID_CONFIG = 5010,
    QNN_CONTEXT_ERROR_BINARY_SUBOPTIMAL = 5011,
    QNN_CONTEXT_ERROR_ABORTED = 5012,
    QNN_CONTEXT_ERROR_TIMED_OUT = 5013,
    QNN_CONTEXT_ERROR_INCREMENT_INVALID_BUFFER = 5014,
    QNN_CONTEXT_MAX_ERROR = QNN_MAX_ERROR_CONTEXT
} QnnContext_Error_t;

typedef Qnn_ErrorHandle_t (*QnnContext_CreateFromBinaryFn_t)(Qnn_BackendHandle_t backend, Qnn_DeviceHandle_t device,
                                                             const QnnContext_Config_t **config,
                                                             const void *binaryBuffer,
                                                             Qnn_ContextBinarySize_t binaryBufferSize,
                                                             Qnn_ContextHandle_t *context,
                                                             Qnn_ProfileHandle_t profile);
typedef Qnn_ErrorHandle_t (*QnnContext_CreateFn_t)(Qnn_BackendHandle_t backend, Qnn_DeviceHandle_t device,
                                                   const QnnContext_Config_t **config, Qnn_ContextHandle_t *context);
typedef Qnn_ErrorHandle_t (*QnnContext_GetBinarySizeFn_t)(Qnn_ContextHandle_t context,
                                                          Qnn_ContextBinarySize_t *binaryBufferSize);
typedef Qnn_ErrorHandle_t (*QnnContext_GetBinaryFn_t)(Qnn_ContextHandle_t context, void *binaryBuffer,
                                                      Qnn_ContextBinarySize_t binaryBufferSize,
                                                      Qnn_ContextBinarySize_t *writtenBufferSize);
typedef Qnn_ErrorHandle_t (*QnnContext_GetPropertyFn_t)(Qnn_ContextHandle_t contextHandle,
                                                        QnnContext_Property_t **properties);
/* contextCreateFromBinaryListAsync: one QnnContext_Params_t per binary; the notify callback reports each context */
typedef enum {
    QNN_CONTEXT_NOTIFY_TYPE_GRAPH_INIT = 0,
    QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT = 1,
    QNN_CONTEXT_NOTIFY_TYPE_UNDEFINED = 0x7FFFFFF
} QnnContext_createFromBinaryAsyncNotifyType_t;

typedef void (*QnnContext_createFromBinaryNotifyFn_t)(Qnn_ContextHandle_t context, Qnn_GraphHandle_t graph,
                                                      const char *graphName,
                                                      QnnContext_createFromBinaryAsyncNotifyType_t notifyType,
                                                      void *notifyParam, Qnn_ErrorHandle_t status);

typedef struct {
    const QnnContext_Config_t **config;
    const void *binaryBuffer;
    Qnn_ContextBinarySize_t binaryBufferSize;
    Qnn_ProfileHandle_t profile;
    QnnContext_createFromBinaryNotifyFn_t notifyFunc;
    void *notifyParam;
} QnnContext_ParamsV1_t;

typedef enum {
    QNN_CONTEXT_PARAMS_VERSION_1 = 1,
    QNN_CONTEXT_PARAMS_VERSION_UNDEFINED = 0x7FFFFFFF
} QnnContext_ParamsVersion_t;

typedef struct {
    QnnContext_ParamsVersion_t version;
    union {
        QnnContext_ParamsV1_t v1;
    };
} QnnContext_Params_t;

typedef Qnn_ErrorHandle_t (*QnnContext_CreateFromBinaryListAsyncFn_t)(Qnn_BackendHandle_t backend,
                                                                      Qnn_DeviceHandle_t device,
                                                                      const QnnContext_Params_t **contextParams,
                                                                      const QnnContext_Config_t **listConfig,
                                                                      Qnn_SignalHandle_t signal);
typedef Qnn_ErrorHandle_t (*QnnContext_FinalizeFn_t)(Qnn_ContextHandle_t context, Qnn_ProfileHandle_t profile);
typedef Qnn_ErrorHandle_t (*QnnContext_FreeFn_t)(Qnn_ContextHandle_t context, Qnn_ProfileHandle_t profile);

#ifdef __cplusplus
}
#endif
#endif
