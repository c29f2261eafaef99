/* npurt's QnnGraph.h: graph errors and the retrieve / execute function types. */
#ifndef NPURT_QNN_GRAPH_H
#define NPURT_QNN_GRAPH_H

#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QNN_GRAPH_NO_ERROR = QNN_SUCCESS,
    QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_GRAPH_ERROR_MEM_ALLOC = QNN_COMMON_ERROR_MEM_ALLOC,
    QNN_GRAPH_ERROR_GENERAL = QNN_COMMON_ERROR_GENERAL,
    QNN_GRAPH_ERROR_INVALID_ARGUMENT = 6000,
    QNN_GRAPH_ERROR_INVALID_HANDLE = 6001,
    QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST = 6002,
    QNN_GRAPH_ERROR_INVALID_NAME = 6003,
    QNN_GRAPH_ERROR_INVALID_TENSOR = 6004,
    QNN_GRAPH_ERROR_INVALID_OP_CONFIG = 6005,
    QNN_GRAPH_ERROR_SET_PROFILE = 6006,
    QNN_GRAPH_ERROR_UNCONNECTED_NODE = 6007,
    QNN_GRAPH_ERROR_CREATE_FAILED = 6020,
    QNN_GRAPH_ERROR_OPTIMIZATION_FAILED = 6021,
    QNN_GRAPH_ERROR_FINALIZE_FAILED = 6022,
    QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED = 6023,
    QNN_GRAPH_ERROR_GRAPH_FINALIZED = 6024,
    QNN_GRAPH_ERROR_EXECUTION_ASYNC_FIFO_FULL = 6025,
    QNN_GRAPH_ERROR_SIGNAL_IN_USE = 6030,
    QNN_GRAPH_ERROR_ABORTED = 6031,
    QNN_GRAPH_ERROR_PROFILE_IN_USE = 6032,
    QNN_GRAPH_ERROR_TIMED_OUT = 6033,
    QNN_GRAPH_ERROR_SUBGRAPH = 6034,
    QNN_GRAPH_ERROR_DISABLED = 6035,
    QNN_GRAPH_ERROR_DYNAMIC_TENSOR_SHAPE = 6036,
    QNN_GRAPH_ERROR_TENSOR_SPARSITY = 6037,
    QNN_GRAPH_ERROR_EARLY_TERMINATION = 6038,
    QNN_GRAPH_ERROR_INVALID_CONTEXT = 6039,
    QNN_GRAPH_MAX_ERROR = QNN_MAX_ERROR_GRAPH
} QnnGraph_Error_t;

/* Graph configs are accepted and not used (they tune the HTP's own optimiser) */
typedef enum {
    QNN_GRAPH_CONFIG_OPTION_CUSTOM = 0,
    QNN_GRAPH_CONFIG_OPTION_UNDEFINED = 0x7FFFFFFF
} QnnGraph_ConfigOption_t;

typedef struct {
    QnnGraph_ConfigOption_t option;
    union {
        void *customConfig;
        Qnn_Priority_t priority;
        Qnn_ProfileHandle_t profileHandle;
        uint64_t numProfilingExecutions;
    };
} QnnGraph_Config_t;

typedef Qnn_ErrorHandle_t (*QnnGraph_CreateFn_t)(Qnn_ContextHandle_t contextHandle, const char *graphName,
                                                 const QnnGraph_Config_t **config, Qnn_GraphHandle_t *graphHandle);
typedef Qnn_ErrorHandle_t (*QnnGraph_AddNodeFn_t)(Qnn_GraphHandle_t graphHandle, Qnn_OpConfig_t opConfig);
typedef Qnn_ErrorHandle_t (*QnnGraph_FinalizeFn_t)(Qnn_GraphHandle_t graphHandle, Qnn_ProfileHandle_t profileHandle,
                                                   Qnn_SignalHandle_t signalHandle);
typedef Qnn_ErrorHandle_t (*QnnTensor_CreateGraphTensorFn_t)(Qnn_GraphHandle_t graph, Qnn_Tensor_t *tensor);
typedef Qnn_ErrorHandle_t (*QnnTensor_CreateContextTensorFn_t)(Qnn_ContextHandle_t context, Qnn_Tensor_t *tensor);
typedef Qnn_ErrorHandle_t (*QnnGraph_RetrieveFn_t)(Qnn_ContextHandle_t contextHandle, const char *graphName,
                                                   Qnn_GraphHandle_t *graphHandle);
typedef Qnn_ErrorHandle_t (*QnnGraph_ExecuteFn_t)(Qnn_GraphHandle_t graphHandle, const Qnn_Tensor_t *inputs,
                                                  uint32_t numInputs, Qnn_Tensor_t *outputs, uint32_t numOutputs,
                                                  Qnn_ProfileHandle_t profileHandle, Qnn_SignalHandle_t signalHandle);

#ifdef __cplusplus
}
#endif
#endif
