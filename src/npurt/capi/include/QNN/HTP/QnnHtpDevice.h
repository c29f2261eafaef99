/* npurt's HTP/QnnHtpDevice.h: the HTP extension of a hardware device (devType @0, vtcmSize @8 in MB,
 * socModel @16, signedPdSupport @20, dlbcSupport @21, arch @24). */
#ifndef NPURT_QNN_HTP_DEVICE_H
#define NPURT_QNN_HTP_DEVICE_H

#include <stdbool.h>
#include "QnnDevice.h"

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

#ifdef __cplusplus
}
#endif
#endif
