/* npurt's HTP/QnnHtpContext.h: HTP custom context configs (through QNN_CONTEXT_CONFIG_OPTION_CUSTOM) and custom
 * properties (through QNN_CONTEXT_PROPERTY_OPTION_CUSTOM: answered for DEFER_GRAPH_INIT contexts). */
#ifndef NPURT_QNN_HTP_CONTEXT_H
#define NPURT_QNN_HTP_CONTEXT_H

#include <stdbool.h>
#include "QnnContext.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED = 1,
    QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS = 2,
    QNN_HTP_CONTEXT_CONFIG_OPTION_FILE_READ_MEMORY_BUDGET = 3,
    QNN_HTP_CONTEXT_CONFIG_OPTION_DSP_MEMORY_PROFILING_ENABLED = 4,
    QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES = 5,
    QNN_HTP_CONTEXT_CONFIG_OPTION_IO_MEM_ESTIMATION = 6,
    QNN_HTP_CONTEXT_CONFIG_OPTION_PREPARE_ONLY = 7,
    QNN_HTP_CONTEXT_CONFIG_OPTION_INIT_ACCELERATION = 8,
    QNN_HTP_CONTEXT_CONFIG_OPTION_SKIP_VALIDATION_ON_BINARY_SECTION = 9,
    QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE = 10,
    QNN_HTP_CONTEXT_CONFIG_OPTION_USE_EXTENDED_UDMA = 11,
    QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING = 12,
    QNN_HTP_CONTEXT_CONFIG_OPTION_LORA_WEIGHT_SHARING_ENABLED = 13,
    QNN_HTP_CONTEXT_CONFIG_OPTION_RESERVED_14 = 14,
    QNN_HTP_CONTEXT_CONFIG_OPTION_RESERVED_15 = 15,
    QNN_HTP_CONTEXT_CONFIG_OPTION_UNKNOWN = 0x7FFFFFFF
} QnnHtpContext_ConfigOption_t;

typedef enum {
    SEQUENTIAL_WITH_VA_OPTIMIZATION = 0,
    SEQUENTIAL_WITHOUT_VA_OPTIMIZATION = 1,
    CONCURRENT_OPTIMIZATION = 2
} QnnHtpContext_ShareResourcesOptimizationType_t;

typedef struct {
    Qnn_ContextHandle_t firstGroupHandle; /* NULL: a new group */
    uint64_t maxSpillFillBuffer;           /* only the first context's value counts */
} QnnHtpContext_GroupRegistration_t;

typedef struct {
    QnnHtpContext_ConfigOption_t option;
    union {
        bool weightSharingEnabled;
        QnnHtpContext_GroupRegistration_t groupRegistration;
        uint64_t fileReadMemoryBudgetInMb;
        bool dspMemoryProfilingEnabled;
        bool shareResources;
        bool ioMemEstimation;
        bool isPrepareOnly;
        bool initAcceleration;
        bool skipValidationOnBinarySection;
        QnnHtpContext_ShareResourcesOptimizationType_t shareResOptType;
        bool useExtendedUdma;
        QnnHtpContext_GroupRegistration_t concurrentGroupRegistration;
        bool loraWeightSharingEnabled;
    };
} QnnHtpContext_CustomConfig_t;
#define QNN_HTP_CONTEXT_CUSTOM_CONFIG_INIT {QNN_HTP_CONTEXT_CONFIG_OPTION_UNKNOWN, {false}}

typedef enum {
    QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT = 1,
    QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE = 2,
    QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE = 3,
    QNN_HTP_CONTEXT_GET_PROP_RESERVED_4 = 4,
    QNN_HTP_CONTEXT_GET_PROP_RESERVED_5 = 5,
    /* named by the newest tutorial, in no public header: npurt's value (answered in the Non-RPC use case) */
    QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE = 0x4E500006,
    QNN_HTP_CONTEXT_GET_PROP_UNDEFINED = 0x7FFFFFFF
} QnnHtpContext_GetPropertyOption_t;

typedef struct {
    QnnHtpContext_GetPropertyOption_t option;
    union {
        uint64_t bufferStartAlignment;
        uint64_t spillfillBufferSize;
        uint64_t weightsBufferSize;
        uint64_t vtcmBackupBufferSize; /* the newest tutorial's member */
    };
} QnnHtpContext_CustomProperty_t;
#define QNN_HTP_CONTEXT_CUSTOM_PROPERTY_INIT {QNN_HTP_CONTEXT_GET_PROP_UNDEFINED, {0}}

#ifdef __cplusplus
}
#endif
#endif
