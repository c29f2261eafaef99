/* npurt's QnnDevice.h: platform info (QnnDevice_PlatformInfo_t: numHwDevices @8, hwDevices @16; hardware device
 * v1: deviceId @8, deviceType @12, numCores @16, cores @24, deviceInfoExtension @32) and function types. */
#ifndef NPURT_QNN_DEVICE_H
#define NPURT_QNN_DEVICE_H

#include "QnnLog.h"
#include "QnnTypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct QnnDevice_Config QnnDevice_Config_t; /* npurt accepts and ignores device configs */
typedef void *QnnDevice_CoreInfoExtension_t;
typedef void *QnnDevice_DeviceInfoExtension_t;    /* for HTP: a QnnHtpDevice_DeviceInfoExtension_t* */

typedef struct {
    uint32_t coreId;
    uint32_t coreType;
    QnnDevice_CoreInfoExtension_t coreInfoExtension;
} QnnDevice_CoreInfoV1_t;

typedef enum { QNN_DEVICE_CORE_INFO_VERSION_1 = 1, QNN_DEVICE_CORE_INFO_VERSION_UNDEFINED = 0x7FFFFFFF }
    QnnDevice_CoreInfoVersion_t;

typedef struct {
    QnnDevice_CoreInfoVersion_t version;
    union {
        QnnDevice_CoreInfoV1_t v1;
    };
} QnnDevice_CoreInfo_t;

typedef struct {
    uint32_t deviceId;
    uint32_t deviceType;
    uint32_t numCores;
    QnnDevice_CoreInfo_t *cores;
    QnnDevice_DeviceInfoExtension_t deviceInfoExtension;
} QnnDevice_HardwareDeviceInfoV1_t;

typedef enum {
    QNN_DEVICE_HARDWARE_DEVICE_INFO_VERSION_1 = 1,
    QNN_DEVICE_HARDWARE_DEVICE_INFO_VERSION_UNDEFINED = 0x7FFFFFFF
} QnnDevice_HardwareDeviceInfoVersion_t;

typedef struct {
    QnnDevice_HardwareDeviceInfoVersion_t version;
    union {
        QnnDevice_HardwareDeviceInfoV1_t v1;
    };
} QnnDevice_HardwareDeviceInfo_t;

typedef struct {
    uint32_t numHwDevices;
    QnnDevice_HardwareDeviceInfo_t *hwDevices;
} QnnDevice_PlatformInfoV1_t;

typedef enum { QNN_DEVICE_PLATFORM_INFO_VERSION_1 = 1, QNN_DEVICE_PLATFORM_INFO_VERSION_UNDEFINED = 0x7FFFFFFF }
    QnnDevice_PlatformInfoVersion_t;

typedef struct {
    QnnDevice_PlatformInfoVersion_t version;
    union {
        QnnDevice_PlatformInfoV1_t v1;
    };
} QnnDevice_PlatformInfo_t;

typedef enum {
    QNN_DEVICE_NO_ERROR = QNN_SUCCESS,
    QNN_DEVICE_ERROR_UNSUPPORTED_FEATURE = QNN_COMMON_ERROR_NOT_SUPPORTED,
    QNN_DEVICE_ERROR_INVALID_HANDLE = QNN_MIN_ERROR_DEVICE + 1,  /* npurt's values in the DEVICE range */
    QNN_DEVICE_ERROR_INVALID_ARGUMENT = QNN_MIN_ERROR_DEVICE + 2
} QnnDevice_Error_t;

typedef Qnn_ErrorHandle_t (*QnnDevice_CreateFn_t)(Qnn_LogHandle_t logger, const QnnDevice_Config_t **config,
                                                  Qnn_DeviceHandle_t *device);
typedef Qnn_ErrorHandle_t (*QnnDevice_FreeFn_t)(Qnn_DeviceHandle_t device);
typedef Qnn_ErrorHandle_t (*QnnDevice_GetPlatformInfoFn_t)(Qnn_LogHandle_t logger,
                                                           const QnnDevice_PlatformInfo_t **platformInfo);
typedef Qnn_ErrorHandle_t (*QnnDevice_FreePlatformInfoFn_t)(Qnn_LogHandle_t logger,
                                                            const QnnDevice_PlatformInfo_t *platformInfo);

/* a backend's device infrastructure (for HTP: a QnnHtpDevice_Infrastructure_t*, see HTP/QnnHtpDevice.h) */
typedef struct _QnnDevice_Infrastructure_t *QnnDevice_Infrastructure_t;
typedef Qnn_ErrorHandle_t (*QnnDevice_GetInfrastructureFn_t)(const QnnDevice_Infrastructure_t *deviceInfra);

#ifdef __cplusplus
}
#endif
#endif
