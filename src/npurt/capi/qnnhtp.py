"""libQnnHtp.so: the QNN HTP backend's provider table as thin adapters over the `npurt.qnn` mirror, plus
`qurt_malloc` / `qurt_free` for the Non-RPC use case's DSP-side buffers.

`QnnInterface_getProviders` gives one provider (backend id 6, "HTP_QTI_AISW", core API 2.40, HTP API 5.51) whose
`QnnInterface_t` has the 2.40 layout: the named members of `npurt.soc.api_coverage.QNN_INTERFACE_MEMBERS` in order
(`MEMBERS`), then NULL reserved slots up to `QNN_INTERFACE_SLOTS`. The members npurt implements go to the mirror's
function of the same name, with C pointers turned into the mirror's ctypes structs (`npurt.capi.guard`: validated,
aliasing the caller's memory); every other named member returns QNN_COMMON_ERROR_NOT_SUPPORTED. deviceGetInfrastructure
hands out a static QnnHtpDevice_Infrastructure_t whose four functions go to the mirror's `PerfInfrastructure`. The
use case (FastRPC / Non-RPC) is read from `$NPURT_QNN_USE_CASE` and the SoC from `$NPURT_SOC` when
`QnnInterface_getProviders` is called, as the Python mirror reads them.
"""
from __future__ import annotations

import ctypes
import importlib
from typing import Any

import npurt.qnn as q
from npurt.capi import guard
from npurt.capi.build import LibrarySpec
from npurt.capi.embed import sync_environ
from npurt.capi.qnn_common import (QNN_HEADER_DIR, Member, _typedef_params, adapter, extern_cdef, interface_members,
                                   table_initializer, table_source)
from npurt.capi.qnn_common import interface_struct as struct_text
from npurt.soc.api_coverage import (QNN_HTP_PERF_INFRASTRUCTURE_MEMBERS, QNN_INTERFACE_MEMBERS,
                                     QNN_INTERFACE_RESERVED)
from npurt.errors import NpuError
from npurt.memory import raw
from npurt.memory.cargs import as_struct_list
from npurt.qnn import constants as C
from npurt.qnn.members.device import PERF_INFRASTRUCTURE

LIBRARY_NAME = "libQnnHtp.so"
PREFIX = "qnn_"

# The provider table: the member list (data) with each implemented member's C parameters from npurt's headers; the
# struct in QnnInterface.h is `interface_struct()` (a test keeps them equal).
MEMBERS = interface_members(QNN_INTERFACE_MEMBERS)
# The HTP performance infrastructure's functions (QnnHtpDevice_PerfInfrastructure_t, in its order).
PERF_MEMBERS = [Member(name, _typedef_params()[f"QnnHtpPerfInfrastructure_{name[0].upper()}{name[1:]}Fn_t"])
                for name in QNN_HTP_PERF_INFRASTRUCTURE_MEMBERS]


def interface_struct() -> str:
    """The C text of `QNN_INTERFACE_VER_TYPE` as QnnInterface.h must carry it."""
    return struct_text(MEMBERS, QNN_INTERFACE_RESERVED, C.QNN_INTERFACE_VER_TYPE)

_SOURCE = r"""
#include <stdarg.h>
static void npurt_qnn_call_log(QnnLog_Callback_t cb, QnnLog_Level_t level, uint64_t ts, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    cb(fmt, level, ts, args);
    va_end(args);
}

void npurt_qnn_log_emit(uintptr_t cb, uint32_t level, uint64_t ts, const char *msg)
{
    npurt_qnn_call_log((QnnLog_Callback_t)cb, (QnnLog_Level_t)level, ts, "%s", msg);
}
"""


def spec() -> LibrarySpec:
    """libQnnHtp.so: QnnInterface_getProviders, qurt_malloc, qurt_free and the provider's 2.40 table."""
    provider = (f"static QnnInterface_t npurt_qnn_provider = {{\n    {C.QNN_BACKEND_ID_HTP}, "
                f'"{C.QNN_HTP_INTERFACE_PROVIDER_NAME}",\n'
                f"    {{{{{C.QNN_API_VERSION_MAJOR}, {C.QNN_API_VERSION_MINOR}, {C.QNN_API_VERSION_PATCH}}}, "
                f"{{{C.QNN_HTP_API_VERSION_MAJOR}, {C.QNN_HTP_API_VERSION_MINOR}, {C.QNN_HTP_API_VERSION_PATCH}}}}},\n"
                f"    {{.{C.QNN_INTERFACE_VER_NAME} = {{\n{table_initializer(MEMBERS)}\n    }}}}\n}};\n"
                "static const QnnInterface_t *npurt_qnn_providers[] = {&npurt_qnn_provider};\n"
                "uintptr_t npurt_qnn_provider_list(void) { return (uintptr_t)npurt_qnn_providers; }\n"
                "static QnnHtpDevice_Infrastructure_t npurt_qnn_infra = {QNN_HTP_DEVICE_INFRASTRUCTURE_TYPE_PERF, "
                "{.perfInfra = {" + ", ".join(f"m_{m.name}" for m in PERF_MEMBERS) + "}}};\n"
                "uintptr_t npurt_qnn_infrastructure(void) { return (uintptr_t)&npurt_qnn_infra; }\n")
    return LibrarySpec(
        name=LIBRARY_NAME, headers=["QnnInterface.h", "HTP/QnnHtpDevice.h", "../qurt_alloc.h"],
        header_dir=QNN_HEADER_DIR,
        functions="Qnn_ErrorHandle_t QnnInterface_getProviders(const QnnInterface_t ***providerList, "
                  "uint32_t *numProviders); void *qurt_malloc(size_t size); void qurt_free(void *ptr);",
        module=__name__, errors={"QnnInterface_getProviders": str(C.QNN_COMMON_ERROR_SYSTEM)},
        extra_cdef=extern_cdef(MEMBERS + PERF_MEMBERS, PREFIX) + "uintptr_t npurt_qnn_provider_list(void);\n"
                   "uintptr_t npurt_qnn_infrastructure(void);\n"
                   "void npurt_qnn_log_emit(uintptr_t cb, uint32_t level, uint64_t ts, const char *msg);\n",
        extra_source=_SOURCE + table_source(MEMBERS + PERF_MEMBERS, PREFIX, "QNN_COMMON_ERROR_NOT_SUPPORTED")
        + provider)


def _lib() -> Any:
    """The compiled library's cffi `lib` (its C helpers), importable inside the embedded interpreter."""
    return importlib.import_module("_npurt_capi_libQnnHtp").lib


class _State:
    table: q.QnnInterfaceTable | None = None


def _table() -> q.QnnInterfaceTable:
    if _State.table is None:
        _fresh_table()
    assert _State.table is not None
    return _State.table


def _fresh_table() -> None:
    sync_environ()
    providers: list = []
    q.QnnInterface_getProviders(providers, ctypes.byref(ctypes.c_uint32()))
    _State.table = getattr(providers[0], C.QNN_INTERFACE_VER_NAME)


def _cell(addr: int, what: str) -> ctypes.c_void_p | None:
    """A `T*` out-parameter of a pointer-sized T (handles, `const char**`), aliasing the caller's memory."""
    return guard.struct_at(ctypes.c_void_p, addr, what)


# --- exported functions -----------------------------------------------------------------------------------
def QnnInterface_getProviders(providerList: int, numProviders: int) -> int:
    try:
        list_cell, count = _cell(providerList, "providerList"), guard.struct_at(ctypes.c_uint32, numProviders,
                                                                                "numProviders")
    except NpuError:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    if list_cell is None or count is None:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    _fresh_table()
    list_cell.value = _lib().npurt_qnn_provider_list()
    count.value = 1
    return C.QNN_SUCCESS


def qurt_malloc(size: int) -> int:
    sync_environ()
    return q.qurt_malloc(int(size))


def qurt_free(ptr: int) -> None:
    if ptr:
        q.qurt_free(ptr)


# --- the table's members (each: C arguments as ints -> the mirror's function) -------------------------------
@adapter("propertyHasCapability", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_propertyHasCapability(key: int) -> int:
    return _table().propertyHasCapability(key)


@adapter("backendCreate", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_backendCreate(logger: int, config: int, backend: int) -> int:
    return _table().backendCreate(logger or None, None, _cell(backend, "backend"))


@adapter("backendGetApiVersion", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_backendGetApiVersion(pVersion: int) -> int:
    return _table().backendGetApiVersion(guard.struct_at(q.Qnn_ApiVersion_t, pVersion, "pVersion"))


@adapter("backendGetBuildId", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_backendGetBuildId(id: int) -> int:  # noqa: A002 - the C parameter's name
    return _table().backendGetBuildId(_cell(id, "id"))


@adapter("backendFree", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_backendFree(backend: int) -> int:
    return _table().backendFree(backend)


@adapter("contextCreateFromBinary", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextCreateFromBinary(backend: int, device: int, config: int, binaryBuffer: int, binaryBufferSize: int,
                                context: int, profile: int) -> int:
    configs = _configs(config, q.QnnContext_Config_t, "config")
    return _table().contextCreateFromBinary(backend, device or None, configs, binaryBuffer or None,
                                            binaryBufferSize, _cell(context, "context"), profile or None)


@adapter("contextCreateFromBinaryListAsync", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextCreateFromBinaryListAsync(backend: int, device: int, contextParams: int, listConfig: int,
                                         signal: int) -> int:
    params = _configs(contextParams, q.QnnContext_Params_t, "contextParams")
    configs = _configs(listConfig, q.QnnContext_Config_t, "listConfig")
    return _table().contextCreateFromBinaryListAsync(backend, device or None, params, configs, signal or None)


@adapter("contextFree", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextFree(context: int, profile: int) -> int:
    return _table().contextFree(context, profile or None)


@adapter("graphRetrieve", C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
def qnn_graphRetrieve(contextHandle: int, graphName: int, graphHandle: int) -> int:
    name = guard.c_string(graphName, "graphName")
    if name is None:
        return C.QNN_GRAPH_ERROR_INVALID_ARGUMENT
    return _table().graphRetrieve(contextHandle, name, _cell(graphHandle, "graphHandle"))


@adapter("graphExecute", C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
def qnn_graphExecute(graphHandle: int, inputs: int, numInputs: int, outputs: int, numOutputs: int,
                     profileHandle: int, signalHandle: int) -> int:
    ins = guard.array_at(q.Qnn_Tensor_t, inputs, numInputs, "inputs", write=False)
    outs = guard.array_at(q.Qnn_Tensor_t, outputs, numOutputs, "outputs", write=False)
    return _table().graphExecute(graphHandle, ins, numInputs, outs, numOutputs, profileHandle or None,
                                 signalHandle or None)


@adapter("logCreate", C.QNN_LOG_ERROR_INVALID_ARGUMENT)
def qnn_logCreate(callback: int, maxLogLevel: int, logger: int) -> int:
    if callback:
        raw.check_code(callback, "callback")
    emit = _lib().npurt_qnn_log_emit
    forward = (lambda text, level, stamp: emit(callback, level, stamp, text.encode())) if callback else None
    return _table().logCreate(forward, maxLogLevel, _cell(logger, "logger"))


@adapter("logSetLogLevel", C.QNN_LOG_ERROR_INVALID_ARGUMENT)
def qnn_logSetLogLevel(logger: int, maxLogLevel: int) -> int:
    return _table().logSetLogLevel(logger, maxLogLevel)


@adapter("logFree", C.QNN_LOG_ERROR_INVALID_ARGUMENT)
def qnn_logFree(logger: int) -> int:
    return _table().logFree(logger)


@adapter("profileCreate", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileCreate(backend: int, level: int, profile: int) -> int:
    return _table().profileCreate(backend, level, _cell(profile, "profile"))


@adapter("profileFree", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileFree(profile: int) -> int:
    return _table().profileFree(profile)


@adapter("memRegister", C.QNN_MEM_ERROR_INVALID_ARGUMENT)
def qnn_memRegister(context: int, memDescriptors: int, numDescriptors: int, memHandles: int) -> int:
    descs = guard.array_at(q.Qnn_MemDescriptor_t, memDescriptors, numDescriptors, "memDescriptors", write=False)
    handles = guard.array_at(ctypes.c_void_p, memHandles, numDescriptors, "memHandles")
    return _table().memRegister(context, descs if descs else None, numDescriptors,
                                handles if handles is not None and numDescriptors > 0 else None)


@adapter("memDeRegister", C.QNN_MEM_ERROR_INVALID_ARGUMENT)
def qnn_memDeRegister(memHandles: int, numHandles: int) -> int:
    handles = guard.array_at(ctypes.c_void_p, memHandles, numHandles, "memHandles", write=False)
    return _table().memDeRegister(handles if handles is not None and numHandles > 0 else None, numHandles)


@adapter("deviceGetPlatformInfo", C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
def qnn_deviceGetPlatformInfo(logger: int, platformInfo: int) -> int:
    return _table().deviceGetPlatformInfo(logger or None, _cell(platformInfo, "platformInfo"))


@adapter("deviceFreePlatformInfo", C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
def qnn_deviceFreePlatformInfo(logger: int, platformInfo: int) -> int:
    return _table().deviceFreePlatformInfo(logger or None, platformInfo)


@adapter("deviceCreate", C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
def qnn_deviceCreate(logger: int, config: int, device: int) -> int:
    return _table().deviceCreate(logger or None, _configs(config, q.QnnDevice_Config_t, "config"),
                                 _cell(device, "device"))


@adapter("deviceFree", C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
def qnn_deviceFree(device: int) -> int:
    return _table().deviceFree(device)


@adapter("errorGetMessage", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_errorGetMessage(errorHandle: int, errorMessage: int) -> int:
    return _table().errorGetMessage(errorHandle, _cell(errorMessage, "errorMessage"))


@adapter("contextGetProperty", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextGetProperty(contextHandle: int, properties: int) -> int:
    return _table().contextGetProperty(contextHandle, 
        _configs(properties, q.QnnContext_Property_t, "properties"))


@adapter("contextFinalize", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextFinalize(context: int, profile: int) -> int:
    return _table().contextFinalize(context, profile or None)


@adapter("profileSetConfig", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileSetConfig(profileHandle: int, config: int) -> int:
    configs = _configs(config, q.QnnProfile_Config_t, "config")
    return _table().profileSetConfig(profileHandle, configs)


@adapter("profileGetEvents", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileGetEvents(profileHandle: int, profileEventIds: int, numEvents: int) -> int:
    return _table().profileGetEvents(profileHandle, _cell(profileEventIds, "profileEventIds"),
                                     guard.struct_at(ctypes.c_uint32, numEvents, "numEvents"))


@adapter("profileGetSubEvents", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileGetSubEvents(eventId: int, subEventIds: int, numSubEvents: int) -> int:
    return _table().profileGetSubEvents(eventId, _cell(subEventIds, "subEventIds"),
                                        guard.struct_at(ctypes.c_uint32, numSubEvents, "numSubEvents"))


@adapter("profileGetEventData", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileGetEventData(eventId: int, eventData: int) -> int:
    return _table().profileGetEventData(eventId, guard.struct_at(q.QnnProfile_EventData_t, eventData, "eventData"))


@adapter("profileGetExtendedEventData", C.QNN_PROFILE_ERROR_INVALID_ARGUMENT)
def qnn_profileGetExtendedEventData(eventId: int, eventData: int) -> int:
    return _table().profileGetExtendedEventData(
        eventId, guard.struct_at(q.QnnProfile_ExtendedEventData_t, eventData, "eventData"))


@adapter("deviceGetInfrastructure", C.QNN_DEVICE_ERROR_INVALID_ARGUMENT)
def qnn_deviceGetInfrastructure(deviceInfra: int) -> int:
    cell = _cell(deviceInfra, "deviceInfra")
    ret = _table().deviceGetInfrastructure(cell)
    if ret == C.QNN_SUCCESS and cell is not None:
        cell.value = _lib().npurt_qnn_infrastructure()
    return ret


@adapter("errorGetVerboseMessage", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_errorGetVerboseMessage(errorHandle: int, errorMessage: int) -> int:
    return _table().errorGetVerboseMessage(errorHandle, _cell(errorMessage, "errorMessage"))


@adapter("errorFreeVerboseMessage", C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
def qnn_errorFreeVerboseMessage(errorMessage: int) -> int:
    return _table().errorFreeVerboseMessage(errorMessage)


# --- the HTP performance infrastructure (QnnHtpDevice_PerfInfrastructure_t) -------------------------------------
@adapter("createPowerConfigId", C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT)
def qnn_createPowerConfigId(deviceId: int, coreId: int, powerConfigId: int) -> int:
    return PERF_INFRASTRUCTURE.createPowerConfigId(
        deviceId, coreId, guard.struct_at(ctypes.c_uint32, powerConfigId, "powerConfigId"))


@adapter("destroyPowerConfigId", C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT)
def qnn_destroyPowerConfigId(powerConfigId: int) -> int:
    return PERF_INFRASTRUCTURE.destroyPowerConfigId(powerConfigId)


@adapter("setPowerConfig", C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT)
def qnn_setPowerConfig(powerConfigId: int, config: int) -> int:
    configs = _configs(config, q.QnnHtpPerfInfrastructure_PowerConfig_t, "config")
    return PERF_INFRASTRUCTURE.setPowerConfig(powerConfigId, configs)


@adapter("setMemoryConfig", C.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT)
def qnn_setMemoryConfig(deviceId: int, coreId: int, config: int) -> int:
    configs = _configs(config, q.QnnHtpPerfInfrastructure_MemoryConfig_t, "config")
    return PERF_INFRASTRUCTURE.setMemoryConfig(deviceId, coreId, configs)


# --- graph building (the mirror's `graph_build` members; op configs and tensors are read through guarded pointers) --
def _configs(addr: int, cls: type, what: str) -> list | None:
    """A NULL-terminated `const T**` config list (None for NULL)."""
    return as_struct_list(addr, None, cls, what, address=True) if addr else None


@adapter("contextCreate", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextCreate(backend: int, device: int, config: int, context: int) -> int:
    return _table().contextCreate(backend, device or None, _configs(config, q.QnnContext_Config_t, "config"),
                                  _cell(context, "context"))


@adapter("backendValidateOpConfig", C.QNN_BACKEND_ERROR_INVALID_ARGUMENT)
def qnn_backendValidateOpConfig(backend: int, opConfig: int) -> int:
    return _table().backendValidateOpConfig(backend, guard.struct_at(q.Qnn_OpConfig_t, opConfig, "opConfig",
                                                                     write=False))


@adapter("graphCreate", C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
def qnn_graphCreate(contextHandle: int, graphName: int, config: int, graphHandle: int) -> int:
    name = guard.c_string(graphName, "graphName")
    return _table().graphCreate(contextHandle, name, _configs(config, q.QnnGraph_Config_t, "config"),
                                _cell(graphHandle, "graphHandle"))


@adapter("tensorCreateGraphTensor", C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM)
def qnn_tensorCreateGraphTensor(graph: int, tensor: int) -> int:
    return _table().tensorCreateGraphTensor(graph, guard.struct_at(q.Qnn_Tensor_t, tensor, "tensor"))


@adapter("tensorCreateContextTensor", C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM)
def qnn_tensorCreateContextTensor(context: int, tensor: int) -> int:
    return _table().tensorCreateContextTensor(context, guard.struct_at(q.Qnn_Tensor_t, tensor, "tensor"))


@adapter("graphAddNode", C.QNN_GRAPH_ERROR_INVALID_OP_CONFIG)
def qnn_graphAddNode(graphHandle: int, opConfig: int) -> int:
    return _table().graphAddNode(graphHandle, guard.struct_at(q.Qnn_OpConfig_t, opConfig, "opConfig", write=False))


@adapter("graphFinalize", C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
def qnn_graphFinalize(graphHandle: int, profileHandle: int, signalHandle: int) -> int:
    return _table().graphFinalize(graphHandle, profileHandle or None, signalHandle or None)


@adapter("contextGetBinarySize", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextGetBinarySize(context: int, binaryBufferSize: int) -> int:
    return _table().contextGetBinarySize(context, guard.struct_at(ctypes.c_uint64, binaryBufferSize,
                                                                  "binaryBufferSize"))


@adapter("contextGetBinary", C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnn_contextGetBinary(context: int, binaryBuffer: int, binaryBufferSize: int, writtenBufferSize: int) -> int:
    return _table().contextGetBinary(context, binaryBuffer or None, binaryBufferSize,
                                     guard.struct_at(ctypes.c_uint64, writtenBufferSize, "writtenBufferSize"))
