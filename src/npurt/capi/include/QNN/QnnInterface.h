/* npurt's QnnInterface.h: the provider table of libQnnHtp.so (core API 2.40). QnnInterface_t is 648 B on x86-64:
 * backendId @0, providerName @8, apiVersion @16 (24 B), then the 76 slots of the 2.40 table from @40 in the QNN
 * order (the table only grows by appending). Members npurt implements have their QNN signature; every other named
 * member is present (so the layout is QNN's) and returns QNN_COMMON_ERROR_NOT_SUPPORTED; slots 71-75 (members no
 * public header names) are NULL — see docs/qnn-c-api.md for the list. The struct below is generated from npurt's
 * member list (`npurt.capi.qnnhtp.interface_struct`). */
#ifndef NPURT_QNN_INTERFACE_H
#define NPURT_QNN_INTERFACE_H

#include "QnnBackend.h"
#include "QnnCommon.h"
#include "QnnContext.h"
#include "QnnDevice.h"
#include "QnnGraph.h"
#include "QnnLog.h"
#include "QnnMem.h"
#include "QnnProfile.h"
#include "QnnProperty.h"
#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QNN_INTERFACE_VER_NAME v2_40
#define QNN_INTERFACE_VER_TYPE QnnInterface_ImplementationV2_40_t

typedef Qnn_ErrorHandle_t (*QnnProperty_HasCapabilityFn_t)(QnnProperty_Key_t key);
typedef Qnn_ErrorHandle_t (*QnnLog_CreateFn_t)(QnnLog_Callback_t callback, QnnLog_Level_t maxLogLevel,
                                               Qnn_LogHandle_t *logger);
typedef Qnn_ErrorHandle_t (*QnnLog_SetLogLevelFn_t)(Qnn_LogHandle_t logger, QnnLog_Level_t maxLogLevel);
typedef Qnn_ErrorHandle_t (*QnnLog_FreeFn_t)(Qnn_LogHandle_t logger);
typedef Qnn_ErrorHandle_t (*QnnError_GetMessageFn_t)(Qnn_ErrorHandle_t errorHandle, const char **errorMessage);
/* a message naming the code and the last failure's log line; freed with errorFreeVerboseMessage */
typedef Qnn_ErrorHandle_t (*QnnError_GetVerboseMessageFn_t)(Qnn_ErrorHandle_t errorHandle, const char **errorMessage);
typedef Qnn_ErrorHandle_t (*QnnError_FreeVerboseMessageFn_t)(const char *errorMessage);
/* a member npurt does not implement: returns QNN_COMMON_ERROR_NOT_SUPPORTED whatever it is given */
typedef Qnn_ErrorHandle_t (*QnnInterface_NotSupportedFn_t)();

typedef struct {
    QnnProperty_HasCapabilityFn_t propertyHasCapability;          /*  0 */
    QnnBackend_CreateFn_t backendCreate;                          /*  1 */
    QnnInterface_NotSupportedFn_t backendSetConfig;               /*  2 */
    QnnBackend_GetApiVersionFn_t backendGetApiVersion;            /*  3 */
    QnnBackend_GetBuildIdFn_t backendGetBuildId;                  /*  4 */
    QnnInterface_NotSupportedFn_t backendRegisterOpPackage;       /*  5 */
    QnnInterface_NotSupportedFn_t backendGetSupportedOperations;  /*  6 */
    QnnBackend_ValidateOpConfigFn_t backendValidateOpConfig;      /*  7 */
    QnnBackend_FreeFn_t backendFree;                              /*  8 */
    QnnContext_CreateFn_t contextCreate;                          /*  9 */
    QnnInterface_NotSupportedFn_t contextSetConfig;               /* 10 */
    QnnContext_GetBinarySizeFn_t contextGetBinarySize;            /* 11 */
    QnnContext_GetBinaryFn_t contextGetBinary;                    /* 12 */
    QnnContext_CreateFromBinaryFn_t contextCreateFromBinary;      /* 13 */
    QnnContext_FreeFn_t contextFree;                              /* 14 */
    QnnGraph_CreateFn_t graphCreate;                              /* 15 */
    QnnInterface_NotSupportedFn_t graphCreateSubgraph;            /* 16 */
    QnnInterface_NotSupportedFn_t graphSetConfig;                 /* 17 */
    QnnGraph_AddNodeFn_t graphAddNode;                            /* 18 */
    QnnGraph_FinalizeFn_t graphFinalize;                          /* 19 */
    QnnGraph_RetrieveFn_t graphRetrieve;                          /* 20 */
    QnnGraph_ExecuteFn_t graphExecute;                            /* 21 */
    QnnInterface_NotSupportedFn_t graphExecuteAsync;              /* 22 */
    QnnTensor_CreateContextTensorFn_t tensorCreateContextTensor;  /* 23 */
    QnnTensor_CreateGraphTensorFn_t tensorCreateGraphTensor;      /* 24 */
    QnnLog_CreateFn_t logCreate;                                  /* 25 */
    QnnLog_SetLogLevelFn_t logSetLogLevel;                        /* 26 */
    QnnLog_FreeFn_t logFree;                                      /* 27 */
    QnnProfile_CreateFn_t profileCreate;                          /* 28 */
    QnnProfile_SetConfigFn_t profileSetConfig;                    /* 29 */
    QnnProfile_GetEventsFn_t profileGetEvents;                    /* 30 */
    QnnProfile_GetSubEventsFn_t profileGetSubEvents;              /* 31 */
    QnnProfile_GetEventDataFn_t profileGetEventData;              /* 32 */
    QnnProfile_GetExtendedEventDataFn_t profileGetExtendedEventData; /* 33 */
    QnnProfile_FreeFn_t profileFree;                              /* 34 */
    QnnMem_RegisterFn_t memRegister;                              /* 35 */
    QnnMem_DeRegisterFn_t memDeRegister;                          /* 36 */
    QnnDevice_GetPlatformInfoFn_t deviceGetPlatformInfo;          /* 37 */
    QnnDevice_FreePlatformInfoFn_t deviceFreePlatformInfo;        /* 38 */
    QnnDevice_GetInfrastructureFn_t deviceGetInfrastructure;      /* 39 */
    QnnDevice_CreateFn_t deviceCreate;                            /* 40 */
    QnnInterface_NotSupportedFn_t deviceSetConfig;                /* 41 */
    QnnInterface_NotSupportedFn_t deviceGetInfo;                  /* 42 */
    QnnDevice_FreeFn_t deviceFree;                                /* 43 */
    QnnInterface_NotSupportedFn_t signalCreate;                   /* 44 */
    QnnInterface_NotSupportedFn_t signalSetConfig;                /* 45 */
    QnnInterface_NotSupportedFn_t signalTrigger;                  /* 46 */
    QnnInterface_NotSupportedFn_t signalFree;                     /* 47 */
    QnnError_GetMessageFn_t errorGetMessage;                      /* 48 */
    QnnError_GetVerboseMessageFn_t errorGetVerboseMessage;        /* 49 */
    QnnError_FreeVerboseMessageFn_t errorFreeVerboseMessage;      /* 50 */
    QnnInterface_NotSupportedFn_t graphPrepareExecutionEnvironment; /* 51 */
    QnnInterface_NotSupportedFn_t graphReleaseExecutionEnvironment; /* 52 */
    QnnInterface_NotSupportedFn_t graphGetProperty;               /* 53 */
    QnnInterface_NotSupportedFn_t contextValidateBinary;          /* 54 */
    QnnInterface_NotSupportedFn_t contextCreateFromBinaryWithSignal; /* 55 */
    QnnContext_CreateFromBinaryListAsyncFn_t contextCreateFromBinaryListAsync; /* 56 */
    QnnInterface_NotSupportedFn_t tensorUpdateGraphTensors;       /* 57 */
    QnnInterface_NotSupportedFn_t tensorUpdateContextTensors;     /* 58 */
    QnnInterface_NotSupportedFn_t contextGetBinarySectionSize;    /* 59 */
    QnnInterface_NotSupportedFn_t contextGetBinarySection;        /* 60 */
    QnnInterface_NotSupportedFn_t contextApplyBinarySection;      /* 61 */
    QnnInterface_NotSupportedFn_t backendGetProperty;             /* 62 */
    QnnContext_GetPropertyFn_t contextGetProperty;                /* 63 */
    QnnInterface_NotSupportedFn_t contextGetIncrementalBinary;    /* 64 */
    QnnInterface_NotSupportedFn_t contextReleaseIncrementalBinary; /* 65 */
    QnnContext_FinalizeFn_t contextFinalize;                      /* 66 */
    QnnInterface_NotSupportedFn_t globalConfigSet;                /* 67 */
    QnnInterface_NotSupportedFn_t contextCreateFromBinaryWithCallback; /* 68 */
    QnnInterface_NotSupportedFn_t contextGetBinarySectionUpdate;  /* 69 */
    QnnInterface_NotSupportedFn_t contextFreeBinarySectionUpdate; /* 70 */
    void *reserved71;                                             /* 71 */
    void *reserved72;                                             /* 72 */
    void *reserved73;                                             /* 73 */
    void *reserved74;                                             /* 74 */
    void *reserved75;                                             /* 75 */
} QnnInterface_ImplementationV2_40_t;

typedef struct {
    uint32_t backendId;
    const char *providerName;
    Qnn_ApiVersion_t apiVersion;
    union {
        QnnInterface_ImplementationV2_40_t QNN_INTERFACE_VER_NAME;
    };
} QnnInterface_t;

typedef Qnn_ErrorHandle_t (*QnnInterfaceGetProvidersFn_t)(const QnnInterface_t ***providerList,
                                                          uint32_t *numProviders);

QNN_API Qnn_ErrorHandle_t QnnInterface_getProviders(const QnnInterface_t ***providerList, uint32_t *numProviders);

#ifdef __cplusplus
}
#endif
#endif
