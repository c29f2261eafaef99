"""RKNN C-API structs as ctypes: the vendor's field names, C types and order, so sizes match the C ABI.

Layouts follow the SDK V2.3.2 headers (`rknn_api.h`): natural alignment, no packing, enums as
4-byte unsigned ints, pointers as `c_void_p` / `c_char_p`. On x86-64 and aarch64 `ctypes.sizeof` equals the
C `sizeof` (e.g. rknn_tensor_attr 376, rknn_tensor_mem 40); on 32-bit ARM `rknn_context` is 32-bit as in C.
"""
from __future__ import annotations

import ctypes
import platform
from ctypes import (CFUNCTYPE, POINTER, c_char, c_char_p, c_float, c_int, c_int8, c_int16, c_int32, c_int64,
                    c_uint8, c_uint32, c_uint64, c_void_p)

from npurt.rknn.constants import (RKNN_MAX_DIMS, RKNN_MAX_DYNAMIC_SHAPE_NUM, RKNN_MAX_NAME_LEN,
                                  get_format_string, get_qnt_type_string, get_type_string)

# --- scalar typedefs -----------------------------------------------------------------------------------
_ARM32 = ctypes.sizeof(c_void_p) == 4 and platform.machine().lower().startswith("arm")
rknn_context = c_uint32 if _ARM32 else c_uint64          # uint32_t under __arm__, else uint64_t
rknn_matmul_ctx = rknn_context
rknn_custom_op_interal_context = rknn_context           # sic: the header's spelling

# enums are 4-byte unsigned ints in the ABI (all enumerators are non-negative)
rknn_query_cmd = c_uint32
rknn_tensor_type = c_uint32
rknn_tensor_qnt_type = c_uint32
rknn_tensor_format = c_uint32
rknn_core_mask = c_uint32
rknn_tensor_mem_flags = c_uint32
rknn_mem_alloc_flags = c_uint32
rknn_mem_sync_mode = c_uint32
rknn_matmul_type = c_uint32
rknn_matmul_quant_type = c_uint32
rknn_matmul_layout = c_uint32
rknn_target_type = c_uint32


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _value(v: object) -> object:
    """A field value made readable: char arrays as str, other arrays as lists, structs as their repr."""
    if isinstance(v, bytes):
        return _text(v)
    if isinstance(v, ctypes.Array):
        return [_value(x) for x in v]
    return v


class _Struct(ctypes.Structure):
    """Base of every mirror struct: a field-by-field repr, so structs read well in logs and test failures."""

    def __repr__(self) -> str:
        parts = []
        for name, ctype, *_ in self._fields_:
            value = getattr(self, name)
            shown = hex(value or 0) if ctype is c_void_p else repr(_value(value))
            parts.append(f"{name}={shown}")
        return f"{type(self).__name__}({', '.join(parts)})"


# --- rknn_api.h ----------------------------------------------------------------------------------------
class rknn_input_output_num(_Struct):
    """RKNN_QUERY_IN_OUT_NUM result."""

    _fields_ = [("n_input", c_uint32), ("n_output", c_uint32)]


class rknn_tensor_attr(_Struct):
    """A tensor's shape, layout, type, quantisation and strides (RKNN_QUERY_*_ATTR, rknn_set_io_mem)."""

    _fields_ = [
        ("index", c_uint32),
        ("n_dims", c_uint32),
        ("dims", c_uint32 * RKNN_MAX_DIMS),
        ("name", c_char * RKNN_MAX_NAME_LEN),
        ("n_elems", c_uint32),
        ("size", c_uint32),
        ("fmt", rknn_tensor_format),
        ("type", rknn_tensor_type),
        ("qnt_type", rknn_tensor_qnt_type),
        ("fl", c_int8),
        ("zp", c_int32),
        ("scale", c_float),
        ("w_stride", c_uint32),
        ("size_with_stride", c_uint32),
        ("pass_through", c_uint8),
        ("h_stride", c_uint32),
    ]

    def __repr__(self) -> str:
        dims = list(self.dims[: min(self.n_dims, RKNN_MAX_DIMS)])
        return (f"rknn_tensor_attr(index={self.index}, name={_text(self.name)!r}, n_dims={self.n_dims}, "
                f"dims={dims}, n_elems={self.n_elems}, size={self.size}, fmt={get_format_string(self.fmt)}, "
                f"type={get_type_string(self.type)}, qnt_type={get_qnt_type_string(self.qnt_type)}, "
                f"fl={self.fl}, zp={self.zp}, scale={self.scale:g}, w_stride={self.w_stride}, "
                f"size_with_stride={self.size_with_stride}, pass_through={self.pass_through}, "
                f"h_stride={self.h_stride})")


class rknn_input_range(_Struct):
    """RKNN_QUERY_INPUT_DYNAMIC_RANGE result: the shapes a dynamic-shape input accepts."""

    _fields_ = [
        ("index", c_uint32),
        ("shape_number", c_uint32),
        ("fmt", rknn_tensor_format),
        ("name", c_char * RKNN_MAX_NAME_LEN),
        ("dyn_range", (c_uint32 * RKNN_MAX_DIMS) * RKNN_MAX_DYNAMIC_SHAPE_NUM),
        ("n_dims", c_uint32),
    ]

    def __repr__(self) -> str:
        n_shapes = min(self.shape_number, RKNN_MAX_DYNAMIC_SHAPE_NUM)
        n_dims = min(self.n_dims, RKNN_MAX_DIMS)
        shapes = [list(self.dyn_range[s][:n_dims]) for s in range(n_shapes)]
        return (f"rknn_input_range(index={self.index}, name={_text(self.name)!r}, "
                f"fmt={get_format_string(self.fmt)}, n_dims={self.n_dims}, shapes={shapes})")


class rknn_perf_detail(_Struct):
    """RKNN_QUERY_PERF_DETAIL result: a runtime-owned text report."""

    _fields_ = [("perf_data", c_char_p), ("data_len", c_uint64)]


class rknn_perf_run(_Struct):
    """RKNN_QUERY_PERF_RUN result: inference time in microseconds."""

    _fields_ = [("run_duration", c_int64)]


class rknn_sdk_version(_Struct):
    """RKNN_QUERY_SDK_VERSION result."""

    _fields_ = [("api_version", c_char * 256), ("drv_version", c_char * 256)]


class rknn_mem_size(_Struct):
    """RKNN_QUERY_MEM_SIZE result: weight, internal, DMA and SRAM byte counts."""

    _fields_ = [
        ("total_weight_size", c_uint32),
        ("total_internal_size", c_uint32),
        ("total_dma_allocated_size", c_uint64),
        ("total_sram_size", c_uint32),
        ("free_sram_size", c_uint32),
        ("reserved", c_uint32 * 10),
    ]


class rknn_custom_string(_Struct):
    """RKNN_QUERY_CUSTOM_STRING result."""

    _fields_ = [("string", c_char * 1024)]


class rknn_tensor_mem(_Struct):
    """A device buffer: CPU address, device address, fd, offset, size, who allocated it."""

    _fields_ = [
        ("virt_addr", c_void_p),
        ("phys_addr", c_uint64),
        ("fd", c_int32),
        ("offset", c_int32),
        ("size", c_uint32),
        ("flags", c_uint32),
        ("priv_data", c_void_p),
    ]

    def __repr__(self) -> str:
        return (f"rknn_tensor_mem(virt_addr={hex(self.virt_addr or 0)}, phys_addr={hex(self.phys_addr)}, "
                f"fd={self.fd}, offset={self.offset}, size={self.size}, flags={self.flags})")


class rknn_input(_Struct):
    """One input for rknn_inputs_set (general, copying API)."""

    _fields_ = [
        ("index", c_uint32),
        ("buf", c_void_p),
        ("size", c_uint32),
        ("pass_through", c_uint8),
        ("type", rknn_tensor_type),
        ("fmt", rknn_tensor_format),
    ]

    def __repr__(self) -> str:
        return (f"rknn_input(index={self.index}, buf={hex(self.buf or 0)}, size={self.size}, "
                f"pass_through={self.pass_through}, type={get_type_string(self.type)}, "
                f"fmt={get_format_string(self.fmt)})")


class rknn_output(_Struct):
    """One output for rknn_outputs_get / rknn_outputs_release."""

    _fields_ = [
        ("want_float", c_uint8),
        ("is_prealloc", c_uint8),
        ("index", c_uint32),
        ("buf", c_void_p),
        ("size", c_uint32),
    ]


class rknn_init_extend(_Struct):
    """Optional rknn_init argument: shared-weight source ctx, model offset/size, model-buffer fd and flags."""

    _fields_ = [
        ("ctx", rknn_context),
        ("real_model_offset", c_int32),
        ("real_model_size", c_uint32),
        ("model_buffer_fd", c_int32),
        ("model_buffer_flags", c_uint32),
        ("reserved", c_uint8 * 112),
    ]

    def __repr__(self) -> str:
        return (f"rknn_init_extend(ctx={self.ctx}, real_model_offset={self.real_model_offset}, "
                f"real_model_size={self.real_model_size}, model_buffer_fd={self.model_buffer_fd}, "
                f"model_buffer_flags={self.model_buffer_flags})")


class rknn_run_extend(_Struct):
    """Optional rknn_run / rknn_wait argument."""

    _fields_ = [
        ("frame_id", c_uint64),
        ("non_block", c_int32),
        ("timeout_ms", c_int32),
        ("fence_fd", c_int32),
    ]


class rknn_output_extend(_Struct):
    """Optional rknn_outputs_get argument."""

    _fields_ = [("frame_id", c_uint64)]


# --- rknn_matmul_api.h ---------------------------------------------------------------------------------
class rknn_quant_params(_Struct):
    """Per-layer / per-channel / per-group quantisation parameters of a matmul tensor."""

    _fields_ = [
        ("name", c_char * RKNN_MAX_NAME_LEN),
        ("scale", POINTER(c_float)),
        ("scale_len", c_int32),
        ("zp", POINTER(c_int32)),
        ("zp_len", c_int32),
    ]

    def __repr__(self) -> str:
        return f"rknn_quant_params(name={_text(self.name)!r}, scale_len={self.scale_len}, zp_len={self.zp_len})"


class rknn_matmul_tensor_attr(_Struct):
    """Shape, size and type of matmul operand A, B or C."""

    _fields_ = [
        ("name", c_char * RKNN_MAX_NAME_LEN),
        ("n_dims", c_uint32),
        ("dims", c_uint32 * RKNN_MAX_DIMS),
        ("size", c_uint32),
        ("type", rknn_tensor_type),
    ]

    def __repr__(self) -> str:
        dims = list(self.dims[: min(self.n_dims, RKNN_MAX_DIMS)])
        return (f"rknn_matmul_tensor_attr(name={_text(self.name)!r}, dims={dims}, size={self.size}, "
                f"type={get_type_string(self.type)})")


class rknn_matmul_io_attr(_Struct):
    """The three matmul operands as rknn_matmul_create fills them."""

    _fields_ = [("A", rknn_matmul_tensor_attr), ("B", rknn_matmul_tensor_attr), ("C", rknn_matmul_tensor_attr)]


class rknn_matmul_shape(_Struct):
    """One M, K, N triple for dynamic-shape matmul."""

    _fields_ = [("M", c_int32), ("K", c_int32), ("N", c_int32)]


class rknn_matmul_info(_Struct):
    """What rknn_matmul_create builds: sizes, type, layouts, quantisation, IOMMU domain."""

    _fields_ = [
        ("M", c_int32),
        ("K", c_int32),
        ("N", c_int32),
        ("type", rknn_matmul_type),
        ("B_layout", c_int16),
        ("B_quant_type", c_int16),
        ("AC_layout", c_int16),
        ("AC_quant_type", c_int16),
        ("iommu_domain_id", c_int32),
        ("group_size", c_int16),
        ("reserved", c_int8 * 34),
    ]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name, _ in self._fields_[:-1])
        return f"rknn_matmul_info({fields})"


rknn_matmul_info_t = rknn_matmul_info  # the header's struct tag


# --- rknn_custom_op.h ----------------------------------------------------------------------------------
class rknn_gpu_op_context(_Struct):
    """OpenCL handles of a GPU custom op (cl_context, cl_command_queue, cl_kernel as void*)."""

    _fields_ = [("cl_context", c_void_p), ("cl_command_queue", c_void_p), ("cl_kernel", c_void_p)]


class rknn_custom_op_context(_Struct):
    """Context passed to every custom-op callback."""

    _fields_ = [
        ("target", rknn_target_type),
        ("internal_ctx", rknn_custom_op_interal_context),
        ("gpu_ctx", rknn_gpu_op_context),
        ("priv_data", c_void_p),
    ]


class rknn_custom_op_tensor(_Struct):
    """A custom op's input or output: its attr and the memory it lives in."""

    _fields_ = [("attr", rknn_tensor_attr), ("mem", rknn_tensor_mem)]


class rknn_custom_op_attr(_Struct):
    """One attribute of a custom op node, as rknn_custom_op_get_op_attr returns it."""

    _fields_ = [
        ("name", c_char * RKNN_MAX_NAME_LEN),
        ("dtype", rknn_tensor_type),
        ("n_elems", c_uint32),
        ("data", c_void_p),
    ]


# Callback pointer types of rknn_custom_op (the header declares them inline; these names are npurt's choice).
RKNN_CUSTOM_OP_CALLBACK = CFUNCTYPE(c_int, POINTER(rknn_custom_op_context), POINTER(rknn_custom_op_tensor),
                                    c_uint32, POINTER(rknn_custom_op_tensor), c_uint32)
RKNN_CUSTOM_OP_DESTROY_CALLBACK = CFUNCTYPE(c_int, POINTER(rknn_custom_op_context))


class rknn_custom_op(_Struct):
    """A custom operator registration: type name, target, OpenCL kernel source and callbacks."""

    _fields_ = [
        ("version", c_uint32),
        ("target", rknn_target_type),
        ("op_type", c_char * RKNN_MAX_NAME_LEN),
        ("cl_kernel_name", c_char * RKNN_MAX_NAME_LEN),
        ("cl_kernel_source", c_char_p),
        ("cl_source_size", c_uint64),
        ("cl_build_options", c_char * RKNN_MAX_NAME_LEN),
        ("init", RKNN_CUSTOM_OP_CALLBACK),
        ("prepare", RKNN_CUSTOM_OP_CALLBACK),
        ("compute", RKNN_CUSTOM_OP_CALLBACK),
        ("compute_native", RKNN_CUSTOM_OP_CALLBACK),
        ("destroy", RKNN_CUSTOM_OP_DESTROY_CALLBACK),
    ]

    def __repr__(self) -> str:
        callbacks = [name for name in ("init", "prepare", "compute", "compute_native", "destroy")
                     if getattr(self, name)]
        return (f"rknn_custom_op(version={self.version}, target={self.target}, op_type={_text(self.op_type)!r}, "
                f"cl_kernel_name={_text(self.cl_kernel_name)!r}, callbacks={callbacks})")


get_custom_op_func = CFUNCTYPE(POINTER(rknn_custom_op))  # plugin entry point type of librkcst_*.so


__all__ = [
    "rknn_context", "rknn_matmul_ctx", "rknn_custom_op_interal_context",
    "rknn_query_cmd", "rknn_tensor_type", "rknn_tensor_qnt_type", "rknn_tensor_format", "rknn_core_mask",
    "rknn_tensor_mem_flags", "rknn_mem_alloc_flags", "rknn_mem_sync_mode", "rknn_matmul_type",
    "rknn_matmul_quant_type", "rknn_matmul_layout", "rknn_target_type",
    "rknn_input_output_num", "rknn_tensor_attr", "rknn_input_range", "rknn_perf_detail", "rknn_perf_run",
    "rknn_sdk_version", "rknn_mem_size", "rknn_custom_string", "rknn_tensor_mem", "rknn_input", "rknn_output",
    "rknn_init_extend", "rknn_run_extend", "rknn_output_extend",
    "rknn_quant_params", "rknn_matmul_tensor_attr", "rknn_matmul_io_attr", "rknn_matmul_shape",
    "rknn_matmul_info", "rknn_matmul_info_t",
    "rknn_gpu_op_context", "rknn_custom_op_context", "rknn_custom_op_tensor", "rknn_custom_op_attr",
    "rknn_custom_op", "get_custom_op_func", "RKNN_CUSTOM_OP_CALLBACK", "RKNN_CUSTOM_OP_DESTROY_CALLBACK",
]
