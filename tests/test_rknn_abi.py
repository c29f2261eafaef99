"""The RKNN mirror's ABI: struct sizes and field offsets equal the C headers on x86-64; constants and helpers."""
import ctypes

import pytest

import npurt.rknn as rk
from npurt.rknn import constants as C
from npurt.rknn import structs as S
from helpers.abi import RKNN_SIZES

lp64 = pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="sizes below are the LP64 ABI")

# (struct, field) -> offset, as the reference lists them
OFFSETS = {
    ("rknn_input_output_num", "n_output"): 4,
    ("rknn_tensor_attr", "index"): 0, ("rknn_tensor_attr", "n_dims"): 4, ("rknn_tensor_attr", "dims"): 8,
    ("rknn_tensor_attr", "name"): 72, ("rknn_tensor_attr", "n_elems"): 328, ("rknn_tensor_attr", "size"): 332,
    ("rknn_tensor_attr", "fmt"): 336, ("rknn_tensor_attr", "type"): 340, ("rknn_tensor_attr", "qnt_type"): 344,
    ("rknn_tensor_attr", "fl"): 348, ("rknn_tensor_attr", "zp"): 352, ("rknn_tensor_attr", "scale"): 356,
    ("rknn_tensor_attr", "w_stride"): 360, ("rknn_tensor_attr", "size_with_stride"): 364,
    ("rknn_tensor_attr", "pass_through"): 368, ("rknn_tensor_attr", "h_stride"): 372,
    ("rknn_input_range", "shape_number"): 4, ("rknn_input_range", "fmt"): 8, ("rknn_input_range", "name"): 12,
    ("rknn_input_range", "dyn_range"): 268, ("rknn_input_range", "n_dims"): 33036,
    ("rknn_perf_detail", "data_len"): 8,
    ("rknn_sdk_version", "drv_version"): 256,
    ("rknn_mem_size", "total_internal_size"): 4, ("rknn_mem_size", "total_dma_allocated_size"): 8,
    ("rknn_mem_size", "total_sram_size"): 16, ("rknn_mem_size", "free_sram_size"): 20,
    ("rknn_mem_size", "reserved"): 24,
    ("rknn_tensor_mem", "virt_addr"): 0, ("rknn_tensor_mem", "phys_addr"): 8, ("rknn_tensor_mem", "fd"): 16,
    ("rknn_tensor_mem", "offset"): 20, ("rknn_tensor_mem", "size"): 24, ("rknn_tensor_mem", "flags"): 28,
    ("rknn_tensor_mem", "priv_data"): 32,
    ("rknn_input", "buf"): 8, ("rknn_input", "size"): 16, ("rknn_input", "pass_through"): 20,
    ("rknn_input", "type"): 24, ("rknn_input", "fmt"): 28,
    ("rknn_output", "want_float"): 0, ("rknn_output", "is_prealloc"): 1, ("rknn_output", "index"): 4,
    ("rknn_output", "buf"): 8, ("rknn_output", "size"): 16,
    ("rknn_init_extend", "ctx"): 0, ("rknn_init_extend", "real_model_offset"): 8,
    ("rknn_init_extend", "real_model_size"): 12, ("rknn_init_extend", "model_buffer_fd"): 16,
    ("rknn_init_extend", "model_buffer_flags"): 20, ("rknn_init_extend", "reserved"): 24,
    ("rknn_run_extend", "non_block"): 8, ("rknn_run_extend", "timeout_ms"): 12, ("rknn_run_extend", "fence_fd"): 16,
    ("rknn_quant_params", "scale"): 256, ("rknn_quant_params", "scale_len"): 264, ("rknn_quant_params", "zp"): 272,
    ("rknn_quant_params", "zp_len"): 280,
    ("rknn_matmul_tensor_attr", "n_dims"): 256, ("rknn_matmul_tensor_attr", "dims"): 260,
    ("rknn_matmul_tensor_attr", "size"): 324, ("rknn_matmul_tensor_attr", "type"): 328,
    ("rknn_matmul_io_attr", "B"): 332, ("rknn_matmul_io_attr", "C"): 664,
    ("rknn_matmul_shape", "N"): 8,
    ("rknn_matmul_info", "type"): 12, ("rknn_matmul_info", "B_layout"): 16, ("rknn_matmul_info", "B_quant_type"): 18,
    ("rknn_matmul_info", "AC_layout"): 20, ("rknn_matmul_info", "AC_quant_type"): 22,
    ("rknn_matmul_info", "iommu_domain_id"): 24, ("rknn_matmul_info", "group_size"): 28,
    ("rknn_matmul_info", "reserved"): 30,
    ("rknn_custom_op_context", "internal_ctx"): 8, ("rknn_custom_op_context", "gpu_ctx"): 16,
    ("rknn_custom_op_context", "priv_data"): 40,
    ("rknn_custom_op_tensor", "mem"): 376,
    ("rknn_custom_op_attr", "dtype"): 256, ("rknn_custom_op_attr", "n_elems"): 260,
    ("rknn_custom_op_attr", "data"): 264,
    ("rknn_custom_op", "op_type"): 8, ("rknn_custom_op", "cl_kernel_name"): 264,
    ("rknn_custom_op", "cl_kernel_source"): 520, ("rknn_custom_op", "cl_source_size"): 528,
    ("rknn_custom_op", "cl_build_options"): 536, ("rknn_custom_op", "init"): 792,
    ("rknn_custom_op", "destroy"): 824,
}


@lp64
@pytest.mark.parametrize("name,size", sorted(RKNN_SIZES.items()))
def test_struct_size(name, size):
    assert ctypes.sizeof(getattr(rk, name)) == size


@lp64
@pytest.mark.parametrize("struct,field,offset", [(s, f, o) for (s, f), o in sorted(OFFSETS.items())])
def test_field_offset(struct, field, offset):
    assert getattr(getattr(rk, struct), field).offset == offset


@lp64
def test_handles_are_64_bit():
    assert rk.rknn_context is ctypes.c_uint64
    assert rk.rknn_matmul_ctx is ctypes.c_uint64
    assert rk.rknn_custom_op_interal_context is ctypes.c_uint64


def test_field_c_types():
    """Pointer fields are pointers, arrays have the header's lengths, enums are 4 bytes."""
    assert S.rknn_tensor_mem.virt_addr.size == ctypes.sizeof(ctypes.c_void_p)
    assert dict(S.rknn_tensor_mem._fields_)["virt_addr"] is ctypes.c_void_p
    assert dict(S.rknn_input._fields_)["buf"] is ctypes.c_void_p
    assert dict(S.rknn_perf_detail._fields_)["perf_data"] is ctypes.c_char_p
    attr = dict(S.rknn_tensor_attr._fields_)
    assert attr["dims"]._length_ == C.RKNN_MAX_DIMS and attr["name"]._length_ == C.RKNN_MAX_NAME_LEN
    assert attr["fl"] is ctypes.c_int8 and attr["zp"] is ctypes.c_int32 and attr["scale"] is ctypes.c_float
    assert attr["pass_through"] is ctypes.c_uint8
    rng = dict(S.rknn_input_range._fields_)["dyn_range"]
    assert rng._length_ == C.RKNN_MAX_DYNAMIC_SHAPE_NUM and rng._type_._length_ == C.RKNN_MAX_DIMS
    for enum in (S.rknn_tensor_type, S.rknn_tensor_format, S.rknn_tensor_qnt_type, S.rknn_query_cmd,
                 S.rknn_core_mask, S.rknn_mem_sync_mode, S.rknn_matmul_type, S.rknn_target_type):
        assert ctypes.sizeof(enum) == 4


def test_field_order_matches_header():
    names = [f[0] for f in S.rknn_tensor_attr._fields_]
    assert names == ["index", "n_dims", "dims", "name", "n_elems", "size", "fmt", "type", "qnt_type", "fl", "zp",
                     "scale", "w_stride", "size_with_stride", "pass_through", "h_stride"]
    assert [f[0] for f in S.rknn_tensor_mem._fields_] == [
        "virt_addr", "phys_addr", "fd", "offset", "size", "flags", "priv_data"]
    assert [f[0] for f in S.rknn_custom_op._fields_][-5:] == ["init", "prepare", "compute", "compute_native",
                                                             "destroy"]


def test_structs_fill_in_place_like_c():
    attr = rk.rknn_tensor_attr()
    assert bytes(attr) == bytes(376)                    # zeroed, as memset(&attr, 0, sizeof attr)
    attr.index = 2
    attr.name = b"images"
    attr.dims[:4] = [1, 640, 640, 3]
    raw = bytearray(bytes(attr))
    assert raw[0:4] == (2).to_bytes(4, "little")
    assert raw[72:78] == b"images"
    assert int.from_bytes(raw[8 + 4:8 + 8], "little") == 640
    mem = rk.rknn_tensor_mem(virt_addr=0x7F0000001000, phys_addr=0x100000, fd=9, offset=64, size=4096,
                             flags=C.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE)
    copy = rk.rknn_tensor_mem.from_buffer_copy(bytes(mem))
    assert (copy.virt_addr, copy.phys_addr, copy.fd, copy.offset, copy.size, copy.flags) == (
        0x7F0000001000, 0x100000, 9, 64, 4096, 1)


def test_tensor_attr_repr_is_readable():
    attr = rk.rknn_tensor_attr(index=0, n_dims=4, n_elems=150528, size=150528, fmt=C.RKNN_TENSOR_NHWC,
                               type=C.RKNN_TENSOR_INT8, qnt_type=C.RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC,
                               zp=-128, scale=0.0078125, w_stride=224, size_with_stride=150528)
    attr.name = b"input"
    attr.dims[:4] = [1, 224, 224, 3]
    text = repr(attr)
    for part in ("name='input'", "dims=[1, 224, 224, 3]", "fmt=NHWC", "type=INT8", "qnt_type=AFFINE",
                 "zp=-128", "w_stride=224", "size_with_stride=150528"):
        assert part in text
    assert "0, 0, 0" not in text                         # only the n_dims valid dims are shown


def test_other_reprs():
    assert "virt_addr=0x1000" in repr(rk.rknn_tensor_mem(virt_addr=0x1000, size=64))
    assert "type=UINT8" in repr(rk.rknn_input(type=C.RKNN_TENSOR_UINT8))
    rng = rk.rknn_input_range(shape_number=2, n_dims=4)
    rng.dyn_range[0][:4] = [1, 3, 224, 224]
    rng.dyn_range[1][:4] = [1, 3, 160, 160]
    assert "shapes=[[1, 3, 224, 224], [1, 3, 160, 160]]" in repr(rng)
    assert "reserved=[0" in repr(rk.rknn_mem_size())
    assert repr(rk.rknn_custom_op_context()).startswith("rknn_custom_op_context(target=0")
    assert "type=FP16" in repr(rk.rknn_matmul_tensor_attr(type=C.RKNN_TENSOR_FLOAT16))


def test_custom_op_callbacks_are_c_function_pointers():
    calls = []

    def compute(op_ctx, inputs, n_inputs, outputs, n_outputs):
        calls.append((n_inputs, n_outputs))
        return C.RKNN_SUCC

    op = rk.rknn_custom_op(version=1, target=C.RKNN_TARGET_TYPE_CPU, op_type=b"cstSigmoid")
    op.compute = rk.RKNN_CUSTOM_OP_CALLBACK(compute)
    assert op.compute(None, None, 1, None, 1) == 0 and calls == [(1, 1)]
    assert not op.init


# --- constants ----------------------------------------------------------------------------------------

CONSTANTS = {
    "RKNN_FLAG_PRIOR_HIGH": 0, "RKNN_FLAG_PRIOR_MEDIUM": 1, "RKNN_FLAG_PRIOR_LOW": 2, "RKNN_FLAG_ASYNC_MASK": 4,
    "RKNN_FLAG_COLLECT_PERF_MASK": 8, "RKNN_FLAG_MEM_ALLOC_OUTSIDE": 0x10, "RKNN_FLAG_SHARE_WEIGHT_MEM": 0x20,
    "RKNN_FLAG_FENCE_IN_OUTSIDE": 0x40, "RKNN_FLAG_FENCE_OUT_OUTSIDE": 0x80,
    "RKNN_FLAG_COLLECT_MODEL_INFO_ONLY": 0x100, "RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE": 0x200,
    "RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU": 0x400, "RKNN_FLAG_ENABLE_SRAM": 0x800,
    "RKNN_FLAG_SHARE_SRAM": 0x1000, "RKNN_FLAG_DISABLE_PROC_HIGH_PRIORITY": 0x2000,
    "RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE": 0x4000, "RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE": 0x8000,
    "RKNN_FLAG_MODEL_BUFFER_ZERO_COPY": 0x10000, "RKNN_MEM_FLAG_ALLOC_NO_CONTEXT": 0x20000,
    "RKNN_SUCC": 0, "RKNN_ERR_FAIL": -1, "RKNN_ERR_TIMEOUT": -2, "RKNN_ERR_DEVICE_UNAVAILABLE": -3,
    "RKNN_ERR_MALLOC_FAIL": -4, "RKNN_ERR_PARAM_INVALID": -5, "RKNN_ERR_MODEL_INVALID": -6,
    "RKNN_ERR_CTX_INVALID": -7, "RKNN_ERR_INPUT_INVALID": -8, "RKNN_ERR_OUTPUT_INVALID": -9,
    "RKNN_ERR_DEVICE_UNMATCH": -10, "RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL": -11,
    "RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION": -12, "RKNN_ERR_TARGET_PLATFORM_UNMATCH": -13,
    "RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE": -14,
    "RKNN_MAX_DIMS": 16, "RKNN_MAX_NUM_CHANNEL": 15, "RKNN_MAX_NAME_LEN": 256, "RKNN_MAX_DYNAMIC_SHAPE_NUM": 512,
    "RKNN_CUSTOM_OP_MAX_STR_LEN": 64, "RKNN_CUSTOM_OP_MAX_VALUE_LEN": 32,
    "RKNN_QUERY_IN_OUT_NUM": 0, "RKNN_QUERY_INPUT_ATTR": 1, "RKNN_QUERY_OUTPUT_ATTR": 2,
    "RKNN_QUERY_PERF_DETAIL": 3, "RKNN_QUERY_PERF_RUN": 4, "RKNN_QUERY_SDK_VERSION": 5,
    "RKNN_QUERY_MEM_SIZE": 6, "RKNN_QUERY_CUSTOM_STRING": 7, "RKNN_QUERY_NATIVE_INPUT_ATTR": 8,
    "RKNN_QUERY_NATIVE_OUTPUT_ATTR": 9, "RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR": 8,
    "RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR": 9, "RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR": 10,
    "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR": 11, "RKNN_QUERY_DEVICE_MEM_INFO": 12,
    "RKNN_QUERY_INPUT_DYNAMIC_RANGE": 13, "RKNN_QUERY_CURRENT_INPUT_ATTR": 14,
    "RKNN_QUERY_CURRENT_OUTPUT_ATTR": 15, "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR": 16,
    "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR": 17, "RKNN_QUERY_CMD_MAX": 18,
    "RKNN_TENSOR_FLOAT32": 0, "RKNN_TENSOR_FLOAT16": 1, "RKNN_TENSOR_INT8": 2, "RKNN_TENSOR_UINT8": 3,
    "RKNN_TENSOR_INT16": 4, "RKNN_TENSOR_UINT16": 5, "RKNN_TENSOR_INT32": 6, "RKNN_TENSOR_UINT32": 7,
    "RKNN_TENSOR_INT64": 8, "RKNN_TENSOR_BOOL": 9, "RKNN_TENSOR_INT4": 10, "RKNN_TENSOR_BFLOAT16": 11,
    "RKNN_TENSOR_TYPE_MAX": 12,
    "RKNN_TENSOR_QNT_NONE": 0, "RKNN_TENSOR_QNT_DFP": 1, "RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC": 2,
    "RKNN_TENSOR_QNT_MAX": 3,
    "RKNN_TENSOR_NCHW": 0, "RKNN_TENSOR_NHWC": 1, "RKNN_TENSOR_NC1HWC2": 2, "RKNN_TENSOR_UNDEFINED": 3,
    "RKNN_TENSOR_FORMAT_MAX": 4,
    "RKNN_NPU_CORE_AUTO": 0, "RKNN_NPU_CORE_0": 1, "RKNN_NPU_CORE_1": 2, "RKNN_NPU_CORE_2": 4,
    "RKNN_NPU_CORE_0_1": 3, "RKNN_NPU_CORE_0_1_2": 7, "RKNN_NPU_CORE_ALL": 0xFFFF,
    "RKNN_NPU_CORE_UNDEFINED": 0x10000,
    "RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE": 1, "RKNN_TENSOR_MEMORY_FLAGS_FROM_FD": 2,
    "RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS": 3, "RKNN_TENSOR_MEMORY_FLAGS_UNKNOWN": 4,
    "RKNN_FLAG_MEMORY_FLAGS_DEFAULT": 0, "RKNN_FLAG_MEMORY_CACHEABLE": 1, "RKNN_FLAG_MEMORY_NON_CACHEABLE": 2,
    "RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM": 4,
    "RKNN_MEMORY_SYNC_TO_DEVICE": 1, "RKNN_MEMORY_SYNC_FROM_DEVICE": 2, "RKNN_MEMORY_SYNC_BIDIRECTIONAL": 3,
    "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32": 1, "RKNN_INT8_MM_INT8_TO_INT32": 2, "RKNN_INT8_MM_INT8_TO_INT8": 3,
    "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16": 4, "RKNN_FLOAT16_MM_INT8_TO_FLOAT32": 5,
    "RKNN_FLOAT16_MM_INT8_TO_FLOAT16": 6, "RKNN_FLOAT16_MM_INT4_TO_FLOAT32": 7,
    "RKNN_FLOAT16_MM_INT4_TO_FLOAT16": 8, "RKNN_INT8_MM_INT8_TO_FLOAT32": 9, "RKNN_INT4_MM_INT4_TO_INT16": 10,
    "RKNN_INT8_MM_INT4_TO_INT32": 11, "RKNN_FLOAT16_MM_INT4_TO_BFLOAT16": 12, "RKNN_INT8_MM_INT4_TO_FLOAT16": 15,
    "RKNN_QUANT_TYPE_PER_LAYER_SYM": 0, "RKNN_QUANT_TYPE_PER_LAYER_ASYM": 1, "RKNN_QUANT_TYPE_PER_CHANNEL_SYM": 2,
    "RKNN_QUANT_TYPE_PER_CHANNEL_ASYM": 3, "RKNN_QUANT_TYPE_PER_GROUP_SYM": 4, "RKNN_QUANT_TYPE_PER_GROUP_ASYM": 5,
    "RKNN_MM_LAYOUT_NORM": 0, "RKNN_MM_LAYOUT_NATIVE": 1, "RKNN_MM_LAYOUT_TP_NORM": 2,
    "RKNN_TARGET_TYPE_CPU": 1, "RKNN_TARGET_TYPE_GPU": 2, "RKNN_TARGET_TYPE_MAX": 3,
}


@pytest.mark.parametrize("name,value", sorted(CONSTANTS.items()))
def test_constant_value(name, value):
    got = getattr(rk, name)
    assert type(got) is int and got == value


def test_every_rknn_constant_is_checked():
    """No constant slips in or changes without this table knowing (aliases and driver flags aside)."""
    extra = {n for n in C.__all__ if n.startswith("RKNN_") and n not in CONSTANTS}
    assert extra == {"RKNN_SUCCESS"}
    assert rk.RKNN_SUCCESS == rk.RKNN_SUCC


def test_flags_are_distinct_bits():
    flags = [v for n, v in CONSTANTS.items() if n.startswith("RKNN_FLAG_") and "MEMORY" not in n and v > 2]
    flags.append(C.RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    assert all(f & (f - 1) == 0 for f in flags)           # one bit each
    assert len(set(flags)) == len(flags)
    assert C.RKNN_MEM_FLAG_ALLOC_NO_CONTEXT & (C.RKNN_FLAG_MEMORY_CACHEABLE | C.RKNN_FLAG_MEMORY_NON_CACHEABLE
                                              | C.RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM) == 0


def test_star_import_exports_everything():
    namespace = {}
    exec("from npurt.rknn import *", namespace)
    for name in ("RKNN_SUCC", "RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM", "rknn_tensor_attr", "rknn_context",
                 "get_type_string", "get_format_string", "get_qnt_type_string", "rknn_matmul_info"):
        assert name in namespace
    assert not any(name.startswith("_") for name in rk.__all__)


# --- string helpers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [
    (0, "FP32"), (1, "FP16"), (2, "INT8"), (3, "UINT8"), (4, "INT16"), (5, "UINT16"), (6, "INT32"),
    (7, "UINT32"), (8, "INT64"), (9, "BOOL"), (10, "INT4"), (11, "BF16"), (12, "UNKNOW"), (-1, "UNKNOW"),
])
def test_get_type_string(value, text):
    assert rk.get_type_string(value) == text


def test_get_qnt_type_and_format_strings():
    assert [rk.get_qnt_type_string(i) for i in range(4)] == ["NONE", "DFP", "AFFINE", "UNKNOW"]
    assert [rk.get_format_string(i) for i in range(5)] == ["NCHW", "NHWC", "NC1HWC2", "UNDEFINED", "UNKNOW"]


def test_string_helpers_accept_ctypes_field_values():
    attr = rk.rknn_tensor_attr(type=C.RKNN_TENSOR_FLOAT16, fmt=C.RKNN_TENSOR_NC1HWC2)
    assert rk.get_type_string(attr.type) == "FP16"
    assert rk.get_format_string(attr.fmt) == "NC1HWC2"
    assert rk.get_type_string(ctypes.c_uint32(3).value) == "UINT8"


def test_get_matmul_type_string():
    assert C.get_matmul_type_string(C.RKNN_INT8_MM_INT8_TO_INT32) == "RKNN_INT8_MM_INT8_TO_INT32"
    assert C.get_matmul_type_string(15) == "RKNN_INT8_MM_INT4_TO_FLOAT16"
    assert C.get_matmul_type_string(13) == "UNKNOW"
