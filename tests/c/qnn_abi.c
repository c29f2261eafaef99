/* sizeof / offsetof of npurt's QNN headers, one "name value" line each; tests/test_qnn_capi.py compares them with
 * the mirror's ctypes structs, the facts and QnnInterface_t's member order. */
#include <stddef.h>
#include <stdio.h>
#include "QnnInterface.h"
#include "HTP/QnnHtpContext.h"
#include "HTP/QnnHtpDevice.h"
#include "HTP/QnnHtpMem.h"
#include "System/QnnSystemInterface.h"
#include "rpcmem.h"
#include "qurt_alloc.h"

#define SIZE(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define MEMBER(f) printf("member %s %zu\n", #f, offsetof(QnnInterface_t, QNN_INTERFACE_VER_NAME.f))

int main(void)
{
    SIZE(QnnInterface_t);
    OFF(QnnInterface_t, backendId);
    OFF(QnnInterface_t, providerName);
    OFF(QnnInterface_t, apiVersion);
    SIZE(Qnn_ApiVersion_t);
    SIZE(Qnn_MemDescriptor_t);
    OFF(Qnn_MemDescriptor_t, memShape);
    OFF(Qnn_MemDescriptor_t, dataType);
    OFF(Qnn_MemDescriptor_t, memType);
    OFF(Qnn_MemDescriptor_t, ionInfo);
    OFF(Qnn_MemDescriptor_t, customInfo);
    OFF(Qnn_MemDescriptor_t, dmaBufInfo);
    SIZE(Qnn_MemShape_t);
    SIZE(QnnMemHtp_Descriptor_t);
    OFF(QnnMemHtp_Descriptor_t, type);
    OFF(QnnMemHtp_Descriptor_t, size);
    OFF(QnnMemHtp_Descriptor_t, sharedBufferConfig);
    OFF(QnnMemHtp_Descriptor_t, sharedSpillfillBufferQurtAddress);
    SIZE(QnnHtpMem_SharedBufferConfig_t);
    OFF(QnnHtpMem_SharedBufferConfig_t, fd);
    OFF(QnnHtpMem_SharedBufferConfig_t, offset);
    SIZE(Qnn_QuantizeParams_t);
    OFF(Qnn_QuantizeParams_t, scaleOffsetEncoding);
    SIZE(Qnn_ClientBuffer_t);
    SIZE(Qnn_TensorV1_t);
    OFF(Qnn_TensorV1_t, id);
    OFF(Qnn_TensorV1_t, name);
    OFF(Qnn_TensorV1_t, type);
    OFF(Qnn_TensorV1_t, dataFormat);
    OFF(Qnn_TensorV1_t, dataType);
    OFF(Qnn_TensorV1_t, quantizeParams);
    OFF(Qnn_TensorV1_t, rank);
    OFF(Qnn_TensorV1_t, dimensions);
    OFF(Qnn_TensorV1_t, memType);
    OFF(Qnn_TensorV1_t, clientBuf);
    OFF(Qnn_TensorV1_t, memHandle);
    SIZE(Qnn_TensorV2_t);
    OFF(Qnn_TensorV2_t, isDynamicDimensions);
    OFF(Qnn_TensorV2_t, sparseParams);
    OFF(Qnn_TensorV2_t, isProduced);
    SIZE(Qnn_Tensor_t);
    OFF(Qnn_Tensor_t, v1);
    OFF(Qnn_Tensor_t, v2);
    SIZE(QnnContext_Config_t);
    OFF(QnnContext_Config_t, isGraphInitDeferred);
    SIZE(QnnContext_Property_t);
    SIZE(QnnHtpContext_CustomConfig_t);
    OFF(QnnHtpContext_CustomConfig_t, concurrentGroupRegistration);
    SIZE(QnnHtpContext_GroupRegistration_t);
    SIZE(QnnHtpContext_CustomProperty_t);
    OFF(QnnHtpContext_CustomProperty_t, spillfillBufferSize);
    SIZE(QnnDevice_PlatformInfo_t);
    OFF(QnnDevice_PlatformInfo_t, v1.hwDevices);
    OFF(QnnDevice_HardwareDeviceInfo_t, v1.deviceId);
    OFF(QnnDevice_HardwareDeviceInfo_t, v1.cores);
    OFF(QnnDevice_HardwareDeviceInfo_t, v1.deviceInfoExtension);
    OFF(QnnHtpDevice_DeviceInfoExtension_t, onChipDevice.vtcmSize);
    OFF(QnnHtpDevice_DeviceInfoExtension_t, onChipDevice.socModel);
    OFF(QnnHtpDevice_DeviceInfoExtension_t, onChipDevice.arch);
    SIZE(QnnSystemInterface_t);
    OFF(QnnSystemInterface_t, QNN_SYSTEM_INTERFACE_VER_NAME);
    SIZE(QnnSystemContext_BinaryInfo_t);
    OFF(QnnSystemContext_BinaryInfo_t, contextBinaryInfoV3.graphs);
    OFF(QnnSystemContext_BinaryInfo_t, contextBinaryInfoV3.socModel);
    SIZE(QnnSystemContext_GraphInfo_t);
    OFF(QnnSystemContext_GraphInfo_t, graphInfoV3.graphBlobInfo);
    OFF(QnnSystemContext_GraphInfo_t, graphInfoV3.endOpIndex);
    MEMBER(propertyHasCapability); MEMBER(backendCreate); MEMBER(backendSetConfig);
    MEMBER(backendGetApiVersion); MEMBER(backendGetBuildId); MEMBER(backendRegisterOpPackage);
    MEMBER(backendGetSupportedOperations); MEMBER(backendValidateOpConfig); MEMBER(backendFree);
    MEMBER(contextCreate); MEMBER(contextSetConfig); MEMBER(contextGetBinarySize);
    MEMBER(contextGetBinary); MEMBER(contextCreateFromBinary); MEMBER(contextFree);
    MEMBER(graphCreate); MEMBER(graphCreateSubgraph); MEMBER(graphSetConfig); MEMBER(graphAddNode);
    MEMBER(graphFinalize); MEMBER(graphRetrieve); MEMBER(graphExecute); MEMBER(graphExecuteAsync);
    MEMBER(tensorCreateContextTensor); MEMBER(tensorCreateGraphTensor); MEMBER(logCreate);
    MEMBER(logSetLogLevel); MEMBER(logFree); MEMBER(profileCreate); MEMBER(profileSetConfig);
    MEMBER(profileGetEvents); MEMBER(profileGetSubEvents); MEMBER(profileGetEventData);
    MEMBER(profileGetExtendedEventData); MEMBER(profileFree); MEMBER(memRegister);
    MEMBER(memDeRegister); MEMBER(deviceGetPlatformInfo); MEMBER(deviceFreePlatformInfo);
    MEMBER(deviceGetInfrastructure); MEMBER(deviceCreate); MEMBER(deviceSetConfig);
    MEMBER(deviceGetInfo); MEMBER(deviceFree); MEMBER(signalCreate); MEMBER(signalSetConfig);
    MEMBER(signalTrigger); MEMBER(signalFree); MEMBER(errorGetMessage); MEMBER(errorGetVerboseMessage);
    MEMBER(errorFreeVerboseMessage); MEMBER(graphPrepareExecutionEnvironment);
    MEMBER(graphReleaseExecutionEnvironment); MEMBER(graphGetProperty); MEMBER(contextValidateBinary);
    MEMBER(contextCreateFromBinaryWithSignal); MEMBER(contextCreateFromBinaryListAsync);
    MEMBER(tensorUpdateGraphTensors); MEMBER(tensorUpdateContextTensors);
    MEMBER(contextGetBinarySectionSize); MEMBER(contextGetBinarySection);
    MEMBER(contextApplyBinarySection); MEMBER(backendGetProperty); MEMBER(contextGetProperty);
    MEMBER(contextGetIncrementalBinary); MEMBER(contextReleaseIncrementalBinary);
    MEMBER(contextFinalize); MEMBER(globalConfigSet); MEMBER(contextCreateFromBinaryWithCallback);
    MEMBER(contextGetBinarySectionUpdate); MEMBER(contextFreeBinarySectionUpdate);
    MEMBER(reserved71); MEMBER(reserved72); MEMBER(reserved73); MEMBER(reserved74); MEMBER(reserved75);
    SIZE(Qnn_Scalar_t);
    SIZE(QnnProfile_EventData_t);
    OFF(QnnProfile_EventData_t, identifier);
    SIZE(QnnProfile_ExtendedEventData_t);
    OFF(QnnProfile_ExtendedEventData_t, v1.value);
    OFF(QnnProfile_ExtendedEventData_t, v1.timestamp);
    OFF(QnnProfile_ExtendedEventData_t, v1.identifier);
    SIZE(QnnProfile_Config_t);
    OFF(QnnProfile_Config_t, numMaxEvents);
    SIZE(QnnHtpPerfInfrastructure_PowerConfig_t);
    OFF(QnnHtpPerfInfrastructure_PowerConfig_t, dcvsV3Config.powerMode);
    OFF(QnnHtpPerfInfrastructure_PowerConfig_t, rpcPollingTimeConfig);
    SIZE(QnnHtpPerfInfrastructure_MemoryConfig_t);
    SIZE(QnnHtpDevice_Infrastructure_t);
    OFF(QnnHtpDevice_Infrastructure_t, perfInfra.setPowerConfig);
    SIZE(QnnSystemProfile_SerializationTarget_t);
    SIZE(QnnSystemProfile_SerializationTargetConfig_t);
    SIZE(QnnSystemProfile_ProfileEventV1_t);
    OFF(QnnSystemProfile_ProfileEventV1_t, profileSubEventData);
    OFF(QnnSystemProfile_ProfileEventV1_t, numSubEvents);
    SIZE(QnnSystemContext_BinaryInfoV1_t);
    SIZE(QnnSystemContext_BinaryInfoV2_t);
    SIZE(QnnSystemContext_BinaryInfoV3_t);
    OFF(QnnSystemContext_BinaryInfo_t, contextBinaryInfoV1.graphs);
    OFF(QnnSystemContext_BinaryInfo_t, contextBinaryInfoV2.platformInfo);
    OFF(QnnSystemContext_BinaryInfo_t, contextBinaryInfoV2.hwInfoBlob);
    SIZE(QnnSystemContext_GraphInfoV1_t);
    SIZE(QnnSystemContext_GraphInfoV2_t);
    OFF(QnnSystemContext_GraphInfo_t, graphInfoV2.updateableTensors);
    SIZE(QnnSystemProfile_ProfileData_t);
    OFF(QnnSystemProfile_ProfileData_t, v1.profilingEvents);
    OFF(QnnSystemProfile_ProfileData_t, v1.numProfilingEvents);
    return 0;
}
