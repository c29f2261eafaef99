"""QnnSystemContext: what libQnnSystem tells about a context binary before it is loaded (graph names, I/O tensors,
HTP sizes), as SampleApp discovers graphs.

`QnnSystemInterface_getProviders(list, n)` gives one provider ("SYSTEM_QTI_AISW", system API 1.15) whose table
(`QNN_SYSTEM_INTERFACE_VER_NAME`) has `systemContextCreate`, `systemContextGetBinaryInfo`, `systemContextFree`.
The binary info is version 3 with GraphInfo version 3, as the SDK's x86-64 library reports: for each graph
its name, input / output `Qnn_Tensor_t` (v1, QNN's own terms: `npurt.qnn.graph.tensor_specs`) and the 112-byte HTP
graph blob info (the V1 record then the V2 record: spill-fill size, VTCM bytes, I/O bytes aligned to 8 KiB, const
bytes). Everything returned lives until `systemContextFree` of its handle.
"""
from __future__ import annotations

import ctypes
import logging
import os
from ctypes import POINTER, Structure, Union, c_char_p, c_uint32, c_uint64, c_uint8, c_void_p
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.model import context_binary
from npurt.model.context_binary import own_weight_bytes
from npurt.model.file_format import is_npurt
from npurt.qnn import constants as C
from npurt.memory.cargs import as_struct
from npurt.memory.raw import pointer_value, safe_read
from npurt.qnn.backend import HANDLES, lookup
from npurt.qnn.graph import io_tensors, tensor_specs
from npurt.qnn.members.args import set_handle
from npurt.qnn.members.backend import BUILD_ID, api_version
from npurt.qnn.members.context import foreign_binary
from npurt.qnn.htp_plan import graph_settings, plan_graph
from npurt.qnn.structs import (Qnn_Tensor_t, Qnn_Version_t, QnnProfile_EventData_t,
                               QnnProfile_ExtendedEventData_t)
from npurt.soc.htp import get_htp_profile, is_htp_soc

log = logging.getLogger("npurt.qnn")

IO_ALIGN = 8192         # observed: ioTensorSize sums each graph I/O tensor rounded up to 8 KiB


class QnnSystemContext_GraphInfoV3_t(Structure):
    """One graph of a context binary: name, I/O tensors, updateable tensors, HTP graph blob, op range."""

    _fields_ = [("graphName", c_char_p), ("numGraphInputs", c_uint32), ("graphInputs", POINTER(Qnn_Tensor_t)),
                ("numGraphOutputs", c_uint32), ("graphOutputs", POINTER(Qnn_Tensor_t)),
                ("numUpdateableTensors", c_uint32), ("updateableTensors", POINTER(Qnn_Tensor_t)),
                ("graphBlobInfoSize", c_uint32), ("graphBlobInfo", c_void_p),
                ("startOpIndex", c_uint32), ("endOpIndex", c_uint32)]


class QnnSystemContext_GraphInfoV1_t(Structure):
    """Graph info version 1: name and I/O tensors (the first 5 members of V3)."""

    _fields_ = QnnSystemContext_GraphInfoV3_t._fields_[:5]


class QnnSystemContext_GraphInfoV2_t(Structure):
    """Graph info version 2: V1 and the updateable tensors (the first 7 members of V3)."""

    _fields_ = QnnSystemContext_GraphInfoV3_t._fields_[:7]


class QnnSystemContext_GraphInfo_t(Structure):
    """A versioned graph info (V1 and V2 are prefixes of V3; npurt fills V3)."""

    class _U(Union):
        _fields_ = [("graphInfoV1", QnnSystemContext_GraphInfoV1_t), ("graphInfoV2", QnnSystemContext_GraphInfoV2_t),
                    ("graphInfoV3", QnnSystemContext_GraphInfoV3_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


class QnnSystemContext_BinaryInfoV3_t(Structure):
    """What a context binary holds: backend, versions, SoC, blob size, context tensors, graphs, metadata."""

    _fields_ = [("backendId", c_uint32), ("buildId", c_char_p), ("coreApiVersion", Qnn_Version_t),
                ("backendApiVersion", Qnn_Version_t), ("socVersion", c_char_p),
                ("contextBlobVersion", Qnn_Version_t), ("contextBlobSize", c_uint64),
                ("numContextTensors", c_uint32), ("contextTensors", POINTER(Qnn_Tensor_t)),
                ("numGraphs", c_uint32), ("graphs", POINTER(QnnSystemContext_GraphInfo_t)),
                ("platformInfo", c_void_p), ("contextMetadataSize", c_uint32), ("contextMetadata", c_void_p),
                ("socModel", c_uint32)]


_BINARY_INFO_V1 = [("backendId", c_uint32), ("buildId", c_char_p), ("coreApiVersion", Qnn_Version_t),
                   ("backendApiVersion", Qnn_Version_t), ("socVersion", c_char_p), ("hwInfoBlobVersion", Qnn_Version_t),
                   ("contextBlobVersion", Qnn_Version_t), ("hwInfoBlobSize", c_uint32), ("hwInfoBlob", c_void_p),
                   ("contextBlobSize", c_uint64), ("numContextTensors", c_uint32),
                   ("contextTensors", POINTER(Qnn_Tensor_t)), ("numGraphs", c_uint32),
                   ("graphs", POINTER(QnnSystemContext_GraphInfo_t))]


class QnnSystemContext_BinaryInfoV1_t(Structure):
    """Binary info version 1: backend, versions, SoC, hardware-info blob, context blob, context tensors, graphs."""

    _fields_ = _BINARY_INFO_V1


class QnnSystemContext_BinaryInfoV2_t(Structure):
    """Binary info version 2: V1 and the platform info."""

    _fields_ = _BINARY_INFO_V1 + [("platformInfo", c_void_p)]


class QnnSystemContext_BinaryInfo_t(Structure):
    """A versioned binary info; npurt fills version 3."""

    class _U(Union):
        _fields_ = [("contextBinaryInfoV1", QnnSystemContext_BinaryInfoV1_t),
                    ("contextBinaryInfoV2", QnnSystemContext_BinaryInfoV2_t),
                    ("contextBinaryInfoV3", QnnSystemContext_BinaryInfoV3_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


class QnnHtpSystemContext_GraphBlob_t(Structure):
    """The 112-byte HTP graph blob info: a V1 record (version 1) followed by a V2 record (version 2)."""

    _fields_ = [("version1", c_uint32), ("spillFillBufferSize", c_uint64), ("vtcmSize", c_uint32),
                ("optimizationLevel", c_uint32), ("htpDlbc", c_uint8), ("numHvxThreads", c_uint64),
                ("version2", c_uint32), ("nativeKChannelSize", c_uint64), ("nativeVChannelSize", c_uint64),
                ("isSafeShareIO", c_uint32), ("ioTensorSize", c_uint64), ("opDataSize", c_uint64),
                ("constSize", c_uint64), ("ddrTensorSize", c_uint64), ("sharedWeightsSize", c_uint64)]


class SystemContext:
    """A systemContextCreate handle and the binary infos it handed out."""

    def __init__(self) -> None:
        self.keep: list[Any] = []
        self.handle = HANDLES.add(self)

    def free(self) -> None:
        self.keep = []
        HANDLES.remove(self.handle)


def _blob(compiled: Any, soc: str, shared_bytes: int | None = None) -> QnnHtpSystemContext_GraphBlob_t:
    """The HTP blob info of one graph; `shared_bytes` (a weight-shared binary): its weight bytes other graphs read
    too, and its constSize is then its own weights (the binary stores the store once)."""
    profile = get_htp_profile(soc)
    htp = plan_graph(compiled, profile.vtcm_size)
    ins, outs = tensor_specs(compiled)
    blob = QnnHtpSystemContext_GraphBlob_t()
    blob.version1, blob.version2 = (C.QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V1,
                                    C.QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V2)
    blob.spillFillBufferSize = htp.spill_size
    blob.vtcmSize = htp.vtcm_size                   # bytes, as Qualcomm's library writes it
    blob.optimizationLevel = int(graph_settings(compiled).get("optimization", 0))
    blob.ioTensorSize = sum(-(-s.nbytes // IO_ALIGN) * IO_ALIGN for s in ins + outs)
    const = own_weight_bytes(compiled) if shared_bytes is not None else compiled.plan.weight_size
    blob.constSize = -(-const // 4096) * 4096
    blob.sharedWeightsSize = -(-(shared_bytes or 0) // 4096) * 4096
    return blob


def _shared_bytes(models: list) -> list[int]:
    """Per graph of a weight-shared binary: the bytes of its weights another graph reads too (same store range)."""
    ranges = [{(off, m.plan.weight_sizes[n]) for n, off in m.plan.weight_offsets.items()} for m in models]
    return [sum(size for _, size in mine & set().union(*(r for j, r in enumerate(ranges) if j != i)))
            for i, mine in enumerate(ranges)]


def _graph_info(compiled: Any, soc: str, shared_bytes: int | None, keep: list) -> QnnSystemContext_GraphInfo_t:
    ins, outs = io_tensors(compiled)
    in_arr, out_arr = (Qnn_Tensor_t * len(ins))(*ins), (Qnn_Tensor_t * len(outs))(*outs)
    blob = _blob(compiled, soc, shared_bytes)
    graph = QnnSystemContext_GraphInfo_t()
    graph.version = C.QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_3
    g = graph.graphInfoV3
    g.graphName = compiled.graph.name.encode()
    g.numGraphInputs, g.graphInputs = len(ins), ctypes.cast(in_arr, POINTER(Qnn_Tensor_t))
    g.numGraphOutputs, g.graphOutputs = len(outs), ctypes.cast(out_arr, POINTER(Qnn_Tensor_t))
    g.graphBlobInfoSize, g.graphBlobInfo = ctypes.sizeof(blob), ctypes.addressof(blob)
    g.endOpIndex = max(len(compiled.graph.nodes) - 1, 0)
    keep.extend([ins, outs, in_arr, out_arr, blob])
    return graph


def binary_info(compiled: Any, size: int, keep: list) -> QnnSystemContext_BinaryInfo_t:
    """The version-3 binary info of a context binary — a `CompiledModel` or a `ContextBinary` of several graphs, one
    graph info each — (every struct it points to is appended to `keep`)."""
    models = list(getattr(compiled, "models", [compiled]))
    first = models[0]
    soc = get_htp_profile(first.soc).name if is_htp_soc(first.soc) else get_htp_profile(None).name
    shared = _shared_bytes(models) if getattr(compiled, "shared", False) else [None] * len(models)
    graphs = (QnnSystemContext_GraphInfo_t * len(models))(*[_graph_info(m, soc, b, keep)
                                                            for m, b in zip(models, shared)])
    info = QnnSystemContext_BinaryInfo_t()
    info.version = C.QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3
    v = info.contextBinaryInfoV3
    api = api_version()
    v.backendId, v.buildId = C.QNN_BACKEND_ID_HTP, BUILD_ID.encode()
    v.coreApiVersion, v.backendApiVersion = api.coreApiVersion, api.backendApiVersion
    v.socVersion = soc.encode()
    v.contextBlobVersion = Qnn_Version_t(1, 0, 0)           # npurt's choice: the .npurt container version
    v.contextBlobSize = int(size)
    v.numGraphs, v.graphs = len(models), ctypes.cast(graphs, POINTER(QnnSystemContext_GraphInfo_t))
    v.socModel = get_htp_profile(soc).soc_model
    keep.extend([graphs, info])
    return info


class QnnSystemInterfaceTable:
    """`QnnSystemInterface_ImplementationV1_15_t`: the system-context functions."""

    def systemContextCreate(self, sysCtxHandle: Any) -> int:
        """QnnSystemContext_create(&handle)."""
        if not set_handle(sysCtxHandle, SystemContext().handle):
            return C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT
        return C.QNN_SUCCESS

    def systemContextGetBinaryInfo(self, sysCtxHandle: Any, binaryBuffer: Any, binaryBufferSize: int,
                                   binaryInfo: Any, binaryInfoSize: Any = None) -> int:
        """QnnSystemContext_getBinaryInfo(handle, buffer, size, &info, &infoSize): the address of a version-3
        `QnnSystemContext_BinaryInfo_t` for an npurt context binary (`npurt convert ... -o model.bin`)."""
        sc = lookup(sysCtxHandle, SystemContext)
        if sc is None:
            log.error("<E> systemContextGetBinaryInfo: invalid system context handle")
            return C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_HANDLE
        size = int(binaryBufferSize or 0)
        if as_struct(binaryInfo, ctypes.c_void_p) is None or binaryBuffer is None or size <= 0:
            log.error("<E> systemContextGetBinaryInfo: binaryBuffer, binaryBufferSize and binaryInfo are required")
            return C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT
        data = bytes(binaryBuffer[:size]) if isinstance(binaryBuffer, (bytes, bytearray)) else \
            safe_read(pointer_value(binaryBuffer), size)
        if data is None or len(data) < size:
            log.error("<E> systemContextGetBinaryInfo: binaryBuffer is not %d readable bytes", size)
            return C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_ARGUMENT
        try:
            if not is_npurt(data) and not context_binary.is_context_binary(data):
                log.error("<E> systemContextGetBinaryInfo: %s", foreign_binary(size))
                return C.QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY
            compiled = context_binary.decode(data)
        except NpuError as exc:
            log.error("<E> systemContextGetBinaryInfo: malformed context binary: %s", exc)
            return C.QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY
        info = binary_info(compiled, size, sc.keep)
        set_handle(binaryInfo, ctypes.addressof(info))
        size_cell = as_struct(binaryInfoSize, ctypes.c_uint64)
        if size_cell is not None:
            size_cell.value = ctypes.sizeof(info)
        return C.QNN_SUCCESS

    def systemProfileCreateSerializationTarget(self, target: Any, configs: Any, numConfigs: int,
                                               serializationTarget: Any) -> int:
        """QnnSystemProfile_createSerializationTarget(target, configs, n, &handle): a FILE target (the directory must
        exist; the file is created or appended to)."""
        try:
            t = target if isinstance(target, QnnSystemProfile_SerializationTarget_t) else \
                _read(QnnSystemProfile_SerializationTarget_t, pointer_value(target))
            if int(t.type) != 1:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"serialization target type {int(t.type)} (FILE is 1)")
            name, folder = _text(t.file.fileName), _text(t.file.fileDirectory)
            if not name or (folder and not os.path.isdir(folder)):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"file {name!r} in directory {folder!r}: no such place")
            header: dict = {}
            max_messages = None
            size = ctypes.sizeof(QnnSystemProfile_SerializationTargetConfig_t)
            for i in range(int(numConfigs or 0) if configs else 0):
                cfg = configs[i] if isinstance(configs, (list, tuple, ctypes.Array)) else \
                    _read(QnnSystemProfile_SerializationTargetConfig_t, pointer_value(configs) + i * size)
                if int(cfg.type) == 0:
                    max_messages = int(cfg.maxNumMessages)
                elif int(cfg.type) == 1:
                    h = cfg.serializationHeader
                    header = {"app": _text(h.appName), "app_version": _text(h.appVersion),
                              "backend_version": _text(h.backendVersion)}
                else:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"serialization config type {int(cfg.type)}")
        except NpuError as exc:
            log.error("<E> systemProfileCreateSerializationTarget: %s", exc.message)
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT
        if as_struct(serializationTarget, ctypes.c_void_p) is None:
            log.error("<E> systemProfileCreateSerializationTarget: serializationTarget is NULL")
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT
        set_handle(serializationTarget, SerializationTarget(os.path.join(folder or ".", name), header,
                                                             max_messages).handle)
        return C.QNN_SUCCESS

    def systemProfileSerializeEventData(self, serializationTarget: Any, eventData: Any, numEvents: int) -> int:
        """QnnSystemProfile_serializeEventData(handle, data[], n): one JSON line per QnnSystemProfile_ProfileData_t."""
        st = lookup(serializationTarget, SerializationTarget)
        if st is None:
            log.error("<E> systemProfileSerializeEventData: invalid serialization target handle")
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_HANDLE
        try:
            n = int(numEvents)
            if eventData is None or n < 0 or n > MAX_PROFILE_EVENTS:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"eventData is NULL or numEvents {n} is out of range")
            pointers = list(eventData[:n]) if isinstance(eventData, (list, tuple)) else \
                [_read(c_void_p, pointer_value(eventData) + 8 * i).value for i in range(n)]
            budget = [MAX_PROFILE_EVENTS]
            records = []
            for ptr in pointers:
                data = ptr if isinstance(ptr, QnnSystemProfile_ProfileData_t) else \
                    _read(QnnSystemProfile_ProfileData_t, pointer_value(ptr))
                if int(data.version) != 1:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"profile data version {int(data.version)} (1)")
                h = data.v1.header
                records.append({"graph": _text(h.graphName), "method": int(h.methodType), "start_us": h.startTime,
                                "stop_us": h.stopTime,
                                "events": _events(data.v1.profilingEvents, data.v1.numProfilingEvents, budget)})
            st.write(records)
        except NpuError as exc:
            log.error("<E> systemProfileSerializeEventData: %s", exc.message)
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT
        except OSError as exc:
            log.error("<E> systemProfileSerializeEventData: cannot write %s: %s", st.path, exc)
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_ARGUMENT
        return C.QNN_SUCCESS

    def systemProfileFreeSerializationTarget(self, serializationTarget: Any) -> int:
        """QnnSystemProfile_freeSerializationTarget(handle)."""
        st = lookup(serializationTarget, SerializationTarget)
        if st is None:
            return C.QNN_SYSTEM_COMMON_ERROR_INVALID_HANDLE
        st.free()
        return C.QNN_SUCCESS

    def systemContextFree(self, sysCtxHandle: Any) -> int:
        """QnnSystemContext_free(handle): also frees every binary info it returned."""
        sc = lookup(sysCtxHandle, SystemContext)
        if sc is None:
            return C.QNN_SYSTEM_CONTEXT_ERROR_INVALID_HANDLE
        sc.free()
        return C.QNN_SUCCESS


# ---------------------------------------------------------------------------------------------------------
# profile serialization (QnnSystemProfile.h): the events a client read with profileGet* written to a file
# ---------------------------------------------------------------------------------------------------------
class QnnSystemProfile_SerializationFileHeader_t(Structure):
    _fields_ = [("appName", c_void_p), ("appVersion", c_void_p), ("backendVersion", c_void_p)]


class QnnSystemProfile_SerializationTargetConfig_t(Structure):
    """A serialization target config (32 bytes): MAX_NUM_MESSAGES (0) or SERIALIZATION_HEADER (1)."""

    class _U(Union):
        _fields_ = [("maxNumMessages", c_uint32), ("serializationHeader", QnnSystemProfile_SerializationFileHeader_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("type", c_uint32), ("_u", _U)]


class QnnSystemProfile_SerializationTarget_t(Structure):
    """Where to serialize (24 bytes): type FILE (1) with {fileName, fileDirectory}."""

    class _File(Structure):
        _fields_ = [("fileName", c_void_p), ("fileDirectory", c_void_p)]

    class _U(Union):
        pass

    _U._fields_ = [("file", _File)]
    _anonymous_ = ("_u",)
    _fields_ = [("type", c_uint32), ("_u", _U)]


class QnnSystemProfile_ProfileEventV1_t(Structure):
    """One event to serialize (80 bytes): EVENT_DATA (0) or EXTENDED_EVENT_DATA (1), its sub-events."""


class _EventUnion(Union):
    _fields_ = [("eventData", QnnProfile_EventData_t), ("extendedEventData", QnnProfile_ExtendedEventData_t)]


QnnSystemProfile_ProfileEventV1_t._anonymous_ = ("_u",)
QnnSystemProfile_ProfileEventV1_t._fields_ = [("type", c_uint32), ("_u", _EventUnion),
                                              ("profileSubEventData", c_void_p), ("numSubEvents", c_uint32)]


class QnnSystemProfile_HeaderV1_t(Structure):
    _fields_ = [("startTime", c_uint64), ("stopTime", c_uint64), ("startMem", c_uint64), ("stopMem", c_uint64),
                ("methodType", c_uint32), ("visibility", c_uint32), ("graphName", c_void_p)]


class QnnSystemProfile_ProfileDataV1_t(Structure):
    _fields_ = [("header", QnnSystemProfile_HeaderV1_t), ("profilingEvents", c_void_p),
                ("numProfilingEvents", c_uint32)]


class QnnSystemProfile_ProfileData_t(Structure):
    """Versioned profile data (72 bytes)."""

    class _U(Union):
        _fields_ = [("v1", QnnSystemProfile_ProfileDataV1_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


MAX_PROFILE_EVENTS = 1 << 20        # events read from one serializeEventData call (a bound on a client's counts)


def _read(cls: type, addr: int) -> Any:
    data = safe_read(int(addr or 0), ctypes.sizeof(cls)) if addr else None
    if data is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{cls.__name__} at {int(addr or 0):#x} is not readable")
    return cls.from_buffer_copy(data)


def _text(addr: int) -> str | None:
    if not addr:
        return None
    out = b""
    while len(out) < 4096:
        chunk = safe_read(addr + len(out), 1)
        if chunk is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"string at {addr:#x} is not readable")
        if chunk == b"\0":
            break
        out += chunk
    return out.decode(errors="replace")


def _events(addr: int, count: int, budget: list[int], depth: int = 0) -> list[dict]:
    """The events (and their sub-events) of a ProfileEventV1 array, as plain dicts."""
    if count and (depth > 16 or count > budget[0]):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{count} profile events at depth {depth}: too many / too deep")
    budget[0] -= count
    out = []
    size = ctypes.sizeof(QnnSystemProfile_ProfileEventV1_t)
    for i in range(count):
        ev = _read(QnnSystemProfile_ProfileEventV1_t, addr + i * size)
        if ev.type == 1:
            d = ev.extendedEventData.v1
            item = {"type": d.type, "unit": d.unit, "value": int(d.value.uint64Value), "timestamp_us": d.timestamp,
                    "identifier": _text(d.identifier)}
        elif ev.type == 0:
            d = ev.eventData
            item = {"type": d.type, "unit": d.unit, "value": int(d.value), "identifier": _text(d.identifier)}
        else:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"profile event type {ev.type} (0 or 1)")
        if ev.numSubEvents:
            item["sub_events"] = _events(ev.profileSubEventData, ev.numSubEvents, budget, depth + 1)
        out.append(item)
    return out


class SerializationTarget:
    """A systemProfileCreateSerializationTarget handle: a file that each serializeEventData appends one JSON line
    to (npurt's own format: {"header": ..., "graph", "method", "start_us", "stop_us", "events": [...]}; Qualcomm's
    binary log format is not public)."""

    def __init__(self, path: str, header: dict, max_messages: int | None) -> None:
        self.path, self.header, self.max_messages, self.written = path, header, max_messages, 0
        self.handle = HANDLES.add(self)

    def write(self, records: list[dict]) -> None:
        import json
        with open(self.path, "a", encoding="utf-8") as f:
            for rec in records:
                if self.max_messages is not None and self.written >= self.max_messages:
                    return
                f.write(json.dumps({"header": self.header, **rec}) + "\n")
                self.written += 1

    def free(self) -> None:
        HANDLES.remove(self.handle)


QNN_SYSTEM_INTERFACE_VER_NAME = f"v{C.QNN_SYSTEM_API_VERSION_MAJOR}_{C.QNN_SYSTEM_API_VERSION_MINOR}"


class QnnSystemInterface_t:
    """The system provider: backend id 0, name, system API version, the table under `QNN_SYSTEM_INTERFACE_VER_NAME`."""

    def __init__(self) -> None:
        self.backendId = C.QNN_BACKEND_ID_NULL
        self.providerName = C.QNN_SYSTEM_INTERFACE_PROVIDER_NAME
        self.systemApiVersion = Qnn_Version_t(C.QNN_SYSTEM_API_VERSION_MAJOR, C.QNN_SYSTEM_API_VERSION_MINOR,
                                              C.QNN_SYSTEM_API_VERSION_PATCH)
        setattr(self, QNN_SYSTEM_INTERFACE_VER_NAME, QnnSystemInterfaceTable())


def QnnSystemInterface_getProviders(providerList: Any, numProviders: Any) -> int:
    """`QnnSystemInterface_getProviders(&providerList, &numProviders)`: the one system provider."""
    cell = getattr(numProviders, "_obj", numProviders)
    if not isinstance(providerList, list) or not isinstance(cell, ctypes.c_uint32):
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    providerList[:] = [QnnSystemInterface_t()]
    cell.value = 1
    return C.QNN_SUCCESS
