"""ABI of the QNN mirror: constant values, struct sizes/offsets and error names (the QNN SDK
headers, and the layouts measured on the SDK's x86-64 libQnnHtp.so)."""
from __future__ import annotations

import ctypes

import pytest

import npurt.qnn as qnn
from npurt.qnn import constants as C
from npurt.qnn import structs as S


# --- constants: spot checks of every enum group ------------------------------------------------

@pytest.mark.parametrize("name, value", [
    # Qnn_MemType_t
    ("QNN_MEM_TYPE_ION", 1), ("QNN_MEM_TYPE_CUSTOM", 2), ("QNN_MEM_TYPE_DMA_BUF", 3),
    ("QNN_MEM_TYPE_UNDEFINED", 0x7FFFFFFF), ("QNN_MEM_INVALID_FD", -1),
    # QnnHtpMem_Type_t
    ("QNN_HTP_MEM_QURT", 0), ("QNN_HTP_MEM_SHARED_BUFFER", 1), ("QNN_HTP_MEM_WEIGHTS_BUFFER", 2),
    ("QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER", 3), ("QNN_HTP_MEM_UNDEFINED", 0x7FFFFFFF),
    # QnnContext_ConfigOption_t
    ("QNN_CONTEXT_CONFIG_OPTION_CUSTOM", 0), ("QNN_CONTEXT_CONFIG_OPTION_PRIORITY", 1),
    ("QNN_CONTEXT_CONFIG_ASYNC_EXECUTION_QUEUE_DEPTH", 4), ("QNN_CONTEXT_CONFIG_MEMORY_LIMIT_HINT", 6),
    ("QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT", 9), ("QNN_CONTEXT_CONFIG_GRAPH_RETENTION_ORDER", 10),
    ("QNN_CONTEXT_CONFIG_UNDEFINED", 0x7FFFFFFF),
    ("QNN_CONTEXT_BINARY_COMPATIBILITY_PERMISSIVE", 0), ("QNN_CONTEXT_BINARY_COMPATIBILITY_STRICT", 1),
    # context properties
    ("QNN_CONTEXT_PROPERTY_OPTION_CUSTOM", 0), ("QNN_CONTEXT_PROPERTY_OPTION_UNDEFINED", 0x7FFFFFFF),
    # QnnHtpContext_ConfigOption_t
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED", 1),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS", 2),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_FILE_READ_MEMORY_BUDGET", 3),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES", 5),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE", 10),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING", 12),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_LORA_WEIGHT_SHARING_ENABLED", 13),
    ("QNN_HTP_CONTEXT_CONFIG_OPTION_UNKNOWN", 0x7FFFFFFF),
    ("SEQUENTIAL_WITH_VA_OPTIMIZATION", 0), ("SEQUENTIAL_WITHOUT_VA_OPTIMIZATION", 1),
    ("CONCURRENT_OPTIMIZATION", 2),
    # QnnHtpContext_GetPropertyOption_t
    ("QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT", 1),
    ("QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE", 2),
    ("QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE", 3),
    ("QNN_HTP_CONTEXT_GET_PROP_RESERVED_4", 4), ("QNN_HTP_CONTEXT_GET_PROP_RESERVED_5", 5),
    ("QNN_HTP_CONTEXT_GET_PROP_UNDEFINED", 0x7FFFFFFF),
    # Qnn_DataType_t
    ("QNN_DATATYPE_INT_8", 0x0008), ("QNN_DATATYPE_UINT_8", 0x0108), ("QNN_DATATYPE_INT_64", 0x0064),
    ("QNN_DATATYPE_FLOAT_16", 0x0216), ("QNN_DATATYPE_BFLOAT_16", 0x0226),
    ("QNN_DATATYPE_FLOAT_32", 0x0232), ("QNN_DATATYPE_SFIXED_POINT_8", 0x0308),
    ("QNN_DATATYPE_UFIXED_POINT_4", 0x0404), ("QNN_DATATYPE_UFIXED_POINT_8", 0x0408),
    ("QNN_DATATYPE_UFIXED_POINT_16", 0x0416), ("QNN_DATATYPE_BOOL_8", 0x0508),
    ("QNN_DATATYPE_STRING", 0x0608), ("QNN_DATATYPE_UNDEFINED", 0x7FFFFFFF),
    # Qnn_TensorMemType_t / Qnn_TensorType_t / versions / formats
    ("QNN_TENSORMEMTYPE_RAW", 0), ("QNN_TENSORMEMTYPE_MEMHANDLE", 1),
    ("QNN_TENSORMEMTYPE_RETRIEVE_RAW", 2), ("QNN_TENSORMEMTYPE_UNDEFINED", 0x7FFFFFFF),
    ("QNN_TENSOR_TYPE_APP_WRITE", 0), ("QNN_TENSOR_TYPE_APP_READ", 1), ("QNN_TENSOR_TYPE_NATIVE", 3),
    ("QNN_TENSOR_TYPE_STATIC", 4), ("QNN_TENSOR_TYPE_UPDATEABLE_APP_READWRITE", 10),
    ("QNN_TENSOR_TYPE_OPTIONAL_APP_READWRITE", 13),
    ("QNN_TENSOR_VERSION_1", 1), ("QNN_TENSOR_VERSION_2", 2),
    ("QNN_TENSOR_DATA_FORMAT_DENSE", 0), ("QNN_TENSOR_DATA_FORMAT_FLAT_BUFFER", 0),
    # quantisation
    ("QNN_DEFINITION_IMPL_GENERATED", 0), ("QNN_DEFINITION_DEFINED", 1),
    ("QNN_QUANTIZATION_ENCODING_SCALE_OFFSET", 0), ("QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET", 1),
    ("QNN_QUANTIZATION_ENCODING_BW_FLOAT_BLOCK", 11),
    # rpcmem / fastrpc
    ("RPCMEM_HEAP_ID_SYSTEM", 25), ("RPCMEM_HEAP_ID_CONTIG", 22), ("RPCMEM_HEAP_ID_SECURE", 9),
    ("RPCMEM_HEAP_ID_SYSTEM_CONTIG", 21), ("RPCMEM_DEFAULT_FLAGS", 1), ("RPCMEM_FLAG_UNCACHED", 0),
    ("RPCMEM_FLAG_CACHED", 1), ("RPCMEM_TRY_MAP_STATIC", 0x04000000),
    ("RPCMEM_FORCE_NOFLUSH", 0x01000000), ("RPCMEM_FORCE_NOINVALIDATE", 0x02000000),
    ("RPCMEM_DEFAULT_HEAP", -1), ("RPCMEM_HEAP_DEFAULT", 0x80000000),
    ("RPCMEM_HEAP_NONCOHERENT", 0x08000000),
    ("FASTRPC_MAP_STATIC", 0), ("FASTRPC_MAP_FD", 2), ("FASTRPC_MAP_FD_DELAYED", 3),
    ("FASTRPC_MAP_FD_NOMAP", 16), ("FASTRPC_ATTR_NON_COHERENT", 2),
    ("FASTRPC_ATTR_TRY_MAP_STATIC", 128), ("FASTRPC_ATTR_IMPORT_BUFFER", 256),
    ("CDSP_DOMAIN_ID", 3),
    # identification
    ("QNN_BACKEND_ID_HTP", 6), ("QNN_HTP_INTERFACE_PROVIDER_NAME", "HTP_QTI_AISW"),
    ("QNN_API_VERSION_MAJOR", 2), ("QNN_API_VERSION_MINOR", 40), ("QNN_HTP_API_VERSION_MINOR", 51),
    ("QNN_INTERFACE_VER_NAME", "v2_40"),
    ("QNN_INTERFACE_VER_TYPE", "QnnInterface_ImplementationV2_40_t"),
    ("QNN_PROPERTY_GROUP_DEVICE", 1501), ("QNN_PROPERTY_PROFILE_SUPPORTS_EXTENDED_EVENT", 1404),
    ("QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE", 502),
])
def test_constant_value(name: str, value: object) -> None:
    assert getattr(qnn, name) == value


def test_datatype_low_byte_spells_bit_width() -> None:
    for name in C.__all__:
        # BFLOAT_16 (0x0226) is the header's one exception to the rule the reference states
        if name.startswith("QNN_DATATYPE_") and name not in ("QNN_DATATYPE_UNDEFINED",
                                                            "QNN_DATATYPE_STRING",
                                                            "QNN_DATATYPE_BFLOAT_16"):
            digits = name.rsplit("_", 1)[1]
            assert f"{getattr(C, name) & 0xFF:x}" == digits, name


# --- error codes --------------------------------------------------------------------------------

def test_common_errors() -> None:
    assert C.QNN_SUCCESS == 0
    assert [C.QNN_COMMON_ERROR_NOT_SUPPORTED, C.QNN_COMMON_ERROR_MEM_ALLOC, C.QNN_COMMON_ERROR_SYSTEM,
            C.QNN_COMMON_ERROR_INVALID_ARGUMENT, C.QNN_COMMON_ERROR_OPERATION_NOT_PERMITTED,
            C.QNN_COMMON_ERROR_PLATFORM_NOT_SUPPORTED, C.QNN_COMMON_ERROR_SYSTEM_COMMUNICATION,
            C.QNN_COMMON_ERROR_INCOMPATIBLE_BINARIES, C.QNN_COMMON_ERROR_LOADING_BINARIES,
            C.QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE,
            C.QNN_COMMON_ERROR_SYSTEM_COMMUNICATION_FATAL] == [1000] + list(range(1002, 1012))
    assert C.QNN_COMMON_ERROR_GENERAL == 1100
    assert 1001 not in _public_values_of("QNN_COMMON_ERROR_")         # 1001 is unused


def test_context_errors_5000_to_5014() -> None:
    names = ["INVALID_ARGUMENT", "CTX_DOES_NOT_EXIST", "INVALID_HANDLE", "NOT_FINALIZED",
             "BINARY_VERSION", "CREATE_FROM_BINARY", "GET_BINARY_SIZE_FAILED", "GET_BINARY_FAILED",
             "BINARY_CONFIGURATION", "SET_PROFILE", "INVALID_CONFIG", "BINARY_SUBOPTIMAL",
             "ABORTED", "TIMED_OUT", "INCREMENT_INVALID_BUFFER"]
    assert [getattr(C, f"QNN_CONTEXT_ERROR_{n}") for n in names] == list(range(5000, 5015))
    assert C.QNN_CONTEXT_NO_ERROR == 0
    assert C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE == 1000 and C.QNN_CONTEXT_ERROR_MEM_ALLOC == 1002
    assert (C.QNN_CONTEXT_MIN_ERROR, C.QNN_CONTEXT_MAX_ERROR) == (5000, 5999)


def test_graph_errors_6000_to_6039() -> None:
    expected = {"INVALID_ARGUMENT": 6000, "INVALID_HANDLE": 6001, "GRAPH_DOES_NOT_EXIST": 6002,
                "INVALID_NAME": 6003, "INVALID_TENSOR": 6004, "INVALID_OP_CONFIG": 6005,
                "SET_PROFILE": 6006, "UNCONNECTED_NODE": 6007, "CREATE_FAILED": 6020,
                "OPTIMIZATION_FAILED": 6021, "FINALIZE_FAILED": 6022, "GRAPH_NOT_FINALIZED": 6023,
                "GRAPH_FINALIZED": 6024, "EXECUTION_ASYNC_FIFO_FULL": 6025, "SIGNAL_IN_USE": 6030,
                "ABORTED": 6031, "PROFILE_IN_USE": 6032, "TIMED_OUT": 6033, "SUBGRAPH": 6034,
                "DISABLED": 6035, "DYNAMIC_TENSOR_SHAPE": 6036, "TENSOR_SPARSITY": 6037,
                "EARLY_TERMINATION": 6038, "INVALID_CONTEXT": 6039,
                "UNSUPPORTED_FEATURE": 1000, "MEM_ALLOC": 1002, "GENERAL": 1100}
    for name, value in expected.items():
        assert getattr(C, f"QNN_GRAPH_ERROR_{name}") == value, name
    assert (C.QNN_GRAPH_MIN_ERROR, C.QNN_GRAPH_MAX_ERROR) == (6000, 6999)


def test_tensor_errors() -> None:
    assert [C.QNN_TENSOR_ERROR_INVALID_HANDLE, C.QNN_TENSOR_ERROR_DOES_NOT_EXIST,
            C.QNN_TENSOR_ERROR_ALREADY_EXISTS, C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM,
            C.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM, C.QNN_TENSOR_ERROR_NAME_HASH_COLLISION,
            C.QNN_TENSOR_ERROR_INCOMPATIBLE_TENSOR_UPDATE] == list(range(7001, 7008))


def test_mem_errors_8000_to_8005() -> None:
    assert [C.QNN_MEM_ERROR_INVALID_ARGUMENT, C.QNN_MEM_ERROR_INVALID_HANDLE,
            C.QNN_MEM_ERROR_ALREADY_REGISTERED, C.QNN_MEM_ERROR_MAPPING,
            C.QNN_MEM_ERROR_INVALID_SHAPE, C.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE] == list(range(8000, 8006))
    assert C.QNN_MEM_ERROR_ALREADY_REGISTERED == 0x1F42
    assert C.QNN_MEM_NO_ERROR == 0 and C.QNN_MEM_ERROR_NOT_SUPPORTED == 1000
    assert (C.QNN_MEM_MIN_ERROR, C.QNN_MEM_MAX_ERROR, C.QNN_MEM_ERROR_UNDEFINED) == (8000, 8999, 0x7FFFFFFF)


def test_error_ranges_are_ordered_and_disjoint() -> None:
    comps = ["COMMON", "PROPERTY", "OP_PACKAGE", "BACKEND", "CONTEXT", "GRAPH", "TENSOR", "MEM",
             "SIGNAL", "ERROR", "LOG", "PROFILE", "PERF_INFRASTRUCTURE", "DEVICE", "GLOBAL_CONFIG",
             "SYSTEM", "INTERFACE"]
    ranges = [(getattr(C, f"QNN_MIN_ERROR_{c}"), getattr(C, f"QNN_MAX_ERROR_{c}")) for c in comps]
    assert ranges[0] == (1000, 1999) and ranges[4] == (5000, 5999) and ranges[7] == (8000, 8999)
    assert ranges[-2] == (30000, 49999) and ranges[-1] == (60000, 60999)
    for (lo, hi), (next_lo, _) in zip(ranges, ranges[1:]):
        assert lo < hi < next_lo
    assert C.QNN_MIN_ERROR_BACKEND < C.QNN_MIN_ERROR_BACKEND_SAVER < C.QNN_MAX_ERROR_BACKEND_SAVER \
        < C.QNN_MAX_ERROR_BACKEND


def test_every_named_error_lies_in_its_range_or_common() -> None:
    for comp in ("CONTEXT", "GRAPH", "TENSOR", "MEM"):
        lo, hi = getattr(C, f"QNN_MIN_ERROR_{comp}"), getattr(C, f"QNN_MAX_ERROR_{comp}")
        for name in C.__all__:
            if name.startswith(f"QNN_{comp}_ERROR_") and not name.endswith("_UNDEFINED"):
                value = getattr(C, name)
                assert lo <= value <= hi or value in (1000, 1002, 1100), name


@pytest.mark.parametrize("code, name", [
    (0, "QNN_SUCCESS"),
    (1000, "QNN_COMMON_ERROR_NOT_SUPPORTED"),
    (1002, "QNN_COMMON_ERROR_MEM_ALLOC"),
    (1100, "QNN_COMMON_ERROR_GENERAL"),
    (5003, "QNN_CONTEXT_ERROR_NOT_FINALIZED"),
    (6004, "QNN_GRAPH_ERROR_INVALID_TENSOR"),
    (6023, "QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED"),
    (6039, "QNN_GRAPH_ERROR_INVALID_CONTEXT"),
    (7007, "QNN_TENSOR_ERROR_INCOMPATIBLE_TENSOR_UPDATE"),
    (8000, "QNN_MEM_ERROR_INVALID_ARGUMENT"),
    (0x1F42, "QNN_MEM_ERROR_ALREADY_REGISTERED"),
    (8005, "QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE"),
    ((0xABCD << 16) | 8003, "QNN_MEM_ERROR_MAPPING"),    # upper tracking bits are ignored
])
def test_error_string(code: int, name: str) -> None:
    assert qnn.error_string(code) == name


def test_error_string_unknown_codes() -> None:
    assert qnn.error_string(8100) == "<unknown QNN MEM error 8100>"
    assert qnn.error_string(14500) == "<unknown QNN DEVICE error 14500>"
    assert qnn.error_string(1001) == "<unknown QNN COMMON error 1001>"
    assert qnn.error_string(17) == "<unknown QNN error 17>"


def test_every_public_error_name_round_trips() -> None:
    for name in C.__all__:
        for comp in ("CONTEXT", "GRAPH", "TENSOR", "MEM"):
            if name.startswith(f"QNN_{comp}_ERROR_") and not name.endswith("_UNDEFINED"):
                value = getattr(C, name)
                if value not in (1000, 1002, 1100):
                    assert qnn.error_string(value) == name


def test_qnn_error_code_masks_low_16_bits() -> None:
    assert qnn.qnn_error_code(0x0000_0001_0000_1F42) == 0x1F42
    assert qnn.qnn_error_code(0xFFFF_FFFF_FFFF_0000) == 0
    assert qnn.qnn_error_code(6004) == 6004
    assert C.QNN_GET_ERROR_CODE is qnn.qnn_error_code
    assert qnn.qnn_error_code(ctypes.c_uint64(0x1234_0000_17A1).value) == 0x17A1


# --- npurt's own choices ------------------------------------------------------------------------

def _public_values_of(prefix: str) -> set[int]:
    return {getattr(C, n) for n in C.__all__
            if n.startswith(prefix) and isinstance(getattr(C, n), int)}


def test_vtcm_backup_values_do_not_collide() -> None:
    mem = C.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER
    prop = C.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE
    public_mem = _public_values_of("QNN_HTP_MEM_") - {mem}
    public_prop = _public_values_of("QNN_HTP_CONTEXT_GET_PROP_") - {prop}
    assert mem not in public_mem and prop not in public_prop
    # not the next sequential slots a future header would take, nor any reserved value
    assert mem not in range(0, 64) and prop not in range(0, 64)
    for value in (mem, prop):
        assert C.NPURT_PRIVATE_ENUM_BASE <= value < C.NPURT_PRIVATE_ENUM_BASE + 0x10000
        assert 0 < value < 0x7FFFFFFF                     # a valid positive 32-bit enum value
        assert value not in {getattr(C, n) for n in C.__all__ if n.endswith("_UNDEFINED")}
    # nothing public uses the private range at all
    public = [getattr(C, n) for n in C.__all__ if isinstance(getattr(C, n), int)
              and n not in ("QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER",
                            "QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE",
                            "NPURT_PRIVATE_ENUM_BASE")]
    assert not [v for v in public if C.NPURT_PRIVATE_ENUM_BASE <= v < C.NPURT_PRIVATE_ENUM_BASE + 0x10000]


def test_vtcm_backup_values_fit_the_enum_field() -> None:
    htp = S.QnnMemHtp_Descriptor_t(type=C.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER)
    assert htp.type == C.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER
    prop = S.QnnHtpContext_CustomProperty_t(option=C.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE)
    assert prop.option == C.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE


# --- struct sizes and offsets (x86-64) ----------------------------------------------------------

@pytest.mark.parametrize("struct, size", [
    ("Qnn_MemShape_t", 24), ("Qnn_MemIonInfo_t", 4), ("Qnn_MemDmaBufInfo_t", 16),
    ("Qnn_MemDescriptor_t", 48), ("QnnHtpMem_SharedBufferConfig_t", 16),
    ("QnnMemHtp_Descriptor_t", 32), ("QnnContext_Config_t", 16), ("QnnContext_Property_t", 16),
    ("QnnHtpContext_CustomProperty_t", 16), ("QnnHtpContext_GroupRegistration_t", 16),
    ("QnnHtpContext_CustomConfig_t", 24), ("Qnn_QuantizeParams_t", 40), ("Qnn_ClientBuffer_t", 16),
    ("Qnn_TensorV1_t", 112), ("Qnn_TensorV2_t", 136), ("Qnn_Tensor_t", 144),
    ("Qnn_ApiVersion_t", 24), ("Qnn_ScaleOffset_t", 8),
    ("QnnHtpSystemContext_GraphBlobInfoV1_t", 32), ("QnnHtpSystemContext_GraphBlobInfoV2_t", 64),
])
def test_struct_size(struct: str, size: int) -> None:
    assert ctypes.sizeof(getattr(qnn, struct)) == size


def _offset(struct: type, path: str) -> int:
    """Byte offset of a dotted path of struct-typed members (through anonymous unions)."""
    obj = struct()
    target = obj
    for part in path.split("."):
        target = getattr(target, part)
    return ctypes.addressof(target) - ctypes.addressof(obj)


def test_mem_descriptor_layout() -> None:
    d = S.Qnn_MemDescriptor_t
    assert (d.memShape.offset, d.dataType.offset, d.memType.offset) == (0, 24, 28)
    assert _offset(d, "ionInfo") == _offset(d, "dmaBufInfo") == 32
    assert d.customInfo.offset == 32                       # anonymous-union member seen at top level
    assert (S.Qnn_MemShape_t.numDim.offset, S.Qnn_MemShape_t.dimSize.offset,
            S.Qnn_MemShape_t.shapeConfig.offset) == (0, 8, 16)


def test_htp_descriptor_layout() -> None:
    h = S.QnnMemHtp_Descriptor_t
    assert (h.type.offset, h.size.offset) == (0, 8)
    cfg = S.QnnHtpMem_SharedBufferConfig_t
    assert _offset(h, "sharedBufferConfig") + cfg.fd.offset == 16
    assert _offset(h, "sharedBufferConfig") + cfg.offset.offset == 24
    for member in ("weightsBufferConfig", "sharedSpillfillBufferConfig", "spillfillBufferConfig"):
        assert _offset(h, member) == 16, member
    assert h.qurtAddress.offset == 16
    assert S.QnnHtpMem_Descriptor_t is h


def test_context_config_layouts() -> None:
    assert S.QnnContext_Config_t.option.offset == 0
    assert S.QnnContext_Config_t.customConfig.offset == 8
    assert S.QnnContext_Property_t.customProperty.offset == 8
    p = S.QnnHtpContext_CustomProperty_t
    assert (p.option.offset, p.bufferStartAlignment.offset, p.weightsBufferSize.offset) == (0, 8, 8)
    g = S.QnnHtpContext_GroupRegistration_t
    assert (g.firstGroupHandle.offset, g.maxSpillFillBuffer.offset) == (0, 8)
    assert S.QnnHtpContext_CustomConfig_t.groupRegistration.offset == 8


def test_tensor_layouts() -> None:
    q = S.Qnn_QuantizeParams_t
    assert (q.encodingDefinition.offset, q.quantizationEncoding.offset, q.scaleOffsetEncoding.offset) \
        == (0, 4, 8)
    t1 = S.Qnn_TensorV1_t
    assert (t1.id.offset, t1.name.offset, t1.type.offset, t1.dataFormat.offset, t1.dataType.offset,
            t1.quantizeParams.offset, t1.rank.offset, t1.dimensions.offset, t1.memType.offset,
            t1.clientBuf.offset, t1.memHandle.offset) == (0, 8, 16, 20, 24, 32, 72, 80, 88, 96, 96)
    t2 = S.Qnn_TensorV2_t
    assert (t2.memType.offset, t2.retrieveRaw.offset, t2.isDynamicDimensions.offset,
            t2.sparseParams.offset, t2.isProduced.offset) == (88, 96, 112, 120, 132)
    assert (S.Qnn_Tensor_t.version.offset, S.Qnn_Tensor_t.v1.offset, S.Qnn_Tensor_t.v2.offset) == (0, 8, 8)
    assert S.Qnn_ClientBuffer_t.dataSize.offset == 8


def test_graph_blob_info_layout_matches_x86_library() -> None:
    # measured on the SDK's x86-64 library: {u32 version; V1} occupies bytes 0..39 and {u32 version; V2} 40..111.
    v1, v2 = S.QnnHtpSystemContext_GraphBlobInfoV1_t, S.QnnHtpSystemContext_GraphBlobInfoV2_t
    assert 8 + ctypes.sizeof(v1) == 40 and 8 + ctypes.sizeof(v2) == 72
    assert (v1.vtcmSize.offset, v1.htpDlbc.offset, v1.numHvxThreads.offset) == (8, 16, 24)
    assert (v2.isSafeShareIO.offset, v2.ioTensorSize.offset, v2.sharedWeightsSize.offset) == (16, 24, 56)


def test_handles_are_void_pointers() -> None:
    for name in ("Qnn_Handle_t", "Qnn_MemHandle_t", "Qnn_ContextHandle_t", "Qnn_GraphHandle_t",
                 "Qnn_BackendHandle_t", "Qnn_DeviceHandle_t", "Qnn_ProfileHandle_t",
                 "Qnn_SignalHandle_t", "Qnn_LogHandle_t"):
        assert getattr(qnn, name) is ctypes.c_void_p
    assert S.Qnn_ErrorHandle_t is ctypes.c_uint64 and S.Qnn_ContextBinarySize_t is ctypes.c_uint64


# --- the tutorial's flows can be written as in C ---------------------------------------------

def test_shared_buffer_descriptor_as_in_tutorial() -> None:
    dims = (ctypes.c_uint32 * 4)(1, 3, 224, 224)
    htp = S.QnnMemHtp_Descriptor_t()
    htp.type = C.QNN_HTP_MEM_SHARED_BUFFER
    htp.size = 1 << 20
    htp.sharedBufferConfig = S.QnnHtpMem_SharedBufferConfig_t(7, 4096)
    desc = S.Qnn_MemDescriptor_t()
    desc.memShape = S.Qnn_MemShape_t(4, dims, None)
    desc.dataType = C.QNN_DATATYPE_FLOAT_32
    desc.memType = C.QNN_MEM_TYPE_CUSTOM
    desc.customInfo = ctypes.addressof(htp)
    back = S.QnnMemHtp_Descriptor_t.from_address(desc.customInfo)
    assert (back.type, back.size, back.sharedBufferConfig.fd, back.sharedBufferConfig.offset) \
        == (1, 1 << 20, 7, 4096)
    assert list(desc.memShape.dimSize[:4]) == [1, 3, 224, 224]
    # the tutorial's spill-fill spelling aliases the header's member
    htp.sharedSpillfillBufferConfig.offset = 8192
    assert htp.spillfillBufferConfig.offset == 8192


def test_ion_descriptor_and_memhandle_tensor() -> None:
    desc = S.Qnn_MemDescriptor_t()
    desc.memType = C.QNN_MEM_TYPE_ION
    desc.ionInfo.fd = 42
    assert desc.dmaBufInfo.fd == 42                        # same union slot
    t = S.Qnn_Tensor_t(version=C.QNN_TENSOR_VERSION_1)
    t.v1.memType = C.QNN_TENSORMEMTYPE_MEMHANDLE
    t.v1.memHandle = 0x1234
    assert t.v1.clientBuf.data == 0x1234
    assert t.v2.memHandle == 0x1234                        # V1 and V2 share the leading layout


def test_context_config_defer_and_custom_property() -> None:
    cfg = S.QnnContext_Config_t()
    cfg.option = C.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT
    cfg.isGraphInitDeferred = 1
    configs = (ctypes.POINTER(S.QnnContext_Config_t) * 2)(ctypes.pointer(cfg), None)
    assert configs[0].contents.isGraphInitDeferred == 1 and not configs[1]
    prop = S.QnnHtpContext_CustomProperty_t(option=C.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE)
    prop.weightsBufferSize = 6 * 1024 * 1024
    assert prop.spillfillBufferSize == prop.bufferStartAlignment == prop.vtcmBackupBufferSize \
        == 6 * 1024 * 1024
    outer = S.QnnContext_Property_t(option=C.QNN_CONTEXT_PROPERTY_OPTION_CUSTOM,
                                    customProperty=ctypes.addressof(prop))
    assert S.QnnHtpContext_CustomProperty_t.from_address(outer.customProperty).option == 3
    custom = S.QnnHtpContext_CustomConfig_t(
        option=C.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING)
    custom.concurrentGroupRegistration.maxSpillFillBuffer = 2 << 20
    assert custom.groupRegistration.maxSpillFillBuffer == 2 << 20


# --- exports -----------------------------------------------------------------------------------

def test_package_reexports_exactly_both_modules() -> None:
    assert set(qnn.__all__) == set(C.__all__) | set(S.__all__)
    assert len(qnn.__all__) == len(set(qnn.__all__))
    for name in qnn.__all__:
        assert getattr(qnn, name) is getattr(C if name in C.__all__ else S, name)
    assert "error_string" in qnn.__all__ and "Qnn_Tensor_t" in qnn.__all__
    assert not [n for n in qnn.__all__ if n.startswith("_")]
