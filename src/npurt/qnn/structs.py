"""QNN / QNN-HTP structs as ctypes types with the vendor names, field types and order.

Sizes follow the C ABI on x86-64 (checked against the SDK's own x86-64 libQnnHtp.so). The C headers use
anonymous unions; here each such union is a field named `_u` listed in `_anonymous_`, so C-style access works unchanged
(`desc.ionInfo.fd`, `tensor.v1.memHandle`, `htp.sharedBufferConfig.offset`).
"""
from __future__ import annotations

from ctypes import (CFUNCTYPE, POINTER, Structure, Union, c_bool, c_char_p, c_double, c_float, c_int8, c_int16,
                    c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)

# ---------------------------------------------------------------------------------------------
# Scalar typedefs (QnnCommon.h, QnnTypes.h, QnnMem.h, QnnHtpMem.h)
# ---------------------------------------------------------------------------------------------
Qnn_ErrorHandle_t = c_uint64
Qnn_ContextBinarySize_t = c_uint64

# Every QNN handle is an opaque `void*`.
Qnn_Handle_t = c_void_p
Qnn_BackendHandle_t = c_void_p
Qnn_ContextHandle_t = c_void_p
Qnn_DeviceHandle_t = c_void_p
Qnn_GraphHandle_t = c_void_p
Qnn_LogHandle_t = c_void_p
Qnn_MemHandle_t = c_void_p
Qnn_ProfileHandle_t = c_void_p
Qnn_SignalHandle_t = c_void_p

# C enums are 4 bytes on x86-64; all QNN enum values fit in 32 bits.
_enum = c_uint32
Qnn_MemType_t = _enum
QnnHtpMem_Type_t = _enum
Qnn_DataType_t = _enum
Qnn_TensorType_t = _enum
Qnn_TensorMemType_t = _enum
Qnn_TensorVersion_t = _enum
Qnn_TensorDataFormat_t = c_uint32
Qnn_SparseLayoutType_t = _enum
Qnn_Definition_t = _enum
Qnn_QuantizationEncoding_t = _enum
Qnn_Priority_t = _enum
Qnn_ErrorReportingLevel_t = _enum
QnnContext_ConfigOption_t = _enum
QnnContext_PropertyOption_t = _enum
QnnContext_BinaryCompatibilityType_t = _enum
QnnContext_AsyncExecutionQueueDepthType_t = _enum
QnnHtpContext_ConfigOption_t = _enum
QnnHtpContext_GetPropertyOption_t = _enum
QnnHtpContext_ShareResourcesOptimizationType_t = _enum

Qnn_MemInfoCustom_t = c_void_p          # backend-defined; for HTP it points at QnnMemHtp_Descriptor_t
QnnContext_CustomConfig_t = c_void_p    # for HTP it points at QnnHtpContext_CustomConfig_t
QnnContext_CustomProperty_t = c_void_p  # for HTP it points at QnnHtpContext_CustomProperty_t
QnnHtpMem_QurtAddress_t = c_uint32      # an address that exists only on the DSP side


# ---------------------------------------------------------------------------------------------
# Versions (QnnTypes.h)
# ---------------------------------------------------------------------------------------------
class Qnn_Version_t(Structure):
    """major.minor.patch of an API."""

    _fields_ = [("major", c_uint32), ("minor", c_uint32), ("patch", c_uint32)]


class Qnn_ApiVersion_t(Structure):
    """Core and backend API versions reported by a provider (24 bytes)."""

    _fields_ = [("coreApiVersion", Qnn_Version_t), ("backendApiVersion", Qnn_Version_t)]


# ---------------------------------------------------------------------------------------------
# QnnMem.h
# ---------------------------------------------------------------------------------------------
class Qnn_MemShape_t(Structure):
    """Shape of registered memory: rank, dims array, optional UBWC shape-config string."""

    _fields_ = [("numDim", c_uint32), ("dimSize", POINTER(c_uint32)), ("shapeConfig", c_char_p)]


class Qnn_MemIonInfo_t(Structure):
    """ION / rpcmem memory: one fd per handle."""

    _fields_ = [("fd", c_int32)]


class Qnn_MemDmaBufInfo_t(Structure):
    """DMA-BUF memory: the fd and the app's own mapping of it."""

    _fields_ = [("fd", c_int32), ("data", c_void_p)]


class _Qnn_MemDescriptorUnion(Union):
    """Per-memType payload of Qnn_MemDescriptor_t."""

    _fields_ = [("ionInfo", Qnn_MemIonInfo_t),
                ("customInfo", Qnn_MemInfoCustom_t),
                ("dmaBufInfo", Qnn_MemDmaBufInfo_t)]


class Qnn_MemDescriptor_t(Structure):
    """What QnnMem_register is asked to register (48 bytes; union at offset 32)."""

    _anonymous_ = ("_u",)
    _fields_ = [("memShape", Qnn_MemShape_t),
                ("dataType", Qnn_DataType_t),
                ("memType", Qnn_MemType_t),
                ("_u", _Qnn_MemDescriptorUnion)]


# ---------------------------------------------------------------------------------------------
# QnnHtpMem.h
# ---------------------------------------------------------------------------------------------
class QnnHtpMem_SharedBufferConfig_t(Structure):
    """One tensor's place in a shared buffer: the buffer's fd and the byte offset into it."""

    _fields_ = [("fd", c_int32), ("offset", c_uint64)]


class _QnnMemHtp_DescriptorUnion(Union):
    """Per-type payload of QnnMemHtp_Descriptor_t.

    The first four members are the SDK 2.43 header's. The last three are spelled as in the newest
    Shared Buffer Tutorial, which no public header carries yet: `spillfillBufferConfig` (the
    tutorial's name for the header's `sharedSpillfillBufferConfig`) and the two QuRT-address members
    of the native (non-RPC) spill-fill / VTCM-backup flow. Their placement in this union is npurt's
    own choice (the only one that leaves the public layout unchanged).
    """

    _fields_ = [("qurtAddress", QnnHtpMem_QurtAddress_t),
                ("sharedBufferConfig", QnnHtpMem_SharedBufferConfig_t),
                ("weightsBufferConfig", QnnHtpMem_SharedBufferConfig_t),
                ("sharedSpillfillBufferConfig", QnnHtpMem_SharedBufferConfig_t),
                ("spillfillBufferConfig", QnnHtpMem_SharedBufferConfig_t),
                ("sharedSpillfillBufferQurtAddress", QnnHtpMem_QurtAddress_t),
                ("sharedVTCMBackupBufferQurtAddress", QnnHtpMem_QurtAddress_t)]


class QnnMemHtp_Descriptor_t(Structure):
    """HTP custom memory descriptor (32 bytes). For SHARED_BUFFER, `size` is the whole buffer."""

    _anonymous_ = ("_u",)
    _fields_ = [("type", QnnHtpMem_Type_t), ("size", c_uint64), ("_u", _QnnMemHtp_DescriptorUnion)]


# The vendor spells this one type "MemHtp" (all its siblings are "HtpMem"). npurt's alias with the
# sibling spelling, for code that expects it; it is the same class.
QnnHtpMem_Descriptor_t = QnnMemHtp_Descriptor_t


# ---------------------------------------------------------------------------------------------
# QnnContext.h / QnnTypes.h context-config payloads
# ---------------------------------------------------------------------------------------------
class Qnn_ErrorReportingConfig_t(Structure):
    """Error-reporting level and storage limit (KB)."""

    _fields_ = [("reportingLevel", Qnn_ErrorReportingLevel_t), ("storageLimit", c_uint32)]


class QnnContext_AsyncExecutionQueueDepth_t(Structure):
    """Async execution queue depth: a type tag and a numeric depth."""

    class _U(Union):
        _fields_ = [("depth", c_uint32)]

    _anonymous_ = ("_u",)
    _fields_ = [("type", QnnContext_AsyncExecutionQueueDepthType_t), ("_u", _U)]


class _QnnContext_ConfigUnion(Union):
    """Per-option payload of QnnContext_Config_t."""

    _fields_ = [("customConfig", QnnContext_CustomConfig_t),
                ("priority", Qnn_Priority_t),
                ("errorConfig", Qnn_ErrorReportingConfig_t),
                ("oemString", c_char_p),
                ("asyncExeQueueDepth", QnnContext_AsyncExecutionQueueDepth_t),
                ("enableGraphs", POINTER(c_char_p)),
                ("memoryLimitHint", c_uint64),
                ("isPersistentBinary", c_uint8),
                ("binaryCompatibilityType", QnnContext_BinaryCompatibilityType_t),
                ("isGraphInitDeferred", c_uint8),
                ("graphRetentionOrder", POINTER(c_char_p))]


class QnnContext_Config_t(Structure):
    """One context config option (16 bytes; union at offset 8). Lists are NULL-terminated."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", QnnContext_ConfigOption_t), ("_u", _QnnContext_ConfigUnion)]


class _QnnContext_PropertyUnion(Union):
    """Per-option payload of QnnContext_Property_t."""

    _fields_ = [("customProperty", QnnContext_CustomProperty_t)]


class QnnContext_Property_t(Structure):
    """One context property query (16 bytes); the backend fills the payload."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", QnnContext_PropertyOption_t), ("_u", _QnnContext_PropertyUnion)]


QnnContext_ParamsVersion_t = _enum
QnnContext_createFromBinaryAsyncNotifyType_t = _enum
# void (*)(context, graph, graphName, notifyType, notifyParam, status)
QnnContext_createFromBinaryNotifyFn_t = CFUNCTYPE(None, c_void_p, c_void_p, c_char_p,
                                                  QnnContext_createFromBinaryAsyncNotifyType_t, c_void_p, c_uint64)


class QnnContext_ParamsV1_t(Structure):
    """One binary of contextCreateFromBinaryListAsync: its configs, bytes, profile and notify callback (48 B)."""

    _fields_ = [("config", c_void_p),                   # const QnnContext_Config_t** (NULL-terminated)
                ("binaryBuffer", c_void_p),
                ("binaryBufferSize", c_uint64),
                ("profile", Qnn_ProfileHandle_t),
                ("notifyFunc", c_void_p),                # QnnContext_createFromBinaryNotifyFn_t
                ("notifyParam", c_void_p)]


class _QnnContext_ParamsUnion(Union):
    _fields_ = [("v1", QnnContext_ParamsV1_t)]


class QnnContext_Params_t(Structure):
    """Versioned context params (version @0, v1 @8; 56 B): one entry of the NULL-terminated list."""

    _anonymous_ = ("_u",)
    _fields_ = [("version", QnnContext_ParamsVersion_t), ("_u", _QnnContext_ParamsUnion)]


# ---------------------------------------------------------------------------------------------
# QnnHtpContext.h
# ---------------------------------------------------------------------------------------------
class QnnHtpContext_GroupRegistration_t(Structure):
    """Spill-fill group: first context of the group (NULL for a new group) and its max buffer."""

    _fields_ = [("firstGroupHandle", Qnn_ContextHandle_t), ("maxSpillFillBuffer", c_uint64)]


class _QnnHtpContext_CustomConfigUnion(Union):
    """Per-option payload of QnnHtpContext_CustomConfig_t."""

    _fields_ = [("weightSharingEnabled", c_bool),
                ("groupRegistration", QnnHtpContext_GroupRegistration_t),
                ("fileReadMemoryBudgetInMb", c_uint64),
                ("dspMemoryProfilingEnabled", c_bool),
                ("shareResources", c_bool),
                ("ioMemEstimation", c_bool),
                ("isPrepareOnly", c_bool),
                ("initAcceleration", c_bool),
                ("skipValidationOnBinarySection", c_bool),
                ("shareResOptType", QnnHtpContext_ShareResourcesOptimizationType_t),
                ("useExtendedUdma", c_bool),
                ("concurrentGroupRegistration", QnnHtpContext_GroupRegistration_t),
                ("loraWeightSharingEnabled", c_bool)]


class QnnHtpContext_CustomConfig_t(Structure):
    """HTP context config, reached through QNN_CONTEXT_CONFIG_OPTION_CUSTOM (24 bytes)."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", QnnHtpContext_ConfigOption_t), ("_u", _QnnHtpContext_CustomConfigUnion)]


class _QnnHtpContext_CustomPropertyUnion(Union):
    """Per-option answer of QnnHtpContext_CustomProperty_t.

    `vtcmBackupBufferSize` is the newest tutorial's member for the VTCM-backup size property; it
    is in no public header (npurt's own addition, same u64 slot as its siblings).
    """

    _fields_ = [("bufferStartAlignment", c_uint64),
                ("spillfillBufferSize", c_uint64),
                ("weightsBufferSize", c_uint64),
                ("vtcmBackupBufferSize", c_uint64)]


class QnnHtpContext_CustomProperty_t(Structure):
    """HTP context property, reached through QNN_CONTEXT_PROPERTY_OPTION_CUSTOM (u32; u64)."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", QnnHtpContext_GetPropertyOption_t),
                ("_u", _QnnHtpContext_CustomPropertyUnion)]


# ---------------------------------------------------------------------------------------------
# QnnHtpSystemContext.h: per-graph sizes stored in a context binary
# ---------------------------------------------------------------------------------------------
class QnnHtpSystemContext_HwBlobInfoV1_t(Structure):
    """Hardware blob info V1: graph index and its spill-fill size."""

    _fields_ = [("graphListIndex", c_uint32), ("spillFillBufferSize", c_uint64)]


class QnnHtpSystemContext_GraphBlobInfoV1_t(Structure):
    """Graph blob info V1 (the x86 library stores vtcmSize in bytes, the header says MB)."""

    _fields_ = [("spillFillBufferSize", c_uint64),
                ("vtcmSize", c_uint32),
                ("optimizationLevel", c_uint32),
                ("htpDlbc", c_uint8),
                ("numHvxThreads", c_uint64)]


class QnnHtpSystemContext_GraphBlobInfoV2_t(Structure):
    """Graph blob info V2: the memory sizes a planner needs (I/O, op data, weights, ...)."""

    _fields_ = [("nativeKChannelSize", c_uint64),
                ("nativeVChannelSize", c_uint64),
                ("isSafeShareIO", c_uint32),
                ("ioTensorSize", c_uint64),
                ("opDataSize", c_uint64),
                ("constSize", c_uint64),
                ("ddrTensorSize", c_uint64),
                ("sharedWeightsSize", c_uint64)]


# ---------------------------------------------------------------------------------------------
# QnnTypes.h: quantisation
# ---------------------------------------------------------------------------------------------
class Qnn_ScaleOffset_t(Structure):
    """Affine quantisation: float = (q + offset) * scale."""

    _fields_ = [("scale", c_float), ("offset", c_int32)]


class Qnn_AxisScaleOffset_t(Structure):
    """Per-axis scale/offset pairs."""

    _fields_ = [("axis", c_int32), ("numScaleOffsets", c_uint32),
                ("scaleOffset", POINTER(Qnn_ScaleOffset_t))]


class Qnn_BwScaleOffset_t(Structure):
    """Scale/offset with a true bit width."""

    _fields_ = [("bitwidth", c_uint32), ("scale", c_float), ("offset", c_int32)]


class Qnn_BwAxisScaleOffset_t(Structure):
    """Per-axis scales/offsets with a common bit width (32 bytes: sets the union size)."""

    _fields_ = [("bitwidth", c_uint32), ("axis", c_int32), ("numElements", c_uint32),
                ("scales", POINTER(c_float)), ("offsets", POINTER(c_int32))]


class Qnn_BlockEncoding_t(Structure):
    """Block quantisation: block dims and one scale/offset per block."""

    _fields_ = [("blockSize", POINTER(c_uint32)), ("scaleOffset", POINTER(Qnn_ScaleOffset_t))]


class Qnn_FloatScaleOffset_t(Structure):
    """Float scale and float offset."""

    _fields_ = [("scale", c_float), ("offset", c_float)]


class Qnn_FloatBlockEncoding_t(Structure):
    """Float block quantisation."""

    _fields_ = [("blockSize", POINTER(c_uint32)),
                ("floatScaleOffset", POINTER(Qnn_FloatScaleOffset_t))]


class Qnn_BwFloatBlockEncoding_t(Structure):
    """Float block quantisation with a bit width."""

    _fields_ = [("bitwidth", c_uint32), ("blockSize", POINTER(c_uint32)),
                ("floatScaleOffset", POINTER(Qnn_FloatScaleOffset_t))]


class _Qnn_QuantizeParamsUnion(Union):
    """Per-encoding payload; the pointer-typed encodings are opaque `void*` here."""

    _fields_ = [("scaleOffsetEncoding", Qnn_ScaleOffset_t),
                ("axisScaleOffsetEncoding", Qnn_AxisScaleOffset_t),
                ("bwScaleOffsetEncoding", Qnn_BwScaleOffset_t),
                ("bwAxisScaleOffsetEncoding", Qnn_BwAxisScaleOffset_t),
                ("blockEncoding", Qnn_BlockEncoding_t),
                ("blockwiseExpansion", c_void_p),
                ("vectorEncoding", c_void_p),
                ("floatBlockEncoding", Qnn_FloatBlockEncoding_t),
                ("bwAxisScaleOffsetMappedEncoding", c_void_p),
                ("bwBlockMappedEncoding", c_void_p),
                ("bwBlockwiseExpansionMappedEncoding", c_void_p),
                ("bwFloatBlockEncoding", Qnn_BwFloatBlockEncoding_t)]


class Qnn_QuantizeParams_t(Structure):
    """Quantisation of a tensor (40 bytes; the union is 8-aligned at offset 8)."""

    _anonymous_ = ("_u",)
    _fields_ = [("encodingDefinition", Qnn_Definition_t),
                ("quantizationEncoding", Qnn_QuantizationEncoding_t),
                ("_u", _Qnn_QuantizeParamsUnion)]


# ---------------------------------------------------------------------------------------------
# QnnTypes.h: tensors
# ---------------------------------------------------------------------------------------------
class Qnn_ClientBuffer_t(Structure):
    """A RAW tensor's data: client pointer and byte size (uint32)."""

    _fields_ = [("data", c_void_p), ("dataSize", c_uint32)]


class Qnn_TensorRetrieveRaw_t(Structure):
    """Callbacks that lend / take back a RETRIEVE_RAW tensor's data (opaque function pointers)."""

    _fields_ = [("getTensorData", c_void_p), ("freeTensorData", c_void_p)]


class Qnn_SparseLayoutHybridCoo_t(Structure):
    """Hybrid COO sparse layout parameters."""

    _fields_ = [("numSpecifiedElements", c_uint32), ("numSparseDimensions", c_uint32)]


class Qnn_SparseParams_t(Structure):
    """Sparse tensor parameters (12 bytes)."""

    class _U(Union):
        _fields_ = [("hybridCoo", Qnn_SparseLayoutHybridCoo_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("type", Qnn_SparseLayoutType_t), ("_u", _U)]


class _Qnn_TensorV1Union(Union):
    """Where a V1 tensor's data is: client buffer (RAW) or registered handle (MEMHANDLE)."""

    _fields_ = [("clientBuf", Qnn_ClientBuffer_t), ("memHandle", Qnn_MemHandle_t)]


class _Qnn_TensorV2Union(Union):
    """As the V1 union, plus the RETRIEVE_RAW callbacks."""

    _fields_ = [("clientBuf", Qnn_ClientBuffer_t), ("memHandle", Qnn_MemHandle_t),
                ("retrieveRaw", POINTER(Qnn_TensorRetrieveRaw_t))]


_TENSOR_V1_FIELDS = [("id", c_uint32),
                     ("name", c_char_p),
                     ("type", Qnn_TensorType_t),
                     ("dataFormat", Qnn_TensorDataFormat_t),
                     ("dataType", Qnn_DataType_t),
                     ("quantizeParams", Qnn_QuantizeParams_t),
                     ("rank", c_uint32),
                     ("dimensions", POINTER(c_uint32)),
                     ("memType", Qnn_TensorMemType_t)]


class Qnn_TensorV1_t(Structure):
    """A V1 tensor (112 bytes)."""

    _anonymous_ = ("_u",)
    _fields_ = _TENSOR_V1_FIELDS + [("_u", _Qnn_TensorV1Union)]


class Qnn_TensorV2_t(Structure):
    """A V2 tensor: V1 plus dynamic dims, sparsity and the isProduced flag (136 bytes)."""

    _anonymous_ = ("_u",)
    _fields_ = _TENSOR_V1_FIELDS + [("_u", _Qnn_TensorV2Union),
                                    ("isDynamicDimensions", POINTER(c_uint8)),
                                    ("sparseParams", Qnn_SparseParams_t),
                                    ("isProduced", c_uint8)]


class _Qnn_TensorUnion(Union):
    """The versioned tensor body."""

    _fields_ = [("v1", Qnn_TensorV1_t), ("v2", Qnn_TensorV2_t)]


class Qnn_Tensor_t(Structure):
    """A versioned tensor (144 bytes); QNN_TENSOR_INIT means version 1."""

    _anonymous_ = ("_u",)
    _fields_ = [("version", Qnn_TensorVersion_t), ("_u", _Qnn_TensorUnion)]


# ---------------------------------------------------------------------------------------------
# QnnTypes.h: op configs (graphAddNode, backendValidateOpConfig) and QnnGraph.h configs
# ---------------------------------------------------------------------------------------------
Qnn_ParamType_t = _enum
Qnn_OpConfigVersion_t = _enum
QnnGraph_ConfigOption_t = _enum


class _Qnn_ScalarUnion(Union):
    """A scalar param's value, by its data type."""

    _fields_ = [("floatValue", c_float), ("doubleValue", c_double), ("uint64Value", c_uint64),
                ("int64Value", c_int64), ("uint32Value", c_uint32), ("int32Value", c_int32),
                ("uint16Value", c_uint16), ("int16Value", c_int16), ("uint8Value", c_uint8),
                ("int8Value", c_int8), ("bool8Value", c_uint8), ("stringValue", c_char_p)]


class Qnn_Scalar_t(Structure):
    """A scalar param: its data type and value (16 bytes)."""

    _anonymous_ = ("_u",)
    _fields_ = [("dataType", Qnn_DataType_t), ("_u", _Qnn_ScalarUnion)]


class _Qnn_ParamUnion(Union):
    _fields_ = [("scalarParam", Qnn_Scalar_t), ("tensorParam", Qnn_Tensor_t)]


class Qnn_Param_t(Structure):
    """A named op param: a scalar or a (STATIC) tensor (160 bytes; the union at offset 16)."""

    _anonymous_ = ("_u",)
    _fields_ = [("paramType", Qnn_ParamType_t), ("name", c_char_p), ("_u", _Qnn_ParamUnion)]


class Qnn_OpConfigV1_t(Structure):
    """One op: name, package, type, params, input and output tensors (72 bytes)."""

    _fields_ = [("name", c_char_p), ("packageName", c_char_p), ("typeName", c_char_p),
                ("numOfParams", c_uint32), ("params", POINTER(Qnn_Param_t)),
                ("numOfInputs", c_uint32), ("inputTensors", POINTER(Qnn_Tensor_t)),
                ("numOfOutputs", c_uint32), ("outputTensors", POINTER(Qnn_Tensor_t))]


class _Qnn_OpConfigUnion(Union):
    _fields_ = [("v1", Qnn_OpConfigV1_t)]


class Qnn_OpConfig_t(Structure):
    """A versioned op config (80 bytes), passed by value to graphAddNode and backendValidateOpConfig."""

    _anonymous_ = ("_u",)
    _fields_ = [("version", Qnn_OpConfigVersion_t), ("_u", _Qnn_OpConfigUnion)]


class _QnnGraph_ConfigUnion(Union):
    _fields_ = [("customConfig", c_void_p), ("priority", Qnn_Priority_t), ("profileHandle", c_void_p),
                ("numProfilingExecutions", c_uint64)]


class QnnGraph_Config_t(Structure):
    """One graph config option (16 bytes); lists are NULL-terminated arrays of pointers."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", QnnGraph_ConfigOption_t), ("_u", _QnnGraph_ConfigUnion)]


class QnnHtpGraph_OptimizationOption_t(Structure):
    """HTP graph OPTIMIZATION config: {type, floatValue} (FINALIZE_OPTIMIZATION_FLAG = 3 carries the level)."""

    _fields_ = [("type", c_uint32), ("floatValue", c_float)]


class _QnnHtpGraph_CustomConfigUnion(Union):
    _fields_ = [("optimizationOption", QnnHtpGraph_OptimizationOption_t), ("precision", c_uint32),
                ("vtcmSizeInMB", c_uint32), ("_align", c_uint64)]         # the union sits at offset 8


class QnnHtpGraph_CustomConfig_t(Structure):
    """What a QNN_GRAPH_CONFIG_OPTION_CUSTOM config points at on HTP: {option @0, union @8}."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", c_uint32), ("_u", _QnnHtpGraph_CustomConfigUnion)]


class QnnHtpDevice_DeviceArch_t(Structure):
    """HTP device ARCH config payload: {deviceId, arch (68 = V68, ...)}."""

    _fields_ = [("deviceId", c_uint32), ("arch", c_uint32)]


class _QnnHtpDevice_CustomConfigUnion(Union):
    _fields_ = [("socModel", c_uint32), ("arch", QnnHtpDevice_DeviceArch_t), ("useSignedProcessDomain", c_bool),
                ("_align", c_uint64)]                                     # the union sits at offset 8


class QnnHtpDevice_CustomConfig_t(Structure):
    """What a QNN_DEVICE_CONFIG_OPTION_CUSTOM config points at on HTP: {option @0, union @8} (SOC, ARCH, ...)."""

    _anonymous_ = ("_u",)
    _fields_ = [("option", c_uint32), ("_u", _QnnHtpDevice_CustomConfigUnion)]


class QnnDevice_Config_t(Structure):
    """One deviceCreate config option: {option @0, customConfig / hardwareInfo pointer @8}."""

    _fields_ = [("option", c_uint32), ("customConfig", c_void_p)]


# ---------------------------------------------------------------------------------------------
# QnnDevice.h / QnnHtpDevice.h: what deviceGetPlatformInfo reports (layouts measured on the SDK's x86-64 library)
# ---------------------------------------------------------------------------------------------
class QnnHtpDevice_OnChipDeviceInfoExtension_t(Structure):
    """HTP on-chip device facts: VTCM size (MB), SoC model, signed-PD and DLBC support, Hexagon arch."""

    _fields_ = [("vtcmSize", c_uint64), ("socModel", c_uint32), ("signedPdSupport", c_bool),
                ("dlbcSupport", c_bool), ("arch", c_uint32)]


class QnnHtpDevice_DeviceInfoExtension_t(Structure):
    """HTP device extension: device type (0 = on chip) and its facts (devType@0, vtcmSize@8, socModel@16)."""

    class _U(Union):
        _fields_ = [("onChipDevice", QnnHtpDevice_OnChipDeviceInfoExtension_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("devType", c_uint32), ("_u", _U)]


class QnnDevice_CoreInfoV1_t(Structure):
    """One core: id, type, backend extension."""

    _fields_ = [("coreId", c_uint32), ("coreType", c_uint32), ("coreInfoExtension", c_void_p)]


class QnnDevice_CoreInfo_t(Structure):
    """A versioned core description."""

    class _U(Union):
        _fields_ = [("v1", QnnDevice_CoreInfoV1_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


class QnnDevice_HardwareDeviceInfoV1_t(Structure):
    """One hardware device: id, type, cores, backend extension."""

    _fields_ = [("deviceId", c_uint32), ("deviceType", c_uint32), ("numCores", c_uint32),
                ("cores", POINTER(QnnDevice_CoreInfo_t)), ("deviceInfoExtension", c_void_p)]


class QnnDevice_HardwareDeviceInfo_t(Structure):
    """A versioned hardware device description (deviceId@8, deviceType@12, numCores@16, cores@24, extension@32)."""

    class _U(Union):
        _fields_ = [("v1", QnnDevice_HardwareDeviceInfoV1_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


class QnnDevice_PlatformInfoV1_t(Structure):
    """The devices of the platform."""

    _fields_ = [("numHwDevices", c_uint32), ("hwDevices", POINTER(QnnDevice_HardwareDeviceInfo_t))]


class QnnDevice_PlatformInfo_t(Structure):
    """What deviceGetPlatformInfo returns (numHwDevices@8, hwDevices@16)."""

    class _U(Union):
        _fields_ = [("v1", QnnDevice_PlatformInfoV1_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


# ---------------------------------------------------------------------------------------------
# QnnTypes.h scalars, QnnProfile.h events, QnnHtpPerfInfrastructure.h power / memory configs
# ---------------------------------------------------------------------------------------------
class Qnn_OpaqueObject_t(Structure):
    """An opaque blob: data pointer and length."""

    _fields_ = [("data", c_void_p), ("len", c_uint64)]


class QnnProfile_EventData_t(Structure):
    """One event's data (24 bytes): type, unit, value, identifier."""

    _fields_ = [("type", c_uint32), ("unit", c_uint32), ("value", c_uint64), ("identifier", c_void_p)]


class QnnProfile_BackendOpaqueObject_t(Structure):
    """A backend object an OBJECT-unit event carries."""

    _fields_ = [("opaqueObject", Qnn_OpaqueObject_t), ("fileName", c_char_p)]


class QnnProfile_ExtendedEventDataV1_t(Structure):
    """Extended event data (48 bytes): type, unit, value as a scalar (or an object), timestamp (µs), identifier."""

    class _U(Union):
        _fields_ = [("value", Qnn_Scalar_t), ("backendOpaqueObject", QnnProfile_BackendOpaqueObject_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("type", c_uint32), ("unit", c_uint32), ("_u", _U), ("timestamp", c_uint64),
                ("identifier", c_void_p)]


class QnnProfile_ExtendedEventData_t(Structure):
    """Versioned extended event data (56 bytes)."""

    class _U(Union):
        _fields_ = [("v1", QnnProfile_ExtendedEventDataV1_t)]

    _anonymous_ = ("_u",)
    _fields_ = [("version", c_uint32), ("_u", _U)]


class QnnProfile_Config_t(Structure):
    """A profile config (16 bytes): option, then customConfig / numMaxEvents / enableOptrace."""

    class _U(Union):
        _fields_ = [("customConfig", c_void_p), ("numMaxEvents", c_uint64), ("enableOptrace", c_uint8)]

    _anonymous_ = ("_u",)
    _fields_ = [("option", c_uint32), ("_u", _U)]


class QnnHtpPerfInfrastructure_DcvsV3_t(Structure):
    """DCVS v3 settings: sixteen uint32 fields (64 bytes)."""

    _fields_ = [(name, c_uint32) for name in (
        "contextId", "setDcvsEnable", "dcvsEnable", "powerMode", "setSleepLatency", "sleepLatency",
        "setSleepDisable", "sleepDisable", "setBusParams", "busVoltageCornerMin", "busVoltageCornerTarget",
        "busVoltageCornerMax", "setCoreParams", "coreVoltageCornerMin", "coreVoltageCornerTarget",
        "coreVoltageCornerMax")]


class QnnHtpPerfInfrastructure_PowerConfig_t(Structure):
    """A power config (68 bytes): option, then DCVS v3 / RPC control latency / RPC polling time / HMX timeout."""

    class _U(Union):
        _fields_ = [("dcvsV3Config", QnnHtpPerfInfrastructure_DcvsV3_t), ("rpcControlLatencyConfig", c_uint32),
                    ("rpcPollingTimeConfig", c_uint32), ("hmxTimeoutIntervalUsConfig", c_uint32)]

    _anonymous_ = ("_u",)
    _fields_ = [("option", c_uint32), ("_u", _U)]


class QnnHtpPerfInfrastructure_MemoryConfig_t(Structure):
    """A memory config (8 bytes): option, memGrowSizeConfig."""

    class _U(Union):
        _fields_ = [("memGrowSizeConfig", c_uint32)]

    _anonymous_ = ("_u",)
    _fields_ = [("option", c_uint32), ("_u", _U)]


__all__ = sorted(n for n in globals() if n.startswith("Qnn"))
