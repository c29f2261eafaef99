/* npurt's QnnLog.h: log levels and the client callback. */
#ifndef NPURT_QNN_LOG_H
#define NPURT_QNN_LOG_H

#include <stdarg.h>
#include "QnnCommon.h"

typedef enum {
    QNN_LOG_LEVEL_ERROR = 1,
    QNN_LOG_LEVEL_WARN = 2,
    QNN_LOG_LEVEL_INFO = 3,
    QNN_LOG_LEVEL_VERBOSE = 4,
    QNN_LOG_LEVEL_DEBUG = 5,
    QNN_LOG_LEVEL_MAX = 0x7FFFFFFF
} QnnLog_Level_t;

/* npurt calls it with fmt "%s" and the whole line as the one argument; timestamp in microseconds */
typedef void (*QnnLog_Callback_t)(const char *fmt, QnnLog_Level_t level, uint64_t timestamp, va_list args);

typedef enum {
    QNN_LOG_NO_ERROR = QNN_SUCCESS,
    QNN_LOG_ERROR_INVALID_ARGUMENT = QNN_MIN_ERROR_LOG + 1, /* npurt's values in the LOG range */
    QNN_LOG_ERROR_INVALID_HANDLE = QNN_MIN_ERROR_LOG + 2
} QnnLog_Error_t;

#endif
