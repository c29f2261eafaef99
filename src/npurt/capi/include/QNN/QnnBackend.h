/* npurt's QnnBackend.h: backend configs (opaque to npurt) and function types. */
#ifndef NPURT_QNN_BACKEND_H
#define NPURT_QNN_BACKEND_H

#include "QnnLog.h"
#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct QnnBackend_Config QnnBackend_Config_t; /* npurt accepts and ignores backend configs */

typedef enum {
    QNN_BACKEND_NO_ERROR = QNN_SUCCESS,
    QNN_BACKEND_ERROR_UNSUPPORTED_FEATURE = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_BACKEND_ERROR_NOT_SUPPORTED = QNN_MIN_ERROR_BACKEND + 3, /* "this backend does not validate op configs" */
    QNN_BACKEND_ERROR_INVALID_ARGUMENT = QNN_MIN_ERROR_BACKEND + 4, /* an op config npurt cannot build */
    QNN_BACKEND_ERROR_OP_PACKAGE_NOT_FOUND = QNN_MIN_ERROR_BACKEND + 5,
    QNN_BACKEND_ERROR_INVALID_HANDLE = QNN_MIN_ERROR_BACKEND + 11
} QnnBackend_Error_t;

typedef Qnn_ErrorHandle_t (*QnnBackend_CreateFn_t)(Qnn_LogHandle_t logger, const QnnBackend_Config_t **config,
                                                   Qnn_BackendHandle_t *backend);
typedef Qnn_ErrorHandle_t (*QnnBackend_FreeFn_t)(Qnn_BackendHandle_t backend);
typedef Qnn_ErrorHandle_t (*QnnBackend_GetApiVersionFn_t)(Qnn_ApiVersion_t *pVersion);
typedef Qnn_ErrorHandle_t (*QnnBackend_GetBuildIdFn_t)(const char **id);
typedef Qnn_ErrorHandle_t (*QnnBackend_ValidateOpConfigFn_t)(Qnn_BackendHandle_t backend, Qnn_OpConfig_t opConfig);

#ifdef __cplusplus
}
#endif
#endif
