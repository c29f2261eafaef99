/* npurt's QnnProfile.h: profile levels (npurt hands out profile handles but records no events). */
#ifndef NPURT_QNN_PROFILE_H
#define NPURT_QNN_PROFILE_H

#include "QnnCommon.h"

typedef uint32_t QnnProfile_Level_t;
#define QNN_PROFILE_LEVEL_BASIC 1
#define QNN_PROFILE_LEVEL_DETAILED 2
#define QNN_PROFILE_LEVEL_BACKEND 1000

typedef enum {
    QNN_PROFILE_NO_ERROR = QNN_SUCCESS,
    QNN_PROFILE_ERROR_INVALID_HANDLE = QNN_MIN_ERROR_PROFILE + 1, /* npurt's values in the PROFILE range */
    QNN_PROFILE_ERROR_INVALID_ARGUMENT = QNN_MIN_ERROR_PROFILE + 2
} QnnProfile_Error_t;

#endif
