"""The device members: deviceCreate (its SOC / ARCH configs choose the HTP) / Free, deviceGetPlatformInfo /
FreePlatformInfo, deviceGetInfrastructure and the HTP performance infrastructure it hands out."""
from __future__ import annotations

import ctypes
import logging
from typing import Any

from npurt.memory.cargs import as_struct, as_struct_list
from npurt.memory.raw import pointer_value
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import QnnDevice, lookup
from npurt.qnn.boundary import DEVICE_INVALID_HANDLE, QnnError, qnn_call
from npurt.qnn.configs import config_entries, custom_config
from npurt.qnn.members.args import set_handle
from npurt.qnn.structs import (QnnDevice_Config_t, QnnHtpDevice_CustomConfig_t, QnnHtpPerfInfrastructure_MemoryConfig_t,
                               QnnHtpPerfInfrastructure_PowerConfig_t)
from npurt.soc.htp import HTP_PROFILES, get_htp_profile

log = logging.getLogger("npurt.qnn")


class PerfInfrastructure:
    """The HTP performance infrastructure from Python (the C face hands C programs the same four functions as a
    QnnHtpDevice_Infrastructure_t): power-config ids and the settings given to them, recorded in
    `services.POWER`."""

    infraType = C.QNN_HTP_DEVICE_INFRASTRUCTURE_TYPE_PERF

    @qnn_call("createPowerConfigId")
    def createPowerConfigId(self, deviceId: int, coreId: int, powerConfigId: Any) -> int:
        cell = as_struct(powerConfigId, ctypes.c_uint32)
        if cell is None or int(deviceId) != 0 or int(coreId) != 0:
            raise QnnError(C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT,
                           f"device {int(deviceId)} core {int(coreId)}: the HTP has device 0, core 0; "
                           f"or powerConfigId is NULL")
        cell.value = services.POWER.create(deviceId, coreId)
        return C.QNN_SUCCESS

    @qnn_call("destroyPowerConfigId")
    def destroyPowerConfigId(self, powerConfigId: int) -> int:
        if not services.POWER.destroy(int(powerConfigId)):
            raise QnnError(C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT,
                           f"power config id {int(powerConfigId)} does not exist")
        return C.QNN_SUCCESS

    @qnn_call("setPowerConfig")
    def setPowerConfig(self, powerConfigId: int, config: Any) -> int:
        """Records each QnnHtpPerfInfrastructure_PowerConfig_t of the NULL-terminated list by its option."""
        configs = [] if config is None else as_struct_list(config, None, QnnHtpPerfInfrastructure_PowerConfig_t,
                                                          "config")
        settings: dict[str, Any] = {}
        for cfg in configs:
            name = _POWER_OPTIONS.get(int(cfg.option))
            if name is None:
                raise QnnError(C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_UNSUPPORTED_CONFIG,
                               f"power config option {int(cfg.option)} is unknown")
            settings[name] = ({f: int(getattr(cfg.dcvsV3Config, f)) for f, _ in cfg.dcvsV3Config._fields_}
                              if name == "dcvs_v3" else int(cfg.rpcControlLatencyConfig))
        if not services.POWER.apply(int(powerConfigId), settings):
            raise QnnError(C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT,
                           f"power config id {int(powerConfigId)} does not exist")
        log.info("<I> setPowerConfig(%d): %s", int(powerConfigId), settings)
        return C.QNN_SUCCESS

    @qnn_call("setMemoryConfig")
    def setMemoryConfig(self, deviceId: int, coreId: int, config: Any) -> int:
        configs = [] if config is None else as_struct_list(config, None, QnnHtpPerfInfrastructure_MemoryConfig_t,
                                                          "config")
        for cfg in configs:
            if int(cfg.option) != C.QNN_HTP_PERF_INFRASTRUCTURE_MEMORY_CONFIGOPTION_GROW_SIZE:
                raise QnnError(C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_UNSUPPORTED_CONFIG,
                               f"memory config option {int(cfg.option)} is unknown")
            services.POWER.memory[(int(deviceId), int(coreId))] = {"grow_size": int(cfg.memGrowSizeConfig)}
        return C.QNN_SUCCESS


_POWER_OPTIONS = {C.QNN_HTP_PERF_INFRASTRUCTURE_POWER_CONFIGOPTION_DCVS_V3: "dcvs_v3",
                  C.QNN_HTP_PERF_INFRASTRUCTURE_POWER_CONFIGOPTION_RPC_CONTROL_LATENCY: "rpc_control_latency_us",
                  C.QNN_HTP_PERF_INFRASTRUCTURE_POWER_CONFIGOPTION_RPC_POLLING_TIME: "rpc_polling_time_us",
                  C.QNN_HTP_PERF_INFRASTRUCTURE_POWER_CONFIGOPTION_HMX_TIMEOUT_INTERVAL_US: "hmx_timeout_us"}

PERF_INFRASTRUCTURE = PerfInfrastructure()


def _device_soc(config: Any, default: str) -> str | None:
    """The HTP SoC deviceCreate's configs choose (HTP custom SOC = a socModel, ARCH = a Hexagon arch: `default` if
    it has that arch, else the first SoC of it), or None when they name none; both must agree. Other options are
    accepted (no effect on the memory model); a socModel / arch npurt has no profile of is refused."""
    soc = arch = None
    for cfg in config_entries(config, QnnDevice_Config_t, C.QNN_DEVICE_ERROR_INVALID_ARGUMENT):
        if int(cfg.option) != C.QNN_DEVICE_CONFIG_OPTION_CUSTOM:
            continue
        custom = custom_config(cfg, QnnHtpDevice_CustomConfig_t, C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
        if int(custom.option) == C.QNN_HTP_DEVICE_CONFIG_OPTION_SOC:
            soc = _soc_of(lambda p: p.soc_model == int(custom.socModel), f"socModel {int(custom.socModel)}",
                          lambda p: f"{p.soc_model} ({p.name})")
        elif int(custom.option) == C.QNN_HTP_DEVICE_CONFIG_OPTION_ARCH:
            arch = int(custom.arch.arch)
            _soc_of(lambda p: p.arch == arch, f"arch {arch}", lambda p: str(p.arch))
    if arch is not None and soc is not None and get_htp_profile(soc).arch != arch:
        raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, f"SOC config {soc} is V{get_htp_profile(soc).arch}, "
                                                            f"the ARCH config says V{arch}")
    if soc is None and arch is not None:
        soc = default if get_htp_profile(default).arch == arch else get_htp_profile(f"v{arch}").name
    return soc


def _soc_of(match: Any, what: str, show: Any) -> str:
    """The first HTP profile `match` accepts; QnnError naming `what` and the known values otherwise."""
    for p in HTP_PROFILES.values():
        if match(p):
            return p.name
    known = ", ".join(sorted({show(p) for p in HTP_PROFILES.values()}))
    raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, f"deviceCreate: no HTP of {what} (known: {known})")


class DeviceMembers:
    """The device members of `QnnInterfaceTable`."""

    @qnn_call("deviceGetInfrastructure")
    def deviceGetInfrastructure(self, deviceInfra: Any) -> int:
        """QnnDevice_getInfrastructure(&infra): the HTP performance infrastructure (`PerfInfrastructure`: power-config
        ids and settings, recorded in `services.POWER`) — appended to a list from Python; the C face writes the
        address of its QnnHtpDevice_Infrastructure_t."""
        if isinstance(deviceInfra, list):
            deviceInfra.append(PERF_INFRASTRUCTURE)
        elif as_struct(deviceInfra, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, "deviceInfra is NULL")
        return C.QNN_SUCCESS

    @qnn_call("deviceGetPlatformInfo")
    def deviceGetPlatformInfo(self, logger: Any, platformInfo: Any) -> int:
        """QnnDevice_getPlatformInfo(logger, &info): the address of a QnnDevice_PlatformInfo_t (one HTP of this
        table's SoC), written into a c_void_p cell; release it with deviceFreePlatformInfo."""
        if as_struct(platformInfo, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, "platformInfo is NULL")
        set_handle(platformInfo, services.platform_info(self.soc))
        return C.QNN_SUCCESS

    @qnn_call("deviceFreePlatformInfo")
    def deviceFreePlatformInfo(self, logger: Any, platformInfo: Any) -> int:
        if not services.free_platform_info(pointer_value(platformInfo)):
            raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, "not a platform info from deviceGetPlatformInfo")
        return C.QNN_SUCCESS

    @qnn_call("deviceCreate")
    def deviceCreate(self, logger: Any, config: Any, device: Any) -> int:
        """QnnDevice_create(logger, config, &device): the HTP device (one core) of this table's SoC."""
        if as_struct(device, ctypes.c_void_p) is None:
            raise QnnError(DEVICE_INVALID_HANDLE, "device out-parameter must be a Qnn_DeviceHandle_t")
        chosen = _device_soc(config, self.soc)
        set_handle(device, QnnDevice(chosen or self.soc, adopt=not self.configured, chosen=bool(chosen)).handle)
        return C.QNN_SUCCESS

    @qnn_call("deviceFree")
    def deviceFree(self, device: Any) -> int:
        d = lookup(device, QnnDevice)
        if d is None:
            raise QnnError(DEVICE_INVALID_HANDLE, "invalid device handle (freed, or never created)")
        d.free()
        return C.QNN_SUCCESS
