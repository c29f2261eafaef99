"""libQnnSystem.so: `QnnSystemInterface_getProviders` with systemContextCreate / GetBinaryInfo / Free as thin
adapters over `npurt.qnn.system`, so a program discovers graphs and their I/O tensors as SampleApp does.

The provider ("SYSTEM_QTI_AISW", system API 1.15) has the 16-member table of the QNN system interface: the
context members and the three profile-serialization members (what onnxruntime's QNN EP calls to write a profile)
are implemented; the other members are NULL, as the header allows. The binary infos are the mirror's ctypes structs,
alive until systemContextFree of their handle.
"""
from __future__ import annotations

import ctypes
import importlib

from npurt.capi import guard
from npurt.capi.build import LibrarySpec
from npurt.capi.qnn_common import QNN_HEADER_DIR, adapter, extern_cdef, header_members, table_source
from npurt.errors import NpuError
from npurt.qnn import constants as C
from npurt.qnn import system

LIBRARY_NAME = "libQnnSystem.so"
PREFIX = "qnnsys_"

# The members npurt implements, their order and C parameters, from QnnSystemInterface.h (the other slots are NULL).
MEMBERS = [m for m in header_members("QnnSystemInterface_ImplementationV1_15_t") if m.implemented]
_TABLE = system.QnnSystemInterfaceTable()
# systemProfileCreateSerializationTarget takes its target struct by value: its C member is written here and hands
# the adapter the struct's address.
_BY_VALUE = "systemProfileCreateSerializationTarget"
_BY_VALUE_C = r"""
uint64_t qnnsys_systemProfileCreateSerializationTarget(uintptr_t target, uintptr_t configs, uint32_t numConfigs,
                                                       uintptr_t serializationTarget);
static Qnn_ErrorHandle_t m_systemProfileCreateSerializationTarget(QnnSystemProfile_SerializationTarget_t target,
    QnnSystemProfile_SerializationTargetConfig_t *configs, uint32_t numConfigs,
    QnnSystemProfile_SerializationTargetHandle_t *serializationTarget)
{
    if (!npurt_enter()) return QNN_COMMON_ERROR_SYSTEM;
    Qnn_ErrorHandle_t r = qnnsys_systemProfileCreateSerializationTarget((uintptr_t)&target, (uintptr_t)configs,
                                                                       numConfigs, (uintptr_t)serializationTarget);
    npurt_leave();
    return r;
}
"""
_GENERATED = [m for m in MEMBERS if m.name != _BY_VALUE]


def spec() -> LibrarySpec:
    """libQnnSystem.so: QnnSystemInterface_getProviders and the system provider's table."""
    fields = ",\n".join(f"        .{m.name} = m_{m.name}" for m in MEMBERS)
    provider = (f"static QnnSystemInterface_t npurt_qnn_system_provider = {{\n    {C.QNN_BACKEND_ID_NULL}, "
                f'"{C.QNN_SYSTEM_INTERFACE_PROVIDER_NAME}",\n'
                f"    {{{C.QNN_SYSTEM_API_VERSION_MAJOR}, {C.QNN_SYSTEM_API_VERSION_MINOR}, "
                f"{C.QNN_SYSTEM_API_VERSION_PATCH}}},\n"
                f"    {{.{system.QNN_SYSTEM_INTERFACE_VER_NAME} = {{\n{fields}\n    }}}}\n}};\n"
                "static const QnnSystemInterface_t *npurt_qnn_system_providers[] = {&npurt_qnn_system_provider};\n"
                "uintptr_t npurt_qnn_system_provider_list(void) { return (uintptr_t)npurt_qnn_system_providers; }\n")
    return LibrarySpec(
        name=LIBRARY_NAME, headers=["System/QnnSystemInterface.h"], header_dir=QNN_HEADER_DIR,
        functions="Qnn_ErrorHandle_t QnnSystemInterface_getProviders(const QnnSystemInterface_t ***providerList, "
                  "uint32_t *numProviders);",
        module=__name__, errors={"QnnSystemInterface_getProviders": str(C.QNN_COMMON_ERROR_SYSTEM)},
        extra_cdef=extern_cdef(_GENERATED, PREFIX) + "uintptr_t npurt_qnn_system_provider_list(void);\n"
                   'extern "Python+C" uint64_t qnnsys_systemProfileCreateSerializationTarget(uintptr_t target, '
                   "uintptr_t configs, uint32_t numConfigs, uintptr_t serializationTarget);\n",
        extra_source=table_source(_GENERATED, PREFIX, "QNN_COMMON_ERROR_NOT_SUPPORTED") + _BY_VALUE_C + provider)


def QnnSystemInterface_getProviders(providerList: int, numProviders: int) -> int:
    try:
        cell = guard.struct_at(ctypes.c_void_p, providerList, "providerList")
        count = guard.struct_at(ctypes.c_uint32, numProviders, "numProviders")
    except NpuError:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    if cell is None or count is None:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    cell.value = importlib.import_module("_npurt_capi_libQnnSystem").lib.npurt_qnn_system_provider_list()
    count.value = 1
    return C.QNN_SUCCESS


@adapter("systemContextCreate", C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnnsys_systemContextCreate(sysCtxHandle: int) -> int:
    return _TABLE.systemContextCreate(guard.struct_at(ctypes.c_void_p, sysCtxHandle, "sysCtxHandle"))


@adapter("systemContextGetBinaryInfo", C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnnsys_systemContextGetBinaryInfo(sysCtxHandle: int, binaryBuffer: int, binaryBufferSize: int,
                                      binaryInfo: int, binaryInfoSize: int) -> int:
    return _TABLE.systemContextGetBinaryInfo(
        sysCtxHandle, binaryBuffer or None, binaryBufferSize,
        guard.struct_at(ctypes.c_void_p, binaryInfo, "binaryInfo"),
        guard.struct_at(ctypes.c_uint64, binaryInfoSize, "binaryInfoSize"))


@adapter("systemContextFree", C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT)
def qnnsys_systemContextFree(sysCtxHandle: int) -> int:
    return _TABLE.systemContextFree(sysCtxHandle)


@adapter("systemProfileCreateSerializationTarget", C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT)
def qnnsys_systemProfileCreateSerializationTarget(target: int, configs: int, numConfigs: int,
                                                  serializationTarget: int) -> int:
    t = guard.struct_at(system.QnnSystemProfile_SerializationTarget_t, target, "serializationTargetInfo",
                        write=False)
    cfgs = guard.array_at(system.QnnSystemProfile_SerializationTargetConfig_t, configs, numConfigs, "configs",
                          write=False)
    return _TABLE.systemProfileCreateSerializationTarget(
        t, cfgs, numConfigs, guard.struct_at(ctypes.c_void_p, serializationTarget, "serializationTarget"))


@adapter("systemProfileSerializeEventData", C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT)
def qnnsys_systemProfileSerializeEventData(serializationTarget: int, eventData: int, numEvents: int) -> int:
    return _TABLE.systemProfileSerializeEventData(serializationTarget, eventData or None, numEvents)


@adapter("systemProfileFreeSerializationTarget", C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT)
def qnnsys_systemProfileFreeSerializationTarget(serializationTarget: int) -> int:
    return _TABLE.systemProfileFreeSerializationTarget(serializationTarget)
