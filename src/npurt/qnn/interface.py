"""The QnnInterface function table of the HTP mirror and `QnnInterface_getProviders`.

C code reaches every QNN function through a provider's table: `providers[i]->QNN_INTERFACE_VER_NAME.memRegister`.
Here `QnnInterface_getProviders(providerList, numProviders)` fills a Python list with one `QnnInterface_t` whose
attribute named `QNN_INTERFACE_VER_NAME` ("v2_40") is a `QnnInterfaceTable`; `interface(use_case, soc)` returns that
table directly. A table is bound to one use case — "fastrpc" (QNN called on the host CPU, executed on the DSP) or
"native" (Non-RPC: QNN called on the DSP) — and one HTP SoC; every backend it creates has that use case.
`QnnInterface_getProviders` reads them from `$NPURT_QNN_USE_CASE` (default fastrpc) and `$NPURT_SOC`.

Every function has the C name (the interface field name) and argument order and returns a `Qnn_ErrorHandle_t`
int. Out-parameters are ctypes objects filled in place: a `Qnn_*Handle_t()` (c_void_p), `ctypes.byref` /
`ctypes.pointer` of one, a ctypes array, or a Python list. Failures log an `<E>` line on the `npurt.qnn` logger and
change nothing else.
"""
from __future__ import annotations

import ctypes
import logging
import os
import time
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.model.compiled import CompiledModel
from npurt.memory.cargs import as_struct, as_struct_list
from npurt.memory.raw import pointer_value, safe_read, safe_write
from npurt.model import context_binary
from npurt.model.context_binary import ContextBinary
from npurt.model.file_format import HEADER_SIZE, is_npurt
from npurt.qnn import constants as C
from npurt.qnn import pd, services
from npurt.qnn.backend import Backend, QnnDevice, lookup
from npurt.qnn.context import GraphsContext, QnnContext, SpillGroup, join_group
from npurt.qnn.memory_report import memory_report
from npurt.qnn.graph import QnnGraph
from npurt.qnn.graph_build import BuildGraph, GraphBuilding
from npurt.qnn.configs import config_entries, custom_config
from npurt.qnn.boundary import BACKEND_INVALID_HANDLE, DEVICE_INVALID_HANDLE, QnnError, from_npu, qnn_call
from npurt.qnn.mem_registry import FASTRPC, NATIVE, REGISTRY, SPILLFILL, VTCMBACKUP, WEIGHTS
from npurt.runtime.loader import MAX_ONNX, load_family
from npurt.qnn.htp_plan import plan_graph
from npurt.qnn.structs import (Qnn_ApiVersion_t, Qnn_MemDescriptor_t, Qnn_Version_t, QnnContext_Config_t,
                               QnnContext_createFromBinaryNotifyFn_t, QnnContext_Params_t,
                               QnnContext_Property_t, QnnDevice_Config_t, QnnHtpContext_CustomConfig_t,
                               QnnHtpContext_CustomProperty_t, QnnHtpDevice_CustomConfig_t,
                               QnnHtpPerfInfrastructure_MemoryConfig_t, QnnHtpPerfInfrastructure_PowerConfig_t,
                               QnnProfile_Config_t, QnnProfile_EventData_t, QnnProfile_ExtendedEventData_t)
from npurt.soc.htp import HTP_PROFILES, get_htp_profile, is_htp_soc

log = logging.getLogger("npurt.qnn")

USE_CASES = (FASTRPC, NATIVE)
_USE_CASE_ALIASES = {"fastrpc": FASTRPC, "rpc": FASTRPC, "native": NATIVE, "non-rpc": NATIVE, "nonrpc": NATIVE}
BUILD_ID = (f"npurt-qnn-htp-mirror v{C.QNN_API_VERSION_MAJOR}.{C.QNN_API_VERSION_MINOR} "
            f"(HTP API {C.QNN_HTP_API_VERSION_MAJOR}.{C.QNN_HTP_API_VERSION_MINOR})")


# ---------------------------------------------------------------------------------------------------------
# out-parameter helpers
# ---------------------------------------------------------------------------------------------------------
def _set_handle(out: Any, value: int | None) -> bool:
    cell = as_struct(out, ctypes.c_void_p)
    if cell is None:
        return False
    cell.value = value or None
    return True


def _set_handles(out: Any, values: list[int | None], count: int) -> bool:
    """Write `count` handles into an out array (ctypes array, list, or a single cell when count is 1)."""
    if isinstance(out, list):
        while len(out) < count:
            out.append(None)
        for k in range(count):
            out[k] = values[k] if k < len(values) else None
        return True
    if isinstance(out, ctypes.Array):
        if len(out) < count:
            return False
        for k in range(count):
            out[k] = values[k] if k < len(values) else None
        return True
    if count == 1:
        return _set_handle(out, values[0] if values else None)
    return False


def _handles_in(arr: Any, count: int) -> list[int] | None:
    """`count` handle values from an array / list / single cell; None if the argument is unusable."""
    if arr is None or count < 0:
        return None
    if isinstance(arr, (list, tuple, ctypes.Array)):
        if len(arr) < count:
            return None
        return [pointer_value(h) for h in list(arr)[:count]]
    if count <= 1:
        cell = as_struct(arr, ctypes.c_void_p)
        if cell is not None:
            return [pointer_value(cell.value)][:count]
        if isinstance(arr, int):
            return [arr][:count]
    return None


def _context(handle: Any, code: int = C.QNN_CONTEXT_ERROR_INVALID_HANDLE) -> QnnContext:
    ctx = lookup(handle, QnnContext)
    if ctx is None or ctx.freed:
        raise QnnError(code, f"context handle {pointer_value(handle):#x} is not a live context")
    return ctx


# ---------------------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------------------
class QnnInterfaceTable(GraphBuilding):
    """`QnnInterface_ImplementationV2_40_t`: the functions of the HTP mirror for one use case and SoC (the
    graph-building members come from `graph_build.GraphBuilding`)."""

    def __init__(self, use_case: str, soc: str, configured: bool = True) -> None:
        self.use_case = use_case
        self.soc = soc
        self.configured = configured    # False: backends take the SoC of their first context binary

    def __repr__(self) -> str:
        return f"<QnnInterface {C.QNN_INTERFACE_VER_NAME} HTP {self.use_case} {self.soc}>"

    # -- backend / device ----------------------------------------------------------------------------------
    @qnn_call("backendCreate")
    def backendCreate(self, logger: Any, config: Any, backend: Any) -> int:
        """QnnBackend_create(logger, config, &backend): a backend of this table's use case and SoC."""
        if as_struct(backend, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "backend out-parameter must be a Qnn_BackendHandle_t")
        b = Backend(self.use_case, self.soc, adopt=not self.configured)
        _set_handle(backend, b.handle)
        return C.QNN_SUCCESS

    @qnn_call("backendFree")
    def backendFree(self, backend: Any) -> int:
        """QnnBackend_free(backend): frees its contexts too."""
        b = lookup(backend, Backend)
        if b is None or b.freed:
            raise QnnError(BACKEND_INVALID_HANDLE, "invalid backend handle (freed, or never created)")
        b.free()
        return C.QNN_SUCCESS

    @qnn_call("backendGetBuildId")
    def backendGetBuildId(self, id_out: Any) -> int:
        """QnnBackend_getBuildId(&id): the build id string (appended to a list, or its C string's address written
        into a c_void_p cell)."""
        if isinstance(id_out, list):
            id_out.append(BUILD_ID)
        elif not _set_handle(id_out, services.c_text(BUILD_ID)):
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "id is NULL")
        return C.QNN_SUCCESS

    @qnn_call("backendGetApiVersion")
    def backendGetApiVersion(self, version: Any) -> int:
        """QnnBackend_getApiVersion(&version): core and HTP API versions into a Qnn_ApiVersion_t."""
        version = getattr(version, "_obj", version)
        if not isinstance(version, Qnn_ApiVersion_t):
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "pApiVersion is NULL")
        api = _api_version()
        version.coreApiVersion, version.backendApiVersion = api.coreApiVersion, api.backendApiVersion
        return C.QNN_SUCCESS

    @qnn_call("propertyHasCapability")
    def propertyHasCapability(self, key: int) -> int:
        """QnnProperty_hasCapability(key): SUPPORTED / NOT_SUPPORTED for every key of `CAPABILITIES` (what the
        mirror does), UNKNOWN_KEY for any other."""
        supported = capability(int(key))
        if supported is None:
            return C.QNN_PROPERTY_ERROR_UNKNOWN_KEY
        return C.QNN_PROPERTY_SUPPORTED if supported else C.QNN_PROPERTY_NOT_SUPPORTED

    @qnn_call("errorGetVerboseMessage")
    def errorGetVerboseMessage(self, errorHandle: int, errorMessage: Any) -> int:
        """QnnError_getVerboseMessage(error, &message): the code's name and the last failure logged with that code
        (a list gets the text; a c_void_p cell the address of a C string to release with errorFreeVerboseMessage)."""
        if isinstance(errorMessage, list):
            addr = services.verbose_message(int(errorHandle))
            errorMessage.append(ctypes.string_at(addr).decode())
            services.free_verbose_message(addr)
        elif as_struct(errorMessage, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, "errorMessage is NULL")
        else:
            _set_handle(errorMessage, services.verbose_message(int(errorHandle)))
        return C.QNN_SUCCESS

    @qnn_call("errorFreeVerboseMessage")
    def errorFreeVerboseMessage(self, errorMessage: Any) -> int:
        """QnnError_freeVerboseMessage(message): releases a message of errorGetVerboseMessage (a Python text needs
        no release)."""
        if isinstance(errorMessage, str):
            return C.QNN_SUCCESS
        if not services.free_verbose_message(pointer_value(errorMessage)):
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, f"{pointer_value(errorMessage):#x} is not a message of "
                                                      f"errorGetVerboseMessage (or was freed)")
        return C.QNN_SUCCESS

    @qnn_call("errorGetMessage")
    def errorGetMessage(self, errorHandle: int, errorMessage: Any) -> int:
        """QnnError_getMessage(error, &message): the vendor name of the code (a list gets the text, a c_void_p
        cell the address of a C string)."""
        text = services.error_message(int(errorHandle))
        if isinstance(errorMessage, list):
            errorMessage.append(text)
        elif not _set_handle(errorMessage, services.c_text(text)):
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, "errorMessage is NULL")   # npurt's value (ERROR range)
        return C.QNN_SUCCESS

    # -- log / profile -------------------------------------------------------------------------------------
    @qnn_call("logCreate")
    def logCreate(self, callback: Any, maxLogLevel: int, logger: Any) -> int:
        """QnnLog_create(callback, maxLevel, &logger): `callback(message, level, timestamp_us)` gets the mirror's
        log lines at or below `maxLogLevel` (None: no callback)."""
        if as_struct(logger, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, "logger out-parameter must be a Qnn_LogHandle_t")
        if not 1 <= int(maxLogLevel) <= C.QNN_LOG_LEVEL_MAX:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, f"invalid log level {int(maxLogLevel)}")
        _set_handle(logger, services.Log(callback if callable(callback) else None, int(maxLogLevel)).handle)
        return C.QNN_SUCCESS

    @qnn_call("logSetLogLevel")
    def logSetLogLevel(self, logger: Any, maxLogLevel: int) -> int:
        log_obj = services.lookup_log(logger)
        if log_obj is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_HANDLE, "invalid log handle")
        if not 1 <= int(maxLogLevel) <= C.QNN_LOG_LEVEL_MAX:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, f"invalid log level {int(maxLogLevel)}")
        log_obj.set_level(int(maxLogLevel))
        return C.QNN_SUCCESS

    @qnn_call("logFree")
    def logFree(self, logger: Any) -> int:
        log_obj = services.lookup_log(logger)
        if log_obj is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_HANDLE, "invalid log handle")
        log_obj.free()
        return C.QNN_SUCCESS

    @qnn_call("profileCreate")
    def profileCreate(self, backend: Any, level: int, profile: Any) -> int:
        """QnnProfile_create(backend, level, &profile): a handle the profiled calls accept (no events)."""
        b = lookup(backend, Backend)
        if b is None or b.freed:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, "invalid backend handle")
        if as_struct(profile, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "profile out-parameter must be a "
                                                                 "Qnn_ProfileHandle_t")
        _set_handle(profile, services.Profile(int(level)).handle)
        return C.QNN_SUCCESS

    @qnn_call("profileSetConfig")
    def profileSetConfig(self, profileHandle: Any, config: Any) -> int:
        """QnnProfile_setConfig(profile, configs): MAX_EVENTS caps the events held; ENABLE_OPTRACE is accepted
        (npurt has no op trace: DETAILED NODE events are what it records); CUSTOM is refused (no custom configs)."""
        p = _profile(profileHandle)
        configs = [] if config is None else as_struct_list(config, None, QnnProfile_Config_t, "config")
        for cfg in configs:
            option = int(cfg.option)
            if option == C.QNN_PROFILE_CONFIG_OPTION_MAX_EVENTS:
                p.max_events = int(cfg.numMaxEvents)
            elif option != C.QNN_PROFILE_CONFIG_OPTION_ENABLE_OPTRACE:
                raise QnnError(C.QNN_PROFILE_ERROR_UNSUPPORTED, f"profile config option {option} is not supported")
        return C.QNN_SUCCESS

    @qnn_call("profileGetEvents")
    def profileGetEvents(self, profileHandle: Any, profileEventIds: Any, numEvents: Any) -> int:
        """QnnProfile_getEvents(profile, &ids, &n): the events of the last profiled call (a list gets the ids; a
        c_void_p cell the address of a uint64 array alive until the profile records again or is freed)."""
        p = _profile(profileHandle)
        count = as_struct(numEvents, ctypes.c_uint32)
        if count is None or (not isinstance(profileEventIds, list) and as_struct(profileEventIds, ctypes.c_void_p)
                             is None):
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "profileEventIds or numEvents is NULL")
        _ids_out(profileEventIds, p.ids)
        count.value = len(p.ids)
        return C.QNN_SUCCESS

    @qnn_call("profileGetSubEvents")
    def profileGetSubEvents(self, eventId: int, subEventIds: Any, numSubEvents: Any) -> int:
        """QnnProfile_getSubEvents(event, &ids, &n): an EXECUTE event's EXECUTE_DEVICE and NODE sub-events."""
        ev = _event(eventId)
        count = as_struct(numSubEvents, ctypes.c_uint32)
        if count is None or (not isinstance(subEventIds, list) and as_struct(subEventIds, ctypes.c_void_p) is None):
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "subEventIds or numSubEvents is NULL")
        ids = services.sub_event_ids(ev)
        _ids_out(subEventIds, ids)
        count.value = len(ids)
        return C.QNN_SUCCESS

    @qnn_call("profileGetEventData")
    def profileGetEventData(self, eventId: int, eventData: Any) -> int:
        """QnnProfile_getEventData(event, &data): type, unit, value and identifier into a QnnProfile_EventData_t."""
        ev = _event(eventId)
        data = as_struct(eventData, QnnProfile_EventData_t)
        if data is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "eventData is NULL")
        data.type, data.unit, data.value = ev.type, ev.unit, ev.value
        data.identifier = services.c_text(ev.identifier)
        return C.QNN_SUCCESS

    @qnn_call("profileGetExtendedEventData")
    def profileGetExtendedEventData(self, eventId: int, eventData: Any) -> int:
        """QnnProfile_getExtendedEventData(event, &data): version 1 with the value as a UINT_64 scalar and the
        event's timestamp (µs)."""
        ev = _event(eventId)
        data = as_struct(eventData, QnnProfile_ExtendedEventData_t)
        if data is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "eventData is NULL")
        data.version = C.QNN_PROFILE_DATA_VERSION_1
        v1 = data.v1
        v1.type, v1.unit, v1.timestamp = ev.type, ev.unit, ev.timestamp
        v1.value.dataType = C.QNN_DATATYPE_UINT_64
        v1.value.uint64Value = ev.value
        v1.identifier = services.c_text(ev.identifier)
        return C.QNN_SUCCESS

    @qnn_call("profileFree")
    def profileFree(self, profile: Any) -> int:
        p = lookup(profile, services.Profile)
        if p is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, "invalid profile handle")
        p.free()
        return C.QNN_SUCCESS

    # -- device infrastructure ---------------------------------------------------------------------------------
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

    # -- platform info ---------------------------------------------------------------------------------
    @qnn_call("deviceGetPlatformInfo")
    def deviceGetPlatformInfo(self, logger: Any, platformInfo: Any) -> int:
        """QnnDevice_getPlatformInfo(logger, &info): the address of a QnnDevice_PlatformInfo_t (one HTP of this
        table's SoC), written into a c_void_p cell; release it with deviceFreePlatformInfo."""
        if as_struct(platformInfo, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_DEVICE_ERROR_INVALID_ARGUMENT, "platformInfo is NULL")
        _set_handle(platformInfo, services.platform_info(self.soc))
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
        _set_handle(device, QnnDevice(chosen or self.soc, adopt=not self.configured, chosen=bool(chosen)).handle)
        return C.QNN_SUCCESS

    @qnn_call("deviceFree")
    def deviceFree(self, device: Any) -> int:
        d = lookup(device, QnnDevice)
        if d is None:
            raise QnnError(DEVICE_INVALID_HANDLE, "invalid device handle (freed, or never created)")
        d.free()
        return C.QNN_SUCCESS

    # -- context ---------------------------------------------------------------------------------------
    @qnn_call("contextCreateFromBinary")
    def contextCreateFromBinary(self, backend: Any, device: Any, config: Any, binaryBuffer: Any,
                                binaryBufferSize: int, context: Any, profile: Any = None) -> int:
        """QnnContext_createFromBinary: load a context binary (a `CompiledModel`, `.npurt` bytes, a binary of several
        graphs, or a pointer to them) with all its graphs; with DEFER_GRAPH_INIT only a handle is created and
        `contextFinalize` completes it."""
        b, d = _backend_device(backend, device)
        if as_struct(context, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "context out-parameter must be a "
                                                                 "Qnn_ContextHandle_t")
        if d is not None and d.chosen and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend "
                                                               f"{b.profile.name} (it has contexts)")
        loaded = _load_binary(binaryBuffer, binaryBufferSize, b)
        if d is not None and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend "
                                                               f"{b.profile.name}")
        opts = _context_options(config, b)
        prof = _profile_arg(profile, C.QNN_CONTEXT_ERROR_SET_PROFILE)
        t0 = time.perf_counter_ns()
        ctx = _create_context(b, loaded, opts)
        if prof is not None:
            prof.record([services.Event(C.QNN_PROFILE_EVENTTYPE_INIT, (time.perf_counter_ns() - t0) // 1000,
                                        f"contextCreateFromBinary {sorted(ctx.graphs)}")])
        _set_handle(context, ctx.handle)
        if log.isEnabledFor(services.VERBOSE):              # QNN_LOG_LEVEL_VERBOSE: the backend's memory report
            for line in memory_report(b).lines():
                log.log(services.VERBOSE, "<V> contextCreateFromBinary %#x: %s", ctx.handle, line)
        return C.QNN_SUCCESS

    @qnn_call("contextCreateFromBinaryListAsync")
    def contextCreateFromBinaryListAsync(self, backend: Any, device: Any, contextParams: Any, listConfig: Any,
                                         signal: Any = None) -> int:
        """QnnContext_createFromBinaryListAsync(backend, device, params, listConfig, signal): load every binary of
        the NULL-terminated `QnnContext_Params_t` list. Synchronous (signal must be NULL: signals are not
        emulated); all or nothing: on success each params' notifyFunc was called once, with
        QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT, its new context handle and its notifyParam, before the call returns.
        listConfig applies to every binary and a binary's own configs override it; SHARE_RESOURCES=1 loads the list
        as one group sharing one spill-fill buffer and one VTCM backup buffer (their contexts run one at a time),
        mapped once in the PD (SEQUENTIAL_WITH_VA_OPTIMIZATION) or once per context (SEQUENTIAL_WITHOUT_VA_...)."""
        b, d = _backend_device(backend, device)
        if signal is not None and pointer_value(signal):
            raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE, "signals are not emulated: pass a NULL signal "
                                                                    "(the list is then loaded synchronously)")
        try:
            params = as_struct_list(contextParams, None, QnnContext_Params_t, "contextParams")
        except NpuError as exc:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, exc.message) from None
        if not params:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "contextParams holds no binary")
        base = _context_options(listConfig, b)
        entries = []
        for k, p in enumerate(params):
            if int(p.version) != C.QNN_CONTEXT_PARAMS_VERSION_1:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"contextParams[{k}]: version {int(p.version)}"
                                                                     f" (only QNN_CONTEXT_PARAMS_VERSION_1)")
            if not pointer_value(p.v1.notifyFunc):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"contextParams[{k}]: notifyFunc is NULL")
            configs = _config_list(p.v1.config, f"contextParams[{k}].config")
            opts = _context_options(configs, b, base) if configs is not None else dict(base)
            entries.append((p, _load_binary(p.v1.binaryBuffer, int(p.v1.binaryBufferSize), b), opts))
            _profile_arg(p.v1.profile, C.QNN_CONTEXT_ERROR_SET_PROFILE)
        if d is not None and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend {b.profile.name}")
        group = None
        if base.get("share"):
            if base.get("share_opt") == C.CONCURRENT_OPTIMIZATION:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, "SHARE_RESOURCES with CONCURRENT_OPTIMIZATION "
                                                                   "is not emulated: the list's contexts run one at "
                                                                   "a time (SEQUENTIAL_*)")
            group = _list_group(b, entries)
        created: list[QnnContext] = []
        try:
            for _, loaded, opts in entries:
                created.append(_create_context(b, loaded, opts, group))
        except BaseException:
            for ctx in reversed(created):
                ctx.free()
            if group is not None and not group.members:
                group.free_buffers()
            raise
        for (p, _, _), ctx in zip(entries, created):
            notify = QnnContext_createFromBinaryNotifyFn_t(pointer_value(p.v1.notifyFunc))
            notify(ctx.handle, None, None, C.QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT, p.v1.notifyParam, C.QNN_SUCCESS)
        return C.QNN_SUCCESS

    @qnn_call("contextGetProperty")
    def contextGetProperty(self, contextHandle: Any, properties: Any) -> int:
        """QnnContext_getProperty(ctx, properties): HTP custom properties (alignment, spill-fill, weights and —
        Non-RPC only — VTCM backup sizes), written into each QnnHtpContext_CustomProperty_t. Only contexts
        created with DEFER_GRAPH_INIT answer (as the HTP library does)."""
        ctx = _context(contextHandle)
        if properties is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "properties is NULL")
        answers = []
        for prop in as_struct_list(properties, None, QnnContext_Property_t, "properties"):
            if int(prop.option) != C.QNN_CONTEXT_PROPERTY_OPTION_CUSTOM:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "only QNN_CONTEXT_PROPERTY_OPTION_CUSTOM is "
                                                                     "supported")
            addr = pointer_value(prop.customProperty)
            custom = as_struct(addr, QnnHtpContext_CustomProperty_t, address=True)
            if custom is None:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "customProperty is NULL or unreadable")
            answers.append((addr, _property_value(ctx, int(custom.option))))
        for addr, value in answers:
            cell = ctypes.c_uint64(value)
            off = QnnHtpContext_CustomProperty_t.bufferStartAlignment.offset
            if not safe_write(addr + off, ctypes.addressof(cell), 8):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "customProperty is not writable")
        return C.QNN_SUCCESS

    @qnn_call("contextFinalize")
    def contextFinalize(self, context: Any, profile: Any = None) -> int:
        """QnnContext_finalize(ctx, profile): deserialise a DEFER_GRAPH_INIT context (weights copied into the
        registered weights buffer, graphs bound to the registered spill-fill buffer)."""
        ctx = _context(context)
        with ctx.lock:
            if not ctx.deferred or ctx.finalized:
                raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE,
                               "No features indicate a need for context finalization (not deferred, or finalized)")
            ctx.finalize()
            try:
                pd.check_fits(ctx)
            except QnnError:
                ctx.unload()
                raise
        return C.QNN_SUCCESS

    @qnn_call("contextFree")
    def contextFree(self, context: Any, profile: Any = None) -> int:
        """QnnContext_free(ctx, profile): frees graphs, deregisters every handle of the context, frees memory."""
        ctx = _context(context)
        prof = _profile_arg(profile, C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
        t0 = time.perf_counter_ns()
        ctx.free()
        if prof is not None:
            prof.record([services.Event(C.QNN_PROFILE_EVENTTYPE_DEINIT, (time.perf_counter_ns() - t0) // 1000,
                                        "contextFree")])
        return C.QNN_CONTEXT_NO_ERROR

    # -- graph -----------------------------------------------------------------------------------------
    @qnn_call("graphRetrieve")
    def graphRetrieve(self, contextHandle: Any, graphName: Any, graphHandle: Any) -> int:
        """QnnGraph_retrieve(ctx, name, &graph)."""
        ctx = _context(contextHandle, C.QNN_GRAPH_ERROR_INVALID_CONTEXT)
        if as_struct(graphHandle, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_ARGUMENT, "graph out-parameter must be a Qnn_GraphHandle_t")
        if not ctx.finalized:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED, f"Context {ctx.handle:#x} needs finalization.")
        name = graphName.decode() if isinstance(graphName, (bytes, bytearray)) else str(graphName)
        graph = ctx.graphs.get(name)
        if graph is None:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST, f"no graph {name!r} in the context "
                                                                   f"(have {sorted(ctx.graphs)})")
        _set_handle(graphHandle, graph.handle)
        return C.QNN_SUCCESS

    @qnn_call("graphExecute")
    def graphExecute(self, graphHandle: Any, inputs: Any, numInputs: int, outputs: Any, numOutputs: int,
                     profileHandle: Any = None, signalHandle: Any = None) -> int:
        """QnnGraph_execute(graph, inputs, n, outputs, n, profile, signal): run with RAW or MEMHANDLE tensors."""
        graph = lookup(graphHandle, QnnGraph)
        if graph is None and lookup(graphHandle, BuildGraph) is not None:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED, "the graph is not finalized (graphFinalize)")
        if graph is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_HANDLE, f"graph handle {pointer_value(graphHandle):#x} is "
                                                             f"not a graph")
        prof = _profile_arg(profileHandle, C.QNN_GRAPH_ERROR_SET_PROFILE)
        t0 = time.perf_counter_ns()
        graph.execute(_tensors(inputs, numInputs, "inputs"), _tensors(outputs, numOutputs, "outputs"),
                      collect_perf=prof is not None and prof.detailed)
        if prof is not None:
            rt = graph.runtime
            prof.record(services.execute_events(prof, graph.name, (time.perf_counter_ns() - t0) // 1000, rt.perf))
        return C.QNN_GRAPH_NO_ERROR

    # -- memory ----------------------------------------------------------------------------------------
    @qnn_call("memRegister")
    def memRegister(self, context: Any, memDescriptors: Any, numDescriptors: int, memHandles: Any) -> int:
        """QnnMem_register(ctx, descriptors, n, handles): all-or-nothing; handles stay NULL on failure."""
        n = int(numDescriptors)
        if memHandles is None or n <= 0:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, "memHandles is NULL or numDescriptors is 0")
        if not _set_handles(memHandles, [], n):
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, f"memHandles cannot hold {n} handles")
        ctx = _context(context, C.QNN_MEM_ERROR_INVALID_HANDLE)
        descs = as_struct_list(memDescriptors, n, Qnn_MemDescriptor_t, "memDescriptors", address=True)
        with ctx.lock:
            if ctx.freed:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_HANDLE, "context was freed")
            handles = REGISTRY.register(ctx, descs)
        _set_handles(memHandles, handles, n)
        return C.QNN_SUCCESS

    @qnn_call("memDeRegister")
    def memDeRegister(self, memHandles: Any, numHandles: int) -> int:
        """QnnMem_deRegister(handles, n): removes every valid handle, even when it reports an error. Context
        buffers of a finalized context are in use and stay (8000); contextFree deregisters them."""
        handles = _handles_in(memHandles, int(numHandles))
        if handles is None or int(numHandles) <= 0:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, "memHandles is NULL or numHandles is 0")
        code = REGISTRY.deregister(handles)
        if code:
            raise QnnError(code, "some handles were invalid or in use (every valid free handle was deregistered)")
        return C.QNN_SUCCESS


# Capability keys npurt answers (QnnProperty.h), each True (supported) or False; graph building counts as supported
# once the table has the members (`QnnInterfaceTable.graphCreate`).
def _has(member: str) -> bool:
    return callable(getattr(QnnInterfaceTable, member, None))


CAPABILITIES: dict[int, Any] = {
    C.QNN_PROPERTY_GROUP_DEVICE: True,                       # deviceCreate / deviceFree / platform info
    C.QNN_PROPERTY_DEVICE_SUPPORT_INFRASTRUCTURE: True,      # deviceGetInfrastructure: the HTP perf infrastructure
    C.QNN_PROPERTY_GROUP_PROFILE: True,
    C.QNN_PROPERTY_PROFILE_SUPPORTS_EXTENDED_EVENT: True,
    C.QNN_PROPERTY_PROFILE_SUPPORT_MAX_EVENTS_CONFIG: True,
    C.QNN_PROPERTY_PROFILE_SUPPORT_CUSTOM_CONFIG: False,
    C.QNN_PROPERTY_PROFILE_SUPPORT_OPTRACE_CONFIG: False,
    C.QNN_PROPERTY_GROUP_ERROR: True,
    C.QNN_PROPERTY_ERROR_GET_VERBOSE_MESSAGE: True,
    C.QNN_PROPERTY_GROUP_MEMORY: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_ION: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_CUSTOM: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_DMA_BUF: False,
    C.QNN_PROPERTY_GROUP_LOG: True,
    C.QNN_PROPERTY_LOG_SUPPORTS_DEFAULT_STREAM: True,        # no callback: the lines go to stderr
    C.QNN_PROPERTY_GROUP_SIGNAL: False,
    C.QNN_PROPERTY_GROUP_OP_PACKAGE: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_OP_PACKAGE: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_PLATFORM_OPTIONS: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_CUSTOM_PROPERTY: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_COMPOSITION: lambda: _has("graphCreate"),
    C.QNN_PROPERTY_GRAPH_SUPPORT_ONLINE_PREPARE: lambda: _has("graphCreate"),
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CACHING: True,            # contextCreateFromBinary
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CONFIGURATION: True,
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CUSTOM_PROPERTY: True,    # contextGetProperty's HTP properties
    C.QNN_PROPERTY_CONTEXT_SUPPORT_DEFERRED_GRAPH_INIT: True,
    C.QNN_PROPERTY_GRAPH_SUPPORT_CONFIG: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_SIGNALS: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_ASYNC_EXECUTION: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_EXECUTE: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_CONTEXT_TENSORS: lambda: _has("tensorCreateContextTensor"),
    C.QNN_PROPERTY_TENSOR_SUPPORT_DYNAMIC_DIMENSIONS: False,
    C.QNN_PROPERTY_TENSOR_SUPPORT_QUANTIZATION_ENCODING_SCALE_OFFSET: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET: lambda: _has("graphCreate"),
}


def capability(key: int) -> bool | None:
    """Whether npurt's HTP backend has capability `key` (None: a key npurt does not know)."""
    value = CAPABILITIES.get(int(key))
    return value() if callable(value) else value


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


def _profile(handle: Any) -> services.Profile:
    p = lookup(handle, services.Profile)
    if p is None:
        raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, f"{pointer_value(handle):#x} is not a profile handle")
    return p


def _profile_arg(handle: Any, code: int) -> services.Profile | None:
    """The profile a profiled call was given (None for NULL); `code` for a handle that is not a live profile."""
    if handle is None or not pointer_value(handle):
        return None
    p = lookup(handle, services.Profile)
    if p is None:
        raise QnnError(code, f"{pointer_value(handle):#x} is not a profile handle")
    return p


def _event(event_id: Any) -> services.Event:
    ev = services.event(int(event_id))
    if ev is None:
        raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, f"event {int(event_id)} does not exist (its profile "
                                                           f"recorded again or was freed)")
    return ev


def _ids_out(out: Any, ids: ctypes.Array) -> None:
    if isinstance(out, list):
        out[:] = list(ids)
    else:
        _set_handle(out, ctypes.addressof(ids) if len(ids) else None)


def _tensors(tensors: Any, count: Any, what: str) -> list[Any]:
    """The `count` Qnn_Tensor_t of graphExecute's `inputs` / `outputs` (none needed when `count` is 0); an entry
    that is no tensor is an invalid tensor (as the HTP library says), every other problem an invalid argument."""
    from npurt.qnn.structs import Qnn_Tensor_t
    if isinstance(tensors, (list, tuple)) and not all(isinstance(t, Qnn_Tensor_t) for t in tensors[:int(count)]):
        raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: an entry is not a Qnn_Tensor_t")
    return [] if int(count) == 0 else as_struct_list(tensors, int(count), Qnn_Tensor_t, what)


def _load_binary(binary: Any, size: Any, backend: Backend) -> ContextBinary:
    """The context binary's graphs: a CompiledModel, `.npurt` bytes, a context binary of several graphs, ONNX bytes /
    ModelProto (compiled on the fly with the defaults), or a pointer to such bytes — read here, loaded by the
    runtime's one loader (`runtime.loader`) or, several graphs, by `model.context_binary`."""
    import onnx
    if not isinstance(binary, (CompiledModel, onnx.ModelProto)):
        if binary is None or not size or int(size) <= 0:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBuffer is NULL or binaryBufferSize is 0")
        if isinstance(binary, (bytes, bytearray, memoryview)):
            if int(size) > len(binary):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
                               f"binaryBufferSize {size} is larger than the buffer ({len(binary)} bytes)")
            binary = bytes(memoryview(binary)[:int(size)])
        else:
            binary = _read_binary(pointer_value(binary), int(size))
    if isinstance(binary, bytes) and context_binary.is_context_binary(binary):
        try:
            loaded = context_binary.decode(binary)
        except NpuError as exc:
            raise from_npu(exc, "context", "not a context binary",
                           general=C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY) from None
    else:
        loaded = ContextBinary([_load_model(binary, backend)], False)
    for compiled in loaded.models:
        if is_htp_soc(compiled.soc):
            backend.adopt(get_htp_profile(compiled.soc).name)
        if is_htp_soc(compiled.soc) and get_htp_profile(compiled.soc).name != backend.profile.name:
            raise QnnError(C.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION,
                           f"context binary was prepared for {compiled.soc}, the backend is {backend.profile.name}")
    return loaded


def _read_binary(addr: int, size: int) -> bytes:
    """The `size` bytes of a context binary at a raw address, read only after its header agrees with `size` (an
    absurd size is refused before anything of that size is allocated)."""
    head = safe_read(addr, min(size, HEADER_SIZE))
    if head is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBuffer is not readable")
    declared = context_binary.declared_size(head)
    if declared is not None and declared != size:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBufferSize {size} does not match the "
                                                             f"{declared}-byte context binary")
    if declared is None and size > MAX_ONNX:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBufferSize {size} is larger than any model "
                                                             f"(ONNX is at most {MAX_ONNX} bytes)")
    data = safe_read(addr, size)
    if data is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBuffer is not readable for {size} bytes")
    return data


def _load_model(model: Any, backend: Backend) -> CompiledModel:
    """`model` through the runtime's loader: a compiled binary as it is (its SoC is checked by the caller), an ONNX
    model compiled with the defaults (fp16) for the backend's own HTP SoC (`npurt.soc.htp`: its C2 and input
    alignment are npurt's choice, as HTP has no NC1HWC2 layout of its own), so the binary records that SoC as a
    context binary prepared for this backend does; the HTP context then plans it into the VTCM. Any failure is
    QNN_CONTEXT_ERROR_CREATE_FROM_BINARY (out of memory and the like keep their own codes)."""
    try:
        return load_family(model, backend.profile.name, any_soc=True).current
    except NpuError as exc:
        if exc.code is ErrorCode.INVALID_MODEL and isinstance(model, (bytes, bytearray)) and not is_npurt(model):
            raise QnnError(C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY, foreign_binary(len(model))) from None
        raise from_npu(exc, "context", "not a context binary", general=C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY) \
            from None


def foreign_binary(size: int) -> str:
    """The one line for a binary that is neither npurt's nor ONNX (e.g. a QNN SDK context binary)."""
    return (f"not an npurt context binary ({size} bytes): a QNN SDK context binary (e.g. one onnxruntime's EPContext "
            f"generation made with Qualcomm's libQnnHtp) is a format npurt does not read; make one with `npurt "
            f"convert MODEL.onnx --soc sm8550 --qnn-io-layout nchw -o MODEL.bin` and point the EPContext node at it")


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


def _backend_device(backend: Any, device: Any) -> tuple[Backend, QnnDevice | None]:
    """The live backend and device (None for a NULL device) of a context-creating call; QnnError 5002 otherwise."""
    b = lookup(backend, Backend)
    if b is None or b.freed:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, "invalid backend handle")
    d = lookup(device, QnnDevice) if device is not None and pointer_value(device) else None
    if d is not None and d.freed or d is None and device is not None and pointer_value(device):
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, "invalid device handle")
    return b, d


def _create_context(b: Backend, loaded: ContextBinary, opts: dict, group: SpillGroup | None = None) -> QnnContext:
    """A context of the loaded binary on backend `b` with `opts` (from `_context_options`), in the spill-fill group
    its REGISTER_MULTI_CONTEXTS config names (or `group`), finalized unless deferred and within the PD budget;
    QnnError with nothing kept on failure."""
    opts = {k: v for k, v in opts.items() if k not in ("share", "share_opt")}
    spec = opts.pop("group", None)
    ctx = QnnContext(b, loaded.models[0], **opts) if len(loaded.models) == 1 else \
        GraphsContext(b, loaded.models, shared=loaded.shared, **opts)
    try:
        if group is not None:
            group.join(ctx)
        elif spec is not None and not ctx.deferred:    # DEFER_GRAPH_INIT: the external-buffer flow instead
            join_group(ctx, *spec)
        if not ctx.deferred:
            ctx.finalize()
            pd.check_fits(ctx)
    except BaseException:
        ctx.free()
        raise
    return ctx


def _list_group(b: Backend, entries: list) -> SpillGroup:
    """SHARE_RESOURCES: one group for the list, its spill-fill and VTCM backup buffers sized for its largest need."""
    soc_vtcm = b.profile.vtcm_size
    plans = [plan_graph(m, soc_vtcm) for _, loaded, _ in entries for m in loaded.models]
    spill = max((p.spill_size for p in plans), default=0)
    backup = max((p.vtcm_backup_buffer_size for p in plans), default=0)
    share_va = entries[0][2].get("share_opt", C.SEQUENTIAL_WITH_VA_OPTIMIZATION) == C.SEQUENTIAL_WITH_VA_OPTIMIZATION
    try:
        return SpillGroup(b, spill, backup, share_va)
    except NpuError as exc:
        raise from_npu(exc, "context", f"cannot allocate the list's shared buffers ({spill} B spill-fill, "
                                       f"{backup} B VTCM backup)", general=C.QNN_CONTEXT_ERROR_MEM_ALLOC) from exc


def _config_list(address: Any, what: str) -> list | None:
    """The QnnContext_Config_t of a NULL-terminated `const QnnContext_Config_t**` at `address` (None for NULL)."""
    if not pointer_value(address):
        return None
    try:
        return as_struct_list(pointer_value(address), None, QnnContext_Config_t, what, address=True)
    except NpuError as exc:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, exc.message) from None


def _context_options(config: Any, backend: Backend, base: dict | None = None) -> dict:
    """The context options `config` asks for, over `base` (the defaults when None)."""
    opts = dict(base) if base is not None else {"deferred": False, "priority": C.QNN_PRIORITY_DEFAULT,
                                                 "concurrent": False, "multi_contexts": False}
    for cfg in config_entries(config, QnnContext_Config_t, C.QNN_CONTEXT_ERROR_INVALID_CONFIG):
        option = int(cfg.option)
        if option == C.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT:
            opts["deferred"] = bool(cfg.isGraphInitDeferred)
        elif option == C.QNN_CONTEXT_CONFIG_OPTION_PRIORITY:
            if int(cfg.priority) not in (C.QNN_PRIORITY_LOW, C.QNN_PRIORITY_NORMAL, C.QNN_PRIORITY_NORMAL_HIGH,
                                         C.QNN_PRIORITY_HIGH):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown priority {int(cfg.priority)}")
            opts["priority"] = int(cfg.priority)
        elif option == C.QNN_CONTEXT_CONFIG_OPTION_CUSTOM:
            _htp_option(custom_config(cfg, QnnHtpContext_CustomConfig_t, C.QNN_CONTEXT_ERROR_INVALID_CONFIG), opts)
        elif option in (C.QNN_CONTEXT_CONFIG_OPTION_ERROR_REPORTING, C.QNN_CONTEXT_CONFIG_OPTION_OEM_STRING,
                        C.QNN_CONTEXT_CONFIG_ASYNC_EXECUTION_QUEUE_DEPTH, C.QNN_CONTEXT_CONFIG_ENABLE_GRAPHS,
                        C.QNN_CONTEXT_CONFIG_MEMORY_LIMIT_HINT, C.QNN_CONTEXT_CONFIG_PERSISTENT_BINARY,
                        C.QNN_CONTEXT_CONFIG_BINARY_COMPATIBILITY, C.QNN_CONTEXT_CONFIG_GRAPH_RETENTION_ORDER):
            continue        # accepted; no effect on the memory model
        else:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown context config option {option}")
    if opts["concurrent"] and backend.use_case != NATIVE:
        log.warning("<W> REGISTER_CONCURRENT_RESOURCE_SHARING has an effect only in the Non-RPC use case")
    return opts


def _htp_option(custom: QnnHtpContext_CustomConfig_t, opts: dict) -> None:
    option = int(custom.option)
    if option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS:
        _check_group(custom.groupRegistration, opts)
        opts["multi_contexts"] = True
        opts["group"] = (pointer_value(custom.groupRegistration.firstGroupHandle),
                         int(custom.groupRegistration.maxSpillFillBuffer))
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING:
        _check_group(custom.concurrentGroupRegistration, opts)
        opts["concurrent"] = True
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES:
        opts["share"] = bool(custom.shareResources)         # used by contextCreateFromBinaryListAsync only
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE:
        kind = int(custom.shareResOptType)
        if kind not in (C.SEQUENTIAL_WITH_VA_OPTIMIZATION, C.SEQUENTIAL_WITHOUT_VA_OPTIMIZATION,
                        C.CONCURRENT_OPTIMIZATION):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown SHARE_RESOURCES_OPTIMIZATION_TYPE {kind}")
        opts["share_opt"] = kind
    elif not (1 <= option <= C.QNN_HTP_CONTEXT_CONFIG_OPTION_LORA_WEIGHT_SHARING_ENABLED):
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown HTP context config option {option}")


def _check_group(group: Any, opts: dict) -> None:
    """firstGroupHandle must be NULL (a new group) or a live context; with DEFER_GRAPH_INIT it is not used."""
    first = pointer_value(group.firstGroupHandle)
    if first and lookup(first, QnnContext) is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"firstGroupHandle {first:#x} is not a live context")


def _property_value(ctx: QnnContext, option: int) -> int:
    if not ctx.deferred:
        raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE,
                       "Failed get property: HTP custom properties need a DEFER_GRAPH_INIT context")
    if option == C.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT:
        from npurt.qnn.htp_plan import BUFFER_START_ALIGNMENT
        return BUFFER_START_ALIGNMENT
    if option == C.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE:
        return ctx.required_size(SPILLFILL)
    if option == C.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE:
        return ctx.required_size(WEIGHTS)
    if option == C.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE and ctx.backend.use_case == NATIVE:
        return ctx.required_size(VTCMBACKUP)
    raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE, f"Failed get property {option}")


# ---------------------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------------------
def _api_version() -> Qnn_ApiVersion_t:
    return Qnn_ApiVersion_t(
        Qnn_Version_t(C.QNN_API_VERSION_MAJOR, C.QNN_API_VERSION_MINOR, C.QNN_API_VERSION_PATCH),
        Qnn_Version_t(C.QNN_HTP_API_VERSION_MAJOR, C.QNN_HTP_API_VERSION_MINOR, C.QNN_HTP_API_VERSION_PATCH))


class QnnInterface_t:
    """A provider: backend id, provider name, API versions, and the table under `QNN_INTERFACE_VER_NAME`."""

    def __init__(self, table: QnnInterfaceTable) -> None:
        self.backendId = C.QNN_BACKEND_ID_HTP
        self.providerName = C.QNN_HTP_INTERFACE_PROVIDER_NAME
        self.apiVersion = _api_version()
        setattr(self, C.QNN_INTERFACE_VER_NAME, table)

    def __repr__(self) -> str:
        return f"<QnnInterface_t {self.providerName} backendId={self.backendId}>"


def _use_case(name: str | None) -> str:
    key = (name or os.environ.get("NPURT_QNN_USE_CASE") or FASTRPC).strip().lower()
    try:
        return _USE_CASE_ALIASES[key]
    except KeyError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown QNN HTP use case {name!r}; use 'fastrpc' or 'native'") from None


def interface(use_case: str = FASTRPC, soc: str | None = None) -> QnnInterfaceTable:
    """The HTP function table for `use_case` ("fastrpc" or "native") on HTP SoC `soc` (default: `$NPURT_SOC` if it
    is an HTP SoC, else sm8350)."""
    from npurt.qnn.device import configured_soc, default_soc
    configured = soc is not None or configured_soc() is not None
    return QnnInterfaceTable(_use_case(use_case), get_htp_profile(soc or default_soc()).name, configured)


@qnn_call("QnnInterface_getProviders")
def QnnInterface_getProviders(providerList: Any, numProviders: Any) -> int:
    """`QnnInterface_getProviders(&providerList, &numProviders)`: fills the list with the one HTP provider."""
    count = as_struct(numProviders, ctypes.c_uint32)
    if not isinstance(providerList, list) or count is None:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    from npurt.qnn.device import configured_soc, default_soc
    table = QnnInterfaceTable(_use_case(None), default_soc(), configured_soc() is not None)
    providerList[:] = [QnnInterface_t(table)]
    count.value = 1
    return C.QNN_SUCCESS
