/* npurt's QnnProperty.h: capability keys and answers of propertyHasCapability. */
#ifndef NPURT_QNN_PROPERTY_H
#define NPURT_QNN_PROPERTY_H

#include "QnnCommon.h"

typedef uint32_t QnnProperty_Key_t;

#define QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE 502
#define QNN_PROPERTY_TENSOR_SUPPORT_CONTEXT_TENSORS 503

typedef enum {
    QNN_PROPERTY_SUPPORTED = QNN_SUCCESS,
    QNN_PROPERTY_NOT_SUPPORTED = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_PROPERTY_ERROR_UNKNOWN_KEY = QNN_MIN_ERROR_PROPERTY
} QnnProperty_Error_t;

#endif
