"""RKNN C-API constants: every define and enum value of rknn_api.h, rknn_matmul_api.h and rknn_custom_op.h.

Names and values are the vendor's (the SDK V2.3.2 headers) so that C samples port line by line. Enums are plain
module-level ints, as C sees them. Values that are not in a public header are marked "npurt's choice" / "npurt
alias" next to them.
"""
from __future__ import annotations

# --- rknn_init flags (uint32_t, OR-able) ---------------------------------------------------------------
RKNN_FLAG_PRIOR_HIGH = 0x00000000
RKNN_FLAG_PRIOR_MEDIUM = 0x00000001
RKNN_FLAG_PRIOR_LOW = 0x00000002
RKNN_FLAG_ASYNC_MASK = 0x00000004                   # outputs_get returns the previous frame's result
RKNN_FLAG_COLLECT_PERF_MASK = 0x00000008            # per-layer timing for RKNN_QUERY_PERF_DETAIL
RKNN_FLAG_MEM_ALLOC_OUTSIDE = 0x00000010            # user allocates weight, internal and io memory
RKNN_FLAG_SHARE_WEIGHT_MEM = 0x00000020             # share weights with rknn_init_extend.ctx
RKNN_FLAG_FENCE_IN_OUTSIDE = 0x00000040
RKNN_FLAG_FENCE_OUT_OUTSIDE = 0x00000080
RKNN_FLAG_COLLECT_MODEL_INFO_ONLY = 0x00000100      # dummy init: only MEM_SIZE totals are valid
RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE = 0x00000200       # user allocates only the internal memory
RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU = 0x00000400
RKNN_FLAG_ENABLE_SRAM = 0x00000800                  # internal tensors in SRAM as far as it goes
RKNN_FLAG_SHARE_SRAM = 0x00001000                   # declared, not implemented by the vendor
RKNN_FLAG_DISABLE_PROC_HIGH_PRIORITY = 0x00002000
RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE = 0x00004000   # user flushes inputs before rknn_run
RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE = 0x00008000  # user invalidates outputs after rknn_run
RKNN_FLAG_MODEL_BUFFER_ZERO_COPY = 0x00010000       # model bytes live in an rknn_create_mem(2) buffer
RKNN_MEM_FLAG_ALLOC_NO_CONTEXT = 0x00020000         # rknn_create_mem2 alloc flag: ctx may be 0

# --- status codes (int return) -------------------------------------------------------------------------
RKNN_SUCC = 0
RKNN_SUCCESS = RKNN_SUCC                            # npurt alias: not in the header; the V2.5.0 guide's samples use it
RKNN_ERR_FAIL = -1
RKNN_ERR_TIMEOUT = -2
RKNN_ERR_DEVICE_UNAVAILABLE = -3
RKNN_ERR_MALLOC_FAIL = -4
RKNN_ERR_PARAM_INVALID = -5
RKNN_ERR_MODEL_INVALID = -6
RKNN_ERR_CTX_INVALID = -7
RKNN_ERR_INPUT_INVALID = -8
RKNN_ERR_OUTPUT_INVALID = -9
RKNN_ERR_DEVICE_UNMATCH = -10
RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL = -11        # sic: the vendor's spelling
RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION = -12
RKNN_ERR_TARGET_PLATFORM_UNMATCH = -13
RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE = -14           # rknn_custom_op.h: init callback asks for the built-in op

# --- limits ----------------------------------------------------------------------------------------------
RKNN_MAX_DIMS = 16
RKNN_MAX_NUM_CHANNEL = 15
RKNN_MAX_NAME_LEN = 256
RKNN_MAX_DYNAMIC_SHAPE_NUM = 512
RKNN_CUSTOM_OP_MAX_STR_LEN = 64
RKNN_CUSTOM_OP_MAX_VALUE_LEN = 32

# --- rknn_query_cmd --------------------------------------------------------------------------------------
RKNN_QUERY_IN_OUT_NUM = 0
RKNN_QUERY_INPUT_ATTR = 1
RKNN_QUERY_OUTPUT_ATTR = 2
RKNN_QUERY_PERF_DETAIL = 3
RKNN_QUERY_PERF_RUN = 4
RKNN_QUERY_SDK_VERSION = 5
RKNN_QUERY_MEM_SIZE = 6
RKNN_QUERY_CUSTOM_STRING = 7
RKNN_QUERY_NATIVE_INPUT_ATTR = 8
RKNN_QUERY_NATIVE_OUTPUT_ATTR = 9
RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR = 8            # alias of NATIVE_INPUT_ATTR
RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR = 9           # alias of NATIVE_OUTPUT_ATTR
RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR = 10
RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR = 11
RKNN_QUERY_DEVICE_MEM_INFO = 12                     # fills an rknn_tensor_mem
RKNN_QUERY_INPUT_DYNAMIC_RANGE = 13                 # fills an rknn_input_range
RKNN_QUERY_CURRENT_INPUT_ATTR = 14
RKNN_QUERY_CURRENT_OUTPUT_ATTR = 15
RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR = 16
RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR = 17
RKNN_QUERY_CMD_MAX = 18

# --- rknn_tensor_type ------------------------------------------------------------------------------------
RKNN_TENSOR_FLOAT32 = 0
RKNN_TENSOR_FLOAT16 = 1
RKNN_TENSOR_INT8 = 2
RKNN_TENSOR_UINT8 = 3
RKNN_TENSOR_INT16 = 4
RKNN_TENSOR_UINT16 = 5
RKNN_TENSOR_INT32 = 6
RKNN_TENSOR_UINT32 = 7
RKNN_TENSOR_INT64 = 8
RKNN_TENSOR_BOOL = 9
RKNN_TENSOR_INT4 = 10
RKNN_TENSOR_BFLOAT16 = 11                           # since V2.3.0
RKNN_TENSOR_TYPE_MAX = 12

# --- rknn_tensor_qnt_type --------------------------------------------------------------------------------
RKNN_TENSOR_QNT_NONE = 0
RKNN_TENSOR_QNT_DFP = 1                             # dynamic fixed point (attr.fl)
RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC = 2               # attr.zp, attr.scale
RKNN_TENSOR_QNT_MAX = 3

# --- rknn_tensor_format ----------------------------------------------------------------------------------
RKNN_TENSOR_NCHW = 0
RKNN_TENSOR_NHWC = 1
RKNN_TENSOR_NC1HWC2 = 2
RKNN_TENSOR_UNDEFINED = 3
RKNN_TENSOR_FORMAT_MAX = 4

# --- rknn_core_mask --------------------------------------------------------------------------------------
RKNN_NPU_CORE_AUTO = 0
RKNN_NPU_CORE_0 = 1
RKNN_NPU_CORE_1 = 2
RKNN_NPU_CORE_2 = 4
RKNN_NPU_CORE_0_1 = RKNN_NPU_CORE_0 | RKNN_NPU_CORE_1
RKNN_NPU_CORE_0_1_2 = RKNN_NPU_CORE_0_1 | RKNN_NPU_CORE_2
RKNN_NPU_CORE_ALL = 0xFFFF                          # since V2.0.0b0
RKNN_NPU_CORE_UNDEFINED = 0x10000                   # implicit enum successor of CORE_ALL

# --- rknn_tensor_mem_flags (recorded in rknn_tensor_mem.flags) -------------------------------------------
RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE = 1           # rknn_create_mem / rknn_create_mem2
RKNN_TENSOR_MEMORY_FLAGS_FROM_FD = 2                # rknn_create_mem_from_fd
RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS = 3              # rknn_create_mem_from_phys
RKNN_TENSOR_MEMORY_FLAGS_UNKNOWN = 4

# --- rknn_mem_alloc_flags (rknn_create_mem2 alloc_flags; OR RKNN_MEM_FLAG_ALLOC_NO_CONTEXT) --------------
RKNN_FLAG_MEMORY_FLAGS_DEFAULT = 0                  # same as CACHEABLE
RKNN_FLAG_MEMORY_CACHEABLE = 1 << 0
RKNN_FLAG_MEMORY_NON_CACHEABLE = 1 << 1
RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM = 1 << 2            # since V2.3.2: SRAM first, the rest in DDR

# --- rknn_mem_sync_mode ----------------------------------------------------------------------------------
RKNN_MEMORY_SYNC_TO_DEVICE = 0x1                    # CPU wrote; clean the cache before the NPU reads
RKNN_MEMORY_SYNC_FROM_DEVICE = 0x2                  # NPU wrote; invalidate before the CPU reads
RKNN_MEMORY_SYNC_BIDIRECTIONAL = RKNN_MEMORY_SYNC_TO_DEVICE | RKNN_MEMORY_SYNC_FROM_DEVICE

# --- rknn_matmul_api.h: rknn_matmul_type -----------------------------------------------------------------
RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32 = 1
RKNN_INT8_MM_INT8_TO_INT32 = 2
RKNN_INT8_MM_INT8_TO_INT8 = 3
RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16 = 4
RKNN_FLOAT16_MM_INT8_TO_FLOAT32 = 5
RKNN_FLOAT16_MM_INT8_TO_FLOAT16 = 6
RKNN_FLOAT16_MM_INT4_TO_FLOAT32 = 7
RKNN_FLOAT16_MM_INT4_TO_FLOAT16 = 8
RKNN_INT8_MM_INT8_TO_FLOAT32 = 9
RKNN_INT4_MM_INT4_TO_INT16 = 10
RKNN_INT8_MM_INT4_TO_INT32 = 11
RKNN_FLOAT16_MM_INT4_TO_BFLOAT16 = 12
RKNN_INT8_MM_INT4_TO_FLOAT16 = 15                   # 13 and 14 are unused in the header

# --- rknn_matmul_api.h: rknn_matmul_quant_type -----------------------------------------------------------
RKNN_QUANT_TYPE_PER_LAYER_SYM = 0
RKNN_QUANT_TYPE_PER_LAYER_ASYM = 1
RKNN_QUANT_TYPE_PER_CHANNEL_SYM = 2
RKNN_QUANT_TYPE_PER_CHANNEL_ASYM = 3
RKNN_QUANT_TYPE_PER_GROUP_SYM = 4
RKNN_QUANT_TYPE_PER_GROUP_ASYM = 5

# --- rknn_matmul_api.h: rknn_matmul_layout ---------------------------------------------------------------
RKNN_MM_LAYOUT_NORM = 0
RKNN_MM_LAYOUT_NATIVE = 1
RKNN_MM_LAYOUT_TP_NORM = 2                          # B given transposed (N x K)

# --- rknn_custom_op.h: rknn_target_type ------------------------------------------------------------------
RKNN_TARGET_TYPE_CPU = 1
RKNN_TARGET_TYPE_GPU = 2
RKNN_TARGET_TYPE_MAX = 3

# --- rknpu kernel driver (rknpu_ioctl.h), not rknn_api.h: allocation flags seen in runtime logs ----------
RKNPU_MEM_CONTIGUOUS = 0
RKNPU_MEM_NON_CONTIGUOUS = 1 << 0
RKNPU_MEM_NON_CACHEABLE = 0
RKNPU_MEM_CACHEABLE = 1 << 1
RKNPU_MEM_WRITE_COMBINE = 1 << 2
RKNPU_MEM_KERNEL_MAPPING = 1 << 3
RKNPU_MEM_IOMMU = 1 << 4
RKNPU_MEM_ZEROING = 1 << 5
RKNPU_MEM_SECURE = 1 << 6
RKNPU_MEM_DMA32 = 1 << 7                            # NON_DMA32 in older drivers, same bit
RKNPU_MEM_TRY_ALLOC_SRAM = 1 << 8
RKNPU_MEM_TRY_ALLOC_NBUF = 1 << 9                   # newer drivers
RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT = 1 << 10      # newer drivers
RKNPU_MEM_SYNC_TO_DEVICE = 1 << 0
RKNPU_MEM_SYNC_FROM_DEVICE = 1 << 1

# --- the header's inline string helpers ------------------------------------------------------------------
_UNKNOWN = "UNKNOW"  # sic: the header's spelling

_TYPE_STRINGS = {
    RKNN_TENSOR_FLOAT32: "FP32", RKNN_TENSOR_FLOAT16: "FP16", RKNN_TENSOR_INT8: "INT8",
    RKNN_TENSOR_UINT8: "UINT8", RKNN_TENSOR_INT16: "INT16", RKNN_TENSOR_UINT16: "UINT16",
    RKNN_TENSOR_INT32: "INT32", RKNN_TENSOR_UINT32: "UINT32", RKNN_TENSOR_INT64: "INT64",
    RKNN_TENSOR_BOOL: "BOOL", RKNN_TENSOR_INT4: "INT4", RKNN_TENSOR_BFLOAT16: "BF16",
}
_QNT_TYPE_STRINGS = {
    RKNN_TENSOR_QNT_NONE: "NONE", RKNN_TENSOR_QNT_DFP: "DFP", RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC: "AFFINE",
}
_FORMAT_STRINGS = {
    RKNN_TENSOR_NCHW: "NCHW", RKNN_TENSOR_NHWC: "NHWC", RKNN_TENSOR_NC1HWC2: "NC1HWC2",
    RKNN_TENSOR_UNDEFINED: "UNDEFINED",
}
_MATMUL_TYPES = (
    "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32", "RKNN_INT8_MM_INT8_TO_INT32", "RKNN_INT8_MM_INT8_TO_INT8",
    "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16", "RKNN_FLOAT16_MM_INT8_TO_FLOAT32", "RKNN_FLOAT16_MM_INT8_TO_FLOAT16",
    "RKNN_FLOAT16_MM_INT4_TO_FLOAT32", "RKNN_FLOAT16_MM_INT4_TO_FLOAT16", "RKNN_INT8_MM_INT8_TO_FLOAT32",
    "RKNN_INT4_MM_INT4_TO_INT16", "RKNN_INT8_MM_INT4_TO_INT32", "RKNN_FLOAT16_MM_INT4_TO_BFLOAT16",
    "RKNN_INT8_MM_INT4_TO_FLOAT16",
)
_MATMUL_TYPE_STRINGS = {globals()[name]: name for name in _MATMUL_TYPES}


def get_type_string(type: int) -> str:  # noqa: A002 - the header's parameter name
    """The header's short name of an rknn_tensor_type ("FP32", "INT8", …; "UNKNOW" otherwise)."""
    return _TYPE_STRINGS.get(int(type), _UNKNOWN)


def get_qnt_type_string(type: int) -> str:  # noqa: A002
    """The header's short name of an rknn_tensor_qnt_type ("NONE", "DFP", "AFFINE"; "UNKNOW" otherwise)."""
    return _QNT_TYPE_STRINGS.get(int(type), _UNKNOWN)


def get_format_string(fmt: int) -> str:
    """The header's name of an rknn_tensor_format ("NCHW", "NHWC", "NC1HWC2", "UNDEFINED"; "UNKNOW" otherwise)."""
    return _FORMAT_STRINGS.get(int(fmt), _UNKNOWN)


def get_matmul_type_string(type: int) -> str:  # noqa: A002
    """rknn_matmul_api.h's name of an rknn_matmul_type (the enum name itself; "UNKNOW" otherwise)."""
    return _MATMUL_TYPE_STRINGS.get(int(type), _UNKNOWN)


__all__ = sorted(name for name in dir() if name.startswith(("RKNN_", "RKNPU_"))) + [
    "get_type_string", "get_qnt_type_string", "get_format_string", "get_matmul_type_string",
]
