/* npurt's HTP/QnnHtpDevice.h: the HTP extension of a hardware device (devType @0, vtcmSize @8 in MB,
 * socModel @16, signedPdSupport @20, dlbcSupport @21, arch @24) and the HTP device infrastructure (infraType @0,
 * perfInfra's four function pointers from @8: 40 B). */
#ifndef NPURT_QNN_HTP_DEVICE_H
#define NPURT_QNN_HTP_DEVICE_H

#include <stdbool.h>
#include "QnnDevice.h"
#include "QnnHtpPerfInfrastructure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QNN_HTP_DEVICE_TYPE_ON_CHIP = 0, QNN_HTP_DEVICE_TYPE_UNKNOWN = 0x7FFFFFFF } QnnHtpDevice_DeviceType_t;

typedef struct {
    size_t vtcmSize;
    uint32_t socModel;
    bool signedPdSupport;
    bool dlbcSupport;
    uint32_t arch;
} QnnHtpDevice_OnChipDeviceInfoExtension_t;

typedef struct {
    QnnHtpDevice_DeviceType_t devType;
    union {
        QnnHtpDevice_OnChipDeviceInfoExtension_t onChipDevice;
    };
} QnnHtpDevice_DeviceInfoExtension_t;

/* The HTP performance infrastructure deviceGetInfrastructure returns: power-config ids and their settings. npurt
 * accepts and records them (`npurt.qnn.perf`); the emulated HTP's speed does not depend on them. */
typedef struct {
    QnnHtpPerfInfrastructure_CreatePowerConfigIdFn_t createPowerConfigId;
    QnnHtpPerfInfrastructure_DestroyPowerConfigIdFn_t destroyPowerConfigId;
    QnnHtpPerfInfrastructure_SetPowerConfigFn_t setPowerConfig;
    QnnHtpPerfInfrastructure_SetMemoryConfigFn_t setMemoryConfig;
} QnnHtpDevice_PerfInfrastructure_t;

typedef enum {
    QNN_HTP_DEVICE_INFRASTRUCTURE_TYPE_PERF = 0,
    QNN_HTP_DEVICE_INFRASTRUCTURE_TYPE_UNKNOWN = 0x7FFFFFFF
} QnnHtpDevice_InfrastructureType_t;

typedef struct _QnnDevice_Infrastructure_t {
    QnnHtpDevice_InfrastructureType_t infraType;
    union {
        QnnHtpDevice_PerfInfrastructure_t perfInfra;
    };
} QnnHtpDevice_Infrastructure_t;

#ifdef __cplusplus
}
#endif
#endif
