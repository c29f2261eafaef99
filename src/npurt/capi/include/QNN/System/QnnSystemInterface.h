/* npurt's System/QnnSystemInterface.h: the provider table of libQnnSystem.so. QnnSystemInterface_t: backendId @0,
 * providerName @8, systemApiVersion @16 (12 B), the table from @32. npurt implements systemContextCreate,
 * systemContextGetBinaryInfo, systemContextFree and the three profile-serialization members; the other members are
 * NULL (the header allows it). */
#ifndef NPURT_QNN_SYSTEM_INTERFACE_H
#define NPURT_QNN_SYSTEM_INTERFACE_H

#include "System/QnnSystemContext.h"
#include "System/QnnSystemProfile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QNN_SYSTEM_API_VERSION_MAJOR 1
#define QNN_SYSTEM_API_VERSION_MINOR 15
#define QNN_SYSTEM_API_VERSION_PATCH 0
#define QNN_SYSTEM_INTERFACE_VER_NAME v1_15
#define QNN_SYSTEM_INTERFACE_VER_TYPE QnnSystemInterface_ImplementationV1_15_t

typedef struct {
    QnnSystemContext_CreateFn_t systemContextCreate;
    QnnSystemContext_GetBinaryInfoFn_t systemContextGetBinaryInfo;
    void *systemContextGetMetaData;
    QnnSystemContext_FreeFn_t systemContextFree;
    void *systemTensorGetMemoryFootprint;
    void *systemLogCreate;
    void *systemLogSetLogLevel;
    void *systemLogFree;
    void *systemDlcCreateFromFile;
    void *systemDlcCreateFromBinary;
    void *systemDlcComposeGraphs;
    void *systemDlcGetOpMappings;
    void *systemDlcFree;
    QnnSystemProfile_CreateSerializationTargetFn_t systemProfileCreateSerializationTarget;
    QnnSystemProfile_SerializeEventDataFn_t systemProfileSerializeEventData;
    QnnSystemProfile_FreeSerializationTargetFn_t systemProfileFreeSerializationTarget;
} QnnSystemInterface_ImplementationV1_15_t;

typedef struct {
    uint32_t backendId;
    const char *providerName;
    Qnn_Version_t systemApiVersion;
    union {
        QnnSystemInterface_ImplementationV1_15_t QNN_SYSTEM_INTERFACE_VER_NAME;
    };
} QnnSystemInterface_t;

typedef Qnn_ErrorHandle_t (*QnnSystemInterfaceGetProvidersFn_t)(const QnnSystemInterface_t ***providerList,
                                                                uint32_t *numProviders);

QNN_API Qnn_ErrorHandle_t QnnSystemInterface_getProviders(const QnnSystemInterface_t ***providerList,
                                                          uint32_t *numProviders);

#ifdef __cplusplus
}
#endif
#endif
